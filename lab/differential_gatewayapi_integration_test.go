//go:build integration

package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
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
