package probes

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func fxEndpoint(pod, ip string, ready, terminating *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{ip},
		Conditions: discoveryv1.EndpointConditions{Ready: ready, Terminating: terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: pod},
		NodeName:   ptr.To("node-a"),
	}
}

func fxSlice(name string, family discoveryv1.AddressType, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
	return discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{
			discoveryv1.LabelServiceName: "orders",
			discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
		}},
		AddressType: family,
		Endpoints:   eps,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}
}

// fxUnready makes the app container fail its readiness probe.
func fxUnready(p *corev1.Pod) {
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse,
		Reason: "ContainersNotReady", Message: "containers with unready status: [app]"}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: false,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

func fxEndpointsInput(svc *corev1.Service, slices []discoveryv1.EndpointSlice, pods ...*corev1.Pod) endpointsInput {
	in := endpointsInput{Service: svc, Slices: slices, Pods: map[string]*corev1.Pod{}, PodProblems: map[string]string{}}
	for _, p := range pods {
		in.Pods[p.Name] = p
		in.Selected = append(in.Selected, p.Name)
	}
	return in
}

func TestEndpointsEvaluate(t *testing.T) {
	orders := cluster.Target{Namespace: "shop", Service: "orders"}
	svc8080 := fxService(intstr.FromInt32(8080))
	yes, no := ptr.To(true), ptr.To(false)
	cases := []struct {
		name    string
		target  cluster.Target
		in      endpointsInput
		status  Status
		summary string
		facts   Facts
		raw     string // substring of Evidence.Raw
	}{
		{
			name:   "all ready, dual-stack counted once, nil ready means ready",
			target: orders,
			in: fxEndpointsInput(svc8080, []discoveryv1.EndpointSlice{
				fxSlice("orders-v4", discoveryv1.AddressTypeIPv4, fxEndpoint("orders-a", "10.0.0.11", yes, nil), fxEndpoint("orders-b", "10.0.0.12", nil, nil)),
				fxSlice("orders-v6", discoveryv1.AddressTypeIPv6, fxEndpoint("orders-a", "fd00::11", yes, nil), fxEndpoint("orders-b", "fd00::12", yes, nil)),
			}, fxPod("orders-a", mesh.SidecarClassic), fxPod("orders-b", mesh.SidecarClassic)),
			status: StatusPass, summary: "2 ready endpoints",
			facts: Facts{"endpoints_ready": 2, "endpoints_not_ready": 0, "endpoints_terminating": 0, "endpoints_source": "EndpointSlice",
				"endpoints_not_ready_pods": []string{}, "endpoints_port_mismatch": false, "endpoints_mismatched_ports": []string{}},
		},
		{
			name:   "readiness failing everywhere",
			target: orders,
			in: fxEndpointsInput(svc8080, []discoveryv1.EndpointSlice{
				fxSlice("orders-v4", discoveryv1.AddressTypeIPv4, fxEndpoint("orders-a", "10.0.0.11", no, no), fxEndpoint("orders-old", "10.0.0.9", no, yes)),
			}, fxPod("orders-a", mesh.SidecarClassic, fxUnready)),
			status:  StatusFail,
			summary: "no ready endpoint though 1 pod selected; 1 not ready; 1 terminating",
			facts: Facts{"endpoints_ready": 0, "endpoints_not_ready": 1, "endpoints_terminating": 1,
				"endpoints_not_ready_pods": []string{"orders-a: ContainersNotReady containers with unready status: [app]; container app running, readiness probe failing"}},
		},
		{
			name:   "crash looping sidecar on one of two",
			target: orders,
			in: fxEndpointsInput(svc8080, []discoveryv1.EndpointSlice{
				fxSlice("orders-v4", discoveryv1.AddressTypeIPv4, fxEndpoint("orders-a", "10.0.0.11", yes, no), fxEndpoint("orders-b", "10.0.0.12", no, no)),
			}, fxPod("orders-a", mesh.SidecarClassic), fxPod("orders-b", mesh.SidecarClassic, func(p *corev1.Pod) {
				p.Status.Conditions[0].Status, p.Status.Conditions[0].Reason = corev1.ConditionFalse, "ContainersNotReady"
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
					{Name: mesh.ProxyContainer, RestartCount: 4, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
				}
			})),
			status: StatusWarn, summary: "1 ready endpoint, 1 not ready",
			facts: Facts{"endpoints_not_ready_pods": []string{"orders-b: ContainersNotReady; container istio-proxy waiting: CrashLoopBackOff (4 restarts)"}},
		},
		{
			name:   "numeric targetPort the pods no longer declare",
			target: orders,
			in: fxEndpointsInput(svc8080, []discoveryv1.EndpointSlice{
				fxSlice("orders-v4", discoveryv1.AddressTypeIPv4, fxEndpoint("orders-a", "10.0.0.11", yes, no)),
			}, fxPod("orders-a", mesh.SidecarClassic, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8081 })),
			// The summary says what the pods declare: the value the fix needs.
			status: StatusFail, summary: "targetPort matches no containerPort: 80->8080 (the pods declare http=8081)",
			facts: Facts{"endpoints_port_mismatch": true, "endpoints_mismatched_ports": []string{"80->8080"},
				"endpoints_declared_ports": []string{"80->8080 (the pods declare http=8081)"}},
			raw: "port 80->8080 matches no containerPort on: orders-a (declares http=8081)",
		},
		{
			name:   "numeric targetPort with no declared ports is not proof",
			target: orders,
			in: fxEndpointsInput(svc8080, []discoveryv1.EndpointSlice{
				fxSlice("orders-v4", discoveryv1.AddressTypeIPv4, fxEndpoint("orders-a", "10.0.0.11", yes, no)),
			}, fxPod("orders-a", mesh.SidecarClassic, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })),
			status: StatusPass, summary: "1 ready endpoint",
			facts: Facts{"endpoints_port_mismatch": false},
			raw:   "orders-a declare no containerPort; Kubernetes forwards to the number anyway",
		},
		{
			name:   "named targetPort absent, the istio-proxy's names do not count for app",
			target: orders,
			in: fxEndpointsInput(fxService(intstr.FromString("grpc")), []discoveryv1.EndpointSlice{
				fxSlice("orders-v4", discoveryv1.AddressTypeIPv4, fxEndpoint("orders-a", "10.0.0.11", yes, no)),
			}, fxPod("orders-a", mesh.SidecarClassic)),
			status: StatusFail, summary: "targetPort matches no containerPort: 80->grpc (the pods declare http=8080,http-envoy-prom=15090)",
			facts: Facts{"endpoints_mismatched_ports": []string{"80->grpc"}},
			raw:   "orders-a (declares http=8080,http-envoy-prom=15090)",
		},
		{
			name:   "named targetPort present; only --port is checked",
			target: cluster.Target{Namespace: "shop", Service: "orders", Port: 80},
			in: fxEndpointsInput(func() *corev1.Service {
				s := fxService(intstr.FromString("http"))
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "admin", Port: 9000, TargetPort: intstr.FromInt32(9000)})
				return s
			}(), []discoveryv1.EndpointSlice{
				fxSlice("orders-v4", discoveryv1.AddressTypeIPv4, fxEndpoint("orders-a", "10.0.0.11", yes, no)),
			}, fxPod("orders-a", mesh.SidecarClassic)),
			status: StatusPass, summary: "1 ready endpoint",
			facts: Facts{"endpoints_port_mismatch": false, "endpoints_mismatched_ports": []string{}},
		},
		{
			name:   "core Endpoints fallback",
			target: orders,
			in: fxEndpointsInput(svc8080, func() []discoveryv1.EndpointSlice {
				s := fxSlice("orders-endpoints-0", discoveryv1.AddressTypeIPv4, fxEndpoint("orders-a", "10.0.0.11", yes, nil))
				s.Labels = map[string]string{discoveryv1.LabelServiceName: "orders"}
				return []discoveryv1.EndpointSlice{s}
			}(), fxPod("orders-a", mesh.SidecarClassic)),
			status: StatusPass, summary: "1 ready endpoint",
			facts: Facts{"endpoints_source": "Endpoints"},
		},
		{
			name:   "nothing at all",
			target: orders,
			in:     fxEndpointsInput(svc8080, nil),
			status: StatusFail, summary: "no ready endpoint",
			facts: Facts{"endpoints_source": "none", "endpoints_ready": 0, "endpoints_total": 0},
			raw:   "no selected pods: targetPort not checked",
		},
		{
			name:   "a selector-less Service nobody wrote endpoints for",
			target: orders,
			in: func() endpointsInput {
				svc := fxService(intstr.FromInt32(8080))
				svc.Spec.Selector = nil
				return fxEndpointsInput(svc, nil)
			}(),
			status: StatusFail, summary: "the Service has no selector and no endpoint at all: nobody wrote its EndpointSlices or Endpoints, so every caller gets 503 UH",
			facts: Facts{"endpoints_source": "none", "endpoints_total": 0},
		},
		{
			// It used to be service.no-endpoints ("no selector and no
			// endpoint at all"): an ExternalName Service has none by design.
			name:   "an ExternalName Service",
			target: orders,
			in: func() endpointsInput {
				svc := fxService(intstr.FromInt32(443))
				svc.Spec.Selector, svc.Spec.Type, svc.Spec.ExternalName = nil, corev1.ServiceTypeExternalName, "api.payments.example.com"
				return fxEndpointsInput(svc, nil)
			}(),
			status: StatusPass, summary: "ExternalName Service: a DNS alias of api.payments.example.com, no endpoints by design",
			facts: Facts{"endpoints_external_name": true, "endpoints_total": 0},
			raw:   "istiod builds no cluster for it",
		},
		{
			// kubectl get all leaves EndpointSlices out: the selected pods
			// stand in, as the controller would list them, instead of a
			// false "no ready endpoint".
			name:   "an input without EndpointSlices lists the selected pods",
			target: orders,
			in:     fxEndpointsInput(svc8080, nil, fxPod("orders-a", mesh.SidecarClassic), fxPod("orders-b", mesh.SidecarClassic, fxUnready)),
			status: StatusWarn, summary: "1 ready endpoint, 1 not ready",
			facts: Facts{"endpoints_source": "pods", "endpoints_ready": 1, "endpoints_not_ready": 1, "endpoints_total": 2},
			raw:   "its endpoints are its selected pods",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluateEndpoints(tc.target, tc.in)
			mustAllFacts(t, EndpointsProbe{}, r)
			if r.Status != tc.status || r.Summary != tc.summary {
				t.Errorf("got %s %q, want %s %q", r.Status, r.Summary, tc.status, tc.summary)
			}
			for k, want := range tc.facts {
				if got := r.Facts[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("fact %s = %#v, want %#v", k, got, want)
				}
			}
			if !strings.Contains(r.Evidence.Raw, tc.raw) {
				t.Errorf("raw evidence lacks %q:\n%s", tc.raw, r.Evidence.Raw)
			}
		})
	}
}

func TestEndpointsProbeThroughClusterReads(t *testing.T) {
	ctx := context.Background()
	orders := cluster.Target{Namespace: "shop", Service: "orders"}
	objs := func() []runtime.Object {
		slice := fxSlice("orders-abc", discoveryv1.AddressTypeIPv4,
			fxEndpoint("orders-a", "10.0.0.11", ptr.To(true), nil),
			// A pod the selector no longer matches is read by name.
			fxEndpoint("orders-stray", "10.0.0.13", ptr.To(false), nil))
		return fxObjects(fxService(intstr.FromInt32(8080)), &slice,
			fxPod("orders-a", mesh.SidecarClassic),
			fxPod("orders-stray", mesh.SidecarClassic, fxUnready, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "orders-debug"} }))
	}

	t.Run("slices and not-ready pod by targetRef", func(t *testing.T) {
		r := Run(ctx, EndpointsProbe{}, newFakeCluster(t, objs()...), orders)
		mustAllFacts(t, EndpointsProbe{}, r)
		want := []string{"orders-stray: ContainersNotReady containers with unready status: [app]; container app running, readiness probe failing"}
		if r.Status != StatusWarn || !reflect.DeepEqual(r.Facts["endpoints_not_ready_pods"], want) {
			t.Fatalf("%s %q %#v", r.Status, r.Summary, r.Facts)
		}
		if !strings.Contains(strings.Join(r.Commands, "\n"), "kubectl describe pod -n shop orders-stray") {
			t.Errorf("commands %q", r.Commands)
		}
	})
	t.Run("core Endpoints only", func(t *testing.T) {
		//nolint:staticcheck // the fallback under test
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
			Subsets: []corev1.EndpointSubset{{
				Addresses:         []corev1.EndpointAddress{{IP: "10.0.0.11", TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "orders-a", Namespace: "shop"}}},
				NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.12", TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "orders-gone", Namespace: "shop"}}},
				Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080}},
			}}}
		r := Run(ctx, EndpointsProbe{}, newFakeCluster(t, fxService(intstr.FromInt32(8080)), ep, fxPod("orders-a", mesh.SidecarClassic)), orders)
		mustAllFacts(t, EndpointsProbe{}, r)
		if r.Facts["endpoints_source"] != "Endpoints" || r.Facts["endpoints_ready"] != 1 ||
			!reflect.DeepEqual(r.Facts["endpoints_not_ready_pods"], []string{"orders-gone: pod gone"}) {
			t.Fatalf("%s %q %#v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("service absent", func(t *testing.T) {
		r := Run(ctx, EndpointsProbe{}, newFakeCluster(t), orders)
		if r.Status != StatusError || len(r.Facts) != 0 || r.Summary != "cannot get service shop/orders: not found" {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
	})
	t.Run("slices and endpoints forbidden", func(t *testing.T) {
		f := newFakeCluster(t, objs()...)
		f.forbid("list", "endpointslices")
		f.forbid("get", "endpoints")
		r := Run(ctx, EndpointsProbe{}, f, orders)
		if r.Status != StatusError || len(r.Facts) != 0 || !strings.Contains(r.Summary, "forbidden: cannot list endpointslices of shop/orders") {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
		}
		if len(r.Commands) == 0 {
			t.Error("no commands on error")
		}
	})
	t.Run("not-ready pod unreadable", func(t *testing.T) {
		f := newFakeCluster(t, objs()...)
		f.forbid("get", "pods")
		r := Run(ctx, EndpointsProbe{}, f, orders)
		mustAllFacts(t, EndpointsProbe{}, r)
		got := r.Facts["endpoints_not_ready_pods"].([]string)
		if len(got) != 1 || !strings.HasPrefix(got[0], "orders-stray: forbidden: cannot get pod shop/orders-stray") {
			t.Fatalf("%#v", got)
		}
	})
}

// `kubectl get all` leaves EndpointSlices and Endpoints out: in such an
// input a Service without selector has endpoints nobody can see, not
// none. It used to be service.no-endpoints at high confidence; its
// endpoint counts are now unknown, so the rules on them stay undecided.
func TestEndpointsOfAnInputWithoutSlicesAreUnknown(t *testing.T) {
	svc := fxService(intstr.FromInt32(8080))
	svc.Spec.Selector = nil
	in := fxEndpointsInput(svc, nil)
	in.InputLacksEndpoints = true
	r := evaluateEndpoints(cluster.Target{Namespace: "shop", Service: "orders"}, in)
	mustFacts(t, EndpointsProbe{}, r)
	if _, ok := r.Facts["endpoints_total"]; ok || r.Status != StatusWarn || !strings.Contains(r.Summary, "its endpoints are unknown") {
		t.Errorf("%s %q %#v", r.Status, r.Summary, r.Facts)
	}
	// A source that holds slices (a live cluster, a recording with them)
	// answers for itself: none is none.
	in.InputLacksEndpoints = false
	if r := evaluateEndpoints(cluster.Target{Namespace: "shop", Service: "orders"}, in); r.Facts["endpoints_total"] != 0 || r.Status != StatusFail {
		t.Errorf("%s %q %#v", r.Status, r.Summary, r.Facts)
	}
}

// A hand-written input without EndpointSlices, whose pods carry no status
// conditions: the selected pods stand in for the endpoints, and their
// readiness is unknown, not "not ready" (which was endpoints.none-ready at
// high confidence).
func TestEndpointsOfPodsWithoutReadyConditionAreUnknown(t *testing.T) {
	noStatus := func(p *corev1.Pod) { p.Status.Conditions = nil }
	in := fxEndpointsInput(fxService(intstr.FromInt32(8080)), nil, fxPod("orders-a", mesh.SidecarClassic, noStatus))
	r := evaluateEndpoints(cluster.Target{Namespace: "shop", Service: "orders"}, in)
	mustFacts(t, EndpointsProbe{}, r)
	_, readyKnown := r.Facts["endpoints_ready"]
	_, notReadyKnown := r.Facts["endpoints_not_ready"]
	if readyKnown || notReadyKnown || r.Facts["endpoints_total"] != 1 || r.Status != StatusWarn {
		t.Errorf("%s %q %#v", r.Status, r.Summary, r.Facts)
	}
}
