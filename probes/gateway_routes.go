package probes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// GatewayRoutesProbe judges an ingress (or egress) gateway as the caller:
// from configuration, which Gateways select its pod, which VirtualServices
// are bound to them and for which hosts, and whether any virtual host
// sends requests to the target (the config model's gateway binding); at
// runtime, whether the gateway's Envoy holds a route to the target's
// clusters, and which request hosts its access log answered 404 NR.
type GatewayRoutesProbe struct{}

func (GatewayRoutesProbe) Meta() Meta {
	return Meta{
		ID:    "gateway-routes",
		Title: "Ingress gateway: Gateway and VirtualService binding, and its routes to the target",
		Reads: []string{"gateways", "virtualservices", "destinationrules", "services", "pods", "endpointslices", "configmaps (mesh config)",
			"pods/portforward (Envoy admin /config_dump of the gateway)", "pods/log (istio-proxy of the gateway)"},
		Facts: []FactSpec{
			{"gateway_selecting", FactList, "namespace/name of the Istio Gateways whose selector matches the gateway pod"},
			{"gateway_route_to_target", FactBool, "from configuration: a virtual host of the gateway sends requests to the target (a VirtualService bound to a selecting Gateway, for a host of its servers, routes there)"},
			{"gateway_hosts", FactList, "the request hosts (host:Gateway port) whose routes reach the target, from configuration"},
			{"gateway_vs_to_target", FactList, "VirtualServices (namespace/name) with a route to the target, bound to the gateway or not"},
			{"gateway_vs_unbound", FactList, "VirtualServices routing to the target that the gateway does not apply: no gateways (sidecars only), a Gateway that does not exist or does not select the pod, or exportTo hiding them from its namespace"},
			{"gateway_vs_host_mismatch", FactList, "VirtualServices routing to the target, bound to a selecting Gateway, none of whose hosts is a host of its servers (for their namespace)"},
			{"gateway_unbound_why", FactString, "why the first VirtualService of gateway_vs_unbound or gateway_vs_host_mismatch does not route the gateway's requests (empty when none)"},
			{"gateway_envoy_route_to_target", FactBool, "the gateway's Envoy (config_dump) has a route to a cluster of the target in a gateway route configuration"},
			{"gateway_envoy_hosts", FactList, "domains of the gateway Envoy's virtual hosts with a route to the target"},
			{"gateway_log_nr", FactInt, "entries of the gateway's access log answered 404 NR (no route), whatever their host"},
			{"gateway_nr_hosts", FactList, "request hosts (authority) of the gateway's 404 NR entries, most frequent first"},
			{"gateway_nr_hosts_unrouted", FactList, "hosts of gateway_nr_hosts for which the gateway's Envoy picks no virtual host, or one without any route: a Host no Gateway server and bound VirtualService name (a path mismatch is not counted)"},
		},
	}
}

type gatewayRoutesInput struct {
	// Skip says why the probe does not apply ("" when it does).
	Skip string
	CV   callerview.View
	// Routes are the gateway Envoy's route configurations; RoutesProblem
	// says why they could not be read.
	Routes        []envoy.RouteConfig
	RoutesProblem string
	// NR are the gateway's 404 NR entries; LogLines counts the entries read;
	// LogProblem says why the log could not be read.
	NR         []accesslog.Entry
	LogLines   int
	LogProblem string
}

func (p GatewayRoutesProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchGatewayRoutes(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = gatewayRoutesCommands(t, nil)
		return r
	}
	return evaluateGatewayRoutes(t, in)
}

func fetchGatewayRoutes(ctx context.Context, c cluster.Cluster, t cluster.Target) (in gatewayRoutesInput, what string, err error) {
	if t.Source == nil {
		in.Skip = "no source pod named: the gateway step needs the gateway pod as the caller (--from pod/NAME)"
		return in, "", nil
	}
	src := *t.Source
	// Every triage runs this step: for a caller that is no gateway it
	// reads the pod alone (the target step read it already).
	if pod, err := c.GetPod(ctx, src.Namespace, src.Name); err == nil {
		if gateway, _ := mesh.GatewayPod(pod); !gateway {
			in.Skip = fmt.Sprintf("source pod %s is not an Istio gateway (its istio-proxy does not run `proxy router`)", src)
			return in, "", nil
		}
	}
	var (
		body    []byte
		bodyErr error
		logs    []byte
		logErr  error
		g       readgroup.Group
		cvWhat  string
		cvErr   error
		formats accesslog.Formats
	)
	g.Go(func() { in.CV, cvWhat, cvErr = callerview.Fetch(ctx, c, t) })
	g.Go(func() { body, bodyErr = c.EnvoyAdmin(ctx, src, envoyadmin.ConfigDumpPath) })
	g.Go(func() { logs, logErr = proxylog.NewestProxyLog(ctx, c, src, proxylog.AccessLogTailLines) })
	// The mesh's access-log format, so a log in its own keys is read (the
	// access-log step reports a format that cannot be read).
	g.Go(func() { formats, _ = istioconfig.ReadAccessLogFormats(ctx, c) })
	g.Wait()
	if cvErr != nil {
		return in, cvWhat, cvErr
	}
	if !in.CV.Caller.Gateway {
		in.Skip = fmt.Sprintf("source pod %s is not an Istio gateway (its istio-proxy does not run `proxy router`)", src)
		return in, "", nil
	}
	if bodyErr != nil {
		in.RoutesProblem = cluster.AccessProblem(fmt.Sprintf("read Envoy %s of %s", envoyadmin.ConfigDumpPath, src), bodyErr)
	} else if rcs, err := envoy.StreamRouteConfigs(envoyadmin.ContextReader(ctx, bytes.NewReader(body))); err != nil {
		in.RoutesProblem = cluster.AccessProblem(fmt.Sprintf("parse Envoy %s of %s", envoyadmin.ConfigDumpPath, src), err)
	} else {
		in.Routes = envoy.GatewayRouteConfigs(rcs)
	}
	if logErr != nil {
		in.LogProblem = cluster.AccessProblem(fmt.Sprintf("read the %s log of %s", mesh.ProxyContainer, src), logErr)
		return in, "", nil
	}
	sc := bufio.NewScanner(bytes.NewReader(logs))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		e, ok := formats.ParseLine(sc.Text())
		if !ok {
			continue
		}
		in.LogLines++
		if e.HasFlag("NR") && !e.TCP {
			in.NR = append(in.NR, e)
		}
	}
	return in, "", nil
}

func evaluateGatewayRoutes(t cluster.Target, in gatewayRoutesInput) Result {
	if in.Skip != "" {
		return skippedResult(in.Skip, gatewayRoutesCommands(t, nil))
	}
	r := Result{Status: StatusPass, Facts: Facts{}, Commands: gatewayRoutesCommands(t, in.Routes)}
	cv := in.CV
	// The port whose binding is most broken speaks for the facts.
	main := cv.Views[0]
	for _, v := range cv.Views {
		if len(v.Gateway.Hosts) < len(main.Gateway.Hosts) {
			main = v
		}
	}
	b := main.Gateway
	var toTarget, unbound, hostMismatch []string
	why := ""
	for _, v := range b.VirtualServices {
		if !v.RoutesTarget {
			continue
		}
		toTarget = append(toTarget, v.Ref())
		switch v.Reason {
		case mesh.GatewayMeshOnly, mesh.GatewayMissing, mesh.GatewayNotSelecting, mesh.GatewayNotExported:
			unbound = append(unbound, v.Ref())
		case mesh.GatewayHostMismatch:
			hostMismatch = append(hostMismatch, v.Ref())
		default:
			continue
		}
		if why == "" {
			why = v.Ref() + ": " + v.Why
		}
	}
	// A Gateway API Gateway's Deployment is routed by its HTTPRoutes,
	// which the model does not read: the Istio Gateways' binding would say
	// nothing routes it. Its configuration facts stay unknown; its Envoy
	// and log still speak.
	gatewayAPI := b.GatewayAPI != ""
	if !gatewayAPI {
		r.Facts["gateway_selecting"] = nonNil(b.Selecting())
		r.Facts["gateway_route_to_target"] = len(b.Hosts) > 0
		r.Facts["gateway_hosts"] = nonNil(b.Hosts)
		r.Facts["gateway_vs_to_target"] = nonNil(toTarget)
		r.Facts["gateway_vs_unbound"] = nonNil(unbound)
		r.Facts["gateway_vs_host_mismatch"] = nonNil(hostMismatch)
		r.Facts["gateway_unbound_why"] = why
	}

	r.Evidence.Columns = []string{"kind", "name", "hosts", "verdict"}
	for _, g := range b.Gateways {
		r.Evidence.Rows = append(r.Evidence.Rows, []string{"Gateway", g.Ref(), g.Host, g.Why})
	}
	for _, s := range b.Servers {
		verdict := fmt.Sprintf("listener %d, routes %s", s.ListenerPort, wording.Dash(s.RouteName))
		if s.Rejected != "" {
			verdict = "rejected: " + s.Rejected
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{"server", s.Ref(), strings.Join(s.Hosts, ","), verdict})
	}
	for _, v := range b.VirtualServices {
		kind := "VirtualService"
		if v.RoutesTarget {
			kind += " (to target)"
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{kind, v.Ref(), v.Host, v.Why})
	}

	// Runtime: the routes the gateway's Envoy holds.
	var envoyHosts []string
	routed := false
	if in.RoutesProblem == "" {
		match := func(name string) bool {
			for _, v := range cv.Views {
				if envoy.IsTargetCluster(name, v.Host, v.Port) {
					return true
				}
			}
			return false
		}
		for _, rc := range in.Routes {
			for _, vh := range rc.VirtualHosts {
				rs := vh.Routed(match)
				verdict := "no route to the target"
				if len(rs) > 0 {
					routed = true
					for _, d := range vh.Domains {
						if !slices.Contains(envoyHosts, d) {
							envoyHosts = append(envoyHosts, d)
						}
					}
					var ms []string
					for _, x := range rs {
						ms = append(ms, x.Match)
					}
					verdict = "routes " + strings.Join(ms, ", ") + " to the target"
				}
				if len(vh.Routes) == 0 {
					verdict = "no route at all: every request gets 404 NR"
				}
				r.Evidence.Rows = append(r.Evidence.Rows, []string{"Envoy route " + rc.Name, vh.Name, strings.Join(vh.Domains, ","), verdict})
			}
		}
		r.Facts["gateway_envoy_route_to_target"] = routed
		r.Facts["gateway_envoy_hosts"] = nonNil(envoyHosts)
	}

	// Runtime: the hosts the gateway answered 404 NR.
	var nrHosts, unrouted []string
	if in.LogProblem == "" {
		counts := map[string]int{}
		unroutedSet := map[string]bool{}
		for _, e := range in.NR {
			host := strings.ToLower(e.Authority)
			counts[host]++
			if in.RoutesProblem == "" && nrHostUnrouted(in.Routes, e) {
				unroutedSet[host] = true
			}
		}
		nrHosts = byCount(counts)
		for _, h := range nrHosts {
			if unroutedSet[h] {
				unrouted = append(unrouted, h)
			}
			r.Evidence.Rows = append(r.Evidence.Rows, []string{"404 NR", strconv.Itoa(counts[h]) + " requests", h, nrVerdict(unroutedSet[h], in.RoutesProblem)})
		}
		r.Facts["gateway_log_nr"] = len(in.NR)
		r.Facts["gateway_nr_hosts"] = nonNil(nrHosts)
		if in.RoutesProblem == "" {
			r.Facts["gateway_nr_hosts_unrouted"] = nonNil(unrouted)
		}
	}

	var raw []string
	for _, v := range cv.Views {
		raw = append(raw, v.Chain()...)
	}
	for _, p := range []string{in.RoutesProblem, in.LogProblem} {
		if p != "" {
			raw = append(raw, p)
		}
	}
	r.Evidence.Raw = strings.Join(raw, "\n")

	var problems, warnings []string
	switch {
	case gatewayAPI:
		warnings = append(warnings, "the gateway is Gateway API Gateway "+b.GatewayAPI+"'s: its HTTPRoutes are not judged here, only the routes its Envoy holds")
	case len(b.Selecting()) == 0:
		problems = append(problems, "no Gateway selects the gateway pod: it has no listener for the target's requests")
	case len(b.Hosts) == 0 && why != "":
		problems = append(problems, "no route of the gateway reaches "+t.Host()+": "+why)
	case len(b.Hosts) == 0 && len(toTarget) == 0:
		problems = append(problems, "no VirtualService routes requests to "+t.Host()+" (in the namespaces read)")
	case len(b.Hosts) == 0:
		problems = append(problems, "no route of the gateway reaches "+t.Host()+": "+strings.Join(verdictsOf(b, toTarget), "; "))
	}
	if in.RoutesProblem == "" && !routed && len(b.Hosts) > 0 && !gatewayAPI {
		warnings = append(warnings, "the configuration routes "+strings.Join(b.Hosts, ", ")+" to the target but the gateway's Envoy has no such route (a stale or rejected push?)")
	}
	if len(unrouted) > 0 {
		warnings = append(warnings, fmt.Sprintf("404 NR for host %s, which no virtual host of the gateway takes", strings.Join(unrouted, ", ")))
	}
	if main.Unmatched && len(b.Hosts) > 0 && !gatewayAPI {
		warnings = append(warnings, "every route to the target has a match condition: other paths get 404 NR")
	}
	warnings = append(warnings, main.Unknown...)
	for _, p := range []string{in.RoutesProblem, in.LogProblem} {
		if p != "" {
			warnings = append(warnings, p)
		}
	}
	head := "gateway routes " + strings.Join(b.Hosts, ", ") + " to " + t.Host()
	if gatewayAPI {
		head = "gateway's Envoy routes " + strings.Join(envoyHosts, ", ") + " to " + t.Host()
	}
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: warnings, FailWithWarnings: true, FailWithoutHead: true}.judge()
	return r
}

func verdictsOf(b *mesh.GatewayBinding, refs []string) []string {
	var out []string
	for _, v := range b.VirtualServices {
		if slices.Contains(refs, v.Ref()) {
			out = append(out, v.Ref()+": "+v.Why)
		}
	}
	return out
}

// nrHostUnrouted reports whether the gateway's Envoy picks no virtual host
// with a route for the entry's Host on the listener that took it (every
// gateway route configuration when the listener port is not logged).
func nrHostUnrouted(rcs []envoy.RouteConfig, e accesslog.Entry) bool {
	port := ""
	if _, p, err := net.SplitHostPort(e.DownstreamLocalAddress); err == nil {
		port = p
	}
	considered := 0
	for _, rc := range rcs {
		if port != "" && strings.HasPrefix(rc.Name, "http.") && strings.TrimPrefix(rc.Name, "http.") != port {
			continue
		}
		considered++
		if vh := rc.VirtualHostFor(e.Authority); vh != nil && len(vh.Routes) > 0 {
			return false
		}
	}
	return considered > 0
}

func nrVerdict(unrouted bool, routesProblem string) string {
	switch {
	case routesProblem != "":
		return "the gateway's routes could not be read"
	case unrouted:
		return "no virtual host of the gateway with a route takes this host"
	}
	return "a virtual host takes this host: the path or headers matched no route"
}

// byCount sorts keys by count, most first, then by name.
func byCount(counts map[string]int) []string {
	out := make([]string, 0, len(counts))
	for k := range counts {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if counts[out[i]] != counts[out[j]] {
			return counts[out[i]] > counts[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

func gatewayRoutesCommands(t cluster.Target, routes []envoy.RouteConfig) []string {
	cmds := []string{
		"kubectl get gateways.networking.istio.io -A",
		fmt.Sprintf("kubectl get virtualservices -A -o yaml | grep -B3 -A20 %s", t.Service),
		"istioctl analyze -A",
	}
	if t.Source != nil {
		src := *t.Source
		names := []string{}
		for _, rc := range routes {
			names = append(names, rc.Name)
		}
		if len(names) == 0 {
			names = []string{"http.8080"}
		}
		for _, n := range names {
			cmds = append(cmds, fmt.Sprintf("istioctl proxy-config routes %s.%s --name %s -o json", src.Name, src.Namespace, n))
		}
		cmds = append(cmds, fmt.Sprintf("kubectl logs -n %s %s -c %s --since=30m | grep ' NR '", src.Namespace, src.Name, mesh.ProxyContainer))
	}
	return cmds
}
