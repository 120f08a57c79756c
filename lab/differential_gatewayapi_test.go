package lab

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

func gatewayAPICase(t *testing.T, files ...string) (*mesh.Config, mesh.Caller) {
	t.Helper()
	objs := meshtest.Objects(t, "../probes/mesh/testdata/model", append([]string{"base.yaml", "gatewayapi-base.yaml"}, files...)...)
	c := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
	return c, meshtest.CallerFrom(t, objs, c, meshtest.APIGW)
}

// gatewayListener is an LDS listener on port whose HTTP connection
// manager asks for route configuration rds.
func gatewayListener(t *testing.T, port uint32, rds string) *listenerv3.Listener {
	t.Helper()
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{RouteConfigName: rds}}})
	if err != nil {
		t.Fatal(err)
	}
	return &listenerv3.Listener{
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "0.0.0.0",
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}}}},
	}
}

// The comparison of a Gateway API gateway's config: what istiod would
// push for gatewayapi-base.yaml agrees; each thing changed is one
// difference.
func TestCompareGatewayProxy(t *testing.T) {
	c, caller := gatewayAPICase(t)
	m := GatewayProxyModelOf(c, caller)
	orders := "outbound|8080||orders.shop.svc.cluster.local"
	pushed := func(cluster string, absent routev3.RouteAction_ClusterNotFoundResponseCode) map[string]*routev3.RouteConfiguration {
		return map[string]*routev3.RouteConfiguration{"http.80": {Name: "http.80", VirtualHosts: []*routev3.VirtualHost{{
			Name: "shop.example.com:80", Domains: []string{"shop.example.com"}, Routes: []*routev3.Route{{
				Name:  "shop.orders.0",
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
					ClusterNotFoundResponseCode: absent}}}}}}}}
	}
	listeners := map[string]*listenerv3.Listener{"0.0.0.0_80": gatewayListener(t, 80, "http.80")}
	cds := map[string]*PushedCluster{orders: {Name: orders}}
	if got := CompareGatewayProxy(m, pushed(orders, routev3.RouteAction_INTERNAL_SERVER_ERROR), listeners, cds); len(got.Diffs) != 0 || got.Clusters != 1 || got.Endpoints != 1 {
		t.Errorf("agreeing config: %+v", got)
	}
	for what, tc := range map[string]struct {
		routes    map[string]*routev3.RouteConfiguration
		listeners map[string]*listenerv3.Listener
		cds       map[string]*PushedCluster
		want      string
	}{
		"503 for a missing cluster": {pushed(orders, routev3.RouteAction_SERVICE_UNAVAILABLE), listeners, cds, "cluster not found 503"},
		"another cluster":           {pushed("outbound|8080||web.shop.svc.cluster.local", routev3.RouteAction_INTERNAL_SERVER_ERROR), listeners, cds, "web.shop"},
		"no cluster in CDS":         {pushed(orders, routev3.RouteAction_INTERNAL_SERVER_ERROR), listeners, map[string]*PushedCluster{}, "CDS has no such cluster"},
		"another listener port": {pushed(orders, routev3.RouteAction_INTERNAL_SERVER_ERROR),
			map[string]*listenerv3.Listener{"0.0.0.0_8080": gatewayListener(t, 8080, "http.80")}, cds, "listener port 8080"},
		"no listener asks for the routes": {pushed(orders, routev3.RouteAction_INTERNAL_SERVER_ERROR),
			map[string]*listenerv3.Listener{"0.0.0.0_80": gatewayListener(t, 80, "http.8080")}, cds, "route configuration http.80"},
	} {
		got := CompareGatewayProxy(m, tc.routes, tc.listeners, tc.cds)
		if len(got.Diffs) == 0 || !strings.Contains(strings.Join(got.Diffs, "\n"), tc.want) {
			t.Errorf("%s: diffs %q, want one naming %q", what, got.Diffs, tc.want)
		}
	}
}

// The status comparison: the model's verdicts against what istiod wrote.
func TestCompareGatewayAPIStatus(t *testing.T) {
	write := func(c *mesh.Config, accepted, resolved string) {
		r := c.GatewayAPI.HTTPRoutes[0]
		r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: r.Spec.ParentRefs[0], ControllerName: mesh.ControllerIstio,
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionStatus(accepted), Reason: map[string]string{"True": "Accepted", "False": "NoMatchingParent"}[accepted]},
				{Type: "ResolvedRefs", Status: "True", Reason: resolved}}}}
		gw := c.GatewayAPI.Gateways[0]
		gw.Status.Listeners = []gatewayv1.ListenerStatus{{Name: "http", Conditions: []metav1.Condition{
			{Type: "Accepted", Status: "True", Reason: "Accepted"}, {Type: "Programmed", Status: "True", Reason: "Programmed"},
			{Type: "ResolvedRefs", Status: "True", Reason: "ResolvedRefs"}}}}
	}
	cfg := func(accepted, resolved string) *mesh.Config {
		objs := meshtest.Objects(t, "../probes/mesh/testdata/model", "base.yaml", "gatewayapi-base.yaml")
		c := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
		if accepted != "" {
			write(c, accepted, resolved)
		}
		return mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
	}
	if got := CompareGatewayAPIStatus(cfg("True", "ResolvedRefs")); len(got.Diffs) != 0 || got.Clusters != 1 || got.Endpoints != 1 {
		t.Errorf("agreeing status: %+v", got)
	}
	for what, tc := range map[string]struct{ accepted, resolved, want string }{
		"not accepted":    {"False", "ResolvedRefs", "istiod wrote False NoMatchingParent"},
		"refs unresolved": {"True", "BackendNotFound", "istiod wrote True BackendNotFound"},
		"no status":       {"", "", "wrote no Accepted"},
	} {
		got := CompareGatewayAPIStatus(cfg(tc.accepted, tc.resolved))
		if !strings.Contains(strings.Join(got.Diffs, "\n"), tc.want) {
			t.Errorf("%s: diffs %q, want one naming %q", what, got.Diffs, tc.want)
		}
	}
}

// A terminating listener: the SDS names of the filter chains on its port
// against the model's credentials.
func TestCompareGatewayProxySDSNames(t *testing.T) {
	c, caller := gatewayAPICase(t, "gatewayapi-https.yaml")
	m := GatewayProxyModelOf(c, caller)
	orders := "outbound|8080||orders.shop.svc.cluster.local"
	httpsRoute := "https.443.default.public~istio-autogenerated-k8s-gateway~https.shop"
	routes := map[string]*routev3.RouteConfiguration{}
	for _, name := range []string{"http.80", httpsRoute} {
		routes[name] = &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{
			Domains: []string{"shop.example.com"}, Routes: []*routev3.Route{{Name: "shop.orders.0",
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: orders},
					ClusterNotFoundResponseCode: routev3.RouteAction_INTERNAL_SERVER_ERROR}}}}}}}
	}
	https := func(sds string) *listenerv3.Listener {
		l := gatewayListener(t, 443, httpsRoute)
		tc, err := anypb.New(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: sds}}}})
		if err != nil {
			t.Fatal(err)
		}
		l.FilterChains[0].TransportSocket = &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tc}}
		return l
	}
	cds := map[string]*PushedCluster{orders: {Name: orders}}
	agree := map[string]*listenerv3.Listener{"0.0.0.0_80": gatewayListener(t, 80, "http.80"), "0.0.0.0_443": https("kubernetes-gateway://shop/shop-cert")}
	if got := CompareGatewayProxy(m, routes, agree, cds); len(got.Diffs) != 0 {
		t.Errorf("agreeing config: %q", got.Diffs)
	}
	other := map[string]*listenerv3.Listener{"0.0.0.0_80": gatewayListener(t, 80, "http.80"), "0.0.0.0_443": https("kubernetes-gateway://shop/other")}
	if got := CompareGatewayProxy(m, routes, other, cds); len(got.Diffs) != 2 || !strings.Contains(got.Diffs[0], "SDS name kubernetes-gateway://shop/shop-cert") {
		t.Errorf("another certificate: %q", got.Diffs)
	}
}
