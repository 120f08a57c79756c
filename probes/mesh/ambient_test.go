package mesh_test

import (
	"strings"
	"testing"

	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func ambientPod(ns, name string, labels, annotations map[string]string, sidecar bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	if sidecar {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "istio-proxy"})
	}
	return p
}

var enrolled = map[string]string{"ambient.istio.io/redirection": "enabled"}

func TestDataPlaneOf(t *testing.T) {
	ambientNS := namespace("shop", map[string]string{"istio.io/dataplane-mode": "ambient"})
	plainNS := namespace("shop", nil)
	cases := []struct {
		name        string
		pod         *corev1.Pod
		ns          *corev1.Namespace
		mode        string
		wanted      bool
		notEnrolled bool
		optedOut    bool
	}{
		{"namespace label, enrolled", ambientPod("shop", "a", nil, enrolled, false), ambientNS, mesh.DataPlaneAmbient, true, false, false},
		{"namespace label, not enrolled", ambientPod("shop", "a", nil, nil, false), ambientNS, mesh.DataPlaneAmbient, true, true, false},
		// Pending: captured, held until a ztunnel proxies it; not "not enrolled".
		{"namespace label, pending", ambientPod("shop", "a", nil, map[string]string{"ambient.istio.io/redirection": "pending"}, false), ambientNS, mesh.DataPlaneAmbient, true, false, false},
		{"pod opts out of an ambient namespace", ambientPod("shop", "a", map[string]string{"istio.io/dataplane-mode": "none"}, nil, false), ambientNS, mesh.DataPlaneNone, false, false, true},
		{"pod label in a plain namespace", ambientPod("shop", "a", map[string]string{"istio.io/dataplane-mode": "ambient"}, enrolled, false), plainNS, mesh.DataPlaneAmbient, true, false, false},
		{"a value other than none does not opt out", ambientPod("shop", "a", map[string]string{"istio.io/dataplane-mode": "sidecar"}, enrolled, false), ambientNS, mesh.DataPlaneAmbient, true, false, false},
		{"sidecar pods are never enrolled", ambientPod("shop", "a", nil, nil, true), ambientNS, mesh.DataPlaneSidecar, false, false, false},
		{"plain namespace, plain pod", ambientPod("shop", "a", nil, nil, false), plainNS, mesh.DataPlaneNone, false, false, false},
		{"namespace unreadable, annotation says enrolled", ambientPod("shop", "a", nil, enrolled, false), nil, mesh.DataPlaneAmbient, false, false, false},
		{"namespace unreadable, nothing on the pod", ambientPod("shop", "a", nil, nil, false), nil, mesh.DataPlaneNone, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := mesh.DataPlaneOf(tc.pod, tc.ns)
			if d.Mode != tc.mode || d.AmbientWanted != tc.wanted || d.NotEnrolled() != tc.notEnrolled || d.OptedOut != tc.optedOut {
				t.Errorf("DataPlaneOf = mode %s wanted %v notEnrolled %v optedOut %v (%s), want %s %v %v %v",
					d.Mode, d.AmbientWanted, d.NotEnrolled(), d.OptedOut, d, tc.mode, tc.wanted, tc.notEnrolled, tc.optedOut)
			}
		})
	}
	host := ambientPod("shop", "h", nil, nil, false)
	host.Spec.HostNetwork = true
	if d := mesh.DataPlaneOf(host, ambientNS); d.Mode != mesh.DataPlaneNone || d.AmbientWanted {
		t.Errorf("a host-network pod in an ambient namespace is %s, want none: the CNI cannot capture it", d)
	}
}

// A pod the CNI marked ambient.istio.io/redirection=pending is captured
// and waits for ztunnel on its node: Istio holds its traffic ("will not
// egress/ingress traffic until an active ztunnel begins proxying it"). It
// is not a pod the CNI left out, whose traffic goes around ztunnel in
// plaintext: the triage must not say so, nor send the reader to restart
// it.
func TestPendingPodIsHeldNotUnenrolled(t *testing.T) {
	pending := map[string]string{"ambient.istio.io/redirection": "pending"}
	ambientNS := namespace("shop", map[string]string{"istio.io/dataplane-mode": "ambient"})
	for name, ns := range map[string]*corev1.Namespace{"namespace read": ambientNS, "namespace unreadable": nil} {
		d := mesh.DataPlaneOf(ambientPod("shop", "a", nil, pending, false), ns)
		if !d.Pending() || d.NotEnrolled() || d.Enrolled() || d.Mode != mesh.DataPlaneAmbient {
			t.Errorf("%s: pending pod is %s (mode %s, pending %v, not enrolled %v), want ambient, pending, not 'not enrolled'", name, d, d.Mode, d.Pending(), d.NotEnrolled())
		}
		if s := d.String(); strings.Contains(s, "NOT enrolled") || !strings.Contains(s, "pending") {
			t.Errorf("%s: pending pod shown as %q", name, s)
		}
	}
	if d := mesh.DataPlaneOf(ambientPod("shop", "a", nil, enrolled, false), ambientNS); d.Pending() {
		t.Errorf("an enrolled pod is pending: %s", d)
	}
}

// A pending caller sends nothing until its node's ztunnel proxies it, and
// then HBONE: it is an ambient caller, never one that sends plaintext (which
// would make a STRICT upstream look like the cause).
func TestPendingCallerIsAmbient(t *testing.T) {
	pending := map[string]string{"ambient.istio.io/redirection": "pending"}
	if c := mesh.CallerFromPod(ambientPod("shop", "web-1", nil, pending, false)); !c.Ambient || c.Sidecar {
		t.Errorf("pending caller: ambient %v, sidecar %v", c.Ambient, c.Sidecar)
	}
}

// A waypoint's pod has an istio-proxy container, so PodSidecar (which
// many probes use for "has an Envoy") calls it classic; as a data plane it
// is a waypoint, never a sidecar caller.
func TestWaypointPodIsNotASidecar(t *testing.T) {
	ambientNS := namespace("shop", map[string]string{"istio.io/dataplane-mode": "ambient"})
	labelled := ambientPod("shop", "orders-waypoint-5c8d-x7k2p", map[string]string{
		"gateway.networking.k8s.io/gateway-name": "orders-waypoint", "gateway.istio.io/managed": "istio.io-mesh-controller"}, nil, true)
	// A hand-made waypoint: no managed label, but its Envoy runs
	// `pilot-agent proxy waypoint`.
	byArgs := ambientPod("shop", "my-waypoint-0", nil, nil, false)
	byArgs.Spec.Containers = []corev1.Container{{Name: "istio-proxy", Args: []string{"proxy", "waypoint", "--domain", "shop.svc.cluster.local"}}}
	for _, p := range []*corev1.Pod{labelled, byArgs} {
		if mesh.PodSidecar(p) == mesh.SidecarNone {
			t.Fatalf("%s: PodSidecar must still see its istio-proxy", p.Name)
		}
		d := mesh.DataPlaneOf(p, ambientNS)
		if d.Mode == mesh.DataPlaneSidecar || d.Mode != "waypoint" || strings.Contains(d.String(), "sidecar (") {
			t.Errorf("%s: data plane %s (%s), want waypoint", p.Name, d.Mode, d)
		}
	}
	if d := mesh.DataPlaneOf(ambientPod("shop", "web", nil, nil, true), ambientNS); d.Mode != mesh.DataPlaneSidecar {
		t.Errorf("an app pod with an istio-proxy is %s, want sidecar", d.Mode)
	}
}

func service(ns, name string, labels map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func gateway(ns, name, class string, labels map[string]string, ready bool) *gatewayv1.Gateway {
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class),
			Listeners: []gatewayv1.Listener{{Name: "mesh", Port: 15008, Protocol: "HBONE"}}}}
	if ready {
		gw.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Value: "10.96.7.7"}}
		gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue}}
	} else {
		gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionFalse, Reason: "NoResources", Message: "deployment has 0 ready replicas"}}
	}
	return gw
}

// UseWaypoint follows istiod's precedence: the Service's own label, its
// "none", then the namespace's.
func TestBindServiceWaypoint(t *testing.T) {
	wp := map[string]string{"istio.io/use-waypoint": "wp"}
	nsWP := namespace("shop", wp)
	plain := namespace("shop", nil)
	ready := gateway("shop", "wp", "istio-waypoint", nil, true)
	other := gateway("shop", "other", "istio-waypoint", nil, true)
	cases := []struct {
		name     string
		svc      *corev1.Service
		ns       *corev1.Namespace
		gateways []*gatewayv1.Gateway
		known    bool
		state    string
		from     string
	}{
		{"no label anywhere", service("shop", "orders", nil), plain, nil, true, mesh.WaypointNone, ""},
		{"namespace label, waypoint ready", service("shop", "orders", nil), nsWP, []*gatewayv1.Gateway{ready}, true, mesh.WaypointBound, "namespace label"},
		{"service label beats the namespace's", service("shop", "orders", map[string]string{"istio.io/use-waypoint": "other"}), nsWP, []*gatewayv1.Gateway{ready, other}, true, mesh.WaypointBound, "service label"},
		{"service opts out of the namespace's waypoint", service("shop", "orders", map[string]string{"istio.io/use-waypoint": "none"}), nsWP, []*gatewayv1.Gateway{ready}, true, mesh.WaypointOptedOut, "service label"},
		{"named Gateway does not exist", service("shop", "orders", wp), plain, []*gatewayv1.Gateway{other}, true, mesh.WaypointMissing, "service label"},
		{"Gateway without a status address", service("shop", "orders", wp), plain, []*gatewayv1.Gateway{gateway("shop", "wp", "istio-waypoint", nil, false)}, true, mesh.WaypointNotReady, "service label"},
		{"waypoint-for workload", service("shop", "orders", wp), plain, []*gatewayv1.Gateway{gateway("shop", "wp", "istio-waypoint", map[string]string{"istio.io/waypoint-for": "workload"}, true)}, true, mesh.WaypointNotService, "service label"},
		{"waypoint-for none", service("shop", "orders", nil), nsWP, []*gatewayv1.Gateway{gateway("shop", "wp", "istio-waypoint", map[string]string{"istio.io/waypoint-for": "none"}, true)}, true, mesh.WaypointNotService, "namespace label"},
		{"waypoint-for all", service("shop", "orders", wp), plain, []*gatewayv1.Gateway{gateway("shop", "wp", "istio-waypoint", map[string]string{"istio.io/waypoint-for": "all"}, true)}, true, mesh.WaypointBound, "service label"},
		{"a custom class's default is not read", service("shop", "orders", wp), plain, []*gatewayv1.Gateway{gateway("shop", "wp", "my-waypoints", nil, true)}, true, mesh.WaypointUnknown, "service label"},
		{"Gateways unreadable", service("shop", "orders", wp), plain, nil, false, mesh.WaypointUnknown, "service label"},
		{"namespace unreadable, Service names none", service("shop", "orders", nil), nil, nil, true, mesh.WaypointUnknown, ""},
		{"a waypoint in another namespace admits Same by default", service("shop", "orders", map[string]string{"istio.io/use-waypoint": "shared", "istio.io/use-waypoint-namespace": "mesh"}), plain,
			[]*gatewayv1.Gateway{gateway("mesh", "shared", "istio-waypoint", nil, true)}, true, mesh.WaypointDenied, "service label"},
		{"a waypoint's own Service has none", service("shop", "wp", map[string]string{"gateway.istio.io/managed": "istio.io-mesh-controller"}), nsWP, []*gatewayv1.Gateway{ready}, true, mesh.WaypointNone, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mesh.BindServiceWaypoint(tc.svc, tc.ns, tc.gateways, tc.known)
			if b.State != tc.state || b.Use.From != tc.from {
				t.Errorf("state %s from %q (%s), want %s from %q", b.State, b.Use.From, b.Why, tc.state, tc.from)
			}
		})
	}
	// From namespace: a namespace "none" is no waypoint.
	if u := mesh.UseWaypoint(service("shop", "orders", nil).ObjectMeta, "service", namespace("shop", map[string]string{"istio.io/use-waypoint": "none"})); u.Named || u.OptedOut {
		t.Errorf("namespace use-waypoint=none: %+v, want no waypoint", u)
	}
	all := gateway("mesh", "shared", "istio-waypoint", nil, true)
	from := gatewayv1.NamespacesFromAll
	all.Spec.Listeners[0].AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}}
	svc := service("shop", "orders", map[string]string{"istio.io/use-waypoint": "shared", "istio.io/use-waypoint-namespace": "mesh"})
	if b := mesh.BindServiceWaypoint(svc, plain, []*gatewayv1.Gateway{all}, true); b.State != mesh.WaypointBound || b.Use.Ref.String() != "mesh/shared" {
		t.Errorf("cross-namespace waypoint admitting All: %s %s (%s)", b.State, b.Use.Ref, b.Why)
	}
}

func TestTraversesServiceWaypoint(t *testing.T) {
	svc, ns := service("shop", "orders", nil), namespace("shop", nil)
	for _, tc := range []struct {
		caller string
		svc    *corev1.Service
		want   bool
	}{
		{mesh.CallerAmbient, svc, true},
		{mesh.CallerSidecar, svc, false},
		{mesh.CallerNone, svc, false},
		{mesh.CallerGateway, svc, false},
		{mesh.CallerGateway, service("shop", "orders", map[string]string{"istio.io/ingress-use-waypoint": "true"}), true},
	} {
		if got, why := mesh.TraversesServiceWaypoint(tc.caller, tc.svc, ns); got != tc.want {
			t.Errorf("%s caller: traverses %v (%s), want %v", tc.caller, got, why, tc.want)
		}
	}
}

// An enrolled caller's view: HBONE to enrolled pods, plaintext to pods
// that accept none, and STRICT refuses only the plaintext.
func TestZtunnelView(t *testing.T) {
	ns := namespace("shop", map[string]string{"istio.io/dataplane-mode": "ambient"})
	orders1 := ambientPod("shop", "orders-1", map[string]string{"app": "orders"}, enrolled, false)
	orders1.Status.PodIP = "10.244.1.7"
	orders2 := ambientPod("shop", "orders-2", map[string]string{"app": "orders"}, nil, false)
	orders2.Status.PodIP = "10.244.2.7"
	svc := service("shop", "orders", nil)
	svc.Spec = corev1.ServiceSpec{Selector: map[string]string{"app": "orders"}, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}
	ready, name, port := true, "http", int32(8080)
	slice := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders-x", Labels: map[string]string{discoveryv1.LabelServiceName: "orders"}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}}}
	for _, p := range []*corev1.Pod{orders1, orders2} {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{p.Status.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: p.Name}})
	}
	strict := strictPA("shop")
	c := &mesh.Config{RootNamespace: "istio-system", Services: map[string]*mesh.ServiceData{
		"orders.shop.svc.cluster.local": {Service: svc, Slices: []discoveryv1.EndpointSlice{slice}, Pods: map[string]*corev1.Pod{"orders-1": orders1, "orders-2": orders2}},
	}, Namespaces: map[string]*corev1.Namespace{"shop": ns}, PeerAuthentications: strict}
	web := ambientPod("shop", "web", nil, enrolled, false)
	caller := mesh.CallerFromPod(web)
	if !caller.Ambient || caller.Sidecar {
		t.Fatalf("an enrolled pod without sidecar is caller %+v, want Ambient", caller)
	}
	v, err := c.ViewFor(caller, "orders.shop.svc.cluster.local", 8080)
	if err != nil {
		t.Fatal(err)
	}
	cl := v.Clusters[mesh.Ztunnel]
	if cl == nil || len(cl.Endpoints) != 2 {
		t.Fatalf("clusters %v, want the ztunnel route with 2 endpoints\n%s", v.Clusters, strings.Join(v.Chain(), "\n"))
	}
	got := map[string]string{}
	for _, e := range cl.Endpoints {
		got[e.Pod] = e.Sends + "/" + e.Mismatch
	}
	// orders-2 is not enrolled: ztunnel sends it plaintext and nothing on
	// its side enforces STRICT.
	if got["orders-1"] != "mtls/none" || got["orders-2"] != "plaintext/none" {
		t.Errorf("sends/mismatch = %v, want orders-1 mtls/none (enrolled), orders-2 plaintext/none (not enrolled)", got)
	}
	// A caller the CNI has not enrolled sends plaintext: ztunnel refuses it
	// at an enrolled pod under STRICT.
	unenrolled := mesh.CallerFromPod(ambientPod("shop", "web-2", nil, nil, false))
	v2, err := c.ViewFor(unenrolled, "orders.shop.svc.cluster.local", 8080)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range v2.Clusters[mesh.KubeProxy].Endpoints {
		if want := map[string]string{"orders-1": mesh.MismatchPlaintextStrict, "orders-2": mesh.MismatchNone}[e.Pod]; e.Mismatch != want {
			t.Errorf("unenrolled caller to %s: mismatch %s, want %s", e.Pod, e.Mismatch, want)
		}
	}

	// A sidecar caller tunnels HBONE to the enrolled pod under auto mTLS,
	// where it used to be judged mTLS to a pod without a sidecar.
	side := mesh.CallerFromPod(ambientPod("shop", "web-side", nil, nil, true))
	e := mesh.Endpoint{Pod: "orders-1", Ambient: true, HBONE: true}
	sends, _ := mesh.ClientTLS{Auto: true}.Sends(e, mesh.PeerMode{Mode: mesh.ModeStrict})
	if side.Ambient || sends != mesh.SendsMTLS || mesh.TLSMismatch(sends, e, mesh.PeerMode{Mode: mesh.ModeStrict}) != mesh.MismatchNone {
		t.Errorf("sidecar to an ambient pod: sends %s, mismatch %s; want mtls, none", sends, mesh.TLSMismatch(sends, e, mesh.PeerMode{Mode: mesh.ModeStrict}))
	}
	if m := mesh.TLSMismatch(mesh.SendsMTLS, mesh.Endpoint{Pod: "orders-2", Sidecar: mesh.SidecarNone}, mesh.PeerMode{Mode: mesh.ModePermissive}); m != mesh.MismatchMTLSNoSidecar {
		t.Errorf("mTLS to a pod with neither sidecar nor ztunnel: %s, want %s", m, mesh.MismatchMTLSNoSidecar)
	}
}

func strictPA(ns string) []*securityv1.PeerAuthentication {
	pa := &securityv1.PeerAuthentication{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "strict"}}
	pa.Spec.Mtls = &securityv1beta1.PeerAuthentication_MutualTLS{Mode: securityv1beta1.PeerAuthentication_MutualTLS_STRICT}
	return []*securityv1.PeerAuthentication{pa}
}

// istiod binds a Service to any Gateway with an address. One that is no
// waypoint class still works as one when its pods are enrolled in ambient
// (their ztunnel terminates the HBONE: the "gateway sandwich"), or when it
// is a waypoint of another implementation (kgateway's istio.io/PROXY
// listener): those are bound, not "connections fail".
func TestGatewayThatWorksAsAWaypoint(t *testing.T) {
	ns := namespace("shop", nil)
	svc := service("shop", "orders", map[string]string{"istio.io/use-waypoint": "edge"})
	plain := gateway("shop", "edge", "istio", nil, true)
	plain.Spec.Listeners = []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: "HTTP"}}
	b := mesh.BindServiceWaypoint(svc, ns, []*gatewayv1.Gateway{plain}, true)
	if b.State != mesh.WaypointNotAGW {
		t.Fatalf("an istio-class Gateway with an HTTP listener: %s (%s)", b.State, b.Why)
	}
	notEnrolled := *ambientPod("shop", "edge-1", nil, nil, true)
	if got := mesh.GatewaySandwich(b, []corev1.Pod{notEnrolled}); got.State != mesh.WaypointNotAGW {
		t.Errorf("gateway pods not enrolled: %s, want %s", got.State, mesh.WaypointNotAGW)
	}
	enrolled := *ambientPod("shop", "edge-1", nil, map[string]string{"ambient.istio.io/redirection": "enabled"}, true)
	if got := mesh.GatewaySandwich(b, []corev1.Pod{enrolled}); got.State != mesh.WaypointBound || !strings.Contains(got.Why, "sandwich") {
		t.Errorf("gateway pods enrolled in ambient: %s (%s), want bound", got.State, got.Why)
	}

	kgw := gateway("shop", "edge", "kgateway-waypoint", nil, true)
	kgw.Spec.Listeners = []gatewayv1.Listener{{Name: "proxy", Port: 15088, Protocol: mesh.ProxyProtocolListener}}
	if b := mesh.BindServiceWaypoint(svc, ns, []*gatewayv1.Gateway{kgw}, true); b.State == mesh.WaypointNotAGW {
		t.Errorf("a kgateway-waypoint Gateway: %s (%s), want a waypoint", b.State, b.Why)
	}
}

// waypoint-bindings.yaml, the lab's waypoint differential input: each
// Service's binding as the file says, which istiod's inbound-vip clusters
// for the waypoint then prove (TestWaypointAgainstIstiod).
func TestWaypointBindingsWorld(t *testing.T) {
	objs := meshtest.Objects(t, "testdata/model", "base.yaml", "waypoint-bindings.yaml")
	namespaces := map[string]*corev1.Namespace{}
	var gateways []*gatewayv1.Gateway
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			namespaces[o.Name] = o
		case *gatewayv1.Gateway:
			gateways = append(gateways, o)
		}
	}
	want := map[string]string{"shop/orders": mesh.WaypointBound, "shop/billing": mesh.WaypointOptedOut, "shop/cart": mesh.WaypointMissing,
		"shop/inventory": mesh.WaypointNotService, "web/search": mesh.WaypointDenied, "web/reviews": mesh.WaypointNone,
		"shop/shop-waypoint": mesh.WaypointNone, "shop/workload-only": mesh.WaypointNone}
	for _, o := range objs {
		svc, ok := o.(*corev1.Service)
		if !ok {
			continue
		}
		b := mesh.BindServiceWaypoint(svc, namespaces[svc.Namespace], gateways, true)
		if w := want[svc.Namespace+"/"+svc.Name]; b.State != w {
			t.Errorf("Service %s/%s: binding %s (%s), want %s", svc.Namespace, svc.Name, b.State, b.Why, w)
		}
	}
}
