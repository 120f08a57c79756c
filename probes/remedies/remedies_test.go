package remedies_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/patch"
	"github.com/meshtriage/meshtriage/probes/remedies"
	"github.com/meshtriage/meshtriage/runbook"
)

// world is a cluster of YAML documents, as check -f reads them.
func world(t *testing.T, docs string) cluster.Cluster {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(path, []byte(docs), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := manifests.Load([]string{path}, manifests.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(recorded.FromObjects("test", set.Objects))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const orders = `apiVersion: v1
kind: Service
metadata: {name: orders, namespace: shop}
spec:
  selector: {app: orders}
  ports: [{name: http, port: 8080, targetPort: 8080}]
`

func pod(name, version string) string {
	return `---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: shop, labels: {app: orders, version: ` + version + `}}
spec:
  containers: [{name: app, image: x, ports: [{containerPort: 8080}]}, {name: istio-proxy, image: proxyv2}]
status: {phase: Running, podIP: 10.0.0.` + name[len(name)-1:] + `, conditions: [{type: Ready, status: "True"}]}
`
}

func compute(t *testing.T, r remedies.Remedy, c cluster.Cluster, cause string) remedies.Output {
	t.Helper()
	return r.Compute(context.Background(), &remedies.Input{Cluster: c, Target: cluster.Target{Namespace: "shop", Service: "orders", Port: 8080}, Cause: cause, Facts: probes.Facts{}})
}

func TestTuneOutlierInASubsetIsAJSONPatchOfThatSubset(t *testing.T) {
	c := world(t, orders+pod("orders-1", "v1")+`---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: orders, namespace: shop}
spec:
  host: orders.shop.svc.cluster.local
  subsets:
    - name: v1
      labels: {version: v1}
      trafficPolicy:
        outlierDetection: {consecutiveGatewayErrors: 1, interval: 5s, maxEjectionPercent: 100}
`)
	out := compute(t, remedies.TuneOutlier{}, c, "outlier.all-ejected")
	if len(out.Patches) != 1 || out.Patches[0].Type != patch.JSON {
		t.Fatalf("out = %+v", out)
	}
	body := string(out.Patches[0].Patch)
	for _, want := range []string{
		`{"op":"test","path":"/spec/subsets/0/trafficPolicy/outlierDetection/consecutiveGatewayErrors","value":1}`,
		`{"op":"replace","path":"/spec/subsets/0/trafficPolicy/outlierDetection/consecutiveGatewayErrors","value":5}`,
		`{"op":"replace","path":"/spec/subsets/0/trafficPolicy/outlierDetection/maxEjectionPercent","value":50}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("patch lacks %s: %s", want, body)
		}
	}
	if strings.Contains(body, "consecutive5xxErrors") {
		t.Errorf("the patch adds a field beside the offending one: %s", body)
	}
}

func TestAlignSubsetLabelsFollowsARenamedVersion(t *testing.T) {
	rule := `---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: orders, namespace: shop}
spec:
  host: orders.shop.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: orders, namespace: shop}
spec:
  hosts: [orders.shop.svc.cluster.local]
  http: [{route: [{destination: {host: orders.shop.svc.cluster.local, subset: v1}, weight: 50}, {destination: {host: orders.shop.svc.cluster.local, subset: v2}, weight: 50}]}]
`
	c := world(t, orders+pod("orders-1", "v1")+pod("orders-2", "v2-rc1")+rule)
	out := compute(t, remedies.AlignSubsetLabels{}, c, "dr.subset-no-pods")
	if len(out.Patches) != 1 || !strings.Contains(string(out.Patches[0].Patch), `{"op":"replace","path":"/spec/subsets/1/labels/version","value":"v2-rc1"}`) {
		t.Fatalf("out = %+v", out)
	}
	// Two candidate values: the team's call, said so.
	c = world(t, orders+pod("orders-1", "v1")+pod("orders-2", "v2-rc1")+pod("orders-3", "v2-rc2")+rule)
	if out := compute(t, remedies.AlignSubsetLabels{}, c, "dr.subset-no-pods"); len(out.Patches) != 0 || !strings.Contains(out.Unpatchable, "2 values of version") {
		t.Errorf("two candidates: %+v", out)
	}
}

func TestShiftWeightOfARouteWithNoServingDestination(t *testing.T) {
	c := world(t, orders+pod("orders-1", "v1")+`---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: orders, namespace: shop}
spec:
  host: orders.shop.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: orders, namespace: shop}
spec:
  hosts: [orders.shop.svc.cluster.local]
  http: [{route: [{destination: {host: orders.shop.svc.cluster.local, subset: v2}}]}]
`)
	out := compute(t, remedies.ShiftWeight{}, c, "dr.subset-no-pods")
	if len(out.Patches) != 1 || !strings.Contains(string(out.Patches[0].Patch), `{"op":"add","path":"/spec/http/0/route/0/destination/subset","value":"v1"}`) {
		t.Fatalf("out = %+v", out)
	}
}

// Every remedy the runbook names exists and fixes the cause it is named
// for; every remedy is named by the runbook.
func TestRunbookAndRemediesAgree(t *testing.T) {
	cat := runbook.CatalogueOf(probes.All(), assets.Causes).WithRemedies(remedies.IDs(), remedies.VarDocs)
	g, err := runbook.LoadFS(assets.FS, assets.Runbook503, cat)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	reg := remedies.ByID()
	for _, c := range g.Causes {
		for _, f := range c.Fixes {
			if f.Remedy == "" {
				continue
			}
			used[f.Remedy] = true
			if m := reg[f.Remedy].Meta(); !contains(m.Causes, c.ID) {
				t.Errorf("cause %s fix %s names remedy %s, which is for %v", c.ID, f.ID, f.Remedy, m.Causes)
			}
		}
	}
	for id := range reg {
		if !used[id] {
			t.Errorf("remedy %s is named by no fix of the runbook", id)
		}
	}
	for _, r := range remedies.All() {
		if m := r.Meta(); m.Does == "" || len(m.Causes) == 0 {
			t.Errorf("remedy %s does not describe itself: %+v", m.ID, m)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A caller with a sidecar whose app runs as the proxy's UID sends the
// plaintext: no injection gives it what it has, and the remedy says what
// to change instead.
func TestEnableInjectionNamesTheUIDOfACallerThatGoesAroundItsSidecar(t *testing.T) {
	c := world(t, orders+pod("orders-1", "v1")+`---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec:
  containers:
  - {name: web, image: web, securityContext: {runAsUser: 1337}}
  - {name: istio-proxy, image: proxyv2, securityContext: {runAsUser: 1337, runAsGroup: 1337}}
status: {phase: Running, podIP: 10.0.0.9}
`)
	out := remedies.EnableInjection{}.Compute(context.Background(), &remedies.Input{Cluster: c, Cause: "mtls.plaintext-to-strict", Facts: probes.Facts{},
		Target: cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "web-1"}}})
	if len(out.Patches) != 0 || !strings.Contains(out.Unpatchable, "container web runs as UID 1337") || !strings.Contains(out.Unpatchable, "sidecar.app-runs-as-proxy-uid") {
		t.Errorf("remedy %+v: want no patch, naming the container that runs as the proxy's UID", out)
	}
}

// Probes left as they are get rewritten again by annotating the
// Deployment's pod template (the injector reads the annotation first);
// pods whose probes are all rewritten are no reason to patch.
func TestRewriteProbesAnnotatesTheTemplate(t *testing.T) {
	probed := func(name, annotations, probe string) string {
		return `---
apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  generateName: orders-6d8f7c9b5-
  namespace: shop
  labels: {app: orders, pod-template-hash: 6d8f7c9b5}
  annotations: {` + annotations + `}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: orders-6d8f7c9b5, uid: u1, controller: true}]
spec:
  containers:
  - {name: orders, image: x, ports: [{containerPort: 8080}], readinessProbe: {httpGet: ` + probe + `}}
  - {name: istio-proxy, image: proxyv2}
status: {phase: Running, podIP: 10.0.0.7}
`
	}
	off := `sidecar.istio.io/rewriteAppHTTPProbers: "false"`
	c := world(t, orders+probed("orders-6d8f7c9b5-x2k9p", off, "{port: 8080, path: /ready}"))
	out := compute(t, remedies.RewriteProbes{}, c, "probe.blocked-by-strict")
	if len(out.Patches) != 1 || out.NotSimulated == "" {
		t.Fatalf("remedy %+v: want one patch, not simulated", out)
	}
	p := out.Patches[0]
	if p.Kind != "Deployment" || p.Name != "orders" || p.Type != patch.Merge ||
		string(p.Patch) != `{"spec":{"template":{"metadata":{"annotations":{"sidecar.istio.io/rewriteAppHTTPProbers":"true"}}}}}` {
		t.Errorf("patch %s %s %s %s", p.Kind, p.Name, p.Type, p.Patch)
	}
	c = world(t, orders+probed("orders-6d8f7c9b5-x2k9p", "", "{port: 15020, path: /app-health/orders/readyz}"))
	if out := compute(t, remedies.RewriteProbes{}, c, "probe.blocked-by-strict"); len(out.Patches) != 0 || out.Unpatchable == "" {
		t.Errorf("remedy %+v: every probe is rewritten, want no patch", out)
	}
}

// The 426s' hop says whose proxy to tell to accept HTTP/1.0: the caller's
// for its outbound, the Service's pods' for their inbound; what the
// annotation already says is kept.
func TestAcceptHTTP10PatchesTheProxiesThatAnswered426(t *testing.T) {
	owned := func(name, app, hash, annotations string) string {
		return `---
apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  generateName: ` + app + `-` + hash + `-
  namespace: shop
  labels: {app: ` + app + `, pod-template-hash: ` + hash + `}
  annotations: {` + annotations + `}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: ` + app + `-` + hash + `, uid: u-` + app + `, controller: true}]
spec:
  containers: [{name: ` + app + `, image: x, ports: [{containerPort: 8080}]}, {name: istio-proxy, image: proxyv2}]
status: {phase: Running, podIP: 10.0.0.7}
`
	}
	c := world(t, orders+owned("orders-6d8f7c9b5-x2k9p", "orders", "6d8f7c9b5", `proxy.istio.io/config: "holdApplicationUntilProxyStarts: true"`)+
		owned("frontend-7f6c9d8b4-t5qzx", "frontend", "7f6c9d8b4", ""))
	for _, c2 := range []struct {
		hop, deployment, patch string
	}{
		{"sidecar-outbound", "frontend", `{"spec":{"template":{"metadata":{"annotations":{"proxy.istio.io/config":"proxyMetadata:\n  ISTIO_META_HTTP10: \"1\"\n"}}}}}`},
		{"sidecar-inbound", "orders", `{"spec":{"template":{"metadata":{"annotations":{"proxy.istio.io/config":"holdApplicationUntilProxyStarts: true\nproxyMetadata:\n  ISTIO_META_HTTP10: \"1\"\n"}}}}}`},
	} {
		out := remedies.AcceptHTTP10{}.Compute(context.Background(), &remedies.Input{Cluster: c, Cause: "http.1.0-rejected",
			Facts:  probes.Facts{"log_http10_hops": []string{c2.hop}},
			Target: cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "frontend-7f6c9d8b4-t5qzx"}}})
		if len(out.Patches) != 1 || out.NotSimulated == "" {
			t.Fatalf("%s: remedy %+v, want one patch, not simulated", c2.hop, out)
		}
		if p := out.Patches[0]; p.Kind != "Deployment" || p.Name != c2.deployment || string(p.Patch) != c2.patch {
			t.Errorf("%s: patch of %s %s: %s, want %s %s", c2.hop, p.Kind, p.Name, p.Patch, c2.deployment, c2.patch)
		}
	}
}

// The app's spec binds loopback: the template's argument (or variable)
// is replaced after a test of its old value; one told by its default or a
// config file has nothing in the spec to change.
func TestBindAllAddressesReplacesTheSpecLoopback(t *testing.T) {
	withApp := func(app string) string {
		return `---
apiVersion: v1
kind: Pod
metadata:
  name: orders-6d8f7c9b5-x2k9p
  generateName: orders-6d8f7c9b5-
  namespace: shop
  labels: {app: orders, pod-template-hash: 6d8f7c9b5}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: orders-6d8f7c9b5, uid: u-orders, controller: true}]
spec:
  containers: [{name: istio-proxy, image: proxyv2}, ` + app + `, {name: metrics, image: m}]
status: {phase: Running, podIP: 10.0.0.7}
`
	}
	for _, c := range []struct {
		name, app, patch string
	}{
		{"--host VALUE", `{name: orders, image: x, args: [app:app, --host, 127.0.0.1, --port, "8080"], ports: [{containerPort: 8080}]}`,
			`[{"op":"test","path":"/spec/template/spec/containers/0/name","value":"orders"},{"op":"test","path":"/spec/template/spec/containers/0/args/2","value":"127.0.0.1"},{"op":"replace","path":"/spec/template/spec/containers/0/args/2","value":"0.0.0.0"}]`},
		{"--bind=HOST:PORT in command", `{name: orders, image: x, command: [gunicorn, "--bind=[::1]:8080"], ports: [{containerPort: 8080}]}`,
			`[{"op":"test","path":"/spec/template/spec/containers/0/name","value":"orders"},{"op":"test","path":"/spec/template/spec/containers/0/command/1","value":"--bind=[::1]:8080"},{"op":"replace","path":"/spec/template/spec/containers/0/command/1","value":"--bind=[::]:8080"}]`},
		{"env", `{name: orders, image: x, env: [{name: LOG_LEVEL, value: info}, {name: APP_HOST, value: localhost}], ports: [{containerPort: 8080}]}`,
			`[{"op":"test","path":"/spec/template/spec/containers/0/name","value":"orders"},{"op":"test","path":"/spec/template/spec/containers/0/env/1/value","value":"localhost"},{"op":"replace","path":"/spec/template/spec/containers/0/env/1/value","value":"0.0.0.0"}]`},
	} {
		out := compute(t, remedies.BindAllAddresses{}, world(t, orders+withApp(c.app)), "app.localhost-bound")
		if len(out.Patches) != 1 || out.NotSimulated == "" {
			t.Fatalf("%s: remedy %+v, want one patch, not simulated", c.name, out)
		}
		if p := out.Patches[0]; p.Kind != "Deployment" || p.Name != "orders" || p.Type != "json" || string(p.Patch) != c.patch {
			t.Errorf("%s: %s %s %s %s, want Deployment orders json\n%s", c.name, p.Kind, p.Name, p.Type, p.Patch, c.patch)
		}
	}
	out := compute(t, remedies.BindAllAddresses{}, world(t, orders+withApp(`{name: orders, image: x, args: [--host, 0.0.0.0], ports: [{containerPort: 8080}]}`)), "app.localhost-bound")
	if out.Unpatchable == "" || len(out.Patches) != 0 {
		t.Errorf("a wildcard bind: %+v, want no patch", out)
	}
}

// MySQL on a port named http-mysql: appProtocol tcp is added to that port
// only (istiod reads it before the name), guarded by the port's number.
func TestDeclareTCPSetsAppProtocolOnTheServerFirstPort(t *testing.T) {
	c := world(t, `apiVersion: v1
kind: Service
metadata: {name: mysql, namespace: shop}
spec:
  selector: {app: mysql}
  ports: [{name: http-metrics, port: 9104, targetPort: 9104}, {name: http-mysql, port: 3306, targetPort: 3306}]
`)
	in := &remedies.Input{Cluster: c, Target: cluster.Target{Namespace: "shop", Service: "mysql", Port: 3306}, Cause: "protocol.server-first",
		Facts: probes.Facts{"portproto_server_first_ports": []string{"3306"}}}
	out := remedies.DeclareTCP{}.Compute(context.Background(), in)
	if len(out.Patches) != 1 || out.Patches[0].Type != patch.JSON {
		t.Fatalf("out = %+v", out)
	}
	body := string(out.Patches[0].Patch)
	want := `[{"op":"test","path":"/spec/ports/1/port","value":3306},{"op":"add","path":"/spec/ports/1/appProtocol","value":"tcp"}]`
	if body != want {
		t.Errorf("patch %s, want %s", body, want)
	}
	in.Facts = probes.Facts{"portproto_server_first_ports": []string{}}
	if out := (remedies.DeclareTCP{}).Compute(context.Background(), in); len(out.Patches) != 0 || out.Unpatchable == "" {
		t.Errorf("no server-first port: %+v", out)
	}
}
