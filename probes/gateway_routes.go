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
			"gateways, httproutes, grpcroutes, tlsroutes, tcproutes, referencegrants, gatewayclasses (gateway.networking.k8s.io)",
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
			{"gateway_api_gateway", FactString, "namespace/name of the Gateway API Gateway whose pod the caller is (\"\" when it is none)"},
			{"gateway_api_partial", FactString, "why the Gateway API objects the verdicts rest on were not all read (\"\" when they were): a route, grant or Gateway not read may change them"},
			{"gateway_api_unattached", FactList, "Gateway API routes with a backendRef to the target that no listener of the caller's Gateway accepts, as ROUTE -> PARENT: REASON (NotAllowedByListeners, NoMatchingListenerHostname, NoMatchingParent, or no such Gateway)"},
			{"gateway_api_unattached_why", FactString, "why the first route of gateway_api_unattached is not attached, in istiod's words where it wrote them"},
			{"gateway_api_unattached_source", FactString, "where gateway_api_unattached comes from: status (istiod wrote it at the route's generation), model (no status: the model alone), disagree (istiod's status and the model differ), stale (istiod's status is of an older generation); \"\" when the list is empty"},
			{"gateway_api_backend_not_found", FactList, "backendRefs of routes on the caller's Gateway that concern the target (or that its log shows answering 500 NC) naming a Service that does not exist (BackendNotFound), as ROUTE rule N: KIND NS/NAME:PORT"},
			{"gateway_api_backend_port_missing", FactList, "such backendRefs naming a port the Service does not have: istiod keeps ResolvedRefs True and routes to a cluster it never builds"},
			{"gateway_api_ref_not_permitted", FactList, "such backendRefs to another namespace, and certificateRefs of the caller's Gateway's listeners, that no ReferenceGrant admits (RefNotPermitted)"},
			{"gateway_api_backend_source", FactString, "where the backend verdicts come from: status (istiod's ResolvedRefs at the route's generation agrees), model, disagree or stale, as for gateway_api_unattached_source; \"\" when no backend is invalid"},
			{"gateway_api_broken_share", FactInt, "the largest share (%) of a route rule's requests that go to invalid backendRefs"},
			{"gateway_tls_credential_missing", FactList, "listeners of the caller's Gateway that istiod reports not programmed for their certificate (ResolvedRefs False InvalidCertificateRef at the Gateway's generation): the Secret is missing or holds no key pair"},
			{"gateway_tls_credential_source", FactString, "where gateway_tls_credential_missing comes from: status (istiod's listener status at the Gateway's generation), envoy (an Istio Gateway server's credentialName whose SDS secret the gateway's Envoy holds warming: istiod sent none; meshtriage reads no Secrets, so the model cannot prove the Secret absent); \"\" when the list is empty"},
			{"gateway_tls_credential_secrets", FactList, "the Secrets (namespace/name) the TLS credentials of gateway_tls_credential_missing name, where istiod reads them: an Istio Gateway's credentialName in the gateway pod's namespace, a Gateway API certificateRef in its own"},
			{"gateway_envoy_secrets_warming", FactList, "SDS secrets the gateway's Envoy holds warming (config_dump dynamic_warming_secrets): asked for and never sent"},
			{"gateway_tls_credential_stale", FactList, "as gateway_tls_credential_missing, from a status of an older generation of the Gateway"},
			{"gateway_listener_unreachable", FactList, "the gateway's servers and listeners no request reaches: an Istio Gateway port that no port of the gateway's Service is or targets (IST0162), a Gateway API listener port that is no port of its Service (AddressNotUsable), as SERVER: WHY"},
			{"gateway_log_nc500", FactInt, "entries of the gateway's access log answered 500 NC (cluster_not_found): a route to a cluster istiod does not build, under Gateway API semantics"},
			{"gateway_log_nc500_routes", FactList, "route names (route_name) of the gateway's 500 NC entries, most frequent first"},
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
	// NR are the gateway's 404 NR entries, NC500 its 500 NC ones; LogLines
	// counts the entries read; LogProblem says why the log could not be
	// read.
	NR         []accesslog.Entry
	NC500      []accesslog.Entry
	LogLines   int
	LogProblem string
	// SecretsWarming are the SDS secrets the gateway's Envoy holds
	// warming; SecretsProblem says why they could not be read.
	SecretsWarming []string
	SecretsProblem string
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
	if bodyErr != nil {
		in.SecretsProblem = in.RoutesProblem
	} else if dump, err := envoy.StreamConfigDump(envoyadmin.ContextReader(ctx, bytes.NewReader(body)), func(string) bool { return false }); err != nil {
		in.SecretsProblem = cluster.AccessProblem(fmt.Sprintf("parse the SDS secrets of Envoy %s of %s", envoyadmin.ConfigDumpPath, src), err)
	} else {
		in.SecretsWarming = dump.WarmingSecrets
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
		if e.HasFlag("NC") && e.ResponseCode == 500 {
			in.NC500 = append(in.NC500, e)
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
	// A Gateway API Gateway's pod is routed by its Gateway's listeners and
	// the routes attached to them, which the model converts as istiod
	// does. Where they were not read, the binding would say nothing
	// routes it: its configuration facts stay unknown; its Envoy and log
	// still speak.
	gatewayAPI := b.GatewayAPI != "" && !gatewayAPIJudged(b)
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

	nc500Routes := []string{}
	if in.LogProblem == "" {
		counts := map[string]int{}
		for _, e := range in.NC500 {
			counts[wording.Dash(e.RouteName)]++
		}
		nc500Routes = byCount(counts)
		r.Facts["gateway_log_nc500"] = len(in.NC500)
		r.Facts["gateway_log_nc500_routes"] = nonNil(nc500Routes)
		for _, rn := range nc500Routes {
			r.Evidence.Rows = append(r.Evidence.Rows, []string{"500 NC", strconv.Itoa(counts[rn]) + " requests", "route " + rn, "a route to a cluster istiod does not build (cluster_not_found)"})
		}
	}
	var apiProblems []string
	if !gatewayAPI {
		apiProblems = gatewayAPIFacts(r, t, b, main, nc500Routes, in.LogProblem == "")
	}
	if in.SecretsProblem == "" {
		apiProblems = append(apiProblems, warmingCredentialFacts(r, t, b, in.SecretsWarming)...)
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
	problems = append(problems, apiProblems...)
	switch {
	case gatewayAPI:
		warnings = append(warnings, "the gateway is Gateway API Gateway "+b.GatewayAPI+"'s, whose routes could not be judged ("+gatewayAPIUnjudged(b)+"): only the routes its Envoy holds speak")
	case len(apiProblems) > 0:
	case len(b.Selecting()) == 0:
		problems = append(problems, "no Gateway selects the gateway pod: it has no listener for the target's requests")
	case len(b.Hosts) == 0 && why != "":
		problems = append(problems, "no route of the gateway reaches "+t.Host()+": "+why)
	case len(b.Hosts) == 0 && len(toTarget) == 0:
		problems = append(problems, "no VirtualService or Gateway API route sends requests to "+t.Host()+" (in the namespaces read)")
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

// gatewayAPIJudged reports whether the model judged a Gateway API
// gateway's routing: its Gateway and the routes were read.
func gatewayAPIJudged(b *mesh.GatewayBinding) bool {
	return gatewayAPIUnjudged(b) == ""
}

// gatewayAPIUnjudged says why a Gateway API gateway's routing could not
// be judged, "" when it was.
func gatewayAPIUnjudged(b *mesh.GatewayBinding) string {
	switch {
	case b.API == nil:
		return "its Gateway and routes were not read"
	case b.API.Gateway == nil:
		return b.API.GatewayUnknown
	}
	// The Gateways and HTTPRoutes carry the gateway's routing; the other
	// kinds (GRPCRoutes, TCP and TLS routes, grants), when not read, leave
	// the verdicts partial (gateway_api_partial), not void: a dump
	// without a GRPCRoute is the common case.
	for _, u := range b.API.Unknown {
		if strings.HasPrefix(u, mesh.KindGateway+"s: ") || strings.HasPrefix(u, mesh.KindHTTPRoute+"s: ") {
			return u
		}
	}
	return ""
}

// gatewayAPIFacts sets the Gateway API facts of the caller's binding on r
// and returns the problems they are. A route counts when it sends to the
// target, or its rule's route name answered 500 NC in the gateway's log;
// its verdicts are istiod's own where it wrote them at the route's
// generation, else the model's.
func gatewayAPIFacts(r Result, t cluster.Target, b *mesh.GatewayBinding, v *mesh.View, nc500Routes []string, logRead bool) []string {
	api := b.API
	gw := api.GatewayRef()
	r.Facts["gateway_api_gateway"] = gw
	r.Facts["gateway_api_partial"] = strings.Join(api.Unknown, "; ")
	var unattached, notFound, portMissing, refused, tlsMissing, tlsSecrets, tlsStale, unreachable []string
	why, source, backendSource := "", "", ""
	share := 0
	var problems []string
	for _, rv := range api.Routes {
		toTarget := rv.SendsTo(t.Host())
		if toTarget {
			if u, w, src, ok := rv.Unattached(api.Gateway); ok {
				unattached = append(unattached, u)
				if why == "" {
					why, source = w, src
				}
				problems = append(problems, u+": "+w)
				continue
			}
		}
		attached := rv.AttachedTo(api.Gateway)
		if !attached || !toTarget && !(logRead && rv.NamedIn(nc500Routes)) {
			continue
		}
		for _, bv := range rv.InvalidBackends(false) {
			entry := bv.Entry(rv.Route)
			switch bv.Invalid {
			case mesh.BackendNotFound, mesh.BackendInvalidKind:
				notFound = append(notFound, entry)
			case mesh.BackendPortMissing:
				portMissing = append(portMissing, entry)
			case mesh.BackendRefNotAllowed:
				refused = append(refused, entry)
			}
			problems = append(problems, fmt.Sprintf("%s (%d%% of the rule's requests): %s, 500 NC", entry, bv.Percent, bv.Why))
			if src := rv.BackendSource(api.Gateway, bv); backendSource == "" || src != "status" && src != "model" {
				backendSource = src
			}
		}
		if s := rv.BrokenShare(false); s > share {
			share = s
		}
	}
	if g := api.Gateway; g != nil {
		for _, l := range g.Listeners {
			if l.NotProgrammedReason == "RefNotPermitted" {
				refused = append(refused, l.Ref()+": "+l.NotProgrammed)
				problems = append(problems, l.Ref()+" is not programmed: "+l.NotProgrammed)
			}
			rr := l.StatusResolvedRefs
			if rr == nil || rr.Status != "False" || rr.Reason != "InvalidCertificateRef" {
				continue
			}
			entry := l.Ref() + ": " + rr.Message
			if rr.Stale {
				tlsStale = append(tlsStale, entry)
				continue
			}
			tlsMissing = append(tlsMissing, entry)
			for _, cred := range l.Credentials {
				tlsSecrets = append(tlsSecrets, strings.TrimPrefix(cred, "kubernetes-gateway://"))
			}
			problems = append(problems, l.Ref()+" is not programmed (no TLS listener for it): "+rr.Message)
		}
	}
	for _, s := range b.Servers {
		switch {
		case s.Unreachable != "":
			unreachable = append(unreachable, s.Ref()+": "+s.Unreachable)
		case strings.Contains(s.Rejected, "AddressNotUsable"):
			unreachable = append(unreachable, s.Ref()+": "+s.Rejected)
		default:
			continue
		}
		problems = append(problems, unreachable[len(unreachable)-1])
	}
	r.Facts["gateway_api_unattached"] = nonNil(unattached)
	r.Facts["gateway_api_unattached_why"] = why
	r.Facts["gateway_api_unattached_source"] = source
	r.Facts["gateway_api_backend_not_found"] = nonNil(notFound)
	r.Facts["gateway_api_backend_port_missing"] = nonNil(portMissing)
	r.Facts["gateway_api_ref_not_permitted"] = nonNil(refused)
	r.Facts["gateway_api_backend_source"] = backendSource
	r.Facts["gateway_api_broken_share"] = share
	r.Facts["gateway_tls_credential_missing"] = nonNil(tlsMissing)
	r.Facts["gateway_tls_credential_secrets"] = nonNil(tlsSecrets)
	r.Facts["gateway_tls_credential_source"] = ""
	if len(tlsMissing) > 0 {
		r.Facts["gateway_tls_credential_source"] = "status"
	}
	r.Facts["gateway_tls_credential_stale"] = nonNil(tlsStale)
	r.Facts["gateway_listener_unreachable"] = nonNil(unreachable)
	return problems
}

// warmingCredentialFacts sets the facts of the gateway's TLS servers whose
// credential its Envoy holds warming and returns the problems they are.
// An Istio Gateway's credentialName NAME is the SDS resource
// kubernetes://NAME, which istiod reads from the gateway pod's namespace;
// when it finds no Secret it sends nothing and Envoy keeps the secret
// warming: each connection on that filter chain is reset. meshtriage
// reads no Secrets: the warming secret is the evidence, istiod's status
// (Gateway API listeners) stays the stronger one and keeps its source.
func warmingCredentialFacts(r Result, t cluster.Target, b *mesh.GatewayBinding, warming []string) []string {
	r.Facts["gateway_envoy_secrets_warming"] = nonNil(slices.Clone(warming))
	var missing, secrets, problems []string
	for _, s := range b.Servers {
		if s.Credential == "" || s.Rejected != "" || !slices.Contains(warming, s.Credential) {
			continue
		}
		ns, name := t.Source.Namespace, strings.TrimPrefix(s.Credential, "kubernetes://")
		if rest, ok := strings.CutPrefix(s.Credential, "kubernetes-gateway://"); ok {
			ns, name, _ = strings.Cut(rest, "/")
		}
		secret := ns + "/" + name
		entry := fmt.Sprintf("%s: SDS secret %s is warming in the gateway's Envoy: istiod sent no Secret %s (namespace %s, the gateway pod's)", s.Ref(), s.Credential, name, ns)
		if strings.HasPrefix(s.Credential, "kubernetes-gateway://") {
			entry = fmt.Sprintf("%s: SDS secret %s is warming in the gateway's Envoy: istiod sent no Secret %s", s.Ref(), s.Credential, secret)
		}
		missing = append(missing, entry)
		if !slices.Contains(secrets, secret) {
			secrets = append(secrets, secret)
		}
		problems = append(problems, entry+": TLS connections on that server are reset")
	}
	if len(missing) == 0 {
		return nil
	}
	if src, _ := r.Facts["gateway_tls_credential_source"].(string); src == "status" {
		return nil // istiod's own word already says it
	}
	r.Facts["gateway_tls_credential_missing"] = missing
	r.Facts["gateway_tls_credential_secrets"] = secrets
	r.Facts["gateway_tls_credential_source"] = "envoy"
	return problems
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
