package probes

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
)

// DestinationRulesProbe reads the DestinationRules and VirtualServices that
// apply to the target host: subsets that select no pods, routes to subsets no
// rule defines, and traffic policies set so tight that they cause 503s.
type DestinationRulesProbe struct{}

func (DestinationRulesProbe) Meta() Meta {
	return Meta{
		ID:    "destination-rules",
		Title: "DestinationRules and VirtualServices for the host",
		Reads: []string{"destinationrules", "virtualservices", "pods", "services", "configmaps (mesh config)"},
		Facts: []FactSpec{
			{"dr_found", FactBool, "a DestinationRule applies to the target host"},
			{"dr_names", FactList, "namespace/name of the DestinationRules that apply (Istio merges same-host rules of one namespace)"},
			{"dr_subsets_without_pods", FactList, "subsets (dr-name/subset) whose labels, merged with the Service selector, select no pod"},
			{"dr_subsets_without_pods_routed", FactList, "the subsets of dr_subsets_without_pods that a VirtualService route sends traffic to (weight > 0, mirrors aside): only these turn requests into 503 UH"},
			{"vs_found", FactBool, "a VirtualService names or routes to the target host"},
			{"vs_undefined_subsets", FactList, "subsets (vs-name/subset) routed to by a VirtualService that the applying DestinationRules do not define"},
			{"dr_outlier_consecutive_5xx", FactInt, "outlierDetection consecutive5xxErrors, or the deprecated consecutiveErrors (0 when unset)"},
			{"dr_outlier_max_ejection_percent", FactInt, "outlierDetection maxEjectionPercent (0 when unset: Envoy then uses 10)"},
			{"dr_outlier_aggressive", FactBool, "consecutive5xxErrors (or consecutiveGatewayErrors) 1, or maxEjectionPercent 100, at any level of the rule"},
			{"dr_pool_tiny", FactBool, "connectionPool tcp.maxConnections, http.http1MaxPendingRequests or http.http2MaxRequests set below 10 (maxRequestsPerConnection 1 only disables keep-alive and does not count)"},
			{"dr_pool_limits", FactList, "connectionPool settings as name=value"},
			{"dr_idle_timeout_s", FactInt, "connectionPool.http.idleTimeout in seconds (0 when unset)"},
		},
	}
}

// tinyPoolLimit is where a connection-pool limit stops being a capacity
// choice and starts overflowing (503 UO) under ordinary load.
const tinyPoolLimit = 10

// subsetSelection is what a subset's labels, merged with the Service
// selector, select.
type subsetSelection struct {
	Pods []string
	// Conflict is set when a subset label contradicts the Service selector,
	// so no pod of the service can carry both.
	Conflict string
}

type drInput struct {
	Service *corev1.Service
	// ClientNamespace is whose view of the rules is judged: the source's
	// namespace, or the target's own when no source was named.
	ClientNamespace string
	// ClientLabels are the source pod's labels (nil when unknown), for
	// rules with a workloadSelector.
	ClientLabels  map[string]string
	RootNamespace string
	DRs           []*networkingv1.DestinationRule
	VSs           []*networkingv1.VirtualService
	// Subsets is keyed by subsetKey(dr, subset name).
	Subsets map[string]subsetSelection
	// Partial lists reads that failed without making the result worthless.
	Partial []string
}

func subsetKey(dr *networkingv1.DestinationRule, subset string) string {
	return dr.Namespace + "/" + dr.Name + "/" + subset
}

func (p DestinationRulesProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchDestinationRules(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = drCommands(t, in.RootNamespace, nil)
		return r
	}
	return evaluateDestinationRules(t, in)
}

func fetchDestinationRules(ctx context.Context, c cluster.Cluster, t cluster.Target) (drInput, string, error) {
	in := drInput{ClientNamespace: t.Namespace, Subsets: map[string]subsetSelection{}}
	mc, err := ReadMeshConfig(ctx, c)
	in.RootNamespace = mc.RootNamespace(controlPlane(c))
	if err != nil {
		in.Partial = append(in.Partial, cluster.AccessProblem("read the mesh config", err)+"; assuming root namespace "+in.RootNamespace)
	}
	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	if err != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
	}
	in.Service = svc
	if t.Source != nil {
		in.ClientNamespace = t.Source.Namespace
		pod, err := c.GetPod(ctx, t.Source.Namespace, t.Source.Name)
		if err == nil {
			in.ClientLabels = pod.Labels
			if in.ClientLabels == nil {
				in.ClientLabels = map[string]string{}
			}
		} else {
			in.Partial = append(in.Partial, cluster.AccessProblem("get pod "+t.Source.String(), err)+"; rules with a workloadSelector are skipped")
		}
	}

	for _, ns := range uniqueNonEmpty(t.Namespace, in.ClientNamespace, in.RootNamespace) {
		// Only the root namespace may be unreadable: an on-call role scoped
		// to the application namespaces is common, and its rules are the
		// last in precedence. Without the target's or client's own rules the
		// judgement would be wrong, not partial.
		optional := ns == in.RootNamespace && ns != t.Namespace && ns != in.ClientNamespace
		drs, err := c.DestinationRules(ctx, ns)
		if err != nil {
			if !optional || apierrors.IsNotFound(err) && cluster.IsMissingKind(err) {
				return in, "list DestinationRules in " + ns, err
			}
			in.Partial = append(in.Partial, cluster.AccessProblem("list DestinationRules in "+ns, err)+"; mesh-wide rules unknown")
		}
		in.DRs = append(in.DRs, drs...)
		vss, err := c.VirtualServices(ctx, ns)
		if err != nil {
			if !optional || apierrors.IsNotFound(err) && cluster.IsMissingKind(err) {
				return in, "list VirtualServices in " + ns, err
			}
			in.Partial = append(in.Partial, cluster.AccessProblem("list VirtualServices in "+ns, err)+"; mesh-wide routes unknown")
		}
		in.VSs = append(in.VSs, vss...)
	}

	fqdn := t.Host()
	for _, dr := range in.DRs {
		if !istioHostCovers(dr.Spec.GetHost(), dr.Namespace, fqdn) {
			continue
		}
		for _, ss := range dr.Spec.GetSubsets() {
			sel, conflict := mergeSubsetSelector(svc.Spec.Selector, ss.GetLabels())
			key := subsetKey(dr, ss.GetName())
			if conflict != "" || len(svc.Spec.Selector) == 0 {
				in.Subsets[key] = subsetSelection{Conflict: conflict}
				continue
			}
			pods, err := c.ListPods(ctx, t.Namespace, sel)
			if err != nil {
				return in, fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(sel)), err
			}
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
			}
			sort.Strings(names)
			in.Subsets[key] = subsetSelection{Pods: names}
		}
	}
	return in, "", nil
}

// mergeSubsetSelector is the selector of a subset's endpoints: Istio takes
// the service's endpoints and keeps those whose pod carries the subset
// labels, so a label that contradicts the service selector selects nothing.
func mergeSubsetSelector(selector, subset map[string]string) (map[string]string, string) {
	merged := map[string]string{}
	for k, v := range selector {
		merged[k] = v
	}
	keys := make([]string, 0, len(subset))
	for k := range subset {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := merged[k]; ok && v != subset[k] {
			return nil, fmt.Sprintf("subset label %s=%s contradicts the service selector %s=%s", k, subset[k], k, v)
		}
		merged[k] = subset[k]
	}
	return merged, ""
}

// resolveIstioHost applies Istio's short-name rule (ResolveShortnameToFQDN):
// only a name without a dot is completed, with the rule's own namespace.
// "orders.shop" stays "orders.shop", which is no service's hostname.
func resolveIstioHost(host, ruleNamespace string) string {
	if host == "*" || net.ParseIP(host) != nil || strings.Contains(host, ".") {
		return host
	}
	return host + "." + ruleNamespace + ".svc.cluster.local"
}

// istioHostCovers reports whether a rule host, written in ruleNamespace,
// matches the service hostname fqdn exactly or as a wildcard.
func istioHostCovers(host, ruleNamespace, fqdn string) bool {
	h := resolveIstioHost(host, ruleNamespace)
	if h == fqdn {
		return true
	}
	return strings.HasPrefix(h, "*") && (h == "*" || strings.HasSuffix(fqdn, h[1:]))
}

// hostSpecificity orders matching hosts: the exact name beats any wildcard,
// and a longer wildcard beats a shorter one, as Istio's most-specific match.
func hostSpecificity(host, ruleNamespace string) int {
	h := resolveIstioHost(host, ruleNamespace)
	if !strings.HasPrefix(h, "*") {
		return 1 << 20
	}
	return len(h)
}

// hostNearMiss names hosts an on-call reads as the service but Istio does
// not: "orders.shop" and "orders.shop.svc" are not completed to the FQDN.
func hostNearMiss(host string, t cluster.Target) bool {
	return host == t.Service+"."+t.Namespace || host == t.Service+"."+t.Namespace+".svc"
}

// drVerdict is why one DestinationRule does or does not apply.
type drVerdict struct {
	DR      *networkingv1.DestinationRule
	Applies bool
	Why     string
}

// effectiveDestinationRules resolves which rules Istio applies to traffic
// from clientNamespace to the target: rules in the client's namespace first,
// then the service's namespace, then the root namespace; within the first
// namespace that has one, the most specific host wins, and rules with that
// same host are merged (oldest first). Every other matching rule is
// reported with why it does not apply.
func effectiveDestinationRules(t cluster.Target, in drInput) (applied []*networkingv1.DestinationRule, verdicts []drVerdict) {
	fqdn := t.Host()
	visible := map[string][]*networkingv1.DestinationRule{}
	var all []*networkingv1.DestinationRule
	for _, dr := range in.DRs {
		host := dr.Spec.GetHost()
		switch {
		case hostNearMiss(host, t):
			verdicts = append(verdicts, drVerdict{DR: dr, Why: fmt.Sprintf("never applies: Istio does not complete host %q, use %s", host, fqdn)})
			continue
		case !istioHostCovers(host, dr.Namespace, fqdn):
			continue
		}
		all = append(all, dr)
		if !mesh.ExportedTo(dr.Spec.GetExportTo(), dr.Namespace, in.ClientNamespace) {
			verdicts = append(verdicts, drVerdict{DR: dr, Why: fmt.Sprintf("not exported to namespace %s (exportTo %s)", in.ClientNamespace, strings.Join(dr.Spec.GetExportTo(), ","))})
			continue
		}
		if sel := dr.Spec.GetWorkloadSelector().GetMatchLabels(); len(sel) > 0 {
			if in.ClientLabels == nil {
				verdicts = append(verdicts, drVerdict{DR: dr, Why: "has a workloadSelector and the client pod is unknown"})
				continue
			}
			if !mesh.LabelsMatch(sel, in.ClientLabels) {
				verdicts = append(verdicts, drVerdict{DR: dr, Why: "workloadSelector " + labels.SelectorFromSet(sel).String() + " does not select the client"})
				continue
			}
		}
		visible[dr.Namespace] = append(visible[dr.Namespace], dr)
	}
	for _, ns := range []string{in.ClientNamespace, t.Namespace, in.RootNamespace} {
		candidates := visible[ns]
		if len(candidates) == 0 {
			continue
		}
		sort.SliceStable(candidates, func(i, j int) bool {
			si, sj := hostSpecificity(candidates[i].Spec.GetHost(), ns), hostSpecificity(candidates[j].Spec.GetHost(), ns)
			if si != sj {
				return si > sj
			}
			if !candidates[i].CreationTimestamp.Equal(&candidates[j].CreationTimestamp) {
				return candidates[i].CreationTimestamp.Before(&candidates[j].CreationTimestamp)
			}
			return candidates[i].Name < candidates[j].Name
		})
		best := resolveIstioHost(candidates[0].Spec.GetHost(), ns)
		for _, dr := range candidates {
			if resolveIstioHost(dr.Spec.GetHost(), ns) == best {
				applied = append(applied, dr)
			}
		}
		break
	}
	isApplied := map[*networkingv1.DestinationRule]bool{}
	for _, dr := range applied {
		isApplied[dr] = true
		verdicts = append(verdicts, drVerdict{DR: dr, Applies: true, Why: "applies"})
	}
	winner := "none"
	if len(applied) > 0 {
		winner = applied[0].Namespace + "/" + applied[0].Name
	}
	for _, dr := range all {
		if isApplied[dr] {
			continue
		}
		already := false
		for _, v := range verdicts {
			already = already || v.DR == dr
		}
		if !already {
			verdicts = append(verdicts, drVerdict{DR: dr, Why: "shadowed by " + winner + " (Istio applies one rule per host: client namespace, then service namespace, then root)"})
		}
	}
	sort.SliceStable(verdicts, func(i, j int) bool {
		if verdicts[i].Applies != verdicts[j].Applies {
			return verdicts[i].Applies
		}
		return verdicts[i].DR.Namespace+"/"+verdicts[i].DR.Name < verdicts[j].DR.Namespace+"/"+verdicts[j].DR.Name
	})
	return applied, verdicts
}

// vsRoute is one destination a VirtualService sends traffic to.
type vsRoute struct {
	VS     *networkingv1.VirtualService
	Kind   string // http, tcp, tls, mirror
	Host   string // as written
	Subset string
	Weight int32
}

func vsRoutes(vs *networkingv1.VirtualService) []vsRoute {
	var out []vsRoute
	add := func(kind string, d *networkingv1alpha3.Destination, w int32) {
		if d != nil {
			out = append(out, vsRoute{VS: vs, Kind: kind, Host: d.GetHost(), Subset: d.GetSubset(), Weight: w})
		}
	}
	for _, h := range vs.Spec.GetHttp() {
		for _, rd := range h.GetRoute() {
			add("http", rd.GetDestination(), rd.GetWeight())
		}
		add("mirror", h.GetMirror(), 0)
		for _, m := range h.GetMirrors() {
			add("mirror", m.GetDestination(), 0)
		}
	}
	for _, r := range vs.Spec.GetTcp() {
		for _, rd := range r.GetRoute() {
			add("tcp", rd.GetDestination(), rd.GetWeight())
		}
	}
	for _, r := range vs.Spec.GetTls() {
		for _, rd := range r.GetRoute() {
			add("tls", rd.GetDestination(), rd.GetWeight())
		}
	}
	return out
}

// routedSubsets are the subset names of fqdn that VirtualService routes
// send traffic to. A destination with weight 0 next to others gets none (the
// canary subset declared before its pods exist); a lone destination takes
// everything whatever its weight. Mirrored requests are fire-and-forget:
// their failures never reach the caller.
func routedSubsets(vss []*networkingv1.VirtualService, fqdn string) map[string]bool {
	out := map[string]bool{}
	for _, vs := range vss {
		for _, h := range vs.Spec.GetHttp() {
			addRoutedSubsets(out, vs.Namespace, fqdn, h.GetRoute())
		}
		for _, r := range vs.Spec.GetTcp() {
			addRoutedSubsets(out, vs.Namespace, fqdn, r.GetRoute())
		}
		for _, r := range vs.Spec.GetTls() {
			addRoutedSubsets(out, vs.Namespace, fqdn, r.GetRoute())
		}
	}
	return out
}

// weightedDestination is an HTTP or a TCP/TLS route destination.
type weightedDestination interface {
	GetDestination() *networkingv1alpha3.Destination
	GetWeight() int32
}

func addRoutedSubsets[D weightedDestination](out map[string]bool, ns, fqdn string, dests []D) {
	for _, rd := range dests {
		d := rd.GetDestination()
		if d.GetSubset() == "" || resolveIstioHost(d.GetHost(), ns) != fqdn {
			continue
		}
		if rd.GetWeight() > 0 || len(dests) == 1 {
			out[d.GetSubset()] = true
		}
	}
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
		c5xx := outlierConsecutive5xx(od)
		if c5xx == 1 {
			pr.Aggressive = append(pr.Aggressive, "consecutive5xxErrors 1 ejects a host on its first 5xx")
		}
		if od.GetConsecutiveGatewayErrors() != nil && od.GetConsecutiveGatewayErrors().GetValue() == 1 {
			pr.Aggressive = append(pr.Aggressive, "consecutiveGatewayErrors 1 ejects a host on its first 502/503/504")
		}
		if od.GetMaxEjectionPercent() == 100 {
			pr.Aggressive = append(pr.Aggressive, "maxEjectionPercent 100 lets every host be ejected at once")
		}
	}
	if tcp := pr.Pool.GetTcp(); tcp != nil {
		if v := tcp.GetMaxConnections(); v > 0 {
			pr.Limits = append(pr.Limits, fmt.Sprintf("tcp.maxConnections=%d", v))
			if v < tinyPoolLimit {
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
			if l.tiny && l.v < tinyPoolLimit {
				pr.Tiny = append(pr.Tiny, fmt.Sprintf("%s %d", strings.TrimPrefix(l.name, "http."), l.v))
			}
		}
		if d := h.GetIdleTimeout(); d != nil {
			pr.Limits = append(pr.Limits, "http.idleTimeout="+d.AsDuration().String())
		}
	}
	return pr
}

// outlierConsecutive5xx is consecutive5xxErrors, or the deprecated
// consecutiveErrors (which Istio maps to gateway errors: 502, 503, 504).
func outlierConsecutive5xx(od *networkingv1alpha3.OutlierDetection) int {
	if v := od.GetConsecutive_5XxErrors(); v != nil {
		return int(v.GetValue())
	}
	return int(od.GetConsecutiveErrors())
}

func evaluateDestinationRules(t cluster.Target, in drInput) Result {
	r := Result{Status: StatusPass, Facts: Facts{}}
	fqdn := t.Host()
	applied, verdicts := effectiveDestinationRules(t, in)

	type appliedSubset struct {
		dr   *networkingv1.DestinationRule
		name string
	}
	names := []string{}
	subsets := map[string]bool{}
	var subsetOrder []appliedSubset
	var policy *networkingv1alpha3.TrafficPolicy
	var policyFrom string
	for _, dr := range applied {
		names = append(names, dr.Namespace+"/"+dr.Name)
		if policy == nil && dr.Spec.GetTrafficPolicy() != nil {
			policy, policyFrom = dr.Spec.GetTrafficPolicy(), dr.Namespace+"/"+dr.Name
		}
		for _, ss := range dr.Spec.GetSubsets() {
			// When merging, the first rule to define a subset name keeps it.
			if !subsets[ss.GetName()] {
				subsets[ss.GetName()] = true
				subsetOrder = append(subsetOrder, appliedSubset{dr, ss.GetName()})
			}
		}
	}
	r.Facts["dr_found"] = len(applied) > 0
	r.Facts["dr_names"] = names

	r.Evidence.Columns = []string{"kind", "rule", "host", "detail", "verdict"}
	var raw []string
	withoutPods := []string{}
	var withoutPodsNames []string // subset name of each withoutPods entry
	var emptyKeys []string
	subsetDetail := map[*networkingv1.DestinationRule][]string{}
	for _, as := range subsetOrder {
		key := subsetKey(as.dr, as.name)
		sel, checked := in.Subsets[key]
		detail := ""
		switch {
		case len(in.Service.Spec.Selector) == 0:
			detail = "service has no selector"
		case !checked:
			detail = "not checked"
		case sel.Conflict != "":
			withoutPods = append(withoutPods, as.dr.Name+"/"+as.name)
			withoutPodsNames = append(withoutPodsNames, as.name)
			detail = "0 pods"
			raw = append(raw, fmt.Sprintf("subset %s/%s: %s", as.dr.Name, as.name, sel.Conflict))
		case len(sel.Pods) == 0:
			withoutPods = append(withoutPods, as.dr.Name+"/"+as.name)
			withoutPodsNames = append(withoutPodsNames, as.name)
			emptyKeys = append(emptyKeys, key)
			detail = "0 pods"
		default:
			detail = countNoun(len(sel.Pods), "pod")
		}
		subsetDetail[as.dr] = append(subsetDetail[as.dr], fmt.Sprintf("%s(%s)", as.name, detail))
	}
	r.Facts["dr_subsets_without_pods"] = withoutPods

	for _, v := range verdicts {
		detail := "no subsets"
		if d := subsetDetail[v.DR]; len(d) > 0 {
			detail = "subsets " + strings.Join(d, " ")
		} else if !v.Applies && len(v.DR.Spec.GetSubsets()) > 0 {
			var s []string
			for _, ss := range v.DR.Spec.GetSubsets() {
				s = append(s, ss.GetName())
			}
			detail = "subsets " + strings.Join(s, " ")
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{"DestinationRule", v.DR.Namespace + "/" + v.DR.Name, v.DR.Spec.GetHost(), detail, v.Why})
	}

	// VirtualServices: any route to the target host naming a subset must
	// find it among the applied rules' subsets, or Envoy has no such
	// cluster (503 NC).
	vsFound := false
	undefined := []string{}
	seenUndefined := map[string]bool{}
	vss := append([]*networkingv1.VirtualService(nil), in.VSs...)
	sort.Slice(vss, func(i, j int) bool { return vss[i].Namespace+"/"+vss[i].Name < vss[j].Namespace+"/"+vss[j].Name })
	for _, vs := range vss {
		hostsTarget := false
		for _, h := range vs.Spec.GetHosts() {
			hostsTarget = hostsTarget || istioHostCovers(h, vs.Namespace, fqdn) && !strings.HasPrefix(resolveIstioHost(h, vs.Namespace), "*")
		}
		var dests, problems []string
		for _, rt := range vsRoutes(vs) {
			if hostNearMiss(rt.Host, t) {
				problems = append(problems, fmt.Sprintf("%s route host %q is not completed by Istio (use %s)", rt.Kind, rt.Host, fqdn))
				continue
			}
			if resolveIstioHost(rt.Host, vs.Namespace) != fqdn {
				continue
			}
			d := rt.Host
			if rt.Subset != "" {
				d += "/" + rt.Subset
			}
			if rt.Weight > 0 {
				d += fmt.Sprintf(" %d%%", rt.Weight)
			}
			if rt.Kind == "mirror" {
				d += " (mirror)"
			}
			dests = append(dests, d)
			if rt.Subset != "" && !subsets[rt.Subset] {
				key := vs.Name + "/" + rt.Subset
				problems = append(problems, "subset "+rt.Subset+" undefined")
				if !seenUndefined[key] {
					seenUndefined[key] = true
					undefined = append(undefined, key)
				}
			}
		}
		if !hostsTarget && len(dests) == 0 && len(problems) == 0 {
			continue
		}
		vsFound = vsFound || hostsTarget || len(dests) > 0
		verdict := "ok"
		if len(problems) > 0 {
			verdict = strings.Join(problems, "; ")
		}
		if gws := vs.Spec.GetGateways(); len(gws) > 0 && !containsString(gws, "mesh") {
			verdict += " (bound to gateways " + strings.Join(gws, ",") + " only, not sidecars)"
		}
		if !mesh.ExportedTo(vs.Spec.GetExportTo(), vs.Namespace, in.ClientNamespace) {
			verdict += fmt.Sprintf(" (not exported to %s)", in.ClientNamespace)
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{"VirtualService", vs.Namespace + "/" + vs.Name,
			strings.Join(vs.Spec.GetHosts(), ","), dash(strings.Join(dests, ", ")), verdict})
	}
	r.Facts["vs_found"] = vsFound
	routed := routedSubsets(vss, fqdn)
	routedWithoutPods := []string{}
	for i, name := range withoutPodsNames {
		if routed[name] {
			routedWithoutPods = append(routedWithoutPods, withoutPods[i])
		} else {
			raw = append(raw, fmt.Sprintf("subset %s selects no pod but no VirtualService route sends traffic to it: it causes no 503 by itself", withoutPods[i]))
		}
	}
	r.Facts["dr_subsets_without_pods_routed"] = routedWithoutPods
	r.Facts["vs_undefined_subsets"] = undefined

	// Traffic policy of the default cluster: the top level, replaced per
	// section by the port-level settings of the target port (as Istio
	// merges them). Subset and other ports' policies can only add flags.
	var readings []poolReading
	main := readPolicy(policyFrom, policy)
	if t.Port != 0 {
		for _, pl := range policy.GetPortLevelSettings() {
			if int32(pl.GetPort().GetNumber()) != t.Port {
				continue
			}
			if pl.GetOutlierDetection() != nil {
				main.Outlier = pl.GetOutlierDetection()
			}
			if pl.GetConnectionPool() != nil {
				main.Pool = pl.GetConnectionPool()
			}
			merged := &networkingv1alpha3.TrafficPolicy{OutlierDetection: main.Outlier, ConnectionPool: main.Pool}
			main = readPolicy(fmt.Sprintf("%s port %d", policyFrom, t.Port), merged)
		}
	} else {
		for _, pl := range policy.GetPortLevelSettings() {
			tp := &networkingv1alpha3.TrafficPolicy{OutlierDetection: pl.GetOutlierDetection(), ConnectionPool: pl.GetConnectionPool()}
			readings = append(readings, readPolicy(fmt.Sprintf("%s port %d", policyFrom, pl.GetPort().GetNumber()), tp))
		}
	}
	readings = append([]poolReading{main}, readings...)
	for _, dr := range applied {
		for _, ss := range dr.Spec.GetSubsets() {
			if ss.GetTrafficPolicy() != nil {
				readings = append(readings, readPolicy(fmt.Sprintf("%s/%s subset %s", dr.Namespace, dr.Name, ss.GetName()), ss.GetTrafficPolicy()))
			}
		}
	}

	c5xx, maxEject := 0, 0
	if od := main.Outlier; od != nil {
		c5xx, maxEject = outlierConsecutive5xx(od), int(od.GetMaxEjectionPercent())
	}
	r.Facts["dr_outlier_consecutive_5xx"] = c5xx
	r.Facts["dr_outlier_max_ejection_percent"] = maxEject
	idle := 0
	if d := main.Pool.GetHttp().GetIdleTimeout(); d != nil {
		idle = int(d.AsDuration().Seconds())
	}
	r.Facts["dr_idle_timeout_s"] = idle
	r.Facts["dr_pool_limits"] = nonNil(main.Limits)

	var aggressive, tiny []string
	for _, pr := range readings {
		if pr.Scope == "" {
			continue
		}
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

	raw = append(raw, "judged from namespace "+in.ClientNamespace+"'s view; root namespace "+in.RootNamespace)
	raw = append(raw, in.Partial...)
	r.Evidence.Raw = strings.Join(raw, "\n")

	var problems, warnings []string
	if len(undefined) > 0 {
		problems = append(problems, "VirtualService routes to undefined subsets: "+strings.Join(undefined, ", "))
	}
	if len(withoutPods) > 0 {
		problems = append(problems, "subsets select no pods: "+strings.Join(withoutPods, ", "))
	}
	if len(aggressive) > 0 {
		warnings = append(warnings, "aggressive outlier detection ("+strings.Join(aggressive, "; ")+")")
	}
	if len(tiny) > 0 {
		warnings = append(warnings, "tiny connection pool ("+strings.Join(tiny, "; ")+")")
	}
	for _, v := range verdicts {
		if strings.HasPrefix(v.Why, "never applies") {
			warnings = append(warnings, v.DR.Namespace+"/"+v.DR.Name+" "+v.Why)
		}
	}
	warnings = append(warnings, in.Partial...)
	head := "no DestinationRule applies"
	if len(applied) > 0 {
		head = "DestinationRule " + strings.Join(names, ", ") + " applies"
	}
	switch {
	case len(problems) > 0:
		r.Status = StatusFail
		r.Summary = strings.Join(append(problems, warnings...), "; ")
	case len(warnings) > 0:
		r.Status = StatusWarn
		r.Summary = head + "; " + strings.Join(warnings, "; ")
	default:
		r.Summary = head
		if vsFound {
			r.Summary += "; VirtualService routes resolve"
		}
	}
	r.Commands = drCommands(t, in.RootNamespace, subsetSelectors(in.Service, applied, emptyKeys))
	return r
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

// subsetSelectors are the label selectors of the given "ns/dr/subset" keys.
func subsetSelectors(svc *corev1.Service, applied []*networkingv1.DestinationRule, keys []string) []string {
	var out []string
	for _, key := range keys {
		for _, dr := range applied {
			for _, ss := range dr.Spec.GetSubsets() {
				if subsetKey(dr, ss.GetName()) != key {
					continue
				}
				sel, _ := mergeSubsetSelector(svc.Spec.Selector, ss.GetLabels())
				out = append(out, labels.SelectorFromSet(sel).String())
			}
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func drCommands(t cluster.Target, root string, emptySubsetSelectors []string) []string {
	var cmds []string
	for _, ns := range uniqueNonEmpty(t.Namespace, sourceNamespace(t), root) {
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
