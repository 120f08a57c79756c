package remedies

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// What the Gateway API remedies share: the routes the verdicts name, as
// read, to patch.

// routeObject is the route a verdict names ("HTTPRoute ns/name"), as
// read, and the object a patch of it changes.
func routeObject(cfg *mesh.Config, ref string) (any, patch.Object, bool) {
	kind, nn, _ := strings.Cut(ref, " ")
	ns, name, _ := strings.Cut(nn, "/")
	find := func(objs []metav1.Object) metav1.Object {
		for _, o := range objs {
			if o.GetNamespace() == ns && o.GetName() == name {
				return o
			}
		}
		return nil
	}
	var o metav1.Object
	g := cfg.GatewayAPI
	if g == nil {
		return nil, patch.Object{}, false
	}
	switch kind {
	case mesh.KindHTTPRoute:
		o = find(metas(g.HTTPRoutes))
	case mesh.KindGRPCRoute:
		o = find(metas(g.GRPCRoutes))
	case mesh.KindTLSRoute:
		o = find(metas(g.TLSRoutes))
	case mesh.KindTCPRoute:
		o = find(metas(g.TCPRoutes))
	}
	if o == nil {
		return nil, patch.Object{}, false
	}
	return o, objectOf(gatewayAPI, kind, o), true
}

func metas[T metav1.Object](in []T) []metav1.Object {
	out := make([]metav1.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}

// apiGatewayObject is the Gateway API Gateway ns/name as read.
func apiGatewayObject(cfg *mesh.Config, ns, name string) *gatewayv1.Gateway {
	if cfg.GatewayAPI == nil {
		return nil
	}
	for _, gw := range cfg.GatewayAPI.Gateways {
		if gw.Namespace == ns && gw.Name == name {
			return gw
		}
	}
	return nil
}

// apiRoutesFor are the routes the Gateway API verdicts of the triage
// concern: for a gateway caller, its binding's; for a sidecar, the mesh
// routes of the target, and whether they are judged for the mesh.
func apiRoutesFor(ctx context.Context, in *Input) (*mesh.Config, *mesh.GatewayAPIBinding, []mesh.RouteVerdict, bool, string) {
	cfg, caller, views, err := in.Model(ctx)
	if err != nil {
		return nil, nil, nil, false, fmt.Sprintf("the config model could not be read: %v", err)
	}
	if cfg.GatewayAPI == nil {
		return nil, nil, nil, false, "the Gateway API objects were not read"
	}
	if caller.Gateway {
		for _, v := range views {
			if v.Gateway != nil && v.Gateway.API != nil {
				return cfg, v.Gateway.API, v.Gateway.API.Routes, false, ""
			}
		}
		return nil, nil, nil, false, "the model has no Gateway API binding for the gateway"
	}
	var out []mesh.RouteVerdict
	for _, r := range cfg.APIRoutes() {
		for _, p := range r.Parents {
			if p.Mesh && mesh.ServiceHost(p.ParentName, p.ParentNamespace) == in.Target.Host() {
				out = append(out, r)
				break
			}
		}
	}
	return cfg, nil, out, true, ""
}

// routesWithBrokenBackendsOf keeps the routes of apiRoutesFor whose
// backends a fix may change: every mesh route of the target (already
// chosen by its parent), and for a gateway the routes attached to it that
// send to the target or whose 500 NCs the gateway logged.
func routesWithBrokenBackendsOf(in *Input, api *mesh.GatewayAPIBinding, routes []mesh.RouteVerdict) []mesh.RouteVerdict {
	if api == nil {
		return routes
	}
	logRoutes, _ := in.Facts["gateway_log_nc500_routes"].([]string)
	var out []mesh.RouteVerdict
	for _, rv := range routes {
		if rv.AttachedTo(api.Gateway) && (rv.SendsTo(in.Target.Host()) || rv.NamedIn(logRoutes)) {
			out = append(out, rv)
		}
	}
	return out
}

// ruleBackendsPath is the JSON pointer of a rule's backendRef.
func backendRefPath(rule, ref int, field ...any) string {
	return patch.Pointer(append([]any{"spec", "rules", rule, "backendRefs", ref}, field...)...)
}
