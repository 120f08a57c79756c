package lab

import (
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// The waypoint comparison on waypoint-bindings.yaml: istiod's clusters for
// the Services the model binds agree; a cluster for one the model does not
// bind, or none for one it binds, is a difference.
func TestCompareWaypointServices(t *testing.T) {
	objs := meshtest.Objects(t, "../probes/mesh/testdata/model", "base.yaml", "waypoint-bindings.yaml")
	var services []corev1.Service
	namespaces := map[string]*corev1.Namespace{}
	var gateways []*gatewayv1.Gateway
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			services = append(services, *o)
		case *corev1.Namespace:
			namespaces[o.Name] = o
		case *gatewayv1.Gateway:
			gateways = append(gateways, o)
		}
	}
	wp := mesh.WaypointRef{Namespace: "shop", Name: "shop-waypoint"}
	orders := "inbound-vip|8080|http|orders.shop.svc.cluster.local"
	if c, _ := CompareWaypointServices(services, namespaces, gateways, wp, []string{orders, "outbound|8080||orders.shop.svc.cluster.local"}); len(c.Diffs) != 0 || c.Clusters != 2 {
		t.Errorf("agreeing clusters: %+v", c)
	}
	if c, _ := CompareWaypointServices(services, namespaces, gateways, wp, []string{orders, "inbound-vip|8080|http|search.web.svc.cluster.local"}); len(c.Diffs) != 1 || !strings.Contains(c.Diffs[0], "search.web.svc.cluster.local:8080: istiod pushed it") {
		t.Errorf("a Service the model does not bind: %q", c.Diffs)
	}
	if c, _ := CompareWaypointServices(services, namespaces, gateways, wp, nil); len(c.Diffs) != 1 || !strings.Contains(c.Diffs[0], "orders.shop.svc.cluster.local:8080: the model has it") {
		t.Errorf("no cluster for a Service the model binds: %q", c.Diffs)
	}
}

// The waypoint's routes on waypoint-routes.yaml: the mesh route's rules
// with the clusters of Services bound to the waypoint named inbound-vip,
// others outbound.
func TestCompareWaypointRoutes(t *testing.T) {
	objs := meshtest.Objects(t, "../probes/mesh/testdata/model", "base.yaml", "waypoint-bindings.yaml", "waypoint-routes.yaml")
	cfg := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
	route := func(prefix string, clusters map[string]uint32) *routev3.Route {
		r := &routev3.Route{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}}}
		var wcs []*routev3.WeightedCluster_ClusterWeight
		for name, w := range clusters {
			wcs = append(wcs, &routev3.WeightedCluster_ClusterWeight{Name: name, Weight: wrapperspb.UInt32(w)})
		}
		r.Action = &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{Clusters: wcs}}}}
		return r
	}
	orders := "inbound-vip|8080|http|orders.shop.svc.cluster.local"
	v2 := "outbound|8080||orders-v2.shop.svc.cluster.local"
	mainInternal := func(reviews string) map[string]*listenerv3.Listener {
		hcm, err := anypb.New(&hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			VirtualHosts: []*routev3.VirtualHost{{Domains: []string{"*"}, Routes: []*routev3.Route{
				route("/reviews", map[string]uint32{reviews: 1}),
				route("/api/v2", map[string]uint32{v2: 90, orders: 10}),
				route("/", map[string]uint32{orders: 1}),
			}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return map[string]*listenerv3.Listener{"main_internal": {Name: "main_internal", FilterChains: []*listenerv3.FilterChain{{Name: orders,
			Filters: []*listenerv3.Filter{{Name: "hcm", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}}}}}}
	}
	ordersOnly := map[string]bool{"orders.shop.svc.cluster.local:8080": true}
	if c := CompareWaypointRoutes(cfg, ordersOnly, mainInternal("outbound|9080||reviews.web.svc.cluster.local")); len(c.Diffs) != 0 || c.Clusters != 1 {
		t.Errorf("agreeing routes: %+v", c)
	}
	if got := CompareWaypointRoutes(cfg, ordersOnly, mainInternal("inbound-vip|9080|http|reviews.web.svc.cluster.local")); len(got.Diffs) != 1 || !strings.Contains(got.Diffs[0], "inbound-vip|9080|http|reviews") {
		t.Errorf("diffs %q: want reviews named inbound-vip, though not bound, to differ", got.Diffs)
	}
	both := map[string]bool{"orders.shop.svc.cluster.local:8080": true, "orders-v2.shop.svc.cluster.local:8080": true}
	got := CompareWaypointRoutes(cfg, both, mainInternal("outbound|9080||reviews.web.svc.cluster.local"))
	if !strings.Contains(strings.Join(got.Diffs, "\n"), "inbound-vip|8080|http|orders-v2.shop.svc.cluster.local: the model routes it on the waypoint; main_internal has no such filter chain") {
		t.Errorf("diffs %q: want orders-v2's missing filter chain", got.Diffs)
	}
}
