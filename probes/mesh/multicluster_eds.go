package mesh

import (
	"fmt"
	"sort"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// CallerEndpoint is one endpoint of the target's EDS cluster as istiod
// sends it to a sidecar caller: a pod address sent direct, or a network
// gateway standing for the remote mTLS endpoints behind it.
type CallerEndpoint struct {
	Address string
	Port    int32
	// Weight is the LoadBalancingWeight istiod sends; 0 with
	// WeightUnknown saying why it cannot be told.
	Weight        uint32
	WeightUnknown string
	// TLSMode is the endpoint's security.istio.io/tlsMode ("istio" for a
	// gateway's, "" when its pod names none).
	TLSMode string
	// Cluster is the cluster ID istiod writes last in istio.workload:
	// the pod's cluster, or the gateway's ("" for a meshNetworks gateway,
	// which has none); ClusterKnown is false when the model cannot say
	// it (the cluster's ID not known).
	Cluster      string
	ClusterKnown bool
	// Gateway is the gateway this endpoint is (nil for a pod sent direct);
	// Behind the endpoints it stands for.
	Gateway *NetworkGateway
	Behind  []ClusterEndpoint
}

func (e CallerEndpoint) String() string {
	return fmt.Sprintf("%s:%d", e.Address, e.Port)
}

// CallerEndpoints is the EDS a sidecar caller gets for the target's port
// portName (the Service port's name, as the EndpointSlices name it), as
// pilot's EndpointsByNetworkFilter builds it: each endpoint sent direct
// with its own address, the remote mTLS endpoints behind gateways folded
// into one endpoint per gateway whose weight sums theirs, split evenly
// among their network's gateways. Every weight is scaled first by istiod's
// GetLBWeightScaleFactor: the lcm of the number of gateways per network
// and per network and cluster (1 without gateways); a Kubernetes
// endpoint's own weight is 1. Undecided endpoints are not in it: what
// istiod sends for them is not known, and undecided lists them.
func (mc MultiCluster) CallerEndpoints(portName string) (eps []CallerEndpoint, undecided []ClusterEndpoint) {
	scale, scaleUnknown := mc.weightScale()
	byGateway := map[NetworkGateway]*CallerEndpoint{}
	var order []NetworkGateway
	zones := map[string]bool{}
	for _, e := range mc.Endpoints {
		switch e.Gets {
		case GetsUndecided:
			undecided = append(undecided, e)
		case GetsDirect:
			port, ok := e.Ports[portName]
			if !ok {
				undecided = append(undecided, e)
				continue
			}
			eps = append(eps, CallerEndpoint{Address: e.Address, Port: port, Weight: scale, WeightUnknown: scaleUnknown,
				TLSMode: e.TLSMode, Cluster: e.ClusterID, ClusterKnown: e.ClusterID != ""})
		case GetsGateway:
			zones[e.Zone] = true
			for _, g := range e.Via {
				ce := byGateway[g]
				if ce == nil {
					gw := g
					ce = &CallerEndpoint{Address: g.Address, Port: g.Port, TLSMode: "istio", Gateway: &gw,
						Cluster: g.Cluster, ClusterKnown: g.Cluster != "" || g.From == "meshNetworks", WeightUnknown: scaleUnknown}
					byGateway[g], order = ce, append(order, g)
				}
				ce.Behind = append(ce.Behind, e)
				if scaleUnknown == "" {
					ce.Weight += scale / uint32(len(e.Via))
				}
			}
		}
	}
	for _, g := range order {
		ce := byGateway[g]
		if len(zones) > 1 {
			// istiod folds per locality: one gateway endpoint per
			// locality, each with the weight of its own endpoints.
			ce.Weight, ce.WeightUnknown = 0, "the endpoints behind it are in several zones, and istiod sums them per locality"
		}
		eps = append(eps, *ce)
	}
	sort.SliceStable(eps, func(i, j int) bool { return eps[i].String() < eps[j].String() })
	return eps, undecided
}

// weightScale is istiod's GetLBWeightScaleFactor over the gateways it
// resolved: the lcm of their numbers per network and per network and
// cluster; unknown when a gateway's hostname (resolved or not by istiod's
// DNS) or a gateway's cluster is not known.
func (mc MultiCluster) weightScale() (uint32, string) {
	byNetwork := map[string]int{}
	byNetworkAndCluster := map[[2]string]int{}
	for _, g := range mc.Gateways {
		if g.Unresolved {
			return 0, "gateway " + g.String() + " is a hostname: whether istiod resolved it, and so how many gateways it scales by, is not known"
		}
		if g.Cluster == "" && g.From != "meshNetworks" && len(mc.Gateways) > 1 {
			return 0, "the cluster of gateway " + g.String() + " is not known, and istiod scales by the gateways per network and cluster"
		}
		byNetwork[g.Network]++
		byNetworkAndCluster[[2]string{g.Network, g.Cluster}]++
	}
	scale := 1
	for _, n := range byNetwork {
		scale = lcm(scale, n)
	}
	for _, n := range byNetworkAndCluster {
		scale = lcm(scale, n)
	}
	return uint32(scale), ""
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// slicePorts are an EndpointSlice's ports by name.
func slicePorts(s discoveryv1.EndpointSlice) map[string]int32 {
	out := map[string]int32{}
	for _, p := range s.Ports {
		if p.Port == nil {
			continue
		}
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		out[name] = *p.Port
	}
	return out
}
