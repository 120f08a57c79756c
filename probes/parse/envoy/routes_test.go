package envoy

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func routeConfigs(t *testing.T, data []byte) []RouteConfig {
	t.Helper()
	rcs, err := StreamRouteConfigs(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return rcs
}

func routeConfigNamed(t *testing.T, rcs []RouteConfig, name string) RouteConfig {
	t.Helper()
	for _, rc := range rcs {
		if rc.Name == name {
			return rc
		}
	}
	var names []string
	for _, rc := range rcs {
		names = append(names, rc.Name)
	}
	t.Fatalf("no route config %s among %v", name, names)
	return RouteConfig{}
}

// A real ingress gateway's /config_dump (OpenShift Service Mesh 2, Istio
// 1.20): route http.8080 has one virtual host for every domain, whose only
// route takes the exact path /dani to hello-openshift. A request for any
// other path matches no route (404 NR); one for /dani reaches the cluster
// whatever its Host.
func TestRealworldGatewayRoutes(t *testing.T) {
	rcs := routeConfigs(t, readRealworld(t, "config_dump/ossm2_ingressgateway.json"))
	gw := GatewayRouteConfigs(rcs)
	if len(gw) != 1 || gw[0].Name != "http.8080" || !gw[0].IgnorePort {
		t.Fatalf("gateway route configs %+v, want http.8080 ignoring ports", gw)
	}
	vh := gw[0].VirtualHostFor("hello.apps.example.com:80")
	if vh == nil || vh.Name != "*:8080" {
		t.Fatalf("virtual host for any host = %+v, want *:8080", vh)
	}
	const cluster = "outbound|8080||hello-openshift.vanilla-playground.svc.cluster.local"
	routed := vh.Routed(func(c string) bool { return c == cluster })
	if len(routed) != 1 || routed[0].Match != "path /dani" || routed[0].CatchAll {
		t.Errorf("routes to %s: %+v, want the exact path /dani only", cluster, routed)
	}
	if vh.HasCatchAll() {
		t.Error("the gateway's only route is path /dani: no catch-all, other paths get 404 NR")
	}
	// The static "backend" route config of pilot-agent's health port is
	// not a gateway's.
	if rc := routeConfigNamed(t, rcs, ""); rc.Dynamic || len(rc.VirtualHosts) != 1 || rc.VirtualHosts[0].Name != "backend" {
		t.Errorf("static route config %+v", rc)
	}
}

// A real sidecar's /config_dump (Istio 1.9): domains list host:port
// variants and ports are not ignored, so "slime-metrics.mesh-operator:8686"
// is matched as written.
func TestRealworldSidecarRouteDomains(t *testing.T) {
	rcs := routeConfigs(t, readRealworld(t, "config_dump/slime_scout.json"))
	rc := routeConfigNamed(t, rcs, "slime-metrics.mesh-operator.svc.cluster.local:8686")
	if rc.IgnorePort {
		t.Error("Istio 1.9 did not set ignore_port_in_host_matching")
	}
	vh := rc.VirtualHostFor("slime-metrics.mesh-operator:8686")
	if vh == nil || !strings.HasPrefix(vh.Name, "slime-metrics.mesh-operator.svc.cluster.local:8686") {
		t.Fatalf("virtual host %+v", vh)
	}
	if r := vh.Routed(func(c string) bool { return strings.HasSuffix(c, "|slime-metrics.mesh-operator.svc.cluster.local") }); len(r) == 0 {
		t.Errorf("no route to slime-metrics in %+v", vh.Routes)
	}
	// No domain is "*" in a sidecar's service route config: an unknown
	// host matches nothing (Envoy: 404 NR, or the allow_any virtual host
	// of port 80).
	if vh := rc.VirtualHostFor("unknown.example.com"); vh != nil && vh.Name != "allow_any" {
		t.Errorf("unknown host matched %s", vh.Name)
	}
}

// Every config_dump the fixtures hold decodes, whatever extensions its
// routes carry.
func TestRealworldRouteConfigsDecode(t *testing.T) {
	for _, name := range []string{"config_dump/ossm2_ingressgateway.json", "config_dump/ossm2_hello_openshift_sidecar.json", "config_dump/slime_scout.json"} {
		if rcs := routeConfigs(t, readRealworld(t, name)); len(rcs) == 0 {
			t.Errorf("%s: no route config", name)
		}
	}
	data, err := os.ReadFile("../../../../shared/fixtures/envoy/config_dump.json")
	if err != nil {
		t.Skip(err)
	}
	rcs := routeConfigs(t, data)
	if rc := routeConfigNamed(t, rcs, "inbound-vip|8000|http|httpbin.default.svc.cluster.local"); len(rc.VirtualHosts) == 0 || rc.Dynamic {
		t.Errorf("inbound route config %+v", rc)
	}
}

// Envoy's virtual host order: exact, then the longest suffix wildcard,
// then the longest prefix wildcard, then "*".
func TestVirtualHostFor(t *testing.T) {
	rc := RouteConfig{IgnorePort: true, VirtualHosts: []VirtualHost{
		{Name: "any", Domains: []string{"*"}},
		{Name: "suffix", Domains: []string{"*.example.com"}},
		{Name: "longer-suffix", Domains: []string{"*.shop.example.com"}},
		{Name: "prefix", Domains: []string{"shop.*"}},
		{Name: "exact", Domains: []string{"shop.example.com"}},
	}}
	for host, want := range map[string]string{
		"shop.example.com": "exact", "SHOP.example.com:443": "exact", "api.shop.example.com": "longer-suffix",
		"api.example.com": "suffix", "shop.example.org": "prefix", "other.org": "any", "example.com": "any",
	} {
		if vh := rc.VirtualHostFor(host); vh == nil || vh.Name != want {
			t.Errorf("%s: %+v, want %s", host, vh, want)
		}
	}
	rc.VirtualHosts = rc.VirtualHosts[1:]
	if vh := rc.VirtualHostFor("other.org"); vh != nil {
		t.Errorf("other.org matched %s without a * domain", vh.Name)
	}
}
