package mesh

import (
	"slices"
	"strings"
)

// The questions a triage asks of the Gateway API verdicts, answered with
// istiod's own status where it wrote it at the object's generation, else
// with the model's.

// GatewayRef is the caller's Gateway API Gateway, namespace/name ("" for
// none).
func (b *GatewayAPIBinding) GatewayRef() string {
	if b == nil || b.Gateway == nil {
		return ""
	}
	return b.Gateway.Ref()
}

// SendsTo reports whether a backendRef (or mirror) of the route names the
// Service with hostname host, whatever its port.
func (r RouteVerdict) SendsTo(host string) bool {
	for _, b := range r.Backends {
		if b.Kind == "Service" && ServiceHost(b.Name, b.Namespace) == host || b.Host == host {
			return true
		}
	}
	return false
}

// NamedIn reports whether a rule of the route is named in names (Envoy
// route names, as access logs show them).
func (r RouteVerdict) NamedIn(names []string) bool {
	for _, b := range r.Backends {
		if slices.Contains(names, b.RouteName) {
			return true
		}
	}
	return false
}

// onGateway reports whether parent p is gw, or a Gateway that does not
// exist (a parentRef meant for a Gateway, mistyped).
func (p ParentVerdict) onGateway(gw *APIGateway) bool {
	if p.ParentKind != KindGateway {
		return false
	}
	if gw != nil && p.ParentNamespace == gw.Namespace && p.ParentName == gw.Name {
		return true
	}
	return strings.Contains(p.NoStatus, "does not exist")
}

// AttachedTo reports whether a listener of gw accepts the route, as
// istiod says (its status at the route's generation) or, without one, as
// the model does.
func (r RouteVerdict) AttachedTo(gw *APIGateway) bool {
	if gw == nil {
		return false
	}
	for _, p := range r.Parents {
		if p.ParentKind == KindGateway && p.ParentNamespace == gw.Namespace && p.ParentName == gw.Name {
			if accepted, _ := p.IstiodAccepted(); accepted {
				return true
			}
		}
	}
	return false
}

// Unattached says how the route fails to attach to gw: entry is "ROUTE
// -> PARENT: REASON", why istiod's (or the model's) words, source where
// the verdict comes from (status, model, disagree, stale). ok is false
// when it is attached, its parents are other Gateways', or the model
// cannot decide and istiod wrote nothing.
func (r RouteVerdict) Unattached(gw *APIGateway) (entry, why, source string, ok bool) {
	var first *ParentVerdict
	for i := range r.Parents {
		p := &r.Parents[i]
		if !p.onGateway(gw) {
			continue
		}
		if accepted, _ := p.IstiodAccepted(); accepted {
			return "", "", "", false
		}
		if first == nil {
			first = p
		}
	}
	if first == nil {
		return "", "", "", false
	}
	p := first
	reason, why := p.Reason, p.Message
	switch st := p.StatusAccepted; {
	case p.NoStatus != "":
		reason, why, source = "no such Gateway", p.NoStatus, "model"
		if st != nil && !st.Stale {
			source = "disagree" // istiod wrote a status for a parent the model says it would not
		}
	case st != nil && !st.Stale:
		reason, why, source = st.Reason, st.Message, "status"
		if p.Unknown == "" && p.Accepted {
			source = "disagree"
		}
	case p.Unknown != "":
		return "", "", "", false
	case st != nil:
		source = "stale"
	default:
		source = "model"
	}
	return r.Route + " -> " + p.Parent() + ": " + reason, why, source, true
}

// InvalidBackends are the route's backendRefs (not mirrors) istiod
// cannot use, for its mesh parents or its gateway ones.
func (r RouteVerdict) InvalidBackends(mesh bool) []BackendVerdict {
	var out []BackendVerdict
	for _, b := range r.Backends {
		if b.Mesh == mesh && !b.Mirror && b.Invalid != "" {
			out = append(out, b)
		}
	}
	return out
}

// BrokenShare is the largest share (%) of a rule's requests that go to
// invalid backendRefs.
func (r RouteVerdict) BrokenShare(mesh bool) int {
	byRule := map[int]int{}
	max := 0
	for _, b := range r.InvalidBackends(mesh) {
		byRule[b.Rule] += b.Percent
		if byRule[b.Rule] > max {
			max = byRule[b.Rule]
		}
	}
	return max
}

// BackendSource says where the verdict on an invalid backend comes from:
// status when istiod's ResolvedRefs for the route's parentRef to gw, at
// the route's generation, agrees (False for a reference it cannot
// resolve; True for a port the Service lacks, which it does not check),
// model without one, disagree when it differs, stale when it is of an
// older generation.
func (r RouteVerdict) BackendSource(gw *APIGateway, b BackendVerdict) string {
	for _, p := range r.Parents {
		if !p.onGateway(gw) || p.StatusResolvedRefs == nil {
			continue
		}
		st := p.StatusResolvedRefs
		switch {
		case st.Stale:
			return "stale"
		case st.Status == "False" && b.Invalid != BackendPortMissing:
			return "status"
		case st.Status == "True" && b.Invalid == BackendPortMissing:
			return "status"
		}
		return "disagree"
	}
	return "model"
}
