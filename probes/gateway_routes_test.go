package probes

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
)

// gatewayView is the caller view the probe reads, built from objects as
// fetchCallerView builds it from a cluster.
func gatewayView(t *testing.T, objs []runtime.Object, caller string, tg cluster.Target) callerview.View {
	t.Helper()
	cfg := mesh.ConfigFromObjects(objs, mesh.MeshConfig{}, "istio-system")
	cv := callerview.View{Config: cfg, Caller: meshtest.CallerOf(t, cfg, caller), CallerNamed: true}
	if !cv.Caller.Gateway {
		t.Fatalf("%s is not a gateway", caller)
	}
	v, err := cfg.ViewFor(cv.Caller, tg.Host(), tg.Port)
	if err != nil {
		t.Fatal(err)
	}
	cv.Views = []*mesh.View{v}
	return cv
}

func nrEntries(t *testing.T, log []byte) ([]accesslog.Entry, int) {
	t.Helper()
	var nr []accesslog.Entry
	n := 0
	for _, line := range strings.Split(string(log), "\n") {
		if e, ok := accesslog.ParseLine(line); ok {
			n++
			if e.HasFlag("NR") {
				nr = append(nr, e)
			}
		}
	}
	return nr, n
}

// ossm2Gateway is the world behind the real ingress gateway's
// /config_dump of the realworld samples (OpenShift Service Mesh 2, Istio
// 1.20): the gateway pod with the labels its bootstrap node lists, and the
// Gateway and VirtualService its route metadata names, reconstructed
// (the sample has the Envoy side only: the Gateway's name is ours).
const ossm2Gateway = `apiVersion: v1
kind: Pod
metadata:
  name: istio-ingressgateway-74ddf8dd9f-6p8p2
  namespace: istio-system
  labels: {app: istio-ingressgateway, istio: ingressgateway, sidecar.istio.io/inject: "false", maistra-control-plane: istio-system}
spec:
  containers:
  - name: istio-proxy
    args: [proxy, router, --domain, $(POD_NAMESPACE).svc.cluster.local]
status: {phase: Running, podIP: 10.130.0.29}
---
apiVersion: v1
kind: Service
metadata: {name: istio-ingressgateway, namespace: istio-system}
spec:
  selector: {app: istio-ingressgateway, istio: ingressgateway}
  ports: [{name: http2, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: istio-ingressgateway-x1, namespace: istio-system, labels: {kubernetes.io/service-name: istio-ingressgateway}}
addressType: IPv4
ports: [{name: http2, port: 8080, protocol: TCP}]
endpoints:
- addresses: [10.130.0.29]
  conditions: {ready: true}
  targetRef: {kind: Pod, namespace: istio-system, name: istio-ingressgateway-74ddf8dd9f-6p8p2}
---
apiVersion: v1
kind: Service
metadata: {name: hello-openshift, namespace: vanilla-playground}
spec:
  selector: {app: hello-openshift}
  ports: [{name: http, port: 8080, targetPort: 8080}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: external-gateway, namespace: vanilla-playground}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: ["*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: external-traffic-vs, namespace: vanilla-playground}
spec:
  hosts: ["*"]
  gateways: [%s]
  http:
  - match: [{uri: {exact: /dani}}]
    route:
    - destination: {host: hello-openshift, port: {number: 8080}}
`

func ossm2Objects(t *testing.T, gateways string) []runtime.Object {
	t.Helper()
	objs, err := manifests.Decode("ossm2.yaml", []byte(strings.Replace(ossm2Gateway, "%s", gateways, 1)), true)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// A real ingress gateway: the model's virtual host for the target is the
// one the gateway's Envoy holds (route http.8080, every domain, the exact
// path /dani only), and the real 404 NR of an ingress gateway (a
// cert-manager challenge for another path) is a path no route takes, not
// a host mismatch.
func TestGatewayRoutesRealIngressGateway(t *testing.T) {
	tg := cluster.Target{Namespace: "vanilla-playground", Service: "hello-openshift", Port: 8080,
		Source: &cluster.PodRef{Namespace: "istio-system", Name: "istio-ingressgateway-74ddf8dd9f-6p8p2"}}
	cv := gatewayView(t, ossm2Objects(t, "external-gateway"), "istio-system/istio-ingressgateway-74ddf8dd9f-6p8p2", tg)
	dumpFile := realworldFile(t, "config_dump/ossm2_ingressgateway.json")
	rcs, err := envoy.StreamRouteConfigs(bytes.NewReader(dumpFile))
	if err != nil {
		t.Fatal(err)
	}
	dump, err := envoy.StreamConfigDump(bytes.NewReader(dumpFile), func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	nr, lines := nrEntries(t, realworldLogGroup(t, "text.log", "German blog, 2021-12-11, 404 NR on ingress gateway"))
	r := evaluateGatewayRoutes(tg, gatewayRoutesInput{CV: cv, Routes: envoy.GatewayRouteConfigs(rcs), NR: nr, LogLines: lines, SecretsWarming: dump.WarmingSecrets})
	if err := CheckFacts(GatewayRoutesProbe{}.Meta(), r); err != nil {
		t.Fatal(err)
	}
	want := Facts{
		"gateway_selecting": []string{"vanilla-playground/external-gateway"}, "gateway_route_to_target": true, "gateway_hosts": []string{"*:8080"},
		"gateway_vs_to_target": []string{"vanilla-playground/external-traffic-vs"}, "gateway_vs_unbound": []string{}, "gateway_vs_host_mismatch": []string{},
		"gateway_unbound_why": "", "gateway_envoy_route_to_target": true, "gateway_envoy_hosts": []string{"*"},
		"gateway_log_nr": 1, "gateway_nr_hosts": []string{"helloistio.mcsps.telekomcloud.com"}, "gateway_nr_hosts_unrouted": []string{},
		"gateway_log_nc500": 0, "gateway_log_nc500_routes": []string{},
		// An Istio ingress: no Gateway API route concerns it, none is broken.
		"gateway_api_gateway": "", "gateway_api_partial": "", "gateway_api_unattached": []string{}, "gateway_api_unattached_why": "",
		"gateway_api_unattached_source": "", "gateway_api_backend_not_found": []string{}, "gateway_api_backend_port_missing": []string{},
		"gateway_api_ref_not_permitted": []string{}, "gateway_api_backend_source": "", "gateway_api_broken_share": 0,
		"gateway_tls_credential_missing": []string{}, "gateway_tls_credential_stale": []string{}, "gateway_listener_unreachable": []string{},
		"gateway_tls_credential_secrets": []string{}, "gateway_tls_credential_source": "",
		// Its SDS secrets are its own certificate and root, both active.
		"gateway_envoy_secrets_warming": []string{},
	}
	if !reflect.DeepEqual(r.Facts, want) {
		t.Errorf("facts\n got %v\nwant %v", r.Facts, want)
	}
	if r.Status != StatusWarn || !strings.Contains(r.Summary, "other paths get 404 NR") {
		t.Errorf("status %s: %s; want a warning that only /dani is routed", r.Status, r.Summary)
	}
	// The model's route configuration is the real one: name, domain, the
	// one route and its cluster.
	var model *mesh.GatewayVirtualHost
	for i, vh := range cv.Views[0].Gateway.VirtualHosts {
		if vh.RouteName == "http.8080" {
			model = &cv.Views[0].Gateway.VirtualHosts[i]
		}
	}
	real := envoy.GatewayRouteConfigs(rcs)[0]
	if model == nil || real.Name != model.RouteName || len(real.VirtualHosts) != 1 || real.VirtualHosts[0].Domains[0] != model.Domain {
		t.Fatalf("model %+v, Envoy %+v", model, real)
	}
	if got, want := model.Routes[0].Destinations[0].Cluster, real.VirtualHosts[0].Routes[0].Clusters[0].Name; got != want || model.Routes[0].CatchAll {
		t.Errorf("model routes to %s (catch-all %v), Envoy to %s with %s", got, model.Routes[0].CatchAll, want, real.VirtualHosts[0].Routes[0].Match)
	}
}

// The same gateway with the VirtualService bound to the mesh only: from
// configuration alone no route of the gateway reaches the target, and why.
func TestGatewayRoutesVirtualServiceNotBound(t *testing.T) {
	tg := cluster.Target{Namespace: "vanilla-playground", Service: "hello-openshift", Port: 8080,
		Source: &cluster.PodRef{Namespace: "istio-system", Name: "istio-ingressgateway-74ddf8dd9f-6p8p2"}}
	cv := gatewayView(t, ossm2Objects(t, "mesh"), "istio-system/istio-ingressgateway-74ddf8dd9f-6p8p2", tg)
	// What istiod then pushes: http.8080 with istiod's 404 virtual host.
	routes := []envoy.RouteConfig{{Name: "http.8080", Dynamic: true, IgnorePort: true,
		VirtualHosts: []envoy.VirtualHost{{Name: "blackhole:8080", Domains: []string{"*"}}}}}
	nr, lines := nrEntries(t, []byte(`[2026-12-02T03:04:05.123Z] "GET /dani HTTP/1.1" 404 NR route_not_found - "-" 0 0 0 - "203.0.113.7" "curl/8.7.1" "6b1f8a9e-3c8d-4f5e-9a0b-1c2d3e4f5a6b" "hello.apps.example.com" "-" - - 10.130.0.29:8080 203.0.113.7:51544 - -`))
	r := evaluateGatewayRoutes(tg, gatewayRoutesInput{CV: cv, Routes: routes, NR: nr, LogLines: lines})
	if err := CheckFacts(GatewayRoutesProbe{}.Meta(), r); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{
		"gateway_route_to_target": false, "gateway_vs_unbound": []string{"vanilla-playground/external-traffic-vs"},
		"gateway_envoy_route_to_target": false, "gateway_nr_hosts_unrouted": []string{"hello.apps.example.com"}, "gateway_log_nr": 1,
	} {
		if !reflect.DeepEqual(r.Facts[k], v) {
			t.Errorf("%s = %v, want %v", k, r.Facts[k], v)
		}
	}
	if why := r.Facts["gateway_unbound_why"].(string); !strings.Contains(why, "binds sidecars only (gateways: mesh)") {
		t.Errorf("why %q", why)
	}
	if r.Status != StatusFail {
		t.Errorf("status %s: %s", r.Status, r.Summary)
	}
}

// The config model's gateway cases through the probe: each binding
// mistake lands in its fact.
func TestGatewayRoutesModelCases(t *testing.T) {
	tg := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080,
		Source: &cluster.PodRef{Namespace: "istio-system", Name: "istio-ingressgateway-5b7c9-x2x4t"}}
	for file, want := range map[string]map[string]any{
		"gateway-vs-bound.yaml":              {"gateway_route_to_target": true, "gateway_hosts": []string{"shop.example.com:80"}, "gateway_vs_unbound": []string{}},
		"gateway-vs-mesh-only.yaml":          {"gateway_route_to_target": false, "gateway_vs_unbound": []string{"shop/orders-public"}},
		"gateway-vs-short-gateway-name.yaml": {"gateway_route_to_target": false, "gateway_vs_unbound": []string{"shop/orders-public"}},
		"gateway-vs-not-exported.yaml":       {"gateway_route_to_target": false, "gateway_vs_unbound": []string{"shop/orders-public"}},
		"gateway-selector-typo.yaml":         {"gateway_route_to_target": false, "gateway_vs_unbound": []string{"shop/orders-public"}, "gateway_selecting": []string{}},
		"gateway-host-mismatch.yaml":         {"gateway_route_to_target": false, "gateway_vs_unbound": []string{}, "gateway_vs_host_mismatch": []string{"shop/orders-public"}},
		"gateway-server-namespace.yaml":      {"gateway_route_to_target": false, "gateway_vs_host_mismatch": []string{"shop/orders-public"}},
		"gateway-catch-all-shadowed.yaml":    {"gateway_route_to_target": false, "gateway_vs_unbound": []string{}, "gateway_vs_host_mismatch": []string{}},
	} {
		objs := meshtest.Objects(t, "mesh/testdata/model", "base.yaml", file)
		cv := gatewayView(t, objs, meshtest.GW, tg)
		r := evaluateGatewayRoutes(tg, gatewayRoutesInput{CV: cv, RoutesProblem: "not read", LogProblem: "not read"})
		if err := CheckFacts(GatewayRoutesProbe{}.Meta(), r); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if !reflect.DeepEqual(r.Facts[k], v) {
				t.Errorf("%s: %s = %v, want %v (%s)", file, k, r.Facts[k], v, r.Summary)
			}
		}
		// Runtime facts read nothing: unknown, not false.
		for _, k := range []string{"gateway_envoy_route_to_target", "gateway_log_nr", "gateway_nr_hosts_unrouted"} {
			if _, ok := r.Facts[k]; ok {
				t.Errorf("%s: %s reported although the gateway's Envoy and log were not read", file, k)
			}
		}
	}
}

// A caller that is not a gateway: the step does not apply, no fact.
func TestGatewayRoutesSkipsOtherCallers(t *testing.T) {
	r := evaluateGatewayRoutes(cluster.Target{}, gatewayRoutesInput{Skip: "source pod shop/web-1 is not an Istio gateway"})
	if r.Status != StatusSkipped || len(r.Facts) != 0 {
		t.Errorf("%s %v", r.Status, r.Facts)
	}
}

// The target step says when the caller is a gateway: the runbook's first
// branch goes to the gateway step on it.
func TestTargetProbeTellsAGatewayCaller(t *testing.T) {
	gw := fxPod("istio-ingressgateway-5b7c9-x2x4t", mesh.SidecarClassic, func(p *corev1.Pod) {
		p.Namespace, p.Labels = "istio-system", map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway"}
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == mesh.ProxyContainer {
				p.Spec.Containers[i].Args = []string{"proxy", "router", "--domain", "$(POD_NAMESPACE).svc.cluster.local"}
			}
		}
	})
	web := fxPod("web-1", mesh.SidecarClassic, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"} })
	for _, c := range []struct {
		source *corev1.Pod
		want   bool
	}{{gw, true}, {web, false}} {
		tg := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: c.source.Namespace, Name: c.source.Name}}
		r := evaluateTarget(tg, targetInput{NamespaceFound: true, Namespace: fxNamespace("shop", nil), Service: fxService(intstr.FromInt32(8080)),
			Source: c.source, SourceFound: true})
		if got := r.Facts["target_source_gateway"]; got != c.want {
			t.Errorf("%s: target_source_gateway = %v, want %v", c.source.Name, got, c.want)
		}
	}
	r := evaluateTarget(cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "istio-system", Name: "gw"}},
		targetInput{NamespaceFound: true, Namespace: fxNamespace("shop", nil), Service: fxService(intstr.FromInt32(8080)), SourceProblem: "get pod istio-system/gw: forbidden"})
	if _, ok := r.Facts["target_source_gateway"]; ok {
		t.Error("a source that could not be read is not known not to be a gateway")
	}
}

// The probe through cluster reads, as a triage runs it: the config model
// reads the Gateways and the gateway's Service, the gateway's Envoy and log
// are read once; the listeners step, which judges a sidecar's outbound
// listeners, does not misjudge a gateway.
func TestGatewayRoutesThroughClusterReads(t *testing.T) {
	objs := meshtest.Objects(t, "mesh/testdata/model", "base.yaml", "gateway-vs-bound.yaml")
	f := newFakeCluster(t, objs...)
	src := cluster.PodRef{Namespace: "istio-system", Name: "istio-ingressgateway-5b7c9-x2x4t"}
	f.envoy[envoyKey(src, envoyadmin.ConfigDumpPath)] = []byte(`{"configs":[{"@type":"type.googleapis.com/envoy.admin.v3.RoutesConfigDump","dynamic_route_configs":[{"route_config":{
  "@type":"type.googleapis.com/envoy.config.route.v3.RouteConfiguration","name":"http.8080","ignore_port_in_host_matching":true,
  "virtual_hosts":[{"name":"shop.example.com:80","domains":["shop.example.com"],"routes":[{"match":{"prefix":"/"},"route":{"cluster":"outbound|8080||orders.shop.svc.cluster.local"}}]}]}}]}]}`)
	f.logs[logKey(src, mesh.ProxyContainer)] = []byte(`[2026-12-02T03:04:05.123Z] "GET /api/orders HTTP/1.1" 404 NR route_not_found - "-" 0 0 0 - "203.0.113.7" "curl/8.7.1" "6b1f8a9e-3c8d-4f5e-9a0b-1c2d3e4f5a6b" "www.shop.example.com" "-" - - 10.244.1.40:8080 203.0.113.7:51544 - -
[2026-12-02T03:04:06.123Z] "GET /api/orders HTTP/1.1" 200 - via_upstream - "-" 0 512 4 3 "203.0.113.7" "curl/8.7.1" "7b1f8a9e-3c8d-4f5e-9a0b-1c2d3e4f5a6b" "shop.example.com" "10.244.1.10:8080" outbound|8080||orders.shop.svc.cluster.local 10.244.1.40:41234 10.244.1.40:8080 203.0.113.7:51545 - -
`)
	tg := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &src}
	r := Run(context.Background(), GatewayRoutesProbe{}, cluster.NewCache(f), tg)
	if err := CheckFacts(GatewayRoutesProbe{}.Meta(), r); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{
		"gateway_selecting": []string{"istio-system/public"}, "gateway_route_to_target": true, "gateway_hosts": []string{"shop.example.com:80"},
		"gateway_envoy_route_to_target": true, "gateway_envoy_hosts": []string{"shop.example.com"},
		"gateway_log_nr": 1, "gateway_nr_hosts": []string{"www.shop.example.com"}, "gateway_nr_hosts_unrouted": []string{"www.shop.example.com"},
	} {
		if !reflect.DeepEqual(r.Facts[k], v) {
			t.Errorf("%s = %v, want %v", k, r.Facts[k], v)
		}
	}
	if r.Status != StatusWarn || !strings.Contains(r.Summary, "404 NR for host www.shop.example.com") {
		t.Errorf("%s: %s", r.Status, r.Summary)
	}
	if !strings.Contains(r.Evidence.Raw, "server istio-system/public servers[0] (port 80 HTTP): listener 8080") {
		t.Errorf("the gateway's Service was not read for its targetPort:\n%s", r.Evidence.Raw)
	}
	l := Run(context.Background(), EnvoyListenersProbe{}, f, tg)
	if l.Status != StatusSkipped || len(l.Facts) != 0 || !strings.Contains(l.Summary, "is a gateway") {
		t.Errorf("envoy-listeners on a gateway: %s %q %v", l.Status, l.Summary, l.Facts)
	}
}

// A Gateway API Gateway's Deployment is routed by its Gateway and
// HTTPRoutes; where they were not read (a dump without them), a
// VirtualService bound to the mesh only says nothing about it, so the
// configuration facts stay unknown (no gateway.vs-not-bound on them) and
// its Envoy's routes speak.
func TestGatewayRoutesGatewayAPIDeployment(t *testing.T) {
	objs := ossm2Objects(t, "mesh")
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			p.Labels = map[string]string{"gateway.networking.k8s.io/gateway-name": "public", "gateway.istio.io/managed": "istio.io-gateway-controller"}
		}
		if s, ok := o.(*corev1.Service); ok && s.Name == "istio-ingressgateway" {
			s.Spec.Selector = map[string]string{"gateway.networking.k8s.io/gateway-name": "public"}
		}
	}
	tg := cluster.Target{Namespace: "vanilla-playground", Service: "hello-openshift", Port: 8080,
		Source: &cluster.PodRef{Namespace: "istio-system", Name: "istio-ingressgateway-74ddf8dd9f-6p8p2"}}
	cv := gatewayView(t, objs, "istio-system/istio-ingressgateway-74ddf8dd9f-6p8p2", tg)
	// A dump without Gateway API objects: its Gateway and routes were not
	// read (not exported is not absent).
	cv.Config.GatewayAPI = &mesh.GatewayAPIConfig{Unread: map[string]string{mesh.KindGateway: "not in the input", mesh.KindHTTPRoute: "not in the input"}}
	v, err := cv.Config.ViewFor(cv.Caller, tg.Host(), tg.Port)
	if err != nil {
		t.Fatal(err)
	}
	cv.Views = []*mesh.View{v}
	rcs, err := envoy.StreamRouteConfigs(bytes.NewReader(realworldFile(t, "config_dump/ossm2_ingressgateway.json")))
	if err != nil {
		t.Fatal(err)
	}
	r := evaluateGatewayRoutes(tg, gatewayRoutesInput{CV: cv, Routes: envoy.GatewayRouteConfigs(rcs)})
	if err := CheckFacts(GatewayRoutesProbe{}.Meta(), r); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gateway_route_to_target", "gateway_vs_unbound", "gateway_vs_host_mismatch", "gateway_selecting"} {
		if _, ok := r.Facts[k]; ok {
			t.Errorf("%s = %v reported for a Gateway API gateway, whose HTTPRoutes were not read", k, r.Facts[k])
		}
	}
	if r.Facts["gateway_envoy_route_to_target"] != true || r.Status == StatusFail {
		t.Errorf("%s: %s; facts %v", r.Status, r.Summary, r.Facts)
	}
}

// The config model's Gateway API cases through the probe: each attachment,
// backend and listener mistake lands in its fact, from the model alone
// (the files carry no status).
func TestGatewayRoutesGatewayAPIModelCases(t *testing.T) {
	tg := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080,
		Source: &cluster.PodRef{Namespace: "shop", Name: "public-istio-6d8f9-k7x2p"}}
	for file, want := range map[string]Facts{
		"": {"gateway_api_gateway": "shop/public", "gateway_route_to_target": true, "gateway_api_unattached": []string{},
			"gateway_api_backend_not_found": []string{}, "gateway_api_backend_port_missing": []string{}, "gateway_api_partial": ""},
		"gatewayapi-backend-port-missing.yaml": {"gateway_api_backend_port_missing": []string{"HTTPRoute shop/orders rule 0: Service shop/orders:80"},
			"gateway_api_backend_source": "model", "gateway_api_broken_share": 100},
		"gatewayapi-backend-not-found.yaml": {"gateway_api_backend_not_found": []string{"HTTPRoute shop/orders rule 0: Service shop/orders-canary:8080"},
			"gateway_api_broken_share": 10, "gateway_route_to_target": true},
		"gatewayapi-ref-not-permitted.yaml": {"gateway_api_ref_not_permitted": []string{"HTTPRoute web/orders-from-web rule 0: Service shop/orders:8080"},
			"gateway_api_broken_share": 100, "gateway_route_to_target": false},
		"gatewayapi-ref-granted.yaml": {"gateway_api_ref_not_permitted": []string{}, "gateway_route_to_target": true},
		"gatewayapi-not-allowed-by-listeners.yaml": {"gateway_api_unattached": []string{
			"HTTPRoute shop/orders -> Gateway shop/public: NoMatchingListenerHostname", "HTTPRoute web/orders-web -> Gateway shop/public: NotAllowedByListeners"},
			"gateway_api_unattached_source": "model", "gateway_route_to_target": false},
		"gatewayapi-section-not-found.yaml": {"gateway_api_unattached": []string{"HTTPRoute shop/orders -> Gateway shop/public sectionName https: NoMatchingParent"},
			"gateway_api_unattached_why": `sectionName "https" not found`},
		"gatewayapi-listener-not-service-port.yaml": {"gateway_api_unattached": []string{}, "gateway_route_to_target": false,
			"gateway_listener_unreachable": []string{"shop/public~istio-autogenerated-k8s-gateway~http servers[0] (port 8080 HTTP): port 8080 is not a port of the gateway's Service shop/public-istio (its ports: 15021, 80): istiod builds no listener for it (Programmed False, AddressNotUsable: the service port should be specified, not the workload port)"}},
		"gatewayapi-cert-ref-not-permitted.yaml": {"gateway_api_ref_not_permitted": []string{
			`shop/public listener https (port 443 HTTPS): certificateRef shop-example-com/certs not accessible to a Gateway in namespace "shop" (missing a ReferenceGrant?)`}},
	} {
		files := []string{"base.yaml", "gatewayapi-base.yaml"}
		if file != "" {
			files = append(files, file)
		}
		objs := meshtest.Objects(t, "mesh/testdata/model", files...)
		cv := gatewayView(t, objs, meshtest.APIGW, tg)
		r := evaluateGatewayRoutes(tg, gatewayRoutesInput{CV: cv, RoutesProblem: "not read", LogProblem: "not read"})
		if err := CheckFacts(GatewayRoutesProbe{}.Meta(), r); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if !reflect.DeepEqual(r.Facts[k], v) {
				t.Errorf("%s: %s = %#v, want %#v (%s)", file, k, r.Facts[k], v, r.Summary)
			}
		}
		if file != "" && file != "gatewayapi-ref-granted.yaml" && r.Status != StatusFail {
			t.Errorf("%s: %s %s, want a failure", file, r.Status, r.Summary)
		}
	}
}

// A route that does not name the target: what links it to the target's
// 500s is the gateway's access log, whose 500 NC entries name its rule.
func TestGatewayRoutesGatewayAPIRouteNamedByItsLog(t *testing.T) {
	tg := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080,
		Source: &cluster.PodRef{Namespace: "shop", Name: "public-istio-6d8f9-k7x2p"}}
	objs := meshtest.Objects(t, "mesh/testdata/model", "base.yaml", "gatewayapi-base.yaml")
	for _, o := range objs {
		if r, ok := o.(*gatewayv1.HTTPRoute); ok {
			r.Spec.Rules[0].BackendRefs[0].Name = "ordres" // a typo: no Service
		}
	}
	cv := gatewayView(t, objs, meshtest.APIGW, tg)
	line := `[2026-12-02T03:04:05.123Z] "GET /api/orders HTTP/1.1" 500 NC cluster_not_found - "-" 0 0 0 - "203.0.113.7" "curl/8.7.1" "6b1f8a9e-3c8d-4f5e-9a0b-1c2d3e4f5a6b" "shop.example.com" "-" - - 10.244.1.50:80 203.0.113.7:51544 - shop.orders.0`
	e, ok := accesslog.ParseLine(line)
	if !ok || e.RouteName != "shop.orders.0" {
		t.Fatalf("parse %q: %+v", line, e)
	}
	without := evaluateGatewayRoutes(tg, gatewayRoutesInput{CV: cv, RoutesProblem: "not read", LogLines: 0})
	if got := without.Facts["gateway_api_backend_not_found"]; !reflect.DeepEqual(got, []string{}) {
		t.Errorf("without a log naming it, a route that does not send to the target is not its cause: %v", got)
	}
	r := evaluateGatewayRoutes(tg, gatewayRoutesInput{CV: cv, RoutesProblem: "not read", NC500: []accesslog.Entry{e}, LogLines: 1})
	if err := CheckFacts(GatewayRoutesProbe{}.Meta(), r); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{
		"gateway_log_nc500": 1, "gateway_log_nc500_routes": []string{"shop.orders.0"},
		"gateway_api_backend_not_found": []string{"HTTPRoute shop/orders rule 0: Service shop/ordres:8080"},
	} {
		if !reflect.DeepEqual(r.Facts[k], v) {
			t.Errorf("%s = %v, want %v", k, r.Facts[k], v)
		}
	}
}
