package envoy

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// RouteConfig is one route configuration of a /config_dump: how Envoy picks
// a virtual host by the request's Host and a route by its path, and the
// cluster it sends to. A gateway's HTTP listeners name theirs http.PORT
// (https.PORT.NAME.GATEWAY.NAMESPACE for HTTPS it terminates); a sidecar's
// are named after the port.
type RouteConfig struct {
	Name    string
	Dynamic bool
	// IgnorePort: the port of the Host header is dropped before matching
	// (Istio sets it since 1.12); older configs list host:port domains.
	IgnorePort   bool
	VirtualHosts []VirtualHost
}

// VirtualHost is one virtual host: the domains it answers and its routes
// in the order Envoy tries them.
type VirtualHost struct {
	Name    string
	Domains []string
	Routes  []RouteEntry
}

// RouteEntry is one route, reduced to what a triage reads.
type RouteEntry struct {
	Name string
	// Match describes the conditions: "prefix /", "path /dani", "regex
	// ^/api/.*", with " + N header conditions" when there are some.
	Match string
	// CatchAll: prefix "/" with no other condition.
	CatchAll bool
	// Clusters are the clusters the route sends to with their weights (one
	// with weight 100 for a plain route); none for a redirect or a direct
	// response.
	Clusters []WeightedCluster
	// DirectStatus is the status of a direct response, 0 for none;
	// Redirect is set for a redirect.
	DirectStatus uint32
	Redirect     bool
}

// WeightedCluster is one cluster of a route, with its weight.
type WeightedCluster struct {
	Name   string
	Weight uint32
}

// StreamRouteConfigs reads every route configuration of a /config_dump
// (static ones, then dynamic ones, in document order), decoding each with
// the tolerant resolver: an unknown typed_per_filter_config never fails
// it. Memory stays at the largest single route configuration.
func StreamRouteConfigs(r io.Reader) ([]RouteConfig, error) {
	s := &streamer{dec: json.NewDecoder(r), match: func(string) bool { return false }}
	var out []RouteConfig
	err := s.object(func(k string) error {
		if k != "configs" {
			return s.skip()
		}
		return s.array(func() error {
			return s.object(func(k string) error {
				dynamic := false
				switch k {
				case "dynamic_route_configs", "dynamicRouteConfigs":
					dynamic = true
				case "static_route_configs", "staticRouteConfigs":
				default:
					return s.skip()
				}
				return s.array(func() error {
					return s.object(func(k string) error {
						if k != "route_config" && k != "routeConfig" {
							return s.skip()
						}
						if err := s.dec.Decode(&s.raw); err != nil {
							return err
						}
						var rc routev3.RouteConfiguration
						if err := tolerant(&TolerantResolver{}).Unmarshal(s.raw, &rc); err != nil {
							return fmt.Errorf("route config %s: %w", topLevelString(s.raw, "name"), err)
						}
						out = append(out, AnalyzeRouteConfig(&rc, dynamic))
						return nil
					})
				})
			})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("config_dump: %w", err)
	}
	return out, nil
}

// AnalyzeRouteConfig reduces a RouteConfiguration to a RouteConfig.
func AnalyzeRouteConfig(rc *routev3.RouteConfiguration, dynamic bool) RouteConfig {
	out := RouteConfig{Name: rc.GetName(), Dynamic: dynamic, IgnorePort: rc.GetIgnorePortInHostMatching()}
	for _, vh := range rc.GetVirtualHosts() {
		v := VirtualHost{Name: vh.GetName(), Domains: vh.GetDomains()}
		for _, r := range vh.GetRoutes() {
			v.Routes = append(v.Routes, analyzeRoute(r))
		}
		out.VirtualHosts = append(out.VirtualHosts, v)
	}
	return out
}

func analyzeRoute(r *routev3.Route) RouteEntry {
	e := RouteEntry{Name: r.GetName()}
	m := r.GetMatch()
	switch {
	case m.GetPath() != "":
		e.Match = "path " + m.GetPath()
	case m.GetSafeRegex() != nil:
		e.Match = "regex " + m.GetSafeRegex().GetRegex()
	case m.GetPathSeparatedPrefix() != "":
		e.Match = "prefix " + m.GetPathSeparatedPrefix()
	case m.GetPathMatchPolicy() != nil:
		e.Match = "path template"
	default:
		e.Match = "prefix " + m.GetPrefix()
	}
	conds := len(m.GetHeaders()) + len(m.GetQueryParameters())
	if conds > 0 {
		e.Match += fmt.Sprintf(" + %d header/query conditions", conds)
	}
	e.CatchAll = e.Match == "prefix /" || e.Match == "prefix "
	switch a := r.GetAction().(type) {
	case *routev3.Route_Route:
		if c := a.Route.GetCluster(); c != "" {
			e.Clusters = []WeightedCluster{{Name: clustername.Name(c), Weight: 100}}
		}
		for _, wc := range a.Route.GetWeightedClusters().GetClusters() {
			e.Clusters = append(e.Clusters, WeightedCluster{Name: clustername.Name(wc.GetName()), Weight: wc.GetWeight().GetValue()})
		}
	case *routev3.Route_DirectResponse:
		e.DirectStatus = a.DirectResponse.GetStatus()
	case *routev3.Route_Redirect:
		e.Redirect = true
	}
	return e
}

// VirtualHostFor is the virtual host Envoy picks for a request's
// authority (Host header): an exact domain, else the longest suffix
// wildcard (*.example.com), else the longest prefix wildcard (shop.*),
// else "*"; nil when none matches (Envoy answers 404 NR). Domains match
// case-insensitively; with IgnorePort the authority's port is dropped.
func (rc RouteConfig) VirtualHostFor(authority string) *VirtualHost {
	host := strings.ToLower(authority)
	if rc.IgnorePort {
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	var best *VirtualHost
	bestRank, bestLen := -1, -1
	for i := range rc.VirtualHosts {
		vh := &rc.VirtualHosts[i]
		for _, d := range vh.Domains {
			d = strings.ToLower(d)
			rank, n := 0, 0
			switch {
			case d == host:
				rank, n = 4, len(d)
			case d == "*":
				rank = 1
			case strings.HasPrefix(d, "*") && strings.HasSuffix(host, d[1:]) && len(host) > len(d)-1:
				rank, n = 3, len(d)
			case strings.HasSuffix(d, "*") && strings.HasPrefix(host, d[:len(d)-1]) && len(host) > len(d)-1:
				rank, n = 2, len(d)
			default:
				continue
			}
			if rank > bestRank || rank == bestRank && n > bestLen {
				best, bestRank, bestLen = vh, rank, n
			}
		}
	}
	return best
}

// Routed reports whether a route of vh sends requests to a cluster match
// accepts, and which routes do.
func (vh VirtualHost) Routed(match func(cluster string) bool) []RouteEntry {
	var out []RouteEntry
	for _, r := range vh.Routes {
		for _, c := range r.Clusters {
			if c.Weight > 0 && match(c.Name) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// HasCatchAll reports whether a route of vh takes every path.
func (vh VirtualHost) HasCatchAll() bool {
	for _, r := range vh.Routes {
		if r.CatchAll {
			return true
		}
	}
	return false
}

// GatewayRouteConfigs are the route configurations of a gateway's HTTP
// listeners (http.PORT, https.PORT...), sorted by name.
func GatewayRouteConfigs(all []RouteConfig) []RouteConfig {
	var out []RouteConfig
	for _, rc := range all {
		if rc.Dynamic && (strings.HasPrefix(rc.Name, "http.") || strings.HasPrefix(rc.Name, "https.")) {
			out = append(out, rc)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
