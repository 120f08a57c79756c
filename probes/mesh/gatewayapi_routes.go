package mesh

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// apiRoute is a route of any of the four kinds, as istiod's conversion
// reads it (GetCommonRouteInfo).
type apiRoute struct {
	Kind            string
	Namespace, Name string
	Generation      int64
	ParentRefs      []gatewayv1.ParentReference
	Hostnames       []gatewayv1.Hostname
	StatusParents   []gatewayv1.RouteParentStatus
	meta            metav1.Object
	http            *gatewayv1.HTTPRoute
	grpc            *gatewayv1.GRPCRoute
	tls             *gatewayv1.TLSRoute
	tcp             *gatewayv1.TCPRoute
}

// Ref is "HTTPRoute namespace/name".
func (r apiRoute) Ref() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

func httpRouteOf(r *gatewayv1.HTTPRoute) apiRoute {
	return apiRoute{Kind: KindHTTPRoute, Namespace: r.Namespace, Name: r.Name, Generation: r.Generation, ParentRefs: r.Spec.ParentRefs,
		Hostnames: r.Spec.Hostnames, StatusParents: r.Status.Parents, meta: r, http: r}
}

func grpcRouteOf(r *gatewayv1.GRPCRoute) apiRoute {
	return apiRoute{Kind: KindGRPCRoute, Namespace: r.Namespace, Name: r.Name, Generation: r.Generation, ParentRefs: r.Spec.ParentRefs,
		Hostnames: r.Spec.Hostnames, StatusParents: r.Status.Parents, meta: r, grpc: r}
}

func tlsRouteOf(r *gatewayv1.TLSRoute) apiRoute {
	return apiRoute{Kind: KindTLSRoute, Namespace: r.Namespace, Name: r.Name, Generation: r.Generation, ParentRefs: r.Spec.ParentRefs,
		Hostnames: r.Spec.Hostnames, StatusParents: r.Status.Parents, meta: r, tls: r}
}

func tcpRouteOf(r *gatewayv1.TCPRoute) apiRoute {
	return apiRoute{Kind: KindTCPRoute, Namespace: r.Namespace, Name: r.Name, Generation: r.Generation, ParentRefs: r.Spec.ParentRefs,
		StatusParents: r.Status.Parents, meta: r, tcp: r}
}

// Reasons istiod writes on a route parent's Accepted condition
// (conditions.go), ranked as createRouteStatus collapses a parentRef's
// listeners: the least severe wins.
const (
	ReasonNoMatchingParent           = "NoMatchingParent"
	ReasonNotAllowedByListeners      = "NotAllowedByListeners"
	ReasonNoMatchingListenerHostname = "NoMatchingListenerHostname"
)

func parentReasonRank(reason string) int {
	switch reason {
	case "":
		return 0
	case ReasonNotAllowedByListeners:
		return 1
	case ReasonNoMatchingListenerHostname:
		return 2
	}
	return 4 // NoMatchingParent
}

// ParentVerdict is one parentRef of a route, judged as istiod's
// referenceAllowed judges it against each listener of the parent (or the
// mesh, for a Service parent), and what istiod wrote for it.
type ParentVerdict struct {
	Route                     string // "HTTPRoute namespace/name"
	RouteKind                 string
	RouteNamespace, RouteName string
	// ParentKind is Gateway, Service or ServiceEntry.
	ParentKind                  string
	ParentNamespace, ParentName string
	SectionName                 string
	Port                        int32
	// Mesh: a Service or ServiceEntry parent (GAMMA): the route applies to
	// sidecars and waypoints, not to a gateway.
	Mesh bool
	// Accepted: the model finds a listener (or the mesh) that admits it.
	// Reason and Message say why not, as istiod writes them.
	Accepted        bool
	Reason, Message string
	// NoStatus says why istiod writes no status at all for the parentRef
	// (the Gateway does not exist, is not istiod's, is a waypoint): the
	// route binds nothing there.
	NoStatus string
	// Listeners are the internal Istio Gateways (namespace/name) of the
	// listeners that admit it.
	Listeners []string
	// Unknown says why the model cannot decide ("" when it can).
	Unknown string
	// What istiod wrote for the parentRef, nil when it wrote nothing.
	StatusAccepted, StatusResolvedRefs *condition
	// Index is the parentRef's index in the route's spec.parentRefs.
	Index int
	ref   gatewayv1.ParentReference
}

// Parent names the parentRef: Gateway infra/public (listener https).
func (p ParentVerdict) Parent() string {
	s := p.ParentKind + " " + p.ParentNamespace + "/" + p.ParentName
	if p.SectionName != "" {
		s += " sectionName " + p.SectionName
	}
	if p.Port != 0 {
		s += fmt.Sprintf(" port %d", p.Port)
	}
	return s
}

// IstiodAccepted is istiod's Accepted for the parentRef where it wrote
// one at the route's generation, else the model's; fromStatus says which.
func (p ParentVerdict) IstiodAccepted() (accepted, fromStatus bool) {
	if st := p.StatusAccepted; st != nil && !st.Stale {
		return st.Status == string(metav1.ConditionTrue), true
	}
	return p.Accepted, false
}

// parentKindOf normalises a parentRef's group and kind (Gateway by
// default); "" for a kind istiod ignores.
func parentKindOf(ref gatewayv1.ParentReference) string {
	group, kind := gatewayv1.GroupName, "Gateway"
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	switch {
	case group == gatewayv1.GroupName && kind == "Gateway":
		return KindGateway
	case group == "" && kind == "Service":
		return "Service"
	case group == "networking.istio.io" && kind == "ServiceEntry":
		return "ServiceEntry"
	}
	return ""
}

// RouteParents judges every parentRef of route as istiod does
// (extractParentReferenceInfo, referenceAllowed, createRouteStatus).
func (c *Config) routeParents(r apiRoute) []ParentVerdict {
	var out []ParentVerdict
	for i, ref := range r.ParentRefs {
		kind := parentKindOf(ref)
		if kind == "" {
			continue // for another controller: istiod ignores it
		}
		v := ParentVerdict{Route: r.Ref(), RouteKind: r.Kind, RouteNamespace: r.Namespace, RouteName: r.Name,
			ParentKind: kind, ParentNamespace: r.Namespace, ParentName: string(ref.Name), Index: i, ref: ref}
		if ref.Namespace != nil {
			v.ParentNamespace = string(*ref.Namespace)
		}
		if ref.SectionName != nil {
			v.SectionName = string(*ref.SectionName)
		}
		if ref.Port != nil {
			v.Port = int32(*ref.Port)
		}
		if kind == KindGateway {
			c.judgeGatewayParent(r, &v)
		} else {
			c.judgeMeshParent(&v)
		}
		v.StatusAccepted, v.StatusResolvedRefs = routeParentStatus(r, ref)
		if kind == KindGateway {
			if g := c.APIGateway(v.ParentNamespace, v.ParentName); g != nil && g.StatusStale() {
				// The Gateway changed since istiod last wrote: what it
				// wrote for the route was judged on the Gateway before.
				markStale(v.StatusAccepted, v.StatusResolvedRefs)
			}
		}
		out = append(out, v)
	}
	return out
}

// judgeMeshParent: a Service (or ServiceEntry) parent is the mesh, which
// admits every route kind, once the Service exists.
func (c *Config) judgeMeshParent(v *ParentVerdict) {
	v.Mesh = true
	v.Listeners = []string{MeshGateway}
	if v.ParentKind == "ServiceEntry" {
		for _, se := range c.ServiceEntries {
			if se.Namespace == v.ParentNamespace && se.Name == v.ParentName {
				v.Accepted = true
				return
			}
		}
		if !c.RulesKnown(v.ParentNamespace) {
			v.Unknown = "the ServiceEntries of " + v.ParentNamespace + " were not read"
			return
		}
		v.Reason, v.Message = ReasonNoMatchingParent, fmt.Sprintf("parent service entry: %q not found", v.ParentName)
		return
	}
	host := ServiceHost(v.ParentName, v.ParentNamespace)
	switch exists, why := c.serviceExists(host); {
	case why != "":
		v.Unknown = why
	case exists:
		v.Accepted = true
	default:
		v.Reason, v.Message = ReasonNoMatchingParent, fmt.Sprintf("parent service: %q not found", v.ParentName)
	}
}

// judgeGatewayParent expands a Gateway parent into its listeners and
// judges the route against each, then collapses the results as the
// parentRef's one status.
func (c *Config) judgeGatewayParent(r apiRoute, v *ParentVerdict) {
	g := c.APIGateway(v.ParentNamespace, v.ParentName)
	if g == nil {
		if why := c.GatewayAPI.unknownWhy(KindGateway, v.ParentNamespace); why != "" {
			v.Unknown = why
			return
		}
		v.NoStatus = fmt.Sprintf("Gateway %s/%s does not exist: istiod writes no status for the parentRef and binds the route nowhere", v.ParentNamespace, v.ParentName)
		return
	}
	switch {
	case g.ClassUnknown != "":
		v.Unknown = g.ClassUnknown
		return
	case !g.Ours:
		v.NoStatus = fmt.Sprintf("Gateway %s has class %s (controller %q), not istiod's: istiod writes no status for the parentRef", g.Ref(), g.Class, g.Controller)
		return
	case g.Waypoint:
		v.NoStatus = fmt.Sprintf("Gateway %s is a waypoint (class %s): istiod turns no route of a waypoint parent into configuration and writes no status for it (a waypoint's routes name the Service as parent)", g.Ref(), g.Class)
		return
	}
	hostnames := r.Hostnames
	if len(hostnames) == 0 {
		hostnames = []gatewayv1.Hostname{"*"}
	}
	best, bestReason := 99, ""
	var messages []string
	var unknown []string
	for _, l := range g.Listeners {
		if l.NoServer {
			continue // no server, no route parent
		}
		reason, msg, why := c.referenceAllowed(r, g, l, v, hostnames)
		if why != "" {
			unknown = append(unknown, why)
			continue
		}
		if reason == "" {
			v.Listeners = append(v.Listeners, l.Internal)
		}
		switch rank := parentReasonRank(reason); {
		case rank < best:
			best, bestReason, messages = rank, reason, []string{msg}
		case rank == best && msg != "":
			messages = append(messages, msg)
		}
	}
	switch {
	case len(v.Listeners) > 0:
		v.Accepted = true
	case len(unknown) > 0:
		v.Unknown = strings.Join(unknown, "; ")
	case best == 99:
		v.NoStatus = fmt.Sprintf("Gateway %s has no listener istiod makes a server of: the route has no parent there", g.Ref())
	default:
		v.Reason, v.Message = bestReason, strings.Join(messages, "; ")
	}
}

// referenceAllowed is istiod's for a Gateway listener: port, then
// sectionName, then the hostnames (bi-directional wildcard match, the
// listener admitting the route's namespace), then the route kind. why is
// set when what decides is not known.
func (c *Config) referenceAllowed(r apiRoute, g *APIGateway, l APIListener, v *ParentVerdict, hostnames []gatewayv1.Hostname) (reason, message, why string) {
	if v.Port != 0 && v.Port != l.Port {
		return ReasonNoMatchingParent, fmt.Sprintf("port %d not found", v.Port), ""
	}
	if v.SectionName != "" && v.SectionName != l.Name {
		return ReasonNoMatchingParent, fmt.Sprintf("sectionName %q not found", v.SectionName), ""
	}
	listenerHost := l.Hostname
	if listenerHost == "" {
		listenerHost = "*"
	}
	hostMatched := false
	for _, h := range hostnames {
		hostMatched = hostMatched || hostsOverlap(listenerHost, string(h))
	}
	admitted, known := l.admits(c, g.Namespace, r.Namespace)
	switch {
	case !hostMatched:
		return ReasonNoMatchingListenerHostname, fmt.Sprintf("no hostnames matched parent hostname %q", l.Hostname), ""
	case !known:
		return "", "", fmt.Sprintf("%s admits namespaces by selector and the labels of namespace %s were not read", l.Ref(), r.Namespace)
	case !admitted:
		return ReasonNotAllowedByListeners, fmt.Sprintf("hostnames matched parent hostname %q, but namespace %q is not allowed by the parent", l.Hostname, r.Namespace), ""
	case !l.allowsKind(r.Kind):
		return ReasonNotAllowedByListeners, fmt.Sprintf("kind %s is not allowed", r.Kind), ""
	}
	return "", "", ""
}

// hostsOverlap is host.Name.Matches: either name covers the other.
func hostsOverlap(a, b string) bool {
	return hostSubsetOf(a, b) || hostSubsetOf(b, a)
}

// routeParentStatus finds what istiod wrote for ref among the route's
// status parents (its own controller's only), at the route's generation.
func routeParentStatus(r apiRoute, ref gatewayv1.ParentReference) (accepted, resolvedRefs *condition) {
	want := parentRefKey(ref, r.Namespace)
	for _, p := range r.StatusParents {
		if string(p.ControllerName) != ControllerIstio || parentRefKey(p.ParentRef, r.Namespace) != want {
			continue
		}
		return conditionOf(p.Conditions, string(gatewayv1.RouteConditionAccepted), r.Generation),
			conditionOf(p.Conditions, string(gatewayv1.RouteConditionResolvedRefs), r.Generation)
	}
	return nil, nil
}

// parentRefKey is parentRefString: a parentRef with its defaults filled.
func parentRefKey(ref gatewayv1.ParentReference, ns string) string {
	group, kind := gatewayv1.GroupName, "Gateway"
	if ref.Group != nil {
		group = string(*ref.Group)
	}
	if ref.Kind != nil {
		kind = string(*ref.Kind)
	}
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	s := fmt.Sprintf("%s/%s/%s/%s", group, kind, ns, ref.Name)
	if ref.SectionName != nil {
		s += "/" + string(*ref.SectionName)
	}
	if ref.Port != nil {
		s += fmt.Sprintf(":%d", *ref.Port)
	}
	return s
}

// serviceExists says whether the Service with hostname host exists, as
// far as what was read tells: why is set when it is not known.
func (c *Config) serviceExists(host string) (exists bool, why string) {
	if sd := c.Services[host]; sd != nil && sd.Service != nil {
		return true, ""
	}
	if w := c.ServicesUnknown[host]; w != "" {
		return false, w
	}
	if c.AllServices || c.ServicesAbsent[host] {
		return false, ""
	}
	return false, "the Service " + host + " was not read"
}

// grantAllows is ReferenceGrants' BackendAllowed and SecretAllowed: a
// ReferenceGrant in toNamespace lets fromKind objects of fromNamespace
// refer to toKind (name, or any). known is false when the
// ReferenceGrants of toNamespace were not read.
func (c *Config) grantAllows(fromKind, fromNamespace, toKind, toNamespace, name string) (allowed, known bool) {
	g := c.GatewayAPI
	if !g.Known(KindReferenceGrant, toNamespace) {
		return false, false
	}
	for _, rg := range g.ReferenceGrants {
		if rg.Namespace != toNamespace {
			continue
		}
		from := false
		for _, f := range rg.Spec.From {
			from = from || string(f.Group) == gatewayv1.GroupName && string(f.Kind) == fromKind && string(f.Namespace) == fromNamespace
		}
		if !from {
			continue
		}
		for _, t := range rg.Spec.To {
			if string(t.Group) == "" && string(t.Kind) == toKind && (t.Name == nil || string(*t.Name) == name) {
				return true, true
			}
		}
	}
	return false, true
}

// RouteVerdict is a route as the model reads it for a triage: its
// parents and its backends.
type RouteVerdict struct {
	Route           string // "HTTPRoute namespace/name"
	Kind            string
	Namespace, Name string
	Parents         []ParentVerdict
	// Backends are its backendRefs (and mirrors) judged, for the gateway's
	// parents and, separately, for the mesh's (which enforce no
	// ReferenceGrant).
	Backends []BackendVerdict
	// Hard is a conversion error that leaves the route without any route
	// ("" when none): istiod writes ResolvedRefs False and builds nothing.
	Hard, HardReason string
}

// APIRoutes are every Gateway API route read, judged, oldest first.
func (c *Config) APIRoutes() []RouteVerdict {
	var out []RouteVerdict
	for _, r := range c.GatewayAPI.sortedRoutes() {
		out = append(out, c.routeVerdict(r))
	}
	return out
}

func (c *Config) routeVerdict(r apiRoute) RouteVerdict {
	v := RouteVerdict{Route: r.Ref(), Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Parents: c.routeParents(r)}
	mesh, gateway := false, false
	for _, p := range v.Parents {
		mesh, gateway = mesh || p.Mesh, gateway || !p.Mesh
	}
	if !mesh && !gateway {
		gateway = true // no parent: its backends are still worth judging
	}
	for _, forMesh := range []bool{false, true} {
		if forMesh && !mesh || !forMesh && !gateway {
			continue
		}
		conv := c.convertRoute(r, forMesh)
		if conv.hard != nil {
			v.Hard, v.HardReason = conv.hard.Message, conv.hard.Reason
		}
		for _, b := range conv.backends {
			v.Backends = append(v.Backends, b.BackendVerdict)
		}
	}
	return v
}

// sortedParentVerdicts orders verdicts by route, then parent.
func sortedParentVerdicts(in []ParentVerdict) []ParentVerdict {
	out := append([]ParentVerdict(nil), in...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Route != out[j].Route {
			return out[i].Route < out[j].Route
		}
		return out[i].Parent() < out[j].Parent()
	})
	return out
}
