package mesh

import (
	"fmt"
	"sort"
	"strings"

	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
)

// View is what istiod gives a caller for one Service port, and what the
// caller's proxy then does with a request: is the Service visible, which
// route takes it, to which clusters and with what weights, which endpoints
// each cluster has, and what TLS goes to each of them.
type View struct {
	Caller   Caller
	Service  *corev1.Service
	Host     string
	Port     int32
	Protocol string
	// Visibility is meaningful only for a caller with a sidecar.
	Visibility Visibility
	// VirtualService is the one that routes the host for the caller, nil
	// when Istio's default route does.
	VirtualService   *networkingv1.VirtualService
	VirtualServices  []RuleVerdict
	DestinationRules []RuleVerdict
	Rule             *AppliedRule
	Routes           []Route
	// Unmatched: every route has a match condition, so a request none of
	// them matches gets 404 NR from the caller's proxy.
	Unmatched bool
	// RoutesUnknown says why the routes are not certain: the rules were
	// not read in every namespace, and a VirtualService of one not read
	// could route the host instead ("" when they are certain).
	RoutesUnknown string
	// Clusters are keyed by name; each route destination and mirror has
	// one.
	Clusters map[string]*Cluster
	Unknown  []string
	// Gateway is how a gateway caller's Gateways and VirtualServices route
	// to the Service (nil for other callers).
	Gateway *GatewayBinding
}

// Cluster is one Envoy cluster a route sends to, as istiod builds it for
// the caller.
type Cluster struct {
	Name   string
	Host   string
	Subset string
	Port   int32
	// Exists is false when istiod builds no such cluster for the caller
	// (an undefined subset, a host it does not know or cannot see):
	// Envoy then answers 503 NC.
	Exists bool
	Why    string
	// Missing says, for a cluster istiod does not build, what is missing
	// (MissingHost, MissingServiceHidden, MissingEntryHidden), "" for
	// other reasons.
	Missing string
	// ExistsUnknown says why whether istiod builds the cluster is not
	// known (a Service or rules that could not be read): no verdict then.
	ExistsUnknown string
	// Mirror: only mirrors send to it.
	Mirror bool
	// External: a ServiceEntry's host, whose endpoints are not read here.
	External bool
	// Bypassed: istiod pushes the cluster to the caller's proxy, but the
	// caller's app sends around the proxy (Caller.Bypass): no request of
	// its goes through it.
	Bypassed bool
	// ServiceServing is how many endpoints of the whole Service serve,
	// subset or not: a subset can be empty while the Service is not.
	ServiceServing int
	// Undecided counts the serving endpoints the cluster may or may not
	// have: a subset's selection of one depends on a label that could not
	// be read, or its pod is not known. No verdict on an empty cluster then.
	Undecided int
	Rule      *AppliedRule
	Policy    *networkingv1alpha3.TrafficPolicy
	TLS       ClientTLS
	Endpoints []EndpointTLS
	Unknown   []string
}

// EndpointTLS is an endpoint of a cluster with the TLS the caller sends it
// and the mode it accepts.
type EndpointTLS struct {
	Endpoint
	Sends    string
	SendsWhy string
	Accepts  PeerMode
	Mismatch string
	// TLSMode is the tlsMode istiod's EDS puts in the endpoint's metadata
	// for the cluster (ClientTLS.EDSTLSMode), "" for none.
	TLSMode string
	// Via is the network gateway this endpoint is, standing for the
	// endpoints of another network (split-horizon EDS); nil for a
	// workload's own address.
	Via *NetworkGateway
}

// Serving counts the endpoints Envoy sends requests to.
func (c *Cluster) Serving() int {
	n := 0
	for _, e := range c.Endpoints {
		if e.Serving() {
			n++
		}
	}
	return n
}

// Routing through kube-proxy and the fallback clusters, which carry no
// Istio config.
const (
	KubeProxy = "kube-proxy"
)

// ViewFor works out what the caller's proxy is given for the Service with
// hostname host on service port. For a caller whose app sends around its
// sidecar (Caller.Bypass), the clusters are still what istiod pushes to
// the proxy, marked Bypassed, and the route the app's requests take is
// kube-proxy's, in plaintext.
func (c *Config) ViewFor(caller Caller, host string, port int32) (*View, error) {
	v, err := c.viewFor(caller, host, port)
	if err == nil && len(caller.BypassSome) > 0 {
		v.Unknown = append(v.Unknown, "which container sends the requests: "+strings.Join(caller.BypassSome, "; ")+", so its requests bypass the sidecar (plaintext); the view is the other containers'")
	}
	if err != nil || caller.Bypass == "" || !caller.Sidecar || caller.Gateway || caller.Ambient {
		return v, err
	}
	for _, cl := range v.Clusters {
		cl.Bypassed = true
	}
	why := "the caller's app bypasses its sidecar (" + caller.Bypass + "): istio-iptables lets the proxy's own UID/GID out unredirected, so its requests leave as plaintext"
	v.Routes = []Route{{Name: "kube-proxy: " + why, CatchAll: true,
		Destinations: []Destination{{Host: host, Port: port, Percent: 100, Cluster: KubeProxy}}}}
	v.Unmatched = false
	if ExternalNameOf(v.Service) != "" {
		v.Clusters[DNSAlias] = &Cluster{Name: DNSAlias, Host: ExternalNameOf(v.Service), Port: port, Exists: true, External: true, Why: why}
		v.Routes[0].Destinations[0].Cluster = DNSAlias
		return v, nil
	}
	v.Clusters[KubeProxy] = c.plainCluster(caller, KubeProxy, c.Services[host], port, why)
	return v, nil
}

func (c *Config) viewFor(caller Caller, host string, port int32) (*View, error) {
	sd := c.Services[host]
	if sd == nil || sd.Service == nil {
		return nil, fmt.Errorf("no Service %s in the configuration read", host)
	}
	var sp *corev1.ServicePort
	for i := range sd.Service.Spec.Ports {
		if sd.Service.Spec.Ports[i].Port == port {
			sp = &sd.Service.Spec.Ports[i]
		}
	}
	if sp == nil {
		return nil, fmt.Errorf("Service %s has no port %d", host, port)
	}
	v := &View{Caller: caller, Service: sd.Service, Host: host, Port: port, Protocol: PortProtocol(*sp),
		Clusters: map[string]*Cluster{}, Unknown: append([]string(nil), c.Unknown...)}
	if ExternalNameOf(sd.Service) != "" && !caller.Gateway {
		c.externalNameView(v, caller, sd)
		return v, nil
	}
	if caller.Ambient {
		c.ztunnelView(v, sd, port)
		return v, nil
	}
	if !caller.Sidecar {
		// No proxy, no Istio config: kube-proxy picks any endpoint of the
		// Service and the app's bytes go as they are.
		v.Routes = []Route{{Name: "kube-proxy: the caller has no sidecar", CatchAll: true,
			Destinations: []Destination{{Host: host, Port: port, Percent: 100, Cluster: KubeProxy}}}}
		v.Clusters[KubeProxy] = c.plainCluster(caller, KubeProxy, sd, port, "the caller has no sidecar: its app's plaintext leaves the pod as is")
		return v, nil
	}
	if caller.Gateway {
		c.gatewayView(v, sd)
		return v, nil
	}
	v.Visibility = c.VisibilityOf(caller, sd.Service, port)
	if v.Visibility.Unknown != "" {
		v.Unknown = append(v.Unknown, v.Visibility.Unknown)
	}
	if v.Visibility.Undecided != "" {
		v.Unknown = append(v.Unknown, v.Visibility.Undecided)
	}
	rule, drVerdicts, unknown := c.DestinationRuleFor(caller, host, sd.Service.Namespace)
	v.Rule, v.DestinationRules = rule, drVerdicts
	v.Unknown = append(v.Unknown, unknown...)
	if !v.Visibility.Visible {
		fb := v.Visibility.Fallback
		v.Routes = []Route{{Name: fb + ": the caller's proxy has no config for the Service", CatchAll: true,
			Destinations: []Destination{{Host: host, Port: port, Percent: 100, Cluster: fb}}}}
		if fb == PassthroughCluster {
			cl := c.plainCluster(caller, fb, sd, port, "PassthroughCluster forwards the app's bytes to the ClusterIP as they are, without mTLS")
			if why := v.Visibility.Undecided; why != "" {
				// Maybe the caller's proxy routes it after all: what it
				// sends is not known.
				for i := range cl.Endpoints {
					cl.Endpoints[i].Sends, cl.Endpoints[i].SendsWhy, cl.Endpoints[i].Mismatch = SendsUnknown, why, MismatchUnknown
				}
			}
			v.Clusters[fb] = cl
		} else {
			v.Clusters[fb] = &Cluster{Name: fb, Host: host, Port: port, Exists: true, Why: "BlackHoleCluster drops every request (502)"}
		}
		return v, nil
	}
	if v.Protocol == ProtocolUDP {
		// istiod skips UDP ports: no listener captures them and no
		// cluster is built (the proxies never see their datagrams, which
		// kube-proxy carries, unencrypted and unrouted by Istio), so
		// nothing the mesh decides can fail them.
		name := ClusterName(port, "", host)
		v.Routes = []Route{{Name: "none: istiod builds no listener for a UDP port; kube-proxy carries it", CatchAll: true}}
		v.Clusters[name] = &Cluster{Name: name, Host: host, Port: port, Why: "istiod builds no cluster for a UDP port"}
		return v, nil
	}
	v.VirtualService, v.VirtualServices = c.VirtualServicesFor(caller, host)
	if v.Protocol == ProtocolTCP {
		v.VirtualService, v.VirtualServices = c.tcpVirtualServiceFor(caller, host, port, v.VirtualServices)
	} else {
		v.VirtualService, v.VirtualServices = c.httpVirtualServiceFor(caller, host, port, v.Protocol, v.VirtualService, v.VirtualServices)
	}
	if v.RoutesUnknown = c.routesUnknown(caller, host, v.VirtualService); v.RoutesUnknown != "" {
		v.Unknown = append(v.Unknown, v.RoutesUnknown)
	}
	if v.VirtualService != nil {
		v.Routes = RoutesFor(v.VirtualService, caller, port, v.Protocol)
	}
	if len(v.Routes) == 0 {
		v.Routes = []Route{{Name: "default route to the Service", CatchAll: true,
			Destinations: []Destination{{Host: host, Port: port, Percent: 100, Cluster: ClusterName(port, "", host)}}}}
	} else {
		v.Unmatched = true
		for _, r := range v.Routes {
			v.Unmatched = v.Unmatched && !r.CatchAll
		}
	}
	for i := range v.Routes {
		for j := range v.Routes[i].Destinations {
			c.resolveDestination(caller, &v.Routes[i].Destinations[j], port, v.Protocol)
		}
		for j := range v.Routes[i].Mirrors {
			c.resolveDestination(caller, &v.Routes[i].Mirrors[j], port, v.Protocol)
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
	return v, nil
}

// resolveDestination names a route destination's cluster as istiod's
// GetDestinationCluster does, from the Service it finds for the host: for
// an HTTP route the Services of the caller's listener on listenerPort
// (visible to the caller, with that port alone), for a TCP or TLS route
// any Service in the caller's scope. A route that names no port takes the
// Service's only port, if it has one (else the listener's); a route to an
// ExternalName alias goes to the host the alias names
// (outbound|PORT|SUBSET|EXTERNALNAME).
func (c *Config) resolveDestination(caller Caller, d *Destination, listenerPort int32, proto string) {
	sd := c.Services[d.Host]
	if sd == nil || sd.Service == nil {
		return
	}
	svc := sd.Service
	if proto == ProtocolHTTP {
		hasPort := false
		for _, p := range svc.Spec.Ports {
			hasPort = hasPort || p.Port == listenerPort
		}
		if vis := c.VisibilityOf(caller, svc, listenerPort); !hasPort || !vis.Visible || vis.Via != "" {
			return
		}
	} else {
		if !c.inScope(caller, svc) {
			return
		}
		if !d.PortNamed && len(svc.Spec.Ports) == 1 {
			d.Port = svc.Spec.Ports[0].Port
		}
	}
	if target := ExternalNameOf(svc); target != "" {
		d.Host = target
	}
	d.Cluster = ClusterName(d.Port, d.Subset, d.Host)
}

// inScope reports whether svc is in the caller's sidecar scope on some
// port: its Sidecar's egress hosts select it and it is exported to the
// caller, or an imported VirtualService routes to it.
func (c *Config) inScope(caller Caller, svc *corev1.Service) bool {
	for _, p := range svc.Spec.Ports {
		if vis := c.VisibilityOf(caller, svc, p.Port); vis.Visible && vis.Via == "" || vis.Imported != "" {
			return true
		}
	}
	return false
}

// serviceEntryHasPort reports whether se declares port.
func serviceEntryHasPort(se *networkingv1.ServiceEntry, port int32) bool {
	for _, p := range se.Spec.GetPorts() {
		if int32(p.GetNumber()) == port {
			return true
		}
	}
	return false
}

func (v *View) addCluster(c *Config, caller Caller, d Destination, mirror bool) {
	if cl, ok := v.Clusters[d.Cluster]; ok {
		cl.Mirror = cl.Mirror && mirror
		return
	}
	cl := c.clusterFor(caller, d)
	cl.Mirror = mirror
	v.Clusters[d.Cluster] = cl
}

// SubsetCluster is the cluster istiod builds for the caller for a subset of
// host on port ("" for the Service's default cluster), whether or not a
// route sends to it.
func (c *Config) SubsetCluster(caller Caller, host string, port int32, subset string) *Cluster {
	return c.clusterFor(caller, Destination{Host: host, Port: port, Subset: subset, Cluster: ClusterName(port, subset, host)})
}

// clusterFor builds the cluster a destination names, as istiod would for
// the caller, or says why there is none.
func (c *Config) clusterFor(caller Caller, d Destination) *Cluster {
	cl := &Cluster{Name: d.Cluster, Host: d.Host, Subset: d.Subset, Port: d.Port}
	if d.Cluster == UnknownServiceCluster {
		cl.Missing, cl.Why = MissingUnknownService, "istiod emptied the destination of a Gateway API backendRef it could not resolve (its route's ResolvedRefs says why): no cluster UnknownService exists"
		return cl
	}
	sd := c.Services[d.Host]
	if sd == nil || sd.Service == nil {
		se, imported := c.visibleServiceEntry(caller, d.Host), ""
		if se == nil {
			se, imported = c.ownServiceEntryImported(caller, d.Host, d.Port)
		}
		if se != nil {
			if !serviceEntryHasPort(se, d.Port) {
				cl.Why = fmt.Sprintf("ServiceEntry %s/%s declares no port %d", se.Namespace, se.Name, d.Port)
				return cl
			}
			cl.Exists, cl.External = true, true
			cl.Why = "ServiceEntry " + se.Namespace + "/" + se.Name
			if imported != "" {
				cl.Why += " of the caller's namespace, taken into its scope for the routes of VirtualService " + imported + " whatever its exportTo"
			}
			return cl
		}
		if why := c.ServicesUnknown[d.Host]; why != "" {
			cl.ExistsUnknown, cl.Why = why, "the Service "+d.Host+" could not be read: "+why
			return cl
		}
		cl.Missing, cl.Why = MissingHost, "no Service or ServiceEntry named "+d.Host+" that the caller can see"
		for _, se := range c.ServiceEntries {
			if ServiceEntryDeclares(se, d.Host) {
				cl.Missing = MissingEntryHidden
				cl.Why = fmt.Sprintf("ServiceEntry %s/%s declares %s but is not exported to %s (exportTo %s)", se.Namespace, se.Name, d.Host, caller.Namespace,
					strings.Join(exportToOrDefault(se.Spec.GetExportTo(), c.Mesh.Raw.GetDefaultServiceExportTo()), ","))
				break
			}
		}
		if c.RulesRead != nil {
			cl.Why += " among the ServiceEntries read (" + c.RulesPartial + ")"
		}
		return cl
	}
	if target := ExternalNameOf(sd.Service); target != "" {
		cl.Why = "ExternalName Service: istiod builds no cluster for an alias (a route names its host where the alias has no port " +
			fmt.Sprint(d.Port) + " the caller's listener serves, so it is not read as " + target + ")"
		return cl
	}
	// A Service a route sends to gets its cluster (and its rules) whatever
	// the caller's Sidecar egress hosts say; only its exportTo hides it,
	// and not from a caller of its own namespace (istiod takes a route
	// destination of the caller's namespace into its scope regardless).
	if exportTo := c.ServiceExportTo(sd.Service); !ExportedTo(exportTo, sd.Service.Namespace, caller.Namespace) && sd.Service.Namespace != caller.Namespace {
		cl.Missing = MissingServiceHidden
		cl.Why = fmt.Sprintf("Service %s/%s is not exported to %s (exportTo %s)", sd.Service.Namespace, sd.Service.Name, caller.Namespace, strings.Join(exportTo, ","))
		return cl
	}
	hasPort := false
	for _, p := range sd.Service.Spec.Ports {
		hasPort = hasPort || p.Port == d.Port
	}
	if !hasPort {
		cl.Missing, cl.Why = MissingPort, fmt.Sprintf("Service %s has no port %d", d.Host, d.Port)
		return cl
	}
	rule, _, unknown := c.DestinationRuleFor(caller, d.Host, sd.Service.Namespace)
	cl.Rule, cl.Unknown = rule, unknown
	var subset *networkingv1alpha3.Subset
	if d.Subset != "" {
		if subset = rule.Subset(d.Subset); subset == nil && !c.destinationRulesKnown(caller, sd.Service.Namespace) {
			cl.ExistsUnknown = fmt.Sprintf("subset %s: the DestinationRules that could define it are not all read (%s)", d.Subset, c.RulesPartial)
			cl.Why = cl.ExistsUnknown
			return cl
		}
		if subset == nil {
			defined := "no DestinationRule applies to " + d.Host
			if rule != nil {
				defined = "the DestinationRule that applies (" + strings.Join(rule.Names(), ", ") + ") defines " + subsetNames(rule)
			}
			cl.Why = fmt.Sprintf("subset %s is not defined: %s", d.Subset, defined)
			return cl
		}
	}
	cl.Exists = true
	cl.Policy = rule.ClusterPolicy(d.Port, d.Subset)
	from := ""
	if rule != nil {
		from = rule.PolicyFrom
	}
	ns := sd.Service.Namespace
	serviceMode := c.serviceMTLSMode(ns)
	headless := sd.Service.Spec.ClusterIP == corev1.ClusterIPNone
	if headless {
		serviceMode = c.passthroughMTLSMode(sd, d.Port)
	}
	cl.TLS = clientTLS(cl.Policy, from, c.Mesh.EnableAutoMtls(), serviceMode, drTLSMode(rule, d.Subset, d.Port))
	cl.TLS.Passthrough = headless
	local := nodeLocal(sd.Service)
	for _, e := range c.Endpoints(sd, d.Port) {
		if local {
			// istiod sends a Service of internalTrafficPolicy Local only
			// the endpoints whose pod is on the caller's node
			// (filterIstioEndpoint): none without a pod.
			switch on, why := onCallerNode(caller, e.Labels[LabelHostname], e); {
			case why != "":
				cl.undecided(e, why)
				continue
			case !on:
				continue
			}
		}
		if e.ReadyUnknown != "" {
			cl.Undecided++
			cl.Unknown = append(cl.Unknown, "endpoint "+e.Address+": "+e.ReadyUnknown)
			continue
		}
		if e.PodUnknown != "" && e.PodExpected {
			// istiod holds back an endpoint whose targetRef names a pod it
			// has not seen; whether it has seen this one is not known here.
			cl.undecided(e, "endpoint "+e.Address+": "+e.PodUnknown)
			continue
		}
		if e.Serving() {
			cl.ServiceServing++
		}
		if subset != nil {
			if e.PodUnknown != "" {
				cl.undecided(e, "whether subset "+d.Subset+" selects endpoint "+e.Address+": "+e.PodUnknown)
				continue
			}
			ok, why := SelectsEndpoint(subset.GetLabels(), e)
			if why != "" {
				cl.undecided(e, "whether subset "+d.Subset+" selects "+why)
			}
			if !ok {
				continue
			}
		}
		cl.Endpoints = append(cl.Endpoints, c.endpointTLS(cl.TLS, e, ns))
	}
	c.splitHorizon(caller, cl)
	return cl
}

// nodeLocal: the Service's internalTrafficPolicy is Local.
func nodeLocal(svc *corev1.Service) bool {
	return svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
}

// onCallerNode reports whether endpoint e, on node, is on the caller's
// node; why says why that is not known.
func onCallerNode(caller Caller, node string, e Endpoint) (on bool, why string) {
	switch {
	case caller.Node == "":
		return false, "whether endpoint " + e.Address + " is on the caller's node (internalTrafficPolicy Local): the caller's node is not known"
	case e.PodUnknown != "":
		return false, "whether endpoint " + e.Address + " is on the caller's node (internalTrafficPolicy Local): " + e.PodUnknown
	}
	return node == caller.Node, ""
}

// undecided counts an endpoint the cluster may or may not have: one that
// would serve leaves "the cluster has no serving endpoint" undecided.
func (cl *Cluster) undecided(e Endpoint, why string) {
	if e.Serving() {
		cl.Undecided++
	}
	cl.Unknown = append(cl.Unknown, why)
}

// plainCluster is the Service's endpoints reached without Istio config
// (kube-proxy, PassthroughCluster): plaintext to each.
func (c *Config) plainCluster(caller Caller, name string, sd *ServiceData, port int32, why string) *Cluster {
	cl := &Cluster{Name: name, Host: ServiceHost(sd.Service.Name, sd.Service.Namespace), Port: port, Exists: true, Why: why}
	local := nodeLocal(sd.Service)
	for _, e := range c.Endpoints(sd, port) {
		if local {
			// kube-proxy sends a Service of internalTrafficPolicy Local
			// only to the endpoints the slice puts on the caller's node.
			switch on, why := onCallerNode(caller, e.Node, e); {
			case why != "":
				cl.undecided(e, why)
				continue
			case !on:
				continue
			}
		}
		if e.Serving() {
			cl.ServiceServing++
		}
		accepts := c.Accepts(sd.Service.Namespace, e)
		cl.Endpoints = append(cl.Endpoints, EndpointTLS{Endpoint: e, Sends: SendsPlaintext, SendsWhy: why, Accepts: accepts,
			Mismatch: TLSMismatch(SendsPlaintext, e, accepts)})
	}
	return cl
}

// Accepts is the mode endpoint e of a Service of namespace ns enforces on
// its port (its pod's PeerAuthentication, workload and port level).
func (c *Config) Accepts(ns string, e Endpoint) PeerMode {
	return c.PeerAuthMode(ns, e.Labels, e.Port)
}

func (c *Config) endpointTLS(ct ClientTLS, e Endpoint, ns string) EndpointTLS {
	accepts := c.Accepts(ns, e)
	sends, why := ct.Sends(e, accepts)
	return EndpointTLS{Endpoint: e, Sends: sends, SendsWhy: why, Accepts: accepts, Mismatch: TLSMismatch(sends, e, accepts),
		TLSMode: ct.EDSTLSMode(e, accepts)}
}

func subsetNames(a *AppliedRule) string {
	var names []string
	for _, s := range a.Subsets {
		names = append(names, s.GetName())
	}
	if len(names) == 0 {
		return "no subsets"
	}
	return "subsets " + strings.Join(names, ", ")
}

// visibleServiceEntry is a ServiceEntry for host exported to the caller.
func (c *Config) visibleServiceEntry(caller Caller, host string) *networkingv1.ServiceEntry {
	for _, se := range c.ServiceEntries {
		if c.ServiceEntryExportedTo(se, caller.Namespace) && ServiceEntryDeclares(se, host) {
			return se
		}
	}
	return nil
}

// ownServiceEntryImported is a ServiceEntry of the caller's namespace that
// declares host, with the VirtualService the caller imports whose routes
// send to host on port (or on no port): istiod takes a route destination
// into the caller's scope from the caller's own namespace before any other
// and whatever its exportTo (collectImportedServices looks the host up in
// the config namespace first; only another namespace's must be visible),
// so the ServiceEntry's cluster is pushed though it is not exported there.
func (c *Config) ownServiceEntryImported(caller Caller, host string, port int32) (*networkingv1.ServiceEntry, string) {
	for _, se := range c.ServiceEntries {
		if se.Namespace != caller.Namespace || !ServiceEntryDeclares(se, host) {
			continue
		}
		sc, _ := c.SidecarFor(caller)
		if vs := c.hostImportedBy(caller, sc, host, port); vs != "" {
			return se, vs
		}
		return nil, ""
	}
	return nil, ""
}

// What is missing for a cluster istiod does not build.
const (
	MissingHost          = "host"           // no Service or ServiceEntry declares the host
	MissingServiceHidden = "service-hidden" // the Service's exportTo hides it from the caller
	MissingEntryHidden   = "entry-hidden"   // a ServiceEntry declares it, but its exportTo hides it
	// MissingUnknownService: a Gateway API backendRef istiod emptied (not
	// permitted, an unsupported kind): it routes to UnknownService.
	MissingUnknownService = "unknown-service"
	// MissingPort: the Service exists without the route's port.
	MissingPort = "port"
)

// destinationRulesKnown: the namespaces istiod takes a host's
// DestinationRule from (the caller's, the host's, the root) were read.
func (c *Config) destinationRulesKnown(caller Caller, hostNS string) bool {
	return c.RulesKnown(caller.Namespace) && c.RulesKnown(hostNS) && c.RulesKnown(c.RootNamespace)
}

// Why a route destination fails every request sent to it.
const (
	BreakNoCluster    = "no-cluster"    // istiod builds no cluster: 503 NC
	BreakSubsetEmpty  = "subset-empty"  // the subset has no serving endpoint while the Service has some: 503 UH
	BreakServiceEmpty = "service-empty" // the Service has no serving endpoint at all: 503 UH
	BreakBlackHole    = "blackhole"     // BlackHoleCluster: 502
	// BreakSubsetUndefined: the route names a subset no applying rule
	// defines, so istiod builds no cluster: 503 NC.
	BreakSubsetUndefined = "subset-undefined"
	// BreakServiceHidden: the route sends to a Service whose exportTo
	// hides it from the caller: no cluster, 503 NC.
	BreakServiceHidden = "service-hidden"
	// BreakNoEntry: the route sends to a host no Service or visible
	// ServiceEntry declares (none at all, or one whose exportTo hides
	// it): no cluster, 503 NC.
	BreakNoEntry = "no-entry"
	// BreakBackendInvalid: a Gateway API route's backendRef that istiod
	// routes to a cluster it does not build (a Service or port that does
	// not exist, a reference not permitted): 500 NC, the code istiod sets
	// for gateway semantics.
	BreakBackendInvalid = "backend-invalid"
)

// Break is a route destination that fails every request it gets.
type Break struct {
	Route       Route
	Destination Destination
	Reason      string
	Why         string
}

// Breaks lists the route destinations (mirrors aside) that fail every
// request sent to them, most traffic first.
func (v *View) Breaks() []Break {
	var out []Break
	for _, r := range v.Routes {
		for _, d := range r.Destinations {
			if d.Percent == 0 {
				continue
			}
			cl := v.Clusters[d.Cluster]
			if cl == nil {
				continue
			}
			b := Break{Route: r, Destination: d}
			switch {
			case cl.ExistsUnknown != "":
				continue
			case !cl.Exists && r.ClusterNotFound == 500:
				b.Reason, b.Why = BreakBackendInvalid, cl.Why+": Envoy answers 500 (NC, cluster_not_found)"
			case d.Cluster == BlackHoleCluster:
				b.Reason, b.Why = BreakBlackHole, cl.Why
			case !cl.Exists && cl.Missing == MissingServiceHidden:
				b.Reason, b.Why = BreakServiceHidden, cl.Why
			case !cl.Exists && (cl.Missing == MissingHost || cl.Missing == MissingEntryHidden):
				b.Reason, b.Why = BreakNoEntry, cl.Why
			case !cl.Exists && d.Subset != "" && strings.HasPrefix(cl.Why, "subset "):
				b.Reason, b.Why = BreakSubsetUndefined, cl.Why
			case !cl.Exists:
				b.Reason, b.Why = BreakNoCluster, cl.Why
			case cl.External:
				continue
			case cl.Serving() > 0, cl.Undecided > 0:
				continue
			case cl.ServiceServing > 0:
				b.Reason, b.Why = BreakSubsetEmpty, fmt.Sprintf("subset %s selects none of the %d serving endpoints of %s", d.Subset, cl.ServiceServing, d.Host)
			default:
				b.Reason, b.Why = BreakServiceEmpty, d.Host+" has no serving endpoint"
			}
			out = append(out, b)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Destination.Percent > out[j].Destination.Percent })
	return out
}

// BrokenShare is, for each route, the share of its requests that go to
// destinations failing for one of reasons, and the largest such share.
func (v *View) BrokenShare(reasons ...string) (max int, byRoute map[string]int) {
	byRoute = map[string]int{}
	for _, b := range v.Breaks() {
		if !contains(reasons, b.Reason) {
			continue
		}
		key := b.Route.VirtualService + " " + b.Route.Name
		byRoute[key] += b.Destination.Percent
		if byRoute[key] > max {
			max = byRoute[key]
		}
	}
	return max, byRoute
}

// routedCode is what the caller's proxy answers a request a route sends
// to cluster when it does not exist: 500 for a Gateway API route, 503
// otherwise; 0 when no route destination or mirror names it.
func (v *View) routedCode(cluster string) int {
	code := 0
	for _, r := range v.Routes {
		for _, d := range append(append([]Destination(nil), r.Destinations...), r.Mirrors...) {
			if d.Cluster != cluster {
				continue
			}
			if r.ClusterNotFound != 0 {
				return r.ClusterNotFound
			}
			code = 503
		}
	}
	return code
}

// Chain is the reasoning an on-call would follow, one line a link: caller,
// visibility, route and weights, clusters and their endpoints, TLS.
func (v *View) Chain() []string {
	var out []string
	side := "with sidecar"
	switch {
	case v.Caller.Gateway:
		side = "a gateway"
	case !v.Caller.Sidecar:
		side = "without sidecar"
	case v.Caller.Bypass != "":
		side = "with sidecar, which its app bypasses: " + v.Caller.Bypass
	}
	out = append(out, fmt.Sprintf("caller %s (%s) → %s:%d (%s)", v.Caller, side, v.Host, v.Port, v.Protocol))
	if v.Gateway != nil {
		if !v.Visibility.Visible {
			out = append(out, "  NOT visible: "+v.Visibility.HiddenBy+": a route to it has no cluster (503 NC)")
		}
		out = append(out, v.Gateway.Chain()...)
	} else if v.Caller.Sidecar {
		vis := "visible to the caller's proxy"
		switch {
		case !v.Visibility.Visible:
			vis = "NOT visible: " + v.Visibility.HiddenBy + "; its traffic goes to " + v.Visibility.Fallback
			if v.Visibility.Imported != "" {
				vis += " (its clusters are pushed all the same, for the routes of VirtualService " + v.Visibility.Imported + ")"
			}
		case v.Visibility.Via != "":
			vis = "visible to the caller's proxy although its Sidecar's egress hosts do not select it: " + v.Visibility.Via
		}
		policy := "ALLOW_ANY"
		if v.Visibility.RegistryOnly {
			policy = "REGISTRY_ONLY"
		}
		out = append(out, fmt.Sprintf("  %s (outbound policy %s from %s)", vis, policy, v.Visibility.PolicyFrom))
	}
	switch vs := v.VirtualService; {
	case vs != nil && gatewaySemantics(vs):
		out = append(out, "  Gateway API mesh route "+vs.Annotations[annotationParents]+" routes it (istiod's VirtualService "+vs.Namespace+"/"+vs.Name+")")
	case vs != nil:
		out = append(out, "  VirtualService "+vs.Namespace+"/"+vs.Name+" routes it")
	}
	for _, r := range v.Routes {
		var dests []string
		for _, d := range r.Destinations {
			dests = append(dests, fmt.Sprintf("%d%% → %s", d.Percent, d.Cluster))
		}
		for _, d := range r.Mirrors {
			dests = append(dests, "mirror → "+d.Cluster+" (copies only)")
		}
		out = append(out, "  route "+strings.TrimSpace(r.VirtualService+" "+r.Name)+": "+strings.Join(dests, ", "))
	}
	if v.Unmatched {
		out = append(out, "  no route without a match condition: other requests get 404 NR")
	}
	names := make([]string, 0, len(v.Clusters))
	for n := range v.Clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cl := v.Clusters[n]
		if cl.ExistsUnknown != "" {
			out = append(out, "  cluster "+n+": UNDECIDED ("+cl.ExistsUnknown+")")
			continue
		}
		if !cl.Exists {
			line := "  cluster " + n + ": NOT BUILT (" + cl.Why + ")"
			if code := v.routedCode(n); code != 0 {
				line += fmt.Sprintf(": %d NC", code)
			}
			out = append(out, line)
			continue
		}
		line := fmt.Sprintf("  cluster %s: %d of %d endpoints serving", n, cl.Serving(), len(cl.Endpoints))
		if cl.Bypassed {
			line += " (pushed to the proxy; the app's requests do not go through it)"
		}
		if cl.External || cl.Why != "" && len(cl.Endpoints) == 0 {
			line = "  cluster " + n + ": " + cl.Why
		}
		out = append(out, line)
		for _, e := range cl.Endpoints {
			mm := ""
			if e.Mismatch != MismatchNone {
				mm = " MISMATCH " + e.Mismatch
			}
			out = append(out, fmt.Sprintf("    %s:%d %s: sends %s (%s); accepts %s (%s)%s", e.Address, e.Port, e.Pod, e.Sends, e.SendsWhy, e.Accepts.Mode, e.Accepts.From, mm))
		}
	}
	for _, u := range v.Unknown {
		out = append(out, "  unknown: "+u)
	}
	return out
}
