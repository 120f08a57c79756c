// Package meshtest holds the config model's cases, so that the unit tests
// and the lab (a real API server, a real istiod) run the same table.
package meshtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Case is one rule of what istiod gives a caller, written as YAML in
// probes/mesh/testdata/model over base.yaml, with the check of the view.
type Case struct {
	File string
	// Over is a file the case's File is layered on, over base.yaml ("" for
	// none): gatewayapi-base.yaml's Gateway API ingress.
	Over string
	// Caller is "NS/POD" (a pod of the files), or "meshed NS" (a meshed
	// pod of NS whose labels are unknown).
	Caller string
	Host   string
	Port   int32
	// Mesh is the mesh config YAML, "" for none.
	Mesh  string
	Check func(t testing.TB, v *mesh.View)
}

// Cases are the model's table. The unit tests build the Config from the
// files; the lab loads the same files into a real API server and reads them
// back as a triage does.
var Cases = []Case{
	{File: "multinetwork-eastwest-gateway.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantEndpoints(t, v, "outbound|8080||orders.shop.svc.cluster.local", "orders-v1", "orders-v4", "")
		wantGatewayEndpoint(t, v, "outbound|8080||orders.shop.svc.cluster.local", "172.18.2.10", 15443, "network2")
	}},
	{File: "multinetwork-eastwest-gateway.yaml", Caller: "web/web-2", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantEndpoints(t, v, "outbound|8080||orders.shop.svc.cluster.local", "orders-v1", "orders-v4", "")
		wantGatewayEndpoint(t, v, "outbound|8080||orders.shop.svc.cluster.local", "172.18.2.10", 15443, "network2")
	}},
	{File: "vs-host-not-destination.yaml", Caller: "web/web-1", Host: "ratings.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v9|orders.shop.svc.cluster.local")
	}},
	{File: "vs-host-not-destination.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		if v.VirtualService != nil {
			t.Errorf("orders is routed by %s/%s, a VirtualService of another host", v.VirtualService.Namespace, v.VirtualService.Name)
		}
	}},
	{File: "vs-without-hosts.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
	}},
	{File: "mirror-undefined-subset.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		cl := v.Clusters["outbound|8080|v3|orders.shop.svc.cluster.local"]
		if cl == nil || cl.Exists || !cl.Mirror {
			t.Errorf("the mirror's cluster = %+v, want a mirror that istiod does not build", cl)
		}
	}},
	{File: "subset-on-region.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		if cl := v.Clusters["outbound|8080|eu|orders.shop.svc.cluster.local"]; cl == nil || cl.Serving() != 2 {
			t.Errorf("subset eu selects %v, want both endpoints (their node is in eu-west-1)", cl)
		}
	}},
	{File: "vs-gateway-only.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		wantVerdict(t, v.VirtualServices, "shop/orders-ingress", false, "bound to gateways")
	}},
	{File: "workload-permissive-under-strict.yaml", Caller: "batch/report-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, nil)
	}},
	{File: "strict-namespace.yaml", Caller: "batch/report-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, map[string]string{"orders-v1": mesh.MismatchPlaintextStrict, "orders-v2": mesh.MismatchPlaintextStrict})
	}},
	{File: "strict-namespace.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, nil)
		for _, e := range v.Clusters["outbound|8080||orders.shop.svc.cluster.local"].Endpoints {
			if e.Sends != mesh.SendsMTLS {
				t.Errorf("auto mTLS sends %s to %s, want mtls", e.Sends, e.Pod)
			}
		}
	}},
	{File: "service-exported-to-own-namespace.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		if v.Visibility.Visible || v.Visibility.Fallback != mesh.PassthroughCluster || !strings.Contains(v.Visibility.HiddenBy, "exportTo .") {
			t.Errorf("visibility %+v, want hidden by exportTo with PassthroughCluster", v.Visibility)
		}
		wantMismatches(t, v, map[string]string{"orders-v1": mesh.MismatchPlaintextStrict, "orders-v2": mesh.MismatchPlaintextStrict})
	}},
	{File: "service-exported-to-own-namespace.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Mesh: "outboundTrafficPolicy: {mode: REGISTRY_ONLY}", Check: func(t testing.TB, v *mesh.View) {
		if v.Visibility.Visible || v.Visibility.Fallback != mesh.BlackHoleCluster {
			t.Errorf("visibility %+v, want BlackHoleCluster under REGISTRY_ONLY", v.Visibility)
		}
		wantBreak(t, v, mesh.BreakBlackHole, 100, mesh.BlackHoleCluster)
	}},
	{File: "service-exported-to-own-namespace.yaml", Caller: "shop/orders-v1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		if !v.Visibility.Visible {
			t.Errorf("hidden from its own namespace: %+v", v.Visibility)
		}
	}},
	{File: "sidecar-egress-hides.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		if v.Visibility.Visible || !strings.Contains(v.Visibility.HiddenBy, "Sidecar web/default egress hosts") || v.Visibility.Fallback != mesh.PassthroughCluster {
			t.Errorf("visibility %+v, want hidden by web/default's egress hosts", v.Visibility)
		}
	}},
	{File: "selectorless-empty.yaml", Caller: "web/web-1", Host: "payments.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakServiceEmpty, 100, "outbound|8080||payments.shop.svc.cluster.local")
	}},
	{File: "dr-caller-namespace-wins.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 50, "outbound|8080|v2|orders.shop.svc.cluster.local")
		wantVerdict(t, v.DestinationRules, "web/orders-from-web", true, "applies")
		wantVerdict(t, v.DestinationRules, "shop/orders", false, "shadowed")
	}},
	{File: "dr-caller-namespace-wins.yaml", Caller: "shop/orders-v1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
	}},
	{File: "dr-workload-selector.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v2|orders.shop.svc.cluster.local")
		wantVerdict(t, v.DestinationRules, "web/orders-for-web-app", true, "applies")
	}},
	{File: "dr-workload-selector.yaml", Caller: "meshed web", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		if len(v.Unknown) == 0 {
			t.Error("a workload-selected rule and an unknown Caller: the view must say it cannot judge it")
		}
	}},
	{File: "dr-exported-to-own-namespace.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v2|orders.shop.svc.cluster.local")
		wantVerdict(t, v.DestinationRules, "shop/orders", false, "not exported to namespace web")
	}},
	{File: "dr-exported-to-own-namespace.yaml", Caller: "shop/orders-v1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
	}},
	{File: "port-level-replaces.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		cl := v.Clusters["outbound|8080||orders.shop.svc.cluster.local"]
		if cl.TLS.Mode != "" || cl.Policy.GetConnectionPool().GetTcp().GetMaxConnections() != 100 {
			t.Errorf("tls %q, pool %v: want the port-level entry alone (no tls, maxConnections 100)", cl.TLS.Mode, cl.Policy.GetConnectionPool())
		}
	}},
	{File: "canary-ten-percent-empty.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetEmpty, 10, "outbound|8080|v3|orders.shop.svc.cluster.local")
		if max, _ := v.BrokenShare(mesh.BreakSubsetEmpty); max != 10 {
			t.Errorf("broken share %d%%, want 10%%", max)
		}
	}},
	{File: "automtls-label-without-sidecar.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, map[string]string{"orders-v2": mesh.MismatchMTLSNoSidecar})
	}},
	{File: "namespace-disable-auto-mtls.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, nil)
		for _, e := range v.Clusters["outbound|8080||orders.shop.svc.cluster.local"].Endpoints {
			if e.Sends != mesh.SendsPlaintext {
				t.Errorf("sends %s to %s under a namespace DISABLE, want plaintext", e.Sends, e.Pod)
			}
		}
	}},
	{File: "dr-host-near-miss.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantVerdict(t, v.DestinationRules, "shop/orders", false, "never applies")
		wantMismatches(t, v, nil)
	}},
	{File: "header-route-only.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		if !v.Unmatched {
			t.Error("a VirtualService with a header route only: requests without the header have no route (404 NR)")
		}
	}},
	{File: "dr-selector-shadows-without-fallback.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v2|orders.shop.svc.cluster.local")
		wantVerdict(t, v.DestinationRules, "shop/orders", false, "shadowed")
	}},
	{File: "dr-wildcard-in-caller-namespace.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v2|orders.shop.svc.cluster.local")
		wantVerdict(t, v.DestinationRules, "web/all-services", true, "applies")
	}},
	{File: "dr-wildcard-in-caller-namespace.yaml", Caller: "shop/orders-v1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
	}},
	{File: "vs-private-beats-older-public.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v9|orders.shop.svc.cluster.local")
		wantVerdict(t, v.VirtualServices, "web/orders-from-web", true, "applies")
	}},
	{File: "vs-newer-public-in-caller-namespace.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		wantVerdict(t, v.VirtualServices, "web/orders-from-web", false, "shadowed by shop/orders")
	}},
	{File: "vs-first-without-route-for-caller.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v, "outbound|8080|v9|orders.shop.svc.cluster.local 100% (every request)")
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v9|orders.shop.svc.cluster.local")
		wantVerdict(t, v.VirtualServices, "shop/orders", true, "applies")
		wantVerdict(t, v.VirtualServices, "web/orders-for-report", false, "no route of it is for the caller")
	}},
	{File: "vs-next-routes-to-other-service.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v, "outbound|8080||ratings.shop.svc.cluster.local 100% (every request)")
		wantNoBreak(t, v)
		wantEndpoints(t, v, "outbound|8080||ratings.shop.svc.cluster.local", "ratings-1")
	}},
	{File: "vs-wildcard-without-route-for-port.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v, "outbound|8080||orders.shop.svc.cluster.local 100% (every request)")
		wantNoBreak(t, v)
		wantVerdict(t, v.VirtualServices, "shop/shop-apis", false, "default route")
		wantVerdict(t, v.VirtualServices, "web/all-services", false, "shadowed by shop/shop-apis")
	}},
	{File: "vs-exact-without-route-shadows-wildcard.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v, "outbound|8080||orders.shop.svc.cluster.local 100% (every request)")
		wantNoBreak(t, v)
	}},
	{File: "dr-selector-then-wider-exportto.yaml", Caller: "shop/orders-v1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		wantVerdict(t, v.DestinationRules, "shop/orders-from-v1", true, "applies")
		wantVerdict(t, v.DestinationRules, "shop/orders-all", true, "applies")
		wantEndpoints(t, v, "outbound|8080|v2|orders.shop.svc.cluster.local", "orders-v2")
	}},
	{File: "dr-selector-then-wider-exportto.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		wantVerdict(t, v.DestinationRules, "shop/orders-all", true, "applies")
	}},
	{File: "workload-disable-under-auto-mtls.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, nil)
	}},
	{File: "istio-mutual-to-workload-disable.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, map[string]string{"orders-v2": mesh.MismatchMTLSDisabled})
	}},
	{File: "sidecar-imports-route-destination.yaml", Caller: "web/web-1", Host: "ratings.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		if !v.Visibility.Visible {
			t.Errorf("ratings hidden from web: %s", v.Visibility.HiddenBy)
		}
		wantNoBreak(t, v)
	}},
	// Endpoints and their pods as istiod matches them
	// (endpointslice.go getPod): by targetRef, else by IP among the Ready
	// pods of the endpoint's namespace; a pod that cannot be found leaves
	// what depends on it undecided.
	{File: "endpoint-without-targetref.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		wantEndpoints(t, v, "outbound|8080|v2|orders.shop.svc.cluster.local", "orders-v2")
		wantMismatches(t, v, nil)
	}},
	{File: "endpoint-pod-not-found.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		cl := v.Clusters["outbound|8080|v3|orders.shop.svc.cluster.local"]
		if cl == nil || len(cl.Endpoints) != 0 || cl.Undecided != 1 || !strings.Contains(strings.Join(cl.Unknown, " "), "orders-v3") {
			t.Errorf("subset v3's cluster %+v: want no endpoint istiod would send and one undecided (pod orders-v3 not found)", cl)
		}
	}},
	{File: "endpoint-ip-pod-not-ready.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakSubsetEmpty, 50, "outbound|8080|v2|orders.shop.svc.cluster.local")
		wantEndpoints(t, v, "outbound|8080|v1|orders.shop.svc.cluster.local", "orders-v1")
	}},
	{File: "subset-label-absent.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantEndpoints(t, v, "outbound|8080|canary|orders.shop.svc.cluster.local", "orders-v2")
		wantBreak(t, v, mesh.BreakSubsetEmpty, 20, "outbound|8080|stable|orders.shop.svc.cluster.local")
	}},
	{File: "sidecar-without-tlsmode-label.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, map[string]string{"orders-v2": mesh.MismatchPlaintextStrict})
	}},
	{File: "classic-sidecar-without-tlsmode-label.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, map[string]string{"orders-v2": mesh.MismatchPlaintextStrict})
	}},
	// ExternalName Services are aliases: no endpoints, no cluster of their
	// own; istiod routes them as the host they name.
	{File: "externalname-external.yaml", Caller: "web/web-1", Host: "payments.shop.svc.cluster.local", Port: 443, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		if cl := v.Clusters["outbound|443||payments.shop.svc.cluster.local"]; cl == nil || cl.Exists {
			t.Errorf("the alias's own cluster %+v: istiod builds none", cl)
		}
		if cl := v.Clusters[mesh.PassthroughCluster]; cl == nil || !cl.External {
			t.Errorf("clusters %v: want PassthroughCluster to the outside host", v.Clusters)
		}
	}},
	{File: "externalname-to-service.yaml", Caller: "web/web-1", Host: "orders-legacy.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		wantEndpoints(t, v, "outbound|8080||orders.shop.svc.cluster.local", "orders-v1", "orders-v2")
		if cl := v.Clusters["outbound|8080||orders-legacy.shop.svc.cluster.local"]; cl == nil || cl.Exists {
			t.Errorf("the alias's own cluster %+v: istiod builds none", cl)
		}
	}},
	{File: "externalname-to-service.yaml", Caller: "batch/report-1", Host: "orders-legacy.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
	}},
	// A route to a host istiod builds the caller no cluster for: a Service
	// or ServiceEntry its exportTo hides (503 NC).
	{File: "vs-route-to-hidden-service.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakServiceHidden, 100, "outbound|8080||ratings.shop.svc.cluster.local")
	}},
	{File: "vs-route-to-hidden-service.yaml", Caller: "shop/orders-v1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
	}},
	{File: "vs-route-to-hidden-serviceentry.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakNoEntry, 100, "outbound|8080||api.partner.example")
		if cl := v.Clusters["outbound|8080||api.partner.example"]; cl == nil || cl.Missing != mesh.MissingEntryHidden {
			t.Errorf("cluster %+v: want one istiod does not build, its ServiceEntry hidden by exportTo", cl)
		}
	}},
	// An app running as the proxy's UID or GID sends around its sidecar
	// (istio-iptables exempts them): plaintext, whatever istiod pushes.
	{File: "caller-runs-as-proxy-uid.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, map[string]string{"orders-v1": mesh.MismatchPlaintextStrict, "orders-v2": mesh.MismatchPlaintextStrict})
		if cl := v.Clusters["outbound|8080||orders.shop.svc.cluster.local"]; cl == nil || !cl.Exists || !cl.Bypassed {
			t.Errorf("the cluster istiod pushes %+v: want it, marked bypassed", cl)
		}
	}},
	{File: "caller-runs-as-proxy-gid.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantMismatches(t, v, map[string]string{"orders-v1": mesh.MismatchPlaintextStrict, "orders-v2": mesh.MismatchPlaintextStrict})
	}},
	// A Service port's protocol as istiod reads it (ConvertProtocol):
	// which routes of a VirtualService apply depends on it.
	{File: "protocol-well-known-port.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 3306, Check: func(t testing.TB, v *mesh.View) {
		wantProtocol(t, v, mesh.ProtocolTCP)
		wantNoBreak(t, v)
		if cl := v.Clusters["outbound|3306||orders.shop.svc.cluster.local"]; cl == nil || !cl.Exists || cl.Serving() != 2 {
			t.Errorf("the TCP route's cluster = %+v, want the Service's with its 2 endpoints", cl)
		}
	}},
	{File: "protocol-well-known-port.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantProtocol(t, v, mesh.ProtocolHTTP)
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v9|orders.shop.svc.cluster.local")
	}},
	{File: "protocol-kubernetes-app-protocols.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantProtocol(t, v, mesh.ProtocolHTTP)
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v9|orders.shop.svc.cluster.local")
	}},
	{File: "protocol-kubernetes-app-protocols.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8443, Check: func(t testing.TB, v *mesh.View) {
		wantProtocol(t, v, mesh.ProtocolTLS)
		wantNoBreak(t, v)
	}},
	{File: "protocol-kubernetes-app-protocols.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 9090, Check: func(t testing.TB, v *mesh.View) {
		wantProtocol(t, v, mesh.ProtocolHTTP)
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|9090|v9|orders.shop.svc.cluster.local")
	}},
	{File: "protocol-udp.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8125, Check: func(t testing.TB, v *mesh.View) {
		wantProtocol(t, v, mesh.ProtocolUDP)
		wantNoBreak(t, v)
		if cl := v.Clusters["outbound|8125||orders.shop.svc.cluster.local"]; cl == nil || cl.Exists {
			t.Errorf("the UDP port's cluster = %+v, want one istiod does not build", cl)
		}
	}},
	{File: "protocol-udp.yaml", Caller: "batch/report-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		// The Service's TCP port stays under STRICT.
		wantMismatches(t, v, map[string]string{"orders-v1": mesh.MismatchPlaintextStrict, "orders-v2": mesh.MismatchPlaintextStrict})
	}},
	// A gateway as the caller: istioctl analyze's gateway and
	// virtualservice analyzer cases, and the binding mistakes behind
	// ingress 404 NR, as istiod builds the gateway's routes.
	{File: "gateway-vs-bound.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayBound)
		wantGatewayHosts(t, v, "shop.example.com:80")
		wantGatewayRoute(t, v, "http.8080", "shop.example.com")
		if len(v.Routes) != 1 || v.Routes[0].Destinations[0].Cluster != "outbound|8080||orders.shop.svc.cluster.local" {
			t.Errorf("routes %+v, want one to outbound|8080||orders.shop.svc.cluster.local", v.Routes)
		}
	}},
	{File: "gateway-vs-mesh-only.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayMeshOnly)
		wantGatewayHosts(t, v)
		wantGatewayRoute(t, v, "http.8080", "*")
		if cl := v.Clusters["outbound|8080||orders.shop.svc.cluster.local"]; cl == nil || !cl.Exists {
			t.Errorf("the gateway gets every visible Service's cluster, routed or not: %+v", cl)
		}
	}},
	{File: "gateway-vs-short-gateway-name.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayMissing)
		wantGatewayHosts(t, v)
	}},
	{File: "gateway-host-mismatch.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayHostMismatch)
		wantGatewayHosts(t, v)
	}},
	{File: "gateway-vs-short-host.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayBound)
		wantGatewayHosts(t, v, "orders.shop.svc.cluster.local:80")
	}},
	{File: "gateway-server-namespace.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayHostMismatch)
		wantGatewayHosts(t, v)
	}},
	{File: "gateway-vs-not-exported.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayNotExported)
		wantGatewayHosts(t, v)
	}},
	{File: "gateway-selector-typo.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayNotSelecting)
		if sel := v.Gateway.Selecting(); len(sel) != 0 {
			t.Errorf("Gateways selecting the caller %v, want none (selector istio=ingresstypo)", sel)
		}
	}},
	{File: "gateway-subset-undefined.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayBound)
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|8080|v2|orders.shop.svc.cluster.local")
	}},
	{File: "gateway-servers-without-hosts-match.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayHostMismatch)
	}},
	{File: "gateway-duplicate-tls-host.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayHostMismatch)
		rejected := 0
		for _, s := range v.Gateway.Servers {
			if s.Rejected != "" {
				rejected++
				if s.Gateway != "shop/shop" {
					t.Errorf("rejected %s, want the newer Gateway's server", s.Ref())
				}
			}
		}
		if rejected != 1 {
			t.Errorf("%d servers rejected, want 1: %+v", rejected, v.Gateway.Servers)
		}
	}},
	{File: "gateway-catch-all-shadowed.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayShadowedByHost)
		wantGatewayHosts(t, v)
	}},
	{File: "gateway-port-translation.yaml", Caller: "istio-system/my-ingressgateway-7f9d8-q8w2e", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayBound)
		wantGatewayRoute(t, v, "http.8003", "shop.example.com")
	}},
	// The Gateway API: istiod converts Gateways and routes into Istio
	// Gateways and VirtualServices (pilot/pkg/config/kube/gateway) and
	// judges parents and backends as it converts.
	{File: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		wantGatewayHosts(t, v, "shop.example.com:80")
		wantGatewayRoute(t, v, "http.80", "shop.example.com")
		wantAPIParent(t, v, "HTTPRoute shop/orders", true, "")
		if len(v.Routes) != 1 || v.Routes[0].EnvoyName != "shop.orders.0" || v.Routes[0].Destinations[0].Cluster != "outbound|8080||orders.shop.svc.cluster.local" {
			t.Errorf("routes %+v, want shop.orders.0 to outbound|8080||orders.shop.svc.cluster.local", v.Routes)
		}
	}},
	{File: "gatewayapi-backend-port-missing.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantAPIParent(t, v, "HTTPRoute shop/orders", true, "")
		wantAPIBackend(t, v, "HTTPRoute shop/orders", mesh.BackendPortMissing, "outbound|80||orders.shop.svc.cluster.local")
	}},
	{File: "gatewayapi-backend-not-found.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantAPIBackend(t, v, "HTTPRoute shop/orders", mesh.BackendNotFound, "outbound|8080||orders-canary.shop.svc.cluster.local")
		wantBreak(t, v, mesh.BreakBackendInvalid, 10, "outbound|8080||orders-canary.shop.svc.cluster.local")
		wantGatewayHosts(t, v, "shop.example.com:80")
	}},
	{File: "gatewayapi-ref-not-permitted.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantAPIParent(t, v, "HTTPRoute web/orders-from-web", true, "")
		wantAPIBackend(t, v, "HTTPRoute web/orders-from-web", mesh.BackendRefNotAllowed, mesh.UnknownServiceCluster)
		wantGatewayHosts(t, v)
	}},
	{File: "gatewayapi-ref-granted.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantAPIBackend(t, v, "HTTPRoute web/orders-from-web", "", "outbound|8080||orders.shop.svc.cluster.local")
		wantGatewayHosts(t, v, "shop.example.com:80")
		wantNoBreak(t, v)
	}},
	{File: "gatewayapi-not-allowed-by-listeners.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantAPIParent(t, v, "HTTPRoute web/orders-web", false, mesh.ReasonNotAllowedByListeners)
		wantAPIParent(t, v, "HTTPRoute shop/orders", false, mesh.ReasonNoMatchingListenerHostname)
		wantGatewayHosts(t, v)
	}},
	{File: "gatewayapi-hostname-mismatch.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantAPIParent(t, v, "HTTPRoute shop/orders", false, mesh.ReasonNoMatchingListenerHostname)
		wantGatewayHosts(t, v)
		wantGatewayRoute(t, v, "http.80", "*")
	}},
	{File: "gatewayapi-section-not-found.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantAPIParent(t, v, "HTTPRoute shop/orders", false, mesh.ReasonNoMatchingParent)
		wantGatewayHosts(t, v)
	}},
	{File: "gatewayapi-listener-not-service-port.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantAPIParent(t, v, "HTTPRoute shop/orders", true, "")
		wantGatewayHosts(t, v)
		rejected := false
		for _, s := range v.Gateway.Servers {
			rejected = rejected || s.Port == 8080 && strings.Contains(s.Rejected, "AddressNotUsable")
		}
		if !rejected {
			t.Errorf("servers %+v: want listener port 8080 rejected (no Service port 8080)", v.Gateway.Servers)
		}
	}},
	{File: "gatewayapi-two-listeners.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayHosts(t, v, "admin.example.com:8080", "api.example.com:80", "shop.example.com:80")
		wantGatewayRoute(t, v, "http.80", "api.example.com")
		wantGatewayRoute(t, v, "http.8080", "admin.example.com")
		wantAPIParent(t, v, "HTTPRoute shop/orders", true, "")
		wantAPIParent(t, v, "HTTPRoute web/admin-from-web", false, mesh.ReasonNotAllowedByListeners)
		wantAPIParent(t, v, "HTTPRoute shop/orders-other", false, mesh.ReasonNoMatchingParent)
		split := ""
		for _, r := range v.Routes {
			if r.EnvoyName == "shop.orders.0" {
				for _, d := range r.Destinations {
					split += fmt.Sprintf("%s %d%% ", d.Cluster, d.Percent)
				}
			}
		}
		if want := "outbound|8080||orders-v2.shop.svc.cluster.local 75% outbound|8080||orders.shop.svc.cluster.local 25% "; split != want {
			t.Errorf("rule shop.orders.0 sends %q, want %q", split, want)
		}
	}},
	{File: "gatewayapi-grpcroute.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayHosts(t, v, "grpc.example.com:80", "shop.example.com:80")
		wantGatewayRoute(t, v, "http.80", "web-grpc.example.com")
		wantAPIParent(t, v, "GRPCRoute shop/orders-grpc", true, "")
		wantAPIBackend(t, v, "GRPCRoute web/orders-from-web", mesh.BackendRefNotAllowed, mesh.UnknownServiceCluster)
	}},
	{File: "gatewayapi-https.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayHosts(t, v, "shop.example.com:443", "shop.example.com:80")
		l := v.Gateway.API.Gateway.Listeners[1]
		if strings.Join(l.Credentials, ",") != "kubernetes-gateway://shop/shop-cert" || !l.CertificatesUnread {
			t.Errorf("listener %+v: want credential kubernetes-gateway://shop/shop-cert, its Secret not read", l)
		}
	}},
	{File: "waypoint-routes.yaml", Over: "waypoint-bindings.yaml", Caller: "meshed shop", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		var sends []string
		for _, r := range v.Routes {
			var dests []string
			for _, d := range r.Destinations {
				dests = append(dests, fmt.Sprintf("%s %d%%", d.Cluster, d.Percent))
			}
			sends = append(sends, strings.Join(dests, " + "))
		}
		// The longer path prefix first, as the Gateway API orders rules.
		want := "outbound|9080||reviews.web.svc.cluster.local 100%; outbound|8080||orders-v2.shop.svc.cluster.local 90% + outbound|8080||orders.shop.svc.cluster.local 10%; outbound|8080||orders.shop.svc.cluster.local 100%"
		if got := strings.Join(sends, "; "); got != want {
			t.Errorf("mesh routes %s, want %s", got, want)
		}
	}},
	{File: "gatewayapi-unsupported-protocol.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayHosts(t, v, "shop.example.com:80")
		wantAPIParent(t, v, "HTTPRoute shop/orders", true, "")
		if l := v.Gateway.API.Gateway.Listeners[1]; l.NotProgrammedReason != "UnsupportedProtocol" {
			t.Errorf("listener %+v: want UnsupportedProtocol", l)
		}
	}},
	{File: "gatewayapi-cert-ref-not-permitted.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantAPIParent(t, v, "HTTPRoute shop/orders", true, "")
		wantGatewayHosts(t, v)
		l := v.Gateway.API.Gateway.Listeners[0]
		if p, known, _ := l.Programmed(); p || !known || l.NotProgrammedReason != "RefNotPermitted" {
			t.Errorf("listener %+v: want not programmed (RefNotPermitted)", l)
		}
		if len(v.Gateway.Servers) != 0 {
			t.Errorf("servers %+v: a listener istiod does not program reaches no proxy", v.Gateway.Servers)
		}
	}},
	{File: "vs-names-gateway-api.yaml", Over: "gatewayapi-base.yaml", Caller: APIGW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayMissing)
		wantGatewayHosts(t, v)
		for _, vv := range v.Gateway.VirtualServices {
			if vv.Ref() == "shop/orders-public" && !strings.Contains(vv.Why, "Gateway API Gateway") {
				t.Errorf("why %q: say the Gateway is a Gateway API one", vv.Why)
			}
		}
	}},
	{File: "gateway-listener-unreachable.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantGatewayVS(t, v, "shop/orders-public", mesh.GatewayBound)
		wantGatewayRoute(t, v, "http.9080", "shop.example.com")
		if len(v.Gateway.Servers) != 1 || !strings.Contains(v.Gateway.Servers[0].Unreachable, "IST0162") {
			t.Errorf("servers %+v: want the server on 9080 unreachable (no Service port 9080 or targetPort 9080)", v.Gateway.Servers)
		}
	}},
	{File: "gateway-vs-bound.yaml", Caller: GW, Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		for _, s := range v.Gateway.Servers {
			if s.Unreachable != "" {
				t.Errorf("server %s: unreachable %q, but Service port 80 targets its listener port 8080", s.Ref(), s.Unreachable)
			}
		}
	}},
	// GAMMA: a mesh HTTPRoute (parent a Service) routes sidecars, for the
	// Service's namespace and the caller's only.
	{File: "gamma-route-backend-not-found.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantBreak(t, v, mesh.BreakBackendInvalid, 10, "outbound|8080||orders-canary.shop.svc.cluster.local")
		if v.Routes[0].ClusterNotFound != 500 {
			t.Errorf("route %+v: a Gateway API route answers 500 for a missing cluster", v.Routes[0])
		}
	}},
	{File: "gamma-route-other-namespace.yaml", Caller: "web/web-1", Host: "orders.shop.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantNoBreak(t, v)
		wantVerdict(t, v.VirtualServices, "batch/HTTPRoute batch/orders-canary", false, "only in the Service's namespace or the caller's")
	}},
}

// Files are the case's files in the order they layer: base.yaml, Over,
// File.
func (c Case) Files() []string {
	if c.Over != "" {
		return []string{"base.yaml", c.Over, c.File}
	}
	return []string{"base.yaml", c.File}
}

// wantProtocol checks the kind of routes the view's port gets.
func wantProtocol(t testing.TB, v *mesh.View, want string) {
	t.Helper()
	if v.Protocol != want {
		t.Errorf("port %d read as %q, want %q", v.Port, v.Protocol, want)
	}
}

// GW is the ingress gateway pod of the gateway cases.
const GW = "istio-system/istio-ingressgateway-5b7c9-x2x4t"

// Objects reads files of dir (later ones replace objects of the same kind,
// namespace and name).
func Objects(t testing.TB, dir string, files ...string) []runtime.Object {
	t.Helper()
	byKey := map[string]int{}
	var objects []runtime.Object
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
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
	return objects
}

// MeshConfig parses a case's mesh config.
func MeshConfig(t testing.TB, text string) mesh.MeshConfig {
	t.Helper()
	if text == "" {
		return mesh.MeshConfig{}
	}
	raw, err := mesh.ParseMeshConfig(text)
	if err != nil {
		t.Fatal(err)
	}
	// A case's mesh text is the whole ConfigMap: no meshNetworks.
	return mesh.MeshConfig{Raw: raw, Found: true, NetworksRead: true}
}

// CallerFrom is the case's caller: a pod of objs when one is named so
// (a case file may redefine the caller), else as CallerOf finds it.
func CallerFrom(t testing.TB, objs []runtime.Object, c *mesh.Config, spec string) mesh.Caller {
	t.Helper()
	if ns, name, ok := strings.Cut(spec, "/"); ok && !strings.HasPrefix(spec, "meshed ") {
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok && p.Namespace == ns && p.Name == name {
				return mesh.CallerFromPod(p)
			}
		}
	}
	return CallerOf(t, c, spec)
}

// CallerOf is the case's caller among the objects of c.
func CallerOf(t testing.TB, c *mesh.Config, spec string) mesh.Caller {
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

func wantBreak(t testing.TB, v *mesh.View, reason string, percent int, cluster string) {
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

func wantNoBreak(t testing.TB, v *mesh.View) {
	t.Helper()
	if b := v.Breaks(); len(b) > 0 {
		t.Errorf("breaks %+v, want none", b)
	}
}

func wantVerdict(t testing.TB, verdicts []mesh.RuleVerdict, ref string, applies bool, why string) {
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

// wantEndpoints checks the pods of a cluster's serving endpoints.
func wantEndpoints(t testing.TB, v *mesh.View, cluster string, pods ...string) {
	t.Helper()
	cl := v.Clusters[cluster]
	if cl == nil {
		t.Errorf("no cluster %s in the view", cluster)
		return
	}
	var got []string
	for _, e := range cl.Endpoints {
		if e.Serving() {
			got = append(got, e.Pod)
		}
	}
	if strings.Join(got, " ") != strings.Join(pods, " ") {
		t.Errorf("%s serves %v, want %v (unknown: %v)", cluster, got, pods, cl.Unknown)
	}
}

// wantMismatches checks each endpoint's TLS mismatch by pod; pods not named
// must have none.
func wantMismatches(t testing.TB, v *mesh.View, want map[string]string) {
	t.Helper()
	seen := 0
	judged := map[string]bool{}
	for _, cl := range v.Clusters {
		if cl.Bypassed {
			continue // no request of the caller's app goes through it
		}
		for _, e := range cl.Endpoints {
			seen++
			judged[e.Pod] = true
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
	for pod := range want {
		if !judged[pod] {
			t.Errorf("no endpoint of pod %s judged", pod)
		}
	}
}

// APIGW is the Gateway API gateway's pod of gatewayapi-base.yaml.
const APIGW = "shop/public-istio-6d8f9-k7x2p"

// wantAPIParent checks the model's verdict on a route's parentRefs to
// the caller's Gateway (or the mesh): accepted, or not for reason.
func wantAPIParent(t testing.TB, v *mesh.View, route string, accepted bool, reason string) {
	t.Helper()
	if v.Gateway == nil || v.Gateway.API == nil {
		t.Fatalf("no Gateway API binding in the view of %s", v.Caller)
	}
	for _, r := range v.Gateway.API.Routes {
		if r.Route != route {
			continue
		}
		for _, p := range r.Parents {
			if p.Accepted != accepted || p.Reason != reason || p.Unknown != "" {
				t.Errorf("%s parent %s: accepted %v %s (%s; unknown %q), want accepted %v %s", route, p.Parent(), p.Accepted, p.Reason, p.Message, p.Unknown, accepted, reason)
			}
		}
		return
	}
	t.Errorf("no verdict on %s in %+v", route, v.Gateway.API.Routes)
}

// wantAPIBackend checks that a backendRef of route goes to cluster,
// invalid for reason ("" for valid).
func wantAPIBackend(t testing.TB, v *mesh.View, route, reason, cluster string) {
	t.Helper()
	if v.Gateway == nil || v.Gateway.API == nil {
		t.Fatalf("no Gateway API binding in the view of %s", v.Caller)
	}
	var seen []string
	for _, r := range v.Gateway.API.Routes {
		if r.Route != route {
			continue
		}
		for _, b := range r.Backends {
			if b.Cluster == cluster {
				if b.Invalid != reason || b.Unknown != "" {
					t.Errorf("%s: invalid %q (%s; unknown %q), want %q", b, b.Invalid, b.Why, b.Unknown, reason)
				}
				return
			}
			seen = append(seen, b.Cluster)
		}
	}
	t.Errorf("no backendRef of %s to %s (backends to %v)", route, cluster, seen)
}

// wantGatewayVS checks a gateway view's verdict on a VirtualService.
func wantGatewayVS(t testing.TB, v *mesh.View, ref, reason string) {
	t.Helper()
	if v.Gateway == nil {
		t.Fatalf("no gateway binding in the view of %s: is the caller a gateway? %+v", v.Caller, v.Caller)
	}
	for _, vv := range v.Gateway.VirtualServices {
		if vv.Ref() == ref {
			if vv.Reason != reason {
				t.Errorf("%s: %s (%s), want %s", ref, vv.Reason, vv.Why, reason)
			}
			return
		}
	}
	t.Errorf("no verdict on %s in %+v", ref, v.Gateway.VirtualServices)
}

// wantGatewayHosts checks the request hosts (host:port) whose routes
// reach the target.
func wantGatewayHosts(t testing.TB, v *mesh.View, hosts ...string) {
	t.Helper()
	if v.Gateway == nil {
		t.Fatal("no gateway binding in the view")
	}
	if strings.Join(v.Gateway.Hosts, " ") != strings.Join(hosts, " ") {
		t.Errorf("hosts routed to the target %v, want %v", v.Gateway.Hosts, hosts)
	}
}

// wantGatewayRoute checks that the route configuration route has a virtual
// host for domain.
func wantGatewayRoute(t testing.TB, v *mesh.View, route, domain string) {
	t.Helper()
	for _, vh := range v.Gateway.VirtualHosts {
		if vh.RouteName == route && (vh.Domain == domain || domain == "*" && strings.HasPrefix(vh.Domain, "* ")) {
			return
		}
	}
	t.Errorf("no virtual host %s in route %s: %+v", domain, route, v.Gateway.VirtualHosts)
}

// wantGatewayEndpoint: the cluster holds network's gateway at addr:port,
// standing for that network's endpoints, with the tlsMode istio a gateway
// routes by.
func wantGatewayEndpoint(t testing.TB, v *mesh.View, cluster, addr string, port int32, network string) {
	t.Helper()
	cl := v.Clusters[cluster]
	if cl == nil {
		t.Errorf("no cluster %s in the view", cluster)
		return
	}
	for _, e := range cl.Endpoints {
		if e.Via != nil && e.Address == addr && e.Port == port && e.Via.Network == network {
			if e.TLSMode != "istio" || e.Sends != mesh.SendsMTLS {
				t.Errorf("gateway endpoint %s:%d: tlsMode %q, sends %s; want istio, mTLS", addr, port, e.TLSMode, e.Sends)
			}
			return
		}
	}
	t.Errorf("%s has no endpoint %s:%d through network %s's gateway (unknown: %v)", cluster, addr, port, network, cl.Unknown)
}
