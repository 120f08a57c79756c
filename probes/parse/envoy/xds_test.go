package envoy

import (
	"reflect"
	"strings"
	"testing"
)

// What Envoy and pilot-agent log when an xDS update is rejected, as real
// proxies logged it (testdata/SOURCES.md): the delta and the state-of-the-
// world subscriptions, Istio's text and JSON layouts, and pilot-agent's
// readiness counts; lines about anything else are not rejections.
func TestParseXDSRejections(t *testing.T) {
	got := ParseXDSRejections(readTestdata(t, "xds_rejected.log"))
	var lines []string
	for _, r := range got {
		lines = append(lines, r.Time.Format("2006-01-02T15:04:05Z")+" "+r.Type+" "+r.Reason)
	}
	want := []string{
		"2026-06-05T19:49:38Z LDS Error adding/updating listener(s) connect_terminate: 'io.istio.connect_authority' does not have an object factory",
		"2026-06-05T19:49:39Z LDS pilot-agent: cds updates: 2 successful, 0 rejected; lds updates: 0 successful, 2 rejected",
		"2024-04-17T03:19:18Z LDS Error adding/updating listener(s) 0.0.0.0_8443: Error: terminal filter named envoy.filters.network.tcp_proxy of type envoy.filters.network.tcp_proxy must be the last filter in a network filter chain.",
		"2024-04-17T03:19:19Z LDS pilot-agent: cds updates: 1 successful, 0 rejected; lds updates: 0 successful, 1 rejected",
		"2023-09-27T19:59:36Z LDS Error adding/updating listener(s) virtualInbound: Didn't find a registered implementation for name: 'istio_authn'",
		"2023-09-27T19:59:36Z LDS pilot-agent: cds updates: 1 successful, 0 rejected; lds updates: 0 successful, 1 rejected",
		"2022-07-04T09:12:11Z CDS pilot-agent: cds updates: 0 successful, 13 rejected; lds updates: 13 successful, 0 rejected",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("rejections:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// Istio's text layout ends an Envoy line with its thread, after a tab.
	tab := ParseXDSRejections([]byte("2026-12-02T13:37:53.200000Z\twarning\tenvoy config external/envoy/source/extensions/config_subscription/grpc/delta_subscription_state.cc:283\tdelta config for type.googleapis.com/envoy.config.cluster.v3.Cluster rejected: Error adding/updating cluster(s) c: boom\tthread=21\n"))
	if len(tab) != 1 || tab[0].Type != "CDS" || tab[0].Reason != "Error adding/updating cluster(s) c: boom" {
		t.Errorf("tab-separated line: %+v", tab)
	}
	if r := ParseXDSRejections([]byte("2026-01-01T00:00:00Z info Envoy proxy is ready\n[2026-01-01T00:00:01.000Z] \"GET / HTTP/1.1\" 503 UH no_healthy_upstream - \"-\" 0 0 0 - \"-\" \"curl\" \"x\" \"rejected.example\" \"-\" - - 10.0.0.1:80 10.0.0.2:5 - -\n")); len(r) != 0 {
		t.Errorf("not rejections: %+v", r)
	}
}

// The lab's real istiod, after its client NACKed a CDS push: syncz keeps
// the NACK's reason as resources.<type>.lastError and the proxy's own
// version as istio_version (1.28.3, while istiod is 1.31-dev).
func TestIstiodSynczRecordsTheNack(t *testing.T) {
	ps, err := ParseSyncz(readTestdata(t, "istiod_syncz_nack.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := FindProxy(ps, "web-5b7d9c6f4-q8w2e", "shop")
	const reason = "Error adding/updating cluster(s) outbound|9999||meshlab-push-trigger.shop.svc.cluster.local: 'istio.hashable_string' does not have an object factory"
	if !ok || p.CDS != Stale || p.Rejected["CDS"] != reason || !reflect.DeepEqual(p.RejectedTypes(), []string{"CDS"}) ||
		p.LDS != Synced || p.EDS != Synced || p.RDS != Synced || p.ProxyIstioVersion != "1.28.3" || p.ControlPlaneVersion != "" {
		t.Errorf("%+v", p)
	}
}

// The lab's real istiod's /debug/edsz for a connected sidecar: the
// assignments of the clusters it watches, in protojson's camel case, the
// target's with its three ready pods.
func TestIstiodEdsz(t *testing.T) {
	all, err := ParseEdsz(readTestdata(t, "istiod_edsz.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 7 {
		t.Errorf("%d assignments, want 7: %+v", len(all), all)
	}
	orders, err := ParseEdsz(readTestdata(t, "istiod_edsz.json"), func(c string) bool { return c == "outbound|8080||orders.shop.svc.cluster.local" })
	if err != nil || len(orders) != 1 || orders[0].Total != 3 || orders[0].Healthy != 3 || orders[0].TLSModeIstio != 3 {
		t.Errorf("orders: %+v %v", orders, err)
	}
	for _, bad := range []string{"", "Proxy not connected to this Pilot instance. It may be connected to another instance.\n", "{"} {
		if _, err := ParseEdsz([]byte(bad), nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
