package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/clientset"
	"github.com/meshtriage/meshtriage/probes/mesh"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	istioscheme "istio.io/client-go/pkg/clientset/versioned/scheme"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeCluster is the Cluster that probe tests read through: Kubernetes and
// Istio objects come from fake clientsets behind the real objects.Reader (so
// the tests exercise the same read semantics as a live cluster), and the
// non-object reads are served from maps. Absent map entries return
// ErrNotFound, as a scenario without recorded data does.
type fakeCluster struct {
	clientset.Reader
	kube  *kubefake.Clientset
	istio *istiofake.Clientset

	info cluster.ClusterInfo
	// envoy is keyed by envoyKey(pod, path).
	envoy map[string][]byte
	// logs is keyed by logKey(pod, container); Previous reads use
	// logKey(pod, container+":previous").
	logs map[string][]byte
	// istiod is keyed by path, or by "REPLICA:PATH" for one replica's own
	// answer.
	istiod map[string][]byte
	// istiodAsked lists the replicas Istiod was called for, in order.
	istiodAsked []string
	// errs makes a non-object read fail: keyed like the map it shadows, with
	// "envoy:", "logs:" or "istiod:" in front.
	errs map[string]error
	// lastLogOptions records the options of the most recent Logs call.
	lastLogOptions cluster.LogOptions
	// mu guards what the reads record: a Cluster is read concurrently,
	// and probes read several logs at once.
	mu sync.Mutex
}

var _ cluster.Cluster = (*fakeCluster)(nil)

// newFakeCluster sorts objs into the Kubernetes and Istio fake clientsets by
// whether the Istio scheme knows their type.
func newFakeCluster(t testing.TB, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	var kubeObjs, istioObjs []runtime.Object
	for _, o := range objs {
		if isIstioObject(o) {
			istioObjs = append(istioObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	kube := kubefake.NewSimpleClientset(kubeObjs...)
	istio := istiofake.NewSimpleClientset(istioObjs...)
	for _, o := range istioObjs {
		// The tracker files a Gateway under the resource "gatewaies" (an
		// English plural guess), where no list finds it.
		if gw, ok := o.(*networkingv1.Gateway); ok {
			if err := istio.Tracker().Create(networkingv1.SchemeGroupVersion.WithResource("gateways"), gw.DeepCopy(), gw.Namespace); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &fakeCluster{
		Reader: clientset.Reader{Kube: kube, Istio: istio},
		kube:   kube,
		istio:  istio,
		info:   cluster.ClusterInfo{Context: "fake", Server: "https://fake", ControlPlaneNamespace: cluster.DefaultControlPlane},
		envoy:  map[string][]byte{},
		logs:   map[string][]byte{},
		istiod: map[string][]byte{},
		errs:   map[string]error{},
	}
}

func isIstioObject(o runtime.Object) bool {
	_, _, err := istioscheme.Scheme.ObjectKinds(o)
	return err == nil
}

func envoyKey(pod cluster.PodRef, path string) string    { return pod.String() + " " + path }
func logKey(pod cluster.PodRef, container string) string { return pod.String() + "/" + container }
func (f *fakeCluster) Info() cluster.ClusterInfo         { return f.info }
func (f *fakeCluster) setServerVersion(git string) {
	f.discovery().FakedServerVersion = &version.Info{GitVersion: git}
}
func (f *fakeCluster) discovery() *fakediscovery.FakeDiscovery {
	return f.kube.Discovery().(*fakediscovery.FakeDiscovery)
}

func (f *fakeCluster) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := envoyKey(pod, path)
	if err := f.errs["envoy:"+k]; err != nil {
		return nil, err
	}
	if b, ok := f.envoy[k]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("envoy admin %s of %s: %w", path, pod, cluster.ErrNotFound)
}

func (f *fakeCluster) Logs(ctx context.Context, pod cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.lastLogOptions = opts
	f.mu.Unlock()
	container := opts.Container
	if opts.Previous {
		container += ":previous"
	}
	k := logKey(pod, container)
	if err := f.errs["logs:"+k]; err != nil {
		return nil, err
	}
	b, ok := f.logs[k]
	if !ok {
		return nil, fmt.Errorf("logs of %s: %w", k, cluster.ErrNotFound)
	}
	limit := opts.LimitBytes
	if limit == 0 {
		limit = cluster.DefaultLogLimit
	}
	if int64(len(b)) > limit {
		b = b[:limit]
	}
	return b, nil
}

func (f *fakeCluster) Istiod(ctx context.Context, replica, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	if path == "/debug/syncz" {
		f.istiodAsked = append(f.istiodAsked, replica)
	}
	f.mu.Unlock()
	// A replica's own answer or error ("REPLICA:PATH") wins over the one
	// every replica gives (PATH).
	if replica != "" {
		if err := f.errs["istiod:"+replica+":"+path]; err != nil {
			return nil, err
		}
		if b, ok := f.istiod[replica+":"+path]; ok {
			return b, nil
		}
	}
	if err := f.errs["istiod:"+path]; err != nil {
		return nil, err
	}
	if b, ok := f.istiod[path]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("istiod %s: %w", path, cluster.ErrNotFound)
}

// forbid makes verb on resource (plural, e.g. "pods", "destinationrules")
// fail as RBAC would, in every namespace of both clientsets.
func (f *fakeCluster) forbid(verb, resource string) { f.forbidIn(verb, resource, "") }

// forbidIn is forbid limited to namespace ns ("" for all).
func (f *fakeCluster) forbidIn(verb, resource, ns string) {
	react := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if ns != "" && a.GetNamespace() != ns {
			return false, nil, nil
		}
		gr := schema.GroupResource{Group: a.GetResource().Group, Resource: resource}
		return true, nil, apierrors.NewForbidden(gr, "", fmt.Errorf("User \"oncall\" cannot %s resource %q in API group %q in the namespace %q", verb, resource, gr.Group, a.GetNamespace()))
	}
	f.kube.PrependReactor(verb, resource, react)
	f.istio.PrependReactor(verb, resource, react)
}

// forbidAllNamespaces refuses verb on resource across all namespaces
// only, as the namespaced Role does: a list in a namespace still works.
func (f *fakeCluster) forbidAllNamespaces(verb, resource string) {
	react := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != "" {
			return false, nil, nil
		}
		gr := schema.GroupResource{Group: a.GetResource().Group, Resource: resource}
		return true, nil, apierrors.NewForbidden(gr, "", fmt.Errorf("User \"oncall\" cannot %s resource %q in API group %q at the cluster scope", verb, resource, gr.Group))
	}
	f.kube.PrependReactor(verb, resource, react)
	f.istio.PrependReactor(verb, resource, react)
}

// withoutKind makes reads of resource fail as an API server without that
// CRD installed answers: NotFound with no object name.
func (f *fakeCluster) withoutKind(resource string) {
	react := func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: a.GetResource().Group, Resource: resource}, "")
	}
	f.kube.PrependReactor("*", resource, react)
	f.istio.PrependReactor("*", resource, react)
}

// The fake must answer the way objects.Reader sees a live API server, or the
// I/O tests of every probe would prove nothing.
func TestFakeClusterServesObjectsAndFailures(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Labels: map[string]string{"app": "web"}}}
	dr := &networkingv1.DestinationRule{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"}}
	f := newFakeCluster(t, pod, dr)
	f.setServerVersion("v1.31.2")

	if pods, err := f.ListPods(ctx, "shop", map[string]string{"app": "web"}); err != nil || len(pods) != 1 {
		t.Fatalf("ListPods = %v, %v", pods, err)
	}
	if drs, err := f.DestinationRules(ctx, "shop"); err != nil || len(drs) != 1 {
		t.Fatalf("DestinationRules = %v, %v", drs, err)
	}
	if v, err := f.ServerVersion(ctx); err != nil || v != "v1.31.2" {
		t.Fatalf("ServerVersion = %q, %v", v, err)
	}
	ref := cluster.PodRef{Namespace: "shop", Name: "web-1"}
	if _, err := f.EnvoyAdmin(ctx, ref, "/clusters"); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("absent envoy data: %v", err)
	}
	f.logs[logKey(ref, mesh.ProxyContainer)] = []byte("0123456789")
	if b, err := f.Logs(ctx, ref, cluster.LogOptions{Container: mesh.ProxyContainer, LimitBytes: 4}); err != nil || string(b) != "0123" {
		t.Fatalf("Logs = %q, %v", b, err)
	}

	f.forbid("list", "pods")
	_, err := f.ListPods(ctx, "shop", map[string]string{"app": "web"})
	if !cluster.IsForbidden(err) || !strings.Contains(cluster.AccessProblem("list pods in shop", err), `User "oncall" cannot list`) {
		t.Fatalf("forbidden: %v / %s", err, cluster.AccessProblem("list pods in shop", err))
	}
	f.withoutKind("destinationrules")
	_, err = f.DestinationRules(ctx, "shop")
	if !strings.Contains(cluster.AccessProblem("list DestinationRules", err), "CRDs not installed") {
		t.Fatalf("missing kind: %s", cluster.AccessProblem("list DestinationRules", err))
	}
}
