package lab

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

const (
	ordersHost = "orders.shop.svc.cluster.local"
	ordersV1   = "outbound|8080|v1|orders.shop.svc.cluster.local"
	ordersV2   = "outbound|8080|v2|orders.shop.svc.cluster.local"
)

func weighted(clusters map[string]uint32, order ...string) *routev3.Route_Route {
	wc := &routev3.WeightedCluster{}
	for _, n := range order {
		wc.Clusters = append(wc.Clusters, &routev3.WeightedCluster_ClusterWeight{Name: n, Weight: wrapperspb.UInt32(clusters[n])})
	}
	return &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}}}
}

func toCluster(name string) *routev3.Route_Route {
	return &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: name}}}
}

// ordersRoutes is what istiod writes for a VirtualService with a header
// route (two match conditions: two Envoy routes) sending 90/10 to v1 and
// v2, then a catch-all to the Service.
func ordersRoutes() map[string]*routev3.RouteConfiguration {
	header := []*routev3.HeaderMatcher{{Name: "x-canary"}}
	return map[string]*routev3.RouteConfiguration{"8080": {Name: "8080", VirtualHosts: []*routev3.VirtualHost{
		{Name: "allow_any", Domains: []string{"*"}, Routes: []*routev3.Route{{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, Action: toCluster(mesh.PassthroughCluster)}}},
		{Name: ordersHost + ":8080", Domains: []string{ordersHost, "orders.shop", "orders"}, Routes: []*routev3.Route{
			{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}, Headers: header}, Action: weighted(map[string]uint32{ordersV1: 90, ordersV2: 10}, ordersV1, ordersV2)},
			{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/api"}}, Action: weighted(map[string]uint32{ordersV1: 90, ordersV2: 10}, ordersV1, ordersV2)},
			{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}, Action: toCluster(mesh.ClusterName(8080, "", ordersHost))},
		}},
	}}}
}

func routedView(routes ...mesh.Route) *mesh.View {
	return &mesh.View{Caller: mesh.Caller{Namespace: "web", Name: "web-1", Sidecar: true}, Host: ordersHost, Port: 8080, Protocol: mesh.ProtocolHTTP,
		Visibility: mesh.Visibility{Visible: true}, Routes: routes}
}

var (
	canary = mesh.Route{Name: "http[0] (match header x-canary or uri prefix /api)", Destinations: []mesh.Destination{
		{Cluster: ordersV1, Percent: 90}, {Cluster: ordersV2, Percent: 10}}}
	catchAllRoute = mesh.Route{Name: "http[1]", CatchAll: true, Destinations: []mesh.Destination{{Cluster: mesh.ClusterName(8080, "", ordersHost), Percent: 100}}}
)

// Routes compare by what they send where, in order: istiod's one Envoy
// route a match condition is the model's one route, and a difference in
// weights, in routes or in whether a route takes every request is found.
func TestCompareRoutes(t *testing.T) {
	for _, tc := range []struct {
		name string
		view *mesh.View
		want []string
	}{
		{"agree", routedView(canary, catchAllRoute), nil},
		{"weights differ", routedView(mesh.Route{Name: canary.Name, Destinations: []mesh.Destination{{Cluster: ordersV1, Percent: 50}, {Cluster: ordersV2, Percent: 50}}}, catchAllRoute),
			[]string{"route 0: the model " + ordersV1 + " 50%, " + ordersV2 + " 50% (some requests); istiod " + ordersV1 + " 90%, " + ordersV2 + " 10% (some requests)"}},
		{"a route after the catch-all", routedView(canary, catchAllRoute, mesh.Route{Name: "http[2]", CatchAll: true, Destinations: []mesh.Destination{{Cluster: ordersV2, Percent: 100}}}),
			[]string{"the model's route 2 " + ordersV2 + " 100% (every request); istiod pushed no such route"}},
		{"no catch-all in the model", routedView(canary, mesh.Route{Name: "http[1] (match uri prefix /)", Destinations: catchAllRoute.Destinations}),
			[]string{"route 1: the model outbound|8080||" + ordersHost + " 100% (some requests); istiod outbound|8080||" + ordersHost + " 100% (every request)"}},
		{"hidden in the model", &mesh.View{Caller: mesh.Caller{Namespace: "web", Sidecar: true}, Host: ordersHost, Port: 8080, Protocol: mesh.ProtocolHTTP,
			Visibility: mesh.Visibility{HiddenBy: "exportTo ."}}, []string{"the model gives " + ordersHost + " no route of its own (exportTo .); istiod pushed virtual host"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CompareRoutes(tc.view, ordersRoutes(), nil)
			if len(c.Diffs) != len(tc.want) {
				t.Fatalf("diffs %q, want %d like %q", c.Diffs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(c.Diffs[i], w) {
					t.Errorf("diff %q, want it to say %q", c.Diffs[i], w)
				}
			}
			if c.Clusters != 1 {
				t.Errorf("%d route configurations compared, want 1", c.Clusters)
			}
		})
	}
	// A sniffed port: its own route configuration HOST:PORT, one virtual
	// host for every domain.
	sniffed := map[string]*routev3.RouteConfiguration{ordersHost + ":8080": {Name: ordersHost + ":8080", VirtualHosts: []*routev3.VirtualHost{
		{Name: ordersHost + ":8080", Domains: []string{"*"}, Routes: ordersRoutes()["8080"].GetVirtualHosts()[1].GetRoutes()}}}}
	if c := CompareRoutes(routedView(canary, catchAllRoute), sniffed, nil); len(c.Diffs) != 0 {
		t.Errorf("a sniffed port's own route configuration: %q", c.Diffs)
	}
	// A headless Service whose one endpoint is the caller: no listener, no
	// route configuration for its own address; nothing to compare.
	self := routedView(catchAllRoute)
	self.Service = &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "None"}}
	self.Clusters = map[string]*mesh.Cluster{catchAllRoute.Destinations[0].Cluster: {Exists: true, Endpoints: []mesh.EndpointTLS{
		{Endpoint: mesh.Endpoint{Address: "10.244.2.20", Pod: "web-1", Namespace: "web", Ready: true}}}}}
	if c := CompareRoutes(self, map[string]*routev3.RouteConfiguration{}, nil); len(c.Diffs) != 0 || c.Clusters != 0 {
		t.Errorf("a headless Service served by the caller alone: %+v", c)
	}
	noVH := routedView(catchAllRoute)
	noVH.Host = "ratings.shop.svc.cluster.local"
	if c := CompareRoutes(noVH, ordersRoutes(), nil); len(c.Diffs) != 1 || !strings.Contains(c.Diffs[0], "istiod pushed no virtual host") {
		t.Errorf("a host istiod has no virtual host for: %q", c.Diffs)
	}
}

// A TCP port is compared on the listener of the Service's ClusterIP and
// port: its tcp_proxy's weighted clusters against the model's first route.
func TestCompareRoutesTCP(t *testing.T) {
	tp, err := anypb.New(&tcpproxyv3.TcpProxy{ClusterSpecifier: &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: &tcpproxyv3.TcpProxy_WeightedCluster{
		Clusters: []*tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{{Name: ordersV1, Weight: 3}, {Name: ordersV2, Weight: 1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	listeners := map[string]*listenerv3.Listener{"10.96.0.10_5432": {Name: "10.96.0.10_5432", FilterChains: []*listenerv3.FilterChain{{
		Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.tcp_proxy", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: tp}}}}}}}
	v := routedView(mesh.Route{Name: "tcp[0]", CatchAll: true, Destinations: []mesh.Destination{{Cluster: ordersV1, Percent: 75}, {Cluster: ordersV2, Percent: 25}}})
	v.Port, v.Protocol = 5432, mesh.ProtocolTCP
	v.Service = &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}}
	if c := CompareRoutes(v, nil, listeners); len(c.Diffs) != 0 || c.Clusters != 1 {
		t.Errorf("agreeing TCP routes: %+v", c)
	}
	v.Routes[0].Destinations[1].Percent, v.Routes[0].Destinations[0].Percent = 50, 50
	if c := CompareRoutes(v, nil, listeners); len(c.Diffs) != 1 || !strings.Contains(c.Diffs[0], "istiod "+ordersV1+" 75%") {
		t.Errorf("TCP weights differ: %q", c.Diffs)
	}
}

func inboundChain(t *testing.T, port uint32, transport string, mtls bool) *listenerv3.FilterChain {
	t.Helper()
	fc := &listenerv3.FilterChain{FilterChainMatch: &listenerv3.FilterChainMatch{TransportProtocol: transport}}
	if port != 0 {
		fc.FilterChainMatch.DestinationPort = wrapperspb.UInt32(port)
	} else {
		fc.FilterChainMatch.PrefixRanges = []*corev3.CidrRange{{AddressPrefix: "0.0.0.0", PrefixLen: wrapperspb.UInt32(0)}}
	}
	if mtls {
		fc.TransportSocket = transportSocket(t, "envoy.transport_sockets.tls", &tlsv3.DownstreamTlsContext{})
	}
	return fc
}

// What a sidecar accepts on a port is read from its virtualInbound filter
// chains for that port (else the passthrough ones): a chain that
// terminates TLS accepts mTLS, a raw_buffer one plaintext, a TLS one
// without a transport socket (the app's own TLS) neither.
func TestPushedInbound(t *testing.T) {
	vi := &listenerv3.Listener{Name: "virtualInbound", FilterChains: []*listenerv3.FilterChain{
		inboundChain(t, 0, "tls", true), inboundChain(t, 0, "raw_buffer", false),
		inboundChain(t, 8080, "tls", true), inboundChain(t, 8080, "raw_buffer", false),
		inboundChain(t, 9090, "tls", true), inboundChain(t, 9090, "tls", false),
		inboundChain(t, 7070, "raw_buffer", false),
	}}
	ls := map[string]*listenerv3.Listener{"virtualInbound": vi}
	for port, want := range map[uint32]string{8080: mesh.ModePermissive, 9090: mesh.ModeStrict, 7070: mesh.ModeDisable, 5000: mesh.ModePermissive} {
		if got, why := PushedInbound(ls, port); got != want {
			t.Errorf("port %d: %s (%s), want %s", port, got, why, want)
		}
	}
	if got, _ := PushedInbound(map[string]*listenerv3.Listener{}, 8080); got != "" {
		t.Errorf("no virtualInbound: %q, want nothing", got)
	}
}
