package meshtest

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// WorldCases are worlds the generative differential (lab/worldgen,
// lab/differential_worlds.go) found the model and a real istiod to
// disagree on, kept as generated (world-SEED-INDEX.yaml; the mesh config
// of their batch in Mesh), each with the check of what istiod does that
// the model got wrong. The lab runs them against istiod like every case.
var WorldCases = []Case{
	{File: "world-24-00001.yaml", Caller: "w00001-b/catalog-v1-c7a9a-00001", Host: "catalog.w00001-b.svc.cluster.local", Port: 7070, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v, "outbound|7070|v2|catalog.w00001-b.svc.cluster.local 100% (every request)")
		wantBreak(t, v, mesh.BreakSubsetUndefined, 100, "outbound|7070|v2|catalog.w00001-b.svc.cluster.local")
		wantNoBreakOn(t, v, "outbound|7070|v9|catalog.w00001-b.svc.cluster.local")
	}},
	{File: "world-24-00006.yaml", Caller: "w00006-a/payments-v1-adff6-00001", Host: "ratings.w00006-a.svc.cluster.local", Port: 9090, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v,
			"outbound|9090||ratings.w00006-a.svc.cluster.local 100% (some requests)",
			"outbound|9090|v1|ratings.w00006-a.svc.cluster.local 25%, outbound|9090|v2|ratings.w00006-a.svc.cluster.local 12%, outbound|9090||ratings.w00006-a.svc.cluster.local 62% (every request)")
	}},
	{File: "world-24-00008.yaml", Caller: "w00008-a/client-1", Host: "ratings.w00008-a.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantSends(t, v, "outbound|8080||ratings.w00008-a.svc.cluster.local", map[string]string{
			"10.128.8.11": mesh.SendsPlaintext, // labelled tlsMode=istio, but 10.128.8.14 is not
			"10.128.8.14": mesh.SendsPlaintext,
		})
	}},
	{File: "world-24-00002.yaml", Caller: "w00002-a/cart-v1-1213d-00001", Host: "ratings.w00002-b.svc.cluster.local", Port: 7070, Check: func(t testing.TB, v *mesh.View) {
		if v.Visibility.Visible || v.Visibility.Fallback != mesh.PassthroughCluster || v.Visibility.Imported != "w00002-a/ratings" {
			t.Errorf("visibility %+v: want hidden by the Sidecar's egress hosts, its clusters imported by w00002-a/ratings", v.Visibility)
		}
	}},
	{File: "world-24-00003.yaml", Caller: "w00003-a/stock-v1-7", Host: "search.w00003-b.svc.cluster.local", Port: 80, Check: func(t testing.TB, v *mesh.View) {
		switch {
		case strings.Contains(v.Visibility.Undecided, "port 80") && !v.Visibility.Visible:
			// A triage reads the Services its target routes to, not every
			// one that could give the caller its listener on port 80: it
			// cannot tell (TestPortEightyRouteNeedsEveryService).
		case !v.Visibility.Visible || !strings.Contains(v.Visibility.Via, "port 80"):
			t.Errorf("visibility %+v: want routed on port 80 by the VirtualService the caller imports", v.Visibility)
		default:
			wantRoutes(t, v, "outbound|80||reviews.w00003-b.svc.cluster.local 100% (every request)")
			wantBreak(t, v, mesh.BreakNoCluster, 100, "outbound|80||reviews.w00003-b.svc.cluster.local")
		}
	}},
	{File: "world-24-00010.yaml", Caller: "w00010-a/client-1", Host: "reviews.w00010-a.svc.cluster.local", Port: 5432, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v, "PassthroughCluster 100% (every request)")
		if cl := v.Clusters["outbound|5432||api.w00010.example.com"]; cl != nil {
			t.Errorf("cluster %+v: istiod builds none, the ServiceEntry has no port 5432", cl)
		}
	}},
	{File: "world-24-00042.yaml", Mesh: batch24x1, Caller: "w00042-a/catalog-v1-3", Host: "payments.w00042-a.svc.cluster.local", Port: 3000, Check: func(t testing.TB, v *mesh.View) {
		if v.Visibility.Visible || !strings.Contains(v.Visibility.HiddenBy, "exportTo w00042-b") || v.Visibility.Imported == "" {
			t.Errorf("visibility %+v: want hidden by exportTo, its clusters imported as a route destination of the caller's namespace", v.Visibility)
		}
	}},
	{File: "world-24-00055.yaml", Mesh: batch24x1, Caller: "w00055-b/client-2", Host: "stock.w00055-b.svc.cluster.local", Port: 7070, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v, "outbound|7070||unknown.w00055.example.org 100%, mirror outbound|7070||stock.w00055-b.svc.cluster.local (every request)")
		wantBreak(t, v, mesh.BreakNoEntry, 100, "outbound|7070||unknown.w00055.example.org")
	}},
	{File: "world-24-00035.yaml", Caller: "w00035-b/cart-v1-2", Host: "billing.w00035-b.svc.cluster.local", Port: 5432, Check: func(t testing.TB, v *mesh.View) {
		if v.Protocol != mesh.ProtocolTCP {
			t.Errorf("protocol %s: the alias is routed as catalog's port 5432, tcp-db", v.Protocol)
		}
	}},
	{File: "world-24-00112.yaml", Caller: "w00112-a/client-1", Host: "billing.w00112-b.svc.cluster.local", Port: 80, Check: func(t testing.TB, v *mesh.View) {
		if !v.Visibility.Visible {
			t.Errorf("visibility %+v: the alias is routed as the ServiceEntry host, whatever its own exportTo", v.Visibility)
		}
		wantRoutes(t, v, "outbound|80||api.w00112.example.com 100% (every request)")
	}},
	{File: "world-24-00233.yaml", Caller: "w00233-a/payments-v1-1", Host: "ratings.w00233-a.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantSends(t, v, "outbound|8080||ratings.w00233-a.svc.cluster.local", map[string]string{"10.128.233.5": mesh.SendsPlaintext})
		wantMismatchAt(t, v, "outbound|8080||ratings.w00233-a.svc.cluster.local", "10.128.233.5", mesh.MismatchPlaintextStrict)
	}},
	{File: "world-24-00181.yaml", Mesh: "outboundTrafficPolicy: {mode: REGISTRY_ONLY}\n", Caller: "w00181-a/client-1", Host: "ratings.w00181-a.svc.cluster.local", Port: 7070, Check: func(t testing.TB, v *mesh.View) {
		wantSends(t, v, "outbound|7070||ratings.w00181-a.svc.cluster.local", map[string]string{"10.128.181.3": mesh.SendsPlaintext, "10.128.181.4": mesh.SendsPlaintext})
	}},
	{File: "world-7-00127.yaml", Caller: "w00127-a/catalog-v1-a63ac-00006", Host: "catalog.w00127-a.svc.cluster.local", Port: 9090, Check: func(t testing.TB, v *mesh.View) {
		if v.Protocol != mesh.ProtocolTCP {
			t.Fatalf("protocol %s, want tcp", v.Protocol)
		}
		wantRoutes(t, v, "outbound|7070||api.w00127.example.com 100% (every request)")
	}},
	{File: "world-7-00513.yaml", Caller: "w00513-b/client-2", Host: "orders.w00513-a.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		if v.Rule != nil {
			t.Errorf("rule %v applies; istiod applies none", v.Rule.Names())
		}
		wantVerdict(t, v.DestinationRules, "w00513-a/search", false, "more specific host")
		wantVerdict(t, v.DestinationRules, "w00513-a/orders", false, "not exported")
	}},
	{File: "world-7-00469.yaml", Mesh: batch7x9, Caller: "w00469-c/client-1", Host: "reviews.w00469-a.svc.cluster.local", Port: 80, Check: func(t testing.TB, v *mesh.View) {
		if v.Visibility.Visible {
			t.Errorf("visibility %+v: no virtual host holds the alias", v.Visibility)
		}
		wantRoutes(t, v, "BlackHoleCluster 100% (every request)")
	}},
	{File: "world-11-00005.yaml", Caller: "w00005-a/client-2", Host: "users.w00005-b.svc.cluster.local", Port: 3000, Check: func(t testing.TB, v *mesh.View) {
		wantEndpoints(t, v, "outbound|3000||users.w00005-b.svc.cluster.local", "users-v1-d76b9-00000")
	}},
	{File: "world-11-00010.yaml", Caller: "w00010-b/users-v1-0", Host: "users.w00010-b.svc.cluster.local", Port: 3000, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v, "outbound|3000|v2|users.w00010-b.svc.cluster.local 100% (every request)")
		wantVerdict(t, v.VirtualServices, "w00010-a/users-more", true, "TCP route")
	}},
	{File: "world-11-00495.yaml", Mesh: batch11x9, Caller: "w00495-a/client-1", Host: "stock.w00495-b.svc.cluster.local", Port: 9080, Check: func(t testing.TB, v *mesh.View) {
		if v.Visibility.Visible {
			t.Errorf("visibility %+v: the Sidecar leaves the alias off users' virtual host", v.Visibility)
		}
		wantRoutes(t, v, "PassthroughCluster 100% (every request)")
	}},
	{File: "world-11-00021.yaml", Caller: "w00021-b/catalog-v1-0", Host: "search.w00021-a.svc.cluster.local", Port: 5432, Check: func(t testing.TB, v *mesh.View) {
		if !v.Visibility.Visible {
			t.Errorf("visibility %+v: a sniffed port's virtual host takes every domain, the alias's too", v.Visibility)
		}
		wantRoutes(t, v, "outbound|5432||catalog.w00021-b.svc.cluster.local 100% (every request)")
	}},
	{File: "world-101-00148.yaml", Mesh: batch101x2, Caller: "w00148-a/ratings-v1-1", Host: "ratings.w00148-a.svc.cluster.local", Port: 80, Check: func(t testing.TB, v *mesh.View) {
		wantRoutes(t, v, "outbound|80||api.w00148.example.com 100% (every request)")
		if cl := v.Clusters["outbound|80||api.w00148.example.com"]; cl == nil || !cl.Exists {
			t.Errorf("cluster %+v: istiod pushes the ServiceEntry of the caller's namespace a route sends to, whatever its exportTo", cl)
		}
		wantNoBreak(t, v)
	}},
	{File: "world-404-01173.yaml", Mesh: batch404x23, Caller: "w01173-b/client-1", Host: "users.w01173-a.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantVerdict(t, v.DestinationRules, "w01173-b/users", true, "applies")
		wantVerdict(t, v.DestinationRules, "w01173-b/users-more", true, "applies")
		if v.Rule == nil || v.Rule.Subset("canary") == nil || v.Rule.Subset("v2") == nil {
			t.Errorf("rule %+v: want users with users-more's subset canary merged in", v.Rule)
		}
		wantSends(t, v, "outbound|8080||users.w01173-a.svc.cluster.local", map[string]string{"10.132.149.3": mesh.SendsMTLS})
	}},
	{File: "world-404-01173.yaml", Mesh: batch404x23, Caller: "w01173-b/catalog-v1-9", Host: "users.w01173-a.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		if v.Rule != nil {
			t.Errorf("rule %v applies; users-more was merged into users' entry, whose selector leaves catalog out", v.Rule.Names())
		}
		wantSends(t, v, "outbound|8080||users.w01173-a.svc.cluster.local", map[string]string{"10.132.149.3": mesh.SendsPlaintext})
	}},
	{File: "world-404-01794.yaml", Mesh: batch404x35, Caller: "w01794-a/billing-v2-3", Host: "catalog.w01794-a.svc.cluster.local", Port: 8080, Check: func(t testing.TB, v *mesh.View) {
		wantVerdict(t, v.DestinationRules, "w01794-a/catalog-more", true, "applies")
		if v.Rule == nil || v.Rule.Subset("v1") == nil {
			t.Errorf("rule %+v: want catalog-more's entry, with subset v1", v.Rule)
		}
	}},
	{File: "world-707-00471.yaml", Mesh: batch707x9, Caller: "w00471-b/client-1", Host: "billing.w00471-a.svc.cluster.local", Port: 80, Check: func(t testing.TB, v *mesh.View) {
		if v.Visibility.Visible || v.Visibility.Via != "" {
			t.Errorf("visibility %+v: want hidden by exportTo; the VirtualService the caller imports keeps no route on port 80 for it, so istiod writes no virtual host", v.Visibility)
		}
	}},
}

// batch707x9 is the mesh config of batch 9 of seed 707 (worlds 450-499).
const batch707x9 = "defaultServiceExportTo: [\".\"]\ndefaultVirtualServiceExportTo: [\".\"]\ndefaultDestinationRuleExportTo: [\".\"]\n"

// batch404x35 is the mesh config of batch 35 of seed 404 (worlds 1750-1799).
const batch404x35 = "outboundTrafficPolicy: {mode: REGISTRY_ONLY}\ndefaultVirtualServiceExportTo: [\".\"]\n"

// batch404x23 is the mesh config of batch 23 of seed 404 (worlds 1150-1199).
const batch404x23 = "outboundTrafficPolicy: {mode: REGISTRY_ONLY}\n"

// batch101x2 is the mesh config of batch 2 of seed 101 (worlds 100-149).
const batch101x2 = "outboundTrafficPolicy: {mode: REGISTRY_ONLY}\ndefaultServiceExportTo: [\".\"]\ndefaultDestinationRuleExportTo: [\".\"]\n"

// batch11x9 is the mesh config of batch 9 of seed 11 (worlds 450-499).
const batch11x9 = "defaultServiceExportTo: [\".\"]\ndefaultVirtualServiceExportTo: [\".\"]\ndefaultDestinationRuleExportTo: [\".\"]\n"

// batch7x9 is the mesh config of batch 9 of seed 7 (worlds 450-499).
const batch7x9 = "outboundTrafficPolicy: {mode: REGISTRY_ONLY}\ndefaultServiceExportTo: [\".\"]\ndefaultVirtualServiceExportTo: [\".\"]\ndefaultDestinationRuleExportTo: [\".\"]\n"

// batch24x1 is the mesh config of batch 1 of seed 24 (worlds 30-59).
const batch24x1 = "enableAutoMtls: false\ndefaultVirtualServiceExportTo: [\".\"]\n"

func init() { Cases = append(Cases, WorldCases...) }

// RouteLine is a route in words: its destinations with their share (none
// that gets nothing beside others), its mirrors, and whether it takes
// every request.
func RouteLine(r mesh.Route) string {
	var parts []string
	for _, d := range r.Destinations {
		pct := d.Percent
		if len(r.Destinations) == 1 {
			pct = 100
		}
		if pct > 0 {
			parts = append(parts, fmt.Sprintf("%s %d%%", d.Cluster, pct))
		}
	}
	for _, m := range r.Mirrors {
		parts = append(parts, "mirror "+m.Cluster)
	}
	which := "some requests"
	if r.CatchAll {
		which = "every request"
	}
	return strings.Join(parts, ", ") + " (" + which + ")"
}

// wantRoutes checks the view's routes, in order.
func wantRoutes(t testing.TB, v *mesh.View, want ...string) {
	t.Helper()
	var got []string
	for _, r := range v.Routes {
		got = append(got, RouteLine(r))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("routes:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// wantNoBreakOn checks that no break names cluster.
func wantNoBreakOn(t testing.TB, v *mesh.View, cluster string) {
	t.Helper()
	for _, b := range v.Breaks() {
		if b.Destination.Cluster == cluster {
			t.Errorf("break on %s: %s %d%% (%s); no request reaches it", cluster, b.Reason, b.Destination.Percent, b.Why)
		}
	}
}

// wantSends checks what the caller sends each endpoint of cluster, by
// address.
func wantSends(t testing.TB, v *mesh.View, cluster string, want map[string]string) {
	t.Helper()
	cl := v.Clusters[cluster]
	if cl == nil {
		t.Errorf("no cluster %s in the view (clusters %v)", cluster, clusterNames(v))
		return
	}
	got := map[string]string{}
	for _, e := range cl.Endpoints {
		got[e.Address] = e.Sends
	}
	for addr, w := range want {
		if got[addr] != w {
			t.Errorf("%s: sends %q to %s, want %q", cluster, got[addr], addr, w)
		}
	}
}

// wantMismatchAt checks the TLS mismatch of one endpoint of cluster.
func wantMismatchAt(t testing.TB, v *mesh.View, cluster, addr, want string) {
	t.Helper()
	if cl := v.Clusters[cluster]; cl != nil {
		for _, e := range cl.Endpoints {
			if e.Address == addr {
				if e.Mismatch != want {
					t.Errorf("%s %s: mismatch %s (sends %s, accepts %s), want %s", cluster, addr, e.Mismatch, e.Sends, e.Accepts.Mode, want)
				}
				return
			}
		}
	}
	t.Errorf("no endpoint %s in cluster %s", addr, cluster)
}

func clusterNames(v *mesh.View) []string {
	var out []string
	for n := range v.Clusters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
