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
}

// Destination is one weighted destination of a route.
type Destination struct {
	Host   string // FQDN as resolved
	Subset string
	Port   int32
	// Percent is the share of the route's requests it gets.
	Percent int
	Cluster string
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
)

// PortProtocol is how Istio reads a service port: appProtocol, else the
// port name's prefix (http, http2, grpc, https, tls, tcp, ...). A port it
// cannot name is sniffed; the 503s this tool triages are HTTP, so it is
// read as HTTP.
func PortProtocol(sp corev1.ServicePort) string {
	p := ""
	if sp.AppProtocol != nil {
		p = *sp.AppProtocol
	}
	if p == "" {
		p, _, _ = strings.Cut(sp.Name, "-")
	}
	switch strings.ToLower(p) {
	case "tcp", "mongo", "mysql", "redis":
		return ProtocolTCP
	case "https", "tls":
		return ProtocolTLS
	}
	return ProtocolHTTP
}

// VirtualServicesFor lists the VirtualServices of the caller's proxy for
// host on a port of protocol proto: a host of theirs (resolved in their
// namespace) covers it, they bind to sidecars (no gateways, or "mesh"),
// they are exported to the caller's namespace. When several claim the
// host, the first in istiod's order wins (the caller's own namespace, then
// the oldest). Every VirtualService naming the host gets a verdict.
func (c *Config) VirtualServicesFor(caller Caller, host string) (*networkingv1.VirtualService, []RuleVerdict) {
	var verdicts []RuleVerdict
	var candidates []*networkingv1.VirtualService
	meshDefault := c.Mesh.Raw.GetDefaultVirtualServiceExportTo()
	for _, vs := range c.VirtualServices {
		hosts := vs.Spec.GetHosts()
		covers, near := false, ""
		for _, h := range hosts {
			covers = covers || HostCovers(h, vs.Namespace, host)
			if svc, rest, ok := strings.Cut(host, "."); ok && NearMiss(h, svc, strings.SplitN(rest, ".", 2)[0]) {
				near = h
			}
		}
		v := RuleVerdict{Kind: "VirtualService", Namespace: vs.Namespace, Name: vs.Name, Host: strings.Join(hosts, ",")}
		switch {
		case !covers && near != "":
			v.Why = fmt.Sprintf("never applies: Istio does not complete host %q, use %s", near, host)
		case !covers:
			continue
		case !bindsSidecars(vs.Spec.GetGateways()):
			v.Why = "bound to gateways " + strings.Join(vs.Spec.GetGateways(), ",") + " only, not to sidecars (add \"mesh\" to gateways)"
		case !ExportedTo(exportToOrDefault(vs.Spec.GetExportTo(), meshDefault), vs.Namespace, caller.Namespace):
			v.Why = fmt.Sprintf("not exported to namespace %s (exportTo %s)", caller.Namespace, strings.Join(exportToOrDefault(vs.Spec.GetExportTo(), meshDefault), ","))
		default:
			candidates = append(candidates, vs)
			v.Applies = true
		}
		verdicts = append(verdicts, v)
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		li, lj := candidates[i].Namespace == caller.Namespace, candidates[j].Namespace == caller.Namespace
		if li != lj {
			return li
		}
		if !candidates[i].CreationTimestamp.Equal(&candidates[j].CreationTimestamp) {
			return candidates[i].CreationTimestamp.Before(&candidates[j].CreationTimestamp)
		}
		return candidates[i].Namespace+"/"+candidates[i].Name < candidates[j].Namespace+"/"+candidates[j].Name
	})
	var winner *networkingv1.VirtualService
	if len(candidates) > 0 {
		winner = candidates[0]
	}
	for i := range verdicts {
		if verdicts[i].Applies && (winner == nil || verdicts[i].Ref() != winner.Namespace+"/"+winner.Name) {
			verdicts[i].Applies = false
			verdicts[i].Why = "shadowed by " + winner.Namespace + "/" + winner.Name + " (one VirtualService per host for a sidecar: the caller's namespace first, then the oldest)"
		} else if verdicts[i].Applies {
			verdicts[i].Why = "applies"
		}
	}
	sort.SliceStable(verdicts, func(i, j int) bool {
		if verdicts[i].Applies != verdicts[j].Applies {
			return verdicts[i].Applies
		}
		return verdicts[i].Ref() < verdicts[j].Ref()
	})
	return winner, verdicts
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
// protocol proto; 0 for every port); their destinations default to the
// same port.
func RoutesOf(vs *networkingv1.VirtualService, port int32, proto string) []Route {
	ref := vs.Namespace + "/" + vs.Name
	var out []Route
	switch proto {
	case ProtocolHTTP:
		for i, h := range vs.Spec.GetHttp() {
			match, ok := httpMatch(h.GetMatch(), port)
			if !ok {
				continue
			}
			r := Route{VirtualService: ref, Name: fmt.Sprintf("http[%d]%s", i, match), CatchAll: match == ""}
			r.Destinations = destinations(h.GetRoute(), vs.Namespace, port)
			if m := h.GetMirror(); m != nil {
				r.Mirrors = append(r.Mirrors, destination(m, vs.Namespace, port, 100))
			}
			for _, m := range h.GetMirrors() {
				r.Mirrors = append(r.Mirrors, destination(m.GetDestination(), vs.Namespace, port, 100))
			}
			out = append(out, r)
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
	p := port
	if n := d.GetPort().GetNumber(); n != 0 {
		p = int32(n)
	}
	host := ResolveHost(d.GetHost(), ns)
	return Destination{Host: host, Subset: d.GetSubset(), Port: p, Percent: pct, Cluster: ClusterName(p, d.GetSubset(), host)}
}
