package mesh

import (
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Config is what istiod computes a proxy's configuration from, as far as a
// triage read it: the mesh config and the Istio rules of the namespaces that
// matter (the caller's, the services', the root), and for each Service a
// route may send to, its endpoints and their pods and nodes. Nothing here
// reads a cluster; the probes fill it.
type Config struct {
	Mesh MeshConfig
	// RootNamespace holds the mesh-wide rules (Mesh.RootNamespace of the
	// control plane's namespace).
	RootNamespace string
	// SystemNamespace is istiod's namespace (the RootNamespace when empty):
	// its network label is the network of pods that name none.
	SystemNamespace string
	// ClusterID names the cluster in endpoint labels (topology.istio.io/
	// cluster); istiod's default is "Kubernetes".
	ClusterID string

	// Services are keyed by their hostname (NAME.NAMESPACE.svc.cluster.local).
	Services map[string]*ServiceData
	// AllServices: Services holds every Service of the cluster (a dump,
	// the lab), not only those a triage read for its target; what depends
	// on Services not read is otherwise unknown.
	AllServices bool
	// NetworkGatewaysRead: every Service labelled topology.istio.io/network
	// was read, into NetworkGatewayServices (without AllServices, the
	// network gateways are otherwise not known; NetworkGatewaysUnknown says
	// why they were not read).
	NetworkGatewaysRead    bool
	NetworkGatewayServices []*corev1.Service
	NetworkGatewaysUnknown string
	// SystemNamespaceUnknown says why istiod's namespace, whose network
	// label is the network of pods that name none, could not be read.
	SystemNamespaceUnknown string
	// Namespaces by name: their labels carry the network of pods that do
	// not name one.
	Namespaces map[string]*corev1.Namespace

	VirtualServices     []*networkingv1.VirtualService
	DestinationRules    []*networkingv1.DestinationRule
	ServiceEntries      []*networkingv1.ServiceEntry
	Sidecars            []*networkingv1.Sidecar
	PeerAuthentications []*securityv1.PeerAuthentication
	// Gateways are the Istio Gateways read; GatewayNamespaces are the
	// namespaces whose Gateways were read (nil: all there are).
	Gateways          []*networkingv1.Gateway
	GatewayNamespaces map[string]bool
	// GatewayAPI is the Gateway API configuration read (nil: none was
	// read, and what it decides is not judged).
	GatewayAPI *GatewayAPIConfig

	// RulesRead are the namespaces whose Istio rules were read, when they
	// could not all be listed across every namespace (a namespaced role);
	// nil when they were, and the rules are istiod's whole set. With a
	// partial set the model never concludes from absence: a rule of a
	// namespace not read may exist (RulesPartial says why).
	RulesRead    map[string]bool
	RulesPartial string
	// ServicesUnknown says, by hostname, why a Service a route sends to
	// could not be read: whether istiod has it is then not known.
	ServicesUnknown map[string]string
	// ServicesAbsent are the hostnames of Services looked up and not
	// found.
	ServicesAbsent map[string]bool

	// Unknown lists what could not be read and so cannot be judged ("the
	// rules of namespace istio-system: forbidden"); a View repeats it.
	Unknown []string
}

// RulesKnown reports whether the Istio rules of namespace ns were read.
func (c *Config) RulesKnown(ns string) bool {
	return c.RulesRead == nil || c.RulesRead[ns]
}

// ServiceData is one Service and what istiod builds its endpoints from.
type ServiceData struct {
	Service *corev1.Service
	// Slices are the Service's EndpointSlices (core Endpoints converted
	// into slices when the API has none): a selector-less Service's
	// endpoints are only these.
	Slices []discoveryv1.EndpointSlice
	// Pods are the pods the endpoints' targetRefs name (and the Service
	// selects), by name, in the Service's namespace.
	Pods map[string]*corev1.Pod
	// PodsByIP are, for each endpoint address without a targetRef, the
	// pods of the endpoint's namespace found with that IP: an entry
	// without pods says a search found none (the address has no pod); no
	// entry says no search was made (its pod is unknown). See PodOf.
	PodsByIP map[string][]*corev1.Pod
	// PodsUnknown says, by pod name (targetRef) or address, why a pod
	// could not be read: a refused read, an input that holds no such pod.
	PodsUnknown map[string]string
	// Nodes are the pods' nodes, by name, for the locality labels istiod
	// adds to endpoints; a node missing here leaves those labels unknown.
	Nodes map[string]*corev1.Node
	// NodesUnknown says why nodes could not be read, if they could not.
	NodesUnknown string
}

// DefaultClusterID is the cluster ID istiod uses when none is configured.
const DefaultClusterID = "Kubernetes"

// Caller is the proxy the view is for.
type Caller struct {
	Namespace string
	// Name is the pod's name, "" for "a meshed pod in namespace N".
	Name string
	// Node is the pod's node ("" when not known): a Service of
	// internalTrafficPolicy Local reaches only endpoints on it.
	Node string
	// Labels are the caller pod's labels; nil when the caller is not a
	// known pod, so rules that select workloads cannot be judged for it.
	Labels map[string]string
	// Sidecar is false for a pod without istio-proxy: it gets no Istio
	// config at all and reaches Services through kube-proxy.
	Sidecar bool
	// Gateway is an Istio gateway (istio-proxy run as a router, see
	// GatewayPod): Gateways and the VirtualServices bound to them route
	// its requests; it also has Sidecar set, for the TLS it originates.
	Gateway bool
	// Ambient: no sidecar, and the CNI enrolled the pod in ambient
	// (ambient.istio.io/redirection=enabled): ztunnel on its node carries
	// its connections, HBONE to meshed endpoints. A pod the labels put in
	// ambient that the CNI has not enrolled is not: its traffic leaves as
	// it is. A pending pod is: it sends nothing until its node's ztunnel
	// proxies it, then HBONE.
	Ambient bool
	// Bypass, for a pod with a sidecar, says why every app container
	// sends around it (it runs as the proxy's UID or GID, which
	// istio-iptables exempts): its requests then leave as plaintext,
	// whatever istiod gives the proxy. BypassSome names the containers
	// that do when others do not: which container sends the failing
	// requests is not known.
	Bypass     string
	BypassSome []string
	// Ports are the caller pod's named container ports (a Service's named
	// targetPort lands on one); nil when the pod is not known.
	Ports map[string]int32
	// Network is the network its proxy tells istiod it is on
	// (ISTIO_META_NETWORK, which the injector sets; istiod reads nothing
	// else for a proxy), "" for none. NetworkUnknown says why it is not
	// known (not a known pod).
	Network, NetworkUnknown string
}

// CallerFromPod is the caller a pod is.
func CallerFromPod(p *corev1.Pod) Caller {
	c := callerFromPod(p)
	d := DataPlaneOf(p, nil)
	c.Ambient = !c.Sidecar && (d.Enrolled() || d.Pending())
	return c
}

func callerFromPod(p *corev1.Pod) Caller {
	labels := p.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	gateway, _ := GatewayPod(p)
	c := Caller{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Labels: labels, Sidecar: PodSidecar(p) != SidecarNone, Gateway: gateway, Ports: map[string]int32{}}
	c.Network, c.NetworkUnknown = proxyNetwork(p)
	for _, ct := range p.Spec.Containers {
		for _, cp := range ct.Ports {
			if cp.Name != "" {
				c.Ports[cp.Name] = cp.ContainerPort
			}
		}
	}
	if !gateway {
		if bypassing, all := SidecarBypass(p); all {
			c.Bypass = strings.Join(bypassing, "; ")
		} else {
			c.BypassSome = bypassing
		}
	}
	return c
}

// MeshedCallerIn is "some meshed pod in namespace ns": what a triage assumes
// when it does not know who sees the 503s.
func MeshedCallerIn(ns string) Caller {
	return Caller{Namespace: ns, Sidecar: true, NetworkUnknown: "the caller is not a known pod"}
}

func (c Caller) String() string {
	switch {
	case c.Name != "":
		return c.Namespace + "/" + c.Name
	case c.Sidecar:
		return "a meshed pod in " + c.Namespace
	}
	return "a pod without sidecar in " + c.Namespace
}

// labelsKnown reports whether workload-selected rules can be judged.
func (c Caller) labelsKnown() bool { return c.Labels != nil }
