package probes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/wording"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/labels"
)

// DestinationRulesProbe reads, from the config model, how the caller's
// proxy routes the target: is the Service visible to it at all, which
// VirtualService routes it and with what weights, which DestinationRule
// applies, which clusters those routes reach and whether they have
// endpoints; and traffic policies set so tight that they cause 503s.
type DestinationRulesProbe struct{}

func (DestinationRulesProbe) Meta() Meta {
	return Meta{
		ID:    "destination-rules",
		Title: "Routing: visibility, VirtualServices and DestinationRules for the host",
		Reads: []string{"destinationrules", "virtualservices", "sidecars", "serviceentries", "peerauthentications", "pods", "services", "endpointslices", "nodes (only for subsets on locality labels)", "configmaps (mesh config)"},
		Facts: []FactSpec{
			{"visibility_visible", FactBool, "the caller's proxy has config for the Service (its exportTo and the caller's Sidecar egress hosts let it through)"},
			{"visibility_hidden_by", FactString, "what hides the Service from the caller: the Service's exportTo or the caller's Sidecar egress hosts (empty when visible)"},
			{"visibility_fallback", FactString, "where the caller's traffic for a hidden Service goes: PassthroughCluster (ALLOW_ANY) or BlackHoleCluster (REGISTRY_ONLY); empty when visible"},
			{"dr_found", FactBool, "a DestinationRule applies to the target host for the caller"},
			{"dr_names", FactList, "namespace/name of the DestinationRules that apply (Istio merges same-host rules of one namespace)"},
			{"dr_subsets_without_pods", FactList, "subsets (dr-name/subset) of the applying rule whose cluster has no serving endpoint"},
			{"dr_subsets_without_pods_routed", FactList, "the subsets of dr_subsets_without_pods that a route of the caller's VirtualService sends requests to (mirrors aside): only these turn requests into 503 UH"},
			{"dr_subset_no_pods_percent", FactInt, "the largest share (percent) of one route's requests sent to subsets without a serving endpoint"},
			{"dr_subsets_undecided", FactList, "subsets (dr-name/subset) of the applying rule with no serving endpoint known, but endpoints whose selection is undecided (their pod, or a node label, is not known): neither in dr_subsets_without_pods nor judged to serve"},
			{"vs_found", FactBool, "a VirtualService routes the target host for the caller"},
			{"vs_undefined_subsets", FactList, "subsets (vs-name/subset) the caller's VirtualService routes to that the applying DestinationRules do not define"},
			{"vs_undefined_subset_percent", FactInt, "the largest share (percent) of one route's requests sent to undefined subsets (503 NC)"},
			{"vs_routed_hidden_services", FactList, "Services a route of the caller's VirtualService sends to whose exportTo hides them from the caller: istiod builds no cluster for them (503 NC)"},
			{"vs_routed_missing_hosts", FactList, "hosts a route sends to that no Service or ServiceEntry visible to the caller declares (none at all, or a ServiceEntry whose exportTo hides it): no cluster (503 NC); a ServiceEntry is the fix"},
			{"dr_rules_partial", FactString, "why the Istio rules read are not all of istiod's (listing a kind across all namespaces was refused, so only some namespaces were read); empty when they are: with a partial set, an absence (no ServiceEntry, another VirtualService) is not certain"},
			{"dr_routes_unknown", FactString, "why the VirtualService that routes the host for the caller is not certain (a namespace not read could hold one that wins); empty when it is"},
			{"dr_outlier_consecutive_5xx", FactInt, "outlierDetection consecutive5xxErrors of the Service's cluster (0 when unset)"},
			{"dr_outlier_consecutive_gateway_errors", FactInt, "outlierDetection consecutiveGatewayErrors, or the deprecated consecutiveErrors (which Istio maps to gateway errors), of the Service's cluster (0 when unset)"},
			{"dr_outlier_max_ejection_percent", FactInt, "outlierDetection maxEjectionPercent (0 when unset: Envoy then uses 10)"},
			{"dr_outlier_aggressive", FactBool, "consecutive5xxErrors or consecutiveGatewayErrors 1, or maxEjectionPercent 100, on any cluster of the host"},
			{"dr_pool_tiny", FactBool, "connectionPool tcp.maxConnections, http.http1MaxPendingRequests or http.http2MaxRequests set below 10 (maxRequestsPerConnection 1 only disables keep-alive and does not count)"},
			{"dr_pool_limits", FactList, "connectionPool settings of the Service's cluster as name=value"},
			{"dr_idle_timeout_s", FactInt, "connectionPool.http.idleTimeout in seconds (0 when unset)"},
		},
	}
}

func (p DestinationRulesProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	cv, what, err := callerview.Fetch(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = drCommands(t, cv.Config, nil)
		return r
	}
	return evaluateDestinationRules(t, cv)
}

// subsetRuleName is the name of the first applying rule that defines
// subset, for facts written as rule/subset.
func subsetRuleName(rule *mesh.AppliedRule, subset string) string {
	if rule != nil {
		for _, dr := range rule.Rules {
			for _, s := range dr.Spec.GetSubsets() {
				if s.GetName() == subset {
					return dr.Name
				}
			}
		}
	}
	return "?"
}

func evaluateDestinationRules(t cluster.Target, cv callerview.View) Result {
	r := Result{Status: StatusPass, Facts: Facts{}}
	fqdn := t.Host()
	main := cv.Views[0]
	// The port most at fault speaks for the facts; the evidence shows all.
	for _, v := range cv.Views {
		if len(v.Breaks()) > len(main.Breaks()) {
			main = v
		}
	}
	vis := main.Visibility
	r.Facts["visibility_visible"] = vis.Visible || !cv.Caller.Sidecar
	r.Facts["visibility_hidden_by"] = vis.HiddenBy
	r.Facts["visibility_fallback"] = vis.Fallback

	rule := main.Rule
	r.Facts["dr_found"] = rule != nil
	r.Facts["dr_names"] = nonNil(rule.Names())

	r.Evidence.Columns = []string{"kind", "rule", "host", "detail", "verdict"}
	var raw []string
	withoutPods, withoutPodsRouted, undefined, undecided := []string{}, []string{}, []string{}, []string{}
	var undecidedWhy []string
	subsetDetail := map[string][]string{}
	if rule != nil {
		for _, ss := range rule.Subsets {
			cl := cv.Config.SubsetCluster(cv.Caller, fqdn, main.Port, ss.GetName())
			detail := fmt.Sprintf("%s(%d/%d endpoints serving)", ss.GetName(), cl.Serving(), len(cl.Endpoints))
			switch {
			case cl.Exists && cl.Serving() == 0 && cl.Undecided == 0:
				withoutPods = append(withoutPods, subsetRuleName(rule, ss.GetName())+"/"+ss.GetName())
			case cl.Exists && cl.Serving() == 0:
				undecided = append(undecided, subsetRuleName(rule, ss.GetName())+"/"+ss.GetName())
				detail = fmt.Sprintf("%s(no serving endpoint known, %d undecided)", ss.GetName(), cl.Undecided)
				undecidedWhy = append(undecidedWhy, fmt.Sprintf("whether subset %s has a serving endpoint is undecided (%s)", ss.GetName(), cl.Unknown[0]))
			}
			name := subsetRuleName(rule, ss.GetName())
			subsetDetail[name] = append(subsetDetail[name], detail)
		}
	}
	r.Facts["dr_subsets_without_pods"] = withoutPods
	r.Facts["dr_subsets_undecided"] = undecided
	for _, v := range main.DestinationRules {
		detail := "no subsets"
		if d := subsetDetail[v.Name]; len(d) > 0 && v.Applies {
			detail = "subsets " + strings.Join(d, " ")
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{"DestinationRule", v.Ref(), v.Host, detail, v.Why})
	}
	for _, v := range main.VirtualServices {
		r.Evidence.Rows = append(r.Evidence.Rows, []string{"VirtualService", v.Ref(), v.Host, "", v.Why})
	}
	for _, rt := range main.Routes {
		var dests []string
		for _, d := range rt.Destinations {
			dests = append(dests, fmt.Sprintf("%d%% %s", d.Percent, d.Cluster))
		}
		for _, d := range rt.Mirrors {
			dests = append(dests, "mirror "+d.Cluster)
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{"route", strings.TrimSpace(rt.VirtualService + " " + rt.Name), fqdn, strings.Join(dests, ", "), routeVerdict(main, rt)})
	}
	var problems []string
	hiddenServices, missingHosts := []string{}, []string{}
	for _, b := range main.Breaks() {
		share := fmt.Sprintf("%d%% of %s's requests", b.Destination.Percent, strings.TrimSpace(b.Route.VirtualService+" "+b.Route.Name))
		switch b.Reason {
		case mesh.BreakSubsetEmpty:
			withoutPodsRouted = append(withoutPodsRouted, subsetRuleName(rule, b.Destination.Subset)+"/"+b.Destination.Subset)
			problems = append(problems, fmt.Sprintf("%s go to subset %s, which has no serving endpoint (503 UH)", share, b.Destination.Subset))
		case mesh.BreakSubsetUndefined:
			vsName := "default"
			if main.VirtualService != nil {
				vsName = main.VirtualService.Name
			}
			undefined = append(undefined, vsName+"/"+b.Destination.Subset)
			problems = append(problems, fmt.Sprintf("%s go to %s (503 NC)", share, b.Why))
		case mesh.BreakServiceHidden:
			hiddenServices = wording.AppendUnique(hiddenServices, b.Destination.Host)
			problems = append(problems, fmt.Sprintf("%s go to %s, for which the caller has no cluster: %s (503 NC)", share, b.Destination.Host, b.Why))
		case mesh.BreakNoEntry:
			missingHosts = wording.AppendUnique(missingHosts, b.Destination.Host)
			problems = append(problems, fmt.Sprintf("%s go to %s, for which the caller has no cluster: %s (503 NC)", share, b.Destination.Host, b.Why))
		case mesh.BreakNoCluster:
			problems = append(problems, fmt.Sprintf("%s go to %s, for which the caller has no cluster: %s (503 NC)", share, b.Destination.Host, b.Why))
		case mesh.BreakServiceEmpty:
			// The endpoints step owns a Service without endpoints; here it
			// is context, not a routing problem.
			raw = append(raw, fmt.Sprintf("%s go to %s, which has no serving endpoint (503 UH): see the endpoints step", share, b.Destination.Host))
		case mesh.BreakBlackHole:
			problems = append(problems, share+" go to BlackHoleCluster (502)")
		}
	}
	if !vis.Visible && cv.Caller.Sidecar {
		problems = append([]string{fmt.Sprintf("the caller's proxy has no config for %s: %s; its requests go to %s", fqdn, vis.HiddenBy, vis.Fallback)}, problems...)
	}
	if main.Unmatched {
		raw = append(raw, "every route has a match condition: requests that match none get 404 NR")
	}
	r.Facts["dr_subsets_without_pods_routed"] = withoutPodsRouted
	r.Facts["vs_routed_hidden_services"] = hiddenServices
	r.Facts["vs_routed_missing_hosts"] = missingHosts
	r.Facts["dr_rules_partial"] = cv.Config.RulesPartial
	r.Facts["dr_routes_unknown"] = main.RoutesUnknown
	r.Facts["vs_undefined_subsets"] = undefined
	noPods, _ := main.BrokenShare(mesh.BreakSubsetEmpty)
	undef, _ := main.BrokenShare(mesh.BreakSubsetUndefined)
	r.Facts["dr_subset_no_pods_percent"] = noPods
	r.Facts["vs_undefined_subset_percent"] = undef
	vsFound := main.VirtualService != nil
	r.Facts["vs_found"] = vsFound

	// Traffic policy of the Service's own cluster, as Envoy gets it; the
	// subsets' policies can only add flags.
	mainPolicy := poolReading{}
	var readings []poolReading
	if rule != nil {
		mainPolicy = readPolicy(fmt.Sprintf("%s port %d", rule.PolicyFrom, main.Port), rule.ClusterPolicy(main.Port, ""))
		readings = append(readings, mainPolicy)
		for _, ss := range rule.Subsets {
			if ss.GetTrafficPolicy() != nil {
				readings = append(readings, readPolicy(fmt.Sprintf("%s subset %s", subsetRuleName(rule, ss.GetName()), ss.GetName()), rule.ClusterPolicy(main.Port, ss.GetName())))
			}
		}
	}
	c5xx, gw, maxEject := 0, 0, 0
	if od := mainPolicy.Outlier; od != nil {
		c5xx, gw, maxEject = int(od.GetConsecutive_5XxErrors().GetValue()), outlierGatewayErrors(od), int(od.GetMaxEjectionPercent())
	}
	r.Facts["dr_outlier_consecutive_5xx"] = c5xx
	r.Facts["dr_outlier_consecutive_gateway_errors"] = gw
	r.Facts["dr_outlier_max_ejection_percent"] = maxEject
	idle := 0
	if d := mainPolicy.Pool.GetHttp().GetIdleTimeout(); d != nil {
		idle = int(d.AsDuration().Seconds())
	}
	r.Facts["dr_idle_timeout_s"] = idle
	r.Facts["dr_pool_limits"] = nonNil(mainPolicy.Limits)

	var aggressive, tiny []string
	for _, pr := range readings {
		if od := pr.Outlier; od != nil {
			raw = append(raw, fmt.Sprintf("outlierDetection (%s): %s", pr.Scope, describeOutlier(od)))
		}
		if len(pr.Limits) > 0 {
			raw = append(raw, fmt.Sprintf("connectionPool (%s): %s", pr.Scope, strings.Join(pr.Limits, " ")))
		}
		if pr.Pool.GetHttp().GetMaxRequestsPerConnection() == 1 {
			raw = append(raw, fmt.Sprintf("connectionPool (%s): maxRequestsPerConnection 1 disables keep-alive (a new connection per request), it limits nothing", pr.Scope))
		}
		for _, a := range pr.Aggressive {
			aggressive = append(aggressive, pr.Scope+": "+a)
		}
		for _, x := range pr.Tiny {
			tiny = append(tiny, pr.Scope+": "+x)
		}
	}
	r.Facts["dr_outlier_aggressive"] = len(aggressive) > 0
	r.Facts["dr_pool_tiny"] = len(tiny) > 0

	raw = append(raw, main.Chain()...)
	if !cv.CallerNamed {
		raw = append(raw, "no source pod named: judged for a meshed pod in "+t.Namespace+" (use --from pod/NAME)")
	}
	r.Evidence.Raw = strings.Join(raw, "\n")

	var warnings []string
	for _, sub := range withoutPods {
		if !slices.Contains(withoutPodsRouted, sub) {
			_, name, _ := strings.Cut(sub, "/")
			warnings = append(warnings, "subset "+name+" has no serving endpoint (no route sends to it)")
		}
	}
	if len(aggressive) > 0 {
		warnings = append(warnings, "aggressive outlier detection ("+strings.Join(aggressive, "; ")+")")
	}
	if len(tiny) > 0 {
		warnings = append(warnings, "tiny connection pool ("+strings.Join(tiny, "; ")+")")
	}
	for _, v := range main.DestinationRules {
		if strings.HasPrefix(v.Why, "never applies") {
			warnings = append(warnings, v.Ref()+" "+v.Why)
		}
	}
	for _, v := range main.VirtualServices {
		if strings.HasPrefix(v.Why, "never applies") {
			warnings = append(warnings, v.Ref()+" "+v.Why)
		}
	}
	if cv.Config.RulesPartial != "" {
		warnings = append(warnings, "the rule set is partial: "+cv.Config.RulesPartial)
	}
	warnings = append(warnings, undecidedWhy...)
	warnings = append(warnings, main.Unknown...)
	head := "no DestinationRule applies"
	if rule != nil {
		head = "DestinationRule " + strings.Join(rule.Names(), ", ") + " applies"
	}
	pass := head
	if vsFound {
		pass += "; VirtualService routes resolve"
	}
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: warnings, Pass: pass, FailWithWarnings: true, FailWithoutHead: true}.judge()
	r.Commands = drCommands(t, cv.Config, emptySubsetSelectors(cv, main, withoutPodsRouted))
	return r
}

// routeVerdict says what becomes of a route's requests.
func routeVerdict(v *mesh.View, rt mesh.Route) string {
	var bad []string
	for _, b := range v.Breaks() {
		if b.Route.Name == rt.Name && b.Route.VirtualService == rt.VirtualService {
			bad = append(bad, fmt.Sprintf("%d%% fail: %s", b.Destination.Percent, b.Why))
		}
	}
	if len(bad) == 0 {
		return "ok"
	}
	return strings.Join(bad, "; ")
}

// poolReading is one level of a rule's traffic policy, judged.
type poolReading struct {
	Scope      string // "shop/orders", "shop/orders port 80", "shop/orders subset v2"
	Outlier    *networkingv1alpha3.OutlierDetection
	Pool       *networkingv1alpha3.ConnectionPoolSettings
	Aggressive []string
	Tiny       []string
	Limits     []string
}

func readPolicy(scope string, tp *networkingv1alpha3.TrafficPolicy) poolReading {
	pr := poolReading{Scope: scope, Outlier: tp.GetOutlierDetection(), Pool: tp.GetConnectionPool()}
	if od := pr.Outlier; od != nil {
		if od.GetConsecutive_5XxErrors().GetValue() == 1 {
			pr.Aggressive = append(pr.Aggressive, "consecutive5xxErrors 1 ejects a host on its first 5xx")
		}
		if outlierGatewayErrors(od) == 1 {
			pr.Aggressive = append(pr.Aggressive, "consecutiveGatewayErrors 1 ejects a host on its first 502/503/504")
		}
		if od.GetMaxEjectionPercent() == 100 {
			pr.Aggressive = append(pr.Aggressive, "maxEjectionPercent 100 lets every host be ejected at once")
		}
	}
	if tcp := pr.Pool.GetTcp(); tcp != nil {
		if v := tcp.GetMaxConnections(); v > 0 {
			pr.Limits = append(pr.Limits, fmt.Sprintf("tcp.maxConnections=%d", v))
			if poolTiny(v) {
				pr.Tiny = append(pr.Tiny, fmt.Sprintf("tcp.maxConnections %d", v))
			}
		}
		if d := tcp.GetIdleTimeout(); d != nil {
			pr.Limits = append(pr.Limits, "tcp.idleTimeout="+d.AsDuration().String())
		}
		if d := tcp.GetMaxConnectionDuration(); d != nil {
			pr.Limits = append(pr.Limits, "tcp.maxConnectionDuration="+d.AsDuration().String())
		}
	}
	if h := pr.Pool.GetHttp(); h != nil {
		for _, l := range []struct {
			name string
			v    int32
			tiny bool
		}{
			{"http.http1MaxPendingRequests", h.GetHttp1MaxPendingRequests(), true},
			{"http.http2MaxRequests", h.GetHttp2MaxRequests(), true},
			// 1 means one request per connection: keep-alive off. It costs
			// a handshake per request but overflows nothing.
			{"http.maxRequestsPerConnection", h.GetMaxRequestsPerConnection(), false},
			{"http.maxRetries", h.GetMaxRetries(), false},
		} {
			if l.v <= 0 {
				continue
			}
			pr.Limits = append(pr.Limits, fmt.Sprintf("%s=%d", l.name, l.v))
			if l.tiny && poolTiny(l.v) {
				pr.Tiny = append(pr.Tiny, fmt.Sprintf("%s %d", strings.TrimPrefix(l.name, "http."), l.v))
			}
		}
		if d := h.GetIdleTimeout(); d != nil {
			pr.Limits = append(pr.Limits, "http.idleTimeout="+d.AsDuration().String())
		}
	}
	return pr
}

// outlierGatewayErrors is consecutiveGatewayErrors, or the deprecated
// consecutiveErrors, which Istio maps to Envoy's consecutive gateway
// failures (502, 503, 504) and not to consecutive 5xx.
func outlierGatewayErrors(od *networkingv1alpha3.OutlierDetection) int {
	if v := od.GetConsecutiveGatewayErrors(); v != nil {
		return int(v.GetValue())
	}
	return int(od.GetConsecutiveErrors())
}

func describeOutlier(od *networkingv1alpha3.OutlierDetection) string {
	var parts []string
	switch {
	case od.GetConsecutive_5XxErrors() != nil:
		parts = append(parts, fmt.Sprintf("consecutive5xxErrors %d", od.GetConsecutive_5XxErrors().GetValue()))
	case od.GetConsecutiveErrors() != 0:
		parts = append(parts, fmt.Sprintf("consecutiveErrors %d (deprecated; counts 502/503/504)", od.GetConsecutiveErrors()))
	default:
		parts = append(parts, "consecutive5xxErrors unset (Envoy default 5)")
	}
	if v := od.GetConsecutiveGatewayErrors(); v != nil {
		parts = append(parts, fmt.Sprintf("consecutiveGatewayErrors %d", v.GetValue()))
	}
	if v := od.GetMaxEjectionPercent(); v != 0 {
		parts = append(parts, fmt.Sprintf("maxEjectionPercent %d", v))
	} else {
		parts = append(parts, "maxEjectionPercent unset (Envoy default 10%; Envoy still ejects one host, all of a one-pod service)")
	}
	if d := od.GetBaseEjectionTime(); d != nil {
		parts = append(parts, "baseEjectionTime "+d.AsDuration().String())
	}
	if d := od.GetInterval(); d != nil {
		parts = append(parts, "interval "+d.AsDuration().String())
	}
	if v := od.GetMinHealthPercent(); v != 0 {
		parts = append(parts, fmt.Sprintf("minHealthPercent %d", v))
	}
	return strings.Join(parts, ", ")
}

// emptySubsetSelectors are the label selectors of the routed subsets that
// have no serving endpoint, for the commands that list their pods.
func emptySubsetSelectors(cv callerview.View, v *mesh.View, routed []string) []string {
	var out []string
	for _, key := range routed {
		_, subset, _ := strings.Cut(key, "/")
		if ss := v.Rule.Subset(subset); ss != nil {
			sel := map[string]string{}
			for k, val := range v.Service.Spec.Selector {
				sel[k] = val
			}
			for k, val := range ss.GetLabels() {
				sel[k] = val
			}
			out = append(out, labels.SelectorFromSet(sel).String())
		}
	}
	return out
}

func drCommands(t cluster.Target, cfg *mesh.Config, emptySubsetSelectors []string) []string {
	root := ""
	if cfg != nil {
		root = cfg.RootNamespace
	}
	var cmds []string
	for _, ns := range wording.UniqueNonEmpty(t.Namespace, sourceNamespace(t), root) {
		cmds = append(cmds, fmt.Sprintf("kubectl get destinationrules,virtualservices -n %s -o yaml", ns))
	}
	if t.Source != nil {
		cmds = append(cmds, fmt.Sprintf("istioctl proxy-config cluster %s.%s --fqdn %s -o json", t.Source.Name, t.Source.Namespace, t.Host()))
	}
	for _, sel := range emptySubsetSelectors {
		cmds = append(cmds, fmt.Sprintf("kubectl get pods -n %s -l %s --show-labels", t.Namespace, sel))
	}
	return cmds
}

// sourceNamespace is the caller's namespace, "" when none is named.
func sourceNamespace(t cluster.Target) string {
	if t.Source != nil {
		return t.Source.Namespace
	}
	return ""
}
