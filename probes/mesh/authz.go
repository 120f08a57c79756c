package mesh

import (
	"cmp"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"istio.io/api/annotation"
	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
)

// AuthorizationPolicy as ztunnel enforces it at a destination pod, from
// istiod's conversion (pilot/pkg/serviceregistry/ambient/authorization.go)
// and ztunnel's evaluation: a policy with targetRefs is the waypoint's,
// not ztunnel's; a policy without a selector covers its namespace (every
// namespace, in the root namespace); a policy with a selector covers the
// pods it selects in its namespace (in every namespace, in the root
// namespace); only ALLOW and DENY are enforced;
// DENY policies are checked first ("explicitly denied by: NS/NAME"), then,
// if any ALLOW policy applies, one must match ("allow policies exist, but
// none allowed"). ztunnel sees no HTTP: an ALLOW rule with HTTP attributes
// never matches, a DENY rule is enforced without them. A policy annotated
// istio.io/dry-run is not enforced. STRICT
// PeerAuthentication becomes a DENY of connections without a peer identity
// (istio_converted_static_strict in the root namespace).

// AuthzSource is a connection's source as the destination's ztunnel sees
// it.
type AuthzSource struct {
	Namespace      string
	ServiceAccount string
	// IP is the source address ("" when unknown).
	IP string
	// Authenticated: the connection carries the source's identity (HBONE
	// from an enrolled pod, a sidecar or a waypoint); plaintext from
	// outside the mesh carries none.
	Authenticated bool
	TrustDomain   string
}

// Principal is the source's identity, "" when it presents none.
func (s AuthzSource) Principal() string {
	if !s.Authenticated {
		return ""
	}
	return SPIFFEPrincipal(s.TrustDomain, s.Namespace, s.ServiceAccount)
}

// AuthzVerdict is ztunnel's decision for one connection.
type AuthzVerdict struct {
	Allowed bool
	// Decided is false when a rule needs what is not known (the source's
	// IP) or uses what is not modelled: no verdict then.
	Decided bool
	// DeniedBy is "NS/NAME" of the DENY policy that matched, or of the
	// static STRICT policy.
	DeniedBy string
	// Reason is ztunnel's own words for a rejection.
	Reason string
	// Policies are the ztunnel policies that apply to the pod, as
	// "ACTION NS/NAME".
	Policies []string
	// WaypointPolicies are policies for the pod's namespace that target a
	// waypoint or a Service (targetRefs): ztunnel does not enforce them.
	WaypointPolicies []string
	// DryRunPolicies are the policies that would apply to the pod (or to
	// its namespace's waypoint) but are annotated istio.io/dry-run: not
	// enforced, as "ACTION NS/NAME".
	DryRunPolicies []string
	Why            string
}

// ztunnel's words for a rejection (proxy.rs AuthorizationRejectionError).
const (
	RejectExplicitDeny = "explicitly denied by: "
	RejectNoAllowMatch = "allow policies exist, but none allowed"
)

// ZtunnelAuthorize decides a connection from src to pod's port (the pod's
// own port, after the Service's targetPort), with the pod's effective
// PeerAuthentication mode peer. rootNamespace holds mesh-wide policies;
// policies are those of the pod's and the root namespace.
func ZtunnelAuthorize(policies []*securityv1.AuthorizationPolicy, rootNamespace string, pod *corev1.Pod, src AuthzSource, port int32, peer PeerMode) AuthzVerdict {
	v := AuthzVerdict{Decided: true}
	var denies, allows []*securityv1.AuthorizationPolicy
	for _, p := range policies {
		if p.Namespace != pod.Namespace && p.Namespace != rootNamespace {
			continue
		}
		dryRun := isDryRun(p)
		if len(p.Spec.GetTargetRefs()) > 0 || p.Spec.GetTargetRef() != nil {
			switch {
			case p.Namespace != pod.Namespace:
			case dryRun:
				v.DryRunPolicies = append(v.DryRunPolicies, p.Spec.GetAction().String()+" "+p.Namespace+"/"+p.Name)
			default:
				v.WaypointPolicies = append(v.WaypointPolicies, p.Namespace+"/"+p.Name)
			}
			continue
		}
		// A selector policy, in the pod's namespace or the root namespace
		// (mesh-wide, as istiod's buildWorkloadPolicies has it), applies
		// where its selector matches.
		if sel := p.Spec.GetSelector().GetMatchLabels(); len(sel) > 0 && !LabelsMatch(sel, pod.Labels) {
			continue
		}
		if dryRun {
			v.DryRunPolicies = append(v.DryRunPolicies, p.Spec.GetAction().String()+" "+p.Namespace+"/"+p.Name)
			continue
		}
		switch p.Spec.GetAction() {
		case securityv1beta1.AuthorizationPolicy_DENY:
			denies = append(denies, p)
		case securityv1beta1.AuthorizationPolicy_ALLOW:
			allows = append(allows, p)
		}
	}
	sortPolicies(denies)
	sortPolicies(allows)
	for _, p := range denies {
		v.Policies = append(v.Policies, "DENY "+p.Namespace+"/"+p.Name)
	}
	for _, p := range allows {
		v.Policies = append(v.Policies, "ALLOW "+p.Namespace+"/"+p.Name)
	}
	sort.Strings(v.WaypointPolicies)
	sort.Strings(v.DryRunPolicies)

	if peer.Mode == ModeStrict && !src.Authenticated {
		v.DeniedBy = rootNamespace + "/" + StaticStrictPolicy
		v.Reason = RejectExplicitDeny + v.DeniedBy
		v.Why = fmt.Sprintf("the connection carries no peer identity (plaintext) and the pod's PeerAuthentication is STRICT (%s)", peer.From)
		return v
	}
	var unknown []string
	for _, p := range denies {
		m, known := policyMatches(p, true, src, port)
		if !known {
			unknown = append(unknown, "DENY "+p.Namespace+"/"+p.Name)
			continue
		}
		if m {
			v.DeniedBy = p.Namespace + "/" + p.Name
			v.Reason = RejectExplicitDeny + v.DeniedBy
			v.Why = fmt.Sprintf("DENY policy %s matches the connection from %s", v.DeniedBy, src.describe())
			return v
		}
	}
	allowedBy := ""
	for _, p := range allows {
		m, known := policyMatches(p, false, src, port)
		if !known {
			unknown = append(unknown, "ALLOW "+p.Namespace+"/"+p.Name)
			continue
		}
		if m {
			allowedBy = p.Namespace + "/" + p.Name
			break
		}
	}
	switch {
	case len(unknown) > 0 && (allowedBy == "" || strings.HasPrefix(unknown[0], "DENY")):
		v.Decided = false
		v.Why = "cannot tell whether " + strings.Join(unknown, ", ") + " matches " + src.describe()
		return v
	case len(allows) == 0:
		v.Allowed = true
		v.Why = "no ALLOW policy applies to the pod and no DENY policy matches"
		return v
	case allowedBy != "":
		v.Allowed = true
		v.Why = fmt.Sprintf("ALLOW policy %s admits %s", allowedBy, src.describe())
		return v
	}
	v.Reason = RejectNoAllowMatch
	names := make([]string, len(allows))
	for i, p := range allows {
		names[i] = p.Namespace + "/" + p.Name
	}
	v.Why = fmt.Sprintf("ALLOW policies %s apply to the pod and none admits %s on port %d", strings.Join(names, ", "), src.describe(), port)
	return v
}

func (s AuthzSource) describe() string {
	if !s.Authenticated {
		if s.IP != "" {
			return "plaintext from " + s.IP
		}
		return "a plaintext connection"
	}
	return s.Principal()
}

// isDryRun: the policy is annotated istio.io/dry-run with a true value
// (strconv.ParseBool, as istiod reads it; a value it cannot parse is not
// dry-run). Istio does not enforce such a policy: istiod leaves it out of
// ztunnel's policies unless AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY is
// on, and then ztunnel only logs it; Envoy only shadows it.
func isDryRun(p *securityv1.AuthorizationPolicy) bool {
	dry, err := strconv.ParseBool(p.Annotations[annotation.IoIstioDryRun.Name])
	return err == nil && dry
}

func sortPolicies(ps []*securityv1.AuthorizationPolicy) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Namespace != ps[j].Namespace {
			return ps[i].Namespace < ps[j].Namespace
		}
		return ps[i].Name < ps[j].Name
	})
}

// policyMatches: any rule matches. An ALLOW rule with HTTP attributes never
// matches; a DENY rule ignores them. known is false when a rule depends on
// what is not known.
func policyMatches(p *securityv1.AuthorizationPolicy, deny bool, src AuthzSource, port int32) (match, known bool) {
	known = true
	for _, r := range p.Spec.GetRules() {
		if !deny && ruleHasHTTP(r) {
			continue
		}
		m, k := ruleMatches(r, p.Namespace, src, port)
		if !k {
			known = false
			continue
		}
		if m {
			return true, true
		}
	}
	return false, known
}

func ruleHasHTTP(r *securityv1beta1.Rule) bool {
	for _, to := range r.GetTo() {
		op := to.GetOperation()
		if len(op.GetHosts())+len(op.GetNotHosts())+len(op.GetMethods())+len(op.GetNotMethods())+len(op.GetPaths())+len(op.GetNotPaths()) > 0 {
			return true
		}
	}
	for _, from := range r.GetFrom() {
		s := from.GetSource()
		if len(s.GetRemoteIpBlocks())+len(s.GetNotRemoteIpBlocks())+len(s.GetRequestPrincipals())+len(s.GetNotRequestPrincipals()) > 0 {
			return true
		}
	}
	for _, w := range r.GetWhen() {
		if !l4When[w.GetKey()] {
			return true
		}
	}
	return false
}

var l4When = map[string]bool{"source.ip": true, "source.namespace": true, "source.principal": true, "destination.ip": true, "destination.port": true}

// ruleMatches: every part the rule has (to, from, each when) must match;
// within to and from, any entry. policyNS is the policy's namespace, where
// a bare service account name lives.
func ruleMatches(r *securityv1beta1.Rule, policyNS string, src AuthzSource, port int32) (match, known bool) {
	known = true
	if tos := r.GetTo(); len(tos) > 0 {
		any := false
		for _, to := range tos {
			op := to.GetOperation()
			if portsMatch(op.GetPorts(), op.GetNotPorts(), port) {
				any = true
			}
		}
		if !any {
			return false, true
		}
	}
	if froms := r.GetFrom(); len(froms) > 0 {
		any := false
		for _, from := range froms {
			m, k := sourceMatches(from.GetSource(), policyNS, src)
			if !k {
				known = false
				continue
			}
			any = any || m
		}
		if !any {
			return false, known
		}
	}
	for _, w := range r.GetWhen() {
		if !l4When[w.GetKey()] {
			continue // a DENY rule is enforced without its HTTP conditions
		}
		m, k := whenMatches(w, src, port)
		if !k {
			return false, false
		}
		if !m {
			return false, known
		}
	}
	return known, known
}

func portsMatch(ports, notPorts []string, port int32) bool {
	p := strconv.Itoa(int(port))
	for _, np := range notPorts {
		if np == p {
			return false
		}
	}
	if len(ports) == 0 {
		return true
	}
	for _, x := range ports {
		if x == p {
			return true
		}
	}
	return false
}

func sourceMatches(s *securityv1beta1.Source, policyNS string, src AuthzSource) (match, known bool) {
	if len(s.GetTrustDomains())+len(s.GetNotTrustDomains()) > 0 {
		return false, false
	}
	principal := src.Principal()
	ns := ""
	if src.Authenticated {
		ns = src.Namespace
	}
	if len(s.GetPrincipals()) > 0 && !anyStringMatch(s.GetPrincipals(), principal) {
		return false, true
	}
	if anyStringMatch(s.GetNotPrincipals(), principal) {
		return false, true
	}
	if len(s.GetNamespaces()) > 0 && !anyStringMatch(s.GetNamespaces(), ns) {
		return false, true
	}
	if anyStringMatch(s.GetNotNamespaces(), ns) {
		return false, true
	}
	if sas := s.GetServiceAccounts(); len(sas) > 0 && !serviceAccountIn(sas, policyNS, src) {
		return false, true
	}
	if sas := s.GetNotServiceAccounts(); len(sas) > 0 && serviceAccountIn(sas, policyNS, src) {
		return false, true
	}
	if len(s.GetIpBlocks())+len(s.GetNotIpBlocks()) > 0 {
		if src.IP == "" {
			return false, false
		}
		if len(s.GetIpBlocks()) > 0 && !ipIn(s.GetIpBlocks(), src.IP) {
			return false, true
		}
		if ipIn(s.GetNotIpBlocks(), src.IP) {
			return false, true
		}
	}
	return true, true
}

// serviceAccountIn: "NS/SA", or "SA" in the policy's namespace policyNS,
// as istiod reads it (stringToServiceAccountMatch(sas, ruleNamespace)): a
// bare "web" in a policy in shop is shop/web, whatever the source's
// namespace.
func serviceAccountIn(list []string, policyNS string, src AuthzSource) bool {
	if !src.Authenticated {
		return false
	}
	for _, v := range list {
		ns, sa, ok := strings.Cut(v, "/")
		if !ok {
			sa = v
			ns = policyNS
		}
		if ns == src.Namespace && sa == cmp.Or(src.ServiceAccount, "default") {
			return true
		}
	}
	return false
}

func whenMatches(w *securityv1beta1.Condition, src AuthzSource, port int32) (match, known bool) {
	var value string
	switch w.GetKey() {
	case "source.ip":
		if src.IP == "" {
			return false, false
		}
		in := ipIn(w.GetValues(), src.IP)
		out := ipIn(w.GetNotValues(), src.IP)
		return (len(w.GetValues()) == 0 || in) && !out, true
	case "source.namespace":
		if src.Authenticated {
			value = src.Namespace
		}
	case "source.principal":
		value = src.Principal()
	case "destination.port":
		value = strconv.Itoa(int(port))
	default: // destination.ip: the pod's own address, which is not judged here
		return false, false
	}
	m := len(w.GetValues()) == 0 || anyStringMatch(w.GetValues(), value)
	return m && !anyStringMatch(w.GetNotValues(), value), true
}

// anyStringMatch is Istio's string match: "*" is presence, a leading or
// trailing "*" a suffix or prefix match. Nothing matches "".
func anyStringMatch(patterns []string, v string) bool {
	if v == "" {
		return false
	}
	for _, p := range patterns {
		switch {
		case p == "*":
			return true
		case strings.HasPrefix(p, "*") && strings.HasSuffix(v, p[1:]):
			return true
		case strings.HasSuffix(p, "*") && strings.HasPrefix(v, p[:len(p)-1]):
			return true
		case p == v:
			return true
		}
	}
	return false
}

func ipIn(blocks []string, ip string) bool {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	for _, b := range blocks {
		if strings.Contains(b, "/") {
			if pfx, err := netip.ParsePrefix(b); err == nil && pfx.Contains(addr) {
				return true
			}
		} else if a, err := netip.ParseAddr(b); err == nil && a == addr {
			return true
		}
	}
	return false
}
