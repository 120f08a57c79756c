package mesh

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DNSAlias names the route of a caller whose requests to an ExternalName
// Service go where its DNS CNAME points, with no Istio config on the way.
const DNSAlias = "dns-cname"

// ExternalNameOf is the name an ExternalName Service aliases ("" for any
// other Service), lower case and without a trailing dot, as istiod reads it.
func ExternalNameOf(svc *corev1.Service) string {
	if svc == nil || svc.Spec.Type != corev1.ServiceTypeExternalName {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(svc.Spec.ExternalName), ".")
}

// sniffedPort reports whether svc's port is one istiod sniffs: its own
// route configuration takes every domain, so an alias needs no name there.
func sniffedPort(svc *corev1.Service, port int32) bool {
	for _, sp := range svc.Spec.Ports {
		if sp.Port == port {
			return PortSniffed(sp)
		}
	}
	return false
}

// externalNameView fills v for an ExternalName Service. It has no
// endpoints by design. istiod (since 1.21; the only behaviour since 1.24)
// treats it as an alias: it builds no cluster or listener of its own
// (Resolution Alias, skipped in buildOutboundClusters), and wherever it
// routes the concrete host, a Service or ServiceEntry of the name the
// alias points at, it also matches the alias's host. So a sidecar
// caller's requests are routed as the concrete host's, and when istiod
// knows no such host they leave through the outbound policy (the app
// resolved the CNAME to an outside address). A caller without sidecar
// just follows the CNAME.
func (c *Config) externalNameView(v *View, caller Caller, sd *ServiceData) {
	target := ExternalNameOf(sd.Service)
	own := ClusterName(v.Port, "", v.Host)
	if !caller.Sidecar || caller.Ambient {
		v.Routes = []Route{{Name: "DNS: " + v.Host + " is a CNAME to " + target, CatchAll: true,
			Destinations: []Destination{{Host: target, Port: v.Port, Percent: 100, Cluster: DNSAlias}}}}
		v.Clusters[DNSAlias] = &Cluster{Name: DNSAlias, Host: target, Port: v.Port, Exists: true, External: true,
			Why: "the caller resolves the CNAME and connects to " + target + " itself: no endpoints of the Service are involved"}
		return
	}
	// The alias's own exportTo and the caller's Sidecar egress hosts do
	// not matter: istiod adds the alias's names to the concrete host's
	// virtual host (resolveServiceAliases), so the alias is routed exactly
	// where the caller's proxy routes the concrete host, as that host's
	// port (its protocol) says.
	v.Visibility = c.VisibilityOf(caller, sd.Service, v.Port)
	v.Clusters[own] = &Cluster{Name: own, Host: v.Host, Port: v.Port,
		Why: "ExternalName Service: istiod builds no cluster for an alias; its requests are routed as " + target + "'s"}
	if concrete := c.Services[target]; concrete != nil && concrete.Service != nil && ExternalNameOf(concrete.Service) == "" {
		sub, err := c.ViewFor(caller, target, v.Port)
		if err == nil && sub.Visibility.Visible && sub.Visibility.Via == "" && !sniffedPort(concrete.Service, v.Port) && !c.aliasKept(caller, concrete.Service, v.Host, v.Port) {
			sub.Visibility.Via = "the caller's Sidecar egress hosts that import " + target + " do not name the alias " + v.Host + ", so istiod leaves it off " + target + "'s virtual host"
		}
		if err == nil && sub.Visibility.Via != "" {
			// No virtual host of the caller's proxy holds the alias's names:
			// the concrete host is routed only through a VirtualService's
			// virtual host for its name on port 80 (an alias's names join
			// a Service's virtual host alone), or the caller's Sidecar
			// leaves the alias off the Service's. The alias's requests, to
			// the concrete's address, leave by the outbound policy.
			sc, _ := c.SidecarFor(caller)
			registryOnly, from := c.OutboundPolicy(sc)
			fb := fallbackCluster(registryOnly)
			v.Visibility = Visibility{Visible: false, HiddenBy: "no virtual host of the caller's proxy holds the alias: " + sub.Visibility.Via,
				Fallback: fb, RegistryOnly: registryOnly, PolicyFrom: from, Sidecar: sc}
			v.Protocol = sub.Protocol
			v.Routes = []Route{{Name: fb + ": no virtual host holds the alias " + v.Host, CatchAll: true,
				Destinations: []Destination{{Host: target, Port: v.Port, Percent: 100, Cluster: fb}}}}
			if fb == PassthroughCluster {
				v.Clusters[fb] = c.plainCluster(caller, fb, concrete, v.Port, "PassthroughCluster forwards the app's bytes to "+target+"'s ClusterIP as they are, without mTLS")
			} else {
				v.Clusters[fb] = &Cluster{Name: fb, Host: target, Port: v.Port, Exists: true, Why: "BlackHoleCluster drops every request (502)"}
			}
			return
		}
		if err == nil {
			v.Visibility, v.Protocol = sub.Visibility, sub.Protocol
			v.VirtualService, v.VirtualServices, v.DestinationRules, v.Rule = sub.VirtualService, sub.VirtualServices, sub.DestinationRules, sub.Rule
			v.Routes, v.Unmatched = sub.Routes, sub.Unmatched
			for name, cl := range sub.Clusters {
				v.Clusters[name] = cl
			}
			v.Unknown = append(v.Unknown, sub.Unknown...)
			return
		}
		v.Unknown = append(v.Unknown, fmt.Sprintf("ExternalName %s aliases the Service %s, which has no port %d", v.Host, target, v.Port))
	}
	if se := c.visibleServiceEntry(caller, target); se != nil && serviceEntryHasPort(se, v.Port) && c.egressSelectsHost(caller, se.Namespace, target, v.Port) {
		v.Visibility = Visibility{Visible: true, Sidecar: v.Visibility.Sidecar, RegistryOnly: v.Visibility.RegistryOnly, PolicyFrom: v.Visibility.PolicyFrom,
			Via: "an ExternalName alias of ServiceEntry " + se.Namespace + "/" + se.Name + "'s host " + target}
		name := ClusterName(v.Port, "", target)
		v.Routes = []Route{{Name: "alias of " + target, CatchAll: true,
			Destinations: []Destination{{Host: target, Port: v.Port, Percent: 100, Cluster: name}}}}
		v.Clusters[name] = &Cluster{Name: name, Host: target, Port: v.Port, Exists: true, External: true,
			Why: "ServiceEntry " + se.Namespace + "/" + se.Name + ", which the alias " + v.Host + " is routed as"}
		return
	}
	// istiod knows no host of that name (on that port): no route matches
	// the alias, and the connection to the address the app resolved
	// leaves by the caller's outbound policy.
	sc, _ := c.SidecarFor(caller)
	registryOnly, from := c.OutboundPolicy(sc)
	fb := fallbackCluster(registryOnly)
	v.Routes = []Route{{Name: fb + ": istiod knows no host " + target + " for the alias to route as", CatchAll: true,
		Destinations: []Destination{{Host: target, Port: v.Port, Percent: 100, Cluster: fb}}}}
	if fb == PassthroughCluster {
		v.Clusters[fb] = &Cluster{Name: fb, Host: target, Port: v.Port, Exists: true, External: true,
			Why: "PassthroughCluster (" + from + "): the app's connection to the address " + target + " resolves to goes out as it is"}
		return
	}
	v.Clusters[fb] = &Cluster{Name: fb, Host: target, Port: v.Port, Exists: true,
		Why: "BlackHoleCluster drops it (502): REGISTRY_ONLY (" + from + ") and no ServiceEntry declares " + target}
}
