package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
)

// fakeAPI is just enough of a kube-apiserver plus kubelet for client-go's
// real port-forward, exec and log paths: pods by name and label, pods/log,
// and pods/portforward and pods/exec spoken as SPDY (a WebSocket upgrade is
// refused, as by an API server too old for it, so the dialers fall back the
// way they do against such a server). Port-forwarded connections reach
// local listeners registered per pod port.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu            sync.Mutex
	pods          map[string]*corev1.Pod // ns/name
	targets       map[string]string      // ns/name:port -> local address
	forbidForward bool
	forbidExec    bool
	requests      map[string]int // "portforward ns/name", "exec ns/name", "log"
	execs         []execCall
	logQuery      map[string][]string
	logBody       string
}

type execCall struct {
	Pod       string
	Container string
	Command   []string
}

const forbiddenUser = "system:serviceaccount:ops:triage"

func newFakeAPI(t *testing.T) *fakeAPI {
	a := &fakeAPI{t: t, pods: map[string]*corev1.Pod{}, targets: map[string]string{}, requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		a.requests["version"]++
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"gitVersion": "v1.31.2", "major": "1", "minor": "31"})
	})
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/pods/{name}", a.getPod)
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/pods", a.listPods)
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/pods/{name}/log", a.podLog)
	mux.HandleFunc("/api/v1/namespaces/{ns}/pods/{name}/portforward", a.portForward)
	mux.HandleFunc("/api/v1/namespaces/{ns}/pods/{name}/exec", a.exec)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// kubeconfig writes a kubeconfig for the fake server and returns flags
// loading it, as the CLI would.
func (a *fakeAPI) flags(t *testing.T, extra ...func(*ConfigFlags)) *ConfigFlags {
	path := filepath.Join(t.TempDir(), "config")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: %q}
contexts:
- name: kind-lab
  context: {cluster: lab, user: triage, namespace: shop}
- name: other
  context: {cluster: lab, user: triage}
current-context: kind-lab
users:
- name: triage
  user: {token: secret}
`, a.srv.URL)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f := NewConfigFlags()
	f.KubeConfig = &path
	for _, fn := range extra {
		fn(f)
	}
	return f
}

func (a *fakeAPI) addPod(p *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods[p.Namespace+"/"+p.Name] = p
}

// listen serves h as pod's port and returns a stop function.
func (a *fakeAPI) listen(ns, pod string, port int, h http.Handler) *httptest.Server {
	s := httptest.NewServer(h)
	a.t.Cleanup(s.Close)
	a.mu.Lock()
	a.targets[fmt.Sprintf("%s/%s:%d", ns, pod, port)] = s.Listener.Addr().String()
	a.mu.Unlock()
	return s
}

func (a *fakeAPI) count(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests[key]
}

func (a *fakeAPI) getPod(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	p := a.pods[r.PathValue("ns")+"/"+r.PathValue("name")]
	a.requests["get "+r.PathValue("ns")+"/"+r.PathValue("name")]++
	a.mu.Unlock()
	if p == nil {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, r.PathValue("name")))
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (a *fakeAPI) listPods(w http.ResponseWriter, r *http.Request) {
	sel := r.URL.Query().Get("labelSelector")
	key, value, _ := strings.Cut(sel, "=")
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	a.mu.Lock()
	a.requests["list "+r.PathValue("ns")+" "+sel]++
	for _, p := range a.pods {
		if p.Namespace == r.PathValue("ns") && p.Labels[key] == value {
			list.Items = append(list.Items, *p)
		}
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, list)
}

func (a *fakeAPI) podLog(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests["log"]++
	a.logQuery = r.URL.Query()
	body := a.logBody
	a.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	// Ignore limitBytes, as a misbehaving server might: the client must
	// still stop reading at the limit.
	_, _ = io.WriteString(w, body)
}

func forbidden(resource, pod, ns string) *apierrors.StatusError {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod,
		fmt.Errorf(`User %q cannot create resource %q in API group "" in the namespace %q`, forbiddenUser, resource, ns))
}

func (a *fakeAPI) portForward(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	a.mu.Lock()
	// A WebSocket attempt (GET) is counted apart: a port-forward is the
	// SPDY upgrade the client falls back to.
	if r.Method == http.MethodPost {
		a.requests["portforward "+ns+"/"+name]++
	} else {
		a.requests["portforward-ws "+ns+"/"+name]++
	}
	deny := a.forbidForward
	a.mu.Unlock()
	if deny {
		writeStatus(w, forbidden("pods/portforward", name, ns))
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "websocket streaming is not supported by this server", http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"portforward.k8s.io"}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 16)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		streams <- s
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	pairs := map[string][2]httpstream.Stream{}
	for {
		select {
		case <-conn.CloseChan():
			return
		case s := <-streams:
			id := s.Headers().Get(corev1.PortForwardRequestIDHeader)
			p := pairs[id]
			if s.Headers().Get(corev1.StreamType) == corev1.StreamTypeError {
				p[0] = s
			} else {
				p[1] = s
			}
			pairs[id] = p
			if p[0] != nil && p[1] != nil {
				delete(pairs, id)
				port := s.Headers().Get(corev1.PortHeader)
				go a.forwardPair(ns+"/"+name+":"+port, p[0], p[1])
			}
		}
	}
}

// forwardPair does what the kubelet does for one forwarded connection:
// connect to the pod port and copy both ways, or report the failure on the
// error stream.
func (a *fakeAPI) forwardPair(target string, errStream, data httpstream.Stream) {
	defer errStream.Close()
	a.mu.Lock()
	a.requests["connection "+target]++
	addr := a.targets[target]
	a.mu.Unlock()
	if addr == "" {
		addr = "127.0.0.1:1" // nothing listens: connection refused, as from a pod without Envoy up
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		_, _ = fmt.Fprintf(errStream, "error forwarding port %s to pod: %v", target, err)
		_ = data.Close()
		return
	}
	defer c.Close()
	go func() {
		_, _ = io.Copy(c, data)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(data, c)
	_ = data.Close()
}

func (a *fakeAPI) exec(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	q := r.URL.Query()
	a.mu.Lock()
	a.requests["exec "+ns+"/"+name]++
	deny := a.forbidExec
	a.mu.Unlock()
	if deny {
		writeStatus(w, forbidden("pods/exec", name, ns))
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "websocket streaming is not supported by this server", http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"v4.channel.k8s.io"}); err != nil {
		return
	}
	streams := make(chan httpstream.Stream, 8)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		streams <- s
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	byType := map[string]httpstream.Stream{}
	timeout := time.After(5 * time.Second)
	for len(byType) < 3 {
		select {
		case s := <-streams:
			byType[s.Headers().Get(corev1.StreamType)] = s
		case <-timeout:
			a.t.Errorf("exec: client opened %d of error/stdout/stderr", len(byType))
			return
		}
	}
	call := execCall{Pod: ns + "/" + name, Container: q.Get("container"), Command: q["command"]}
	a.mu.Lock()
	a.execs = append(a.execs, call)
	a.mu.Unlock()
	// The command dies with the client's connection, as a real exec does.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-conn.CloseChan():
			cancel()
		case <-ctx.Done():
		}
	}()
	stdout, stderr, code := a.pilotAgent(ctx, call)
	_, _ = io.WriteString(byType[corev1.StreamTypeStdout], stdout)
	_ = byType[corev1.StreamTypeStdout].Close()
	_, _ = io.WriteString(byType[corev1.StreamTypeStderr], stderr)
	_ = byType[corev1.StreamTypeStderr].Close()
	if code != 0 {
		st := metav1.Status{Status: metav1.StatusFailure, Reason: "NonZeroExitCode", Details: &metav1.StatusDetails{
			Causes: []metav1.StatusCause{{Type: "ExitCode", Message: strconv.Itoa(code)}},
		}}
		_ = json.NewEncoder(byType[corev1.StreamTypeError]).Encode(st)
	}
	_ = byType[corev1.StreamTypeError].Close()
	select {
	case <-conn.CloseChan():
	case <-time.After(5 * time.Second):
	}
}

// pilotAgent plays `pilot-agent request GET <path>` in the istio-proxy
// container: a GET to the pod's Envoy admin on localhost:15000.
func (a *fakeAPI) pilotAgent(ctx context.Context, call execCall) (stdout, stderr string, code int) {
	if call.Container != "istio-proxy" || len(call.Command) != 4 || call.Command[0] != "pilot-agent" ||
		call.Command[1] != "request" || call.Command[2] != "GET" {
		return "", fmt.Sprintf("unexpected command %q in %q", call.Command, call.Container), 127
	}
	a.mu.Lock()
	addr := a.targets[call.Pod+":15000"]
	a.mu.Unlock()
	if addr == "" {
		return "", "Error: dial tcp 127.0.0.1:15000: connect: connection refused", 1
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/"+call.Command[3], nil)
	if err != nil {
		return "", "Error: " + err.Error(), 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "Error: " + err.Error(), 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Sprintf("Error: received unsuccessful status code %d: %s", resp.StatusCode, body), 1
	}
	return string(body), "", 0
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, err error) {
	var st *apierrors.StatusError
	if !errors.As(err, &st) {
		panic(err)
	}
	s := st.ErrStatus
	s.Kind, s.APIVersion = "Status", "v1"
	writeJSON(w, int(s.Code), s)
}

// meshedPod is a Running pod with a classic istio-proxy sidecar.
func meshedPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "istio-proxy"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
}

// connections counts the connections forwarded to ns/pod:port (stream
// pairs), as opposed to the port-forward requests that carry them.
func (a *fakeAPI) connections(ns, pod string, port int) int {
	return a.count(fmt.Sprintf("connection %s/%s:%d", ns, pod, port))
}
