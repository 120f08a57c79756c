package mesh

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"istio.io/api/annotation"
	"istio.io/api/label"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Ports istiod assumes for a network's east-west gateway (pilot's
// DefaultNetworkGatewayPort and DefaultNetworkGatewayHBONEPort).
const (
	DefaultNetworkGatewayPort      = 15443
	DefaultNetworkGatewayHBONEPort = 15008
)

// NetworkGateway is an address istiod gives proxies of other networks for
// the endpoints of Network (split-horizon EDS): an east-west gateway.
type NetworkGateway struct {
	Network, Cluster string
	Address          string
	// Port is the gateway's mTLS (AUTO_PASSTHROUGH) port, 0 when it only
	// tunnels HBONE; HBONEPort its HBONE port, 0 for none.
	Port, HBONEPort int32
	// From names the object istiod took it from.
	From string
	// Unresolved: the address is a hostname (a load balancer's), which
	// istiod resolves with its own DNS: whether it did is not known here.
	Unresolved bool
}

func (g NetworkGateway) String() string {
	return fmt.Sprintf("%s:%d (network %s, %s)", g.Address, g.Port, g.Network, g.From)
}

// ParseMeshNetworks reads the meshNetworks key of the ConfigMap istio.
func ParseMeshNetworks(text string) (*meshv1alpha1.MeshNetworks, error) {
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("meshNetworks is not YAML: %w", err)
	}
	mn := &meshv1alpha1.MeshNetworks{}
	if string(js) != "null" {
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(js, mn); err != nil {
			return nil, fmt.Errorf("meshNetworks: %w", err)
		}
	}
	return mn, nil
}

// NetworkGateways are the network gateways istiod knows (NetworkManager):
// every Service labelled topology.istio.io/network that has the gateway
// port (label networking.istio.io/gatewayPort, default 15443) or 15008,
// at its load balancer's and external addresses (getGatewayDetails,
// ClusterExternalAddresses), and the gateways of meshNetworks. unknown
// says why the list may lack some: the Services or meshNetworks were not
// all read, or a NodePort gateway whose node addresses are not modelled.
func (c *Config) NetworkGateways() (gws []NetworkGateway, unknown []string) {
	services := c.NetworkGatewayServices
	switch {
	case c.AllServices:
		services = nil
		for _, name := range sortedServiceHosts(c.Services) {
			if svc := c.Services[name].Service; svc != nil {
				services = append(services, svc)
			}
		}
	case !c.NetworkGatewaysRead:
		why := c.NetworkGatewaysUnknown
		if why == "" {
			why = "not read"
		}
		unknown = append(unknown, "the Services labelled "+label.TopologyNetwork.Name+" (network gateways): "+why)
	}
	if c.Mesh.Found && !c.Mesh.NetworksRead {
		unknown = append(unknown, "the mesh's meshNetworks were not read")
	}
	clusterID := c.ClusterID
	if clusterID == "" {
		clusterID = DefaultClusterID
	}
	for _, svc := range services {
		if svc.Labels[label.TopologyNetwork.Name] == "" {
			continue
		}
		gw, ok := gatewayPorts(svc)
		if !ok {
			continue // istiod: "labeled as gateway, but does not listen"
		}
		gw.Network, gw.Cluster, gw.From = svc.Labels[label.TopologyNetwork.Name], clusterID, "Service "+svc.Namespace+"/"+svc.Name
		if svc.Spec.Type == corev1.ServiceTypeNodePort {
			if _, ok := svc.Annotations[annotation.TrafficNodeSelector.Name]; ok {
				unknown = append(unknown, gw.From+" is a NodePort gateway: its node addresses are not modelled")
			}
		}
		for _, addr := range externalAddresses(svc) {
			g := gw
			g.Address, g.Unresolved = addr, net.ParseIP(addr) == nil
			gws = append(gws, g)
		}
	}
	if c.Mesh.Networks != nil {
		for _, nw := range sortedKeysOfMap(c.Mesh.Networks.GetNetworks()) {
			for _, g := range c.Mesh.Networks.GetNetworks()[nw].GetGateways() {
				addr := g.GetAddress()
				if addr == "" {
					unknown = append(unknown, "meshNetworks network "+nw+" names its gateway by registry Service "+g.GetRegistryServiceName()+", not modelled")
					continue
				}
				gws = append(gws, NetworkGateway{Network: nw, Address: addr, Port: int32(g.GetPort()), From: "meshNetworks",
					Unresolved: net.ParseIP(addr) == nil})
			}
		}
	}
	return gws, unknown
}

// gatewayPorts reads the gateway ports of a Service labelled with a
// network; ok is false when it has neither.
func gatewayPorts(svc *corev1.Service) (gw NetworkGateway, ok bool) {
	port := int32(DefaultNetworkGatewayPort)
	if v := svc.Labels[label.NetworkingGatewayPort.Name]; v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			port = int32(n)
		}
	}
	for _, p := range svc.Spec.Ports {
		switch p.Port {
		case port:
			gw.Port = port
		case DefaultNetworkGatewayHBONEPort:
			gw.HBONEPort = DefaultNetworkGatewayHBONEPort
		}
	}
	return gw, gw.Port != 0 || gw.HBONEPort != 0
}

// externalAddresses are a Service's addresses as istiod's conversion takes
// them: a LoadBalancer's ingress IPs (else hostnames), then externalIPs.
func externalAddresses(svc *corev1.Service) []string {
	var out []string
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, in := range svc.Status.LoadBalancer.Ingress {
			switch {
			case in.IP != "":
				out = append(out, in.IP)
			case in.Hostname != "":
				out = append(out, in.Hostname)
			}
		}
	}
	return append(out, svc.Spec.ExternalIPs...)
}

// splitHorizon is istiod's EndpointsByNetworkFilter for a proxy caller:
// once any network gateway exists, an endpoint on another network than
// the caller's (a caller without one takes every endpoint with one as
// remote, when its network has a gateway) is reached through that
// network's gateways: it is replaced by one endpoint per gateway, and
// dropped when its EDS tlsMode is not istio (the gateway routes by the
// mTLS SNI). An endpoint on no network, or on a network without a gateway,
// is reached directly. Gateways of unknown reach leave the endpoints they
// would take undecided.
func (c *Config) splitHorizon(caller Caller, cl *Cluster) {
	if !caller.Sidecar || caller.Ambient || len(cl.Endpoints) == 0 {
		return
	}
	gws, unknown := c.NetworkGateways()
	byNetwork := map[string][]NetworkGateway{}
	for _, g := range gws {
		if g.Port != 0 { // a sidecar cannot use an HBONE-only gateway
			byNetwork[g.Network] = append(byNetwork[g.Network], g)
		}
	}
	if len(gws) == 0 && len(unknown) == 0 {
		return // no gateway: every endpoint as it is
	}
	var kept []EndpointTLS
	type via struct {
		gw       NetworkGateway
		locality string
	}
	folded := map[via]EndpointTLS{}
	for _, e := range cl.Endpoints {
		nw := e.Labels[LabelNetwork]
		if slices.Contains(e.LabelsUnknown, LabelNetwork) {
			cl.undecided(e.Endpoint, "endpoint "+e.Address+": its network is not known (istiod's namespace, whose label names it, was not read: "+c.SystemNamespaceUnknown+")")
			continue
		}
		remote := nw != "" && nw != caller.Network
		switch {
		case !remote && caller.Network != "":
			kept = append(kept, e)
			continue
		case remote && caller.NetworkUnknown != "":
			cl.undecided(e.Endpoint, "endpoint "+e.Address+" is on network "+nw+"; the caller's network is not known ("+caller.NetworkUnknown+")")
			continue
		case nw == "":
			kept = append(kept, e)
			continue
		}
		if len(unknown) > 0 {
			cl.undecided(e.Endpoint, "endpoint "+e.Address+" is on network "+nw+", not the caller's: whether istiod sends it through a gateway is not known ("+strings.Join(unknown, "; ")+")")
			continue
		}
		through := byNetwork[nw]
		if len(through) == 0 {
			kept = append(kept, e) // no gateway for its network: direct, even if unroutable
			continue
		}
		if !e.Serving() {
			continue
		}
		if e.TLSMode != "istio" {
			continue // dropped: cross-network traffic needs mTLS
		}
		for _, g := range through {
			if g.Unresolved {
				cl.undecided(e.Endpoint, "endpoint "+e.Address+" goes through gateway "+g.String()+", a hostname istiod resolves with its own DNS")
				continue
			}
			k := via{g, e.Labels[LabelRegion] + "/" + e.Labels[LabelZone] + "/" + e.Labels[LabelSubzone]}
			if _, ok := folded[k]; !ok {
				folded[k] = gatewayEndpoint(e, g)
			}
		}
	}
	keys := make([]via, 0, len(folded))
	for k := range folded {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.gw.Address != b.gw.Address {
			return a.gw.Address < b.gw.Address
		}
		return a.locality < b.locality
	})
	for _, k := range keys {
		kept = append(kept, folded[k])
	}
	cl.Endpoints = kept
}

// gatewayEndpoint is the endpoint istiod writes for a network gateway in
// place of the remote endpoints it stands for: the gateway's address and
// port, tlsMode istio, the telemetry of no workload but the gateway's
// cluster, in the locality of the endpoints.
func gatewayEndpoint(e EndpointTLS, g NetworkGateway) EndpointTLS {
	out := e
	out.Address, out.Port, out.Pod, out.PodUnknown, out.PodExpected = g.Address, g.Port, "", "", false
	out.Namespace, out.Workload = "", ""
	out.Via = &g
	out.Labels = map[string]string{LabelCluster: g.Cluster}
	for _, k := range []string{LabelRegion, LabelZone, LabelSubzone} {
		if v := e.Labels[k]; v != "" {
			out.Labels[k] = v
		}
	}
	return out
}

// proxyNetwork is the network a pod's proxy names to istiod: its
// ISTIO_META_NETWORK variable (the pod's label is not read by istiod for
// a proxy). unknown says why it cannot be told (a value from elsewhere
// than a literal or the pod's own labels).
func proxyNetwork(p *corev1.Pod) (network, unknown string) {
	proxy, ok := ProxyContainerSpec(p)
	if !ok {
		return "", ""
	}
	for _, e := range proxy.Env {
		if e.Name != "ISTIO_META_NETWORK" {
			continue
		}
		if e.ValueFrom == nil {
			return e.Value, ""
		}
		if f := e.ValueFrom.FieldRef; f != nil && strings.HasPrefix(f.FieldPath, "metadata.labels['") {
			return p.Labels[strings.TrimSuffix(strings.TrimPrefix(f.FieldPath, "metadata.labels['"), "']")], ""
		}
		return "", "its ISTIO_META_NETWORK comes from " + describeEnvSource(e)
	}
	return "", ""
}

func describeEnvSource(e corev1.EnvVar) string {
	switch {
	case e.ValueFrom.FieldRef != nil:
		return "field " + e.ValueFrom.FieldRef.FieldPath
	case e.ValueFrom.ConfigMapKeyRef != nil:
		return "ConfigMap " + e.ValueFrom.ConfigMapKeyRef.Name
	case e.ValueFrom.SecretKeyRef != nil:
		return "Secret " + e.ValueFrom.SecretKeyRef.Name
	}
	return "a reference"
}
