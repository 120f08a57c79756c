package mesh_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// ModelCases are the rules of what istiod gives a caller, each written as
// YAML in testdata/model over base.yaml. The lab runs the same cases
// against a real API server and istiod.
var modelCases = []struct {
	file   string
	caller string // "web/web-1", "batch/report-1", or "meshed web" (a meshed pod of unknown labels)
	host   string
	mesh   string // mesh config YAML
	check  func(t *testing.T, v *mesh.View)
}{
	{file: "vs-host-not-destination.yaml", caller: "web/web-1", host: "ratings.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v9|orders.shop.svc.cluster.local")
	}},
	{file: "vs-host-not-destination.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantNoBreak(t, v)
		if v.VirtualService != nil {
			t.Errorf("orders is routed by %s/%s, a VirtualService of another host", v.VirtualService.Namespace, v.VirtualService.Name)
		}
	}},
	{file: "vs-without-hosts.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantNoBreak(t, v)
	}},
	{file: "mirror-undefined-subset.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantNoBreak(t, v)
		cl := v.Clusters["outbound|8080|v3|orders.shop.svc.cluster.local"]
		if cl == nil || cl.Exists || !cl.Mirror {
			t.Errorf("the mirror's cluster = %+v, want a mirror that istiod does not build", cl)
		}
	}},
	{file: "subset-on-region.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantNoBreak(t, v)
		if cl := v.Clusters["outbound|8080|eu|orders.shop.svc.cluster.local"]; cl == nil || cl.Serving() != 2 {
			t.Errorf("subset eu selects %v, want both endpoints (their node is in eu-west-1)", cl)
		}
	}},
	{file: "vs-gateway-only.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantNoBreak(t, v)
		wantVerdict(t, v.VirtualServices, "shop/orders-ingress", false, "bound to gateways")
	}},
	{file: "workload-permissive-under-strict.yaml", caller: "batch/report-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantMismatches(t, v, nil)
	}},
	{file: "strict-namespace.yaml", caller: "batch/report-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantMismatches(t, v, map[string]string{"orders-v1": mesh.MismatchPlaintextStrict, "orders-v2": mesh.MismatchPlaintextStrict})
	}},
	{file: "strict-namespace.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantMismatches(t, v, nil)
		for _, e := range v.Clusters["outbound|8080||orders.shop.svc.cluster.local"].Endpoints {
			if e.Sends != mesh.SendsMTLS {
				t.Errorf("auto mTLS sends %s to %s, want mtls", e.Sends, e.Pod)
			}
		}
	}},
	{file: "service-exported-to-own-namespace.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		if v.Visibility.Visible || v.Visibility.Fallback != mesh.PassthroughCluster || !strings.Contains(v.Visibility.HiddenBy, "exportTo .") {
			t.Errorf("visibility %+v, want hidden by exportTo with PassthroughCluster", v.Visibility)
		}
		wantMismatches(t, v, map[string]string{"orders-v1": mesh.MismatchPlaintextStrict, "orders-v2": mesh.MismatchPlaintextStrict})
	}},
	{file: "service-exported-to-own-namespace.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", mesh: "outboundTrafficPolicy: {mode: REGISTRY_ONLY}", check: func(t *testing.T, v *mesh.View) {
		if v.Visibility.Visible || v.Visibility.Fallback != mesh.BlackHoleCluster {
			t.Errorf("visibility %+v, want BlackHoleCluster under REGISTRY_ONLY", v.Visibility)
		}
		wantBreak(t, v, mesh.BreakBlackHole, 100, mesh.BlackHoleCluster)
	}},
	{file: "service-exported-to-own-namespace.yaml", caller: "shop/orders-v1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		if !v.Visibility.Visible {
			t.Errorf("hidden from its own namespace: %+v", v.Visibility)
		}
	}},
	{file: "sidecar-egress-hides.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		if v.Visibility.Visible || !strings.Contains(v.Visibility.HiddenBy, "Sidecar web/default egress hosts") || v.Visibility.Fallback != mesh.PassthroughCluster {
			t.Errorf("visibility %+v, want hidden by web/default's egress hosts", v.Visibility)
		}
	}},
	{file: "selectorless-empty.yaml", caller: "web/web-1", host: "payments.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantBreak(t, v, mesh.BreakServiceEmpty, 100, "outbound|8080||payments.shop.svc.cluster.local")
	}},
	{file: "dr-caller-namespace-wins.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 50, "outbound|8080|v2|orders.shop.svc.cluster.local")
		wantVerdict(t, v.DestinationRules, "web/orders-from-web", true, "applies")
		wantVerdict(t, v.DestinationRules, "shop/orders", false, "shadowed")
	}},
	{file: "dr-caller-namespace-wins.yaml", caller: "shop/orders-v1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantNoBreak(t, v)
	}},
	{file: "dr-workload-selector.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v2|orders.shop.svc.cluster.local")
		wantVerdict(t, v.DestinationRules, "web/orders-for-web-app", true, "applies")
	}},
	{file: "dr-workload-selector.yaml", caller: "meshed web", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		if len(v.Unknown) == 0 {
			t.Error("a workload-selected rule and an unknown caller: the view must say it cannot judge it")
		}
	}},
	{file: "dr-exported-to-own-namespace.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v2|orders.shop.svc.cluster.local")
		wantVerdict(t, v.DestinationRules, "shop/orders", false, "not exported to namespace web")
	}},
	{file: "dr-exported-to-own-namespace.yaml", caller: "shop/orders-v1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantNoBreak(t, v)
	}},
	{file: "port-level-replaces.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		cl := v.Clusters["outbound|8080||orders.shop.svc.cluster.local"]
		if cl.TLS.Mode != "" || cl.Policy.GetConnectionPool().GetTcp().GetMaxConnections() != 100 {
			t.Errorf("tls %q, pool %v: want the port-level entry alone (no tls, maxConnections 100)", cl.TLS.Mode, cl.Policy.GetConnectionPool())
		}
	}},
	{file: "canary-ten-percent-empty.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetEmpty, 10, "outbound|8080|v3|orders.shop.svc.cluster.local")
		if max, _ := v.BrokenShare(mesh.BreakSubsetEmpty); max != 10 {
			t.Errorf("broken share %d%%, want 10%%", max)
		}
	}},
	{file: "automtls-label-without-sidecar.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantMismatches(t, v, map[string]string{"orders-v2": mesh.MismatchMTLSNoSidecar})
	}},
	{file: "namespace-disable-auto-mtls.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantMismatches(t, v, nil)
		for _, e := range v.Clusters["outbound|8080||orders.shop.svc.cluster.local"].Endpoints {
			if e.Sends != mesh.SendsPlaintext {
				t.Errorf("sends %s to %s under a namespace DISABLE, want plaintext", e.Sends, e.Pod)
			}
		}
	}},
	{file: "dr-host-near-miss.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		wantVerdict(t, v.DestinationRules, "shop/orders", false, "never applies")
		wantMismatches(t, v, nil)
	}},
	{file: "header-route-only.yaml", caller: "web/web-1", host: "orders.shop.svc.cluster.local", check: func(t *testing.T, v *mesh.View) {
		if !v.Unmatched {
			t.Error("a VirtualService with a header route only: requests without the header have no route (404 NR)")
		}
	}},
}

func TestModel(t *testing.T) {
	for _, tc := range modelCases {
		name := strings.TrimSuffix(tc.file, ".yaml") + "/" + tc.caller
		if tc.mesh != "" {
			name += "/" + tc.mesh
		}
		t.Run(name, func(t *testing.T) {
			c := loadConfig(t, tc.mesh, "base.yaml", tc.file)
			v, err := c.ViewFor(callerOf(t, c, tc.caller), tc.host, 8080)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, v)
			if t.Failed() {
				t.Logf("chain:\n%s", strings.Join(v.Chain(), "\n"))
			}
		})
	}
}

// loadConfig reads files (later ones replace objects of the same kind,
// namespace and name) into a Config.
func loadConfig(t *testing.T, meshYAML string, files ...string) *mesh.Config {
	t.Helper()
	byKey := map[string]int{}
	var objects []runtime.Object
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("testdata", "model", f))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifests.Decode(f, data, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			m, _ := meta.Accessor(o)
			key := o.GetObjectKind().GroupVersionKind().Kind + "/" + m.GetNamespace() + "/" + m.GetName()
			if i, ok := byKey[key]; ok {
				objects[i] = o
				continue
			}
			byKey[key] = len(objects)
			objects = append(objects, o)
		}
	}
	mc := mesh.MeshConfig{}
	if meshYAML != "" {
		raw, err := mesh.ParseMeshConfig(meshYAML)
		if err != nil {
			t.Fatal(err)
		}
		mc = mesh.MeshConfig{Raw: raw, Found: true}
	}
	return mesh.ConfigFromObjects(objects, mc, "istio-system")
}

func callerOf(t *testing.T, c *mesh.Config, spec string) mesh.Caller {
	t.Helper()
	if ns, ok := strings.CutPrefix(spec, "meshed "); ok {
		return mesh.MeshedCallerIn(ns)
	}
	ns, name, _ := strings.Cut(spec, "/")
	for _, sd := range c.Services {
		if p := sd.Pods[name]; p != nil && p.Namespace == ns {
			return mesh.CallerFromPod(p)
		}
	}
	pods := map[string]mesh.Caller{
		"web/web-1":      {Namespace: "web", Name: "web-1", Labels: map[string]string{"app": "web", "security.istio.io/tlsMode": "istio"}, Sidecar: true},
		"batch/report-1": {Namespace: "batch", Name: "report-1", Labels: map[string]string{"app": "report"}, Sidecar: false},
	}
	caller, ok := pods[spec]
	if !ok {
		t.Fatalf("no caller %q", spec)
	}
	return caller
}

func wantBreak(t *testing.T, v *mesh.View, reason string, percent int, cluster string) {
	t.Helper()
	for _, b := range v.Breaks() {
		if b.Destination.Cluster == cluster {
			if b.Reason != reason || b.Destination.Percent != percent {
				t.Errorf("break on %s: %s %d%%, want %s %d%% (%s)", cluster, b.Reason, b.Destination.Percent, reason, percent, b.Why)
			}
			return
		}
	}
	t.Errorf("no break on %s (breaks %+v)", cluster, v.Breaks())
}

func wantNoBreak(t *testing.T, v *mesh.View) {
	t.Helper()
	if b := v.Breaks(); len(b) > 0 {
		t.Errorf("breaks %+v, want none", b)
	}
}

func wantVerdict(t *testing.T, verdicts []mesh.RuleVerdict, ref string, applies bool, why string) {
	t.Helper()
	for _, v := range verdicts {
		if v.Ref() == ref {
			if v.Applies != applies || !strings.Contains(v.Why, why) {
				t.Errorf("%s: applies %v (%s), want %v (%s)", ref, v.Applies, v.Why, applies, why)
			}
			return
		}
	}
	t.Errorf("no verdict on %s in %+v", ref, verdicts)
}

// wantMismatches checks each endpoint's TLS mismatch by pod; pods not named
// must have none.
func wantMismatches(t *testing.T, v *mesh.View, want map[string]string) {
	t.Helper()
	seen := 0
	for _, cl := range v.Clusters {
		for _, e := range cl.Endpoints {
			seen++
			w := want[e.Pod]
			if w == "" {
				w = mesh.MismatchNone
			}
			if e.Mismatch != w {
				t.Errorf("%s in %s: mismatch %s (sends %s, accepts %s from %s), want %s", e.Pod, cl.Name, e.Mismatch, e.Sends, e.Accepts.Mode, e.Accepts.From, w)
			}
		}
	}
	if seen == 0 {
		t.Error("no endpoint to judge")
	}
}
