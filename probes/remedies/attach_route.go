package remedies

import (
	"context"
	"fmt"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// AttachRoute attaches each route to the target that no listener of the
// caller's Gateway accepts, by the smallest change istiod's own reason
// points at: a parentRef naming a Gateway that does not exist names the
// caller's; a sectionName or port no listener has names the one listener
// that accepts the route otherwise; a hostname no listener serves gets
// the listener's; a namespace the listener does not admit is added to
// its allowedRoutes (the Gateway's own stays). A route kind the listener
// does not take, or a listener that admits namespaces by a selector, is
// the team's call.
type AttachRoute struct{}

func (AttachRoute) Meta() Meta {
	return Meta{
		ID:     "attach-route",
		Causes: []string{"gateway.route-not-attached"},
		Does:   "corrects the route's parentRef or hostnames, or admits its namespace on the listener, by the reason istiod (or the model) gives (JSON patch)",
	}
}

func (AttachRoute) Compute(ctx context.Context, in *Input) Output {
	cfg, api, routes, forMesh, why := apiRoutesFor(ctx, in)
	if why != "" {
		return unpatchable("%s", why)
	}
	if forMesh || api.Gateway == nil {
		return unpatchable("the caller is no Gateway API Gateway's pod")
	}
	g := api.Gateway
	gwObj := apiGatewayObject(cfg, g.Namespace, g.Name)
	var out Output
	var notes []string
	for _, rv := range routes {
		if !rv.SendsTo(in.Target.Host()) {
			continue
		}
		p := rv.UnattachedParent(g)
		if p == nil {
			continue
		}
		obj, ref, ok := routeObject(cfg, rv.Route)
		if !ok {
			continue
		}
		reason := p.Reason
		if st := p.StatusAccepted; st != nil && !st.Stale && st.Status == "False" {
			reason = st.Reason
		}
		var target patch.Object
		var typed any
		var ops []patch.Op
		var note string
		parentPath := func(field string) string { return patch.Pointer("spec", "parentRefs", p.Index, field) }
		switch {
		case p.NoStatus != "":
			// A parentRef to a Gateway that does not exist: the caller's.
			target, typed = ref, obj
			ops = append(ops, patch.Test(parentPath("name"), p.ParentName), patch.Replace(parentPath("name"), g.Name))
			if p.ParentNamespace != g.Namespace || g.Namespace != rv.Namespace {
				if p.ParentNamespace != rv.Namespace {
					ops = append(ops, patch.Test(parentPath("namespace"), p.ParentNamespace), patch.Replace(parentPath("namespace"), g.Namespace))
				} else {
					ops = append(ops, patch.Add(parentPath("namespace"), g.Namespace))
				}
			}
			note = fmt.Sprintf("points parentRef %d of %s, which names Gateway %s/%s that does not exist, at the caller's Gateway %s", p.Index, rv.Route, p.ParentNamespace, p.ParentName, g.Ref())
		case reason == mesh.ReasonNoMatchingParent:
			ls := cfg.AcceptingListeners(rv, *p, g)
			if len(ls) != 1 {
				return unpatchable("%s: %s, and %d listeners of %s would take the route otherwise: which one it means is the team's call", rv.Route, p.Message, len(ls), g.Ref())
			}
			target, typed = ref, obj
			if p.SectionName != "" {
				ops = append(ops, patch.Test(parentPath("sectionName"), p.SectionName), patch.Replace(parentPath("sectionName"), ls[0].Name))
			}
			if p.Port != 0 {
				ops = append(ops, patch.Test(parentPath("port"), p.Port), patch.Replace(parentPath("port"), ls[0].Port))
			}
			note = fmt.Sprintf("points parentRef %d of %s at listener %s (port %d), the one listener of %s that takes it", p.Index, rv.Route, ls[0].Name, ls[0].Port, g.Ref())
		case reason == mesh.ReasonNoMatchingListenerHostname:
			l := oneListenerFor(cfg, rv, *p, g, true)
			if l == nil || l.Hostname == "" {
				return unpatchable("%s: %s: which host its clients send is not in the configuration", rv.Route, p.Message)
			}
			target, typed = ref, obj
			ops = append(ops, patch.Add(patch.Pointer("spec", "hostnames", "-"), l.Hostname))
			note = fmt.Sprintf("adds listener %s's hostname %s to the hostnames of %s", l.Name, l.Hostname, rv.Route)
		case reason == mesh.ReasonNotAllowedByListeners && strings.Contains(p.Message, "namespace"):
			l := oneListenerFor(cfg, rv, *p, g, false)
			if l == nil || gwObj == nil {
				return unpatchable("%s: %s, and no one listener of %s takes it but for its namespace", rv.Route, p.Message, g.Ref())
			}
			if l.AllowedFrom != string(gatewayv1.NamespacesFromSame) {
				return unpatchable("listener %s of %s admits namespaces by a selector: label namespace %s to match it, or widen the selector (the team's call: it admits routes of every namespace it matches)", l.Name, g.Ref(), rv.Namespace)
			}
			target, typed = objectOf(gatewayAPI, "Gateway", gwObj), gwObj
			namespaces := map[string]any{"from": "Selector", "selector": map[string]any{"matchExpressions": []map[string]any{{
				"key": "kubernetes.io/metadata.name", "operator": "In", "values": []string{g.Namespace, rv.Namespace}}}}}
			lp := func(parts ...any) string {
				return patch.Pointer(append([]any{"spec", "listeners", listenerIndex(gwObj, l.Name)}, parts...)...)
			}
			ops = append(ops, patch.Test(lp("name"), l.Name))
			switch lo := gwObj.Spec.Listeners[listenerIndex(gwObj, l.Name)]; {
			case lo.AllowedRoutes == nil:
				ops = append(ops, patch.Add(lp("allowedRoutes"), map[string]any{"namespaces": namespaces}))
			case lo.AllowedRoutes.Namespaces == nil:
				ops = append(ops, patch.Add(lp("allowedRoutes", "namespaces"), namespaces))
			default:
				ops = append(ops, patch.Replace(lp("allowedRoutes", "namespaces"), namespaces))
			}
			note = fmt.Sprintf("admits routes of namespace %s (and, as before, of %s) on listener %s of %s", rv.Namespace, g.Namespace, l.Name, g.Ref())
		default:
			return unpatchable("%s: %s: %s (a route kind the listener does not take is the team's call)", rv.Route, reason, p.Message)
		}
		pt, err := change(target, typed, ops...)
		if err != nil {
			return unpatchable("the change of %s %s/%s does not apply: %v", target.Kind, target.Namespace, target.Name, err)
		}
		out.Patches = append(out.Patches, pt)
		notes = append(notes, note)
	}
	if len(out.Patches) == 0 {
		return unpatchable("no route to the target fails to attach to %s", g.Ref())
	}
	out.Note = "The patch " + strings.Join(notes, "; ") + "."
	return out
}

// oneListenerFor is the one listener of g the route's parentRef may
// mean (its sectionName's, else the only listener of the route's kind):
// nil when there are several. anyNamespace: the namespace aside.
func oneListenerFor(cfg *mesh.Config, rv mesh.RouteVerdict, p mesh.ParentVerdict, g *mesh.APIGateway, anyNamespace bool) *mesh.APIListener {
	var found *mesh.APIListener
	for i := range g.Listeners {
		l := &g.Listeners[i]
		if l.NoServer || p.SectionName != "" && l.Name != p.SectionName || p.Port != 0 && l.Port != p.Port {
			continue
		}
		ok := false
		for _, k := range l.AllowedKinds {
			ok = ok || k == rv.Kind
		}
		if !anyNamespace && !cfg.AdmitsExceptNamespace(rv, p, g, *l) {
			ok = false
		}
		if !ok {
			continue
		}
		if found != nil {
			return nil
		}
		found = l
	}
	return found
}

func listenerIndex(gw *gatewayv1.Gateway, name string) int {
	for i, l := range gw.Spec.Listeners {
		if string(l.Name) == name {
			return i
		}
	}
	return -1
}
