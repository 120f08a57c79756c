package mesh

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Kubernetes NetworkPolicy, judged for the one connection ambient depends
// on: HBONE from a pod (its ztunnel, in the pod's network namespace, keeps
// the pod's IP) to another pod's IP on port 15008. A policy that admits
// the app's port and not 15008 drops every mesh connection; ztunnel then
// logs "connection timed out, maybe a NetworkPolicy is blocking HBONE port
// 15008". NetworkPolicy is enforced by the CNI, and a CNI may not enforce it
// (flannel) or add policies of its own kinds (CiliumNetworkPolicy, Calico's):
// what is judged here is what the Kubernetes objects say.

// NetPeer is one end of the connection: a pod and its namespace (nil when
// the namespace could not be read).
type NetPeer struct {
	Pod       *corev1.Pod
	Namespace *corev1.Namespace
}

// NetVerdict says whether the policies let the connection through.
type NetVerdict struct {
	Allowed bool
	// Decided is false when a rule needs what was not read (a namespace's
	// labels): no verdict then.
	Decided bool
	// Isolating names the policies that select the pod for the direction
	// that blocks (ingress of the target, egress of the source) when none
	// of them admits the connection.
	Isolating []string
	Why       string
}

// NetworkPolicyAllows judges a TCP connection from from to to's pod IP on
// port: the ingress policies of to's namespace (ingress) that select to,
// and the egress policies of from's namespace (egress) that select from. A
// pod no policy selects for a direction is not isolated for it.
func NetworkPolicyAllows(from, to NetPeer, port int32, ingress, egress []networkingv1.NetworkPolicy) NetVerdict {
	in := judgeDirection(networkingv1.PolicyTypeIngress, to, from, port, ingress)
	out := judgeDirection(networkingv1.PolicyTypeEgress, from, to, port, egress)
	v := NetVerdict{Decided: in.decided && out.decided, Allowed: in.allowed && out.allowed}
	switch {
	case in.decided && !in.allowed:
		v.Decided, v.Allowed, v.Isolating = true, false, in.isolating
		v.Why = fmt.Sprintf("ingress of %s/%s on TCP %d is restricted by %s and no rule admits %s/%s", to.Pod.Namespace, to.Pod.Name, port, strings.Join(in.isolating, ", "), from.Pod.Namespace, from.Pod.Name)
	case out.decided && !out.allowed:
		v.Decided, v.Allowed, v.Isolating = true, false, out.isolating
		v.Why = fmt.Sprintf("egress of %s/%s is restricted by %s and no rule admits %s/%s on TCP %d", from.Pod.Namespace, from.Pod.Name, strings.Join(out.isolating, ", "), to.Pod.Namespace, to.Pod.Name, port)
	case !v.Decided:
		v.Why = strings.Join(nonEmpty(in.undecided, out.undecided), "; ")
	default:
		v.Why = strings.Join(nonEmpty(in.why, out.why), "; ")
	}
	return v
}

type directionVerdict struct {
	allowed, decided bool
	isolating        []string
	why, undecided   string
}

// judgeDirection: self is the pod the policies must select, peer the other
// end.
func judgeDirection(dir networkingv1.PolicyType, self, peer NetPeer, port int32, policies []networkingv1.NetworkPolicy) directionVerdict {
	v := directionVerdict{allowed: true, decided: true}
	var undecided []string
	admitted := ""
	for i := range policies {
		p := &policies[i]
		if p.Namespace != self.Pod.Namespace || !hasPolicyType(p, dir) || !selectorMatches(&p.Spec.PodSelector, self.Pod.Labels) {
			continue
		}
		v.isolating = append(v.isolating, "NetworkPolicy "+p.Namespace+"/"+p.Name)
		if admitted != "" {
			continue
		}
		switch ok, known := policyAdmits(dir, p, self, peer, port); {
		case !known:
			undecided = append(undecided, fmt.Sprintf("NetworkPolicy %s/%s selects by namespace labels that could not be read", p.Namespace, p.Name))
		case ok:
			admitted = "NetworkPolicy " + p.Namespace + "/" + p.Name
		}
	}
	sort.Strings(v.isolating)
	word := map[networkingv1.PolicyType]string{networkingv1.PolicyTypeIngress: "ingress", networkingv1.PolicyTypeEgress: "egress"}[dir]
	switch {
	case len(v.isolating) == 0:
		v.why = fmt.Sprintf("no NetworkPolicy restricts %s of %s/%s", word, self.Pod.Namespace, self.Pod.Name)
	case admitted != "":
		v.why = fmt.Sprintf("%s admits %s TCP %d", admitted, word, port)
	case len(undecided) > 0:
		v.allowed, v.decided = false, false
		v.undecided = strings.Join(undecided, "; ")
	default:
		v.allowed = false
	}
	return v
}

// hasPolicyType applies Kubernetes' default: Ingress always, Egress when
// the policy has egress rules, unless policyTypes says.
func hasPolicyType(p *networkingv1.NetworkPolicy, t networkingv1.PolicyType) bool {
	if len(p.Spec.PolicyTypes) == 0 {
		return t == networkingv1.PolicyTypeIngress || len(p.Spec.Egress) > 0
	}
	for _, pt := range p.Spec.PolicyTypes {
		if pt == t {
			return true
		}
	}
	return false
}

// policyAdmits reports whether one of p's rules for dir admits peer on
// port; known is false when only an unreadable namespace decides it.
func policyAdmits(dir networkingv1.PolicyType, p *networkingv1.NetworkPolicy, self, peer NetPeer, port int32) (ok, known bool) {
	known = true
	type rule struct {
		peers []networkingv1.NetworkPolicyPeer
		ports []networkingv1.NetworkPolicyPort
	}
	var rules []rule
	if dir == networkingv1.PolicyTypeIngress {
		for _, r := range p.Spec.Ingress {
			rules = append(rules, rule{r.From, r.Ports})
		}
	} else {
		for _, r := range p.Spec.Egress {
			rules = append(rules, rule{r.To, r.Ports})
		}
	}
	// The port is on the destination: the target for ingress and egress.
	dst := self
	if dir == networkingv1.PolicyTypeEgress {
		dst = peer
	}
	for _, r := range rules {
		if !portsAdmit(r.ports, port, dst.Pod) {
			continue
		}
		if len(r.peers) == 0 {
			return true, true
		}
		for _, np := range r.peers {
			match, k := peerMatches(np, p.Namespace, peer)
			if !k {
				known = false
				continue
			}
			if match {
				return true, true
			}
		}
	}
	return false, known
}

func portsAdmit(ports []networkingv1.NetworkPolicyPort, port int32, dst *corev1.Pod) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil {
			return true
		}
		if p.Port.Type == intstr.String { // a named port: the destination pod's container port of that name
			if dst != nil && namedPortIs(dst, p.Port.StrVal, port) {
				return true
			}
			continue
		}
		lo, hi := p.Port.IntVal, p.Port.IntVal
		if p.EndPort != nil {
			hi = *p.EndPort
		}
		if port >= lo && port <= hi {
			return true
		}
	}
	return false
}

func namedPortIs(pod *corev1.Pod, name string, port int32) bool {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			for _, cp := range c.Ports {
				if cp.Name == name && cp.ContainerPort == port {
					return true
				}
			}
		}
	}
	return false
}

// peerMatches: a podSelector alone selects in the policy's namespace; a
// namespaceSelector alone every pod of the namespaces it selects; both,
// the pods it selects there; an ipBlock the pod's IP.
func peerMatches(np networkingv1.NetworkPolicyPeer, policyNamespace string, peer NetPeer) (match, known bool) {
	if np.IPBlock != nil {
		return ipBlockMatches(np.IPBlock, peer.Pod.Status.PodIP), true
	}
	if np.NamespaceSelector == nil {
		return peer.Pod.Namespace == policyNamespace && selectorMatches(np.PodSelector, peer.Pod.Labels), true
	}
	if np.PodSelector != nil && !selectorMatches(np.PodSelector, peer.Pod.Labels) {
		return false, true
	}
	if len(np.NamespaceSelector.MatchLabels) == 0 && len(np.NamespaceSelector.MatchExpressions) == 0 {
		return true, true // every namespace
	}
	if peer.Namespace == nil {
		return false, false
	}
	return selectorMatches(np.NamespaceSelector, peer.Namespace.Labels), true
}

func ipBlockMatches(b *networkingv1.IPBlock, ip string) bool {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !cidr.Contains(addr) {
		return false
	}
	for _, e := range b.Except {
		if ex, err := netip.ParsePrefix(e); err == nil && ex.Contains(addr) {
			return false
		}
	}
	return true
}

// selectorMatches: nil or empty selects everything.
func selectorMatches(sel *metav1.LabelSelector, labels map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(k8slabels.Set(labels))
}

func nonEmpty(values ...string) []string {
	var out []string
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
