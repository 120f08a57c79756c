package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/watch"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// rolloutAPI is an API server in the middle of a rollout of shop/orders:
// the first poll sees the old pod, every later one the new pod and a
// finished rollout.
type rolloutAPI struct {
	mu      sync.Mutex
	gets    int
	newPod  corev1.Pod
	stuck   bool // the rollout never finishes
	verbs   []string
	created time.Time
}

func (a *rolloutAPI) deployment() appsv1.Deployment {
	replicas := int32(1)
	d := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{Kind: "Deployment", APIVersion: "apps/v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "orders"}}},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 0, AvailableReplicas: 1},
	}
	if a.gets > 1 {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
		if a.stuck {
			d.Status.Replicas, d.Status.AvailableReplicas = 2, 1
		}
	}
	return d
}

func rolloutPod(name, hash string, created time.Time) corev1.Pod {
	started := metav1.NewTime(created.Add(2 * time.Second))
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{"app": "orders", appsv1.DefaultDeploymentUniqueLabelKey: hash}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "orders"}, {Name: mesh.ProxyContainer,
			Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"pilot-agent", "wait"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: mesh.ProxyContainer, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(created.Add(time.Second))}}},
				{Name: "orders", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}},
			}},
	}
}

func newRolloutAPI(t *testing.T, a *rolloutAPI) string {
	// The new pod is two minutes old by the time the watch sees it, so its
	// restart window is over at once and the test does not wait a minute.
	a.created = time.Now().Add(-2 * time.Minute)
	if a.newPod.Name == "" {
		a.newPod = rolloutPod("orders-5d4b-new", "5d4b", a.created)
	}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	status := func(w http.ResponseWriter, err *apierrors.StatusError) {
		st := err.ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(st.Code))
		_ = json.NewEncoder(w).Encode(st)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.verbs = append(a.verbs, r.Method+" "+r.URL.Path)
		a.mu.Unlock()
		http.NotFound(w, r)
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]string{"gitVersion": "v1.31.2"})
	})
	mux.HandleFunc("GET /apis/apps/v1/namespaces/{ns}/deployments/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("ns") != "shop" || r.PathValue("name") != "orders" {
			status(w, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, r.PathValue("name")))
			return
		}
		a.mu.Lock()
		a.gets++
		d := a.deployment()
		a.mu.Unlock()
		reply(w, d)
	})
	mux.HandleFunc("GET /api/v1/namespaces/shop/pods", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		gets := a.gets
		a.mu.Unlock()
		l := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		if r.URL.Query().Get("labelSelector") == "app=orders" {
			if gets <= 1 {
				l.Items = append(l.Items, rolloutPod("orders-7c9f-old", "7c9f", a.created.Add(-time.Hour)))
			} else {
				l.Items = append(l.Items, a.newPod)
			}
		}
		reply(w, l)
	})
	mux.HandleFunc("GET /api/v1/namespaces/shop/pods/{name}/log", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("previous") == "true" {
			_, _ = w.Write([]byte(a.created.Add(2*time.Second).UTC().Format(time.RFC3339Nano) + " ERROR dial tcp 10.96.0.20:5432: connect: connection refused\n"))
		}
	})
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/services/{name}", func(w http.ResponseWriter, r *http.Request) {
		status(w, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, r.PathValue("name")))
	})
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/configmaps/{name}", func(w http.ResponseWriter, r *http.Request) {
		status(w, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, r.PathValue("name")))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return writeKubeconfig(t, srv.URL)
}

func TestWatchPassesACleanRollout(t *testing.T) {
	noAmbientCluster(t)
	a := &rolloutAPI{}
	kc := newRolloutAPI(t, a)
	code, out, errOut := run(t, "meshtriage", "watch", "--kubeconfig", kc, "-n", "shop", "deploy/orders", "--interval", "10ms")
	if code != exitOK || !strings.Contains(out, "PASS: no regression") || !strings.Contains(out, "orders-5d4b-new") || !strings.Contains(out, "proxy first (hold)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, "orders-7c9f-old") {
		t.Errorf("the old pod is not a new pod:\n%s", out)
	}
	if !strings.Contains(errOut, "no Service orders in shop: give --service") || !strings.Contains(errOut, "pod orders-5d4b-new") {
		t.Errorf("stderr:\n%s", errOut)
	}
	for _, v := range a.verbs {
		if !strings.HasPrefix(v, "GET ") {
			t.Errorf("watch made a %s", v)
		}
	}
}

func TestWatchFailsTheGateOnAnEarlyRestart(t *testing.T) {
	noAmbientCluster(t)
	a := &rolloutAPI{}
	kc := newRolloutAPI(t, a)
	p := &a.newPod
	app := &p.Status.ContainerStatuses[1]
	app.RestartCount = 1
	app.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1,
		StartedAt: metav1.NewTime(a.created.Add(2 * time.Second)), FinishedAt: metav1.NewTime(a.created.Add(3 * time.Second))}
	code, out, errOut := run(t, "meshtriage", "watch", "--kubeconfig", kc, "-n", "shop", "deploy/orders", "--interval", "10ms", "-o", "json")
	if code != exitRegressed {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep watch.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(rep.Pods) != 1 || !rep.Pods[0].EarlyRestart || !rep.Pods[0].ConnectionRefused || len(rep.Regressions) != 2 {
		t.Errorf("report %+v", rep)
	}
}

func TestWatchInputAndTimeoutErrors(t *testing.T) {
	noAmbientCluster(t)
	kc := newRolloutAPI(t, &rolloutAPI{})
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"svc/orders"}, "watch follows Deployments"},
		{[]string{"deploy/nope"}, "cannot get deployment shop/nope: not found"},
		{[]string{"deploy/orders", "-o", "yaml"}, `unknown output format "yaml"`},
		{[]string{"deploy/orders", "--prometheus", "prometheus:9090"}, "want an http(s) URL"},
		{[]string{"deploy/orders", "--from", "a/b/c/d"}, "want pod/NAME"},
	}
	for _, c := range cases {
		code, _, errOut := run(t, "meshtriage", append([]string{"watch", "--kubeconfig", kc, "-n", "shop"}, c.args...)...)
		if code != exitTriage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
			t.Errorf("%q: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}

	stuck := &rolloutAPI{stuck: true}
	kc = newRolloutAPI(t, stuck)
	code, out, errOut := run(t, "meshtriage", "watch", "--kubeconfig", kc, "-n", "shop", "deploy/orders", "--interval", "10ms", "--timeout", "300ms")
	if code != exitTriage || !strings.Contains(errOut, "did not settle within 300ms") || !strings.Contains(out, "NOT SETTLED") {
		t.Errorf("stuck rollout: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestCheckActionsNeedASourceAndALiveCluster(t *testing.T) {
	r := runCheck(t, "--scenario", "healthy", "--test-request", "/healthz", "--from", "pod/nope")
	if r.code != exitTriage || !strings.Contains(r.stderr, "needs a live cluster") {
		t.Errorf("scenario: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCheck(t, "--manifests", noSelectorDir, "-n", "shop", "svc/web", "--debug-logging", "30s")
	if r.code != exitTriage || !strings.Contains(r.stderr, "give --from pod/NAME") {
		t.Errorf("no source: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCheck(t, "--scenario", "healthy", "--from", "pod/x", "--debug-logging", "1h")
	if r.code != exitTriage || !strings.Contains(r.stderr, "want at most 10m0s") {
		t.Errorf("an hour: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestCheckAsksPrometheus(t *testing.T) {
	var queries int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries++
		mu.Unlock()
		if r.URL.Path != "/api/v1/query" || !strings.Contains(r.URL.Query().Get("query"), "istio_requests_total") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"response_code":"200","response_flags":"-"},"value":[1764644400,"12.5"]}]}}`))
	}))
	defer srv.Close()
	r := runCheck(t, "--scenario", "healthy", "--prometheus", srv.URL)
	if r.code != exitOK || !strings.Contains(r.stderr, "meshtriage: prometheus pass: 0 503/s now (12.5 req/s, 5m window)") || queries != 2 {
		t.Errorf("exit %d after %d queries, stderr:\n%s", r.code, queries, r.stderr)
	}
}

// actingCluster is a recorded scenario that can also run actions: exec
// answers curl with Envoy's local reply, admin POSTs keep logger levels.
type actingCluster struct {
	cluster.Cluster
	mu     sync.Mutex
	levels map[string]string
	log    []string
}

func (c *actingCluster) Exec(_ context.Context, _ cluster.PodRef, container string, cmd []string) ([]byte, []byte, error) {
	c.mu.Lock()
	c.log = append(c.log, "exec "+container+" "+cmd[0]+" (connection="+c.levels["connection"]+")")
	c.mu.Unlock()
	out := "HTTP/1.1 503 Service Unavailable\r\nserver: envoy\r\ncontent-length: 19\r\n\r\nno healthy upstream\n@@meshtriage@@ code=503 dns=0.00002 connect=0.0003 ttfb=0.0009 total=0.001 ip=10.96.0.9\n"
	return []byte(out), nil, nil
}

func (c *actingCluster) EnvoyAdminPost(_ context.Context, _ cluster.PodRef, path string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, "POST "+path)
	if name, level, ok := strings.Cut(strings.TrimPrefix(path, "/logging?"), "="); ok {
		c.levels[name] = level
	}
	var b strings.Builder
	b.WriteString("active loggers:\n")
	for _, n := range []string{"connection", "http", "upstream"} {
		b.WriteString("  " + n + ": " + c.levels[n] + "\n")
	}
	return []byte(b.String()), nil
}

type recordingSession struct {
	started bool
	actions []actions.Record
}

func (s *recordingSession) start()                  { s.started = true }
func (s *recordingSession) record(a actions.Record) { s.actions = append(s.actions, a) }

func TestCheckActionsRunAfterTheTriageAndRevert(t *testing.T) {
	src, err := triage.Scenario("healthy")
	if err != nil {
		t.Fatal(err)
	}
	target := src.Target
	c := &actingCluster{Cluster: src.Cluster, levels: map[string]string{"connection": "info", "http": "info", "upstream": "info"}}
	v := verifyFlags{testRequest: "/healthz", debugLogging: 30 * time.Millisecond}
	if err := v.validate(*target, nil); err == nil {
		t.Error("actions validated without a runner")
	}
	if err := v.validate(*target, c); err != nil {
		t.Fatal(err)
	}
	sess := &recordingSession{}
	var errOut strings.Builder
	deps := actionDeps{cluster: cluster.NewCache(c), target: *target, runner: c, record: sess.record, start: sess.start}
	err = v.run(context.Background(), deps, &errOut, func(context.Context) error {
		c.mu.Lock()
		c.log = append(c.log, "triage")
		c.mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.log, "\n")
	want := "triage\nPOST /logging\nPOST /logging?connection=debug\nPOST /logging?http=debug\nPOST /logging?upstream=debug\n" +
		"exec web curl (connection=debug)\nPOST /logging?connection=info\nPOST /logging?http=info\nPOST /logging?upstream=info"
	if got != want {
		t.Errorf("order:\n%s\nwant:\n%s", got, want)
	}
	if !sess.started || len(sess.actions) != 3 || sess.actions[1].Name != "test-request" || !sess.actions[2].Reverted {
		t.Errorf("recorded %+v", sess.actions)
	}
	if !strings.Contains(errOut.String(), "HTTP 503 UH from the sidecar (local reply): no healthy upstream") ||
		!strings.Contains(errOut.String(), "debug logging reverted after") {
		t.Errorf("stderr:\n%s", errOut.String())
	}
}

func TestDebugLinesAreRedactedOnTheTerminal(t *testing.T) {
	var b strings.Builder
	printCapture(&b, actions.DebugCapture{Lines: []string{
		"2025-12-02T03:00:01.200000Z\tdebug\tenvoy http [C7][S1] request headers complete:\n",
		"'authorization', 'Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ3ZWIifQ.c2lnbmF0dXJl'",
	}, DebugLines: 1})
	if strings.Contains(b.String(), "eyJhbGciOiJSUzI1NiJ9") {
		t.Errorf("a bearer token reached the terminal:\n%s", b.String())
	}
}
