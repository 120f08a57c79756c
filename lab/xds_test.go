package lab

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshtriage/meshtriage/probes/parse/envoy"
)

// scriptedADS is an ADS server a test drives by hand: every request the
// client sends arrives on requests, and the test sends responses.
type scriptedADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	requests  chan *discoveryv3.DiscoveryRequest
	responses chan *discoveryv3.DiscoveryResponse
}

func (s *scriptedADS) StreamAggregatedResources(stream grpc.BidiStreamingServer[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse]) error {
	go func() {
		for r := range s.responses {
			if stream.Send(r) != nil {
				return
			}
		}
	}()
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		s.requests <- req
	}
}

func startScriptedADS(t *testing.T) (*scriptedADS, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedADS{requests: make(chan *discoveryv3.DiscoveryRequest, 100), responses: make(chan *discoveryv3.DiscoveryResponse)}
	srv := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, s)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return s, ln.Addr().String()
}

func (s *scriptedADS) next(t *testing.T) *discoveryv3.DiscoveryRequest {
	t.Helper()
	select {
	case r := <-s.requests:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the client sent no request")
		return nil
	}
}

// expect reads the next request and checks it is of typeURL, carries
// version and nonce, and names names.
func (s *scriptedADS) expect(t *testing.T, what, typeURL, version, nonce string, names ...string) *discoveryv3.DiscoveryRequest {
	t.Helper()
	r := s.next(t)
	if r.GetTypeUrl() != typeURL || r.GetVersionInfo() != version || r.GetResponseNonce() != nonce || !slices.Equal(r.GetResourceNames(), names) {
		t.Fatalf("%s: got request type=%s version=%q nonce=%q names=%v; want type=%s version=%q nonce=%q names=%v",
			what, r.GetTypeUrl(), r.GetVersionInfo(), r.GetResponseNonce(), r.GetResourceNames(), typeURL, version, nonce, names)
	}
	return r
}

func response(t *testing.T, typeURL, version, nonce string, msgs ...proto.Message) *discoveryv3.DiscoveryResponse {
	t.Helper()
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: nonce}
	for _, m := range msgs {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		resp.Resources = append(resp.Resources, a)
	}
	return resp
}

const ordersCluster = "outbound|8080||orders.shop.svc.cluster.local"

func edsCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{ServiceName: name},
		CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
			MaxConnections: wrapperspb.UInt32(7),
		}}},
	}
}

func staticCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
}

func lbEndpoint(ip string, port uint32, health corev3.HealthStatus) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{
		HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
			SocketAddress: &corev3.SocketAddress{Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}}},
		HealthStatus: health,
	}
}

func httpListener(t *testing.T, name string, port uint32, route string) *listenerv3.Listener {
	t.Helper()
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix:     name,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{RouteConfigName: route}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}}}},
	}
}

// The client walks the ADS exchange as Envoy does: clusters first, their
// endpoints, listeners only once the clusters are warm, then the routes the
// listeners name; it ACKs each response with its version and nonce, NACKs
// one it cannot decode while keeping what it had, and, stuck, neither
// applies nor ACKs until it is let go again.
func TestXDSClientWalksADSAsEnvoy(t *testing.T) {
	ads, addr := startScriptedADS(t)
	md, _ := structpb.NewStruct(map[string]any{"NAMESPACE": "shop"})
	node := &corev3.Node{Id: "sidecar~10.244.0.9~web-1.shop~shop.svc.cluster.local", Metadata: md}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ConnectXDS(ctx, addr, node)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	first := ads.expect(t, "first request", ClusterType, "", "")
	if first.GetNode().GetId() != node.GetId() {
		t.Fatalf("first request node %q, want %q", first.GetNode().GetId(), node.GetId())
	}
	ads.responses <- response(t, ClusterType, "v1", "c1", edsCluster(ordersCluster), staticCluster("BlackHoleCluster"))
	if r := ads.expect(t, "CDS ACK", ClusterType, "v1", "c1"); r.GetNode() != nil {
		t.Error("the node was sent again after the first request")
	}
	ads.expect(t, "EDS subscription", EndpointType, "", "", ordersCluster)

	// Not warm yet: no listeners asked for before the endpoints arrive.
	select {
	case r := <-ads.requests:
		t.Fatalf("request before the endpoints arrived: %s", r.GetTypeUrl())
	case <-time.After(200 * time.Millisecond):
	}
	ads.responses <- response(t, EndpointType, "v1", "e1", &endpointv3.ClusterLoadAssignment{
		ClusterName: ordersCluster,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{
			lbEndpoint("10.244.1.17", 8080, corev3.HealthStatus_HEALTHY),
			lbEndpoint("10.244.2.18", 8080, corev3.HealthStatus_UNHEALTHY),
		}}},
	})
	ads.expect(t, "EDS ACK", EndpointType, "v1", "e1", ordersCluster)
	ads.expect(t, "LDS subscription once warm", ListenerType, "", "")
	ads.responses <- response(t, ListenerType, "v1", "l1", httpListener(t, "0.0.0.0_8080", 8080, "8080"))
	ads.expect(t, "LDS ACK", ListenerType, "v1", "l1")
	ads.expect(t, "RDS subscription", RouteType, "", "", "8080")
	ads.responses <- response(t, RouteType, "v1", "r1", &routev3.RouteConfiguration{Name: "8080"})
	ads.expect(t, "RDS ACK", RouteType, "v1", "r1", "8080")
	if err := c.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}

	// The admin reads, through the product's own parsers.
	srv := httptest.NewServer(c.AdminHandler())
	defer srv.Close()
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s: %s %v", path, resp.Status, body, err)
		}
		return body
	}
	clusters, err := envoy.ParseClusters(get("/clusters?format=json"))
	if err != nil {
		t.Fatal(err)
	}
	var orders *envoy.Cluster
	for i := range clusters {
		if clusters[i].Name == ordersCluster {
			orders = &clusters[i]
		}
	}
	if orders == nil || len(orders.Hosts) != 2 || !orders.Hosts[0].Healthy() || orders.Hosts[1].Healthy() || orders.Hosts[1].EDSHealth != "UNHEALTHY" {
		t.Fatalf("/clusters: orders cluster %+v, want 2 hosts, the second EDS UNHEALTHY", orders)
	}
	listeners, err := envoy.ParseListeners(get("/listeners?format=json"))
	if err != nil || len(listeners) != 1 || listeners[0].Name != "0.0.0.0_8080" || listeners[0].Port != 8080 {
		t.Fatalf("/listeners: %+v %v", listeners, err)
	}
	var dump struct {
		Configs []map[string]json.RawMessage `json:"configs"`
	}
	if err := json.Unmarshal(get("/config_dump"), &dump); err != nil {
		t.Fatal(err)
	}
	var sections []string
	for _, cfg := range dump.Configs {
		var typ string
		json.Unmarshal(cfg["@type"], &typ)
		sections = append(sections, typ[strings.LastIndexByte(typ, '.')+1:])
	}
	want := []string{"BootstrapConfigDump", "ClustersConfigDump", "ListenersConfigDump", "ScopedRoutesConfigDump", "RoutesConfigDump"}
	if !slices.Equal(sections, want) {
		t.Errorf("/config_dump sections %v, want %v (endpoints only with include_eds)", sections, want)
	}
	if !strings.Contains(string(get("/config_dump?include_eds")), `"dynamic_endpoint_configs"`) {
		t.Error("/config_dump?include_eds has no dynamic_endpoint_configs")
	}
	if !strings.Contains(string(dump.Configs[1]["dynamic_active_clusters"]), `"version_info": "v1"`) {
		t.Errorf("active clusters lack their version: %s", dump.Configs[1]["dynamic_active_clusters"])
	}

	// A response it cannot decode: NACK with the version it keeps.
	bad := response(t, ClusterType, "v2", "c2", &routev3.RouteConfiguration{Name: "not-a-cluster"})
	ads.responses <- bad
	nack := ads.expect(t, "CDS NACK", ClusterType, "v1", "c2")
	if nack.GetErrorDetail().GetMessage() == "" {
		t.Error("the NACK carries no error detail")
	}
	if st := c.TypeState(ClusterType); st.Rejected != 1 || len(st.Resources) != 2 {
		t.Errorf("after the NACK: %d rejected, %d clusters; want 1 and the 2 it had", st.Rejected, len(st.Resources))
	}

	// Stuck: a new cluster set arrives and is neither applied nor ACKed.
	if err := c.SetACK(false); err != nil {
		t.Fatal(err)
	}
	ads.responses <- response(t, ClusterType, "v3", "c3", staticCluster("BlackHoleCluster"))
	if err := c.WaitFor(ctx, "the v3 clusters to arrive", func(types map[string]*XDSTypeState) bool { return types[ClusterType].Ignored == 1 }); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ads.requests:
		t.Fatalf("a stuck client sent %s version=%q nonce=%q", r.GetTypeUrl(), r.GetVersionInfo(), r.GetResponseNonce())
	case <-time.After(300 * time.Millisecond):
	}
	if st := c.TypeState(ClusterType); st.Version != "v1" || len(st.Resources) != 2 {
		t.Errorf("stuck client holds clusters %s (%d); want v1 (2)", st.Version, len(st.Resources))
	}
	// Let go: it applies the newest response, ACKs it, and drops the
	// endpoints of the cluster that went.
	if err := c.SetACK(true); err != nil {
		t.Fatal(err)
	}
	ads.expect(t, "CDS ACK after unsticking", ClusterType, "v3", "c3")
	ads.expect(t, "EDS unsubscription", EndpointType, "v1", "e1")
	if st := c.TypeState(EndpointType); len(st.Resources) != 0 {
		t.Errorf("endpoints of removed clusters kept: %v", st.Resources)
	}
}
