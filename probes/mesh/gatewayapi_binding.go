package mesh

import (
	"fmt"
	"sort"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// allGateways are the Istio Gateways read and those istiod makes of the
// Gateway API's listeners.
func (c *Config) allGateways() ([]*networkingv1.Gateway, []string) {
	derived, unknown := c.derivedGateways()
	return append(append([]*networkingv1.Gateway(nil), c.Gateways...), derived...), unknown
}

// allVirtualServices are the VirtualServices read and those istiod makes
// of the Gateway API's routes.
func (c *Config) allVirtualServices() ([]*networkingv1.VirtualService, []string) {
	if c.GatewayAPI == nil {
		return c.VirtualServices, nil
	}
	derived, unknown := c.derivedVirtualServices()
	return append(append([]*networkingv1.VirtualService(nil), c.VirtualServices...), derived...), unknown
}

// gatewaySelects is GatewaySelects, and for a Gateway istiod made of a
// Gateway API listener, mergeGateways' rule: it applies to a pod through
// the Services it names (internal.istio.io/gateway-service), of its own
// namespace, that select the pod.
func (c *Config) gatewaySelects(gw *networkingv1.Gateway, caller Caller) (bool, string) {
	names := gw.Annotations[AnnotationGatewayService]
	if names == "" {
		return GatewaySelects(gw, caller)
	}
	svcs, unread := c.gatewayServicesOf(gw, caller)
	if len(svcs) > 0 {
		return true, "its Service " + svcs[0].Name + " selects the caller"
	}
	why := "none of its Services (" + names + ") in " + gw.Namespace + " selects the caller"
	if len(unread) > 0 {
		why += " (" + strings.Join(unread, ", ") + " not read)"
	}
	return false, why
}

// gatewayServicesOf are the Services of a Gateway API Gateway's listener
// that select the caller's pod; unread names those not read.
func (c *Config) gatewayServicesOf(gw *networkingv1.Gateway, caller Caller) (svcs []*corev1.Service, unread []string) {
	for _, h := range strings.Split(gw.Annotations[AnnotationGatewayService], ",") {
		sd := c.Services[h]
		if sd == nil || sd.Service == nil {
			if exists, why := c.serviceExists(h); !exists && why != "" {
				unread = append(unread, h)
			}
			continue
		}
		svc := sd.Service
		if svc.Namespace == gw.Namespace && svc.Namespace == caller.Namespace && len(svc.Spec.Selector) > 0 && LabelsMatch(svc.Spec.Selector, caller.Labels) {
			svcs = append(svcs, svc)
		}
	}
	return svcs, unread
}

// apiListenerPort resolves a Gateway API listener's port as istiod's
// resolvePorts does when a Gateway names its Services: the port must be
// a port of one of them (the Service port, not the pod's), and the
// listener is on its targetPort; with none, istiod builds no listener
// (Programmed False, AddressNotUsable).
func (c *Config) apiListenerPort(port int32, gw *networkingv1.Gateway, caller Caller) (int32, string) {
	svcs, _ := c.gatewayServicesOf(gw, caller)
	var have []string
	for _, svc := range svcs {
		for _, sp := range svc.Spec.Ports {
			if sp.Port == port {
				tp, why := targetPortOn(svc, sp, caller)
				if why != "" {
					return port, why
				}
				return tp, ""
			}
			have = append(have, fmt.Sprint(sp.Port))
		}
	}
	names := make([]string, 0, len(svcs))
	for _, svc := range svcs {
		names = append(names, svc.Namespace+"/"+svc.Name)
	}
	return port, fmt.Sprintf("port %d is not a port of the gateway's Service %s (its ports: %s): istiod builds no listener for it (Programmed False, AddressNotUsable: the service port should be specified, not the workload port)",
		port, strings.Join(names, ", "), strings.Join(have, ", "))
}

// strictGatewayMerging is filterStrictGatewayMerging
// (PILOT_ENABLE_STRICT_GATEWAY_MERGING, on by default): once a managed
// Gateway API Gateway applies to the pod, Istio Gateways of other
// namespaces no longer do. verdicts are told why.
func strictGatewayMerging(selecting []*networkingv1.Gateway, verdicts []RuleVerdict) []*networkingv1.Gateway {
	managed := map[string]bool{}
	for _, gw := range selecting {
		if gw.Annotations[AnnotationGatewaySemantic] == semanticsGateway && gw.Annotations[AnnotationServiceAccount] != "" {
			managed[gw.Namespace] = true
		}
	}
	if len(managed) == 0 {
		return selecting
	}
	var out []*networkingv1.Gateway
	for _, gw := range selecting {
		if gw.Annotations[AnnotationGatewaySemantic] == semanticsGateway || managed[gw.Namespace] {
			out = append(out, gw)
			continue
		}
		for i := range verdicts {
			if verdicts[i].Namespace == gw.Namespace && verdicts[i].Name == gw.Name {
				verdicts[i].Applies = false
				verdicts[i].Why += "; but the pod is a managed Gateway API Gateway's, and istiod's strict gateway merging drops Istio Gateways of other namespaces"
			}
		}
	}
	return out
}

// GatewayAPIBinding is the Gateway API's side of a gateway caller's
// binding: its Gateway (when the caller is a Gateway API Gateway's pod),
// and the routes that concern the target: those with a backendRef to it,
// and those attached to the caller's Gateway.
type GatewayAPIBinding struct {
	// Gateway is the caller's Gateway API Gateway, nil when it is none or
	// was not read (GatewayUnknown says why).
	Gateway        *APIGateway
	GatewayUnknown string
	// Routes are the routes that send to the target, or are attached (or
	// meant to be) to the caller's Gateway.
	Routes []RouteVerdict
	// Unknown says what the model could not decide about them.
	Unknown []string
}

// gatewayAPIBinding judges the Gateway API for a gateway caller, and
// returns unknown with what it could not decide added.
func (c *Config) gatewayAPIBinding(caller Caller, host string, port int32, unknown []string) (*GatewayAPIBinding, []string) {
	if c.GatewayAPI == nil {
		return nil, unknown
	}
	b := &GatewayAPIBinding{}
	name := caller.Labels[LabelGatewayName]
	if name == "" {
		name = caller.Labels[LabelIstioGatewayName]
	}
	if name != "" {
		b.Gateway = c.APIGateway(caller.Namespace, name)
		if b.Gateway == nil {
			if why := c.GatewayAPI.unknownWhy(KindGateway, caller.Namespace); why != "" {
				b.GatewayUnknown = why
			} else {
				b.GatewayUnknown = "no Gateway " + caller.Namespace + "/" + name + " exists"
			}
		}
	}
	for _, r := range c.APIRoutes() {
		if c.routeConcerns(r, b.Gateway, host, port) {
			b.Routes = append(b.Routes, r)
		}
	}
	_, derivedUnknown := c.derivedVirtualServices()
	b.Unknown = append(b.Unknown, derivedUnknown...)
	for kind, why := range c.GatewayAPI.Unread {
		if kind != KindGatewayClass {
			b.Unknown = append(b.Unknown, kind+"s: "+why)
		}
	}
	sort.Strings(b.Unknown)
	return b, append(unknown, b.Unknown...)
}

// LabelGatewayName is the label istiod's deployment controller puts on
// a managed Gateway's pods and Service: the Gateway's name.
const LabelGatewayName = "gateway.networking.k8s.io/gateway-name"

// routeConcerns: the route sends to host (any port: a wrong port is the
// point), or names gw as a parent.
func (c *Config) routeConcerns(r RouteVerdict, gw *APIGateway, host string, _ int32) bool {
	for _, b := range r.Backends {
		if b.Host == host || b.Kind == "Service" && ServiceHost(b.Name, b.Namespace) == host {
			return true
		}
	}
	for _, p := range r.Parents {
		if gw != nil && p.ParentKind == KindGateway && p.ParentNamespace == gw.Namespace && p.ParentName == gw.Name {
			return true
		}
		if p.Mesh && ServiceHost(p.ParentName, p.ParentNamespace) == host {
			return true
		}
	}
	return false
}

// chain is the Gateway API's part of the gateway's reasoning.
func (b *GatewayAPIBinding) chain(gatewayName string) []string {
	if b == nil {
		if gatewayName == "" {
			return nil
		}
		return []string{"  the caller is the Deployment of Gateway API Gateway " + gatewayName + ": its routes were not read, and what follows is the Istio Gateways' view only"}
	}
	var out []string
	if g := b.Gateway; g != nil {
		line := fmt.Sprintf("  Gateway API Gateway %s (class %s, controller %s), bound to Services %s", g.Ref(), g.Class, g.Controller, strings.Join(g.Services, ", "))
		if g.Programmed != nil {
			line += "; istiod: Programmed " + g.Programmed.String()
		}
		out = append(out, line)
		for _, l := range g.Listeners {
			p, known, why := l.Programmed()
			state := "programmed"
			switch {
			case !known:
				state = "programmed?"
			case !p:
				state = "NOT programmed"
			}
			line := fmt.Sprintf("    listener %s: port %d %s, hostname %s, routes from %s, kinds %s: %s", l.Name, l.Port, l.Protocol, dashIfEmpty(l.Hostname), l.AllowedFrom, strings.Join(l.AllowedKinds, ","), state)
			if why != "" {
				line += " (" + why + ")"
			}
			out = append(out, line)
		}
	} else if b.GatewayUnknown != "" {
		out = append(out, "  the caller's Gateway API Gateway: "+b.GatewayUnknown)
	}
	for _, r := range b.Routes {
		out = append(out, "  "+r.Route+":")
		if r.Hard != "" {
			out = append(out, "    no routes at all: "+r.Hard+" ("+r.HardReason+")")
		}
		for _, p := range r.Parents {
			out = append(out, "    parent "+p.Parent()+": "+p.verdict())
		}
		for _, bv := range r.Backends {
			state := "ok"
			switch {
			case bv.Unknown != "":
				state = "undecided: " + bv.Unknown
			case bv.Invalid != "":
				state = bv.Invalid + ": " + bv.Why
			}
			mesh := ""
			if bv.Mesh {
				mesh = " (mesh)"
			}
			out = append(out, fmt.Sprintf("    rule %d (%s) backendRef %s %s/%s:%d%s %d%% → %s: %s", bv.Rule, bv.RouteName, bv.Kind, bv.Namespace, bv.Name, bv.Port, mesh, bv.Percent, bv.Cluster, state))
		}
	}
	return out
}

// verdict says in one line what the parentRef's status is, and what
// istiod wrote.
func (p ParentVerdict) verdict() string {
	s := ""
	switch {
	case p.Unknown != "":
		s = "undecided: " + p.Unknown
	case p.NoStatus != "":
		s = "no parent: " + p.NoStatus
	case p.Accepted:
		s = "Accepted (listeners " + strings.Join(p.Listeners, ", ") + ")"
	default:
		s = "NOT Accepted: " + p.Reason + ": " + p.Message
	}
	if p.StatusAccepted != nil {
		s += "; istiod wrote Accepted " + p.StatusAccepted.String()
		if p.StatusResolvedRefs != nil {
			s += ", ResolvedRefs " + p.StatusResolvedRefs.String()
		}
	}
	return s
}

// GatewayAPIReadHosts are the hostnames of the Services the Gateway API
// verdicts on host need beside those the routes to it send to: for a
// gateway caller, its Gateway's Services; the backendRefs of every route
// that concerns the target (attached to the caller's Gateway, a mesh
// route of the target, or sending to it). A triage reads them, so that
// a backend that is absent is known absent.
func (c *Config) GatewayAPIReadHosts(caller Caller, host string) []string {
	if c.GatewayAPI == nil {
		return nil
	}
	var out []string
	add := func(h string) {
		if !contains(out, h) {
			out = append(out, h)
		}
	}
	gwName := caller.Labels[LabelGatewayName]
	if gwName == "" {
		gwName = caller.Labels[LabelIstioGatewayName]
	}
	if caller.Gateway && gwName != "" {
		if g := c.APIGateway(caller.Namespace, gwName); g != nil {
			for _, h := range g.Services {
				add(h)
			}
		}
	}
	for _, r := range c.GatewayAPI.sortedRoutes() {
		concerns := false
		for _, ref := range r.ParentRefs {
			ns := r.Namespace
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			switch parentKindOf(ref) {
			case KindGateway:
				concerns = concerns || caller.Gateway && ns == caller.Namespace && string(ref.Name) == gwName
			case "Service":
				concerns = concerns || ServiceHost(string(ref.Name), ns) == host
			}
		}
		backends := routeBackendHosts(r)
		concerns = concerns || contains(backends, host)
		if concerns {
			for _, h := range backends {
				add(h)
			}
		}
	}
	sort.Strings(out)
	return out
}

// routeBackendHosts are the hostnames of the Services a route's
// backendRefs and mirrors name.
func routeBackendHosts(r apiRoute) []string {
	var out []string
	add := func(b gatewayv1.BackendObjectReference) {
		if b.Group != nil && *b.Group != "" || b.Kind != nil && *b.Kind != "Service" || strings.Contains(string(b.Name), ".") {
			return
		}
		ns := r.Namespace
		if b.Namespace != nil {
			ns = string(*b.Namespace)
		}
		if h := ServiceHost(string(b.Name), ns); !contains(out, h) {
			out = append(out, h)
		}
	}
	switch {
	case r.http != nil:
		for _, rule := range r.http.Spec.Rules {
			for _, b := range rule.BackendRefs {
				add(b.BackendObjectReference)
			}
			for _, f := range rule.Filters {
				if f.RequestMirror != nil {
					add(f.RequestMirror.BackendRef)
				}
			}
		}
	case r.grpc != nil:
		for _, rule := range r.grpc.Spec.Rules {
			for _, b := range rule.BackendRefs {
				add(b.BackendObjectReference)
			}
		}
	case r.tls != nil:
		for _, rule := range r.tls.Spec.Rules {
			for _, b := range rule.BackendRefs {
				add(b.BackendObjectReference)
			}
		}
	case r.tcp != nil:
		for _, rule := range r.tcp.Spec.Rules {
			for _, b := range rule.BackendRefs {
				add(b.BackendObjectReference)
			}
		}
	}
	return out
}
