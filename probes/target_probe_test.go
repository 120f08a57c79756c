package probes

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"istio.io/api/annotation"
	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Fixtures shared by this engineer's probe tests (fx prefix: other tests in
// package probes have their own).

func fxNamespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// fxService is svc/orders -n shop selecting app=orders, port 80 -> targetPort.
func fxService(targetPort intstr.IntOrString) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: "10.96.0.20",
			Selector:  map[string]string{"app": "orders"},
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: targetPort, Protocol: corev1.ProtocolTCP}},
		},
	}
}

// fxPod is a ready orders pod; sidecar picks none, classic or native.
func fxPod(name string, sidecar mesh.SidecarKind, mutate ...func(*corev1.Pod)) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "orders", "version": "v1"}},
		Spec: corev1.PodSpec{
			NodeName: "node-a",
			Containers: []corev1.Container{{
				Name:  "app",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIP:      "10.0.0.11",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
	switch sidecar {
	case mesh.SidecarClassic:
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: mesh.ProxyContainer,
			Ports: []corev1.ContainerPort{{Name: "http-envoy-prom", ContainerPort: 15090}}})
	case mesh.SidecarNative:
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: mesh.ProxyContainer, RestartPolicy: &always})
	}
	for _, m := range mutate {
		m(pod)
	}
	return pod
}

func fxObjects(objs ...runtime.Object) []runtime.Object { return objs }

func mustFacts(t *testing.T, p Probe, r Result) {
	t.Helper()
	if err := CheckFacts(p.Meta(), r); err != nil {
		t.Fatal(err)
	}
}

// mustAllFacts checks that a successful result carries every declared fact,
// so runbook conditions never meet an unknown on the happy path.
func mustAllFacts(t *testing.T, p Probe, r Result) {
	t.Helper()
	mustFacts(t, p, r)
	for _, f := range p.Meta().Facts {
		if _, ok := r.Facts[f.Name]; !ok {
			t.Errorf("fact %s missing from %s result %q", f.Name, p.Meta().ID, r.Summary)
		}
	}
}

func TestTargetEvaluate(t *testing.T) {
	orders := cluster.Target{Namespace: "shop", Service: "orders"}
	from := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	enabled := fxNamespace("shop", map[string]string{mesh.NamespaceInjectionName: "enabled"})
	cases := []struct {
		name      string
		target    cluster.Target
		in        targetInput
		status    Status
		summary   string
		facts     Facts
		allFacts  bool
		injection []string // evidence injection column per pod
	}{
		{
			name:   "healthy meshed service",
			target: orders,
			in: targetInput{NamespaceFound: true, Namespace: enabled, Service: fxService(intstr.FromInt32(8080)),
				Pods: []corev1.Pod{*fxPod("orders-b", mesh.SidecarNative), *fxPod("orders-a", mesh.SidecarClassic)}},
			status:   StatusPass,
			summary:  "svc/orders: 2 pods selected, 2 with sidecar",
			allFacts: true,
			facts: Facts{"target_service_found": true, "target_selector_empty": false, "target_pods_selected": 2,
				"target_pods_with_sidecar": 2, "target_pods_without_sidecar": 0, "target_namespace_injection": "enabled",
				"target_ports": []string{"80/8080/TCP"}, "target_port_found": true,
				"target_source_found": false, "target_source_has_sidecar": false},
			injection: []string{"on (namespace enabled)", "on (namespace enabled)"},
		},
		{
			name:   "namespace absent",
			target: orders,
			in:     targetInput{},
			status: StatusFail, summary: "namespace shop not found",
			facts: Facts{"target_service_found": false, "target_pods_selected": 0},
		},
		{
			name:   "service absent",
			target: orders,
			in:     targetInput{NamespaceFound: true, Namespace: enabled},
			status: StatusFail, summary: "service orders not found in namespace shop",
			facts: Facts{"target_service_found": false, "target_pods_selected": 0},
		},
		{
			name:   "selector matches nothing, unknown port, revision namespace",
			target: cluster.Target{Namespace: "shop", Service: "orders", Port: 8080},
			in: targetInput{NamespaceFound: true, Namespace: fxNamespace("shop", map[string]string{label.IoIstioRev.Name: "canary"}),
				Service: fxService(intstr.IntOrString{})},
			status:   StatusFail,
			summary:  "svc/orders: 0 pods selected, 0 with sidecar; selector app=orders matches no pods; service has no port 8080 (ports 80/80/TCP)",
			allFacts: true,
			facts: Facts{"target_pods_selected": 0, "target_namespace_injection": "revision=canary",
				"target_ports": []string{"80/80/TCP"}, "target_port_found": false},
		},
		{
			// A dump of some pods: the Service has endpoints, so its
			// selector did match pods when they were written. That used to
			// be service.no-selector-match at high confidence.
			name:   "selector matches no pod of the input, yet the Service has endpoints",
			target: cluster.Target{Namespace: "shop", Service: "orders"},
			in: targetInput{NamespaceFound: true, Namespace: fxNamespace("shop", nil),
				Service: fxService(intstr.IntOrString{}), Endpoints: 2},
			status:  StatusWarn,
			summary: "svc/orders: 0 pods selected, 0 with sidecar; selector app=orders matches no pod in the input, yet the Service has 2 endpoints: the input may not hold its pods",
			facts:   Facts{"target_pods_selected": 0, "target_endpoints": 2},
		},
		{
			name:   "pod without sidecar, source without sidecar",
			target: from,
			in: targetInput{NamespaceFound: true, Namespace: fxNamespace("shop", nil), Service: fxService(intstr.FromString("http")),
				Pods: []corev1.Pod{
					*fxPod("orders-a", mesh.SidecarNone, func(p *corev1.Pod) { p.Labels[label.SidecarInject.Name] = "false" }),
					*fxPod("orders-b", mesh.SidecarNone, func(p *corev1.Pod) { p.Annotations = map[string]string{annotation.SidecarInject.Name: "true"} }),
					*fxPod("orders-c", mesh.SidecarClassic, func(p *corev1.Pod) { p.Labels[label.SidecarInject.Name] = "true" }),
				},
				Source: fxPod("web-1", mesh.SidecarNone), SourceFound: true},
			status:   StatusWarn,
			allFacts: true,
			summary:  "svc/orders: 3 pods selected, 1 with sidecar; 2 of 3 pods without istio-proxy; source web/web-1 has no istio-proxy",
			facts: Facts{"target_pods_with_sidecar": 1, "target_pods_without_sidecar": 2, "target_namespace_injection": "none",
				"target_ports": []string{"80/http/TCP"}, "target_source_found": true, "target_source_has_sidecar": false},
			// The annotation alone cannot opt a pod in: the webhook only
			// sees pods of unlabelled namespaces through the label.
			injection: []string{"off (pod label sidecar.istio.io/inject=false)", "off (no injection label)", "on (pod label sidecar.istio.io/inject=true)"},
		},
		{
			name:   "source named but absent",
			target: from,
			in: targetInput{NamespaceFound: true, Namespace: enabled, Service: fxService(intstr.FromInt32(8080)),
				Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic)}},
			status:   StatusFail,
			allFacts: true,
			summary:  "svc/orders: 1 pod selected, 1 with sidecar; source pod web/web-1 not found",
			facts:    Facts{"target_source_found": false, "target_source_has_sidecar": false},
		},
		{
			name:   "namespace and source unreadable leave their facts unknown",
			target: from,
			in: targetInput{NamespaceFound: true, NamespaceProblem: "forbidden: cannot get namespace shop (RBAC: x)",
				Service: fxService(intstr.FromInt32(8080)), Pods: []corev1.Pod{*fxPod("orders-a", mesh.SidecarClassic)},
				SourceProblem: "forbidden: cannot get pod web/web-1 (RBAC: y)"},
			status:  StatusWarn,
			summary: "svc/orders: 1 pod selected, 1 with sidecar; forbidden: cannot get pod web/web-1 (RBAC: y); forbidden: cannot get namespace shop (RBAC: x)",
			facts:   Facts{"target_pods_selected": 1},
		},
		{
			name:   "selectorless service",
			target: orders,
			in: targetInput{NamespaceFound: true, Namespace: fxNamespace("shop", map[string]string{mesh.NamespaceInjectionName: "disabled"}),
				Service: func() *corev1.Service { s := fxService(intstr.FromInt32(8080)); s.Spec.Selector = nil; return s }()},
			status:   StatusWarn,
			allFacts: true,
			summary:  "svc/orders: 0 pods selected, 0 with sidecar; service has no selector: its endpoints are managed by hand",
			facts:    Facts{"target_selector_empty": true, "target_namespace_injection": "disabled"},
		},
		{
			name:   "ExternalName service",
			target: orders,
			in: targetInput{NamespaceFound: true, Namespace: enabled, Service: func() *corev1.Service {
				s := fxService(intstr.FromInt32(8080))
				s.Spec.Type, s.Spec.ExternalName, s.Spec.Selector = corev1.ServiceTypeExternalName, "orders.legacy.example.com", nil
				return s
			}()},
			status:   StatusWarn,
			allFacts: true,
			summary:  "svc/orders: 0 pods selected, 0 with sidecar; ExternalName service (DNS alias of orders.legacy.example.com): no pods or endpoints behind it",
			facts:    Facts{"target_selector_empty": true, "target_pods_selected": 0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluateTarget(tc.target, tc.in)
			if tc.allFacts {
				mustAllFacts(t, TargetProbe{}, r)
			} else {
				mustFacts(t, TargetProbe{}, r)
			}
			if r.Status != tc.status || r.Summary != tc.summary {
				t.Errorf("got %s %q, want %s %q", r.Status, r.Summary, tc.status, tc.summary)
			}
			for k, want := range tc.facts {
				if got := r.Facts[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("fact %s = %#v, want %#v", k, got, want)
				}
			}
			if tc.name == "namespace and source unreadable leave their facts unknown" {
				for _, k := range []string{"target_namespace_injection", "target_source_found", "target_source_has_sidecar"} {
					if _, ok := r.Facts[k]; ok {
						t.Errorf("fact %s emitted though it could not be read", k)
					}
				}
			}
			if tc.injection != nil {
				var got []string
				for _, row := range r.Evidence.Rows {
					got = append(got, row[len(row)-1])
				}
				if !reflect.DeepEqual(got, tc.injection) {
					t.Errorf("injection column %q, want %q", got, tc.injection)
				}
			}
		})
	}
}

func TestTargetProbeThroughClusterReads(t *testing.T) {
	ctx := context.Background()
	base := func() []runtime.Object {
		return fxObjects(
			fxNamespace("shop", map[string]string{mesh.NamespaceInjectionName: "enabled"}),
			fxNamespace("web", nil),
			fxService(intstr.FromInt32(8080)),
			fxPod("orders-a", mesh.SidecarClassic),
			fxPod("orders-other", mesh.SidecarClassic, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "payments"} }),
			fxPod("web-1", mesh.SidecarNative, func(p *corev1.Pod) { p.Namespace = "web"; p.Labels = map[string]string{"app": "web"} }),
		)
	}
	target := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}

	t.Run("reads service, selected pods and source", func(t *testing.T) {
		r := Run(ctx, TargetProbe{}, newFakeCluster(t, base()...), target)
		mustAllFacts(t, TargetProbe{}, r)
		if r.Status != StatusPass || r.Facts["target_pods_selected"] != 1 || r.Facts["target_source_has_sidecar"] != true {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
		if !strings.Contains(strings.Join(r.Commands, "\n"), "kubectl get pods -n shop -l app=orders -o wide") {
			t.Errorf("commands %q", r.Commands)
		}
	})
	t.Run("namespace absent", func(t *testing.T) {
		r := Run(ctx, TargetProbe{}, newFakeCluster(t), target)
		mustFacts(t, TargetProbe{}, r)
		if r.Status != StatusFail || r.Summary != "namespace shop not found" || r.Facts["target_service_found"] != false {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("service absent", func(t *testing.T) {
		r := Run(ctx, TargetProbe{}, newFakeCluster(t, fxNamespace("shop", nil)), target)
		if r.Status != StatusFail || r.Summary != "service orders not found in namespace shop" {
			t.Fatalf("%s %q", r.Status, r.Summary)
		}
	})
	t.Run("listing pods forbidden", func(t *testing.T) {
		f := newFakeCluster(t, base()...)
		f.forbid("list", "pods")
		r := Run(ctx, TargetProbe{}, f, target)
		if r.Status != StatusError || len(r.Facts) != 0 || !strings.Contains(r.Summary, "forbidden: cannot list pods in shop matching app=orders") {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
		if len(r.Commands) == 0 {
			t.Error("an error result still tells the on-call what to run")
		}
	})
	t.Run("namespace and source get forbidden", func(t *testing.T) {
		f := newFakeCluster(t, base()...)
		f.forbid("get", "namespaces")
		f.forbid("get", "pods")
		r := Run(ctx, TargetProbe{}, f, target)
		mustFacts(t, TargetProbe{}, r)
		if r.Status != StatusWarn || r.Facts["target_pods_selected"] != 1 {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
		if _, ok := r.Facts["target_source_found"]; ok {
			t.Error("unreadable source reported as a fact")
		}
	})
}

// With other clusters given, the Service's endpoints there are counted: a
// selector that matches no pod here is then a warning, not the problem
// "matches no pods", while they hold some; one not read leaves the count
// unknown.
func TestTargetCountsTheOtherClustersEndpoints(t *testing.T) {
	const shop = "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}"
	target := cluster.Target{Namespace: "shop", Service: "orders"}
	local := recordedDocs(t, shop, mcServiceDoc).(*recorded.Cluster)
	remote := recordedDocs(t, shop, mcServiceDoc, mcSliceDoc("10.2.0.5", "orders-b"))

	r := TargetProbe{}.Run(context.Background(), withRemotes{Cluster: local, remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}}, target)
	if r.Facts["target_remotes_given"] != true || r.Facts["target_remote_endpoints"] != 1 || r.Facts["target_pods_selected"] != 0 || r.Status != StatusWarn {
		t.Fatalf("pods in ctx2: %s %s %v", r.Status, r.Summary, r.Facts)
	}

	r = TargetProbe{}.Run(context.Background(), withRemotes{Cluster: local, remotes: []cluster.Remote{{Context: "ctx2", Cluster: slicesRefused{remote}}}}, target)
	if _, set := r.Facts["target_remote_endpoints"]; set || r.Facts["target_remotes_given"] != true || r.Status != StatusWarn || !strings.Contains(r.Summary, "ctx2: ") {
		t.Fatalf("ctx2 refused: %s %s %v", r.Status, r.Summary, r.Facts)
	}

	// One cluster: none given, 0 there, and no pod is the problem.
	r = TargetProbe{}.Run(context.Background(), local, target)
	if r.Facts["target_remotes_given"] != false || r.Facts["target_remote_endpoints"] != 0 || r.Status != StatusFail {
		t.Fatalf("one cluster: %s %s %v", r.Status, r.Summary, r.Facts)
	}
}

// slicesRefused refuses the EndpointSlices.
type slicesRefused struct{ cluster.Cluster }

func (slicesRefused) EndpointSlices(context.Context, string, string) ([]discoveryv1.EndpointSlice, error) {
	return nil, errors.New("endpointslices.discovery.k8s.io is forbidden")
}
