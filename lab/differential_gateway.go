package lab

import (
	"fmt"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// PushedRoutes returns the route configurations the client holds, by name.
func (c *XDSClient) PushedRoutes() map[string]*routev3.RouteConfiguration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*routev3.RouteConfiguration{}
	for name, r := range c.types[RouteType].Resources {
		if rc, ok := r.Message.(*routev3.RouteConfiguration); ok {
			out[name] = rc
		}
	}
	return out
}

// CompareGatewayRoutes compares the config model's view of a gateway caller
// with the route configurations istiod pushed to it: every route name the
// model gives the gateway's HTTP servers was pushed; the hosts the model
// says route to the target are the domains of the pushed virtual hosts
// with a route to a cluster of the target's host and port; and a domain the
// model says no route reaches the target from has no such route in what
// istiod pushed.
func CompareGatewayRoutes(v *mesh.View, pushed map[string]*routev3.RouteConfiguration) Comparison {
	var c Comparison
	if v.Gateway == nil {
		return c
	}
	names := map[string]bool{}
	for _, s := range v.Gateway.Servers {
		if s.Rejected == "" && s.HTTP() {
			names[s.RouteName] = true
		}
	}
	modelHosts := map[string]bool{}
	for _, h := range v.Gateway.Hosts {
		host, _, _ := strings.Cut(h, ":")
		modelHosts[host] = true
	}
	pushedHosts := map[string]bool{}
	for _, name := range sortedKeysOf(names) {
		c.Clusters++
		rc := pushed[name]
		if rc == nil {
			c.Diffs = append(c.Diffs, fmt.Sprintf("route %s: the model says the gateway's HTTP server asks for it; istiod pushed no such route configuration (pushed: %s)",
				name, strings.Join(sortedKeysOf(pushed), ", ")))
			continue
		}
		for _, vh := range rc.GetVirtualHosts() {
			if !vhostRoutesTo(vh, v.Host, v.Port) {
				continue
			}
			for _, d := range vh.GetDomains() {
				pushedHosts[strings.ToLower(d)] = true
			}
		}
	}
	for _, h := range sortedKeysOf(modelHosts) {
		c.Endpoints++
		if !pushedHosts[h] {
			c.Diffs = append(c.Diffs, fmt.Sprintf("host %s: the model routes it to %s:%d; no virtual host istiod pushed for it does", h, v.Host, v.Port))
		}
	}
	for _, h := range sortedKeysOf(pushedHosts) {
		if !modelHosts[h] {
			c.Endpoints++
			c.Diffs = append(c.Diffs, fmt.Sprintf("host %s: istiod routes it to %s:%d; the model says no route of the gateway does", h, v.Host, v.Port))
		}
	}
	return c
}

// vhostRoutesTo reports whether a route of vh that Envoy can reach sends
// requests to a cluster of host:port: routes after the first that takes
// every path (prefix "/" and no other condition) are never reached.
func vhostRoutesTo(vh *routev3.VirtualHost, host string, port int32) bool {
	for _, r := range vh.GetRoutes() {
		a := r.GetRoute()
		clusters := []string{a.GetCluster()}
		for _, wc := range a.GetWeightedClusters().GetClusters() {
			if wc.GetWeight().GetValue() > 0 {
				clusters = append(clusters, wc.GetName())
			}
		}
		for _, name := range clusters {
			if p, ok := clustername.Split(clustername.Name(name)); ok && p.Host == host && p.Port == port {
				return true
			}
		}
		if takesEverything(r) {
			return false
		}
	}
	return false
}

// takesEverything: a route matching every path with no other condition;
// Envoy tries no route after it.
func takesEverything(r *routev3.Route) bool {
	m := r.GetMatch()
	return m.GetPrefix() == "/" && len(m.GetHeaders()) == 0 && len(m.GetQueryParameters()) == 0 && m.GetRuntimeFraction() == nil && m.GetGrpc() == nil
}
