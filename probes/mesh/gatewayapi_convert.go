package mesh

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Why istiod cannot use a backendRef (ResolvedRefs reasons), and the
// model's own for a port the Service lacks, which istiod does not check.
const (
	BackendNotFound      = "BackendNotFound"
	BackendRefNotAllowed = "RefNotPermitted"
	BackendInvalidKind   = "InvalidKind"
	// BackendPortMissing: the Service exists and has no such port. istiod
	// keeps ResolvedRefs True and routes to a cluster it never builds.
	BackendPortMissing = "PortMissing"
)

// UnknownServiceCluster is the cluster istiod routes an emptied
// destination to (GetDestinationCluster): it never exists.
const UnknownServiceCluster = "UnknownService"

// BackendVerdict is one backendRef (or request mirror) of a route rule,
// as istiod's buildDestination resolves it.
type BackendVerdict struct {
	Route string // "HTTPRoute namespace/name"
	// RouteName is the name of the Envoy routes the rule becomes (the
	// rule's name, else NAMESPACE.NAME.RULE): what access logs show as
	// route_name.
	RouteName string
	Rule, Ref int
	Mirror    bool
	// Mesh: judged for the route's mesh parents (no ReferenceGrant
	// needed).
	Mesh bool
	// Kind is Service, Hostname (a ServiceEntry host) or what the ref
	// names.
	Kind            string
	Namespace, Name string
	Port            int32
	// Percent is the share of the rule's requests it gets.
	Percent int
	// Host and Cluster are where istiod routes it: Host "" and cluster
	// UnknownService when it empties the destination.
	Host, Cluster string
	// Invalid is why istiod cannot use it (Backend* above), "" when it
	// can or it is undecided; Why says it in words.
	Invalid, Why string
	// Unknown says why the model cannot decide.
	Unknown string
}

// Ref names the backendRef: Service shop/web:8080 (rule 0 ref 1).
func (b BackendVerdict) String() string {
	what := "backendRef"
	if b.Mirror {
		what = "mirror"
	}
	return fmt.Sprintf("%s rule %d %s %d: %s %s/%s:%d", b.Route, b.Rule, what, b.Ref, b.Kind, b.Namespace, b.Name, b.Port)
}

// configError is istiod's ConfigError: reason and message.
type configError struct{ Reason, Message string }

// conversion is what a route's rules become for its gateway parents or
// its mesh ones.
type conversion struct {
	http     []*networkingv1alpha3.HTTPRoute
	tcp      []*networkingv1alpha3.TCPRoute
	tls      []*networkingv1alpha3.TLSRoute
	backends []backendVerdictWithHard
	// hard leaves the route without routes; soft keeps them (an invalid
	// backend).
	hard, soft *configError
}

// convertRoute converts a route's rules as istiod's convertHTTPRoute,
// convertGRPCRoute, convertTCPRoute and convertTLSRoute do, for its mesh
// parents (no ReferenceGrant enforced) or its gateway ones.
func (c *Config) convertRoute(r apiRoute, mesh bool) conversion {
	var conv conversion
	switch {
	case r.http != nil:
		for n, rule := range r.http.Spec.Rules {
			name := ruleName(r, rule.Name, n)
			matches := rule.Matches
			if len(matches) == 0 {
				matches = []gatewayv1.HTTPRouteMatch{{}}
			}
			var refs []gatewayv1.BackendRef
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
				for _, f := range b.Filters {
					if !supportedBackendFilter(f.Type) {
						conv.hard = &configError{"InvalidFilter", fmt.Sprintf("unsupported filter type %q", f.Type)}
					}
				}
			}
			dests, backends := c.buildDestinations(r, name, n, refs, mesh)
			conv.backends = append(conv.backends, backends...)
			var mirrors []*networkingv1alpha3.HTTPMirrorPolicy
			redirect := false
			for _, f := range rule.Filters {
				switch f.Type {
				case gatewayv1.HTTPRouteFilterRequestHeaderModifier, gatewayv1.HTTPRouteFilterResponseHeaderModifier,
					gatewayv1.HTTPRouteFilterURLRewrite, gatewayv1.HTTPRouteFilterCORS:
				case gatewayv1.HTTPRouteFilterRequestRedirect:
					redirect = true
				case gatewayv1.HTTPRouteFilterRequestMirror:
					if f.RequestMirror == nil {
						continue
					}
					ref := gatewayv1.BackendRef{BackendObjectReference: f.RequestMirror.BackendRef}
					d, bv := c.buildDestination(r, name, n, len(mirrors), ref, mesh)
					bv.Mirror, bv.Percent = true, 100
					conv.backends = append(conv.backends, bv)
					if d != nil && bv.Invalid == "" {
						mirrors = append(mirrors, &networkingv1alpha3.HTTPMirrorPolicy{Destination: d})
					}
				default:
					conv.hard = &configError{"InvalidFilter", fmt.Sprintf("unsupported filter type %q", f.Type)}
				}
			}
			for _, b := range backends {
				if b.Invalid != "" && b.Invalid != BackendPortMissing && conv.soft == nil {
					conv.soft = &configError{b.Invalid, b.Why}
				}
				if b.hard != nil {
					conv.hard = b.hard
				}
			}
			for _, m := range matches {
				route := &networkingv1alpha3.HTTPRoute{Name: name, Mirrors: mirrors, Match: httpMatchOf(m)}
				if !redirect {
					route.Route = dests
				}
				conv.http = append(conv.http, route)
			}
		}
	case r.grpc != nil:
		for n, rule := range r.grpc.Spec.Rules {
			name := ruleName(r, rule.Name, n)
			var refs []gatewayv1.BackendRef
			for _, b := range rule.BackendRefs {
				refs = append(refs, b.BackendRef)
			}
			dests, backends := c.buildDestinations(r, name, n, refs, mesh)
			conv.backends = append(conv.backends, backends...)
			for _, b := range backends {
				if b.Invalid != "" && b.Invalid != BackendPortMissing && conv.soft == nil {
					conv.soft = &configError{b.Invalid, b.Why}
				}
				if b.hard != nil {
					conv.hard = b.hard
				}
			}
			matches := rule.Matches
			if len(matches) == 0 {
				matches = []gatewayv1.GRPCRouteMatch{{}}
			}
			for _, m := range matches {
				conv.http = append(conv.http, &networkingv1alpha3.HTTPRoute{Name: name, Match: grpcMatchOf(m), Route: dests})
			}
		}
	case r.tcp != nil:
		for n, rule := range r.tcp.Spec.Rules {
			name := ruleName(r, rule.Name, n)
			dests, backends := c.buildDestinations(r, name, n, rule.BackendRefs, mesh)
			conv.backends = append(conv.backends, backends...)
			conv.tcp = append(conv.tcp, &networkingv1alpha3.TCPRoute{Route: routeDestinations(dests)})
			for _, b := range backends {
				if b.hard != nil {
					conv.hard = b.hard
				}
			}
		}
	case r.tls != nil:
		var sni []string
		for _, h := range r.tls.Spec.Hostnames {
			sni = append(sni, string(h))
		}
		for n, rule := range r.tls.Spec.Rules {
			name := ruleName(r, rule.Name, n)
			dests, backends := c.buildDestinations(r, name, n, rule.BackendRefs, mesh)
			conv.backends = append(conv.backends, backends...)
			route := &networkingv1alpha3.TLSRoute{Route: routeDestinations(dests)}
			if len(sni) > 0 {
				route.Match = []*networkingv1alpha3.TLSMatchAttributes{{SniHosts: sni}}
			}
			conv.tls = append(conv.tls, route)
			for _, b := range backends {
				if b.hard != nil {
					conv.hard = b.hard
				}
			}
		}
	}
	if conv.hard != nil {
		conv.http, conv.tcp, conv.tls = nil, nil, nil
	}
	return conv
}

func supportedBackendFilter(t gatewayv1.HTTPRouteFilterType) bool {
	return t == gatewayv1.HTTPRouteFilterRequestHeaderModifier || t == gatewayv1.HTTPRouteFilterResponseHeaderModifier
}

// ruleName is the name istiod gives a rule's routes.
func ruleName(r apiRoute, name *gatewayv1.SectionName, n int) string {
	if name != nil && *name != "" {
		return string(*name)
	}
	return r.Namespace + "." + r.Name + "." + strconv.Itoa(n)
}

func routeDestinations(in []*networkingv1alpha3.HTTPRouteDestination) []*networkingv1alpha3.RouteDestination {
	out := make([]*networkingv1alpha3.RouteDestination, 0, len(in))
	for _, d := range in {
		out = append(out, &networkingv1alpha3.RouteDestination{Destination: d.GetDestination(), Weight: d.GetWeight()})
	}
	return out
}

// buildDestinations is buildHTTPDestination: weight 0 drops a ref, a lone
// ref takes every request, invalid refs stay weighted destinations (so
// only their share fails).
func (c *Config) buildDestinations(r apiRoute, name string, rule int, refs []gatewayv1.BackendRef, mesh bool) ([]*networkingv1alpha3.HTTPRouteDestination, []backendVerdictWithHard) {
	var kept []gatewayv1.BackendRef
	var weights []int32
	var idx []int
	total := int32(0)
	for i, ref := range refs {
		w := int32(1)
		if ref.Weight != nil {
			w = *ref.Weight
		}
		if w == 0 {
			continue
		}
		kept, weights, idx = append(kept, ref), append(weights, w), append(idx, i)
		total += w
	}
	var dests []*networkingv1alpha3.HTTPRouteDestination
	var out []backendVerdictWithHard
	for i, ref := range kept {
		d, bv := c.buildDestination(r, name, rule, idx[i], ref, mesh)
		switch {
		case len(kept) == 1:
			bv.Percent = 100
		case total > 0:
			bv.Percent = int(weights[i] * 100 / total)
		}
		out = append(out, bv)
		if d == nil {
			continue // a hard error
		}
		w := weights[i]
		if len(kept) == 1 {
			w = 0
		}
		dests = append(dests, &networkingv1alpha3.HTTPRouteDestination{Destination: d, Weight: w})
	}
	return dests, out
}

// backendVerdictWithHard is a BackendVerdict with istiod's hard error, if
// the ref has one.
type backendVerdictWithHard struct {
	BackendVerdict
	hard *configError
}

// buildDestination is istiod's buildDestination for one ref: nil
// destination on a hard error (the route then has no routes at all).
func (c *Config) buildDestination(r apiRoute, name string, rule, ref int, to gatewayv1.BackendRef, mesh bool) (*networkingv1alpha3.Destination, backendVerdictWithHard) {
	group, kind := "", "Service"
	if to.Group != nil {
		group = string(*to.Group)
	}
	if to.Kind != nil {
		kind = string(*to.Kind)
	}
	ns := r.Namespace
	if to.Namespace != nil {
		ns = string(*to.Namespace)
	}
	bv := backendVerdictWithHard{BackendVerdict: BackendVerdict{Route: r.Ref(), RouteName: name, Rule: rule, Ref: ref, Mesh: mesh,
		Kind: kind, Namespace: ns, Name: string(to.Name)}}
	if to.Port != nil {
		bv.Port = int32(*to.Port)
	}
	invalid := func(reason, why string) (*networkingv1alpha3.Destination, backendVerdictWithHard) {
		bv.Invalid, bv.Why, bv.Cluster = reason, why, UnknownServiceCluster
		return &networkingv1alpha3.Destination{}, bv
	}
	isService := group == "" && kind == "Service"
	isHostname := group == "networking.istio.io" && kind == "Hostname"
	if !mesh && ns != r.Namespace && (isService || !isHostname) {
		toKind := kind
		if isService {
			toKind = "Service"
		}
		allowed, known := c.grantAllows(r.Kind, r.Namespace, toKind, ns, string(to.Name))
		switch {
		case !known:
			bv.Unknown = c.GatewayAPI.unknownWhy(KindReferenceGrant, ns)
		case !allowed:
			return invalid(BackendRefNotAllowed, fmt.Sprintf("backendRef %s/%s not accessible to a %s in namespace %q (missing a ReferenceGrant?)", to.Name, ns, r.Kind, r.Namespace))
		}
	}
	switch {
	case isService:
		if strings.Contains(string(to.Name), ".") {
			bv.hard = &configError{"InvalidDestination", "service name invalid; the name of the Service must be used, not the hostname."}
			bv.Why = bv.hard.Message
			return nil, bv
		}
		bv.Host = ServiceHost(string(to.Name), ns)
		exists, why := c.serviceExists(bv.Host)
		switch {
		case why != "":
			if bv.Unknown == "" {
				bv.Unknown = why
			}
		case !exists:
			bv.Invalid, bv.Why = BackendNotFound, fmt.Sprintf("backend(%s) not found", bv.Host)
		}
	case isHostname:
		if to.Namespace != nil {
			bv.hard = &configError{"InvalidDestination", "namespace may not be set with Hostname type"}
			bv.Why = bv.hard.Message
			return nil, bv
		}
		bv.Host = string(to.Name)
		if c.hostnameService(bv.Host, r.Namespace) == "" {
			if c.RulesKnown(r.Namespace) && c.RulesPartial == "" {
				bv.Invalid, bv.Why = BackendNotFound, fmt.Sprintf("backend(%s) not found", bv.Host)
			} else if bv.Unknown == "" {
				bv.Unknown = "whether a ServiceEntry declares " + bv.Host + " is not known: " + c.RulesPartial
			}
		}
	default:
		return invalid(BackendInvalidKind, fmt.Sprintf("referencing unsupported backendRef: group %q kind %q", group, kind))
	}
	if to.Port == nil {
		bv.hard = &configError{"InvalidDestination", "port is required in backendRef"}
		bv.Why = bv.hard.Message
		return nil, bv
	}
	bv.Cluster = ClusterName(bv.Port, "", bv.Host)
	if isService && bv.Invalid == "" && bv.Unknown == "" {
		if sd := c.Services[bv.Host]; sd != nil && !servicePortExists(sd, bv.Port) {
			bv.Invalid, bv.Why = BackendPortMissing, fmt.Sprintf("Service %s/%s has no port %d (its ports: %s): istiod keeps ResolvedRefs True and routes to cluster %s, which it never builds", ns, to.Name, bv.Port, servicePorts(sd), bv.Cluster)
		}
	}
	return &networkingv1alpha3.Destination{Host: bv.Host, Port: &networkingv1alpha3.PortSelector{Number: uint32(bv.Port)}}, bv
}

// hostnameService is the Service or ServiceEntry host istiod finds for a
// Hostname backendRef, "" for none.
func (c *Config) hostnameService(host, ns string) string {
	if sd := c.Services[host]; sd != nil && sd.Service != nil {
		return host
	}
	for _, se := range c.ServiceEntries {
		if ServiceEntryDeclares(se, host) && c.ServiceEntryExportedTo(se, ns) {
			return host
		}
	}
	return ""
}

func servicePortExists(sd *ServiceData, port int32) bool {
	if sd.Service == nil {
		return true
	}
	for _, p := range sd.Service.Spec.Ports {
		if p.Port == port {
			return true
		}
	}
	return false
}

func servicePorts(sd *ServiceData) string {
	var ports []string
	for _, p := range sd.Service.Spec.Ports {
		tp := p.TargetPort.String()
		if tp == "0" || tp == "" {
			tp = strconv.Itoa(int(p.Port))
		}
		ports = append(ports, fmt.Sprintf("%d→%s", p.Port, tp))
	}
	return strings.Join(ports, ", ")
}

// httpMatchOf is createURIMatch and its siblings for one match.
func httpMatchOf(m gatewayv1.HTTPRouteMatch) []*networkingv1alpha3.HTTPMatchRequest {
	uri := &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Prefix{Prefix: "/"}}
	if p := m.Path; p != nil {
		value := "/"
		if p.Value != nil {
			value = *p.Value
		}
		switch {
		case p.Type != nil && *p.Type == gatewayv1.PathMatchExact:
			uri = &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Exact{Exact: value}}
		case p.Type != nil && *p.Type == gatewayv1.PathMatchRegularExpression:
			uri = &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Regex{Regex: value}}
		default:
			if value != "/" {
				value = strings.TrimSuffix(value, "/")
			}
			uri = &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Prefix{Prefix: value}}
		}
	}
	out := &networkingv1alpha3.HTTPMatchRequest{Uri: uri}
	for _, h := range m.Headers {
		if out.Headers == nil {
			out.Headers = map[string]*networkingv1alpha3.StringMatch{}
		}
		out.Headers[strings.ToLower(string(h.Name))] = stringMatchOf(h.Type != nil && *h.Type == gatewayv1.HeaderMatchRegularExpression, h.Value)
	}
	for _, q := range m.QueryParams {
		if out.QueryParams == nil {
			out.QueryParams = map[string]*networkingv1alpha3.StringMatch{}
		}
		out.QueryParams[string(q.Name)] = stringMatchOf(q.Type != nil && *q.Type == gatewayv1.QueryParamMatchRegularExpression, q.Value)
	}
	if m.Method != nil {
		out.Method = &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Exact{Exact: string(*m.Method)}}
	}
	return []*networkingv1alpha3.HTTPMatchRequest{out}
}

// grpcMatchOf is createGRPCURIMatch: a method match becomes a path.
func grpcMatchOf(m gatewayv1.GRPCRouteMatch) []*networkingv1alpha3.HTTPMatchRequest {
	out := &networkingv1alpha3.HTTPMatchRequest{}
	if mm := m.Method; mm != nil {
		svc, method := "", ""
		if mm.Service != nil {
			svc = *mm.Service
		}
		if mm.Method != nil {
			method = *mm.Method
		}
		switch {
		case svc != "" && method != "":
			out.Uri = &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Exact{Exact: "/" + svc + "/" + method}}
		case svc != "":
			out.Uri = &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Prefix{Prefix: "/" + svc + "/"}}
		case method != "":
			out.Uri = &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Regex{Regex: "/[^/]+/" + method}}
		}
	}
	for _, h := range m.Headers {
		if out.Headers == nil {
			out.Headers = map[string]*networkingv1alpha3.StringMatch{}
		}
		out.Headers[strings.ToLower(string(h.Name))] = stringMatchOf(h.Type != nil && *h.Type == gatewayv1.GRPCHeaderMatchRegularExpression, h.Value)
	}
	if out.Uri == nil && out.Headers == nil {
		return nil
	}
	return []*networkingv1alpha3.HTTPMatchRequest{out}
}

func stringMatchOf(regex bool, v string) *networkingv1alpha3.StringMatch {
	if regex {
		return &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Regex{Regex: v}}
	}
	return &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Exact{Exact: v}}
}

// sortHTTPRoutes is istiod's: routes with a match before those without;
// Exact over Prefix over Regex paths, longer first, a method match, more
// header matches, more query matches.
func sortHTTPRoutes(routes []*networkingv1alpha3.HTTPRoute) {
	sort.SliceStable(routes, func(i, j int) bool {
		if len(routes[i].GetMatch()) == 0 {
			return false
		} else if len(routes[j].GetMatch()) == 0 {
			return true
		}
		m1, m2 := routes[i].GetMatch()[0], routes[j].GetMatch()[0]
		r1, r2 := uriRank(m1), uriRank(m2)
		l1, l2 := uriLength(m1), uriLength(m2)
		switch {
		case r1 != r2:
			return r1 > r2
		case l1 != l2:
			return l1 > l2
		case (m1.GetMethod() == nil) != (m2.GetMethod() == nil):
			return m1.GetMethod() != nil
		case len(m1.GetHeaders()) != len(m2.GetHeaders()):
			return len(m1.GetHeaders()) > len(m2.GetHeaders())
		}
		return len(m1.GetQueryParams()) > len(m2.GetQueryParams())
	})
}

func uriRank(m *networkingv1alpha3.HTTPMatchRequest) int {
	switch m.GetUri().GetMatchType().(type) {
	case *networkingv1alpha3.StringMatch_Exact:
		return 3
	case *networkingv1alpha3.StringMatch_Prefix:
		return 2
	case *networkingv1alpha3.StringMatch_Regex:
		return 1
	}
	return -1
}

func uriLength(m *networkingv1alpha3.HTTPMatchRequest) int {
	u := m.GetUri()
	if u == nil {
		return 0
	}
	return len(u.GetExact()) + len(u.GetPrefix()) + len(u.GetRegex())
}

// derivedVirtualServices are the VirtualServices istiod makes of the
// Gateway API routes: for each parent listener that admits a route (or
// the mesh) and each of its hosts, one with gateway semantics, merged by
// parent and host, oldest route first (mergeHTTPRoutes). unknown says
// what the model could not decide.
func (c *Config) derivedVirtualServices() (out []*networkingv1.VirtualService, unknown []string) {
	type keyed struct {
		key string
		vs  *networkingv1.VirtualService
	}
	var base []keyed
	for _, r := range c.GatewayAPI.sortedRoutes() {
		parents := c.routeParents(r)
		var meshConv, gwConv *conversion
		for _, p := range parents {
			if p.Unknown != "" {
				unknown = append(unknown, r.Ref()+" parent "+p.Parent()+": "+p.Unknown)
			}
			if len(p.Listeners) == 0 {
				continue
			}
			conv := gwConv
			if p.Mesh {
				conv = meshConv
			}
			if conv == nil {
				cv := c.convertRoute(r, p.Mesh)
				conv = &cv
				if p.Mesh {
					meshConv = conv
				} else {
					gwConv = conv
				}
			}
			for _, b := range conv.backends {
				if b.Unknown != "" && b.Mesh == p.Mesh {
					unknown = append(unknown, b.String()+": "+b.Unknown)
				}
			}
			for _, listener := range p.Listeners {
				for _, h := range c.derivedHosts(r, p, listener) {
					key := listener + "/" + h
					http, tcp, tls := conv.http, conv.tcp, conv.tls
					if p.Mesh {
						key = r.Namespace
						if p.Port != 0 {
							key += "/" + strconv.Itoa(int(p.Port))
							http, tcp = withPortMatch(http, p.Port), withTCPPortMatch(tcp, p.Port)
						}
						key += "/" + h
					}
					if len(http)+len(tcp)+len(tls) == 0 {
						continue
					}
					vs := &networkingv1.VirtualService{
						ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name, CreationTimestamp: r.meta.GetCreationTimestamp(),
							Annotations: map[string]string{AnnotationRouteSemantic: semanticsGateway, annotationParents: r.Ref()}},
					}
					vs.Spec.Hosts, vs.Spec.Gateways = []string{h}, []string{listener}
					vs.Spec.Http, vs.Spec.Tcp, vs.Spec.Tls = cloneHTTPRoutes(http), tcp, tls
					if r.tcp != nil || r.tls != nil {
						key = "tcp/" + r.Namespace + "/" + r.Name + "/" + key
					}
					base = append(base, keyed{key, vs})
				}
			}
		}
	}
	merged := map[string]*networkingv1.VirtualService{}
	var order []string
	for _, b := range base {
		m := merged[b.key]
		if m == nil {
			b.vs.Name = strings.ReplaceAll(b.key, "/", "~")
			merged[b.key] = b.vs
			order = append(order, b.key)
			continue
		}
		m.Spec.Http = append(m.Spec.Http, b.vs.Spec.Http...)
		m.Annotations[annotationParents] += "," + b.vs.Annotations[annotationParents]
	}
	for _, k := range order {
		vs := merged[k]
		sortHTTPRoutes(vs.Spec.Http)
		out = append(out, vs)
	}
	return out, unknown
}

// annotationParents names the routes a derived VirtualService was made
// of (istiod's internal.istio.io/parents).
const annotationParents = "internal.istio.io/parents"

// derivedHosts are the hosts of the VirtualService a route gets for one
// parent listener: a Gateway parent's are the route's hostnames ("*"
// without), less those a more specific listener of the same port and
// protocol owns (hostnameAllowedByIsolation); a mesh parent's the
// Service's hostname (a ServiceEntry's hosts).
func (c *Config) derivedHosts(r apiRoute, p ParentVerdict, listener string) []string {
	if p.Mesh {
		if p.ParentKind == "ServiceEntry" {
			for _, se := range c.ServiceEntries {
				if se.Namespace == p.ParentNamespace && se.Name == p.ParentName {
					return se.Spec.GetHosts()
				}
			}
			return nil
		}
		return []string{ServiceHost(p.ParentName, p.ParentNamespace)}
	}
	hosts := []string{"*"}
	if len(r.Hostnames) > 0 {
		hosts = nil
		for _, h := range r.Hostnames {
			hosts = append(hosts, string(h))
		}
	}
	g := c.APIGateway(p.ParentNamespace, p.ParentName)
	var self *APIListener
	for i := range g.Listeners {
		if g.Listeners[i].Internal == listener {
			self = &g.Listeners[i]
		}
	}
	if self == nil {
		return hosts
	}
	if r.tls != nil && self.Hostname != "" {
		hosts = intersectHosts(hosts, []string{self.Hostname})
	}
	if r.tcp != nil {
		return []string{"*"}
	}
	var out []string
	for _, h := range hosts {
		if hostAllowedByIsolation(h, *self, g.Listeners) {
			out = append(out, h)
		}
	}
	return out
}

// hostAllowedByIsolation is istiod's hostnameAllowedByIsolation.
func hostAllowedByIsolation(routeHost string, self APIListener, listeners []APIListener) bool {
	ours := self.Hostname
	if ours != "" && !strings.HasPrefix(ours, "*") {
		return true
	}
	if ours != "" && !hostsOverlap(routeHost, ours) {
		return false
	}
	for _, other := range listeners {
		if other.Internal == self.Internal || other.NoServer || other.Port != self.Port || other.Protocol != self.Protocol {
			continue
		}
		if len(ours) > len(other.Hostname) {
			continue
		}
		if other.Hostname != ours && hostSubsetOf(routeHost, other.Hostname) {
			return false
		}
	}
	return true
}

// withPortMatch is augmentPortMatch: a mesh parent's port becomes a match
// on every route.
func withPortMatch(routes []*networkingv1alpha3.HTTPRoute, port int32) []*networkingv1alpha3.HTTPRoute {
	out := cloneHTTPRoutes(routes)
	for _, r := range out {
		if len(r.Match) == 0 {
			r.Match = []*networkingv1alpha3.HTTPMatchRequest{{}}
		}
		for _, m := range r.Match {
			m.Port = uint32(port)
		}
	}
	return out
}

func withTCPPortMatch(routes []*networkingv1alpha3.TCPRoute, port int32) []*networkingv1alpha3.TCPRoute {
	out := make([]*networkingv1alpha3.TCPRoute, 0, len(routes))
	for _, r := range routes {
		cp := &networkingv1alpha3.TCPRoute{Route: r.Route}
		cp.Match = []*networkingv1alpha3.L4MatchAttributes{{Port: uint32(port)}}
		out = append(out, cp)
	}
	return out
}

func cloneHTTPRoutes(in []*networkingv1alpha3.HTTPRoute) []*networkingv1alpha3.HTTPRoute {
	out := make([]*networkingv1alpha3.HTTPRoute, 0, len(in))
	for _, r := range in {
		out = append(out, r.DeepCopy())
	}
	return out
}
