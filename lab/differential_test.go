package lab

import (
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

func transportSocket(t *testing.T, name string, m proto.Message) *corev3.TransportSocket {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TransportSocket{Name: name, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
}

// istioMTLS is the upstream TLS istiod writes for Istio mTLS: the
// workload certificate and the mesh root, both from the agent's SDS.
func istioMTLS() *tlsv3.UpstreamTlsContext {
	return &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "default"}},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: "ROOTCA"},
		}},
		AlpnProtocols: []string{"istio-peer-exchange", "istio"},
	}}
}

func withTLSMode(t *testing.T, lb *endpointv3.LbEndpoint, mode string) *endpointv3.LbEndpoint {
	t.Helper()
	md, err := structpb.NewStruct(map[string]any{"tlsMode": mode})
	if err != nil {
		t.Fatal(err)
	}
	lb.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{transportSocketMatchKey: md}}
	return lb
}

// clientHolding is a client whose applied state is clusters and their
// endpoints, as if istiod had pushed them.
func clientHolding(clusters []*clusterv3.Cluster, clas []*endpointv3.ClusterLoadAssignment) *XDSClient {
	c := &XDSClient{types: map[string]*XDSTypeState{}}
	for _, typ := range []string{ClusterType, EndpointType, ListenerType, RouteType} {
		c.types[typ] = &XDSTypeState{Resources: map[string]*XDSResource{}}
	}
	for _, cl := range clusters {
		c.types[ClusterType].Resources[cl.GetName()] = &XDSResource{Name: cl.GetName(), Message: cl, Updated: time.Now()}
	}
	for _, cla := range clas {
		c.types[EndpointType].Resources[cla.GetClusterName()] = &XDSResource{Name: cla.GetClusterName(), Message: cla, Updated: time.Now()}
	}
	return c
}

// What the caller's Envoy sends each endpoint follows Envoy's transport
// socket choice: auto mTLS (istiod's tlsMode-istio / tlsMode-disabled
// matches) gives mTLS to endpoints labelled tlsMode=istio and plaintext to
// the others; a DestinationRule's SIMPLE TLS is TLS to all; unhealthy
// endpoints do not serve.
func TestPushedReadsTransportSocketsAsEnvoy(t *testing.T) {
	auto := edsCluster(ordersCluster)
	istioMatch, _ := structpb.NewStruct(map[string]any{"tlsMode": "istio"})
	auto.TransportSocketMatches = []*clusterv3.Cluster_TransportSocketMatch{
		{Name: "tlsMode-istio", Match: istioMatch, TransportSocket: transportSocket(t, "envoy.transport_sockets.tls", istioMTLS())},
		{Name: "tlsMode-disabled", Match: &structpb.Struct{}, TransportSocket: transportSocket(t, "envoy.transport_sockets.raw_buffer", &rawbufferv3.RawBuffer{})},
	}
	simple := edsCluster("outbound|443||payments.shop.svc.cluster.local")
	simple.TransportSocket = transportSocket(t, "envoy.transport_sockets.tls", &tlsv3.UpstreamTlsContext{Sni: "payments.example.com"})
	c := clientHolding([]*clusterv3.Cluster{auto, simple, staticCluster("BlackHoleCluster")}, []*endpointv3.ClusterLoadAssignment{
		{ClusterName: ordersCluster, Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{
			withTLSMode(t, lbEndpoint("10.244.1.17", 8080, corev3.HealthStatus_HEALTHY), "istio"),
			withTLSMode(t, lbEndpoint("10.244.2.18", 8080, corev3.HealthStatus_HEALTHY), "disabled"),
			lbEndpoint("10.244.3.19", 8080, corev3.HealthStatus_UNHEALTHY),
		}}}},
		{ClusterName: "outbound|443||payments.shop.svc.cluster.local", Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{
			lbEndpoint("10.244.4.20", 8443, corev3.HealthStatus_UNKNOWN),
		}}}},
	})
	pushed := c.Pushed()
	if _, ok := pushed["BlackHoleCluster"]; ok || len(pushed) != 2 {
		t.Fatalf("pushed %v, want the two outbound clusters only", sortedKeysOf(pushed))
	}
	orders := pushed[ordersCluster]
	if orders.Port != 8080 || orders.Subset != "" || orders.Host != "orders.shop.svc.cluster.local" || orders.Type != "EDS" {
		t.Errorf("orders cluster read as %+v", orders)
	}
	want := []struct {
		key, sends string
		serving    bool
	}{
		{"10.244.1.17:8080", mesh.SendsMTLS, true},
		{"10.244.2.18:8080", mesh.SendsPlaintext, true},
		{"10.244.3.19:8080", mesh.SendsPlaintext, false},
	}
	if len(orders.Endpoints) != len(want) {
		t.Fatalf("orders endpoints %+v", orders.Endpoints)
	}
	for i, w := range want {
		e := orders.Endpoints[i]
		if e.Key() != w.key || e.Sends != w.sends || e.Serving != w.serving {
			t.Errorf("endpoint %d = %s sends %s serving %v (%s); want %s sends %s serving %v", i, e.Key(), e.Sends, e.Serving, e.SendsWhy, w.key, w.sends, w.serving)
		}
	}
	if e := pushed["outbound|443||payments.shop.svc.cluster.local"].Endpoints[0]; e.Sends != mesh.SendsTLS || !e.Serving {
		t.Errorf("SIMPLE TLS cluster endpoint: sends %s (%s) serving %v; want tls, serving (no EDS health is healthy)", e.Sends, e.SendsWhy, e.Serving)
	}
}

// The comparison finds each kind of disagreement, and none when the model
// and istiod agree.
func TestCompareViewReportsEachDifference(t *testing.T) {
	pushed := map[string]*PushedCluster{ordersCluster: {Name: ordersCluster, Port: 8080, Host: "orders.shop.svc.cluster.local", Endpoints: []PushedEndpoint{
		{Address: "10.244.1.17", Port: 8080, Health: "HEALTHY", Serving: true, Sends: mesh.SendsMTLS, TLSMode: "istio",
			Workload: "orders-v1;shop;orders;v1;Kubernetes", Locality: "eu-west-1/eu-west-1a/"},
		{Address: "10.244.2.18", Port: 8080, Health: "UNHEALTHY", Serving: false, Sends: mesh.SendsMTLS, TLSMode: "istio", Workload: ";;;;", Locality: "//"},
	}}}
	endpoint := func(addr string, ready bool, sends string) mesh.EndpointTLS {
		e := mesh.EndpointTLS{Endpoint: mesh.Endpoint{Address: addr, Port: 8080, Ready: ready}, Sends: sends, TLSMode: "istio"}
		if addr == "10.244.1.17" {
			e.Namespace, e.Workload = "shop", "orders-v1"
			e.Labels = map[string]string{"app": "orders", "version": "v1", mesh.LabelCluster: "Kubernetes", mesh.LabelRegion: "eu-west-1", mesh.LabelZone: "eu-west-1a"}
		}
		return e
	}
	withMetadata := func(e mesh.EndpointTLS, tlsMode, version string) mesh.EndpointTLS {
		e.TLSMode = tlsMode
		e.Labels = map[string]string{"app": "orders", "version": version, mesh.LabelCluster: "Kubernetes", mesh.LabelRegion: "eu-west-1", mesh.LabelZone: "eu-west-1a"}
		return e
	}
	view := func(clusters ...*mesh.Cluster) *mesh.View {
		v := &mesh.View{Caller: mesh.Caller{Namespace: "shop", Name: "web-1", Sidecar: true}, Host: "orders.shop.svc.cluster.local", Port: 8080,
			Visibility: mesh.Visibility{Visible: true}, Clusters: map[string]*mesh.Cluster{}}
		for _, c := range clusters {
			v.Clusters[c.Name] = c
		}
		return v
	}
	for _, tc := range []struct {
		name string
		view *mesh.View
		want []string // substrings, one a diff, in order
	}{
		{"agree", view(&mesh.Cluster{Name: ordersCluster, Exists: true, Endpoints: []mesh.EndpointTLS{
			endpoint("10.244.1.17", true, mesh.SendsMTLS), endpoint("10.244.2.18", false, mesh.SendsMTLS)}}), nil},
		{"TLS differs", view(&mesh.Cluster{Name: ordersCluster, Exists: true, Endpoints: []mesh.EndpointTLS{
			endpoint("10.244.1.17", true, mesh.SendsPlaintext)}}), []string{"10.244.1.17:8080: the model sends plaintext"}},
		{"model serves an endpoint istiod marks unhealthy", view(&mesh.Cluster{Name: ordersCluster, Exists: true, Endpoints: []mesh.EndpointTLS{
			endpoint("10.244.1.17", true, mesh.SendsMTLS), endpoint("10.244.2.18", true, mesh.SendsMTLS)}}), []string{"10.244.2.18:8080 serves in the model; istiod pushed it UNHEALTHY"}},
		{"model misses a serving endpoint", view(&mesh.Cluster{Name: ordersCluster, Exists: true}), []string{"10.244.1.17:8080: istiod pushed it HEALTHY; the model does not count it serving"}},
		{"model builds a cluster istiod does not", view(
			&mesh.Cluster{Name: ordersCluster, Exists: true, Endpoints: []mesh.EndpointTLS{endpoint("10.244.1.17", true, mesh.SendsMTLS)}},
			&mesh.Cluster{Name: "outbound|8080|v2|orders.shop.svc.cluster.local", Exists: true}), []string{"v2|orders.shop.svc.cluster.local: the model says istiod builds it; istiod pushed no such cluster"}},
		{"model says no cluster, istiod built it", view(&mesh.Cluster{Name: ordersCluster, Exists: false, Why: "hidden"}), []string{"the model says istiod builds no such cluster (hidden)"}},
		{"endpoint metadata differs", view(&mesh.Cluster{Name: ordersCluster, Exists: true, Endpoints: []mesh.EndpointTLS{
			withMetadata(endpoint("10.244.1.17", true, mesh.SendsMTLS), "", "v2")}}), []string{
			`10.244.1.17:8080: the model's EDS tlsMode is ""; istiod sent "istio"`,
			`10.244.1.17:8080: the model's workload metadata is "orders-v1;shop;orders;v2;Kubernetes"; istiod sent "orders-v1;shop;orders;v1;Kubernetes"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CompareView(tc.view, pushed)
			if len(c.Diffs) != len(tc.want) {
				t.Fatalf("diffs %q, want %d like %q", c.Diffs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(c.Diffs[i], w) {
					t.Errorf("diff %q, want it to say %q", c.Diffs[i], w)
				}
			}
			if c.Clusters == 0 {
				t.Error("no cluster counted as compared")
			}
		})
	}
	hidden := view()
	hidden.Visibility = mesh.Visibility{Visible: false, HiddenBy: "exportTo ."}
	if c := CompareView(hidden, pushed); len(c.Diffs) != 1 || !strings.Contains(c.Diffs[0], "the model hides") {
		t.Errorf("hidden Service with a pushed cluster: diffs %q", c.Diffs)
	}
	noSidecar := view(&mesh.Cluster{Name: ordersCluster, Exists: true})
	noSidecar.Caller.Sidecar = false
	if c := CompareView(noSidecar, pushed); len(c.Diffs) != 0 || c.Clusters != 0 {
		t.Errorf("a caller without sidecar was compared: %+v", c)
	}
}
