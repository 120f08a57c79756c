//go:build integration

package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// gatewayAPIInputs are the scenarios and config-model cases whose caller
// is a Gateway API Gateway's pod (not a waypoint's).
func gatewayAPIInputs(t *testing.T) []modelInput {
	var out []modelInput
	for _, in := range modelInputs(t) {
		if in.target.Source == nil {
			continue
		}
		pod := scenarioPodByRef(t, in.s, *in.target.Source)
		if gw, _ := mesh.GatewayPod(pod); gw && mesh.GatewayAPIName(pod) != "" && !mesh.IsWaypointPod(pod) {
			out = append(out, in)
		}
	}
	return out
}

// withoutGatewayAPIStatus is s with the status of its Gateway API
// Gateways and routes cleared: what the lab then reads is what istiod
// wrote, not what was recorded.
func withoutGatewayAPIStatus(s *recorded.Scenario) *recorded.Scenario {
	out := *s
	out.Objects = nil
	for _, obj := range s.Objects {
		obj = obj.DeepCopyObject()
		switch o := obj.(type) {
		case *gatewayv1.Gateway:
			o.Status = gatewayv1.GatewayStatus{}
		case *gatewayv1.HTTPRoute:
			o.Status = gatewayv1.HTTPRouteStatus{}
		case *gatewayv1.GRPCRoute:
			o.Status = gatewayv1.GRPCRouteStatus{}
		case *gatewayv1.TLSRoute:
			o.Status = gatewayv1.TLSRouteStatus{}
		case *gatewayv1.TCPRoute:
			o.Status = gatewayv1.TCPRouteStatus{}
		}
		out.Objects = append(out.Objects, obj)
	}
	return &out
}

// The Gateway API against a real istiod: for every scenario and
// config-model case whose caller is a Gateway API gateway's pod, loaded
// without status, istiod (its deployment controller off: the input
// carries the gateway's Service, pod and EndpointSlice) writes the
// routes' and Gateways' status and pushes the gateway its config. The
// model, read through the product's reads, must give the same Accepted
// and ResolvedRefs for every route parent, the same Programmed for every
// listener (CompareGatewayAPIStatus), and the same route configurations,
// virtual host domains, routes, clusters and listener ports
// (CompareGatewayProxy). A difference is a bug in the model.
func TestGatewayAPIAgainstIstiod(t *testing.T) {
	l, i := istiodLab(t)
	inputs := gatewayAPIInputs(t)
	if len(inputs) < 4 {
		t.Fatalf("%d inputs with a Gateway API gateway caller; the scenarios and model cases hold more", len(inputs))
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			s := withoutGatewayAPIStatus(in.s)
			applyToIstiod(t, l, i, s)
			source := *in.target.Source
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sc, err := i.ConnectSidecar(ctx, scenarioPodByRef(t, s, source))
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			if !strings.HasPrefix(sc.XDS.Node.GetId(), mesh.ProxyTypeRouter+"~") {
				t.Fatalf("connected as %s, not as the gateway's router", sc.XDS.Node.GetId())
			}

			// istiod writes status once it has converted the routes, and
			// an input follows another of the same names: compare until
			// both sides agree or istiod has had 30 s to settle. A real
			// difference outlasts the wait.
			var c modelRead
			var status, proxy Comparison
			for deadline := time.Now().Add(30 * time.Second); ; {
				if err := sc.XDS.WaitQuiet(ctx, 500*time.Millisecond); err != nil {
					t.Fatal(err)
				}
				c = readGatewayModel(ctx, t, l, s, in)
				status = CompareGatewayAPIStatus(c.cfg)
				proxy = CompareGatewayProxy(GatewayProxyModelOf(c.cfg, c.caller), sc.XDS.PushedRoutes(), sc.XDS.PushedListeners(), sc.XDS.Pushed())
				if len(status.Diffs)+len(proxy.Diffs) == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Second)
			}
			for _, d := range append(status.Diffs, proxy.Diffs...) {
				t.Error(d)
			}
			t.Logf("compared %d route parents, %d listeners' conditions, %d virtual hosts and %d route clusters",
				status.Clusters, status.Endpoints, proxy.Clusters, proxy.Endpoints)
			if status.Clusters == 0 && proxy.Clusters == 0 {
				t.Errorf("nothing compared: no route parent, no virtual host")
			}
			if t.Failed() {
				b := GatewayProxyModelOf(c.cfg, c.caller).Binding
				for _, vh := range b.VirtualHosts {
					t.Logf("model: route %s domain %s: %+v", vh.RouteName, vh.Domain, vh.Routes)
				}
				for name, rc := range sc.XDS.PushedRoutes() {
					json, _ := AdminJSON(rc)
					t.Logf("istiod: route %s: %s", name, json)
				}
			}
		})
	}
}

type modelRead struct {
	cfg    *mesh.Config
	caller mesh.Caller
}

// readGatewayModel reads the model for the input's gateway caller
// through the product's reads of the lab's API server.
func readGatewayModel(ctx context.Context, t *testing.T, l *Lab, s *recorded.Scenario, in modelInput) modelRead {
	t.Helper()
	cfg, caller, _, err := callerview.Read(ctx, liveCluster(t, l.Kubeconfig, s, 20*time.Second), in.target)
	if err != nil {
		t.Fatalf("read the model: %v", err)
	}
	return modelRead{cfg: cfg, caller: caller}
}

// The waypoints against a real istiod: for every scenario with a
// waypoint's pod, and waypoint-bindings.yaml (a Service bound by its
// namespace's label, one opted out, one naming a missing waypoint, one in
// a namespace the waypoint does not admit, one naming a waypoint for
// workloads only, one with no label), loaded without the Gateway API status (istiod writes
// the waypoint's address), the pod connects as waypoint~IP~POD.NS, and
// the Service ports istiod gives it inbound-vip clusters for must be
// those of the Services the model binds to it (CompareWaypointServices),
// read from every Service, Namespace and Gateway the API server serves.
func TestWaypointAgainstIstiod(t *testing.T) {
	l, i := istiodLab(t)
	compared := 0
	inputs := map[string]*recorded.Scenario{}
	for _, name := range scenarioNames(t) {
		inputs["scenario/"+name] = loadScenario(t, name)
	}
	world := recorded.FromObjects("model/waypoint-bindings.yaml", withCreationOrder(meshtest.Objects(t, "../probes/mesh/testdata/model", "base.yaml", "waypoint-bindings.yaml")))
	world.Name = "model-waypoint-bindings"
	inputs["model/waypoint-bindings"] = world
	routes := recorded.FromObjects("model/waypoint-routes.yaml", withCreationOrder(meshtest.Objects(t, "../probes/mesh/testdata/model", "base.yaml", "waypoint-bindings.yaml", "waypoint-routes.yaml")))
	routes.Name = "model-waypoint-routes"
	inputs["model/waypoint-routes"] = routes
	for _, name := range sortedKeysOf(inputs) {
		s := inputs[name]
		var waypoints []*corev1.Pod
		for _, obj := range s.Objects {
			if pod, ok := obj.(*corev1.Pod); ok && mesh.IsWaypointPod(pod) && pod.Status.PodIP != "" {
				waypoints = append(waypoints, pod)
			}
		}
		if len(waypoints) == 0 {
			continue
		}
		compared++
		t.Run(name, func(t *testing.T) {
			s := withoutGatewayAPIStatus(s)
			applyToIstiod(t, l, i, s)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for _, pod := range waypoints {
				sc, err := i.ConnectSidecar(ctx, pod)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(sc.XDS.Node.GetId(), mesh.ProxyTypeWaypoint+"~") {
					t.Fatalf("connected as %s, not as a waypoint", sc.XDS.Node.GetId())
				}
				ref := mesh.WaypointRef{Namespace: pod.Namespace, Name: mesh.GatewayAPIName(pod)}
				cfg := mesh.ConfigFromObjects(s.Objects, mesh.MeshConfig{}, cluster.DefaultControlPlane)
				var c, routes, status Comparison
				for deadline := time.Now().Add(30 * time.Second); ; {
					if err := sc.XDS.WaitQuiet(ctx, 500*time.Millisecond); err != nil {
						t.Fatal(err)
					}
					services, namespaces, gateways := servedWaypointInputs(ctx, t, l)
					var bound map[string]bool
					c, bound = CompareWaypointServices(services, namespaces, gateways, ref, sortedKeysOf(sc.XDS.TypeState(ClusterType).Resources))
					routes = CompareWaypointRoutes(cfg, bound, sc.XDS.PushedListeners())
					// The mesh routes' status istiod wrote, against the
					// model's verdicts on the objects served.
					status = CompareGatewayAPIStatus(servedRoutesConfig(ctx, t, l, services, namespaces, gateways))
					if len(c.Diffs)+len(routes.Diffs)+len(status.Diffs) == 0 || time.Now().After(deadline) {
						break
					}
					time.Sleep(time.Second)
				}
				sc.Close()
				for _, d := range append(append(c.Diffs, routes.Diffs...), status.Diffs...) {
					t.Error(d)
				}
				t.Logf("waypoint %s: compared %d Service ports, the routes of %d, %d route parents' status", ref, c.Clusters, routes.Clusters, status.Clusters)
				if c.Clusters == 0 {
					t.Errorf("waypoint %s: nothing compared: no Service port bound to it on either side", ref)
				}
			}
		})
	}
	if compared == 0 {
		t.Fatal("no scenario has a waypoint's pod")
	}
}

// servedWaypointInputs are the Services, Namespaces and Gateways the lab's
// API server serves.
func servedWaypointInputs(ctx context.Context, t *testing.T, l *Lab) ([]corev1.Service, map[string]*corev1.Namespace, []*gatewayv1.Gateway) {
	t.Helper()
	svcs, err := l.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nss, err := l.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	namespaces := map[string]*corev1.Namespace{}
	for k := range nss.Items {
		namespaces[nss.Items[k].Name] = &nss.Items[k]
	}
	list, err := l.Dynamic.Resource(schema.GroupVersionResource{Group: gatewayv1.GroupName, Version: "v1", Resource: "gateways"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var gateways []*gatewayv1.Gateway
	for _, u := range list.Items {
		gw := &gatewayv1.Gateway{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, gw); err != nil {
			t.Fatal(err)
		}
		gateways = append(gateways, gw)
	}
	return svcs.Items, namespaces, gateways
}

// servedRoutesConfig is the model built from the Services, Namespaces and
// Gateways given and the HTTPRoutes the API server serves, with the status
// istiod wrote.
func servedRoutesConfig(ctx context.Context, t *testing.T, l *Lab, services []corev1.Service, namespaces map[string]*corev1.Namespace, gateways []*gatewayv1.Gateway) *mesh.Config {
	t.Helper()
	var objs []runtime.Object
	for k := range services {
		objs = append(objs, &services[k])
	}
	for _, ns := range namespaces {
		objs = append(objs, ns)
	}
	for _, gw := range gateways {
		objs = append(objs, gw)
	}
	list, err := l.Dynamic.Resource(schema.GroupVersionResource{Group: gatewayv1.GroupName, Version: "v1", Resource: "httproutes"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range list.Items {
		r := &gatewayv1.HTTPRoute{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, r)
	}
	return mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, cluster.DefaultControlPlane)
}
