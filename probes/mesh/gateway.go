package mesh

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"istio.io/api/label"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// An Istio gateway is an Envoy that pilot-agent runs as a router (`proxy
// router`): istio-ingressgateway and egress gateways installed by Helm or
// the operator, and the Deployments Istio creates for a Gateway API
// Gateway. istiod configures it from the Gateway resources whose selector
// matches its pod and from the VirtualServices bound to those Gateways,
// not from the mesh's sidecar view: a VirtualService without `gateways`
// binds sidecars only, Sidecar resources do not apply, and a request whose
// Host no virtual host matches gets 404 NR. Everything here follows
// istiod's pilot/pkg/model (mergeGateways, VirtualServicesForGateway,
// resolveGatewayName) and pilot/pkg/networking/core/gateway.go
// (buildGatewayHTTPRouteConfig).

// Data-plane labels istio.io/api has no constant for.
const (
	// LabelIstioGatewayName marks the Deployment Istio created for a Gateway
	// API Gateway before gateway.networking.k8s.io/gateway-name was used.
	LabelIstioGatewayName = "istio.io/gateway-name"
	// GatewayManagedWaypoint is gateway.istio.io/managed on waypoints: an
	// Envoy of the ambient data plane, not an ingress or egress gateway.
	GatewayManagedWaypoint = "istio.io-mesh-controller"
	// MeshGateway is the `gateways` entry that binds a VirtualService to
	// sidecars.
	MeshGateway = "mesh"
)

// Proxy types pilot-agent runs (`pilot-agent proxy TYPE`).
const (
	ProxyTypeSidecar  = "sidecar"
	ProxyTypeRouter   = "router"
	ProxyTypeWaypoint = "waypoint"
)

// ProxyType is the TYPE of the pod's `pilot-agent proxy TYPE`, as its
// istio-proxy container's arguments say; "" when it has none or no
// istio-proxy.
func ProxyType(pod *corev1.Pod) string {
	c, ok := ProxyContainerSpec(pod)
	if !ok {
		return ""
	}
	args := append(append([]string(nil), c.Command...), c.Args...)
	for i, a := range args {
		if a == "proxy" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// GatewayPod reports whether pod is an Istio gateway, and on what
// evidence: its istio-proxy runs `proxy router`; or, when the container
// carries no arguments (a hand-written manifest), it has the labels of a
// Gateway API Gateway's Deployment (not a waypoint's), or the istio label
// of istio-ingressgateway and istio-egressgateway.
func GatewayPod(pod *corev1.Pod) (bool, string) {
	if pod == nil {
		return false, ""
	}
	switch ProxyType(pod) {
	case ProxyTypeRouter:
		return true, "its " + ProxyContainer + " runs `proxy router`"
	case "":
	default:
		return false, ""
	}
	if _, ok := ProxyContainerSpec(pod); !ok {
		return false, ""
	}
	l := pod.Labels
	if name := GatewayAPIName(pod); name != "" && l[label.GatewayManaged.Name] != GatewayManagedWaypoint {
		return true, "it is the Deployment of Gateway API Gateway " + name
	}
	if v := l["istio"]; v == "ingressgateway" || v == "egressgateway" {
		return true, "label istio=" + v
	}
	return false, ""
}

// GatewayAPIName is the Gateway API Gateway whose Deployment pod belongs
// to, "" for none.
func GatewayAPIName(pod *corev1.Pod) string {
	if n := pod.Labels[label.IoK8sNetworkingGatewayGatewayName.Name]; n != "" {
		return n
	}
	return pod.Labels[LabelIstioGatewayName]
}

// GatewaySelects reports whether gw selects the caller's pod: a Gateway
// without selector applies to every gateway workload, one with a selector
// to the pods carrying all its labels (in any namespace: istiod does not
// scope Gateways to their namespace unless PILOT_SCOPE_GATEWAY_TO_NAMESPACE
// is set).
func GatewaySelects(gw *networkingv1.Gateway, caller Caller) (bool, string) {
	sel := gw.Spec.GetSelector()
	if len(sel) == 0 {
		return true, "selects every gateway workload (no selector)"
	}
	s := labels.SelectorFromSet(sel).String()
	if LabelsMatch(sel, caller.Labels) {
		return true, "selector " + s + " matches the caller"
	}
	return false, "selector " + s + " does not match the caller's labels"
}

// ResolveGatewayName is istiod's resolveGatewayName: a `gateways` entry of
// a rule in namespace ns as namespace/name. A short name is a Gateway of
// the rule's own namespace; "./name" too; the legacy
// name.namespace.svc.cluster.local form names namespace/name.
func ResolveGatewayName(gw, ns string) string {
	if gw == MeshGateway {
		return gw
	}
	if before, after, ok := strings.Cut(gw, "/"); ok {
		if before == "." {
			return ns + "/" + after
		}
		return gw
	}
	name, rest, ok := strings.Cut(gw, ".")
	if !ok {
		return ns + "/" + gw
	}
	gwNS, _, _ := strings.Cut(rest, ".")
	return gwNS + "/" + name
}

// GatewayServer is one server of a Gateway that selects the caller, as
// istiod merges the servers of every such Gateway into the gateway's
// listeners.
type GatewayServer struct {
	Gateway  string // namespace/name
	Index    int    // in the Gateway's servers
	PortName string
	// Port is the Gateway's port number; ListenerPort is what Envoy listens
	// on: the targetPort of the gateway Service port that Port names, else
	// Port itself.
	Port, ListenerPort int32
	Protocol           string // upper case: HTTP, HTTPS, HTTP2, GRPC, TLS, TCP
	TLSMode            string // "" without tls
	// Credential is the SDS resource the server's TLS names
	// (credentials.ToResourceName: credentialName NAME is
	// kubernetes://NAME, which istiod looks up in the gateway pod's
	// namespace); "" without credentialName.
	Credential string
	// Hosts as istiod reads them: "./h" is the Gateway's namespace, "*/h"
	// is h.
	Hosts []string
	// RouteName is the RDS name Envoy asks for: http.LISTENERPORT for
	// plain HTTP, https.PORT.PORTNAME.GATEWAY.NAMESPACE for HTTPS that the
	// gateway terminates; "" for TCP, TLS and passthrough servers.
	RouteName string
	// Rejected says why istiod drops the server (a port conflict, a TLS
	// host another server already has); "" when it is served.
	Rejected string
	// Unreachable says why no request reaches the listener istiod builds
	// for it (IST0162): no port of the Services that select the gateway
	// pod is its port or leads to it; "" when one does, or no Service was
	// read.
	Unreachable string
}

// credentialResource is the SDS name istiod gives a credentialName
// (pilot/pkg/model/credentials.ToResourceName): a typed name as written
// (kubernetes://, kubernetes-gateway://, configmap://), builtin:// the
// proxy's own certificate, anything else kubernetes://NAME.
func credentialResource(name string) string {
	switch {
	case name == "":
		return ""
	case strings.HasPrefix(name, "builtin://"):
		return "default"
	case strings.HasPrefix(name, "invalid://"):
		return "invalid://"
	case strings.HasPrefix(name, "kubernetes://"), strings.HasPrefix(name, "kubernetes-gateway://"), strings.HasPrefix(name, "configmap://"):
		return name
	}
	return "kubernetes://" + name
}

// Ref names the server: namespace/name servers[i] port P.
func (s GatewayServer) Ref() string {
	return fmt.Sprintf("%s servers[%d] (port %d %s)", s.Gateway, s.Index, s.Port, s.Protocol)
}

// HTTP reports whether the gateway serves HTTP routes on it (plain HTTP,
// or HTTPS it terminates).
func (s GatewayServer) HTTP() bool { return s.RouteName != "" }

// GatewayVirtualHost is one virtual host of a gateway route configuration:
// the request host it matches and the routes of the VirtualServices bound
// for it, in istiod's order.
type GatewayVirtualHost struct {
	RouteName string
	// Port is the Gateway port the routes were built for.
	Port   int32
	Domain string
	// VirtualServices are namespace/name, in the order their routes come.
	VirtualServices []string
	Routes          []Route
}

// Reasons a VirtualService does or does not route a gateway's requests.
const (
	GatewayBound          = "bound"
	GatewayMeshOnly       = "mesh-only"             // no gateways, or only "mesh": sidecars only
	GatewayMissing        = "gateway-missing"       // names a Gateway that does not exist
	GatewayNotSelecting   = "gateway-not-selecting" // names Gateways that exist and select other pods
	GatewayUnread         = "gateway-unread"        // names a Gateway of a namespace whose Gateways were not read
	GatewayNotExported    = "not-exported"          // exportTo hides it from the gateway's namespace
	GatewayHostMismatch   = "host-mismatch"         // none of its hosts is a host of the bound servers (for its namespace)
	GatewayNoRouteOnPort  = "no-route-on-port"      // its routes to the target match other ports
	GatewayShadowedByHost = "shadowed"              // an earlier catch-all route for the same host takes every request
)

// GatewayVSVerdict is a VirtualService judged for the gateway.
type GatewayVSVerdict struct {
	RuleVerdict
	Reason string
	// RoutesTarget: a route of it sends requests to the target host and
	// port.
	RoutesTarget bool
	// Gateways are its `gateways` entries resolved (namespace/name).
	Gateways []string
	// Hosts are the request hosts it is bound for on the gateway.
	Hosts []string
}

// GatewayBinding is how a gateway routes requests to a Service port: the
// Gateways that select it, their servers, the VirtualServices bound to
// them and the virtual hosts istiod builds from those.
type GatewayBinding struct {
	// Gateways are every Gateway read, selecting the caller or not.
	Gateways []RuleVerdict
	// Servers are the selecting Gateways' servers, in istiod's merge order.
	Servers []GatewayServer
	// VirtualServices are the VirtualServices that route to the target or
	// are bound to a selecting Gateway for a host that routes there.
	VirtualServices []GatewayVSVerdict
	// VirtualHosts are the virtual hosts of every HTTP route name, those
	// that route to the target first.
	VirtualHosts []GatewayVirtualHost
	// Hosts are the request hosts (host:port, the Gateway port) whose
	// routes send requests to the target.
	Hosts []string
	// ListenerPortsUnknown: no Service selecting the gateway pod was read,
	// so Gateway ports are taken as listener ports (as istiod does when
	// none names them).
	ListenerPortsUnknown bool
	// GatewayAPI names the Gateway API Gateway whose Deployment the caller
	// is ("" for none): istiod configures it from that Gateway's listeners
	// and the routes attached to them, which the binding above holds as
	// the Istio Gateways and VirtualServices istiod converts them into.
	GatewayAPI string
	// API is the Gateway API's side of the binding: the caller's Gateway,
	// its listeners and the routes that concern the target (nil when the
	// Gateway API objects were not read).
	API *GatewayAPIBinding
}

// Selecting are the Gateways that select the caller, namespace/name.
func (b *GatewayBinding) Selecting() []string {
	var out []string
	for _, g := range b.Gateways {
		if g.Applies {
			out = append(out, g.Ref())
		}
	}
	return out
}

// VSRefs are the verdicts' references with reason among reasons whose
// routes reach the target.
func (b *GatewayBinding) VSRefs(reasons ...string) []string {
	out := []string{}
	for _, v := range b.VirtualServices {
		if v.RoutesTarget && contains(reasons, v.Reason) {
			out = append(out, v.Ref())
		}
	}
	return out
}

// gatewayView fills v, a view for a gateway caller: the Service is
// visible when it is exported to the gateway's namespace (no Sidecar
// resource scopes a gateway); the routes are those of the virtual hosts
// that send requests to host:port; the Service's default cluster is
// listed whether or not a route reaches it, as istiod gives a gateway
// every cluster it can see.
func (c *Config) gatewayView(v *View, sd *ServiceData) {
	caller, host, port := v.Caller, v.Host, v.Port
	v.Visibility = Visibility{Visible: true, PolicyFrom: "not applied to gateways"}
	if exportTo := c.ServiceExportTo(sd.Service); !ExportedTo(exportTo, sd.Service.Namespace, caller.Namespace) {
		v.Visibility.Visible = false
		v.Visibility.HiddenBy = fmt.Sprintf("Service %s/%s is exported to %s only (exportTo %s), not to the gateway's namespace %s",
			sd.Service.Namespace, sd.Service.Name, describeExportTo(exportTo, sd.Service.Namespace), strings.Join(exportTo, ","), caller.Namespace)
	}
	rule, drVerdicts, unknown := c.DestinationRuleFor(caller, host, sd.Service.Namespace)
	v.Rule, v.DestinationRules = rule, drVerdicts
	v.Unknown = append(v.Unknown, unknown...)
	b, routes, unmatched, unknown := c.GatewayBindingFor(caller, host, port)
	v.Gateway = b
	v.Unknown = append(v.Unknown, unknown...)
	v.Routes, v.Unmatched = routes, unmatched
	for _, vv := range b.VirtualServices {
		v.VirtualServices = append(v.VirtualServices, vv.RuleVerdict)
		if v.VirtualService == nil && vv.Applies && vv.RoutesTarget {
			v.VirtualService = c.virtualService(vv.Namespace, vv.Name)
		}
	}
	for _, r := range v.Routes {
		for _, d := range r.Destinations {
			v.addCluster(c, caller, d, false)
		}
		for _, d := range r.Mirrors {
			v.addCluster(c, caller, d, true)
		}
	}
	main := ClusterName(port, "", host)
	if _, ok := v.Clusters[main]; !ok {
		v.addCluster(c, caller, Destination{Host: host, Port: port, Cluster: main}, false)
		// Not a route destination: no request goes there through this
		// gateway, yet istiod builds it.
		v.Clusters[main].Mirror = false
	}
}

func (c *Config) virtualService(ns, name string) *networkingv1.VirtualService {
	for _, vs := range c.VirtualServices {
		if vs.Namespace == ns && vs.Name == name {
			return vs
		}
	}
	return nil
}

// GatewayBindingFor works out how the gateway caller routes requests to
// host:port: the Gateways selecting it and their servers, every
// VirtualService that routes to host or is bound to those Gateways, the
// virtual hosts istiod builds, and the routes of those that send requests
// to host:port. unmatched: a virtual host that reaches the target has no
// catch-all route, so its requests that match no route get 404 NR.
func (c *Config) GatewayBindingFor(caller Caller, host string, port int32) (b *GatewayBinding, routes []Route, unmatched bool, unknown []string) {
	b = &GatewayBinding{GatewayAPI: caller.Labels[label.IoK8sNetworkingGatewayGatewayName.Name]}
	if b.GatewayAPI == "" {
		b.GatewayAPI = caller.Labels[LabelIstioGatewayName]
	}
	gateways, derivedUnknown := c.allGateways()
	unknown = append(unknown, derivedUnknown...)
	sortByAge(gateways)
	var selecting []*networkingv1.Gateway
	for _, gw := range gateways {
		ok, why := c.gatewaySelects(gw, caller)
		if ok {
			selecting = append(selecting, gw)
		}
		b.Gateways = append(b.Gateways, RuleVerdict{Kind: "Gateway", Namespace: gw.Namespace, Name: gw.Name,
			Host: strings.Join(gatewayHosts(gw), ","), Applies: ok, Why: why})
	}
	selecting = strictGatewayMerging(selecting, b.Gateways)
	var serverUnknown []string
	b.Servers, b.ListenerPortsUnknown, serverUnknown = c.gatewayServers(caller, selecting)
	unknown = append(unknown, serverUnknown...)
	b.API, unknown = c.gatewayAPIBinding(caller, host, port, unknown)

	// Virtual hosts, route name by route name, as buildGatewayHTTPRouteConfig
	// builds them.
	type vhostKey struct{ route, host string }
	vhosts := map[vhostKey]*GatewayVirtualHost{}
	var order []vhostKey
	bound := map[string]*GatewayVSVerdict{} // VS ref -> verdict of a VS bound somewhere
	vsHosts := map[string][]string{}
	routeNames := []string{}
	for _, s := range b.Servers {
		if s.Rejected != "" || !s.HTTP() {
			continue
		}
		if !contains(routeNames, s.RouteName) {
			routeNames = append(routeNames, s.RouteName)
		}
		for _, vs := range c.gatewayVirtualServices(caller.Namespace, s.Gateway) {
			hosts := intersectHosts(serverHostsFor(s.Hosts, vs.Namespace), resolvedHosts(vs))
			if len(hosts) == 0 {
				continue
			}
			ref := vs.Namespace + "/" + vs.Name
			rs := c.gatewayRoutes(vs, s, caller)
			for _, h := range hosts {
				k := vhostKey{s.RouteName, strings.ToLower(h)}
				vh := vhosts[k]
				if vh == nil {
					vh = &GatewayVirtualHost{RouteName: s.RouteName, Port: s.Port, Domain: k.host}
					vhosts[k] = vh
					order = append(order, k)
				}
				if !contains(vh.VirtualServices, ref) {
					vh.VirtualServices = append(vh.VirtualServices, ref)
					vh.Routes = append(vh.Routes, rs...)
				}
				hp := fmt.Sprintf("%s:%d", k.host, s.Port)
				if !contains(vsHosts[ref], hp) {
					vsHosts[ref] = append(vsHosts[ref], hp)
				}
			}
			if bound[ref] == nil {
				bound[ref] = &GatewayVSVerdict{}
			}
		}
	}
	for _, rn := range routeNames {
		found := false
		for _, k := range order {
			found = found || k.route == rn
		}
		if !found {
			// istiod's default: a virtual host for every domain and no
			// route, so every request on the port gets 404 NR.
			port := int32(0)
			for _, s := range b.Servers {
				if s.RouteName == rn && port == 0 {
					port = s.Port
				}
			}
			k := vhostKey{rn, "*"}
			vhosts[k] = &GatewayVirtualHost{RouteName: rn, Port: port, Domain: "* (blackhole: no VirtualService bound, every request gets 404 NR)"}
			order = append(order, k)
		}
	}

	// Routes: catch-all routes go last (istio_route.SortVHostRoutes); only
	// the first catch-all is ever reached.
	seen := map[string]int{}
	reaching := map[string]bool{}     // VS refs with a reachable route to the target
	shadowedBy := map[string]string{} // VS ref -> VS whose catch-all shadows its target route
	reachingHost := map[string]bool{} // host:port
	for _, k := range order {
		vh := vhosts[k]
		vh.Routes = sortVHostRoutes(vh.Routes)
		catchAll := ""
		toTarget := false
		for _, r := range vh.Routes {
			if catchAll != "" {
				if routeReaches(r, host, port) && catchAll != r.VirtualService {
					shadowedBy[r.VirtualService] = catchAll
				}
				continue
			}
			if r.CatchAll {
				catchAll = r.VirtualService
			}
			if !routeReaches(r, host, port) {
				continue
			}
			toTarget = true
			reaching[r.VirtualService] = true
			key := r.VirtualService + " " + r.Name
			if i, ok := seen[key]; ok {
				routes[i].Name = addHostToRouteName(routes[i].Name, k.host)
				continue
			}
			seen[key] = len(routes)
			r.Name = addHostToRouteName(r.Name, k.host)
			routes = append(routes, r)
		}
		if toTarget {
			reachingHost[fmt.Sprintf("%s:%d", k.host, vh.Port)] = true
			if catchAll == "" {
				unmatched = true
			}
		}
	}
	for h := range reachingHost {
		b.Hosts = append(b.Hosts, h)
	}
	sort.Strings(b.Hosts)
	sort.SliceStable(order, func(i, j int) bool {
		return vhostReaches(vhosts[order[i]], host, port) && !vhostReaches(vhosts[order[j]], host, port)
	})
	for _, k := range order {
		b.VirtualHosts = append(b.VirtualHosts, *vhosts[k])
	}

	// Verdicts: every VirtualService that routes to the target, and every
	// one bound for a host whose virtual host reaches it.
	selectingRefs := map[string]*networkingv1.Gateway{}
	for _, gw := range selecting {
		selectingRefs[gw.Namespace+"/"+gw.Name] = gw
	}
	for _, vs := range c.VirtualServices {
		ref := vs.Namespace + "/" + vs.Name
		toTarget := vsRoutesTo(vs, host, port, c)
		sharesHost := false
		for _, hp := range vsHosts[ref] {
			sharesHost = sharesHost || reachingHost[hp]
		}
		if !toTarget && !sharesHost {
			continue
		}
		v := GatewayVSVerdict{RuleVerdict: RuleVerdict{Kind: "VirtualService", Namespace: vs.Namespace, Name: vs.Name,
			Host: strings.Join(vs.Spec.GetHosts(), ",")}, RoutesTarget: toTarget, Hosts: vsHosts[ref]}
		for _, g := range vs.Spec.GetGateways() {
			v.Gateways = append(v.Gateways, ResolveGatewayName(g, vs.Namespace))
		}
		v.Reason, v.Why = c.judgeGatewayVS(vs, v.Gateways, selectingRefs, caller, b, bound[ref] != nil, toTarget, reaching[ref], shadowedBy[ref])
		v.Applies = v.Reason == GatewayBound
		b.VirtualServices = append(b.VirtualServices, v)
	}
	sort.SliceStable(b.VirtualServices, func(i, j int) bool {
		a, z := b.VirtualServices[i], b.VirtualServices[j]
		if a.RoutesTarget != z.RoutesTarget {
			return a.RoutesTarget
		}
		if a.Applies != z.Applies {
			return a.Applies
		}
		return a.Ref() < z.Ref()
	})
	return b, routes, unmatched, unknown
}

// judgeGatewayVS says why a VirtualService does or does not route the
// gateway's requests.
func (c *Config) judgeGatewayVS(vs *networkingv1.VirtualService, gateways []string, selecting map[string]*networkingv1.Gateway, caller Caller, b *GatewayBinding, bound, toTarget, reaches bool, shadowedBy string) (string, string) {
	selectingList := strings.Join(sortedKeysOfMap(selecting), ", ")
	if selectingList == "" {
		selectingList = "none"
	}
	var named []string
	for _, g := range gateways {
		if g != MeshGateway {
			named = append(named, g)
		}
	}
	if len(named) == 0 {
		why := "binds sidecars only (no gateways)"
		if len(gateways) > 0 {
			why = "binds sidecars only (gateways: mesh)"
		}
		return GatewayMeshOnly, why + ": the gateway never gets its routes; add the Gateway that selects it (" + selectingList + ") to gateways"
	}
	var bindsSelecting bool
	var reasons []string
	reason := ""
	for _, g := range named {
		if selecting[g] != nil {
			bindsSelecting = true
			continue
		}
		ns, name, _ := strings.Cut(g, "/")
		if gw := c.gateway(ns, name); gw != nil {
			_, why := GatewaySelects(gw, caller)
			reasons = append(reasons, "names Gateway "+g+", whose "+why)
			if reason == "" {
				reason = GatewayNotSelecting
			}
			continue
		}
		if !c.gatewaysRead(ns) {
			reasons = append(reasons, "names Gateway "+g+" in namespace "+ns+", whose Gateways were not read")
			if reason == "" || reason == GatewayNotSelecting {
				reason = GatewayUnread
			}
			continue
		}
		why := "names Gateway " + g + ", which does not exist"
		if c.APIGateway(ns, name) != nil {
			why = "names Gateway " + g + ", which is a Gateway API Gateway, not an Istio one: a VirtualService binds nothing to it (istiod gives that Gateway's pods its listeners and HTTPRoutes only); route it with an HTTPRoute"
		}
		if alt := c.gatewaysNamed(name); len(alt) > 0 {
			why += " (a Gateway " + name + " exists in " + strings.Join(alt, ", ") + ": a short name is read in the VirtualService's own namespace " + vs.Namespace + ")"
		}
		reasons = append(reasons, why)
		reason = GatewayMissing
	}
	if !bindsSelecting {
		return reason, strings.Join(reasons, "; ") + "; the Gateways that select the caller are " + selectingList
	}
	if _, visible := c.vsTier(vs, caller.Namespace); !visible {
		return GatewayNotExported, fmt.Sprintf("not exported to the gateway's namespace %s (exportTo %s)", caller.Namespace, strings.Join(c.vsExportTo(vs), ","))
	}
	if !bound {
		var serverHosts []string
		for _, s := range b.Servers {
			if s.Rejected == "" && s.HTTP() && contains(named, s.Gateway) {
				for _, h := range s.Hosts {
					if !contains(serverHosts, h) {
						serverHosts = append(serverHosts, h)
					}
				}
			}
		}
		why := fmt.Sprintf("none of its hosts (%s) is a host of the HTTP servers of %s (%s) for namespace %s",
			strings.Join(resolvedHosts(vs), ", "), strings.Join(named, ", "), strings.Join(serverHosts, ", "), vs.Namespace)
		if len(serverHosts) == 0 {
			why = "the Gateways it names have no HTTP server the gateway serves (" + strings.Join(rejectedWhy(b, named), "; ") + ")"
		}
		for _, h := range vs.Spec.GetHosts() {
			if !strings.Contains(h, ".") && h != "*" {
				why += fmt.Sprintf("; host %q is a short name, which Istio completes to %s: a client's Host header is the external name", h, ResolveHost(h, vs.Namespace))
			}
		}
		return GatewayHostMismatch, why
	}
	switch {
	case reaches || !toTarget:
		return GatewayBound, "applies"
	case shadowedBy != "":
		return GatewayShadowedByHost, "its routes to the target come after a catch-all route of " + shadowedBy + " for the same host: they are never reached"
	}
	return GatewayNoRouteOnPort, "bound, but its routes to the target do not apply on the ports it is bound on (a match port, or a destination port other than the target's)"
}

func rejectedWhy(b *GatewayBinding, gateways []string) []string {
	var out []string
	for _, s := range b.Servers {
		if contains(gateways, s.Gateway) {
			switch {
			case s.Rejected != "":
				out = append(out, s.Ref()+" rejected: "+s.Rejected)
			case !s.HTTP():
				out = append(out, s.Ref()+" is not HTTP")
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "no server")
	}
	return out
}

func (c *Config) gateway(ns, name string) *networkingv1.Gateway {
	for _, gw := range c.Gateways {
		if gw.Namespace == ns && gw.Name == name {
			return gw
		}
	}
	return nil
}

// gatewaysNamed are the namespaces of the Gateways called name.
func (c *Config) gatewaysNamed(name string) []string {
	var out []string
	for _, gw := range c.Gateways {
		if gw.Name == name && !contains(out, gw.Namespace) {
			out = append(out, gw.Namespace)
		}
	}
	sort.Strings(out)
	return out
}

// gatewaysRead reports whether the Gateways of ns were read.
func (c *Config) gatewaysRead(ns string) bool {
	return c.GatewayNamespaces == nil || c.GatewayNamespaces[ns]
}

// gatewayServers merges the servers of the selecting Gateways (oldest
// first) as mergeGateways does: each Gateway port resolved to the port
// the gateway listens on, a plain-text port shared only by HTTP servers, a
// TLS host served once per port.
func (c *Config) gatewayServers(caller Caller, selecting []*networkingv1.Gateway) ([]GatewayServer, bool, []string) {
	var unknown []string
	var services []*corev1.Service
	for _, host := range sortedKeysOfMap(c.Services) {
		sd := c.Services[host]
		if sd.Service != nil && sd.Service.Namespace == caller.Namespace && len(sd.Service.Spec.Selector) > 0 && LabelsMatch(sd.Service.Spec.Selector, caller.Labels) {
			services = append(services, sd.Service)
		}
	}
	portsUnknown := len(services) == 0 && len(selecting) > 0
	for _, gw := range selecting {
		if gw.Annotations[AnnotationGatewayService] != "" {
			// A Gateway API Gateway's listeners resolve through its own
			// Services, which selected the caller.
			portsUnknown = len(services) == 0 && portsUnknown
		}
	}
	type portState struct {
		plaintext *GatewayServer
		tls       bool
		tlsHosts  map[string]bool
	}
	ports := map[int32]*portState{}
	var out []GatewayServer
	routeNames := map[string]bool{}
	for _, gw := range selecting {
		ref := gw.Namespace + "/" + gw.Name
		for i, s := range gw.Spec.GetServers() {
			p := s.GetPort()
			if p == nil {
				continue
			}
			gs := GatewayServer{Gateway: ref, Index: i, PortName: p.GetName(), Port: int32(p.GetNumber()),
				Protocol: strings.ToUpper(p.GetProtocol()), Hosts: sanitizeServerHosts(s.GetHosts(), gw.Namespace)}
			if s.GetTls() != nil {
				gs.TLSMode = s.GetTls().GetMode().String()
				gs.Credential = credentialResource(s.GetTls().GetCredentialName())
			}
			var why string
			if gw.Annotations[AnnotationGatewayService] != "" {
				gs.ListenerPort, gs.Rejected = c.apiListenerPort(gs.Port, gw, caller)
			} else {
				gs.ListenerPort, why = listenerPort(gs.Port, services, caller)
			}
			if why != "" {
				unknown = append(unknown, ref+": "+why)
			} else if gw.Annotations[AnnotationGatewayService] == "" {
				gs.Unreachable = unreachableListener(gs, services)
			}
			gs.RouteName = gatewayRouteName(gs, gw)
			if gs.Rejected != "" {
				out = append(out, gs)
				continue
			}
			st := ports[gs.ListenerPort]
			switch {
			case st == nil:
				st = &portState{tlsHosts: map[string]bool{}}
				ports[gs.ListenerPort] = st
				if s.GetTls() != nil && !protocolIsHTTP(gs.Protocol) {
					st.tls = true
					for _, h := range gs.Hosts {
						st.tlsHosts[h] = true
					}
				} else {
					cp := gs
					st.plaintext = &cp
				}
			case st.plaintext != nil:
				if !protocolIsHTTP(gs.Protocol) || !protocolIsHTTP(st.plaintext.Protocol) {
					gs.Rejected = fmt.Sprintf("port %d is already %s for %s: only HTTP servers share a plain-text port", gs.ListenerPort, st.plaintext.Protocol, st.plaintext.Ref())
				}
			default: // a TLS port: servers are told apart by SNI
				switch {
				case s.GetTls() == nil:
					gs.Rejected = fmt.Sprintf("port %d serves TLS for another server: a server without tls cannot share it", gs.ListenerPort)
				case gs.RouteName != "" && routeNames[gs.RouteName]:
					gs.Rejected = "another HTTPS server has the same port name (route " + gs.RouteName + ")"
				default:
					for _, h := range gs.Hosts {
						if st.tlsHosts[h] {
							gs.Rejected = fmt.Sprintf("host %s is already served with TLS on port %d by an older server", h, gs.ListenerPort)
						}
					}
					if gs.Rejected == "" {
						for _, h := range gs.Hosts {
							st.tlsHosts[h] = true
						}
					}
				}
			}
			if gs.Rejected == "" && gs.RouteName != "" {
				routeNames[gs.RouteName] = true
			}
			out = append(out, gs)
		}
	}
	return out, portsUnknown, unknown
}

// listenerPort resolves a Gateway port as istiod does for a Gateway that
// selects pods by label: the targetPort of the first Service port of that
// number among the Services selecting the gateway pod (a named one
// resolved on the pod's container ports), else the port as written.
func listenerPort(port int32, services []*corev1.Service, caller Caller) (int32, string) {
	for _, svc := range services {
		for _, sp := range svc.Spec.Ports {
			if sp.Port != port {
				continue
			}
			if _, optOut := svc.Labels[labelDisablePortTranslation]; optOut {
				continue
			}
			tp, why := targetPortOn(svc, sp, caller)
			if why != "" {
				return port, why + ": the listener port is taken as " + strconv.Itoa(int(port))
			}
			return tp, ""
		}
	}
	return port, ""
}

// unreachableListener is IngressGatewayPortAnalyzer's test (IST0162)
// for a label-selected Gateway's server: with Services selecting the
// gateway pod, one of their ports must be the server's port or target
// it; otherwise istiod builds a listener no request reaches.
func unreachableListener(s GatewayServer, services []*corev1.Service) string {
	if len(services) == 0 {
		return ""
	}
	var ports, names []string
	for _, svc := range services {
		names = append(names, svc.Namespace+"/"+svc.Name)
		for _, sp := range svc.Spec.Ports {
			if sp.Port == s.Port || sp.TargetPort.IntValue() == int(s.ListenerPort) || sp.TargetPort.IntValue() == 0 && sp.TargetPort.StrVal == "" && sp.Port == s.ListenerPort {
				return ""
			}
			ports = append(ports, fmt.Sprintf("%d→%s", sp.Port, sp.TargetPort.String()))
		}
	}
	return fmt.Sprintf("no port of the gateway's Service %s is %d or targets it (its ports: %s): the gateway listens on %d and no request reaches it (IST0162)",
		strings.Join(names, ", "), s.Port, strings.Join(ports, ", "), s.ListenerPort)
}

// labelDisablePortTranslation opts a Service out of a label-selected
// Gateway's port translation.
const labelDisablePortTranslation = "experimental.istio.io/disable-gateway-port-translation"

// targetPortOn is the port a Service port lands on in the caller's pod:
// its number, or its name among the pod's container ports (as istiod's
// ServiceTargets resolve it); why says why it is not known.
func targetPortOn(svc *corev1.Service, sp corev1.ServicePort, caller Caller) (int32, string) {
	tp := sp.TargetPort
	switch {
	case tp.IntValue() > 0:
		return int32(tp.IntValue()), ""
	case tp.StrVal != "":
		if p, ok := caller.Ports[tp.StrVal]; ok {
			return p, ""
		}
		if caller.Ports == nil {
			return 0, fmt.Sprintf("Service %s/%s port %d has the named targetPort %q and the gateway pod's ports are not known", svc.Namespace, svc.Name, sp.Port, tp.StrVal)
		}
		return 0, fmt.Sprintf("Service %s/%s port %d has the named targetPort %q, which no container port of the gateway pod is named", svc.Namespace, svc.Name, sp.Port, tp.StrVal)
	}
	return sp.Port, ""
}

// gatewayRouteName is istiod's gatewayRDSRouteName.
func gatewayRouteName(s GatewayServer, gw *networkingv1.Gateway) string {
	switch {
	case protocolIsHTTP(s.Protocol):
		return "http." + strconv.Itoa(int(s.ListenerPort))
	case s.Protocol == "HTTPS" && s.TLSMode != "" && s.TLSMode != networkingv1alpha3.ServerTLSSettings_PASSTHROUGH.String() &&
		s.TLSMode != networkingv1alpha3.ServerTLSSettings_AUTO_PASSTHROUGH.String():
		return fmt.Sprintf("https.%d.%s.%s.%s", s.Port, s.PortName, gw.Name, gw.Namespace)
	}
	return ""
}

// protocolIsHTTP is protocol.Instance.IsHTTP.
func protocolIsHTTP(p string) bool {
	switch strings.ToUpper(p) {
	case "HTTP", "HTTP2", "GRPC", "GRPC-WEB", "HTTP_PROXY":
		return true
	}
	return false
}

// sanitizeServerHosts is istiod's sanitizeServerHostNamespace: "./h" is
// the Gateway's namespace, "*/h" is h, and "*/*" makes the server "*".
func sanitizeServerHosts(hosts []string, ns string) []string {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		before, after, ok := strings.Cut(h, "/")
		switch {
		case !ok:
			out = append(out, h)
		case before == ".":
			out = append(out, ns+"/"+after)
		case before == "*" && after == "*":
			return []string{"*"}
		case before == "*":
			out = append(out, after)
		default:
			out = append(out, h)
		}
	}
	return out
}

// serverHostsFor is host.NamesForNamespace: the server hosts a
// VirtualService of ns may bind, without their namespace part.
func serverHostsFor(hosts []string, ns string) []string {
	var out []string
	for _, h := range hosts {
		before, after, ok := strings.Cut(h, "/")
		switch {
		case !ok:
			out = append(out, h)
		case before == "*" || before == ns:
			out = append(out, after)
		}
	}
	return out
}

// gatewayHosts are every server host of a Gateway, as written.
func gatewayHosts(gw *networkingv1.Gateway) []string {
	var out []string
	for _, s := range gw.Spec.GetServers() {
		for _, h := range s.GetHosts() {
			if !contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// resolvedHosts are a VirtualService's hosts with short names completed.
func resolvedHosts(vs *networkingv1.VirtualService) []string {
	var out []string
	for _, h := range vs.Spec.GetHosts() {
		out = append(out, ResolveHost(h, vs.Namespace))
	}
	return out
}

// hostSubsetOf is host.Name.SubsetOf: every name a matches, b matches.
func hostSubsetOf(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	switch {
	case b == "*", a == b:
		return true
	case strings.HasPrefix(b, "*"):
		return strings.HasSuffix(a, b[1:]) && (strings.HasPrefix(a, "*") || len(a) > len(b)-1)
	}
	return false
}

// intersectHosts is host.Names.Intersection: each pair of hosts that
// overlap contributes the narrower of the two.
func intersectHosts(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			var h string
			switch {
			case hostSubsetOf(x, y):
				h = x
			case hostSubsetOf(y, x):
				h = y
			default:
				continue
			}
			if !contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// gatewayVirtualServices are the VirtualServices bound to gateway (by a
// `gateways` entry or a route match's) that the gateway's namespace sees,
// in istiod's order: private to it, exported to it, public; oldest first.
func (c *Config) gatewayVirtualServices(ns, gateway string) []*networkingv1.VirtualService {
	type candidate struct {
		vs   *networkingv1.VirtualService
		tier int
	}
	var out []candidate
	all, _ := c.allVirtualServices()
	for _, vs := range all {
		if !contains(vsGatewayRefs(vs), gateway) {
			continue
		}
		if tier, visible := c.vsTier(vs, ns); visible {
			out = append(out, candidate{vs, tier})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].tier != out[j].tier {
			return out[i].tier < out[j].tier
		}
		// Among public ones, the gateway's own namespace's Gateway API
		// routes first (VirtualServicesForGateway: the consumer override).
		if a, b := gatewaySemantics(out[i].vs) && out[i].vs.Namespace == ns, gatewaySemantics(out[j].vs) && out[j].vs.Namespace == ns; a != b {
			return a
		}
		return olderRule(out[i].vs, out[j].vs)
	})
	list := make([]*networkingv1.VirtualService, len(out))
	for i, o := range out {
		list[i] = o.vs
	}
	return list
}

// vsGatewayRefs are the Gateways a VirtualService binds to: its gateways,
// and those its HTTP route matches name.
func vsGatewayRefs(vs *networkingv1.VirtualService) []string {
	var out []string
	add := func(g string) {
		if r := ResolveGatewayName(g, vs.Namespace); !contains(out, r) {
			out = append(out, r)
		}
	}
	for _, g := range vs.Spec.GetGateways() {
		add(g)
	}
	for _, h := range vs.Spec.GetHttp() {
		for _, m := range h.GetMatch() {
			for _, g := range m.GetGateways() {
				add(g)
			}
		}
	}
	return out
}

// gatewayRoutes are the HTTP routes of vs for server s: a route whose
// matches all name another port or other gateways is left out. A
// destination without a port takes the Service's only port, else the
// Gateway port (GetDestinationCluster).
func (c *Config) gatewayRoutes(vs *networkingv1.VirtualService, s GatewayServer, caller Caller) []Route {
	ref := vs.Namespace + "/" + vs.Name
	var out []Route
	for i, h := range vs.Spec.GetHttp() {
		var matches []*networkingv1alpha3.HTTPMatchRequest
		catchAll := len(h.GetMatch()) == 0
		for _, m := range h.GetMatch() {
			if !matchAppliesToGateway(m, vs.Namespace, s.Gateway, caller) {
				continue
			}
			matches = append(matches, m)
			catchAll = catchAll || isCatchAllMatch(m)
		}
		if len(h.GetMatch()) > 0 && len(matches) == 0 {
			continue
		}
		match, ok := httpMatch(matches, s.Port)
		if !ok {
			continue
		}
		r := Route{VirtualService: ref, Name: fmt.Sprintf("http[%d]%s", i, match), CatchAll: catchAll || match == ""}
		semanticRoute(vs, h, &r)
		for _, d := range destinations(h.GetRoute(), vs.Namespace, 0) {
			r.Destinations = append(r.Destinations, c.gatewayPort(d, s.Port))
		}
		if m := h.GetMirror(); m != nil {
			r.Mirrors = append(r.Mirrors, c.gatewayPort(destination(m, vs.Namespace, 0, 100), s.Port))
		}
		for _, m := range h.GetMirrors() {
			r.Mirrors = append(r.Mirrors, c.gatewayPort(destination(m.GetDestination(), vs.Namespace, 0, 100), s.Port))
		}
		out = append(out, r)
	}
	return out
}

// matchAppliesToGateway is sourceMatchHTTP for a gateway: a match naming
// gateways applies to those; one naming none applies when its source
// labels and namespace select the gateway pod.
func matchAppliesToGateway(m *networkingv1alpha3.HTTPMatchRequest, ns, gateway string, caller Caller) bool {
	if gws := m.GetGateways(); len(gws) > 0 {
		for _, g := range gws {
			if ResolveGatewayName(g, ns) == gateway {
				return true
			}
		}
		return false
	}
	if sl := m.GetSourceLabels(); len(sl) > 0 && !LabelsMatch(sl, caller.Labels) {
		return false
	}
	return m.GetSourceNamespace() == "" || m.GetSourceNamespace() == caller.Namespace
}

// isCatchAllMatch is istio_route's isCatchAllMatch: uri prefix "/" (or
// regex "*") and no other condition.
func isCatchAllMatch(m *networkingv1alpha3.HTTPMatchRequest) bool {
	u := m.GetUri()
	catchAll := u != nil && (u.GetPrefix() == "/" || u.GetRegex() == "*")
	return catchAll && len(m.GetHeaders()) == 0 && len(m.GetQueryParams()) == 0 && len(m.GetSourceLabels()) == 0 &&
		len(m.GetWithoutHeaders()) == 0 && len(m.GetGateways()) == 0 && m.GetMethod() == nil && m.GetScheme() == nil &&
		m.GetPort() == 0 && m.GetAuthority() == nil && m.GetSourceNamespace() == ""
}

// gatewayPort completes a destination without a port as
// GetDestinationCluster does on a gateway: the Service's only port, else
// the Gateway port.
func (c *Config) gatewayPort(d Destination, serverPort int32) Destination {
	if d.Cluster == UnknownServiceCluster {
		return d
	}
	if d.Port == 0 {
		d.Port = serverPort
		if sd := c.Services[d.Host]; sd != nil && sd.Service != nil && len(sd.Service.Spec.Ports) == 1 {
			d.Port = sd.Service.Spec.Ports[0].Port
		}
	}
	d.Cluster = ClusterName(d.Port, d.Subset, d.Host)
	return d
}

// vsRoutesTo reports whether a route of vs sends requests to host:port,
// whatever it is bound to: a destination naming host with that port, or
// without a port when the Service has only that one, or any port of it.
func vsRoutesTo(vs *networkingv1.VirtualService, host string, port int32, _ *Config) bool {
	for _, h := range vs.Spec.GetHttp() {
		for _, d := range destinations(h.GetRoute(), vs.Namespace, 0) {
			if d.Host != host {
				continue
			}
			if d.Port == 0 || port == 0 || d.Port == port {
				return true
			}
		}
	}
	return false
}

// GatewayRoutedHosts are the hosts the VirtualServices that route to host
// send requests to (host among them), whatever they are bound to: the
// Services a gateway's routes to host may split traffic with.
func (c *Config) GatewayRoutedHosts(host string) []string {
	var out []string
	all, _ := c.allVirtualServices()
	for _, vs := range all {
		if !vsRoutesTo(vs, host, 0, c) {
			continue
		}
		for _, h := range vs.Spec.GetHttp() {
			ds := destinations(h.GetRoute(), vs.Namespace, 0)
			if m := h.GetMirror(); m != nil {
				ds = append(ds, destination(m, vs.Namespace, 0, 100))
			}
			for _, d := range ds {
				if !contains(out, d.Host) {
					out = append(out, d.Host)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func routeReaches(r Route, host string, port int32) bool {
	for _, d := range r.Destinations {
		if d.Host == host && d.Port == port && d.Percent > 0 {
			return true
		}
	}
	return false
}

func vhostReaches(vh *GatewayVirtualHost, host string, port int32) bool {
	for _, r := range vh.Routes {
		if routeReaches(r, host, port) {
			return true
		}
	}
	return false
}

// sortVHostRoutes is istio_route.SortVHostRoutes: catch-all routes move to
// the end, the others keep their order.
func sortVHostRoutes(routes []Route) []Route {
	out := make([]Route, 0, len(routes))
	var catchAll []Route
	for _, r := range routes {
		if r.CatchAll {
			catchAll = append(catchAll, r)
			continue
		}
		out = append(out, r)
	}
	return append(out, catchAll...)
}

// addHostToRouteName says on which host a gateway route serves:
// "http[0] on shop.example.com (match ...)".
func addHostToRouteName(name, host string) string {
	head, rest, _ := strings.Cut(name, " (match ")
	if h, hosts, ok := strings.Cut(head, " on "); ok {
		if !contains(strings.Split(hosts, ","), host) {
			head = h + " on " + hosts + "," + host
		}
	} else {
		head += " on " + host
	}
	if rest != "" {
		return head + " (match " + rest
	}
	return head
}

// olderRule orders rules as istiod does: by creation time, then name,
// then namespace.
func olderRule(a, b metav1.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	if a.GetName() != b.GetName() {
		return a.GetName() < b.GetName()
	}
	return a.GetNamespace() < b.GetNamespace()
}

func sortByAge(gws []*networkingv1.Gateway) {
	sort.SliceStable(gws, func(i, j int) bool { return olderRule(gws[i], gws[j]) })
}

func sortedKeysOfMap[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// GatewayChain is the binding as an on-call reads it: the Gateways, their
// servers, the VirtualServices and the virtual hosts that reach the target.
func (b *GatewayBinding) Chain() []string {
	var out []string
	out = append(out, b.API.chain(b.GatewayAPI)...)
	sel := b.Selecting()
	if len(sel) == 0 {
		out = append(out, "  no Gateway selects the caller: it has no listener for requests")
	} else {
		out = append(out, "  Gateways selecting the caller: "+strings.Join(sel, ", "))
	}
	for _, s := range b.Servers {
		line := fmt.Sprintf("  server %s: listener %d, hosts %s", s.Ref(), s.ListenerPort, strings.Join(s.Hosts, ","))
		switch {
		case s.Rejected != "":
			line += ": REJECTED (" + s.Rejected + ")"
		case s.Unreachable != "":
			line += ": UNREACHABLE (" + s.Unreachable + ")"
		case s.RouteName != "":
			line += ", routes " + s.RouteName
		default:
			line += " (not HTTP: no routes)"
		}
		out = append(out, line)
	}
	if b.ListenerPortsUnknown {
		out = append(out, "  no Service of the gateway read: listener ports are the Gateway ports as written")
	}
	for _, v := range b.VirtualServices {
		target := ""
		if v.RoutesTarget {
			target = " (routes to the target)"
		}
		out = append(out, fmt.Sprintf("  VirtualService %s%s: %s", v.Ref(), target, v.Why))
	}
	for _, vh := range b.VirtualHosts {
		if len(vh.VirtualServices) == 0 {
			out = append(out, fmt.Sprintf("  route %s virtual host %s", vh.RouteName, vh.Domain))
			continue
		}
		out = append(out, fmt.Sprintf("  route %s virtual host %s: %d routes from %s", vh.RouteName, vh.Domain, len(vh.Routes), strings.Join(vh.VirtualServices, ", ")))
	}
	if len(b.Hosts) == 0 {
		out = append(out, "  no route of the gateway sends requests to the target: a request for a host no virtual host matches gets 404 NR")
	} else {
		out = append(out, "  hosts routed to the target: "+strings.Join(b.Hosts, ", "))
	}
	return out
}
