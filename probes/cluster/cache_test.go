package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	apinetworking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// countingCluster counts the reads that reach it. While gate is open (non-nil
// and not closed) every read blocks until it closes or the caller's context
// ends, so tests can hold a read in flight.
type countingCluster struct {
	mu    sync.Mutex
	calls map[string]int
	gate  chan struct{}
	fail  map[string]error
}

func newCounting() *countingCluster {
	return &countingCluster{calls: map[string]int{}, fail: map[string]error{}}
}

func (f *countingCluster) hold() { f.mu.Lock(); f.gate = make(chan struct{}); f.mu.Unlock() }
func (f *countingCluster) release() {
	f.mu.Lock()
	close(f.gate)
	f.gate = nil
	f.mu.Unlock()
}

func (f *countingCluster) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *countingCluster) enter(ctx context.Context, op string) error {
	f.mu.Lock()
	f.calls[op]++
	gate, err := f.gate, f.fail[op]
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (f *countingCluster) Info() cluster.ClusterInfo { return cluster.ClusterInfo{Context: "counting"} }

func (f *countingCluster) ServerVersion(ctx context.Context) (string, error) {
	if err := f.enter(ctx, "version"); err != nil {
		return "", err
	}
	return "v1.31.2", nil
}

func (f *countingCluster) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	if err := f.enter(ctx, "namespace"); err != nil {
		return nil, err
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"istio-injection": "enabled"}}}, nil
}

func (f *countingCluster) GetService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	if err := f.enter(ctx, "service"); err != nil {
		return nil, err
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 8080}}},
	}, nil
}

func (f *countingCluster) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if err := f.enter(ctx, "pod"); err != nil {
		return nil, err
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: mesh.ProxyContainer}}},
	}, nil
}

func (f *countingCluster) ListPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	if err := f.enter(ctx, "pods"); err != nil {
		return nil, err
	}
	return []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web-1", Labels: selector}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web-2", Labels: selector}},
	}, nil
}

func (f *countingCluster) EndpointSlices(ctx context.Context, namespace, service string) ([]discoveryv1.EndpointSlice, error) {
	if err := f.enter(ctx, "endpointslices"); err != nil {
		return nil, err
	}
	ready := true
	return []discoveryv1.EndpointSlice{{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: service + "-abc"},
		Endpoints:  []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}}, nil
}

func (f *countingCluster) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if err := f.enter(ctx, "configmap"); err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string]string{"mesh": "{}"}}, nil
}

func (f *countingCluster) DestinationRules(ctx context.Context, namespace string) ([]*networkingv1.DestinationRule, error) {
	if err := f.enter(ctx, "destinationrules"); err != nil {
		return nil, err
	}
	return []*networkingv1.DestinationRule{{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"},
		Spec:       apinetworking.DestinationRule{Host: "web", Subsets: []*apinetworking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}},
	}}, nil
}

func (f *countingCluster) VirtualServices(ctx context.Context, namespace string) ([]*networkingv1.VirtualService, error) {
	if err := f.enter(ctx, "virtualservices"); err != nil {
		return nil, err
	}
	return []*networkingv1.VirtualService{{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web"}, Spec: apinetworking.VirtualService{Hosts: []string{"web"}}}}, nil
}

func (f *countingCluster) ServiceEntries(ctx context.Context, namespace string) ([]*networkingv1.ServiceEntry, error) {
	if err := f.enter(ctx, "serviceentries"); err != nil {
		return nil, err
	}
	return nil, nil
}

func (f *countingCluster) Sidecars(ctx context.Context, namespace string) ([]*networkingv1.Sidecar, error) {
	if err := f.enter(ctx, "sidecars"); err != nil {
		return nil, err
	}
	return []*networkingv1.Sidecar{}, nil
}

func (f *countingCluster) PeerAuthentications(ctx context.Context, namespace string) ([]*securityv1.PeerAuthentication, error) {
	if err := f.enter(ctx, "peerauthentications"); err != nil {
		return nil, err
	}
	return []*securityv1.PeerAuthentication{{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"}}}, nil
}

func (f *countingCluster) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	if err := f.enter(ctx, "envoy"); err != nil {
		return nil, err
	}
	return []byte("admin " + pod.String() + path), nil
}

func (f *countingCluster) Logs(ctx context.Context, pod cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	if err := f.enter(ctx, "logs"); err != nil {
		return nil, err
	}
	return []byte("log of " + pod.String() + "/" + opts.Container), nil
}

func (f *countingCluster) Istiod(ctx context.Context, replica, path string) ([]byte, error) {
	if err := f.enter(ctx, "istiod"); err != nil {
		return nil, err
	}
	return []byte("istiod " + path), nil
}

var web = cluster.PodRef{Namespace: "shop", Name: "web-1"}

// everyRead performs one read of each kind with fixed arguments and
// returns a printable digest of the results.
func everyRead(ctx context.Context, c cluster.Cluster) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	note := func(op, v string, err error) {
		out[op] = v
		errs = append(errs, err)
	}
	v, err := c.ServerVersion(ctx)
	note("version", v, err)
	ns, err := c.GetNamespace(ctx, "shop")
	note("namespace", ns.GetName(), err)
	svc, err := c.GetService(ctx, "shop", "web")
	note("service", svc.GetName(), err)
	pod, err := c.GetPod(ctx, "shop", "web-1")
	note("pod", pod.GetName(), err)
	pods, err := c.ListPods(ctx, "shop", map[string]string{"app": "web", "version": "v1"})
	note("pods", podNames(pods), err)
	eps, err := c.EndpointSlices(ctx, "shop", "web")
	note("endpointslices", sliceNames(eps), err)
	cm, err := c.GetConfigMap(ctx, "istio-system", "istio")
	note("configmap", cm.GetName(), err)
	drs, err := c.DestinationRules(ctx, "shop")
	note("destinationrules", itemCount(len(drs)), err)
	vss, err := c.VirtualServices(ctx, "shop")
	note("virtualservices", itemCount(len(vss)), err)
	ses, err := c.ServiceEntries(ctx, "shop")
	note("serviceentries", itemCount(len(ses)), err)
	scs, err := c.Sidecars(ctx, "shop")
	note("sidecars", itemCount(len(scs)), err)
	pas, err := c.PeerAuthentications(ctx, "shop")
	note("peerauthentications", itemCount(len(pas)), err)
	b, err := c.EnvoyAdmin(ctx, web, "/clusters?format=json")
	note("envoy", string(b), err)
	b, err = c.Logs(ctx, web, cluster.LogOptions{Container: mesh.ProxyContainer, Since: time.Minute})
	note("logs", string(b), err)
	b, err = c.Istiod(ctx, "", "/debug/syncz")
	note("istiod", string(b), err)
	return out, errors.Join(errs...)
}

var readOps = []string{"version", "namespace", "service", "pod", "pods", "endpointslices", "configmap",
	"destinationrules", "virtualservices", "serviceentries", "sidecars", "peerauthentications", "envoy", "logs", "istiod"}

func podNames(pods []corev1.Pod) string {
	s := ""
	for _, p := range pods {
		s += p.Name + ","
	}
	return s
}

func sliceNames(eps []discoveryv1.EndpointSlice) string {
	s := ""
	for _, e := range eps {
		s += e.Name + ","
	}
	return s
}

func itemCount(n int) string { return strconv.Itoa(n) }

func TestCacheMakesOneRequestForConcurrentIdenticalReads(t *testing.T) {
	f := newCounting()
	c := cluster.NewCache(f)
	f.hold()
	const n = 16
	results := make([]map[string]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = everyRead(context.Background(), c) })
	}
	// Let every goroutine reach the cache while the first reads are held.
	deadline := time.Now().Add(5 * time.Second)
	for f.count("version") == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	f.release()
	wg.Wait()

	for i := range n {
		if errs[i] != nil {
			t.Fatalf("reader %d: %v", i, errs[i])
		}
		for op, v := range results[0] {
			if results[i][op] != v {
				t.Errorf("reader %d %s = %q, reader 0 got %q", i, op, results[i][op], v)
			}
		}
	}
	for _, op := range readOps {
		if got := f.count(op); got != 1 {
			t.Errorf("%s reached the cluster %d times for %d identical reads, want 1", op, got, n)
		}
	}
	if results[0]["envoy"] != "admin shop/web-1/clusters?format=json" || results[0]["pods"] != "web-1,web-2," {
		t.Errorf("cache changed the results: %v", results[0])
	}
}

func TestCacheKeysByArguments(t *testing.T) {
	f := newCounting()
	c := cluster.NewCache(f)
	ctx := context.Background()
	reads := []func() error{
		func() error { _, err := c.EnvoyAdmin(ctx, web, "/clusters?format=json"); return err },
		func() error { _, err := c.EnvoyAdmin(ctx, web, "/config_dump"); return err },
		func() error {
			_, err := c.EnvoyAdmin(ctx, cluster.PodRef{Namespace: "shop", Name: "web-2"}, "/config_dump")
			return err
		},
		func() error { _, err := c.Logs(ctx, web, cluster.LogOptions{Container: "istio-proxy"}); return err },
		func() error {
			_, err := c.Logs(ctx, web, cluster.LogOptions{Container: "istio-proxy", Previous: true})
			return err
		},
		func() error {
			_, err := c.Logs(ctx, web, cluster.LogOptions{Container: "istio-proxy", LimitBytes: 1024})
			return err
		},
		func() error { _, err := c.ListPods(ctx, "shop", map[string]string{"app": "web", "v": "1"}); return err },
		func() error { _, err := c.ListPods(ctx, "shop", map[string]string{"v": "1", "app": "web"}); return err },
		func() error { _, err := c.ListPods(ctx, "shop", map[string]string{"app": "web"}); return err },
		func() error { _, err := c.ListPods(ctx, "bank", map[string]string{"app": "web"}); return err },
		func() error { _, err := c.Istiod(ctx, "", "/debug/syncz"); return err },
		func() error { _, err := c.Istiod(ctx, "", "/debug/configz"); return err },
		func() error { _, err := c.GetPod(ctx, "shop", "web-1"); return err },
		func() error { _, err := c.GetPod(ctx, "bank", "web-1"); return err },
	}
	for _, r := range reads {
		for range 2 {
			if err := r(); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]int{"envoy": 3, "logs": 3, "pods": 3, "istiod": 2, "pod": 2}
	for op, n := range want {
		if got := f.count(op); got != n {
			t.Errorf("%s: %d requests, want %d", op, got, n)
		}
	}
}

func TestCacheKeepsErrorsButNotContextErrors(t *testing.T) {
	f := newCounting()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-1", errors.New(`User "u" cannot get resource "pods"`))
	f.fail["pod"] = forbidden
	c := cluster.NewCache(f)
	for range 3 {
		if _, err := c.GetPod(context.Background(), "shop", "web-1"); !apierrors.IsForbidden(err) {
			t.Fatalf("GetPod err = %v, want the Forbidden", err)
		}
	}
	if got := f.count("pod"); got != 1 {
		t.Errorf("a Forbidden was fetched %d times, want 1 (kept)", got)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	f.hold()
	if _, err := c.EnvoyAdmin(cancelled, web, "/clusters"); !errors.Is(err, context.Canceled) {
		t.Fatalf("EnvoyAdmin with a cancelled context: %v", err)
	}
	f.release()
	b, err := c.EnvoyAdmin(context.Background(), web, "/clusters")
	if err != nil || string(b) != "admin shop/web-1/clusters" {
		t.Fatalf("EnvoyAdmin after a cancelled read = %q, %v", b, err)
	}
	if got := f.count("envoy"); got != 2 {
		t.Errorf("envoy requests = %d, want 2: a cancelled read must not be kept", got)
	}
}

func TestCacheWaiterFetchesAgainWhenTheFetchingCallersDeadlinePasses(t *testing.T) {
	f := newCounting()
	c := cluster.NewCache(f)
	f.hold()
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	leaderErr := make(chan error, 1)
	go func() { _, err := c.Istiod(short, "", "/debug/syncz"); leaderErr <- err }()
	for f.count("istiod") == 0 {
		time.Sleep(time.Millisecond)
	}
	waiter := make(chan []byte, 1)
	go func() {
		b, err := c.Istiod(context.Background(), "", "/debug/syncz")
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		waiter <- b
	}()
	if err := <-leaderErr; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("leader err = %v, want its deadline", err)
	}
	// The waiter now fetches itself and is held like everyone else.
	for f.count("istiod") < 2 {
		time.Sleep(time.Millisecond)
	}
	f.release()
	if b := <-waiter; string(b) != "istiod /debug/syncz" {
		t.Errorf("waiter got %q", b)
	}
}

func TestCacheWaiterHonoursItsOwnDeadline(t *testing.T) {
	f := newCounting()
	c := cluster.NewCache(f)
	f.hold()
	defer f.release()
	go func() { _, _ = c.EnvoyAdmin(context.Background(), web, "/config_dump") }()
	for f.count("envoy") == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.EnvoyAdmin(ctx, web, "/config_dump")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter err = %v, want DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("waiter blocked %v past its deadline", waited)
	}
}

func TestCacheReturnsCopiesNotSharedState(t *testing.T) {
	f := newCounting()
	c := cluster.NewCache(f)
	ctx := context.Background()

	pod, _ := c.GetPod(ctx, "shop", "web-1")
	pod.Labels["app"] = "edited"
	pod.Spec.Containers[0].Name = "edited"
	pods, _ := c.ListPods(ctx, "shop", map[string]string{"app": "web"})
	pods[0].Name = "edited"
	pods[1].Labels["app"] = "edited"
	drs, _ := c.DestinationRules(ctx, "shop")
	drs[0].Spec.Subsets[0].Labels["version"] = "edited"
	drs[0] = nil
	eps, _ := c.EndpointSlices(ctx, "shop", "web")
	*eps[0].Endpoints[0].Conditions.Ready = false
	b, _ := c.EnvoyAdmin(ctx, web, "/clusters")
	copy(b, "XXXXX")

	pod2, _ := c.GetPod(ctx, "shop", "web-1")
	if pod2.Labels["app"] != "web" || pod2.Spec.Containers[0].Name != "app" {
		t.Errorf("a probe's edit of a pod leaked to the next reader: %v %v", pod2.Labels, pod2.Spec.Containers[0].Name)
	}
	pods2, _ := c.ListPods(ctx, "shop", map[string]string{"app": "web"})
	if pods2[0].Name != "web-1" || pods2[1].Labels["app"] != "web" {
		t.Errorf("edit of a pod list leaked: %s %v", pods2[0].Name, pods2[1].Labels)
	}
	drs2, _ := c.DestinationRules(ctx, "shop")
	if drs2[0] == nil || drs2[0].Spec.Subsets[0].Labels["version"] != "v1" {
		t.Errorf("edit of a DestinationRule leaked: %v", drs2[0])
	}
	eps2, _ := c.EndpointSlices(ctx, "shop", "web")
	if !*eps2[0].Endpoints[0].Conditions.Ready {
		t.Error("edit of an EndpointSlice condition leaked")
	}
	b2, _ := c.EnvoyAdmin(ctx, web, "/clusters")
	if !bytes.Equal(b2, []byte("admin shop/web-1/clusters")) {
		t.Errorf("edit of an Envoy response leaked: %q", b2)
	}
	for _, op := range []string{"pod", "pods", "destinationrules", "endpointslices", "envoy"} {
		if f.count(op) != 1 {
			t.Errorf("%s fetched %d times, want 1", op, f.count(op))
		}
	}

	// Empty is not absent: a read that found nothing stays distinguishable.
	ses, _ := c.ServiceEntries(ctx, "shop")
	scs, _ := c.Sidecars(ctx, "shop")
	if ses != nil || scs == nil || len(scs) != 0 {
		t.Errorf("nil/empty not preserved: ServiceEntries %#v, Sidecars %#v", ses, scs)
	}
}

func TestCacheResetFetchesAgain(t *testing.T) {
	f := newCounting()
	c := cluster.NewCache(f)
	ctx := context.Background()
	if _, err := everyRead(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := everyRead(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	if _, err := everyRead(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, op := range readOps {
		if got := f.count(op); got != 2 {
			t.Errorf("%s: %d requests over two waves, want 2", op, got)
		}
	}
	if c.Info().Context != "counting" {
		t.Errorf("Info = %+v", c.Info())
	}
}

func TestCacheResetDuringAReadDoesNotKeepIt(t *testing.T) {
	f := newCounting()
	c := cluster.NewCache(f)
	f.hold()
	done := make(chan struct{})
	go func() { _, _ = c.GetService(context.Background(), "shop", "web"); close(done) }()
	for f.count("service") == 0 {
		time.Sleep(time.Millisecond)
	}
	c.Reset()
	f.release()
	<-done
	if _, err := c.GetService(context.Background(), "shop", "web"); err != nil {
		t.Fatal(err)
	}
	if got := f.count("service"); got != 2 {
		t.Errorf("service requests = %d, want 2: a read begun before Reset must not serve the next wave", got)
	}
}
