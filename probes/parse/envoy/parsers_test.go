package envoy

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestParseClusterName(t *testing.T) {
	n, ok := ParseClusterName("outbound|8080|v2|orders.shop.svc.cluster.local")
	if !ok || n != (ClusterName{"outbound", 8080, "v2", "orders.shop.svc.cluster.local"}) {
		t.Errorf("%+v %v", n, ok)
	}
	for _, bad := range []string{"BlackHoleCluster", "outbound|x||a", "a|b|c", "inbound|8080||"} {
		if n, ok := ParseClusterName(bad); ok && bad != "inbound|8080||" {
			t.Errorf("%q parsed as %+v", bad, n)
		}
	}
	host := "orders.shop.svc.cluster.local"
	for name, want := range map[string]bool{
		"outbound|8080||orders.shop.svc.cluster.local":        true,
		"outbound|8080|v2|orders.shop.svc.cluster.local":      true,
		"outbound|9090||orders.shop.svc.cluster.local":        false,
		"outbound|8080||xorders.shop.svc.cluster.local":       false,
		"outbound|8080||orders.shop-canary.svc.cluster.local": false,
		"inbound|8080||orders.shop.svc.cluster.local":         false,
		"outbound_.8080_._.orders.shop.svc.cluster.local":     false,
	} {
		if got := IsTargetCluster(name, host, 8080); got != want {
			t.Errorf("IsTargetCluster(%q) = %v", name, got)
		}
	}
	if !IsTargetCluster("outbound|9090||orders.shop.svc.cluster.local", host, 0) {
		t.Error("port 0 must match every port")
	}
}

func TestParseClusters(t *testing.T) {
	cs, err := ParseClusters(readTestdata(t, "clusters.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 8 {
		t.Fatalf("%d clusters", len(cs))
	}
	c := cs[0]
	if c.Name != "outbound|8080||orders.shop.svc.cluster.local" || !c.AddedViaAPI || len(c.Hosts) != 4 {
		t.Fatalf("%+v", c)
	}
	var got []string
	for _, h := range c.Hosts {
		got = append(got, fmt.Sprintf("%s healthy=%v outlier=%v hc=%v eds=%s unhealthy=%v connect_fail=%d", h.Address, h.Healthy(), h.FailedOutlierCheck, h.FailedActiveHealthCheck, h.EDSHealth, h.EDSUnhealthy(), h.Stats["cx_connect_fail"]))
	}
	want := []string{
		"10.244.1.17:8080 healthy=true outlier=false hc=false eds=HEALTHY unhealthy=false connect_fail=0",
		"10.244.2.21:8080 healthy=false outlier=true hc=false eds=HEALTHY unhealthy=false connect_fail=7",
		"10.244.3.9:8080 healthy=false outlier=false hc=true eds=HEALTHY unhealthy=false connect_fail=2",
		"10.244.3.12:8080 healthy=false outlier=false hc=false eds=UNHEALTHY unhealthy=true connect_fail=0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hosts:\n%s", strings.Join(got, "\n"))
	}
	if c.Hosts[0].Stats["rq_total"] != 412 || c.Hosts[0].Stats["cx_active"] != 2 {
		t.Errorf("stats %v", c.Hosts[0].Stats)
	}
	if len(cs[1].Hosts) != 0 || cs[7].Hosts[0].Address != "./etc/istio/proxy/XDS" {
		t.Errorf("%+v / %+v", cs[1], cs[7])
	}
	for _, bad := range []string{"", "{", `{"cluster_statuses": "x"}`, "no healthy upstream"} {
		if _, err := ParseClusters([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseStats(t *testing.T) {
	data := readTestdata(t, "stats.txt")
	s := ParseStats(data, nil)
	if v, ok := s.ClusterStat("outbound|8080||orders.shop.svc.cluster.local", "upstream_rq_pending_overflow"); !ok || v != 213 {
		t.Errorf("pending overflow %d %v", v, ok)
	}
	if v, ok := s.ClusterStat("outbound|8080||orders.shop.svc.cluster.local", "outlier_detection.ejections_active"); !ok || v != 1 {
		t.Errorf("ejections %d %v", v, ok)
	}
	if _, ok := s["cluster.outbound|8080||orders.shop.svc.cluster.local.upstream_rq_time"]; ok {
		t.Error("histogram read as a number")
	}
	if _, ok := s.ClusterStat("outbound|8080||orders.shop.svc.cluster.local", "upstream_cx_none"); ok {
		t.Error("absent stat reported")
	}
	if s["server.version"] != 5363788 || len(s) != 24 {
		t.Errorf("%d stats: %v", len(s), s)
	}
	kept := ParseStats(data, func(n string) bool { return strings.HasPrefix(n, "cluster.outbound|8080||") })
	if len(kept) != 11 || !kept.HasCluster("outbound|8080||orders.shop.svc.cluster.local") || kept.HasCluster("outbound|8080||payments.shop.svc.cluster.local") {
		t.Errorf("filtered: %v", kept)
	}
	if d := ParseStats(readTestdata(t, "stats_default.txt"), nil); d.HasCluster("outbound|8080||orders.shop.svc.cluster.local") || !d.HasCluster("xds-grpc") {
		t.Errorf("default stats: %v", d)
	}
}

func TestParseListeners(t *testing.T) {
	ls, err := ParseListeners(readTestdata(t, "listeners.json"))
	if err != nil {
		t.Fatal(err)
	}
	covering := func(port int32, vips []string) []string {
		var out []string
		for _, l := range ls {
			if l.CoversPort(port, vips) {
				out = append(out, l.Name)
			}
		}
		sort.Strings(out)
		return out
	}
	for _, c := range []struct {
		port int32
		vips []string
		want []string
	}{
		{8080, []string{"10.96.12.4"}, []string{"0.0.0.0_8080"}},
		{5432, []string{"10.96.40.2"}, []string{"10.96.40.2_5432"}},
		{9090, []string{"10.96.12.4"}, nil},                 // another service's VIP listener on the port
		{9090, nil, []string{"10.96.77.7_9090"}},            // VIP unknown: any listener on the port
		{80, []string{"10.96.1.1"}, []string{"0.0.0.0_80"}}, // dual-stack listener
		{15001, []string{"10.96.1.1"}, nil},                 // virtualOutbound covers no port
		{7070, []string{"10.96.12.4"}, nil},
	} {
		if got := covering(c.port, c.vips); !reflect.DeepEqual(got, c.want) {
			t.Errorf("port %d vips %v: %v, want %v", c.port, c.vips, got, c.want)
		}
	}
	if l := (Listener{Name: "10.96.12.4_8080"}); !l.CoversPort(8080, []string{"10.96.12.4"}) {
		t.Error("a listener without address is matched by its name")
	}
	if _, err := ParseListeners([]byte(`{"listener_statuses": [{"name": 5}]}`)); err == nil {
		t.Error("malformed listeners: no error")
	}
}

func TestParseSyncz(t *testing.T) {
	ps, err := ParseSyncz(readTestdata(t, "syncz.json"))
	if err != nil {
		t.Fatal(err)
	}
	web, ok := FindProxy(ps, "web-7d9", "shop")
	if !ok {
		t.Fatalf("web-7d9.shop missing from %+v", ps)
	}
	// istiod records the NACK as resources.<type>.lastError (debug.go
	// ResourceStatus, Istio 1.23+); istio_version is the proxy's own.
	if web.CDS != Synced || web.LDS != Synced || web.RDS != Synced || web.EDS != Stale || web.ProxyIstioVersion != "1.24.2" ||
		web.ControlPlaneVersion != "" || web.Detail["EDS"] != "STALE: rejected: malformed cluster load assignment" ||
		web.Rejected["EDS"] != "malformed cluster load assignment" || !reflect.DeepEqual(web.RejectedTypes(), []string{"EDS"}) {
		t.Errorf("%+v", web)
	}
	orders, _ := FindProxy(ps, "orders-5f6c8-x2k9q", "shop")
	if orders.CDS != Synced || orders.LDS != Stale || orders.Detail["LDS"] != "STALE (Never Acknowledged)" || orders.RDS != NotSent || orders.EDS != Synced ||
		orders.ProxyIstioVersion != "1.23.4" || len(orders.RejectedTypes()) != 0 {
		t.Errorf("%+v", orders)
	}
	if _, ok := FindProxy(ps, "web-7d9", "default"); ok {
		t.Error("proxy found in the wrong namespace")
	}

	xds, err := ParseSyncz(readTestdata(t, "syncz_xds.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The xDS shape: the proxy's version is its node metadata's, istiod's
	// the control plane identifier's; ERROR is a NACK, STALE by the
	// nonces, with error_state.details the reason.
	w, ok := FindProxy(xds, "web-7d9", "shop")
	if !ok || w.CDS != Synced || w.LDS != Synced || w.RDS != Stale || w.EDS != NotSent || w.ProxyIstioVersion != "1.25.0" ||
		w.ControlPlaneVersion != "1.25.0" || len(w.RejectedTypes()) != 0 {
		t.Errorf("xDS: %+v", xds)
	}
	o, ok := FindProxy(xds, "orders-5f6c8-x2k9q", "shop")
	const nack = "Error adding/updating listener(s) virtualInbound: Didn't find a registered implementation for name: 'istio_authn'"
	if !ok || o.LDS != Stale || o.CDS != Synced || o.Rejected["LDS"] != nack || o.Detail["LDS"] != "STALE: rejected: "+nack ||
		o.ProxyIstioVersion != "1.23.4" || o.ControlPlaneVersion != "1.25.0" || !reflect.DeepEqual(o.RejectedTypes(), []string{"LDS"}) {
		t.Errorf("xDS ERROR: %+v", o)
	}
	for _, bad := range []string{"", "   ", "[{", "no healthy upstream", `{"resources": 7}`} {
		if _, err := ParseSyncz([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if ps, err := ParseSyncz([]byte("[]")); err != nil || len(ps) != 0 {
		t.Errorf("empty: %v %v", ps, err)
	}
}

func TestXDSStatusMirrorsIstioctl(t *testing.T) {
	for _, c := range []struct{ sent, acked, state, detail string }{
		{"", "", NotSent, "NOT SENT"},
		{"", "x", NotSent, "NOT SENT"},
		{"a", "a", Synced, "SYNCED"},
		{"a", "b", Stale, "STALE"},
		{"a", "", Stale, "STALE (Never Acknowledged)"},
	} {
		if s, d := XDSStatus(c.sent, c.acked); s != c.state || d != c.detail {
			t.Errorf("XDSStatus(%q, %q) = %q, %q", c.sent, c.acked, s, d)
		}
	}
}

func BenchmarkParseClusters(b *testing.B) {
	one := readTestdata(b, "clusters.json")
	// 1,000 copies of the sample's clusters: a large mesh's sidecar.
	body := one[strings.Index(string(one), "[")+1 : strings.LastIndex(string(one), "]")]
	var sb strings.Builder
	sb.WriteString(`{"cluster_statuses": [`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strings.ReplaceAll(string(body), "orders.shop", fmt.Sprintf("svc-%d.ns", i)))
	}
	sb.WriteString("]}")
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if cs, err := ParseClusters(data); err != nil || len(cs) != 8000 {
			b.Fatal(len(cs), err)
		}
	}
}

func BenchmarkParseStats(b *testing.B) {
	one := readTestdata(b, "stats.txt")
	var sb strings.Builder
	for i := range 4000 {
		sb.WriteString(strings.ReplaceAll(string(one), "orders.shop", fmt.Sprintf("svc-%d.ns", i)))
	}
	data := []byte(sb.String())
	keep := func(n string) bool { return strings.HasPrefix(n, "cluster.outbound|8080||svc-17.ns.") }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if s := ParseStats(data, keep); len(s) != 10 {
			b.Fatal(len(s))
		}
	}
}
