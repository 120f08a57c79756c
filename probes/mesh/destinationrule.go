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

// DestinationRuleFor resolves which DestinationRule istiod gives the caller
// for host (a Service of namespace hostNS, "" for an external host), as
// PushContext.destinationRule and SidecarScope.DestinationRule do. Three
// tiers, the first with any rule for the host wins outright (the tiers are
// never combined): the rules local to the caller's namespace, the rules of
// the host's namespace exported to the caller, the root namespace's
// exported rules. In a tier, the most specific host wins; same-host rules
// are merged when their exportTo agree; then a rule whose workloadSelector
// selects the caller is taken, else the newest rule without selector, else
// none (a selector rule that does not select the caller still shadows the
// other tiers). Every rule naming the host gets a verdict.
func (c *Config) DestinationRuleFor(caller Caller, host, hostNS string) (*AppliedRule, []RuleVerdict, []string) {
	var verdicts []RuleVerdict
	var unknown []string
	judged := map[*networkingv1.DestinationRule]bool{}
	add := func(dr *networkingv1.DestinationRule, applies bool, why string) {
		judged[dr] = true
		verdicts = append(verdicts, RuleVerdict{Kind: "DestinationRule", Namespace: dr.Namespace, Name: dr.Name, Host: dr.Spec.GetHost(), Applies: applies, Why: why})
	}
	var matching []*networkingv1.DestinationRule
	for _, dr := range c.DestinationRules {
		h := dr.Spec.GetHost()
		if svc, rest, ok := strings.Cut(host, "."); ok && NearMiss(h, svc, strings.SplitN(rest, ".", 2)[0]) {
			add(dr, false, fmt.Sprintf("never applies: Istio does not complete host %q, use %s", h, host))
			continue
		}
		if HostCovers(h, dr.Namespace, host) {
			matching = append(matching, dr)
		}
	}
	// The host's and the root namespace's tiers take the most specific
	// host among all the rules the namespace exports, and only then keep
	// those exported to the caller (getExportedDestinationRuleFromNamespace):
	// a more specific rule exported elsewhere leaves the tier empty rather
	// than letting a less specific one apply.
	tiers := []struct {
		name     string
		drs      []*networkingv1.DestinationRule
		exported bool
	}{
		{"the caller's namespace " + caller.Namespace, c.localRules(matching, caller.Namespace), false},
		{"the host's namespace " + hostNS, c.exportedRules(matching, hostNS), true},
		{"the root namespace " + c.RootNamespace, c.exportedRules(matching, c.RootNamespace), true},
	}
	if caller.Namespace == hostNS {
		tiers[1].drs = nil
	}
	var applied *AppliedRule
	winner := ""
	for _, tier := range tiers {
		if len(tier.drs) == 0 {
			continue
		}
		best := mostSpecific(tier.drs, host)
		var sameHost []*networkingv1.DestinationRule
		for _, dr := range tier.drs {
			if ResolveHost(dr.Spec.GetHost(), dr.Namespace) == best {
				sameHost = append(sameHost, dr)
			}
		}
		entries := consolidate(sameHost, c.Mesh.Raw.GetDefaultDestinationRuleExportTo())
		if tier.exported {
			var visible []*AppliedRule
			for _, e := range entries {
				if set := drExportTo(e.Rules[0]); len(set) == 0 || containsAny(set, "*", caller.Namespace) {
					visible = append(visible, e)
				}
			}
			entries = visible
			if len(entries) == 0 {
				for _, dr := range tier.drs {
					if ResolveHost(dr.Spec.GetHost(), dr.Namespace) != best {
						add(dr, false, "the more specific host "+best+" of "+tier.name+" is not exported to "+caller.Namespace+", and istiod then takes no less specific one there")
					}
				}
				continue // the most specific host's rules are judged "not exported" below
			}
		}
		var chosen *AppliedRule
		for _, e := range entries {
			sel := e.Rules[0].Spec.GetWorkloadSelector().GetMatchLabels()
			if !hasSelector(e.Rules[0]) {
				chosen = e // the last (newest) entry without selector
				continue
			}
			if e.Rules[0].Namespace != caller.Namespace {
				continue
			}
			if len(sel) > 0 && !caller.labelsKnown() {
				unknown = append(unknown, fmt.Sprintf("DestinationRule %s/%s selects workloads (%s) and the caller is not a known pod", e.Rules[0].Namespace, e.Rules[0].Name, labels.SelectorFromSet(sel)))
				continue
			}
			if LabelsMatch(sel, caller.Labels) {
				chosen = e
				break
			}
		}
		for _, e := range entries {
			if e == chosen {
				continue
			}
			for _, dr := range e.Rules {
				why := "not chosen in " + tier.name + ": a rule selecting the caller, else the newest without selector, applies"
				if sel := dr.Spec.GetWorkloadSelector().GetMatchLabels(); len(sel) > 0 {
					why = "workloadSelector " + labels.SelectorFromSet(sel).String() + " does not select the caller"
				}
				add(dr, false, why)
			}
		}
		for _, dr := range tier.drs {
			if !judged[dr] && ResolveHost(dr.Spec.GetHost(), dr.Namespace) != best {
				add(dr, false, "a more specific host ("+best+") in "+tier.name+" wins")
			}
		}
		applied, winner = chosen, tier.name
		if chosen == nil {
			winner += ", where no rule applies to the caller"
		}
		break
	}
	if applied != nil {
		for _, dr := range applied.Rules {
			add(dr, true, "applies")
		}
	}
	for _, dr := range matching {
		if judged[dr] {
			continue
		}
		switch {
		case winner != "":
			add(dr, false, "shadowed: "+winner+" has a rule for the host (the caller's namespace, then the host's, then the root namespace; never combined)")
		case dr.Namespace != caller.Namespace && dr.Namespace != hostNS && dr.Namespace != c.RootNamespace:
			add(dr, false, "in namespace "+dr.Namespace+", which is neither the caller's, the host's nor the root: istiod never uses it for this caller")
		default:
			add(dr, false, fmt.Sprintf("not exported to namespace %s (exportTo %s)", caller.Namespace, strings.Join(dr.Spec.GetExportTo(), ",")))
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

// drExportTo is a rule's effective exportTo set: a workload-selector rule
// is always private to its namespace.
func drExportTo(dr *networkingv1.DestinationRule) []string {
	if hasSelector(dr) {
		return []string{"."}
	}
	return dr.Spec.GetExportTo()
}

// localRules are ns's rules its own proxies see: exportTo empty, "*", "."
// or the namespace itself. A caller in the root namespace sees only the
// root's private rules here; its exported ones come in the last tier.
func (c *Config) localRules(drs []*networkingv1.DestinationRule, ns string) []*networkingv1.DestinationRule {
	var out []*networkingv1.DestinationRule
	for _, dr := range drs {
		if dr.Namespace != ns {
			continue
		}
		set := drExportTo(dr)
		if ns == c.RootNamespace && !c.privateOnly(dr) {
			continue
		}
		if len(set) == 0 || containsAny(set, "*", ".", ns) {
			out = append(out, dr)
		}
	}
	return out
}

// exportedRules are ns's rules that are not private (exported to some
// namespace; whether to the caller's is judged once the most specific host
// is chosen).
func (c *Config) exportedRules(drs []*networkingv1.DestinationRule, ns string) []*networkingv1.DestinationRule {
	var out []*networkingv1.DestinationRule
	for _, dr := range drs {
		if dr.Namespace == ns && !c.privateOnly(dr) {
			out = append(out, dr)
		}
	}
	return out
}

// privateOnly: the rule is visible in its own namespace only.
func (c *Config) privateOnly(dr *networkingv1.DestinationRule) bool {
	set := drExportTo(dr)
	if len(set) == 0 {
		return contains(c.Mesh.Raw.GetDefaultDestinationRuleExportTo(), ".")
	}
	return len(set) == 1 && (set[0] == "." || set[0] == dr.Namespace)
}

func containsAny(list []string, values ...string) bool {
	for _, v := range values {
		if contains(list, v) {
			return true
		}
	}
	return false
}

// mostSpecific is the resolved host of drs that matches host most
// specifically: exact, else the longest wildcard, else the alphabetically
// first.
func mostSpecific(drs []*networkingv1.DestinationRule, host string) string {
	best := ""
	for _, dr := range drs {
		h := ResolveHost(dr.Spec.GetHost(), dr.Namespace)
		switch {
		case best == "":
			best = h
		case !strings.HasPrefix(h, "*") && strings.HasPrefix(best, "*"):
			best = h
		case strings.HasPrefix(h, "*") == strings.HasPrefix(best, "*") && (len(h) > len(best) || len(h) == len(best) && h < best):
			best = h
		}
	}
	return best
}

// consolidate merges same-host rules as istiod's mergeDestinationRule does
// (ENABLE_ENHANCED_DESTINATIONRULE_MERGE, on by default). Rules with a
// workloadSelector come first, then the oldest; each is held against every
// earlier entry in turn. An entry is skipped when its exportTo (as
// written; a selector rule's is ".") neither equals the rule's nor is a
// non-empty subset of it, or when both have a selector and they differ;
// the rule merges into every other entry (the subsets the entry lacks, its
// trafficPolicy when the entry has none), also where only one of the two
// has a selector. Whether it also becomes an entry of its own is what the
// last entry held against it decided (istiod overwrites the flag each
// time): yes after a skipped entry, or a superset exportTo with a selector
// on one side only; no otherwise. So a rule without selector merged into a
// selector rule's entry of equal exportTo is no rule for the callers that
// selector leaves out.
func consolidate(drs []*networkingv1.DestinationRule, meshDefault []string) []*AppliedRule {
	sorted := append([]*networkingv1.DestinationRule(nil), drs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		si, sj := hasSelector(sorted[i]), hasSelector(sorted[j])
		if si != sj {
			return si
		}
		if !sorted[i].CreationTimestamp.Equal(&sorted[j].CreationTimestamp) {
			return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp)
		}
		if sorted[i].Name != sorted[j].Name {
			return sorted[i].Name < sorted[j].Name
		}
		return sorted[i].Namespace < sorted[j].Namespace
	})
	var entries []*AppliedRule
	for _, dr := range sorted {
		appendSeparately := true
		for _, e := range entries {
			first := e.Rules[0]
			entryExport, ruleExport := drExportTo(first), drExportTo(dr)
			switch {
			case sameSet(entryExport, ruleExport):
				appendSeparately = false
			case len(entryExport) > 0 && supersetOf(ruleExport, entryExport):
				appendSeparately = true // merged, and an entry of its own too
			default:
				appendSeparately = true
				continue
			}
			bothWith, bothWithout := hasSelector(first) && hasSelector(dr), !hasSelector(first) && !hasSelector(dr)
			if bothWith && !sameSelector(first, dr) {
				appendSeparately = true
				continue
			}
			if bothWithout || bothWith {
				appendSeparately = false
			}
			e.merge(dr)
		}
		if appendSeparately {
			e := &AppliedRule{}
			e.merge(dr)
			entries = append(entries, e)
		}
	}
	return entries
}

func hasSelector(dr *networkingv1.DestinationRule) bool {
	return dr.Spec.GetWorkloadSelector() != nil
}

func sameSelector(a, b *networkingv1.DestinationRule) bool {
	sa, sb := a.Spec.GetWorkloadSelector().GetMatchLabels(), b.Spec.GetWorkloadSelector().GetMatchLabels()
	if len(sa) != len(sb) {
		return false
	}
	for k, v := range sa {
		if sb[k] != v {
			return false
		}
	}
	return true
}

// sameSet: a and b hold the same values (as sets).
func sameSet(a, b []string) bool {
	return supersetOf(a, b) && supersetOf(b, a)
}

// supersetOf: every value of b is in a.
func supersetOf(a, b []string) bool {
	for _, v := range b {
		if !contains(a, v) {
			return false
		}
	}
	return true
}

// merge adds dr to the entry: its subsets the entry lacks, its
// trafficPolicy when the entry has none.
func (a *AppliedRule) merge(dr *networkingv1.DestinationRule) {
	a.Rules = append(a.Rules, dr)
	if a.TrafficPolicy == nil && dr.Spec.GetTrafficPolicy() != nil {
		a.TrafficPolicy, a.PolicyFrom = dr.Spec.GetTrafficPolicy(), dr.Namespace+"/"+dr.Name
	}
	for _, s := range dr.Spec.GetSubsets() {
		if a.Subset(s.GetName()) == nil {
			a.Subsets = append(a.Subsets, s)
		}
	}
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
