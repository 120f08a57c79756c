package mesh

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func mcPod(name, network, tlsMode, clusterID string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{}}}
	if network != "" {
		p.Labels[LabelNetwork] = network
	}
	if tlsMode != "" {
		p.Labels[labelTLSMode] = tlsMode
		p.Spec.Containers = []corev1.Container{{Name: ProxyContainer, Env: []corev1.EnvVar{{Name: "ISTIO_META_CLUSTER_ID", Value: clusterID}}}}
	}
	return p
}

func mcSlice(addrPods ...string) discoveryv1.EndpointSlice {
	s := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "orders-x", Namespace: "shop"}}
	for i := 0; i+1 < len(addrPods); i += 2 {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{addrPods[i]},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: addrPods[i+1], Namespace: "shop"}})
	}
	return s
}

func mcNamespace(network string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system", Labels: map[string]string{}}}
	if network != "" {
		ns.Labels[LabelNetwork] = network
	}
	return ns
}

func mcGateway(network, ip string, ports ...int32) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "istio-eastwestgateway", Namespace: "istio-system",
		Labels: map[string]string{LabelNetwork: network}}}
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: p})
	}
	if ip != "" {
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	}
	return svc
}

func pods(ps ...*corev1.Pod) map[string]*corev1.Pod {
	m := map[string]*corev1.Pod{}
	for _, p := range ps {
		m[p.Name] = p
	}
	return m
}

func byAddress(mc MultiCluster) map[string]ClusterEndpoint {
	m := map[string]ClusterEndpoint{}
	for _, e := range mc.Endpoints {
		m[e.Address] = e
	}
	return m
}

// Two clusters on two networks, each with its east-west gateway: the
// caller in cluster 1 gets its own cluster's pods directly and cluster 2's
// mTLS pod through cluster 2's gateway; cluster 2's plaintext pod is
// dropped (pilot's EndpointsByNetworkFilter).
func TestMultiClusterSplitHorizon(t *testing.T) {
	c1 := ClusterRead{Context: "c1", Local: true, ClusterID: "cluster1",
		Slices: []discoveryv1.EndpointSlice{mcSlice("10.1.0.5", "orders-a")}, Pods: pods(mcPod("orders-a", "", "istio", "cluster1")),
		SystemNamespace: mcNamespace("network1"), GatewayServices: []*corev1.Service{mcGateway("network1", "172.18.1.10", 15443)}}
	c2 := ClusterRead{Context: "c2", ClusterID: "cluster2",
		Slices:          []discoveryv1.EndpointSlice{mcSlice("10.2.0.5", "orders-b", "10.2.0.6", "orders-c")},
		Pods:            pods(mcPod("orders-b", "", "istio", "cluster2"), mcPod("orders-c", "", "", "")),
		SystemNamespace: mcNamespace("network2"), GatewayServices: []*corev1.Service{mcGateway("network2", "172.18.2.10", 15021, 15443)}}
	mc := MultiClusterEndpoints(Caller{Sidecar: true, Network: "network1"}, nil, []ClusterRead{c1, c2})
	got := byAddress(mc)
	if e := got["10.1.0.5"]; e.Gets != GetsDirect || e.Context != "c1" || e.Network != "network1" {
		t.Errorf("local endpoint = %+v", e)
	}
	if e := got["10.2.0.5"]; e.Gets != GetsGateway || e.Context != "c2" || len(e.Via) != 1 || e.Via[0].Address != "172.18.2.10" || e.Via[0].Port != 15443 || e.Via[0].Cluster != "cluster2" {
		t.Errorf("remote mTLS endpoint = %+v", e)
	}
	if e := got["10.2.0.6"]; e.Gets != GetsDropped || !strings.Contains(e.Why, "not mTLS") {
		t.Errorf("remote plaintext endpoint = %+v", e)
	}
}

// Cluster 2's control-plane namespace lost its network label: its pods
// are on no network, so on every proxy's, and the caller gets their pod
// IPs directly even though cluster 2 has a gateway for network2.
func TestMultiClusterNetworkLabelMissingSendsPodIPs(t *testing.T) {
	c2 := ClusterRead{Context: "c2", ClusterID: "cluster2",
		Slices: []discoveryv1.EndpointSlice{mcSlice("10.2.0.5", "orders-b")}, Pods: pods(mcPod("orders-b", "", "istio", "cluster2")),
		SystemNamespace: mcNamespace(""), GatewayServices: []*corev1.Service{mcGateway("network2", "172.18.2.10", 15443)}}
	e := byAddress(MultiClusterEndpoints(Caller{Sidecar: true, Network: "network1"}, nil, []ClusterRead{c2}))["10.2.0.5"]
	if e.Gets != GetsDirect || e.Network != "" || e.NetworkFrom != "none" {
		t.Errorf("endpoint = %+v, want direct on no network", e)
	}
	// The pod's own label wins over the namespace's.
	c2.Pods = pods(mcPod("orders-b", "network2", "istio", "cluster2"))
	if e := byAddress(MultiClusterEndpoints(Caller{Sidecar: true, Network: "network1"}, nil, []ClusterRead{c2}))["10.2.0.5"]; e.Gets != GetsGateway || e.NetworkFrom != "pod label" {
		t.Errorf("endpoint with its own label = %+v", e)
	}
}

// Not read is never absent: a cluster whose slices could not be read is
// unread, one whose namespace or gateways were refused leaves its
// endpoints undecided, and a hostname gateway waits on istiod's DNS.
func TestMultiClusterUnreadIsUndecided(t *testing.T) {
	c2 := ClusterRead{Context: "c2", SlicesUnknown: "connection refused"}
	mc := MultiClusterEndpoints(Caller{Sidecar: true, Network: "network1"}, nil, []ClusterRead{c2})
	if len(mc.Endpoints) != 0 || len(mc.Unread) != 1 || !strings.Contains(mc.Unread[0], "c2: connection refused") {
		t.Errorf("unread cluster = %+v", mc)
	}
	c2 = ClusterRead{Context: "c2", Slices: []discoveryv1.EndpointSlice{mcSlice("10.2.0.5", "orders-b")}, Pods: pods(mcPod("orders-b", "", "istio", "")),
		SystemNamespaceUnknown: "forbidden", GatewayServices: []*corev1.Service{mcGateway("network2", "172.18.2.10", 15443)}}
	if e := byAddress(MultiClusterEndpoints(Caller{Sidecar: true, Network: "network1"}, nil, []ClusterRead{c2}))["10.2.0.5"]; e.Gets != GetsUndecided || !strings.Contains(e.Why, "forbidden") {
		t.Errorf("namespace refused: %+v", e)
	}
	c2.SystemNamespace, c2.SystemNamespaceUnknown, c2.GatewayServices, c2.GatewaysUnknown = mcNamespace("network2"), "", nil, "forbidden"
	if e := byAddress(MultiClusterEndpoints(Caller{Sidecar: true, Network: "network1"}, nil, []ClusterRead{c2}))["10.2.0.5"]; e.Gets != GetsUndecided {
		t.Errorf("gateways refused: %+v", e)
	}
	gw := mcGateway("network2", "", 15443)
	gw.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "ew.elb.example"}}
	c2.GatewayServices, c2.GatewaysUnknown = []*corev1.Service{gw}, ""
	if e := byAddress(MultiClusterEndpoints(Caller{Sidecar: true, Network: "network1"}, nil, []ClusterRead{c2}))["10.2.0.5"]; e.Gets != GetsUndecided || !strings.Contains(e.Why, "own DNS") {
		t.Errorf("hostname gateway: %+v", e)
	}
}

// A gateway Service without 15443 (nor 15008) is no gateway to istiod:
// network2 then has none, and the caller gets the remote pod IP.
func TestMultiClusterGatewayWithoutPortIsNone(t *testing.T) {
	c1 := ClusterRead{Context: "c1", Local: true, SystemNamespace: mcNamespace("network1"),
		GatewayServices: []*corev1.Service{mcGateway("network1", "172.18.1.10", 15443)}}
	c2 := ClusterRead{Context: "c2", ClusterID: "cluster2", Slices: []discoveryv1.EndpointSlice{mcSlice("10.2.0.5", "orders-b")},
		Pods: pods(mcPod("orders-b", "", "istio", "cluster2")), SystemNamespace: mcNamespace("network2"),
		GatewayServices: []*corev1.Service{mcGateway("network2", "172.18.2.10", 15021)}}
	e := byAddress(MultiClusterEndpoints(Caller{Sidecar: true, Network: "network1"}, nil, []ClusterRead{c1, c2}))["10.2.0.5"]
	if e.Gets != GetsDirect || e.Network != "network2" || !strings.Contains(e.Why, "no gateway") {
		t.Errorf("endpoint = %+v", e)
	}
}

func TestClusterIDOfPods(t *testing.T) {
	if id, why := ClusterIDOfPods([]*corev1.Pod{mcPod("a", "", "", ""), mcPod("b", "", "istio", "cluster2")}); id != "cluster2" || why != "" {
		t.Errorf("id %q why %q", id, why)
	}
	if id, why := ClusterIDOfPods([]*corev1.Pod{mcPod("a", "", "", "")}); id != "" || why == "" {
		t.Errorf("no injected pod: id %q why %q", id, why)
	}
	if id, why := ClusterIDOfPods([]*corev1.Pod{mcPod("a", "", "istio", "x"), mcPod("b", "", "istio", "y")}); id != "" || !strings.Contains(why, "x, y") {
		t.Errorf("disagreeing pods: id %q why %q", id, why)
	}
}
