package lab

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// PushedListeners returns the listeners the client holds, by name.
func (c *XDSClient) PushedListeners() map[string]*listenerv3.Listener {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*listenerv3.Listener{}
	for name, r := range c.types[ListenerType].Resources {
		if l, ok := r.Message.(*listenerv3.Listener); ok {
			out[name] = l
		}
	}
	return out
}

// CompareRoutes compares the routes the config model gives a sidecar
// caller for a Service port with the ones istiod pushed: for an HTTP port
// the virtual host of the port's route configuration (PORT, or HOST:PORT
// for a sniffed port) whose domains hold the host, for a TCP port the tcp_proxy of the listener on the Service's
// ClusterIP and port. A host the model hides (or sends to a fallback
// cluster) must have neither. Routes are compared in order, by what they
// send where: the clusters and their share of the route's requests, the
// mirrors, and whether the route takes every request (no route after it
// is ever reached). Consecutive routes that send the same way are one
// (istiod writes one Envoy route a match condition); match conditions
// themselves are not compared. Callers whose app bypasses the sidecar
// (the model's route is kube-proxy's), views whose visibility the model
// says it cannot judge, TLS ports and headless Services' TCP ports are not
// compared.
func CompareRoutes(v *mesh.View, routes map[string]*routev3.RouteConfiguration, listeners map[string]*listenerv3.Listener) Comparison {
	var c Comparison
	if !v.Caller.Sidecar || v.Caller.Gateway || v.Caller.Bypass != "" || v.Caller.Ambient || v.Visibility.Undecided != "" {
		return c // the model's route is not the proxy's, or it says it does not know
	}
	routed := v.Visibility.Visible && !toFallback(v)
	switch v.Protocol {
	case mesh.ProtocolHTTP:
		// A port istiod sniffs gets a route configuration of its own,
		// HOST:PORT, on the Service's ClusterIP listener, whose one
		// virtual host takes every domain; others share PORT's, a virtual
		// host a Service (and its aliases' names among its domains).
		port := strconv.Itoa(int(v.Port))
		var vh *routev3.VirtualHost
		for _, h := range routes[port].GetVirtualHosts() {
			for _, d := range h.GetDomains() {
				if strings.EqualFold(d, v.Host) {
					vh = h
				}
			}
		}
		own := []string{v.Host}
		if alias := mesh.ExternalNameOf(v.Service); alias != "" {
			own = append(own, alias)
		}
		for _, h := range own {
			if rc := routes[h+":"+port]; vh == nil && rc != nil && len(rc.GetVirtualHosts()) > 0 {
				vh = rc.GetVirtualHosts()[0]
			}
		}
		if vh == nil && routed && selfOnlyHeadless(v) {
			// A headless Service's sniffed port has a listener, and a route
			// configuration, per endpoint address, none for the caller's
			// own: with no other endpoint there is none to compare.
			return c
		}
		c.Clusters++
		switch {
		case !routed && vh != nil:
			c.Diffs = append(c.Diffs, fmt.Sprintf("route %d: the model gives %s no route of its own (%s); istiod pushed virtual host %s", v.Port, v.Host, fallbackWhy(v), vh.GetName()))
		case routed && vh == nil:
			c.Diffs = append(c.Diffs, fmt.Sprintf("route %d: the model routes %s; istiod pushed no virtual host for it", v.Port, v.Host))
		case routed:
			var pushed []routeSig
			for _, r := range vh.GetRoutes() {
				pushed = append(pushed, envoyRouteSig(r))
			}
			c.Endpoints += len(v.Routes)
			c.Diffs = append(c.Diffs, compareRouteSigs(fmt.Sprintf("route %d %s", v.Port, vh.GetName()), modelRouteSigs(v), pushed)...)
		}
	case mesh.ProtocolTCP:
		if v.Service == nil || v.Service.Spec.ClusterIP == "" || v.Service.Spec.ClusterIP == "None" || mesh.ExternalNameOf(v.Service) != "" {
			return c
		}
		name := v.Service.Spec.ClusterIP + "_" + strconv.Itoa(int(v.Port))
		l := listeners[name]
		c.Clusters++
		switch {
		case !routed && l != nil:
			c.Diffs = append(c.Diffs, fmt.Sprintf("listener %s: the model gives %s no listener of its own (%s); istiod pushed one", name, v.Host, fallbackWhy(v)))
		case routed && l == nil:
			c.Diffs = append(c.Diffs, fmt.Sprintf("listener %s: the model routes %s; istiod pushed no listener for it", name, v.Host))
		case routed:
			pushed, ok := tcpSig(l)
			if !ok {
				c.Diffs = append(c.Diffs, fmt.Sprintf("listener %s: no tcp_proxy in its filter chain", name))
				return c
			}
			c.Endpoints++
			model := modelRouteSigs(v)
			if len(model) > 0 {
				model = model[:1] // a TCP connection takes the first route that matches it
				model[0].catchAll = true
			}
			c.Diffs = append(c.Diffs, compareRouteSigs("listener "+name, model, []routeSig{pushed})...)
		}
	}
	return c
}

// selfOnlyHeadless: the view is of a headless Service whose every
// endpoint in the model is the caller itself.
func selfOnlyHeadless(v *mesh.View) bool {
	if v.Service == nil || v.Service.Spec.ClusterIP != "None" || v.Caller.Name == "" {
		return false
	}
	n := 0
	for _, cl := range v.Clusters {
		for _, e := range cl.Endpoints {
			if e.Pod != v.Caller.Name || e.Namespace != v.Caller.Namespace {
				return false
			}
			n++
		}
	}
	return n > 0
}

// toFallback: the model's only route goes to PassthroughCluster or
// BlackHoleCluster (an ExternalName alias of a host istiod does not know).
func toFallback(v *mesh.View) bool {
	if len(v.Routes) != 1 || len(v.Routes[0].Destinations) != 1 {
		return false
	}
	cl := v.Routes[0].Destinations[0].Cluster
	return cl == mesh.PassthroughCluster || cl == mesh.BlackHoleCluster
}

func fallbackWhy(v *mesh.View) string {
	if !v.Visibility.Visible {
		return v.Visibility.HiddenBy
	}
	return v.Routes[0].Name
}

// routeSig is what a route does, in words: where it sends and with what
// share, its mirrors, and whether it takes every request.
type routeSig struct {
	sends    string
	catchAll bool
}

func (r routeSig) String() string {
	if r.catchAll {
		return r.sends + " (every request)"
	}
	return r.sends + " (some requests)"
}

func modelRouteSigs(v *mesh.View) []routeSig {
	var out []routeSig
	for _, r := range v.Routes {
		out = append(out, routeSig{sends: modelRouteSends(r, clusterOf), catchAll: r.CatchAll})
	}
	return out
}

// clusterOf is a destination's cluster as the model names it.
func clusterOf(d mesh.Destination) string { return d.Cluster }

// modelRouteSends is where the model's route sends, in routeSig's words:
// each destination's cluster (as cluster names it for the proxy compared)
// with its share, a lone one taking 100%, and its mirrors.
func modelRouteSends(r mesh.Route, cluster func(mesh.Destination) string) string {
	var dests, mirrors []string
	for _, d := range r.Destinations {
		pct := d.Percent
		if len(r.Destinations) == 1 {
			pct = 100
		}
		if pct > 0 {
			dests = append(dests, fmt.Sprintf("%s %d%%", cluster(d), pct))
		}
	}
	for _, m := range r.Mirrors {
		mirrors = append(mirrors, "mirror "+cluster(m))
	}
	return sig(dests, mirrors)
}

func sig(dests, mirrors []string) string {
	sort.Strings(dests)
	sort.Strings(mirrors)
	return strings.Join(append(dests, mirrors...), ", ")
}

// envoyRouteSig reads an Envoy route as routeSig: the shares are the
// weights over their sum, rounded down as the model's percentages are.
func envoyRouteSig(r *routev3.Route) routeSig {
	out := routeSig{catchAll: isCatchAllRoute(r)}
	a := r.GetRoute()
	switch {
	case r.GetDirectResponse() != nil:
		out.sends = fmt.Sprintf("direct response %d", r.GetDirectResponse().GetStatus())
		return out
	case r.GetRedirect() != nil:
		out.sends = "redirect"
		return out
	}
	var dests, mirrors []string
	if cl := a.GetCluster(); cl != "" {
		dests = append(dests, cl+" 100%")
	}
	total := uint32(0)
	for _, wc := range a.GetWeightedClusters().GetClusters() {
		total += wc.GetWeight().GetValue()
	}
	for _, wc := range a.GetWeightedClusters().GetClusters() {
		if pct := wc.GetWeight().GetValue() * 100 / max(total, 1); pct > 0 {
			dests = append(dests, fmt.Sprintf("%s %d%%", wc.GetName(), pct))
		}
	}
	for _, m := range a.GetRequestMirrorPolicies() {
		mirrors = append(mirrors, "mirror "+m.GetCluster())
	}
	out.sends = sig(dests, mirrors)
	return out
}

// isCatchAllRoute is istiod's IsCatchAllRoute: a path match of "/" (prefix
// or path-separated prefix) or ".*" with no header, query or metadata
// condition.
func isCatchAllRoute(r *routev3.Route) bool {
	m := r.GetMatch()
	all := m.GetPrefix() == "/" || m.GetPathSeparatedPrefix() == "/" || m.GetSafeRegex().GetRegex() == ".*"
	return all && len(m.GetHeaders()) == 0 && len(m.GetQueryParameters()) == 0 && len(m.GetDynamicMetadata()) == 0
}

// tcpSig reads the tcp_proxy of a TCP listener's filter chain.
func tcpSig(l *listenerv3.Listener) (routeSig, bool) {
	for _, tp := range listenerFilters[tcpproxyv3.TcpProxy](l) {
		var dests []string
		if cl := tp.GetCluster(); cl != "" {
			dests = append(dests, cl+" 100%")
		}
		total := uint32(0)
		for _, wc := range tp.GetWeightedClusters().GetClusters() {
			total += wc.GetWeight()
		}
		for _, wc := range tp.GetWeightedClusters().GetClusters() {
			if pct := wc.GetWeight() * 100 / max(total, 1); pct > 0 {
				dests = append(dests, fmt.Sprintf("%s %d%%", wc.GetName(), pct))
			}
		}
		return routeSig{sends: sig(dests, nil), catchAll: true}, true
	}
	return routeSig{}, false
}

// compareRouteSigs compares two route lists once consecutive routes that
// send alike are merged. A route the model keeps after one that takes
// every request is a difference: istiod writes none there.
func compareRouteSigs(where string, model, pushed []routeSig) []string {
	m, p := mergeRoutes(model), mergeRoutes(pushed)
	var out []string
	for i := 0; i < max(len(m), len(p)); i++ {
		switch {
		case i >= len(m):
			out = append(out, fmt.Sprintf("%s: istiod's route %d %s; the model has no such route", where, i, p[i]))
		case i >= len(p):
			out = append(out, fmt.Sprintf("%s: the model's route %d %s; istiod pushed no such route", where, i, m[i]))
		case m[i] != p[i]:
			out = append(out, fmt.Sprintf("%s: route %d: the model %s; istiod %s", where, i, m[i], p[i]))
		}
	}
	return out
}

func mergeRoutes(in []routeSig) []routeSig {
	var out []routeSig
	for _, r := range in {
		if n := len(out); n > 0 && out[n-1].sends == r.sends {
			out[n-1].catchAll = out[n-1].catchAll || r.catchAll
			continue
		}
		out = append(out, r)
	}
	return out
}

// PushedInbound is what a sidecar's virtualInbound listener accepts on
// port: the filter chains for that destination port, else the passthrough
// chains (IPv4). A chain that terminates TLS with a transport socket
// accepts Istio mTLS; a raw_buffer chain accepts plaintext. STRICT accepts
// mTLS only, PERMISSIVE both, DISABLE plaintext only; "" when the proxy
// has no virtualInbound listener or no chain for the port.
func PushedInbound(listeners map[string]*listenerv3.Listener, port uint32) (mode, why string) {
	l := listeners["virtualInbound"]
	if l == nil {
		return "", "no virtualInbound listener"
	}
	var forPort, passthrough []*listenerv3.FilterChain
	for _, fc := range l.GetFilterChains() {
		m := fc.GetFilterChainMatch()
		switch dp := m.GetDestinationPort(); {
		case dp != nil && dp.GetValue() == port:
			forPort = append(forPort, fc)
		case dp == nil && ipv4Chain(m):
			passthrough = append(passthrough, fc)
		}
	}
	chains, from := forPort, fmt.Sprintf("chains for port %d", port)
	if len(chains) == 0 {
		chains, from = passthrough, "passthrough chains"
	}
	mtls, plain := false, false
	for _, fc := range chains {
		switch {
		case fc.GetTransportSocket() != nil:
			mtls = true
		case fc.GetFilterChainMatch().GetTransportProtocol() != "tls":
			plain = true
		}
	}
	switch {
	case mtls && plain:
		return mesh.ModePermissive, from
	case mtls:
		return mesh.ModeStrict, from
	case plain:
		return mesh.ModeDisable, from
	}
	return "", from + ": none accepts mTLS or plaintext"
}

func ipv4Chain(m *listenerv3.FilterChainMatch) bool {
	if len(m.GetPrefixRanges()) == 0 {
		return true
	}
	for _, p := range m.GetPrefixRanges() {
		if !strings.Contains(p.GetAddressPrefix(), ":") {
			return true
		}
	}
	return false
}
