package mesh

import (
	"fmt"
	"sort"
	"strings"

	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// RuleVerdict is why one rule does or does not apply for the caller.
type RuleVerdict struct {
	Kind      string // DestinationRule, VirtualService
	Namespace string
	Name      string
	Host      string // as the rule writes it
	Applies   bool
	Why       string
}

// Ref is namespace/name.
func (v RuleVerdict) Ref() string { return v.Namespace + "/" + v.Name }

// AppliedRule is the DestinationRule a caller's proxy uses for a host: one
// rule, or several rules of one namespace for the same host merged as
// istiod merges them (the oldest first: its traffic policy wins, subsets
// are added in order, a repeated subset name keeps the first).
type AppliedRule struct {
	Rules         []*networkingv1.DestinationRule
	TrafficPolicy *networkingv1alpha3.TrafficPolicy
	// PolicyFrom names the rule whose trafficPolicy is used.
	PolicyFrom string
	Subsets    []*networkingv1alpha3.Subset
}

// Names are the namespace/name of the merged rules.
func (a *AppliedRule) Names() []string {
	if a == nil {
		return nil
	}
	var out []string
	for _, dr := range a.Rules {
		out = append(out, dr.Namespace+"/"+dr.Name)
	}
	return out
}

// Subset returns the subset named name, if the rule defines it.
func (a *AppliedRule) Subset(name string) *networkingv1alpha3.Subset {
	if a == nil {
		return nil
	}
	for _, s := range a.Subsets {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}

// DestinationRuleFor resolves which DestinationRule Istio applies to the
// caller's traffic for host (a Service of namespace hostNS, "" for an
// external host): rules in the caller's namespace first, then the host's
// namespace (exported to the caller), then the root namespace; within the
// first namespace that has a match, a rule whose workloadSelector selects
// the caller beats one without a selector, the most specific host wins,
// and same-host rules are merged. Every rule naming the host gets a
// verdict saying why it does or does not apply.
func (c *Config) DestinationRuleFor(caller Caller, host, hostNS string) (*AppliedRule, []RuleVerdict, []string) {
	var verdicts []RuleVerdict
	var unknown []string
	meshDefault := c.Mesh.Raw.GetDefaultDestinationRuleExportTo()
	byNamespace := map[string][]*networkingv1.DestinationRule{}
	verdictOf := map[*networkingv1.DestinationRule]int{}
	add := func(dr *networkingv1.DestinationRule, applies bool, why string) {
		verdictOf[dr] = len(verdicts)
		verdicts = append(verdicts, RuleVerdict{Kind: "DestinationRule", Namespace: dr.Namespace, Name: dr.Name, Host: dr.Spec.GetHost(), Applies: applies, Why: why})
	}
	for _, dr := range c.DestinationRules {
		h := dr.Spec.GetHost()
		if svc, ns, ok := strings.Cut(host, "."); ok && NearMiss(h, svc, strings.SplitN(ns, ".", 2)[0]) {
			add(dr, false, fmt.Sprintf("never applies: Istio does not complete host %q, use %s", h, host))
			continue
		}
		if !HostCovers(h, dr.Namespace, host) {
			continue
		}
		if exportTo := exportToOrDefault(dr.Spec.GetExportTo(), meshDefault); !ExportedTo(exportTo, dr.Namespace, caller.Namespace) {
			add(dr, false, fmt.Sprintf("not exported to namespace %s (exportTo %s)", caller.Namespace, strings.Join(exportTo, ",")))
			continue
		}
		if sel := dr.Spec.GetWorkloadSelector().GetMatchLabels(); len(sel) > 0 {
			switch {
			case dr.Namespace != caller.Namespace:
				add(dr, false, "has a workloadSelector, which only selects workloads of its own namespace "+dr.Namespace)
				continue
			case !caller.labelsKnown():
				add(dr, false, "has a workloadSelector ("+labels.SelectorFromSet(sel).String()+") and the caller's labels are not known")
				unknown = append(unknown, "DestinationRule "+dr.Namespace+"/"+dr.Name+" selects workloads and the caller is not a known pod")
				continue
			case !LabelsMatch(sel, caller.Labels):
				add(dr, false, "workloadSelector "+labels.SelectorFromSet(sel).String()+" does not select the caller")
				continue
			}
		}
		byNamespace[dr.Namespace] = append(byNamespace[dr.Namespace], dr)
	}
	var applied *AppliedRule
	for _, ns := range []string{caller.Namespace, hostNS, c.RootNamespace} {
		candidates := byNamespace[ns]
		if ns == "" || len(candidates) == 0 {
			continue
		}
		applied = mergeRules(pickRules(candidates, ns))
		break
	}
	winner := "none"
	if applied != nil {
		for _, dr := range applied.Rules {
			add(dr, true, "applies")
		}
		winner = strings.Join(applied.Names(), "+")
	}
	for _, drs := range byNamespace {
		for _, dr := range drs {
			if _, judged := verdictOf[dr]; !judged {
				add(dr, false, "shadowed by "+winner+" (one rule per host: the caller's namespace, then the host's, then the root namespace)")
			}
		}
	}
	sort.SliceStable(verdicts, func(i, j int) bool {
		if verdicts[i].Applies != verdicts[j].Applies {
			return verdicts[i].Applies
		}
		return verdicts[i].Ref() < verdicts[j].Ref()
	})
	return applied, verdicts, unknown
}

// pickRules chooses, among one namespace's matching rules, those Istio
// uses: rules whose workloadSelector selects the caller before rules
// without one, then the most specific host; all rules with that host
// (and the same selector kind) are merged.
func pickRules(candidates []*networkingv1.DestinationRule, ns string) []*networkingv1.DestinationRule {
	sort.SliceStable(candidates, func(i, j int) bool {
		si, sj := len(candidates[i].Spec.GetWorkloadSelector().GetMatchLabels()) > 0, len(candidates[j].Spec.GetWorkloadSelector().GetMatchLabels()) > 0
		if si != sj {
			return si
		}
		hi, hj := hostSpecificity(candidates[i].Spec.GetHost(), ns), hostSpecificity(candidates[j].Spec.GetHost(), ns)
		if hi != hj {
			return hi > hj
		}
		if !candidates[i].CreationTimestamp.Equal(&candidates[j].CreationTimestamp) {
			return candidates[i].CreationTimestamp.Before(&candidates[j].CreationTimestamp)
		}
		return candidates[i].Name < candidates[j].Name
	})
	first := candidates[0]
	selects := len(first.Spec.GetWorkloadSelector().GetMatchLabels()) > 0
	best := ResolveHost(first.Spec.GetHost(), ns)
	var out []*networkingv1.DestinationRule
	for _, dr := range candidates {
		if ResolveHost(dr.Spec.GetHost(), ns) == best && (len(dr.Spec.GetWorkloadSelector().GetMatchLabels()) > 0) == selects {
			out = append(out, dr)
		}
	}
	return out
}

func mergeRules(rules []*networkingv1.DestinationRule) *AppliedRule {
	a := &AppliedRule{Rules: rules}
	seen := map[string]bool{}
	for _, dr := range rules {
		if a.TrafficPolicy == nil && dr.Spec.GetTrafficPolicy() != nil {
			a.TrafficPolicy, a.PolicyFrom = dr.Spec.GetTrafficPolicy(), dr.Namespace+"/"+dr.Name
		}
		for _, s := range dr.Spec.GetSubsets() {
			if !seen[s.GetName()] {
				seen[s.GetName()] = true
				a.Subsets = append(a.Subsets, s)
			}
		}
	}
	return a
}

// ClusterPolicy is the traffic policy Envoy gets for one cluster: the
// rule's policy with its portLevelSettings for port, then the subset's
// policy (with its own port-level settings) over it. A port-level entry
// replaces the connection pool, outlier detection, load balancer and tls
// as a whole, unset ones included: port-level policies do not inherit.
func (a *AppliedRule) ClusterPolicy(port int32, subset string) *networkingv1alpha3.TrafficPolicy {
	if a == nil {
		return nil
	}
	merged := mergePolicy(nil, a.TrafficPolicy, port)
	if s := a.Subset(subset); s != nil {
		merged = mergePolicy(merged, s.GetTrafficPolicy(), port)
	}
	return merged
}

func mergePolicy(base, over *networkingv1alpha3.TrafficPolicy, port int32) *networkingv1alpha3.TrafficPolicy {
	if over == nil {
		return base
	}
	out := &networkingv1alpha3.TrafficPolicy{}
	if base != nil {
		out.ConnectionPool, out.OutlierDetection, out.LoadBalancer, out.Tls = base.ConnectionPool, base.OutlierDetection, base.LoadBalancer, base.Tls
	}
	if over.ConnectionPool != nil {
		out.ConnectionPool = over.ConnectionPool
	}
	if over.OutlierDetection != nil {
		out.OutlierDetection = over.OutlierDetection
	}
	if over.LoadBalancer != nil {
		out.LoadBalancer = over.LoadBalancer
	}
	if over.Tls != nil {
		out.Tls = over.Tls
	}
	for _, pl := range over.GetPortLevelSettings() {
		if port != 0 && pl.GetPort().GetNumber() == uint32(port) {
			out.ConnectionPool, out.OutlierDetection, out.LoadBalancer, out.Tls = pl.ConnectionPool, pl.OutlierDetection, pl.LoadBalancer, pl.Tls
			break
		}
	}
	return out
}
