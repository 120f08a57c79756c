package mesh

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"istio.io/api/annotation"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Where a proxy sends traffic for which it has no cluster.
const (
	PassthroughCluster = "PassthroughCluster"
	BlackHoleCluster   = "BlackHoleCluster"
)

// ExportedTo reports whether a rule in ruleNamespace with exportTo is visible
// from namespace ns. Empty exportTo means everywhere (Istio's default when
// the mesh sets none); "~" means nowhere, "." the rule's own namespace.
func ExportedTo(exportTo []string, ruleNamespace, ns string) bool {
	if len(exportTo) == 0 || contains(exportTo, "*") {
		return true
	}
	if contains(exportTo, "~") {
		return false
	}
	for _, e := range exportTo {
		if e == ns || e == "." && ruleNamespace == ns {
			return true
		}
	}
	return false
}

// exportToOrDefault is a rule's exportTo, or the mesh default for its kind.
func exportToOrDefault(own, meshDefault []string) []string {
	if len(own) > 0 {
		return own
	}
	return meshDefault
}

// ServiceExportTo is a Service's exportTo: its networking.istio.io/exportTo
// annotation (comma-separated), else the mesh's defaultServiceExportTo.
func (c *Config) ServiceExportTo(svc *corev1.Service) []string {
	if v, ok := svc.Annotations[annotation.NetworkingExportTo.Name]; ok {
		var out []string
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return c.Mesh.Raw.GetDefaultServiceExportTo()
}

// LabelsMatch reports whether every selector label is set, to the same
// value, in labels: a selector's app: "" needs an app label that is
// empty, not one that is missing (Istio's labels.Instance.SubsetOf and a
// Kubernetes equality selector both require presence).
func LabelsMatch(selector, labels map[string]string) bool {
	if labels == nil {
		return false
	}
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// SidecarFor picks the Sidecar resource Istio applies to caller: one in its
// namespace whose workloadSelector selects it, else its namespace's one
// without a selector, else the root namespace's one without a selector;
// the oldest wins a tie (root-namespace Sidecars with a selector apply
// only to proxies of the root namespace). unknown is set when a selecting Sidecar exists but
// the caller's labels are not known.
func (c *Config) SidecarFor(caller Caller) (sc *networkingv1.Sidecar, unknown string) {
	sidecars := append([]*networkingv1.Sidecar(nil), c.Sidecars...)
	sort.SliceStable(sidecars, func(i, j int) bool {
		if !sidecars[i].CreationTimestamp.Equal(&sidecars[j].CreationTimestamp) {
			return sidecars[i].CreationTimestamp.Before(&sidecars[j].CreationTimestamp)
		}
		return sidecars[i].Name < sidecars[j].Name
	})
	var nsDefault, rootDefault *networkingv1.Sidecar
	for _, s := range sidecars {
		sel := s.Spec.GetWorkloadSelector().GetLabels()
		switch {
		case s.Namespace == caller.Namespace && len(sel) > 0:
			if !caller.labelsKnown() {
				unknown = fmt.Sprintf("Sidecar %s/%s selects workloads (%s) and the caller's labels are not known", s.Namespace, s.Name, labels.SelectorFromSet(sel))
				continue
			}
			if LabelsMatch(sel, caller.Labels) {
				return s, ""
			}
		case s.Namespace == caller.Namespace && nsDefault == nil:
			nsDefault = s
		case s.Namespace == c.RootNamespace && len(sel) == 0 && rootDefault == nil:
			rootDefault = s
		}
	}
	if nsDefault != nil {
		return nsDefault, unknown
	}
	return rootDefault, unknown
}

// OutboundPolicy is the caller's outboundTrafficPolicy: its Sidecar's when
// it sets one, else the mesh's.
func (c *Config) OutboundPolicy(sc *networkingv1.Sidecar) (registryOnly bool, from string) {
	if sc == nil {
		return c.meshOutboundPolicy()
	}
	if p := sc.Spec.GetOutboundTrafficPolicy(); p != nil {
		// The enum's zero is REGISTRY_ONLY: a policy without a mode is
		// REGISTRY_ONLY, as istiod reads it.
		return p.GetMode() == networkingv1alpha3.OutboundTrafficPolicy_REGISTRY_ONLY, "Sidecar " + sc.Namespace + "/" + sc.Name
	}
	return c.meshOutboundPolicy()
}

func (c *Config) meshOutboundPolicy() (bool, string) {
	if !c.Mesh.Found {
		return c.Mesh.RegistryOnly(), "mesh config absent: Istio's default"
	}
	return c.Mesh.RegistryOnly(), "mesh config"
}

// fallbackCluster is where traffic without a cluster goes.
func fallbackCluster(registryOnly bool) string {
	if registryOnly {
		return BlackHoleCluster
	}
	return PassthroughCluster
}

// egressHosts are the Sidecar's egress hosts that decide visibility on
// port: those of an egress listener bound to that port, else those of the
// listener without a port.
func egressHosts(sc *networkingv1.Sidecar, port int32) ([]string, bool) {
	if sc == nil || len(sc.Spec.GetEgress()) == 0 {
		return nil, false
	}
	var catchAll []string
	found := false
	for _, eg := range sc.Spec.GetEgress() {
		if p := eg.GetPort(); p != nil && p.GetNumber() != 0 {
			if int32(p.GetNumber()) == port {
				return eg.GetHosts(), true
			}
			continue
		}
		catchAll, found = append(catchAll, eg.GetHosts()...), true
	}
	return catchAll, found
}

// egressSelects reports whether an egress host entry "ns/dnsName" of a
// Sidecar in sidecarNS, applied to a caller in callerNS, selects the host
// of namespace hostNS. "." is the caller's namespace, "*" any, "~" none.
func egressSelects(entry, callerNS, hostNS, host string) bool {
	ns, dns, ok := strings.Cut(entry, "/")
	if !ok {
		ns, dns = "*", entry
	}
	switch ns {
	case "~":
		return false
	case "*":
	case ".":
		if hostNS != callerNS {
			return false
		}
	default:
		if ns != hostNS {
			return false
		}
	}
	switch {
	case dns == "*":
		return true
	case strings.HasPrefix(dns, "*."):
		return strings.HasSuffix(strings.ToLower(host), strings.ToLower(dns[1:]))
	}
	return strings.EqualFold(dns, host)
}

// Visibility says whether the caller's proxy has config for a Service.
type Visibility struct {
	Visible bool
	// HiddenBy names what hides it: the Service's exportTo, the caller's
	// Sidecar egress hosts.
	HiddenBy string
	// Fallback is where the caller's traffic to the Service goes instead
	// (PassthroughCluster, BlackHoleCluster) when it is hidden.
	Fallback string
	// Policy is the caller's outboundTrafficPolicy and where it comes from.
	RegistryOnly bool
	PolicyFrom   string
	// Sidecar is the Sidecar resource that applies to the caller, if any.
	Sidecar *networkingv1.Sidecar
	// Imported, for a Service the caller's Sidecar egress hosts do not
	// select, names the VirtualService (imported by those egress hosts)
	// whose routes send to the Service's port: istiod then adds the
	// Service to the caller's scope (collectImportedServices) and pushes
	// its clusters, for that VirtualService's routes, although the
	// caller's own traffic to the Service is not routed to them.
	Imported string
	// Via says why a Service the egress hosts do not select is routed
	// anyway: on port 80 istiod writes a virtual host for the hosts of
	// every VirtualService the caller imports, Service or not.
	Via string
	// Unknown says why visibility could not be judged fully.
	Unknown string
	// Undecided says why whether the caller's proxy routes a Service it
	// does not see is not known (Services that were not read could give it
	// a listener that does): the fallback's TLS is then not judged.
	Undecided string
}

// VisibilityOf works out whether the caller's proxy is given the Service's
// port at all: the Service must be exported to the caller's namespace, and
// the caller's Sidecar, if any, must list it in its egress hosts.
func (c *Config) VisibilityOf(caller Caller, svc *corev1.Service, port int32) Visibility {
	sc, unknown := c.SidecarFor(caller)
	v := Visibility{Visible: true, Sidecar: sc, Unknown: unknown}
	v.RegistryOnly, v.PolicyFrom = c.OutboundPolicy(sc)
	host := ServiceHost(svc.Name, svc.Namespace)
	if exportTo := c.ServiceExportTo(svc); !ExportedTo(exportTo, svc.Namespace, caller.Namespace) {
		v.Visible = false
		v.HiddenBy = fmt.Sprintf("Service %s/%s is exported to %s only (exportTo %s), not to %s",
			svc.Namespace, svc.Name, describeExportTo(exportTo, svc.Namespace), strings.Join(exportTo, ","), caller.Namespace)
		if svc.Namespace == caller.Namespace {
			// istiod takes a route destination of the caller's own
			// namespace into its scope whatever the Service's exportTo.
			v.Imported = c.importedBy(caller, sc, svc, port)
		}
	} else if hosts, scoped := egressHosts(sc, port); scoped {
		selected := false
		for _, h := range hosts {
			selected = selected || egressSelects(h, caller.Namespace, svc.Namespace, host)
		}
		if !selected {
			v.Visible = false
			v.HiddenBy = fmt.Sprintf("Sidecar %s/%s egress hosts %s do not include %s/%s", sc.Namespace, sc.Name, strings.Join(hosts, ","), svc.Namespace, host)
			v.Imported = c.importedBy(caller, sc, svc, port)
		}
	}
	if !v.Visible {
		switch via, unknown := c.portEightyRoute(caller, sc, svc, port); {
		case via != "":
			v.Visible, v.HiddenBy, v.Via = true, "", via
		case unknown != "":
			v.Undecided = unknown
		}
	}
	if !v.Visible {
		v.Fallback = fallbackCluster(v.RegistryOnly)
	}
	return v
}

// sidecarVirtualServices are the VirtualServices the caller's sidecar
// imports: bound to sidecars, exported to its namespace, and selected by
// its Sidecar's egress hosts (all of them without a Sidecar).
func (c *Config) sidecarVirtualServices(caller Caller, sc *networkingv1.Sidecar) []*networkingv1.VirtualService {
	var out []*networkingv1.VirtualService
	for _, vs := range c.VirtualServices {
		if _, visible := c.vsTier(vs, caller.Namespace); visible && bindsSidecars(vs.Spec.GetGateways()) && egressImportsVS(sc, vs, caller.Namespace) {
			out = append(out, vs)
		}
	}
	return out
}

// importedBy names the VirtualService, imported by the caller's Sidecar
// (every one bound to sidecars and exported to the caller without a
// Sidecar), one of whose route destinations is svc on port (or on no
// port, which takes every port): istiod adds svc to the caller's scope
// for it (collectImportedServices: HTTP routes whose match names another
// sourceNamespace aside, TCP and TLS routes, mirrors). The caller must
// see svc, unless svc is of the caller's own namespace, which istiod
// takes whatever its exportTo. "" for none.
func (c *Config) importedBy(caller Caller, sc *networkingv1.Sidecar, svc *corev1.Service, port int32) string {
	return c.hostImportedBy(caller, sc, ServiceHost(svc.Name, svc.Namespace), port)
}

// hostImportedBy is importedBy for a host, a Service's or a ServiceEntry's.
func (c *Config) hostImportedBy(caller Caller, sc *networkingv1.Sidecar, host string, port int32) string {
	for _, vs := range c.sidecarVirtualServices(caller, sc) {
		// A destination naming other ports imports only those
		// (serviceMatchingVirtualServicePorts).
		if ports := vsDestinationPorts(vs, caller.Namespace)[host]; ports[0] || ports[port] {
			return vs.Namespace + "/" + vs.Name
		}
	}
	return ""
}

// vsDestinationPorts are the hosts (resolved) a VirtualService's routes
// and mirrors send to, with the ports they name (0: none named), as
// virtualServiceDestinationsFilteredBySourceNamespace reads them for
// proxies of namespace ns.
func vsDestinationPorts(vs *networkingv1.VirtualService, ns string) map[string]map[int32]bool {
	out := map[string]map[int32]bool{}
	add := func(d *networkingv1alpha3.Destination) {
		if d == nil {
			return
		}
		h := ResolveHost(d.GetHost(), vs.Namespace)
		if out[h] == nil {
			out[h] = map[int32]bool{}
		}
		out[h][int32(d.GetPort().GetNumber())] = true
	}
	for _, h := range vs.Spec.GetHttp() {
		matched := true
		for _, m := range h.GetMatch() {
			if m.GetSourceNamespace() != "" {
				if m.GetSourceNamespace() == ns {
					matched = true
					break
				}
				matched = false
			}
		}
		if !matched {
			continue
		}
		for _, r := range h.GetRoute() {
			add(r.GetDestination())
		}
		add(h.GetMirror())
		for _, m := range h.GetMirrors() {
			add(m.GetDestination())
		}
	}
	for _, t := range vs.Spec.GetTcp() {
		for _, r := range t.GetRoute() {
			add(r.GetDestination())
		}
	}
	for _, t := range vs.Spec.GetTls() {
		for _, r := range t.GetRoute() {
			add(r.GetDestination())
		}
	}
	return out
}

// portEightyRoute says why the caller's requests to svc on port 80 are
// routed although its Sidecar's egress hosts do not select svc: istiod
// keeps, on port 80 alone, the VirtualServices whose hosts are no Service
// of the listener (BuildSidecarOutboundVirtualHosts: "hack to keep
// consistent with previous behavior") and writes a virtual host for
// them; the caller's HTTP listener on port 80 (for a Service its egress
// hosts do select) then routes svc's host by that VirtualService. "" when
// it does not happen; unknown says why that is not known (the Services
// that would give the caller the listener were not all read).
func (c *Config) portEightyRoute(caller Caller, sc *networkingv1.Sidecar, svc *corev1.Service, port int32) (via, unknown string) {
	if port != 80 {
		return "", ""
	}
	for _, sp := range svc.Spec.Ports {
		if sp.Port == port && PortProtocol(sp) != ProtocolHTTP {
			return "", ""
		}
	}
	host := ServiceHost(svc.Name, svc.Namespace)
	var vs *networkingv1.VirtualService
	for _, cand := range c.sidecarVirtualServices(caller, sc) {
		// A VirtualService none of whose routes istiod keeps for the
		// caller on the port (each names another port or source) gives no
		// virtual host (buildSidecarVirtualHostsForVirtualService returns
		// nothing for it when BuildHTTPRoutesForVirtualService has none).
		if len(RoutesFor(cand, caller, port, ProtocolHTTP)) == 0 {
			continue
		}
		for _, h := range cand.Spec.GetHosts() {
			if HostCovers(h, cand.Namespace, host) {
				vs = cand
			}
		}
	}
	if vs == nil {
		return "", ""
	}
	listener := c.httpListenerOn(caller, sc, port)
	switch {
	case listener == "" && !c.AllServices:
		return "", fmt.Sprintf("on port 80 istiod routes VirtualService %s/%s's host %s for the caller if it has an HTTP listener on port 80 (a Service its Sidecar selects with that port), and not every Service was read", vs.Namespace, vs.Name, host)
	case listener == "":
		return "", ""
	}
	return fmt.Sprintf("port 80: the caller's HTTP listener for %s routes VirtualService %s/%s's host %s too", listener, vs.Namespace, vs.Name, host), ""
}

// httpListenerOn names a Service (or ServiceEntry host) the caller's
// egress hosts select that has an HTTP (or sniffed) port number port:
// the caller then has an HTTP listener there. "" for none.
func (c *Config) httpListenerOn(caller Caller, sc *networkingv1.Sidecar, port int32) string {
	hosts, scoped := egressHosts(sc, port)
	selects := func(ns, host string) bool {
		if !scoped {
			return true
		}
		for _, h := range hosts {
			if egressSelects(h, caller.Namespace, ns, host) {
				return true
			}
		}
		return false
	}
	for _, name := range sortedServiceHosts(c.Services) {
		sd := c.Services[name]
		if sd.Service == nil || ExternalNameOf(sd.Service) != "" || !ExportedTo(c.ServiceExportTo(sd.Service), sd.Service.Namespace, caller.Namespace) ||
			!selects(sd.Service.Namespace, name) {
			continue
		}
		for _, sp := range sd.Service.Spec.Ports {
			if sp.Port == port && PortProtocol(sp) == ProtocolHTTP {
				return name
			}
		}
	}
	for _, se := range c.ServiceEntries {
		if !c.ServiceEntryExportedTo(se, caller.Namespace) {
			continue
		}
		for _, p := range se.Spec.GetPorts() {
			proto := strings.ToLower(p.GetProtocol())
			if int32(p.GetNumber()) != port || !(proto == "http" || proto == "http2" || proto == "grpc" || proto == "") {
				continue
			}
			for _, h := range se.Spec.GetHosts() {
				if selects(se.Namespace, h) {
					return h
				}
			}
		}
	}
	return ""
}

// aliasKept reports whether the caller's Sidecar keeps the alias
// aliasHost on the virtual host of its concrete Service svc on port
// (matchingAliasService): the egress hosts that import svc (those of svc's
// namespace that match it, else the "*/" ones) must match the alias's name
// too. Without a Sidecar every alias is kept.
func (c *Config) aliasKept(caller Caller, svc *corev1.Service, aliasHost string, port int32) bool {
	sc, _ := c.SidecarFor(caller)
	hosts, scoped := egressHosts(sc, port)
	if !scoped {
		return true
	}
	host := ServiceHost(svc.Name, svc.Namespace)
	var own, any []string
	for _, entry := range hosts {
		ns, dns, ok := strings.Cut(entry, "/")
		if !ok {
			ns, dns = "*", entry
		}
		if ns == "." {
			ns = caller.Namespace
		}
		switch ns {
		case svc.Namespace:
			own = append(own, dns)
		case "*":
			any = append(any, dns)
		}
	}
	matches := func(dnss []string, h string) bool {
		for _, dns := range dnss {
			if egressSelects("*/"+dns, caller.Namespace, svc.Namespace, h) {
				return true
			}
		}
		return false
	}
	if matches(own, host) {
		return matches(own, aliasHost)
	}
	return matches(any, aliasHost)
}

// egressSelectsHost reports whether the caller's Sidecar egress hosts for
// port select host of namespace ns (true without a Sidecar).
func (c *Config) egressSelectsHost(caller Caller, ns, host string, port int32) bool {
	sc, _ := c.SidecarFor(caller)
	hosts, scoped := egressHosts(sc, port)
	if !scoped {
		return true
	}
	for _, h := range hosts {
		if egressSelects(h, caller.Namespace, ns, host) {
			return true
		}
	}
	return false
}

func sortedServiceHosts(m map[string]*ServiceData) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func describeExportTo(exportTo []string, ns string) string {
	var out []string
	for _, e := range exportTo {
		switch e {
		case ".":
			out = append(out, "its own namespace "+ns)
		case "~":
			out = append(out, "no namespace")
		default:
			out = append(out, e)
		}
	}
	return strings.Join(out, ", ")
}

// ServiceEntryDeclares reports whether the ServiceEntry declares host: one of its
// hosts equal or a matching wildcard ("*.example.com" covers
// "api.example.com", not "example.com"), or for an IP one of its addresses.
func ServiceEntryDeclares(se *networkingv1.ServiceEntry, host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		for _, a := range se.Spec.GetAddresses() {
			if p, err := netip.ParsePrefix(a); err == nil && p.Contains(ip) {
				return true
			}
			if ai, err := netip.ParseAddr(a); err == nil && ai == ip {
				return true
			}
		}
	}
	for _, h := range se.Spec.GetHosts() {
		switch {
		case strings.EqualFold(h, host), h == "*":
			return true
		case strings.HasPrefix(h, "*.") && len(host) > len(h)-1 && strings.HasSuffix(strings.ToLower(host), strings.ToLower(h[1:])):
			return true
		}
	}
	return false
}

// ServiceEntryExportedTo applies a ServiceEntry's exportTo, defaulting to
// the mesh's defaultServiceExportTo.
func (c *Config) ServiceEntryExportedTo(se *networkingv1.ServiceEntry, ns string) bool {
	return ExportedTo(exportToOrDefault(se.Spec.GetExportTo(), c.Mesh.Raw.GetDefaultServiceExportTo()), se.Namespace, ns)
}
