package mesh

import (
	"net"
	"strings"
)

// ServiceHost is a Service's hostname in the mesh, as Envoy names it in
// cluster names (outbound|80||orders.shop.svc.cluster.local).
func ServiceHost(name, namespace string) string {
	return name + "." + namespace + ".svc.cluster.local"
}

// ResolveHost applies Istio's short-name rule (ResolveShortnameToFQDN) to a
// host written in a rule of namespace ns: only a name without a dot is
// completed with the rule's own namespace. "orders.shop" stays
// "orders.shop", which is no Service's hostname.
func ResolveHost(host, ns string) string {
	if host == "*" || net.ParseIP(host) != nil || strings.Contains(host, ".") {
		return host
	}
	return ServiceHost(host, ns)
}

// HostCovers reports whether a rule host written in namespace ns matches the
// hostname fqdn exactly or as a wildcard ("*", "*.shop.svc.cluster.local").
func HostCovers(host, ns, fqdn string) bool {
	h := ResolveHost(host, ns)
	if strings.EqualFold(h, fqdn) {
		return true
	}
	return strings.HasPrefix(h, "*") && (h == "*" || strings.HasSuffix(strings.ToLower(fqdn), strings.ToLower(h[1:])))
}

// exactHost is the specificity of a host without a wildcard: above any
// wildcard's length.
const exactHost = 1 << 20

// hostSpecificity orders matching hosts as Istio's most specific match: the
// exact name beats any wildcard, a longer wildcard a shorter one.
func hostSpecificity(host, ns string) int {
	h := ResolveHost(host, ns)
	if !strings.HasPrefix(h, "*") {
		return exactHost
	}
	return len(h)
}

// NearMiss reports a rule host an on-call reads as the Service but Istio
// does not: "orders.shop" and "orders.shop.svc" are not completed to the
// FQDN, so a rule naming them never applies.
func NearMiss(host, service, namespace string) bool {
	return host == service+"."+namespace || host == service+"."+namespace+".svc"
}

// hostNamespace is the namespace of a Service hostname
// (NAME.NAMESPACE.svc.cluster.local), "" for another host.
func hostNamespace(host string) string {
	parts := strings.Split(host, ".")
	if len(parts) == 5 && parts[2] == "svc" {
		return parts[1]
	}
	return ""
}
