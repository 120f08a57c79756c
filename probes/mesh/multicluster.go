package mesh

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"istio.io/api/annotation"
	"istio.io/api/label"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// ClusterRead is what a triage read, in one cluster of a multi-cluster
// mesh, of what istiod's registry for that cluster holds: the target
// Service's EndpointSlices and pods (the same namespace and name in every
// cluster: namespace sameness), the cluster's control-plane namespace
// (its topology.istio.io/network label is the network of pods that name
// none) and its Services labelled with a network (network gateways).
// Each "Unknown" says why a part could not be read: it is then not known,
// never absent.
type ClusterRead struct {
	// Context is the kubeconfig context it was read through: what every
	// endpoint and gateway of it names in the evidence.
	Context string
	// Local is the current context's cluster, the caller's.
	Local bool
	// ClusterID is istiod's ID for the cluster, as its injected pods name
	// it (ISTIO_META_CLUSTER_ID); "" when no pod said (ClusterIDUnknown).
	ClusterID        string
	ClusterIDUnknown string

	// Slices are the target Service's EndpointSlices there; SlicesUnknown
	// says why they could not be read (the whole cluster not read).
	Slices        []discoveryv1.EndpointSlice
	SlicesUnknown string
	// Pods are the pods of the endpoints, by name; PodsUnknown why some
	// could not be read.
	Pods        map[string]*corev1.Pod
	PodsUnknown string

	// SystemNamespace is the control-plane namespace; nil with no
	// SystemNamespaceUnknown when the cluster has none.
	SystemNamespace        *corev1.Namespace
	SystemNamespaceUnknown string

	GatewayServices []*corev1.Service
	GatewaysUnknown string
}

// What a sidecar caller gets for an endpoint (EndpointsByNetworkFilter).
const (
	GetsDirect    = "direct"
	GetsGateway   = "gateway"
	GetsDropped   = "dropped"
	GetsUndecided = "undecided"
)

// ClusterEndpoint is one endpoint address of the target in one cluster,
// with the network istiod gives it and what a sidecar caller in the
// current cluster gets for it.
type ClusterEndpoint struct {
	Context, ClusterID string
	Local              bool
	Address            string
	// Ports are the endpoint's ports by the slice's port name (the
	// Service port's name), as its EndpointSlice lists them.
	Ports map[string]int32
	// Zone is the slice's zone of the endpoint, "" when it names none.
	Zone  string
	Pod   string
	Ready bool
	// TLSMode is its pod's security.istio.io/tlsMode label, the EDS
	// tlsMode istiod sends ("" when the pod names none or was not read).
	TLSMode string
	// Network is the endpoint's network; NetworkFrom says which of
	// istiod's sources gave it ("" when it is not known).
	Network, NetworkFrom string
	Gets                 string
	// Via are the gateways it is reached through (Gets == GetsGateway).
	Via []NetworkGateway
	Why string
	// AddresslessGateway names the gateway Service of its network that has
	// the gateway port but no address, when that is why it is undecided:
	// no gateway if istiod read it so, its old gateway if it was a working
	// one changed in place (only networkz says which).
	AddresslessGateway string
}

func (e ClusterEndpoint) String() string {
	s := e.Context + ": " + e.Address
	if e.Pod != "" {
		s += " (pod " + e.Pod + ")"
	}
	return s
}

// MultiCluster is the model's answer for a Service with endpoints in
// several clusters: its endpoints per cluster and network, and the
// network gateways istiod knows across them.
type MultiCluster struct {
	Endpoints []ClusterEndpoint
	Gateways  []NetworkGateway
	// Unread lists the clusters whose endpoints were not read, with why:
	// their endpoints are undecided, never absent.
	Unread []string
	// Unknown lists what else could not be read.
	Unknown []string
}

// MultiClusterEndpoints computes, as istiod does for a sidecar caller,
// what the caller gets for each endpoint of the target in every cluster
// read: the endpoint's network (its pod's topology.istio.io/network
// label, else the label of that cluster's control-plane namespace, else
// meshNetworks' fromRegistry for its cluster ID or fromCidr for its
// address, else none), and direct, through which gateway ADDR:PORT, or
// dropped, by the rules of splitHorizon (pilot's EndpointsByNetworkFilter):
// gateways are istiod's NetworkManager's, merged from every cluster's
// labelled Services and meshNetworks.
//
// The endpoint's EDS tlsMode is taken from its pod's security.istio.io/
// tlsMode label; a DestinationRule that changes it is not applied here.
func MultiClusterEndpoints(caller Caller, meshNetworks *meshv1alpha1.MeshNetworks, clusters []ClusterRead) MultiCluster {
	var out MultiCluster
	for _, c := range clusters {
		gws, unknown := clusterGateways(c)
		out.Gateways = append(out.Gateways, gws...)
		out.Unknown = append(out.Unknown, unknown...)
	}
	if meshNetworks != nil {
		for _, nw := range sortedKeysOfMap(meshNetworks.GetNetworks()) {
			for _, g := range meshNetworks.GetNetworks()[nw].GetGateways() {
				if addr := g.GetAddress(); addr != "" {
					out.Gateways = append(out.Gateways, NetworkGateway{Network: nw, Address: addr, Port: int32(g.GetPort()), From: "meshNetworks",
						Unresolved: net.ParseIP(addr) == nil})
				} else {
					out.Unknown = append(out.Unknown, "meshNetworks network "+nw+" names its gateway by registry Service "+g.GetRegistryServiceName()+", not modelled")
				}
			}
		}
	}
	byNetwork := map[string][]NetworkGateway{}
	for _, g := range out.Gateways {
		if g.Port != 0 { // a sidecar cannot use an HBONE-only gateway
			byNetwork[g.Network] = append(byNetwork[g.Network], g)
		}
	}
	multiNetwork := len(out.Gateways) > 0
	addressless := map[string]string{} // network → its gateway Service without an address
	for _, c := range clusters {
		for _, svc := range c.GatewayServices {
			if why, portMissing := GatewayServiceUnusable(svc); why != "" && !portMissing && svc.Labels[LabelNetwork] != "" {
				addressless[svc.Labels[LabelNetwork]] = c.Context + ": Service " + svc.Namespace + "/" + svc.Name
			}
		}
	}
	for _, c := range clusters {
		if c.SlicesUnknown != "" {
			out.Unread = append(out.Unread, c.Context+": "+c.SlicesUnknown)
			continue
		}
		for _, e := range clusterAddresses(c) {
			e.Network, e.NetworkFrom, e.Why = endpointNetwork(c, meshNetworks, e)
			e.Gets, e.Via, e.Why = networkDecision(caller, e, multiNetwork, out.Unknown, byNetwork, e.Why, c.ClusterIDUnknown)
			if svc := addressless[e.Network]; svc != "" && e.Gets == GetsDirect && e.Network != "" && e.Network != caller.Network {
				// istiod's addOrUpdateService re-reads a Service's gateways
				// only when it has an external address (or is a NodePort
				// with traffic.istio.io/nodeSelector); a working gateway
				// changed in place to one without keeps its old gateway.
				e.Gets, e.AddresslessGateway = GetsUndecided, svc
				e.Why = "on network " + e.Network + ", whose gateway " + svc + " has no address: no gateway if istiod read it so, but istiod keeps the old gateway of one changed in place to it (only its networkz says which)"
			}
			out.Endpoints = append(out.Endpoints, withTLS(e, c.Pods[e.Pod]))
		}
	}
	return out
}

// clusterGateways are the network gateways istiod finds in one cluster's
// labelled Services, in that cluster.
func clusterGateways(c ClusterRead) ([]NetworkGateway, []string) {
	if c.GatewaysUnknown != "" {
		return nil, []string{c.Context + ": the network gateways: " + c.GatewaysUnknown}
	}
	cfg := Config{NetworkGatewaysRead: true, NetworkGatewayServices: c.GatewayServices, ClusterID: c.ClusterID}
	gws, unknown := cfg.NetworkGateways()
	for i := range gws {
		gws[i].From = c.Context + ": " + gws[i].From
		if c.ClusterID == "" {
			gws[i].Cluster = ""
		}
	}
	for i := range unknown {
		unknown[i] = c.Context + ": " + unknown[i]
	}
	return gws, unknown
}

// clusterAddresses are the endpoint addresses of one cluster's slices,
// each with its pod (by targetRef) and readiness.
func clusterAddresses(c ClusterRead) []ClusterEndpoint {
	seen := map[string]bool{}
	var out []ClusterEndpoint
	for _, s := range c.Slices {
		for _, ep := range s.Endpoints {
			for _, addr := range ep.Addresses {
				if seen[addr] {
					continue
				}
				seen[addr] = true
				e := ClusterEndpoint{Context: c.Context, ClusterID: c.ClusterID, Local: c.Local, Address: addr,
					Ready: ep.Conditions.Ready == nil || *ep.Conditions.Ready, Ports: slicePorts(s)}
				if ep.Zone != nil {
					e.Zone = *ep.Zone
				}
				if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
					e.Pod = ep.TargetRef.Name
				}
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// endpointNetwork is istiod's network for an endpoint of cluster c; why
// is set when it cannot be told.
func endpointNetwork(c ClusterRead, mn *meshv1alpha1.MeshNetworks, e ClusterEndpoint) (network, from, why string) {
	if e.Pod != "" {
		pod := c.Pods[e.Pod]
		if pod == nil {
			if c.PodsUnknown != "" {
				return "", "", "its pod " + e.Pod + " was not read (" + c.PodsUnknown + "), and a pod's own label names its network first"
			}
			return "", "", "its pod " + e.Pod + " is not found: istiod holds the endpoint back until it sees the pod"
		}
		if nw := pod.Labels[LabelNetwork]; nw != "" {
			return nw, "pod label", ""
		}
	}
	switch {
	case c.SystemNamespace != nil:
		if nw := c.SystemNamespace.Labels[LabelNetwork]; nw != "" {
			return nw, "namespace " + c.SystemNamespace.Name + " label", ""
		}
	case c.SystemNamespaceUnknown != "":
		return "", "", "the control-plane namespace, whose label names the network of pods that name none, was not read (" + c.SystemNamespaceUnknown + ")"
	}
	for _, name := range sortedKeysOfMap(mn.GetNetworks()) {
		for _, ep := range mn.GetNetworks()[name].GetEndpoints() {
			if reg := ep.GetFromRegistry(); reg != "" {
				if c.ClusterID == "" {
					return "", "", "meshNetworks network " + name + " takes registry " + reg + ", and this cluster's ID is not known (" + c.ClusterIDUnknown + ")"
				}
				if reg == c.ClusterID {
					return name, "meshNetworks fromRegistry " + reg, ""
				}
			}
			if cidr := ep.GetFromCidr(); cidr != "" {
				if _, n, err := net.ParseCIDR(cidr); err == nil && n.Contains(net.ParseIP(e.Address)) {
					return name, "meshNetworks fromCidr " + cidr, ""
				}
			}
		}
	}
	return "", "none", ""
}

// networkDecision is splitHorizon's rule for one endpoint.
func networkDecision(caller Caller, e ClusterEndpoint, multiNetwork bool, unknown []string, byNetwork map[string][]NetworkGateway, networkWhy, clusterIDUnknown string) (string, []NetworkGateway, string) {
	nw := e.Network
	switch {
	case networkWhy != "":
		return GetsUndecided, nil, "its network is not known: " + networkWhy
	case !multiNetwork && len(unknown) == 0:
		return GetsDirect, nil, "no network gateway anywhere: istiod sends every endpoint as it is"
	}
	remote := nw != "" && nw != caller.Network
	switch {
	case !remote && caller.Network != "":
		return GetsDirect, nil, "on the caller's network " + caller.Network
	case remote && caller.NetworkUnknown != "":
		return GetsUndecided, nil, "on network " + nw + "; the caller's network is not known (" + caller.NetworkUnknown + ")"
	case nw == "":
		return GetsDirect, nil, "on no network: on every proxy's network"
	case len(unknown) > 0:
		return GetsUndecided, nil, "on network " + nw + ", not the caller's: whether istiod sends it through a gateway is not known (" + strings.Join(unknown, "; ") + ")"
	}
	through := byNetwork[nw]
	if e.ClusterID != "" {
		// GatewaysForNetworkAndCluster before GatewaysForNetwork.
		var same []NetworkGateway
		for _, g := range through {
			if g.Cluster == e.ClusterID {
				same = append(same, g)
			}
		}
		if len(same) > 0 {
			through = same
		}
	} else if clustersOf(through) > 1 {
		return GetsUndecided, nil, "on network " + nw + ", whose gateways are in several clusters; the ID of cluster " + e.Context + " is not known (" + clusterIDUnknown + ")"
	}
	if len(through) == 0 {
		return GetsDirect, nil, "on network " + nw + ", which has no gateway istiod can use: istiod sends the pod IP, which the caller's network may not route"
	}
	if !e.Ready {
		return GetsDropped, nil, "not ready: a gateway stands only for serving endpoints"
	}
	if e.Pod == "" {
		return GetsUndecided, nil, "no pod behind the address: its tlsMode is not known"
	}
	var resolved []NetworkGateway
	for _, g := range through {
		if g.Unresolved {
			return GetsUndecided, nil, "through gateway " + g.String() + ", a hostname istiod resolves with its own DNS"
		}
		resolved = append(resolved, g)
	}
	return GetsGateway, resolved, "on network " + nw + ", not the caller's (" + orNone(caller.Network) + "): through its gateway"
}

// withTLS drops, from what networkDecision sends through a gateway, the
// endpoints that are not mTLS: the gateway routes by the mTLS SNI.
func withTLS(e ClusterEndpoint, pod *corev1.Pod) ClusterEndpoint {
	if pod != nil {
		e.TLSMode = pod.Labels[labelTLSMode]
	}
	if e.Gets != GetsGateway || pod == nil {
		return e
	}
	if pod.Labels[labelTLSMode] != "istio" {
		e.Gets, e.Via, e.Why = GetsDropped, nil, "on network "+e.Network+" behind a gateway, and not mTLS (its pod has no "+labelTLSMode+"=istio): the gateway routes only mTLS"
	}
	return e
}

func clustersOf(gws []NetworkGateway) int {
	var ids []string
	for _, g := range gws {
		if !slices.Contains(ids, g.Cluster) {
			ids = append(ids, g.Cluster)
		}
	}
	return len(ids)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ProxyClusterID is the cluster ID an injected pod's proxy names to
// istiod (ISTIO_META_CLUSTER_ID of its istio-proxy, which the injector
// writes from values.global.multiCluster.clusterName); "" when the pod has
// no proxy or the variable is not a literal.
func ProxyClusterID(p *corev1.Pod) string {
	proxy, ok := ProxyContainerSpec(p)
	if !ok {
		return ""
	}
	for _, e := range proxy.Env {
		if e.Name == "ISTIO_META_CLUSTER_ID" && e.ValueFrom == nil {
			return e.Value
		}
	}
	return ""
}

// ClusterIDOfPods is the cluster ID the injected pods of a cluster agree
// on; unknown says why there is none (no injected pod read, or pods that
// disagree).
func ClusterIDOfPods(pods []*corev1.Pod) (id, unknown string) {
	var ids []string
	for _, p := range pods {
		if v := ProxyClusterID(p); v != "" && !slices.Contains(ids, v) {
			ids = append(ids, v)
		}
	}
	switch len(ids) {
	case 0:
		return "", "no injected pod read there names ISTIO_META_CLUSTER_ID"
	case 1:
		return ids[0], ""
	}
	sort.Strings(ids)
	return "", "its injected pods name different cluster IDs: " + strings.Join(ids, ", ")
}

// Kinds of NetworkDisagreement.
const (
	// NetworkLabelMissing: a remote cluster's endpoints are on no network
	// while its gateway Service names one.
	NetworkLabelMissing = "label-missing"
	// NetworkLabelDisagrees: they are on a network other than the one its
	// gateway Service names.
	NetworkLabelDisagrees = "label-disagrees"
	// GatewayUnusable: the gateway Service of their network is no gateway
	// to istiod (no gateway port, no address).
	GatewayUnusable = "gateway-unusable"
	// GatewayHostname: a network gateway known only by a hostname.
	GatewayHostname = "gateway-hostname"
)

// NetworkDisagreement is where a remote cluster's objects say one thing
// of its network and istiod makes another of them, for endpoints that
// reach a sidecar caller of the current cluster as pod IPs: the objects
// as read, for the fix.
type NetworkDisagreement struct {
	Kind    string
	Context string
	// Namespace is the cluster's control-plane namespace as read.
	Namespace *corev1.Namespace
	// Gateway is the network-labelled Service, GatewayNetwork its label.
	Gateway        *corev1.Service
	GatewayNetwork string
	// EndpointNetwork is the network istiod gives the endpoints (and
	// where from); Endpoints are those the caller gets as pod IPs.
	EndpointNetwork, EndpointNetworkFrom string
	Endpoints                            []ClusterEndpoint
	// Why says why a gateway is unusable; PortMissing when it lacks the
	// gateway port (and 15008).
	Why         string
	PortMissing bool
	// Hostname is a hostname gateway's address.
	Hostname string
}

// Disagreements are the NetworkDisagreements of the remote clusters read.
func (mc MultiCluster) Disagreements(caller Caller, reads []ClusterRead) []NetworkDisagreement {
	var out []NetworkDisagreement
	usable := map[string]bool{} // networks with a gateway a sidecar can use
	for _, g := range mc.Gateways {
		if g.Port != 0 {
			usable[g.Network] = true
		}
	}
	for _, cr := range reads {
		if cr.Local || cr.SlicesUnknown != "" || caller.NetworkUnknown != "" {
			continue
		}
		direct := map[string][]ClusterEndpoint{} // by network
		addressless := map[string][]ClusterEndpoint{}
		for _, e := range mc.Endpoints {
			switch {
			case e.Context != cr.Context:
			case e.Gets == GetsDirect:
				direct[e.Network] = append(direct[e.Network], e)
			case e.AddresslessGateway != "":
				addressless[e.Network] = append(addressless[e.Network], e)
			}
		}
		for _, svc := range cr.GatewayServices {
			nw := svc.Labels[LabelNetwork]
			if nw == "" || nw == caller.Network {
				continue
			}
			base := NetworkDisagreement{Context: cr.Context, Namespace: cr.SystemNamespace, Gateway: svc, GatewayNetwork: nw}
			if eps := direct[""]; len(eps) > 0 {
				d := base
				d.Kind, d.Endpoints, d.EndpointNetworkFrom = NetworkLabelMissing, eps, eps[0].NetworkFrom
				out = append(out, d)
			}
			for _, other := range sortedKeysOfMap(direct) {
				if other == "" || other == nw {
					continue
				}
				d := base
				d.Kind, d.Endpoints, d.EndpointNetwork, d.EndpointNetworkFrom = NetworkLabelDisagrees, direct[other], other, direct[other][0].NetworkFrom
				out = append(out, d)
			}
			if why, portMissing := GatewayServiceUnusable(svc); why != "" && !usable[nw] {
				// Endpoints left undecided for an addressless gateway are its
				// too: pod IPs unless istiod kept the gateway (networkz).
				if eps := slices.Concat(direct[nw], addressless[nw]); len(eps) > 0 {
					if len(addressless[nw]) > 0 {
						why += "; had it been a working gateway changed in place, istiod would keep its old one (its networkz says)"
					}
					d := base
					d.Kind, d.Endpoints, d.EndpointNetwork, d.Why, d.PortMissing = GatewayUnusable, eps, nw, why, portMissing
					out = append(out, d)
				}
			}
		}
	}
	for _, g := range mc.Gateways {
		if g.Unresolved && g.Port != 0 {
			out = append(out, NetworkDisagreement{Kind: GatewayHostname, GatewayNetwork: g.Network, Hostname: g.Address, Why: g.From})
		}
	}
	return out
}

// GatewayServiceUnusable says why istiod takes a network-labelled Service
// for no gateway (getGatewayDetails: neither the gateway port, its
// networking.istio.io/gatewayPort label's or 15443, nor 15008;
// ClusterExternalAddresses: no address), "" when it does not.
func GatewayServiceUnusable(svc *corev1.Service) (why string, portMissing bool) {
	if _, ok := gatewayPorts(svc); !ok {
		port := DefaultNetworkGatewayPort
		if v := svc.Labels[label.NetworkingGatewayPort.Name]; v != "" {
			port, _ = strconv.Atoi(v)
		}
		return fmt.Sprintf("no port %d (nor %d): istiod logs \"labeled as gateway, but does not listen\"", port, DefaultNetworkGatewayHBONEPort), true
	}
	if svc.Spec.Type == corev1.ServiceTypeNodePort {
		if _, ok := svc.Annotations[annotation.TrafficNodeSelector.Name]; !ok {
			return "a NodePort Service without " + annotation.TrafficNodeSelector.Name + ": istiod gives it no address", false
		}
		return "", false
	}
	if len(externalAddresses(svc)) == 0 {
		return "no address: no load balancer ingress (pending?) and no externalIPs", false
	}
	return "", false
}
