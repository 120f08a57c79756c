package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/clientset"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
)

var webPod = cluster.PodRef{Namespace: "shop", Name: "web-1"}

// clustersJSON stands in for Envoy's /clusters?format=json.
const clustersJSON = `{"cluster_statuses":[{"name":"outbound|8080||payments.shop.svc.cluster.local"}]}`

func envoyAdmin(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.RequestURI() {
		case "/clusters?format=json":
			_, _ = io.WriteString(w, clustersJSON)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		default:
			http.Error(w, "invalid path: "+r.URL.Path, http.StatusNotFound)
		}
	})
}

func newLive(t *testing.T, a *fakeAPI, opts Options, flags ...func(*ConfigFlags)) *Cluster {
	t.Helper()
	c, err := New(a.flags(t, flags...), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewReadsTheKubeconfigLikeKubectl(t *testing.T) {
	a := newFakeAPI(t)
	c := newLive(t, a, Options{})
	want := cluster.ClusterInfo{Context: "kind-lab", Server: a.srv.URL, ControlPlaneNamespace: "istio-system"}
	if c.Info() != want {
		t.Errorf("Info = %+v, want %+v", c.Info(), want)
	}
	other := newLive(t, a, Options{ControlPlaneNamespace: "istio-prod"}, func(f *ConfigFlags) {
		ctx := "other"
		f.Context = &ctx
	})
	if got := other.Info(); got.Context != "other" || got.ControlPlaneNamespace != "istio-prod" {
		t.Errorf("--context other: Info = %+v", got)
	}
	v, err := c.ServerVersion(context.Background())
	if err != nil || v != "v1.31.2" {
		t.Errorf("ServerVersion = %q, %v", v, err)
	}
	if c.config.QPS != clientQPS || c.config.Timeout != DefaultRequestTimeout {
		t.Errorf("rest config QPS %v timeout %v", c.config.QPS, c.config.Timeout)
	}
}

func TestNewExplainsAMissingKubeconfigOrContext(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	_, err := New(NewConfigFlags(), Options{})
	if !errors.Is(err, ErrNoKubeconfig) {
		t.Errorf("no kubeconfig: err = %v, want ErrNoKubeconfig", err)
	}

	a := newFakeAPI(t)
	_, err = New(a.flags(t, func(f *ConfigFlags) {
		ctx := "prod"
		f.Context = &ctx
	}), Options{})
	var nf *ContextNotFoundError
	if !errors.As(err, &nf) || nf.Name != "prod" || strings.Join(nf.Available, ",") != "kind-lab,other" {
		t.Fatalf("unknown context: err = %#v", err)
	}
	if got := err.Error(); got != `context "prod" not found in kubeconfig (contexts: kind-lab, other)` {
		t.Errorf("message = %q", got)
	}
}

func TestEnvoyAdminThroughPortForward(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	c := newLive(t, a, Options{})

	body, err := c.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json")
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != clustersJSON {
		t.Errorf("body = %q", body)
	}
	if a.count("portforward shop/web-1") == 0 || a.count("exec shop/web-1") != 0 {
		t.Errorf("requests = %v: want port-forward and no exec", a.requests)
	}
	// A path without the leading slash reaches the same endpoint.
	if body, err := c.EnvoyAdmin(context.Background(), webPod, "clusters?format=json"); err != nil || string(body) != clustersJSON {
		t.Errorf("relative path: %q, %v", body, err)
	}
}

// A wave of probes reads the source pod through the cache and then several
// admin paths of it; through NewCache the admin checks reuse that pod read.
func TestEnvoyAdminReadsShareTheCachesPodRead(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	ctx := context.Background()

	direct := newLive(t, a, Options{})
	for range 2 {
		if _, err := direct.EnvoyAdmin(ctx, webPod, "/clusters?format=json"); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.count("get shop/web-1"); got != 2 {
		t.Fatalf("without a cache: %d pod GETs for 2 admin reads, want 2", got)
	}

	c := newLive(t, a, Options{})
	cache := NewCache(c)
	defer cache.Close()
	if _, err := cache.GetPod(ctx, "shop", "web-1"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/clusters?format=json", "clusters?format=json"} {
		if _, err := cache.EnvoyAdmin(ctx, webPod, path); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.count("get shop/web-1") - 2; got != 1 {
		t.Errorf("through NewCache: %d pod GETs for a pod read and 2 admin reads, want 1", got)
	}
}

func TestEnvoyAdminNon200IsAnError(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	c := newLive(t, a, Options{})
	_, err := c.EnvoyAdmin(context.Background(), webPod, "/nope")
	var st *podconn.StatusError
	if !errors.As(err, &st) || st.Status != 404 || st.Path != "/nope" {
		t.Fatalf("err = %v, want HTTP 404 for /nope", err)
	}
	if !strings.Contains(err.Error(), "invalid path: /nope") {
		t.Errorf("error hides Envoy's answer: %v", err)
	}
	if a.count("exec shop/web-1") != 0 {
		t.Error("an HTTP error from Envoy must not trigger the exec fallback")
	}
}

func TestEnvoyAdminFallsBackToPilotAgentWhenPortForwardIsForbidden(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	a.forbidForward = true
	c := newLive(t, a, Options{})

	body, err := c.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json")
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != clustersJSON {
		t.Errorf("body = %q", body)
	}
	if len(a.execs) != 1 {
		t.Fatalf("execs = %v", a.execs)
	}
	want := execCall{Pod: "shop/web-1", Container: "istio-proxy", Command: []string{"pilot-agent", "request", "GET", "clusters?format=json"}}
	if got := a.execs[0]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("exec = %+v, want %+v", got, want)
	}
}

func TestEnvoyAdminForbiddenBothWaysNamesBothPermissions(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.forbidForward, a.forbidExec = true, true
	c := newLive(t, a, Options{})

	_, err := c.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json")
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v (%T), want a Forbidden", err, err)
	}
	msg := cluster.AccessProblem("read Envoy admin of shop/web-1", err)
	for _, want := range []string{`cannot create resource "pods/portforward"`, `cannot create resource "pods/exec"`, forbiddenUser, "meshtriage-readonly"} {
		if !strings.Contains(msg, want) {
			t.Errorf("AccessProblem = %q, missing %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("AccessProblem is not one line: %q", msg)
	}
}

func TestEnvoyAdminForbiddenForwardAndFailingExecIsUnreachable(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.forbidForward = true // and nothing listens on 15000: pilot-agent fails
	c := newLive(t, a, Options{})
	_, err := c.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json")
	var u *cluster.UnreachableError
	if !errors.As(err, &u) {
		t.Fatalf("err = %v (%T), want UnreachableError", err, err)
	}
	for _, want := range []string{"pods/portforward", "exit code 1", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestEnvoyAdminUnreachableProxyDoesNotExec(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1")) // port-forward allowed, but Envoy not listening
	c := newLive(t, a, Options{})
	_, err := c.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json")
	var u *cluster.UnreachableError
	if !errors.As(err, &u) || u.What != "Envoy admin of shop/web-1" {
		t.Fatalf("err = %v (%T), want UnreachableError for the pod", err, err)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error does not carry the kubelet's reason: %v", err)
	}
	if a.count("exec shop/web-1") != 0 {
		t.Error("a proxy that does not answer must not trigger the exec fallback")
	}
}

func TestEnvoyAdminOfPodWithoutSidecarIsClearAndDoesNotForward(t *testing.T) {
	a := newFakeAPI(t)
	plain := meshedPod("shop", "legacy-1")
	plain.Spec.Containers = plain.Spec.Containers[:1]
	a.addPod(plain)
	pending := meshedPod("shop", "web-2")
	pending.Status.Phase = corev1.PodPending
	a.addPod(pending)
	c := newLive(t, a, Options{})

	_, err := c.EnvoyAdmin(context.Background(), cluster.PodRef{Namespace: "shop", Name: "legacy-1"}, "/clusters")
	if err == nil || !strings.Contains(err.Error(), "no istio-proxy container") {
		t.Errorf("no sidecar: err = %v", err)
	}
	_, err = c.EnvoyAdmin(context.Background(), cluster.PodRef{Namespace: "shop", Name: "web-2"}, "/clusters")
	var u *cluster.UnreachableError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "Pending") {
		t.Errorf("pending pod: err = %v", err)
	}
	_, err = c.EnvoyAdmin(context.Background(), cluster.PodRef{Namespace: "shop", Name: "gone"}, "/clusters")
	if !apierrors.IsNotFound(err) {
		t.Errorf("absent pod: err = %v, want NotFound", err)
	}
	if n := a.count("portforward shop/legacy-1") + a.count("portforward shop/web-2") + a.count("exec shop/legacy-1"); n != 0 {
		t.Errorf("%d port-forward/exec requests for pods that cannot answer", n)
	}
}

func TestEnvoyAdminHonoursTheDeadlineAndRequestTimeout(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))

	c := newLive(t, a, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.EnvoyAdmin(ctx, webPod, "/slow")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("EnvoyAdmin returned %v after a 300ms deadline", d)
	}

	// --request-timeout bounds a read whose caller set no deadline.
	bounded := newLive(t, a, Options{}, func(f *ConfigFlags) {
		timeout := "500ms"
		f.Timeout = &timeout
	})
	start = time.Now()
	_, err = bounded.EnvoyAdmin(context.Background(), webPod, "/slow")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("--request-timeout 500ms: err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("--request-timeout 500ms: returned after %v", d)
	}
}

func TestNoGoroutineOutlivesAReadOfEnvoyOrIstiod(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.addPod(meshedPod("shop", "web-2"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	istiod := meshedPod("istio-system", "istiod-abc")
	istiod.Labels = map[string]string{"app": "istiod"}
	a.addPod(istiod)
	a.listen("istio-system", "istiod-abc", 15014, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "[]")
	}))
	c := newLive(t, a, Options{})
	ctx := context.Background()
	reads := func() {
		_, _ = c.EnvoyAdmin(ctx, webPod, "/clusters?format=json")                        // success
		_, _ = c.EnvoyAdmin(ctx, cluster.PodRef{Namespace: "shop", Name: "web-2"}, "/x") // refused
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, _ = c.EnvoyAdmin(short, webPod, "/slow") // deadline
		cancel()
		_, _ = c.Istiod(ctx, "", "/debug/syncz")
		a.mu.Lock()
		a.forbidForward = !a.forbidForward // exec fallback on alternate rounds
		a.mu.Unlock()
	}
	for range 5 {
		reads()
	}
	// Nothing of a port-forward or exec may remain once the reads are done;
	// the API client's pooled keep-alive connections are plain HTTP.
	deadline := time.Now().Add(5 * time.Second)
	left := streamingGoroutines()
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		left = streamingGoroutines()
	}
	if len(left) > 0 {
		t.Errorf("%d port-forward/exec goroutines outlived their reads:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// streamingGoroutines lists the goroutines running port-forward, SPDY, exec
// or this package's code, on either side of the fake API server.
func streamingGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "streamingGoroutines") {
			continue
		}
		for _, marker := range []string{"tools/portforward", "spdystream", "tools/remotecommand", "probes/cluster/live.(*Cluster)", "httpstream"} {
			if strings.Contains(g, marker) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

func TestIstiodPrefersAReadyPodAndForwardsToItsMonitoringPort(t *testing.T) {
	a := newFakeAPI(t)
	mk := func(name string, phase corev1.PodPhase, ready bool, age time.Duration) {
		p := meshedPod("istio-system", name)
		p.Labels = map[string]string{"app": "istiod"}
		p.Status.Phase = phase
		p.CreationTimestamp = metav1.NewTime(time.Now().Add(-age).Truncate(time.Second))
		if !ready {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		a.addPod(p)
	}
	mk("istiod-old-notready", corev1.PodRunning, false, time.Hour)
	mk("istiod-pending", corev1.PodPending, false, 2*time.Hour)
	mk("istiod-ready", corev1.PodRunning, true, time.Minute)
	var hits atomic.Int32
	a.listen("istio-system", "istiod-ready", 15014, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/debug/syncz" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `[{"proxy":"web-1.shop"}]`)
	}))
	c := newLive(t, a, Options{})
	body, err := c.Istiod(context.Background(), "", "/debug/syncz")
	if err != nil || string(body) != `[{"proxy":"web-1.shop"}]` {
		t.Fatalf("Istiod = %q, %v", body, err)
	}
	if hits.Load() != 1 || a.count("portforward istio-system/istiod-ready") == 0 {
		t.Errorf("istiod-ready not asked: hits %d, requests %v", hits.Load(), a.requests)
	}

	a.forbidForward = true
	_, err = c.Istiod(context.Background(), "", "/debug/syncz")
	if msg := cluster.AccessProblem("read istiod", err); !apierrors.IsForbidden(err) || !strings.Contains(msg, "pods/portforward") || !strings.Contains(msg, "meshtriage-readonly") {
		t.Errorf("forbidden istiod port-forward: %v", err)
	}
}

// The proxy-status probe lists istiod's pods through the cache and then
// reads syncz: through NewCache the syncz read finds istiod in that list.
func TestIstiodReadSharesTheCachesPodList(t *testing.T) {
	a := newFakeAPI(t)
	p := meshedPod("istio-system", "istiod-1")
	p.Labels = map[string]string{"app": "istiod"}
	a.addPod(p)
	a.listen("istio-system", "istiod-1", 15014, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `[]`)
	}))
	ctx := context.Background()
	cache := NewCache(newLive(t, a, Options{}))
	defer cache.Close()
	if _, err := cache.ListPods(ctx, "istio-system", map[string]string{"app": "istiod"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Istiod(ctx, "", "/debug/syncz"); err != nil {
		t.Fatal(err)
	}
	// The probe asks replicas by the names of that list: finding one
	// costs no read of its own.
	if _, err := cluster.Uncached(cache).Istiod(ctx, "istiod-1", "/debug/syncz"); err != nil {
		t.Fatal(err)
	}
	if got := a.count("list istio-system app=istiod"); got != 1 {
		t.Errorf("istiod pods listed %d times, want once", got)
	}
	if got := a.count("get istio-system/istiod-1"); got != 0 {
		t.Errorf("the named replica was read %d times, want none: it is in the list", got)
	}
}

func TestIstiodWithoutARunningPodIsUnreachable(t *testing.T) {
	a := newFakeAPI(t)
	c := newLive(t, a, Options{ControlPlaneNamespace: "istio-prod"})
	_, err := c.Istiod(context.Background(), "", "/debug/syncz")
	var u *cluster.UnreachableError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "no Running istiod pod (app=istiod) in istio-prod") {
		t.Errorf("err = %v", err)
	}
}

func TestLogsSendsTheBoundsAndStopsReadingAtTheLimit(t *testing.T) {
	a := newFakeAPI(t)
	a.logBody = strings.Repeat("upstream connect error or disconnect/reset before headers\n", 10000)
	c := newLive(t, a, Options{})
	body, err := c.Logs(context.Background(), webPod, cluster.LogOptions{
		Container: "istio-proxy", Since: 90*time.Second + time.Millisecond, LimitBytes: 1000, Previous: true, TailLines: 500,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(body) != 1000 || !strings.HasPrefix(string(body), "upstream connect error") {
		t.Errorf("read %d bytes, want the first 1000", len(body))
	}
	q := a.logQuery
	for k, want := range map[string]string{"container": "istio-proxy", "sinceSeconds": "91", "limitBytes": "1000", "previous": "true", "tailLines": "500"} {
		if got := strings.Join(q[k], ","); got != want {
			t.Errorf("query %s = %q, want %q", k, got, want)
		}
	}

	if _, err := c.Logs(context.Background(), webPod, cluster.LogOptions{Container: "app"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.logQuery["limitBytes"], ","); got != fmt.Sprint(cluster.DefaultLogLimit) {
		t.Errorf("default limitBytes = %q", got)
	}
	if _, ok := a.logQuery["sinceSeconds"]; ok {
		t.Error("Since 0 must not send sinceSeconds")
	}
}

func TestLogsThroughAClientset(t *testing.T) {
	c := newCluster(clientset.Reader{Kube: fake.NewClientset()}, &rest.Config{}, Options{})
	body, err := c.Logs(context.Background(), webPod, cluster.LogOptions{Container: "istio-proxy"})
	if err != nil || string(body) != "fake logs" {
		t.Errorf("Logs = %q, %v", body, err)
	}
	body, err = c.Logs(context.Background(), webPod, cluster.LogOptions{Container: "istio-proxy", LimitBytes: 4})
	if err != nil || string(body) != "fake" {
		t.Errorf("Logs limited to 4 bytes = %q, %v", body, err)
	}
}

// endless never ends, like a log followed forever.
type endless struct{ reads int }

func (e *endless) Read(p []byte) (int, error) {
	e.reads++
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestReadLimitedNeverReadsPastTheLimit(t *testing.T) {
	r := &endless{}
	b, err := readLimited(r, 100_000)
	if err != nil || len(b) != 100_000 {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
	if r.reads > 100 {
		t.Errorf("%d reads for 100 kB", r.reads)
	}
}

// fakeTunnel is a tunnel to a local server, recording how often it was
// opened and closed.
type fakeTunnel struct {
	addr    string
	err     error
	opened  atomic.Int32
	closed  atomic.Int32
	lastErr error
	done    chan struct{} // nil: never ends
}

// execFunc is the exec half of a test's podconn.Dialer.
type execFunc func(ctx context.Context, pod cluster.PodRef, container string, command []string, stdout io.Writer) (string, error)

// seamConn is a podconn.Dialer made of a fake tunnel and a fake exec.
type seamConn struct {
	tunnel *fakeTunnel
	exec   execFunc
}

func (s seamConn) Forward(context.Context, cluster.PodRef, int) (podconn.Tunnel, error) {
	f := s.tunnel
	if f.err != nil {
		return podconn.Tunnel{}, f.err
	}
	f.opened.Add(1)
	return podconn.Tunnel{
		Dial: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", f.addr)
		},
		Close:     func() { f.closed.Add(1) },
		LastError: func() error { return f.lastErr },
		Done:      f.done,
	}, nil
}

func (s seamConn) Exec(ctx context.Context, pod cluster.PodRef, container string, command []string, stdout io.Writer) (string, error) {
	return s.exec(ctx, pod, container, command, stdout)
}

// seamCluster is a Cluster whose pod reads come from a fake clientset and
// whose tunnel and exec are test doubles.
func seamCluster(t *testing.T, ft *fakeTunnel, exec execFunc, opts Options) *Cluster {
	t.Helper()
	kube := fake.NewClientset(meshedPod("shop", "web-1"))
	c := newCluster(clientset.Reader{Kube: kube}, &rest.Config{Host: "https://lab:6443"}, opts)
	c.conn = seamConn{tunnel: ft, exec: exec}
	return c
}

func noExec(t *testing.T) execFunc {
	return func(context.Context, cluster.PodRef, string, []string, io.Writer) (string, error) {
		t.Error("exec fallback used")
		return "", errors.New("no exec")
	}
}

func TestForwardGetClosesTheTunnelOnEveryPath(t *testing.T) {
	srv := httptest.NewServer(envoyAdmin(t))
	defer srv.Close()
	ft := &fakeTunnel{addr: srv.Listener.Addr().String()}
	c := seamCluster(t, ft, noExec(t), Options{})

	if _, err := c.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnvoyAdmin(context.Background(), webPod, "/missing"); err == nil {
		t.Fatal("404 accepted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.EnvoyAdmin(ctx, webPod, "/slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow: %v", err)
	}
	if n := ft.closed.Load(); n != 3 {
		t.Errorf("tunnel closed %d times for 3 reads", n)
	}
}

func TestForwardGetCapsTheResponse(t *testing.T) {
	srv := httptest.NewServer(envoyAdmin(t))
	defer srv.Close()
	ft := &fakeTunnel{addr: srv.Listener.Addr().String()}
	c := seamCluster(t, ft, noExec(t), Options{MaxResponseBytes: 10})
	_, err := c.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json")
	if err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("err = %v", err)
	}
}

func TestUnreachableCarriesTheForwardersReason(t *testing.T) {
	// A listener that accepts and hangs up, as a tunnel whose pod port refused.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		_ = conn.Close()
	}))
	defer srv.Close()
	ft := &fakeTunnel{addr: srv.Listener.Addr().String(), lastErr: errors.New("error forwarding port 15000: connection refused")}
	c := seamCluster(t, ft, noExec(t), Options{})
	_, err := c.EnvoyAdmin(context.Background(), webPod, "/clusters")
	var u *cluster.UnreachableError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "port 15000: connection refused") {
		t.Errorf("err = %v", err)
	}
	if got := cluster.AccessProblem("read Envoy clusters of shop/web-1", err); !strings.HasPrefix(got, "cannot read Envoy clusters of shop/web-1: Envoy admin of shop/web-1 unreachable") {
		t.Errorf("AccessProblem = %q", got)
	}
}

func TestExecFallbackDecision(t *testing.T) {
	pfForbidden := fmt.Errorf("error upgrading connection: unable to upgrade connection: %s", forbidden("pods/portforward", "web-1", "shop").Error())
	upgradeFailed := errors.New("error upgrading connection: unable to upgrade connection: 400 Bad Request")
	for _, tc := range []struct {
		name     string
		setupErr error
		execErr  error
		wantExec bool
		check    func(t *testing.T, body []byte, err error)
	}{
		{"forbidden port-forward -> exec", pfForbidden, nil, true, func(t *testing.T, body []byte, err error) {
			if err != nil || string(body) != "from pilot-agent" {
				t.Errorf("= %q, %v", body, err)
			}
		}},
		{"failed upgrade -> exec", upgradeFailed, nil, true, func(t *testing.T, body []byte, err error) {
			if err != nil || string(body) != "from pilot-agent" {
				t.Errorf("= %q, %v", body, err)
			}
		}},
		{"both forbidden -> Forbidden", podconn.ForbiddenFrom(pfForbidden, "pods/portforward", "web-1"), fmt.Errorf("unable to upgrade connection: %s", forbidden("pods/exec", "web-1", "shop").Error()), true,
			func(t *testing.T, _ []byte, err error) {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"pods/exec"`) {
					t.Errorf("err = %v", err)
				}
			}},
		{"upgrade failed, exec forbidden -> unreachable with both reasons", upgradeFailed, fmt.Errorf("unable to upgrade connection: %s", forbidden("pods/exec", "web-1", "shop").Error()), true,
			func(t *testing.T, _ []byte, err error) {
				var u *cluster.UnreachableError
				if !errors.As(err, &u) || !strings.Contains(err.Error(), "400 Bad Request") || !strings.Contains(err.Error(), "pods/exec") {
					t.Errorf("err = %v", err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls int
			exec := func(_ context.Context, pod cluster.PodRef, container string, command []string, stdout io.Writer) (string, error) {
				calls++
				if pod != webPod || container != "istio-proxy" || strings.Join(command, " ") != "pilot-agent request GET stats?filter=upstream_rq" {
					t.Errorf("exec %s %s %q", pod, container, command)
				}
				if tc.execErr != nil {
					return "", tc.execErr
				}
				_, _ = io.WriteString(stdout, "from pilot-agent")
				return "", nil
			}
			c := seamCluster(t, &fakeTunnel{err: tc.setupErr}, exec, Options{})
			body, err := c.EnvoyAdmin(context.Background(), webPod, "/stats?filter=upstream_rq")
			if (calls == 1) != tc.wantExec {
				t.Errorf("exec calls = %d", calls)
			}
			tc.check(t, body, err)
		})
	}
}

func TestExecOutputIsCapped(t *testing.T) {
	exec := func(ctx context.Context, _ cluster.PodRef, _ string, _ []string, stdout io.Writer) (string, error) {
		for {
			if _, err := stdout.Write([]byte("0123456789")); err != nil {
				<-ctx.Done() // the overflow cancels the stream, as remotecommand then returns
				return "", ctx.Err()
			}
		}
	}
	c := seamCluster(t, &fakeTunnel{err: errors.New("error upgrading connection: 400")}, exec, Options{MaxResponseBytes: 35})
	_, err := c.EnvoyAdmin(context.Background(), webPod, "/config_dump")
	if err == nil || !strings.Contains(err.Error(), "larger than 35 bytes") {
		t.Errorf("err = %v", err)
	}
}

func TestPickIstiodIsStable(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	pod := func(name string, ready bool, age time.Duration) corev1.Pod {
		p := *meshedPod("istio-system", name)
		p.CreationTimestamp = metav1.NewTime(now.Add(-age))
		if !ready {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		return p
	}
	got, ok := pickIstiod([]corev1.Pod{pod("b", true, time.Minute), pod("a", false, time.Hour), pod("c", true, time.Hour)})
	if !ok || got.Name != "c" {
		t.Errorf("picked %q, want the oldest ready (c)", got.Name)
	}
	if _, ok := pickIstiod(nil); ok {
		t.Error("picked from no pods")
	}
}

func TestIstiodTunnelFailureIsUnreachable(t *testing.T) {
	istiod := meshedPod("istio-system", "istiod-abc")
	istiod.Labels = map[string]string{"app": "istiod"}
	c := newCluster(clientset.Reader{Kube: fake.NewClientset(istiod)}, &rest.Config{}, Options{})
	c.conn = seamConn{tunnel: &fakeTunnel{err: errors.New("error upgrading connection: 502 Bad Gateway")}}
	_, err := c.Istiod(context.Background(), "", "debug/syncz")
	var u *cluster.UnreachableError
	if !errors.As(err, &u) || u.What != "istiod istio-system/istiod-abc" || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Errorf("err = %v", err)
	}
}
