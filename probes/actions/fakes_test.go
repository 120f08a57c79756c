package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

var webPod = cluster.PodRef{Namespace: "web", Name: "web-1"}

// fakeEnvoy is the /logging endpoint of Envoy admin as Envoy serves it:
// POST only, one query parameter, unknown loggers are a 404 with usage.
type fakeEnvoy struct {
	mu       sync.Mutex
	levels   map[string]string
	posts    []string
	failOn   string // a logger whose change answers 500
	down     bool   // every request fails
	srv      *httptest.Server
	onChange func(logger, level string)
}

func newFakeEnvoy(t *testing.T) *fakeEnvoy {
	f := &fakeEnvoy{levels: map[string]string{
		"admin": "info", "connection": "info", "http": "info", "upstream": "warning", "router": "info", "pool": "info",
	}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeEnvoy) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		http.Error(w, "upstream connect error", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path != "/logging" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "This endpoint requires POST", http.StatusMethodNotAllowed)
		return
	}
	f.posts = append(f.posts, r.URL.RawQuery)
	q := r.URL.Query()
	if len(q) > 1 {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "error: invalid number of parameters\n\nusage: /logging?<name>=<level> (change single level)\n")
		return
	}
	for name, v := range q {
		if name == f.failOn {
			http.Error(w, "injected failure", http.StatusInternalServerError)
			return
		}
		if _, ok := f.levels[name]; !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "error: unknown logger name\n")
			return
		}
		f.levels[name] = v[0]
		if f.onChange != nil {
			f.onChange(name, v[0])
		}
	}
	fmt.Fprint(w, "active loggers:\n")
	names := make([]string, 0, len(f.levels))
	for n := range f.levels {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %s: %s\n", n, f.levels[n])
	}
}

func (f *fakeEnvoy) level(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.levels[name]
}

// fakeRunner sends admin POSTs to a fakeEnvoy and answers exec from a
// script.
type fakeRunner struct {
	envoy *fakeEnvoy
	exec  func(container string, cmd []string) ([]byte, []byte, error)
	mu    sync.Mutex
	execs [][]string
}

func (r *fakeRunner) Exec(_ context.Context, _ cluster.PodRef, container string, cmd []string) ([]byte, []byte, error) {
	r.mu.Lock()
	r.execs = append(r.execs, append([]string{container}, cmd...))
	r.mu.Unlock()
	return r.exec(container, cmd)
}

func (r *fakeRunner) EnvoyAdminPost(ctx context.Context, _ cluster.PodRef, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.envoy.srv.URL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: HTTP %d: %s", path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// fakeCluster serves the reads an action makes: the source pod, the
// Service and the istio-proxy log.
type fakeCluster struct {
	cluster.Cluster
	pods    map[string]*corev1.Pod
	svc     *corev1.Service
	log     string
	logErr  error
	mu      sync.Mutex
	logOpts []cluster.LogOptions
}

func (c *fakeCluster) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p, ok := c.pods[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

func (c *fakeCluster) GetService(_ context.Context, ns, name string) (*corev1.Service, error) {
	if c.svc != nil && c.svc.Namespace == ns && c.svc.Name == name {
		return c.svc, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, name)
}

func (c *fakeCluster) Logs(_ context.Context, _ cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logOpts = append(c.logOpts, opts)
	if c.logErr != nil {
		return nil, c.logErr
	}
	return []byte(c.log), nil
}

func newFakeCluster() *fakeCluster {
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "web-1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}, {Name: mesh.ProxyContainer}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	return &fakeCluster{pods: map[string]*corev1.Pod{"web/web-1": web}}
}

// records collects what an action recorded.
type records struct {
	mu   sync.Mutex
	list []Record
}

func (r *records) rec() Recorder {
	return func(a Record) {
		r.mu.Lock()
		r.list = append(r.list, a)
		r.mu.Unlock()
	}
}

func (r *records) all() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.list...)
}

var errExit = errors.New("command terminated with exit code 28")
