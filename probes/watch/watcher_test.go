package watch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/prometheus"
)

// scriptedCluster plays a rollout script one step per poll; after the last
// step time goes on in 10 s strides with the cluster as it was.
type scriptedCluster struct {
	cluster.Cluster
	mu    sync.Mutex
	steps []step
	idx   int
	extra time.Duration
	gets  int
	envoy func(path string) ([]byte, error)
}

func newScripted(steps []step) *scriptedCluster { return &scriptedCluster{steps: steps, idx: -1} }

func (c *scriptedCluster) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idx < len(c.steps)-1 {
		c.idx++
	} else {
		c.extra += 10 * time.Second
	}
	return t0.Add(c.steps[c.idx].at + c.extra)
}

func (c *scriptedCluster) current() step {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.steps[max(c.idx, 0)]
}

func (c *scriptedCluster) GetDeployment(_ context.Context, ns, name string) (*appsv1.Deployment, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	if ns != "shop" || name != "orders" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, name)
	}
	return c.current().dep.DeepCopy(), nil
}

func (c *scriptedCluster) ListPods(_ context.Context, _ string, sel map[string]string) ([]corev1.Pod, error) {
	if sel["app"] != "orders" {
		return nil, nil
	}
	return c.current().observation().Pods, nil
}

func (c *scriptedCluster) Info() cluster.ClusterInfo {
	return cluster.ClusterInfo{ControlPlaneNamespace: "istio-system"}
}

func (c *scriptedCluster) GetConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (c *scriptedCluster) Logs(_ context.Context, ref cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	for _, p := range c.current().observation().Pods {
		if p.Name != ref.Name {
			continue
		}
		logs := logsFor(p)
		switch {
		case opts.Container == mesh.ProxyContainer:
			return logs.Proxy, nil
		case opts.Previous:
			return logs.AppPrevious[opts.Container], nil
		}
		return logs.App[opts.Container], nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, ref.Name)
}

func (c *scriptedCluster) EnvoyAdmin(_ context.Context, _ cluster.PodRef, path string) ([]byte, error) {
	if c.envoy == nil {
		return nil, cluster.ErrNotFound
	}
	return c.envoy(path)
}

func (c *scriptedCluster) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if ns == "web" && name == "web-1" { // the calling pod, meshed
		p := podSpec{name: "web-1", proxyStart: s, appStart: 2 * s, ready: true}.pod()
		p.Namespace = "web"
		return &p, nil
	}
	for _, p := range c.current().observation().Pods {
		if p.Name == name {
			return &p, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

// fixedMeter reports set rates and records that it was used in order.
type fixedMeter struct {
	before, during Rate
	beforeErr      error
	calls          []string
}

func (m *fixedMeter) Before(context.Context) (Rate, error) {
	m.calls = append(m.calls, "before")
	return m.before, m.beforeErr
}
func (m *fixedMeter) Begin(context.Context) { m.calls = append(m.calls, "begin") }
func (m *fixedMeter) End(context.Context) (Rate, error) {
	m.calls = append(m.calls, "end")
	return m.during, nil
}

func raceScript() []step {
	racing := podSpec{name: "orders-new-a", hash: "5d4b", created: 2 * s, proxyStart: 2*s + 300*time.Millisecond, appStart: 2*s + 200*time.Millisecond}
	restarted := racing
	restarted.restartedAt = 2*s + 1400*time.Millisecond
	restarted.ready = true
	return []step{
		{0, deployment(2, 1, 1, 0, 1, 1), []podSpec{oldA}},
		{3 * s, deployment(2, 2, 1, 1, 1, 2), []podSpec{oldA, racing}},
		{6 * s, deployment(2, 2, 1, 1, 1, 2), []podSpec{oldA, restarted}},
		{10 * s, deployment(2, 2, 1, 1, 1, 1), []podSpec{restarted}},
	}
}

func TestWatchFollowsTheRolloutToItsVerdict(t *testing.T) {
	c := newScripted(raceScript())
	meter := &fixedMeter{before: Rate{Errors503: 0, Requests: 40, Source: "test"}, during: Rate{Errors503: 0.4, Requests: 40, Source: "test"}}
	var reports int
	rep, err := Watch(context.Background(), Config{
		Cluster: c, Deployments: c, Namespace: "shop", Deployment: "orders",
		Interval: time.Millisecond, Rates: meter, Now: c.now,
		OnReport: func(Report) { reports++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Settled || !rep.Regressed() || len(rep.Pods) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if strings.Join(meter.calls, " ") != "before begin end" {
		t.Errorf("meter calls %q", meter.calls)
	}
	joined := strings.Join(rep.Regressions, "\n")
	for _, want := range []string{"restarted within", "connection refused", "503 rate rose from 0/s before to 0.40/s during"} {
		if !strings.Contains(joined, want) {
			t.Errorf("regressions lack %q:\n%s", want, joined)
		}
	}
	if reports < 4 {
		t.Errorf("OnReport called %d times", reports)
	}
}

func TestWatchTimesOutOnARolloutThatNeverCompletes(t *testing.T) {
	c := newScripted([]step{{0, deployment(2, 2, 2, 1, 1, 3), []podSpec{oldA}}})
	start := time.Now()
	rep, err := Watch(context.Background(), Config{Cluster: c, Deployments: c, Namespace: "shop", Deployment: "orders",
		Interval: time.Millisecond, Timeout: 50 * time.Millisecond, Now: c.now})
	var te *TimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "1 of 2 new replicas updated") || rep.Settled {
		t.Errorf("err %v, report %+v", err, rep)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

func TestWatchOfAnAbsentDeploymentIsOneLine(t *testing.T) {
	c := newScripted([]step{{0, deployment(1, 1, 1, 1, 1, 1), nil}})
	_, err := Watch(context.Background(), Config{Cluster: c, Deployments: c, Namespace: "shop", Deployment: "nope", Now: c.now})
	if err == nil || err.Error() != "cannot get deployment shop/nope: not found" {
		t.Errorf("err %v", err)
	}
}

func TestSidecarMeterSumsBackToBackSamples(t *testing.T) {
	c := newScripted([]step{{0, deployment(1, 1, 1, 1, 1, 1), []podSpec{oldA}}})
	var mu sync.Mutex
	reads := 0
	c.envoy = func(string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		return []byte(fmt.Sprintf("istio_requests_total{reporter=\"source\",destination_service=\"orders.shop.svc.cluster.local\",response_code=\"200\",response_flags=\"-\"} %d\n"+
			"istio_requests_total{reporter=\"source\",destination_service=\"orders.shop.svc.cluster.local\",response_code=\"503\",response_flags=\"UC\"} %d\n", reads*100, reads)), nil
	}
	src := cluster.PodRef{Namespace: "web", Name: "web-1"}
	m := &SidecarMeter{Cluster: c, Target: cluster.Target{Namespace: "shop", Service: "orders", Source: &src}, Interval: 5 * time.Millisecond}
	before, err := m.Before(context.Background())
	if err != nil || before.Errors503 <= 0 || !strings.Contains(before.Source, "source sidecar web/web-1") {
		t.Fatalf("before %+v %v", before, err)
	}
	m.Begin(context.Background())
	time.Sleep(40 * time.Millisecond)
	during, err := m.End(context.Background())
	if err != nil || during.Errors503 <= 0 || during.Requests <= during.Errors503 || len(during.ByFlag) != 1 || !strings.HasPrefix(during.ByFlag[0], "UC=") {
		t.Errorf("during %+v %v", during, err)
	}
	if !strings.Contains(during.Source, "samples") {
		t.Errorf("source %q", during.Source)
	}

	bad := &SidecarMeter{Cluster: newScripted([]step{{0, deployment(1, 1, 1, 1, 1, 1), nil}}), Target: cluster.Target{Namespace: "shop", Service: "orders", Source: &src}, Interval: time.Millisecond}
	bad.Begin(context.Background())
	time.Sleep(10 * time.Millisecond)
	if _, err := bad.End(context.Background()); err == nil {
		t.Error("a meter whose every sample failed reported a rate")
	}
}

func TestPrometheusMeterAsksOverTheRolloutsOwnWindow(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		mu.Lock()
		queries = append(queries, q)
		mu.Unlock()
		if strings.Contains(q, `reporter="source"`) {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"response_code":"503","response_flags":"UC"},"value":[1764644400,"0.25"]},{"metric":{"response_code":"200","response_flags":"-"},"value":[1764644400,"40"]}]}}`))
	}))
	defer srv.Close()
	clock := t0
	m := &PrometheusMeter{Prom: prometheus.Client{URL: srv.URL}, Target: cluster.Target{Namespace: "shop", Service: "orders"}, Now: func() time.Time { return clock }}
	before, err := m.Before(context.Background())
	if err != nil || before.Errors503 != 0.25 || !strings.Contains(before.Source, "destination") {
		t.Fatalf("before %+v %v", before, err)
	}
	m.Begin(context.Background())
	clock = clock.Add(3 * time.Minute)
	during, err := m.End(context.Background())
	if err != nil || during.Window != 3*time.Minute || during.Requests != 40.25 {
		t.Errorf("during %+v %v", during, err)
	}
	last := queries[len(queries)-1]
	if !strings.Contains(last, `reporter="destination"`) || !strings.HasSuffix(last, "[3m]))") {
		t.Errorf("last query %q", last)
	}
	clock = clock.Add(10 * time.Second)
	m.Begin(context.Background())
	clock = clock.Add(10 * time.Second)
	if _, err := m.End(context.Background()); err != nil || !strings.HasSuffix(queries[len(queries)-1], "[1m]))") {
		t.Errorf("a 10 s rollout is asked over at least a minute: %q %v", queries[len(queries)-1], err)
	}
}
