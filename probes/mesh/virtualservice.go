package mesh

import (
	"fmt"
	"sort"
	"strings"

	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
)

// Route is one route of the caller's proxy for the Service port: a
// VirtualService route, or Istio's default route to the Service itself.
type Route struct {
	// VirtualService is namespace/name, "" for the default route.
	VirtualService string
	// Name says which route of it: "http[0] (match uri prefix /api)".
	Name string
	// CatchAll: no match condition, so it takes every request that no
	// earlier route took.
	CatchAll     bool
	Destinations []Destination
	// Mirrors get a copy of each request; their answers are dropped, so
	// they never fail the caller's request.
	Mirrors []Destination
	// EnvoyName is the route's name in Envoy and access logs (route_name)
	// where istiod names it: a Gateway API rule's ("" otherwise).
	EnvoyName string
	// ClusterNotFound is what Envoy answers when the route's cluster does
	// not exist: 500 for a Gateway API route (gateway semantics), 503
	// (0) otherwise.
	ClusterNotFound int
}

// semanticRoute names a route of a Gateway API route's VirtualService as
// istiod does, and gives it the 500 istiod sets for a missing cluster.
func semanticRoute(vs *networkingv1.VirtualService, h *networkingv1alpha3.HTTPRoute, r *Route) {
	if !gatewaySemantics(vs) {
		return
	}
	r.EnvoyName, r.ClusterNotFound = h.GetName(), 500
	if parents := vs.Annotations[annotationParents]; parents != "" {
		r.VirtualService = parents // the routes it was made of, not istiod's internal name
	}
	if h.GetName() != "" {
		r.Name = h.GetName() + strings.TrimPrefix(r.Name, fmt.Sprintf("http[%d]", indexOfRoute(vs, h)))
	}
}

func indexOfRoute(vs *networkingv1.VirtualService, h *networkingv1alpha3.HTTPRoute) int {
	for i, x := range vs.Spec.GetHttp() {
		if x == h {
			return i
		}
	}
	return -1
}

// Destination is one weighted destination of a route.
type Destination struct {
	Host   string // FQDN as resolved
	Subset string
	Port   int32
	// Percent is the share of the route's requests it gets.
	Percent int
	Cluster string
	// PortNamed: the route names the port; otherwise Port is the
	// listener's, which istiod may replace (see Config.resolveDestination).
	PortNamed bool
}

// ClusterName is Envoy's name for a cluster: outbound|PORT|SUBSET|HOST.
func ClusterName(port int32, subset, host string) string {
	return fmt.Sprintf("outbound|%d|%s|%s", port, subset, host)
}

// Port protocols that decide which VirtualService routes apply.
const (
	ProtocolHTTP = "http"
	ProtocolTCP  = "tcp"
	ProtocolTLS  = "tls"
	// ProtocolUDP: istiod builds no listener and no cluster for a UDP
	// port; the sidecar never sees its traffic.
	ProtocolUDP = "udp"
)

// PortProtocol is the kind of routes istiod gives a Service port, from
// its reading of the port (ReadPortProtocol): HTTP routes for HTTP, HTTP2,
// gRPC, gRPC-Web and HTTP_PROXY, and for a port it sniffs (both an HTTP
// and a TCP chain, the HTTP routes taking what the sniffer reads as HTTP:
// the 503s this tool triages are HTTP); TCP routes for TCP, MySQL, Mongo
// and Redis; TLS routes for HTTPS and TLS; none for UDP.
func PortProtocol(sp corev1.ServicePort) string {
	proto, _ := portProtocol(sp)
	return proto
}

// PortSniffed reports a port whose protocol istiod detects per connection:
// its listener is the Service's own (CLUSTERIP_PORT, or one per endpoint
// address for a headless Service) with a route configuration HOST:PORT
// whose one virtual host takes every domain.
func PortSniffed(sp corev1.ServicePort) bool {
	_, sniffed := portProtocol(sp)
	return sniffed
}

func portProtocol(sp corev1.ServicePort) (proto string, sniffed bool) {
	switch ReadPortProtocol(sp).Protocol {
	case "TCP", "Mongo", "Redis", "MySQL":
		return ProtocolTCP, false
	case "HTTPS", "TLS":
		return ProtocolTLS, false
	case "UDP":
		return ProtocolUDP, false
	case ProtocolSniffed:
		return ProtocolHTTP, true
	}
	return ProtocolHTTP, false
}

// PortReading is istiod's reading of a Service port.
type PortReading struct {
	// Protocol is Istio's name for it (pkg/config/protocol.Instance):
	// HTTP, HTTP2, GRPC, GRPC-Web, HTTP_PROXY, HTTPS, TLS, TCP, Mongo,
	// Redis, MySQL, UDP; ProtocolSniffed when istiod cannot name it and
	// the proxies detect it per connection.
	Protocol string
	// DeclaredBy says what named it: DeclaredByAppProtocol,
	// DeclaredByName, DeclaredByPortNumber (a well-known server-first
	// port), DeclaredByKubernetes (a UDP port), or DeclaredByNone.
	DeclaredBy string
}

// What named a port's protocol (PortReading.DeclaredBy).
const (
	DeclaredByAppProtocol = "appProtocol"
	DeclaredByName        = "name"
	DeclaredByPortNumber  = "port number"
	DeclaredByKubernetes  = "protocol UDP"
	DeclaredByNone        = "none"
	// ProtocolSniffed is PortReading.Protocol for a port istiod sniffs.
	ProtocolSniffed = "sniffed"
)

// wellKnownServerFirstPorts are the ports istiod reads as TCP when
// nothing names their protocol: SMTP, DNS, MySQL and MongoDB, whose
// servers speak first and which sniffing would break (ConvertProtocol's
// wellKnownPorts).
var wellKnownServerFirstPorts = map[int32]string{25: "SMTP", 53: "DNS", 3306: "MySQL", 27017: "MongoDB"}

// ReadPortProtocol reads a Service port as istiod does
// (pkg/config/kube.ConvertProtocol): a UDP port is UDP; else appProtocol
// when set, even empty (with Kubernetes' kubernetes.io/h2c as HTTP2,
// kubernetes.io/ws as HTTP and kubernetes.io/wss as HTTPS), else the port
// name; a grpc-web prefix is gRPC-Web, otherwise the part before the first
// "-" names the protocol, case aside; a name Istio does not know is
// sniffed, except on ports 25, 53, 3306 and 27017, which are TCP.
func ReadPortProtocol(sp corev1.ServicePort) PortReading {
	if sp.Protocol == corev1.ProtocolUDP {
		return PortReading{Protocol: "UDP", DeclaredBy: DeclaredByKubernetes}
	}
	name, by := sp.Name, DeclaredByName
	if sp.AppProtocol != nil {
		name, by = *sp.AppProtocol, DeclaredByAppProtocol
		switch name {
		case "kubernetes.io/h2c":
			return PortReading{Protocol: "HTTP2", DeclaredBy: by}
		case "kubernetes.io/ws":
			return PortReading{Protocol: "HTTP", DeclaredBy: by}
		case "kubernetes.io/wss":
			return PortReading{Protocol: "HTTPS", DeclaredBy: by}
		}
	}
	if len(name) >= len("grpc-web") && strings.EqualFold(name[:len("grpc-web")], "grpc-web") {
		return PortReading{Protocol: "GRPC-Web", DeclaredBy: by}
	}
	prefix, _, _ := strings.Cut(name, "-")
	if p, ok := istioProtocols[strings.ToLower(prefix)]; ok {
		return PortReading{Protocol: p, DeclaredBy: by}
	}
	if _, ok := wellKnownServerFirstPorts[sp.Port]; ok {
		return PortReading{Protocol: "TCP", DeclaredBy: DeclaredByPortNumber}
	}
	return PortReading{Protocol: ProtocolSniffed, DeclaredBy: DeclaredByNone}
}

// istioProtocols are the names protocol.Parse knows, lower case, but
// grpc-web, whose "-" the prefix never holds (read before).
var istioProtocols = map[string]string{
	"tcp": "TCP", "udp": "UDP", "grpc": "GRPC", "http": "HTTP", "http_proxy": "HTTP_PROXY",
	"http2": "HTTP2", "https": "HTTPS", "tls": "TLS", "mongo": "Mongo", "redis": "Redis", "mysql": "MySQL",
}

// vsCandidate is a VirtualService that may route a host for a caller.
type vsCandidate struct {
	vs          *networkingv1.VirtualService
	tier        int // 0 private, 1 exported by name, 2 public
	specificity int
	// consumer: a Gateway API mesh route of the caller's namespace, which
	// istiod takes before the others of its tier (SelectVirtualServices).
	consumer bool
}

// VirtualServicesFor picks the VirtualService that routes host for the
// caller's sidecar, as istiod does: candidates bind to sidecars (no
// gateways, or "mesh"), and come in the order private to the caller's
// namespace, then exported to it by name, then public (each oldest first);
// the caller's Sidecar egress hosts filter them by namespace; among those
// whose hosts cover the host, the most specific host claims it (exact over
// wildcard) and the first in that order wins whole: several VirtualServices
// for one host are never merged for sidecars. Every VirtualService naming
// the host gets a verdict.
func (c *Config) VirtualServicesFor(caller Caller, host string) (*networkingv1.VirtualService, []RuleVerdict) {
	winner, verdicts, _, _ := c.virtualServicesFor(caller, host)
	return winner, verdicts
}

func (c *Config) virtualServicesFor(caller Caller, host string) (*networkingv1.VirtualService, []RuleVerdict, []vsCandidate, *networkingv1.Sidecar) {
	var verdicts []RuleVerdict
	sc, _ := c.SidecarFor(caller)
	var candidates []vsCandidate
	all, _ := c.allVirtualServices()
	for _, vs := range all {
		semantic := gatewaySemantics(vs)
		if semantic && !bindsSidecars(vs.Spec.GetGateways()) {
			continue // a Gateway API route of a gateway: the gateway's binding judges it
		}
		hosts := vs.Spec.GetHosts()
		best, near := -1, ""
		for _, h := range hosts {
			if HostCovers(h, vs.Namespace, host) && hostSpecificity(h, vs.Namespace) > best {
				best = hostSpecificity(h, vs.Namespace)
			}
			if svc, rest, ok := strings.Cut(host, "."); ok && NearMiss(h, svc, strings.SplitN(rest, ".", 2)[0]) {
				near = h
			}
		}
		v := RuleVerdict{Kind: "VirtualService", Namespace: vs.Namespace, Name: vs.Name, Host: strings.Join(hosts, ",")}
		if semantic {
			v.Kind, v.Name = "mesh route", vs.Annotations[annotationParents]
		}
		tier, visible := c.vsTier(vs, caller.Namespace)
		switch {
		case semantic && best >= 0 && vs.Namespace != caller.Namespace && vs.Namespace != hostNamespace(host):
			// buildSidecarVirtualHostsForVirtualService: a mesh route
			// binds the Service's namespace (producer) or the caller's
			// (consumer), no other.
			v.Why = "a Gateway API mesh route of namespace " + vs.Namespace + ": istiod applies one only in the Service's namespace or the caller's"
		case best < 0 && near != "":
			v.Why = fmt.Sprintf("never applies: Istio does not complete host %q, use %s", near, host)
		case best < 0:
			continue
		case !bindsSidecars(vs.Spec.GetGateways()):
			v.Why = "bound to gateways " + strings.Join(vs.Spec.GetGateways(), ",") + " only, not to sidecars (add \"mesh\" to gateways)"
		case !visible:
			v.Why = fmt.Sprintf("not exported to namespace %s (exportTo %s)", caller.Namespace, strings.Join(c.vsExportTo(vs), ","))
		case !egressImportsVS(sc, vs, caller.Namespace):
			v.Why = "the caller's Sidecar " + sc.Namespace + "/" + sc.Name + " egress hosts do not import VirtualServices of " + vs.Namespace + " for these hosts"
		default:
			candidates = append(candidates, vsCandidate{vs: vs, tier: tier, specificity: best, consumer: semantic && vs.Namespace == caller.Namespace})
			v.Applies = true
		}
		verdicts = append(verdicts, v)
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.specificity != b.specificity {
			return a.specificity > b.specificity
		}
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		if a.consumer != b.consumer {
			return a.consumer
		}
		if !a.vs.CreationTimestamp.Equal(&b.vs.CreationTimestamp) {
			return a.vs.CreationTimestamp.Before(&b.vs.CreationTimestamp)
		}
		if a.vs.Name != b.vs.Name {
			return a.vs.Name < b.vs.Name
		}
		return a.vs.Namespace < b.vs.Namespace
	})
	var winner *networkingv1.VirtualService
	if len(candidates) > 0 {
		winner = candidates[0].vs
	}

	for i := range verdicts {
		switch {
		case !verdicts[i].Applies:
		case winner != nil && verdicts[i].Ref() == winner.Namespace+"/"+winner.Name:
			verdicts[i].Why = "applies"
		default:
			verdicts[i].Applies = false
			verdicts[i].Why = "shadowed by " + winner.Namespace + "/" + winner.Name + " (one VirtualService per host for a sidecar: the most specific host, then private to the caller's namespace, exported to it, public, oldest first)"
		}
	}
	sort.SliceStable(verdicts, func(i, j int) bool {
		if verdicts[i].Applies != verdicts[j].Applies {
			return verdicts[i].Applies
		}
		return verdicts[i].Ref() < verdicts[j].Ref()
	})
	return winner, verdicts, candidates, sc
}

// VirtualServicesThatMayRoute are the VirtualServices that may write the
// caller's routes for host on some port: every one the caller's sidecar
// imports whose hosts cover host, in istiod's order. The one that routes a
// port need not be the first (httpVirtualServiceFor, tcpVirtualServiceFor),
// so a triage reads the Services all of them send to.
func (c *Config) VirtualServicesThatMayRoute(caller Caller, host string) []*networkingv1.VirtualService {
	_, _, candidates, _ := c.virtualServicesFor(caller, host)
	out := make([]*networkingv1.VirtualService, len(candidates))
	for i, cand := range candidates {
		out[i] = cand.vs
	}
	return out
}

// httpVirtualServiceFor is the VirtualService whose routes istiod writes
// into the caller's virtual host for host on an HTTP port. istiod builds a
// virtual host from every VirtualService of the caller's egress listener,
// in its order (private, exported, public; oldest first), that yields a
// route for the caller on the port (BuildSidecarVirtualHostWrapper: one
// whose routes are all on another port or for other callers writes none),
// and the first virtual host for the host stands (BuildSidecarOutbound-
// VirtualHosts drops a duplicate). A VirtualService takes the Service when
// it names the host exactly, or, with a wildcard, when it is the one
// MostSpecificWildcardVirtualServiceIndex picks: the first of the most
// specific host, and none when an exact one exists. So with exact hosts
// the first that yields a route wins; a wildcard one that yields none
// leaves the Service Istio's default route, as does an exact one when no
// other exact one yields a route. The verdicts of the first choice are
// rewritten when it yields none.
func (c *Config) httpVirtualServiceFor(caller Caller, host string, port int32, proto string, first *networkingv1.VirtualService, verdicts []RuleVerdict) (*networkingv1.VirtualService, []RuleVerdict) {
	if first == nil || len(RoutesFor(first, caller, port, proto)) > 0 {
		return first, verdicts
	}
	_, _, candidates, _ := c.virtualServicesFor(caller, host)
	var winner *networkingv1.VirtualService
	routeless := map[string]bool{} // exact ones before the winner: no route for the caller here
	for _, cand := range candidates {
		if cand.specificity != exactHost {
			break // only the first wildcard one takes the Service, and it yields no route
		}
		if len(RoutesFor(cand.vs, caller, port, proto)) > 0 {
			winner = cand.vs
			break
		}
		routeless[cand.vs.Namespace+"/"+cand.vs.Name] = true
	}
	routeless[first.Namespace+"/"+first.Name] = true
	out := append([]RuleVerdict(nil), verdicts...)
	for i := range out {
		switch ref := out[i].Ref(); {
		case winner != nil && ref == winner.Namespace+"/"+winner.Name:
			out[i].Applies, out[i].Why = true, "applies: the first VirtualService naming the host, in istiod's order, with a route for the caller on the port"
		case routeless[ref]:
			out[i].Applies = false
			out[i].Why = "no route of it is for the caller on this port, so it writes no virtual host here"
			if winner == nil {
				out[i].Why += ": the Service keeps Istio's default route"
			}
		case winner != nil && strings.HasPrefix(out[i].Why, "shadowed"):
			out[i].Why = "shadowed by " + winner.Namespace + "/" + winner.Name + " (the first VirtualService naming the host with a route for the caller on this port)"
		}
	}
	return winner, out
}

// tcpVirtualServiceFor picks the VirtualService whose TCP route takes the
// caller's connections to host on port, as istiod builds a TCP listener's
// filter chain (buildSidecarOutboundTCPFilterChainOpts): among the
// VirtualServices the caller's sidecar imports whose hosts match host
// (wildcards as much as exact names: no most specific one), in istiod's
// order (private to the caller's namespace, exported to it, public; each
// oldest first), the first with a TCP route for the port. One without TCP
// routes shadows nothing. The verdicts of an HTTP choice are rewritten.
func (c *Config) tcpVirtualServiceFor(caller Caller, host string, port int32, verdicts []RuleVerdict) (*networkingv1.VirtualService, []RuleVerdict) {
	_, _, candidates, _ := c.virtualServicesFor(caller, host)
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		if !a.vs.CreationTimestamp.Equal(&b.vs.CreationTimestamp) {
			return a.vs.CreationTimestamp.Before(&b.vs.CreationTimestamp)
		}
		if a.vs.Name != b.vs.Name {
			return a.vs.Name < b.vs.Name
		}
		return a.vs.Namespace < b.vs.Namespace
	})
	var winner *networkingv1.VirtualService
	for _, cand := range candidates {
		for _, t := range cand.vs.Spec.GetTcp() {
			if len(t.GetRoute()) > 0 && l4Match(t.GetMatch(), port) {
				winner = cand.vs
				break
			}
		}
		if winner != nil {
			break
		}
	}
	out := append([]RuleVerdict(nil), verdicts...)
	for i := range out {
		switch {
		case winner != nil && out[i].Ref() == winner.Namespace+"/"+winner.Name:
			out[i].Applies, out[i].Why = true, "applies: the first VirtualService with a TCP route for the port, in istiod's order"
		case out[i].Applies || strings.HasPrefix(out[i].Why, "shadowed"):
			out[i].Applies = false
			out[i].Why = "no TCP route of it takes the port first (a TCP port takes the first VirtualService with a TCP route for it: private, exported, public, oldest first)"
		}
	}
	return winner, out
}

// VirtualServiceUnknown says why the VirtualService that routes host for
// the caller is not certain: the rules were not read in every namespace,
// and one of a namespace not read could win. "" when it is certain.
func (c *Config) VirtualServiceUnknown(caller Caller, host string) string {
	winner, _, _, _ := c.virtualServicesFor(caller, host)
	return c.routesUnknown(caller, host, winner)
}

// routesUnknown is VirtualServiceUnknown for the VirtualService that
// routes host on a port (nil: Istio's default route), which need not be the
// first VirtualService for the host (httpVirtualServiceFor,
// tcpVirtualServiceFor).
func (c *Config) routesUnknown(caller Caller, host string, routed *networkingv1.VirtualService) string {
	if c.RulesRead == nil {
		return ""
	}
	_, _, candidates, sc := c.virtualServicesFor(caller, host)
	if c.noUnreadVSApplies(sc, caller, routed, candidates) {
		return ""
	}
	routes := "Istio's default route"
	if routed != nil {
		routes = "VirtualService " + routed.Namespace + "/" + routed.Name
	}
	return fmt.Sprintf("%s routes %s among the rules read; a VirtualService of a namespace not read, exported to %s, could take the host", routes, host, caller.Namespace)
}

// noUnreadVSApplies: with rules read in some namespaces only, no
// VirtualService of another could take the host from the one that routes
// it: that one is an exact host private to the caller's namespace (nothing
// ranks above it; with Istio's default route, one of a namespace not read
// could still yield a route), or the caller's Sidecar imports
// VirtualServices only from namespaces that were read.
func (c *Config) noUnreadVSApplies(sc *networkingv1.Sidecar, caller Caller, routed *networkingv1.VirtualService, candidates []vsCandidate) bool {
	for _, cand := range candidates {
		if cand.vs == routed && cand.tier == 0 && cand.specificity == exactHost {
			return true
		}
	}
	if sc == nil || len(sc.Spec.GetEgress()) == 0 {
		return false
	}
	for _, eg := range sc.Spec.GetEgress() {
		for _, entry := range eg.GetHosts() {
			ns, _, ok := strings.Cut(entry, "/")
			if !ok || ns == "*" {
				return false
			}
			if ns == "." {
				ns = caller.Namespace
			}
			if ns != "~" && !c.RulesKnown(ns) {
				return false
			}
		}
	}
	return true
}

// vsExportTo is a VirtualService's exportTo, or the mesh default ("*").
func (c *Config) vsExportTo(vs *networkingv1.VirtualService) []string {
	if e := vs.Spec.GetExportTo(); len(e) > 0 {
		return e
	}
	if d := c.Mesh.Raw.GetDefaultVirtualServiceExportTo(); len(d) > 0 {
		return d
	}
	return []string{"*"}
}

// vsTier is where a VirtualService stands for callers of ns: 0 private to
// ns, 1 exported to ns by name, 2 public; visible is false when it is none.
func (c *Config) vsTier(vs *networkingv1.VirtualService, ns string) (tier int, visible bool) {
	set := c.vsExportTo(vs)
	switch {
	case contains(set, "*"):
		return 2, true
	case vs.Namespace == ns && containsAny(set, ".", ns):
		return 0, true
	case contains(set, ns):
		return 1, true
	}
	return 0, false
}

// egressImportsVS: without a Sidecar every VirtualService is imported;
// with one, an egress host of the VS's namespace (or "*", "." for the
// caller's) must match one of its hosts, either way round.
func egressImportsVS(sc *networkingv1.Sidecar, vs *networkingv1.VirtualService, callerNS string) bool {
	if sc == nil || len(sc.Spec.GetEgress()) == 0 {
		return true
	}
	for _, eg := range sc.Spec.GetEgress() {
		for _, entry := range eg.GetHosts() {
			ns, dns, ok := strings.Cut(entry, "/")
			if !ok {
				ns, dns = "*", entry
			}
			if ns == "." {
				ns = callerNS
			}
			if ns != "*" && ns != vs.Namespace {
				continue
			}
			for _, h := range vs.Spec.GetHosts() {
				h = ResolveHost(h, vs.Namespace)
				if dns == "*" || HostCovers(dns, vs.Namespace, h) || HostCovers(h, vs.Namespace, dns) {
					return true
				}
			}
		}
	}
	return false
}

func bindsSidecars(gateways []string) bool {
	if len(gateways) == 0 {
		return true
	}
	for _, g := range gateways {
		if g == "mesh" {
			return true
		}
	}
	return false
}

// weighted is an HTTP or a TCP/TLS route destination.
type weighted interface {
	GetDestination() *networkingv1alpha3.Destination
	GetWeight() int32
}

// RoutesOf are the routes of vs that serve port (a service port of
// protocol proto; 0 for every port), for any caller: a condition on the
// caller (source labels or namespace) is kept as a condition. Their
// destinations default to the same port.
func RoutesOf(vs *networkingv1.VirtualService, port int32, proto string) []Route {
	return routesFor(vs, nil, port, proto)
}

// RoutesFor are the routes istiod writes into the caller's sidecar for vs
// on port (BuildHTTPRoutesForVirtualService, TranslateRoute): a match
// condition naming another port is dropped, and so is one the caller does
// not satisfy (its sourceLabels, its sourceNamespace, or gateways that do
// not include "mesh"); a route none of whose conditions is left is not
// written. A condition left with nothing to test (no uri but prefix "/",
// no header, method, authority or query) takes every request, and istiod
// writes no route after it. A caller whose labels are not known keeps
// source-label conditions as conditions.
func RoutesFor(vs *networkingv1.VirtualService, caller Caller, port int32, proto string) []Route {
	return routesFor(vs, &caller, port, proto)
}

func routesFor(vs *networkingv1.VirtualService, caller *Caller, port int32, proto string) []Route {
	ref := vs.Namespace + "/" + vs.Name
	var out []Route
	switch proto {
	case ProtocolHTTP:
		for i, h := range vs.Spec.GetHttp() {
			var match string
			var ok, catchAll bool
			if caller == nil {
				match, ok = httpMatch(h.GetMatch(), port)
				catchAll = match == ""
			} else {
				match, catchAll, ok = sidecarHTTPMatch(h.GetMatch(), port, *caller)
			}
			if !ok {
				continue
			}
			r := Route{VirtualService: ref, Name: fmt.Sprintf("http[%d]%s", i, match), CatchAll: catchAll}
			semanticRoute(vs, h, &r)
			r.Destinations = destinations(h.GetRoute(), vs.Namespace, port)
			if m := h.GetMirror(); m != nil {
				r.Mirrors = append(r.Mirrors, destination(m, vs.Namespace, port, 100))
			}
			for _, m := range h.GetMirrors() {
				r.Mirrors = append(r.Mirrors, destination(m.GetDestination(), vs.Namespace, port, 100))
			}
			out = append(out, r)
			if caller != nil && catchAll {
				break // istiod writes no route after one that takes every request
			}
		}
	case ProtocolTCP:
		for i, t := range vs.Spec.GetTcp() {
			if !l4Match(t.GetMatch(), port) {
				continue
			}
			out = append(out, Route{VirtualService: ref, Name: fmt.Sprintf("tcp[%d]", i), CatchAll: len(t.GetMatch()) == 0,
				Destinations: destinations(t.GetRoute(), vs.Namespace, port)})
		}
	case ProtocolTLS:
		for i, t := range vs.Spec.GetTls() {
			out = append(out, Route{VirtualService: ref, Name: fmt.Sprintf("tls[%d]", i), CatchAll: len(t.GetMatch()) == 0,
				Destinations: destinations(t.GetRoute(), vs.Namespace, port)})
		}
	}
	return out
}

// sidecarHTTPMatch describes the match conditions of an HTTP route that
// istiod keeps for the caller's sidecar on port (see RoutesFor): ok is
// false when none is kept; catchAll when one kept takes every request.
func sidecarHTTPMatch(matches []*networkingv1alpha3.HTTPMatchRequest, port int32, caller Caller) (desc string, catchAll, ok bool) {
	if len(matches) == 0 {
		return "", true, true
	}
	var parts []string
	for _, m := range matches {
		if p := m.GetPort(); p != 0 && port != 0 && int32(p) != port {
			continue
		}
		var conds []string
		switch {
		case len(m.GetGateways()) > 0:
			// A match naming gateways binds to them alone, whatever its
			// source labels say (sourceMatchHTTP).
			if !contains(m.GetGateways(), "mesh") {
				continue
			}
		case !caller.labelsKnown() && (len(m.GetSourceLabels()) > 0 || m.GetSourceNamespace() != ""):
			conds = append(conds, "source labels or namespace (the caller's are not known)")
		case !LabelsMatch(m.GetSourceLabels(), caller.Labels) && len(m.GetSourceLabels()) > 0:
			continue
		case m.GetSourceNamespace() != "" && m.GetSourceNamespace() != caller.Namespace:
			continue
		}
		if u := m.GetUri(); u != nil && !(u.GetPrefix() == "/" || u.GetRegex() == ".*") {
			conds = append(conds, "uri "+stringMatch(u))
		}
		for k, v := range m.GetHeaders() {
			conds = append(conds, "header "+k+" "+stringMatch(v))
		}
		for k, v := range m.GetWithoutHeaders() {
			conds = append(conds, "without header "+k+" "+stringMatch(v))
		}
		for k, v := range m.GetQueryParams() {
			conds = append(conds, "query "+k+" "+stringMatch(v))
		}
		if a := m.GetAuthority(); a != nil {
			conds = append(conds, "authority "+stringMatch(a))
		}
		if mt := m.GetMethod(); mt != nil {
			conds = append(conds, "method "+stringMatch(mt))
		}
		if sc := m.GetScheme(); sc != nil {
			conds = append(conds, "scheme "+stringMatch(sc))
		}
		sort.Strings(conds)
		if len(conds) == 0 {
			// Nothing left to test: it takes every request on the port,
			// and istiod writes no route after it.
			return "", true, true
		}
		parts = append(parts, strings.Join(conds, " and "))
	}
	if len(parts) == 0 {
		return "", false, false
	}
	return " (match " + strings.Join(parts, " or ") + ")", false, true
}

// httpMatch describes the route's match conditions that apply to port; ok
// is false when every condition names another port.
func httpMatch(matches []*networkingv1alpha3.HTTPMatchRequest, port int32) (string, bool) {
	if len(matches) == 0 {
		return "", true
	}
	var parts []string
	for _, m := range matches {
		if p := m.GetPort(); p != 0 && port != 0 && int32(p) != port {
			continue
		}
		var conds []string
		if u := m.GetUri(); u != nil {
			conds = append(conds, "uri "+stringMatch(u))
		}
		for k, v := range m.GetHeaders() {
			conds = append(conds, "header "+k+" "+stringMatch(v))
		}
		if a := m.GetAuthority(); a != nil {
			conds = append(conds, "authority "+stringMatch(a))
		}
		if mt := m.GetMethod(); mt != nil {
			conds = append(conds, "method "+stringMatch(mt))
		}
		if len(m.GetSourceLabels()) > 0 {
			conds = append(conds, "source labels")
		}
		sort.Strings(conds)
		if len(conds) == 0 {
			// A condition on the port alone matches every request on it.
			return "", true
		}
		parts = append(parts, strings.Join(conds, " and "))
	}
	if len(parts) == 0 {
		return "", false
	}
	return " (match " + strings.Join(parts, " or ") + ")", true
}

func stringMatch(s *networkingv1alpha3.StringMatch) string {
	switch {
	case s.GetExact() != "":
		return "= " + s.GetExact()
	case s.GetPrefix() != "":
		return "prefix " + s.GetPrefix()
	case s.GetRegex() != "":
		return "~ " + s.GetRegex()
	}
	return "set"
}

func l4Match(matches []*networkingv1alpha3.L4MatchAttributes, port int32) bool {
	if len(matches) == 0 {
		return true
	}
	for _, m := range matches {
		if m.GetPort() == 0 || port == 0 || int32(m.GetPort()) == port {
			return true
		}
	}
	return false
}

// destinations normalises weights to shares of the route: a lone
// destination takes everything whatever its weight; weight 0 beside
// others takes nothing.
func destinations[W weighted](ws []W, ns string, port int32) []Destination {
	total := int32(0)
	for _, w := range ws {
		total += w.GetWeight()
	}
	var out []Destination
	for _, w := range ws {
		pct := 0
		switch {
		case len(ws) == 1:
			pct = 100
		case total > 0:
			pct = int(w.GetWeight() * 100 / total)
		}
		out = append(out, destination(w.GetDestination(), ns, port, pct))
	}
	return out
}

func destination(d *networkingv1alpha3.Destination, ns string, port int32, pct int) Destination {
	if d.GetHost() == "" {
		// A Gateway API backendRef istiod could not resolve: it empties
		// the destination, and routes to a cluster that never exists.
		return Destination{Percent: pct, Cluster: UnknownServiceCluster}
	}
	p := port
	if n := d.GetPort().GetNumber(); n != 0 {
		p = int32(n)
	}
	host := ResolveHost(d.GetHost(), ns)
	return Destination{Host: host, Subset: d.GetSubset(), Port: p, Percent: pct, Cluster: ClusterName(p, d.GetSubset(), host), PortNamed: d.GetPort().GetNumber() != 0}
}
