package lab

import (
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

func gatewayCaseView(t *testing.T, file string) *mesh.View {
	t.Helper()
	objs := meshtest.Objects(t, "../probes/mesh/testdata/model", "base.yaml", file)
	c := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
	v, err := c.ViewFor(meshtest.CallerOf(t, c, meshtest.GW), "orders.shop.svc.cluster.local", 8080)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func routeTo(domain, cluster string) *routev3.VirtualHost {
	return &routev3.VirtualHost{Name: domain + ":80", Domains: []string{domain}, Routes: []*routev3.Route{{
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}}}}}
}

// The comparison the lab makes against istiod: what the gateway model
// says of route names and routed hosts, against route configurations
// istiod would push.
func TestCompareGatewayRoutes(t *testing.T) {
	bound := gatewayCaseView(t, "gateway-vs-bound.yaml")
	orders := "outbound|8080||orders.shop.svc.cluster.local"
	same := map[string]*routev3.RouteConfiguration{"http.8080": {Name: "http.8080", VirtualHosts: []*routev3.VirtualHost{routeTo("shop.example.com", orders)}}}
	if c := CompareGatewayRoutes(bound, same); len(c.Diffs) != 0 || c.Clusters != 1 || c.Endpoints != 1 {
		t.Errorf("agreeing routes: %+v", c)
	}
	// istiod's Istio 1.23+ names carry the alt_stat_name ";" nowhere in
	// RDS, but a route to another cluster is another route.
	other := map[string]*routev3.RouteConfiguration{"http.8080": {Name: "http.8080", VirtualHosts: []*routev3.VirtualHost{routeTo("shop.example.com", "outbound|8080||web.shop.svc.cluster.local")}}}
	if c := CompareGatewayRoutes(bound, other); len(c.Diffs) != 1 || !strings.Contains(c.Diffs[0], "host shop.example.com: the model routes it") {
		t.Errorf("a route elsewhere: %+v", c)
	}
	if c := CompareGatewayRoutes(bound, map[string]*routev3.RouteConfiguration{}); len(c.Diffs) != 2 || !strings.Contains(c.Diffs[0], "route http.8080") {
		t.Errorf("no route config: %+v", c)
	}
	unbound := gatewayCaseView(t, "gateway-vs-mesh-only.yaml")
	blackhole := map[string]*routev3.RouteConfiguration{"http.8080": {Name: "http.8080", VirtualHosts: []*routev3.VirtualHost{{Name: "blackhole:80", Domains: []string{"*"}}}}}
	if c := CompareGatewayRoutes(unbound, blackhole); len(c.Diffs) != 0 {
		t.Errorf("istiod's 404 virtual host for an unbound VirtualService: %+v", c)
	}
	if c := CompareGatewayRoutes(unbound, same); len(c.Diffs) != 1 || !strings.Contains(c.Diffs[0], "istiod routes it") {
		t.Errorf("istiod routes what the model says it does not: %+v", c)
	}
}
