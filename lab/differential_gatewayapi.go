package lab

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// The Gateway API differential: a Gateway API gateway's whole config as
// istiod pushes it to the gateway's pod (router~), and the route and
// listener status istiod writes, against the config model's binding for
// that pod (mesh.GatewayBinding) and its verdicts on routes and listeners
// (mesh.RouteVerdict, mesh.APIListener).

// GatewayProxyModel is what the model says a gateway pod is given: its
// binding (servers, route names, virtual hosts and their routes) and, for
// each cluster a route names, whether istiod builds it ("" unknown).
type GatewayProxyModel struct {
	Binding *mesh.GatewayBinding
	// ClusterExists: for a cluster a model route names, "yes", "no", or
	// "" when the model cannot tell.
	ClusterExists map[string]string
}

// GatewayProxyModelOf is the model's config for caller, a gateway pod.
func GatewayProxyModelOf(cfg *mesh.Config, caller mesh.Caller) GatewayProxyModel {
	b, _, _, _ := cfg.GatewayBindingFor(caller, "", 0)
	m := GatewayProxyModel{Binding: b, ClusterExists: map[string]string{}}
	for _, vh := range b.VirtualHosts {
		for _, r := range vh.Routes {
			for _, d := range append(append([]mesh.Destination(nil), r.Destinations...), r.Mirrors...) {
				if _, done := m.ClusterExists[d.Cluster]; done || d.Cluster == "" {
					continue
				}
				cl := cfg.SubsetCluster(caller, d.Host, d.Port, d.Subset)
				if d.Cluster == mesh.UnknownServiceCluster {
					cl.Exists, cl.ExistsUnknown = false, ""
				}
				switch {
				case cl.ExistsUnknown != "":
					m.ClusterExists[d.Cluster] = ""
				case cl.Exists:
					m.ClusterExists[d.Cluster] = "yes"
				default:
					m.ClusterExists[d.Cluster] = "no"
				}
			}
		}
	}
	return m
}

// blackholeDomain: the model's domain for a route configuration no
// VirtualService is bound to, which istiod writes as one virtual host of
// domain "*" without routes.
const blackholeDomain = "*"

// gatewayRouteSig is one Envoy route of a gateway as the differential
// compares it: its name (a Gateway API rule's, "" otherwise), where it
// sends, whether it takes every request, and what Envoy answers when its
// cluster does not exist.
type gatewayRouteSig struct {
	name, sends   string
	catchAll      bool
	clusterAbsent int
}

func (r gatewayRouteSig) String() string {
	s := r.sends
	if r.name != "" {
		s = r.name + ": " + s
	}
	if r.catchAll {
		s += " (every request)"
	}
	return fmt.Sprintf("%s, cluster not found %d", s, r.clusterAbsent)
}

// CompareGatewayProxy compares the model's config for a Gateway API
// gateway pod with what istiod pushed it: the route configurations its
// HTTP servers ask for, both ways; for each, per domain, the virtual host's
// routes in order (rule name, clusters with their shares, takes every
// request, cluster_not_found_response_code); for each cluster a route
// names, whether CDS holds it; and the ports of the listeners LDS holds
// against the listener ports of the servers the model serves.
func CompareGatewayProxy(m GatewayProxyModel, routes map[string]*routev3.RouteConfiguration, listeners map[string]*listenerv3.Listener, cds map[string]*PushedCluster) Comparison {
	var c Comparison
	b := m.Binding

	modelPorts, pushedPorts := map[uint32]bool{}, map[uint32]bool{}
	modelNames := map[string]bool{}
	for _, s := range b.Servers {
		if s.Rejected != "" {
			continue
		}
		modelPorts[uint32(s.ListenerPort)] = true
		if s.HTTP() {
			modelNames[s.RouteName] = true
		}
	}
	for _, l := range listeners {
		if p := l.GetAddress().GetSocketAddress().GetPortValue(); p != 0 {
			pushedPorts[p] = true
		}
	}
	c.Diffs = append(c.Diffs, compareSets("listener port", keysOf(modelPorts), keysOf(pushedPorts))...)
	// The route configurations the listeners ask for now: Envoy drops one
	// no listener names any more, which the lab's client keeps.
	asked := map[string]*routev3.RouteConfiguration{}
	for _, l := range listeners {
		for _, hcm := range listenerFilters[hcmv3.HttpConnectionManager](l) {
			if n := hcm.GetRds().GetRouteConfigName(); routes[n] != nil {
				asked[n] = routes[n]
			}
		}
	}
	routes = asked
	c.Diffs = append(c.Diffs, compareSets("route configuration", sortedKeysOf(modelNames), sortedKeysOf(routes))...)

	// Per route configuration and domain.
	model := map[string]map[string][]gatewayRouteSig{}
	for _, vh := range b.VirtualHosts {
		domain := vh.Domain
		if strings.HasPrefix(domain, "* (blackhole") {
			domain = blackholeDomain
		}
		if model[vh.RouteName] == nil {
			model[vh.RouteName] = map[string][]gatewayRouteSig{}
		}
		model[vh.RouteName][domain] = modelGatewayRouteSigs(vh.Routes)
	}
	for _, name := range sortedKeysOf(modelNames) {
		rc := routes[name]
		if rc == nil {
			continue
		}
		pushed := map[string][]gatewayRouteSig{}
		for _, vh := range rc.GetVirtualHosts() {
			for _, d := range vh.GetDomains() {
				pushed[strings.ToLower(d)] = envoyGatewayRouteSigs(vh.GetRoutes())
			}
		}
		c.Diffs = append(c.Diffs, compareSets("route "+name+" domain", sortedKeysOf(model[name]), sortedKeysOf(pushed))...)
		for _, d := range sortedKeysOf(model[name]) {
			p, ok := pushed[d]
			if !ok {
				continue
			}
			c.Clusters++
			c.Diffs = append(c.Diffs, compareGatewayRouteSigs(fmt.Sprintf("route %s domain %s", name, d), model[name][d], p)...)
		}
	}

	// TLS: the SDS names of the certificates a terminating listener the
	// model programs serves, against those of the filter chains LDS holds
	// on its port (the lab's xDS is plaintext: names, not secrets).
	if api := b.API; api != nil && api.Gateway != nil {
		for _, l := range api.Gateway.Listeners {
			if len(l.Credentials) == 0 || l.NotProgrammed != "" || l.NoServer {
				continue
			}
			port := int32(0)
			for _, s := range b.Servers {
				if s.Gateway == l.Internal && s.Rejected == "" {
					port = s.ListenerPort
				}
			}
			if port == 0 {
				continue
			}
			c.Endpoints++
			var pushed []string
			for _, pl := range listeners {
				if pl.GetAddress().GetSocketAddress().GetPortValue() == uint32(port) {
					pushed = append(pushed, sdsNames(pl)...)
				}
			}
			sort.Strings(pushed)
			pushed = slices.Compact(pushed)
			model := append([]string(nil), l.Credentials...)
			sort.Strings(model)
			c.Diffs = append(c.Diffs, compareSets(fmt.Sprintf("%s: SDS name", l.Ref()), model, pushed)...)
		}
	}

	// Clusters the routes name: the model's existence against CDS.
	for _, name := range sortedKeysOf(m.ClusterExists) {
		exists := m.ClusterExists[name]
		if exists == "" {
			continue
		}
		c.Endpoints++
		_, inCDS := cds[name]
		switch {
		case exists == "yes" && !inCDS:
			c.Diffs = append(c.Diffs, fmt.Sprintf("cluster %s: the model says istiod builds it; CDS has no such cluster", name))
		case exists == "no" && inCDS:
			c.Diffs = append(c.Diffs, fmt.Sprintf("cluster %s: the model says istiod builds no such cluster; CDS has it", name))
		}
	}
	return c
}

// sdsNames are the SDS secret names of the certificates a listener's
// filter chains serve (their DownstreamTlsContext).
func sdsNames(l *listenerv3.Listener) []string {
	var out []string
	for _, fc := range l.GetFilterChains() {
		ts := fc.GetTransportSocket().GetTypedConfig()
		ctx := &tlsv3.DownstreamTlsContext{}
		if ts == nil || !ts.MessageIs(ctx) || ts.UnmarshalTo(ctx) != nil {
			continue
		}
		for _, sc := range ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
			out = append(out, sc.GetName())
		}
	}
	return out
}

func modelGatewayRouteSigs(routes []mesh.Route) []gatewayRouteSig {
	var out []gatewayRouteSig
	for _, r := range routes {
		absent := r.ClusterNotFound
		if absent == 0 {
			absent = 503
		}
		out = append(out, gatewayRouteSig{name: r.EnvoyName, sends: modelRouteSends(r, clusterOf), catchAll: r.CatchAll, clusterAbsent: absent})
	}
	return out
}

func envoyGatewayRouteSigs(routes []*routev3.Route) []gatewayRouteSig {
	var out []gatewayRouteSig
	for _, r := range routes {
		s := envoyRouteSig(r)
		absent := 503
		switch r.GetRoute().GetClusterNotFoundResponseCode() {
		case routev3.RouteAction_NOT_FOUND:
			absent = 404
		case routev3.RouteAction_INTERNAL_SERVER_ERROR:
			absent = 500
		}
		out = append(out, gatewayRouteSig{name: r.GetName(), sends: s.sends, catchAll: s.catchAll, clusterAbsent: absent})
	}
	return out
}

// compareGatewayRouteSigs compares two routes lists in order once
// consecutive routes that are alike are one (a rule with several matches
// is an Envoy route a match). A route name is compared where the model
// names it (a Gateway API rule).
func compareGatewayRouteSigs(where string, model, pushed []gatewayRouteSig) []string {
	merge := func(in []gatewayRouteSig) []gatewayRouteSig {
		var out []gatewayRouteSig
		for _, r := range in {
			if n := len(out); n > 0 && out[n-1].name == r.name && out[n-1].sends == r.sends && out[n-1].clusterAbsent == r.clusterAbsent {
				out[n-1].catchAll = out[n-1].catchAll || r.catchAll
				continue
			}
			out = append(out, r)
		}
		return out
	}
	mr, pr := merge(model), merge(pushed)
	var out []string
	for i := 0; i < max(len(mr), len(pr)); i++ {
		switch {
		case i >= len(mr):
			out = append(out, fmt.Sprintf("%s: istiod's route %d %s; the model has no such route", where, i, pr[i]))
		case i >= len(pr):
			out = append(out, fmt.Sprintf("%s: the model's route %d %s; istiod pushed no such route", where, i, mr[i]))
		default:
			p := pr[i]
			if mr[i].name == "" {
				p.name = ""
			}
			if mr[i] != p {
				out = append(out, fmt.Sprintf("%s: route %d: the model %s; istiod %s", where, i, mr[i], pr[i]))
			}
		}
	}
	return out
}

// compareSets says what one side holds and the other does not.
func compareSets(what string, model, pushed []string) []string {
	var out []string
	in := func(s []string, x string) bool {
		for _, y := range s {
			if y == x {
				return true
			}
		}
		return false
	}
	for _, x := range model {
		if !in(pushed, x) {
			out = append(out, fmt.Sprintf("%s %s: the model has it; istiod pushed none (istiod: %s)", what, x, strings.Join(pushed, ", ")))
		}
	}
	for _, x := range pushed {
		if !in(model, x) {
			out = append(out, fmt.Sprintf("%s %s: istiod pushed it; the model has none (model: %s)", what, x, strings.Join(model, ", ")))
		}
	}
	return out
}

func keysOf(m map[uint32]bool) []string {
	var out []string
	for k := range m {
		out = append(out, fmt.Sprint(k))
	}
	sort.Strings(out)
	return out
}

// CompareGatewayAPIStatus compares the model's own verdicts with the
// status istiod wrote, which the model reads beside them (the Status*
// fields of its verdicts): for every route parentRef the model decides, the
// Accepted condition (True, or False with the model's reason) and the
// ResolvedRefs reason the model's backend verdicts give; a parentRef the
// model says istiod writes nothing for has no status; for every listener
// of a Gateway of istiod's (not a waypoint), Programmed True, or False
// with the model's reason. Conditions must be at the object's generation:
// waiting for that is the caller's.
func CompareGatewayAPIStatus(cfg *mesh.Config) Comparison {
	var c Comparison
	for _, r := range cfg.APIRoutes() {
		for _, p := range r.Parents {
			where := fmt.Sprintf("%s parent %s", r.Route, p.Parent())
			if p.Unknown != "" {
				continue
			}
			c.Clusters++
			if p.NoStatus != "" {
				if p.StatusAccepted != nil {
					c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model says istiod writes no status (%s); istiod wrote Accepted %s", where, p.NoStatus, p.StatusAccepted))
				}
				continue
			}
			st := p.StatusAccepted
			if st == nil || st.Stale {
				c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model says Accepted %v %s; istiod wrote no Accepted at the route's generation", where, p.Accepted, p.Reason))
				continue
			}
			want := string(metav1.ConditionFalse)
			if p.Accepted {
				want = string(metav1.ConditionTrue)
			}
			if st.Status != want || !p.Accepted && st.Reason != p.Reason {
				c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model says Accepted %s %s (%s); istiod wrote %s", where, want, p.Reason, p.Message, st))
			}
			if !p.Accepted {
				continue // istiod's ResolvedRefs of an unattached parent is not the model's concern
			}
			wantRR := modelResolvedRefs(r, p.Mesh)
			if rr := p.StatusResolvedRefs; rr == nil || rr.Stale {
				c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model says ResolvedRefs %s; istiod wrote none at the route's generation", where, wantRR))
			} else if rr.Reason != wantRR {
				c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model says ResolvedRefs %s; istiod wrote %s", where, wantRR, rr))
			}
		}
	}
	for _, g := range cfg.APIGateways() {
		if !g.Ours || g.Waypoint {
			continue
		}
		for _, l := range g.Listeners {
			want, known := l.Conditions()
			if !known {
				continue // the model does not decide these without status
			}
			c.Endpoints++
			for _, w := range want {
				if w.Unknown != "" {
					continue
				}
				st := listenerStatus(l, w.Type)
				switch {
				case st == nil || st.Stale:
					c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model says %s %s %s; istiod wrote none at the Gateway's generation", l.Ref(), w.Type, w.Status, w.Reason))
				case st.Status != w.Status || st.Reason != w.Reason:
					c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model says %s %s %s (%s); istiod wrote %s", l.Ref(), w.Type, w.Status, w.Reason, l.NotProgrammed, st))
				}
			}
		}
	}
	return c
}

// writtenCondition is a condition istiod wrote, as the model read it.
type writtenCondition struct {
	Status, Reason string
	Stale          bool
}

func (w *writtenCondition) String() string {
	s := w.Status + " " + w.Reason
	if w.Stale {
		s += " (stale)"
	}
	return s
}

// listenerStatus is what istiod wrote for the listener's condition typ,
// nil when nothing.
func listenerStatus(l mesh.APIListener, typ string) *writtenCondition {
	var st = l.StatusAccepted
	switch typ {
	case "Programmed":
		st = l.StatusProgrammed
	case "ResolvedRefs":
		st = l.StatusResolvedRefs
	}
	if st == nil {
		return nil
	}
	return &writtenCondition{Status: st.Status, Reason: st.Reason, Stale: st.Stale}
}

// modelResolvedRefs is the ResolvedRefs reason the model's verdicts give
// a route's parent of the gateway (or the mesh): a conversion error's, else
// the first backend istiod cannot use, else ResolvedRefs. A port the
// Service lacks is not checked by istiod.
func modelResolvedRefs(r mesh.RouteVerdict, forMesh bool) string {
	if r.Hard != "" {
		return r.HardReason
	}
	for _, b := range r.Backends {
		if b.Mesh == forMesh && b.Invalid != "" && b.Invalid != mesh.BackendPortMissing {
			return b.Invalid
		}
	}
	return "ResolvedRefs"
}
