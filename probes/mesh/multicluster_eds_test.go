package mesh

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func withPort(s discoveryv1.EndpointSlice, name string, port int32) discoveryv1.EndpointSlice {
	s.Ports = []discoveryv1.EndpointPort{{Name: &name, Port: &port}}
	return s
}

func describeCallerEndpoints(eps []CallerEndpoint) []string {
	var out []string
	for _, e := range eps {
		cl := "?"
		if e.ClusterKnown {
			cl = e.Cluster
		}
		path := "direct"
		if e.Gateway != nil {
			path = "gateway"
		}
		out = append(out, fmt.Sprintf("%s weight=%d tlsMode=%s cluster=%s %s", e, e.Weight, e.TLSMode, cl, path))
	}
	return out
}

// twoClusters is the lab's multicluster scenario: the caller and
// orders-c1 on network1 in cluster Kubernetes; orders-c2 and orders-c2b
// (mTLS) and orders-c2-plain on network2 in cluster2, behind gws.
func twoClusters(gws ...*corev1.Service) []ClusterRead {
	return []ClusterRead{
		{Context: "c1", Local: true, ClusterID: "Kubernetes", SystemNamespace: mcNamespace("network1"),
			Slices: []discoveryv1.EndpointSlice{withPort(mcSlice("10.244.1.10", "orders-c1"), "http", 8080)},
			Pods:   pods(mcPod("orders-c1", "", "istio", "Kubernetes"))},
		{Context: "c2", ClusterID: "cluster2", SystemNamespace: mcNamespace("network2"), GatewayServices: gws,
			Slices: []discoveryv1.EndpointSlice{withPort(mcSlice("10.245.1.10", "orders-c2", "10.245.1.11", "orders-c2-plain", "10.245.1.12", "orders-c2b"), "http", 8080)},
			Pods:   pods(mcPod("orders-c2", "", "istio", "cluster2"), mcPod("orders-c2-plain", "", "", ""), mcPod("orders-c2b", "", "istio", "cluster2"))},
	}
}

// A gateway endpoint carries the summed weight of the mTLS endpoints it
// stands for (what istiod pushed in the lab: 172.18.2.10:15443 weight 2),
// and its istio.workload names the gateway's cluster.
func TestCallerEndpointsGatewayWeight(t *testing.T) {
	caller := Caller{Network: "network1"}
	mc := MultiClusterEndpoints(caller, nil, twoClusters(mcGateway("network2", "172.18.2.10", 15443)))
	eps, undecided := mc.CallerEndpoints("http")
	want := []string{
		"10.244.1.10:8080 weight=1 tlsMode=istio cluster=Kubernetes direct",
		"172.18.2.10:15443 weight=2 tlsMode=istio cluster=cluster2 gateway",
	}
	if got := describeCallerEndpoints(eps); !slices.Equal(got, want) || len(undecided) != 0 {
		t.Errorf("got %q, undecided %v; want %q", got, undecided, want)
	}
}

// With no gateway anywhere every endpoint goes direct with weight 1, the
// plaintext one too, and each names its own cluster.
func TestCallerEndpointsFlat(t *testing.T) {
	reads := twoClusters()
	reads[0].SystemNamespace, reads[1].SystemNamespace = nil, nil
	mc := MultiClusterEndpoints(Caller{Network: "network1"}, nil, reads)
	eps, _ := mc.CallerEndpoints("http")
	want := []string{
		"10.244.1.10:8080 weight=1 tlsMode=istio cluster=Kubernetes direct",
		"10.245.1.10:8080 weight=1 tlsMode=istio cluster=cluster2 direct",
		"10.245.1.11:8080 weight=1 tlsMode= cluster=cluster2 direct",
		"10.245.1.12:8080 weight=1 tlsMode=istio cluster=cluster2 direct",
	}
	if got := describeCallerEndpoints(eps); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Two gateways for network2: istiod scales every weight by 2 (the lcm of
// gateways per network and per network and cluster) and splits each
// remote endpoint's weight between them.
func TestCallerEndpointsTwoGatewaysScale(t *testing.T) {
	second := mcGateway("network2", "172.18.2.11", 15443)
	second.Name = "istio-eastwestgateway-2"
	mc := MultiClusterEndpoints(Caller{Network: "network1"}, nil, twoClusters(mcGateway("network2", "172.18.2.10", 15443), second))
	eps, _ := mc.CallerEndpoints("http")
	want := []string{
		"10.244.1.10:8080 weight=2 tlsMode=istio cluster=Kubernetes direct",
		"172.18.2.10:15443 weight=2 tlsMode=istio cluster=cluster2 gateway",
		"172.18.2.11:15443 weight=2 tlsMode=istio cluster=cluster2 gateway",
	}
	if got := describeCallerEndpoints(eps); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A meshNetworks gateway has no cluster: istio.workload ";;;;" (the
// lab's static-gateway step), and the model says so rather than unknown.
func TestCallerEndpointsMeshNetworksGateway(t *testing.T) {
	mn := &meshv1alpha1.MeshNetworks{Networks: map[string]*meshv1alpha1.Network{"network2": {
		Endpoints: []*meshv1alpha1.Network_NetworkEndpoints{{Ne: &meshv1alpha1.Network_NetworkEndpoints_FromRegistry{FromRegistry: "cluster2"}}},
		Gateways:  []*meshv1alpha1.Network_IstioNetworkGateway{{Gw: &meshv1alpha1.Network_IstioNetworkGateway_Address{Address: "172.18.2.20"}, Port: 15443}},
	}}}
	mc := MultiClusterEndpoints(Caller{Network: "network1"}, mn, twoClusters())
	eps, _ := mc.CallerEndpoints("http")
	want := []string{
		"10.244.1.10:8080 weight=1 tlsMode=istio cluster=Kubernetes direct",
		"172.18.2.20:15443 weight=2 tlsMode=istio cluster= gateway",
	}
	if got := describeCallerEndpoints(eps); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A hostname gateway: what istiod's DNS made of it is not known, so the
// endpoints behind it are undecided, never sent direct or through it.
func TestCallerEndpointsHostnameGatewayUndecided(t *testing.T) {
	gw := mcGateway("network2", "", 15443)
	gw.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "a1b2.elb.invalid"}}
	mc := MultiClusterEndpoints(Caller{Network: "network1"}, nil, twoClusters(gw))
	eps, undecided := mc.CallerEndpoints("http")
	if got := describeCallerEndpoints(eps); len(got) != 1 || len(undecided) != 3 {
		t.Errorf("got %q, undecided %v; want orders-c1 only and cluster2's three undecided", got, undecided)
	}
}

// A gateway Service with the gateway port but no address (a NodePort
// without traffic.istio.io/nodeSelector, a load balancer pending) is no
// gateway to an istiod that read it so, but a working gateway changed in
// place to it keeps its old gateway in istiod (the lab: networkz and the
// caller's EDS still hold 172.18.2.10:15443): the model cannot tell, so
// the endpoints of its network are undecided, not direct, and still the
// gateway-unusable disagreement's.
func TestCallerEndpointsAddresslessGatewayUndecided(t *testing.T) {
	for name, gw := range map[string]*corev1.Service{
		"load balancer pending": mcGateway("network2", "", 15443),
		"NodePort without a node selector": func() *corev1.Service {
			s := mcGateway("network2", "", 15443)
			s.Spec.Type = corev1.ServiceTypeNodePort
			return s
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			caller := Caller{Network: "network1"}
			reads := twoClusters(gw)
			mc := MultiClusterEndpoints(caller, nil, reads)
			eps, undecided := mc.CallerEndpoints("http")
			if got := describeCallerEndpoints(eps); len(got) != 1 || len(undecided) != 3 {
				t.Errorf("got %q, undecided %v; want orders-c1 only and cluster2's three undecided", got, undecided)
			}
			var kinds []string
			for _, d := range mc.Disagreements(caller, reads) {
				kinds = append(kinds, fmt.Sprintf("%s %d", d.Kind, len(d.Endpoints)))
				if !strings.Contains(d.Why, "networkz") {
					t.Errorf("%s: %q does not say istiod may keep the old gateway", d.Kind, d.Why)
				}
			}
			if want := []string{GatewayUnusable + " 3"}; !slices.Equal(kinds, want) {
				t.Errorf("disagreements %v, want %v", kinds, want)
			}
		})
	}
}
