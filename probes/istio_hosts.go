package probes

import (
	"sort"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
)

// RuleHostMatches reports whether host, as written in an Istio rule living in
// ruleNamespace, names the target service. Istio resolves short names against
// the rule's own namespace: "orders" in namespace shop means
// orders.shop.svc.cluster.local, while "orders" in namespace web does not.
func RuleHostMatches(host, ruleNamespace string, t Target) bool {
	fqdn := t.Host()
	switch {
	case host == fqdn:
		return true
	case host == t.Service:
		return ruleNamespace == t.Namespace
	case host == t.Service+"."+t.Namespace, host == t.Service+"."+t.Namespace+".svc":
		return true
	case strings.HasPrefix(host, "*"):
		return host == "*" || strings.HasSuffix(fqdn, host[1:])
	}
	return false
}

// ExportedTo reports whether a rule in ruleNamespace with exportTo is visible
// from namespace ns. Empty exportTo means everywhere (Istio's default).
func ExportedTo(exportTo []string, ruleNamespace, ns string) bool {
	if len(exportTo) == 0 {
		return true
	}
	for _, e := range exportTo {
		if e == "*" || e == ns || (e == "." && ruleNamespace == ns) {
			return true
		}
	}
	return false
}

// EffectiveDestinationRule picks the DestinationRule Istio applies to traffic
// from clientNamespace to t: a visible rule in the client's namespace first,
// then the service's namespace, then the mesh root namespace; within one
// namespace an exact host beats a wildcard, and the oldest rule wins ties.
// clientLabels filter rules with a workloadSelector (nil: unknown client,
// such rules are skipped). Returns nil when no rule applies.
func EffectiveDestinationRule(drs []*networkingv1.DestinationRule, t Target, clientNamespace, rootNamespace string, clientLabels map[string]string) *networkingv1.DestinationRule {
	order := []string{clientNamespace, t.Namespace, rootNamespace}
	for _, ns := range order {
		if ns == "" {
			continue
		}
		var candidates []*networkingv1.DestinationRule
		for _, dr := range drs {
			if dr.Namespace != ns || !RuleHostMatches(dr.Spec.GetHost(), dr.Namespace, t) {
				continue
			}
			visibleFrom := clientNamespace
			if visibleFrom == "" {
				visibleFrom = t.Namespace
			}
			if !ExportedTo(dr.Spec.GetExportTo(), dr.Namespace, visibleFrom) {
				continue
			}
			if sel := dr.Spec.GetWorkloadSelector().GetMatchLabels(); len(sel) > 0 && !labelsMatch(sel, clientLabels) {
				continue
			}
			candidates = append(candidates, dr)
		}
		if len(candidates) == 0 {
			continue
		}
		sort.SliceStable(candidates, func(i, j int) bool {
			wi, wj := strings.HasPrefix(candidates[i].Spec.GetHost(), "*"), strings.HasPrefix(candidates[j].Spec.GetHost(), "*")
			if wi != wj {
				return !wi
			}
			return candidates[i].CreationTimestamp.Before(&candidates[j].CreationTimestamp)
		})
		return candidates[0]
	}
	return nil
}

// labelsMatch reports whether every selector label is set to the same value
// in labels.
func labelsMatch(selector, labels map[string]string) bool {
	if labels == nil {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
