package envoy

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// realworld is output real Envoys and istiods wrote, gathered from public
// issues, docs and repositories (../shared/fixtures/realworld/README.md),
// read where it lies.
const realworld = "../../../../shared/fixtures/realworld"

func readRealworld(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realworld, name))
	if os.IsNotExist(err) {
		t.Skipf("the realworld fixtures are not here (%v): they live in the shared fixtures, outside the repository", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Istio 1.25's /stats names every cluster stat after the alt_stat_name
// (NAME;). The circuit breaker refused 139 pending requests: that is the
// figure an on-call must see, not "unknown".
func TestRealworldStatsAltStatName(t *testing.T) {
	const cluster = "outbound|80||echo-server.default.svc.cluster.local"
	var kept []string
	s := ParseStats(readRealworld(t, "stats/istio125_echo_server_pending.txt"), func(name string) bool {
		kept = append(kept, name)
		return true
	})
	if v, ok := s.ClusterStat(cluster, "upstream_rq_pending_overflow"); !ok || v != 139 {
		t.Errorf("upstream_rq_pending_overflow = %d (reported %v), want 139", v, ok)
	}
	for stat, want := range map[string]uint64{
		"upstream_rq_pending_total": 36, "upstream_rq_pending_active": 0, "upstream_rq_pending_failure_eject": 0,
		"circuit_breakers.default.remaining_pending": 1, "circuit_breakers.default.rq_pending_open": 0,
	} {
		if v, ok := s.ClusterStat(cluster, stat); !ok || v != want {
			t.Errorf("%s = %d (reported %v), want %d", stat, v, ok, want)
		}
	}
	if !s.HasCluster(cluster) || len(s) != 7 {
		t.Errorf("HasCluster %v, %d stats: %v", s.HasCluster(cluster), len(s), s)
	}
	// The keep filter sees the names normalised, so a probe's filter on
	// "|HOST." works on every release.
	for _, k := range kept {
		if strings.Contains(k, ";") || !strings.HasPrefix(k, "cluster."+cluster+".") {
			t.Errorf("keep saw %q", k)
		}
	}
}

// The circuit-breaking task of Istio 1.0/1.1's docs: the same counters
// without the ";".
func TestRealworldStatsBefore123(t *testing.T) {
	s := ParseStats(readRealworld(t, "stats/istio_doc_circuit_breaking_old.txt"), nil)
	const cluster = "outbound|80||httpbin.springistio.svc.cluster.local"
	if v, ok := s.ClusterStat(cluster, "upstream_rq_pending_overflow"); !ok || v != 12 {
		t.Errorf("overflow %d %v, want 12", v, ok)
	}
	if v, _ := s.ClusterStat(cluster, "upstream_rq_pending_total"); v != 39 {
		t.Errorf("pending total %d, want 39", v)
	}
}

// istioctl's own /clusters?format=json testdata (Istio 1.1 era): camelCase
// protojson, with one snake_case pipe cluster.
func TestRealworldClustersJSON(t *testing.T) {
	cs, err := ParseClusters(readRealworld(t, "clusters_json/istioctl_testdata_clusters.json"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Cluster{}
	for _, c := range cs {
		byName[c.Name] = c
	}
	if len(cs) != 7 || len(byName) != 7 {
		t.Fatalf("%d clusters: %v", len(cs), byName)
	}
	for name, c := range byName {
		if name != "inbound_9092" && !c.AddedViaAPI {
			t.Errorf("%s not added via API", name)
		}
	}
	// reviews: three hosts, 172.17.0.27 ejected by outlier detection.
	reviews := byName["outbound|9080||reviews.default.svc.cluster.local"]
	var got []string
	for _, h := range reviews.Hosts {
		got = append(got, h.Address+" "+map[bool]string{true: "healthy", false: "ejected"}[h.Healthy()])
		if h.FailedOutlierCheck != (h.Address == "172.17.0.27:9080") || h.EDSUnhealthy() {
			t.Errorf("reviews host %+v", h)
		}
	}
	if want := []string{"172.17.0.24:9080 healthy", "172.17.0.26:9080 healthy", "172.17.0.27:9080 ejected"}; !reflect.DeepEqual(got, want) {
		t.Errorf("reviews hosts %v", got)
	}
	// istio-policy: EDS says UNHEALTHY, so Envoy sends it nothing.
	policy := byName["outbound|15014||istio-policy.istio-system.svc.cluster.local"]
	if len(policy.Hosts) != 1 || policy.Hosts[0].EDSHealth != "UNHEALTHY" || policy.Hosts[0].Healthy() || policy.Hosts[0].FailedOutlierCheck {
		t.Errorf("istio-policy %+v", policy)
	}
	// The mixer socket: 64 failed connects, 78 errors in 300076 requests.
	pipe := byName["inbound_9092"]
	if len(pipe.Hosts) != 1 {
		t.Fatalf("inbound_9092 %+v", pipe)
	}
	h := pipe.Hosts[0]
	want := map[string]uint64{"cx_connect_fail": 64, "cx_total": 72, "rq_error": 78, "rq_success": 300076, "rq_total": 300076, "cx_active": 8, "rq_timeout": 0, "rq_active": 0}
	if h.Address != "/sock/mixer.socket" || !reflect.DeepEqual(h.Stats, want) || !h.Healthy() || h.Weight != 1 {
		t.Errorf("mixer socket host %+v", h)
	}
}

// Istio 0.8's plain-text /clusters (pilot-agent request GET clusters), a
// fragment: the second host's earlier lines were cut.
func TestRealworldClustersText(t *testing.T) {
	data := readRealworld(t, "clusters_text/istio6085_plain_clusters.txt")
	cs, err := ParseClusters(data) // not JSON: read as text
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Name != "outbound|9000||cloudspidergateway.cloudspider.svc.cluster.local" || len(cs[0].Hosts) != 2 {
		t.Fatalf("%+v", cs)
	}
	first, second := cs[0].Hosts[0], cs[0].Hosts[1]
	if first.Address != "10.244.14.34:9000" || len(first.Stats) != 0 || !first.Healthy() {
		t.Errorf("first host %+v", first)
	}
	want := map[string]uint64{"cx_active": 1, "cx_connect_fail": 0, "cx_total": 2990, "rq_active": 0, "rq_error": 2, "rq_success": 16921, "rq_timeout": 0, "rq_total": 16923}
	if second.Address != "10.244.25.4:9000" || !reflect.DeepEqual(second.Stats, want) || !second.Healthy() || second.Weight != 1 || second.EDSHealth != "HEALTHY" {
		t.Errorf("second host %+v", second)
	}
}

func TestClustersTextFlagsAndIPv6(t *testing.T) {
	text := strings.Join([]string{
		"outbound|8080||orders.shop.svc.cluster.local;::observability_name::outbound|8080||orders.shop.svc.cluster.local;",
		"outbound|8080||orders.shop.svc.cluster.local;::default_priority::max_connections::1",
		"outbound|8080||orders.shop.svc.cluster.local;::added_via_api::true",
		"outbound|8080||orders.shop.svc.cluster.local;::10.244.1.17:8080::health_flags::/failed_outlier_check/failed_eds_health",
		"outbound|8080||orders.shop.svc.cluster.local;::10.244.1.17:8080::rq_error::5",
		"outbound|8080||orders.shop.svc.cluster.local;::[fd00::1:2]:8080::health_flags::healthy",
		"outbound|8080||orders.shop.svc.cluster.local;::[fd00::1:2]:8080::cx_connect_fail::3",
		"xds-grpc::./etc/istio/proxy/XDS::health_flags::healthy",
	}, "\n")
	cs, err := ParseClustersText([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Name != "outbound|8080||orders.shop.svc.cluster.local" || !cs[0].AddedViaAPI || len(cs[0].Hosts) != 2 {
		t.Fatalf("%+v", cs)
	}
	h0, h1 := cs[0].Hosts[0], cs[0].Hosts[1]
	if !h0.FailedOutlierCheck || h0.EDSHealth != "UNHEALTHY" || h0.Stats["rq_error"] != 5 {
		t.Errorf("%+v", h0)
	}
	if h1.Address != "[fd00::1:2]:8080" || !h1.Healthy() || h1.Stats["cx_connect_fail"] != 3 {
		t.Errorf("%+v", h1)
	}
	if cs[1].Hosts[0].Address != "./etc/istio/proxy/XDS" {
		t.Errorf("%+v", cs[1])
	}
	for _, bad := range []string{"no healthy upstream", "<html>503</html>", "a::b"} {
		if _, err := ParseClusters([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// istiod /debug/syncz of Istio 1.10 (five proxies; the egress gateway has
// no routes, so RDS was never sent) and 1.17 (one proxy, with cluster_id).
// istio_version is each proxy's own (node.Metadata.IstioVersion in 1.10,
// node.GetIstioVersion() since): neither names istiod's version, and no
// entry carries resources (lastError came with 1.23).
func TestRealworldSyncz(t *testing.T) {
	ps, err := ParseSyncz(readRealworld(t, "syncz/istio110_praetorian.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		var states []string
		for _, tv := range p.Types() {
			states = append(states, tv[0]+"="+tv[1])
		}
		got = append(got, p.ProxyID+" "+p.ProxyIstioVersion+" "+strings.Join(states, ","))
	}
	want := []string{
		"httpbin1-5848b579fb-fhd4j.default 1.10.3 CDS=SYNCED,LDS=SYNCED,EDS=SYNCED,RDS=SYNCED",
		"httpbin2-5547847fc4-2dvqx.default 1.10.3 CDS=SYNCED,LDS=SYNCED,EDS=SYNCED,RDS=SYNCED",
		"istio-egressgateway-5547fcc8fc-5bbtd.istio-system 1.10.3 CDS=SYNCED,LDS=SYNCED,EDS=SYNCED,RDS=NOT SENT",
		"istio-ingressgateway-8f568d595-6999c.istio-system 1.10.3 CDS=SYNCED,LDS=SYNCED,EDS=SYNCED,RDS=SYNCED",
		"secret-inject-deployment-5754d9b66-cftnb.secret-inject 1.10.3 CDS=SYNCED,LDS=SYNCED,EDS=SYNCED,RDS=SYNCED",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("1.10 syncz:\n%s", strings.Join(got, "\n"))
	}
	for _, p := range ps {
		if r := p.RejectedTypes(); len(r) != 0 || p.ControlPlaneVersion != "" {
			t.Errorf("1.10 syncz %s: rejected %v, control plane %q: no entry carries resources or a control plane version", p.ProxyID, r, p.ControlPlaneVersion)
		}
	}
	if p, ok := FindProxy(ps, "httpbin2-5547847fc4-2dvqx", "default"); !ok || p.CDS != Synced {
		t.Errorf("FindProxy %+v %v", p, ok)
	}

	ps, err = ParseSyncz(readRealworld(t, "syncz/istio117_istioinaction.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%+v", ps)
	}
	p := ps[0]
	if p.ProxyID != "webapp-7685bcb84-lwsvj.istioinaction" || p.ClusterID != "Kubernetes" || p.ProxyIstioVersion != "1.17.8" ||
		p.CDS != Synced || p.LDS != Synced || p.RDS != Synced || p.EDS != Synced || p.ControlPlaneVersion != "" || len(p.RejectedTypes()) != 0 {
		t.Errorf("1.17 syncz %+v", p)
	}
}

// A Kuma data plane's /listeners?format=json: Envoy, not Istio. Its one
// inbound listener is read, and it is no Istio virtual listener.
func TestRealworldListenersKuma(t *testing.T) {
	ls, err := ParseListeners(readRealworld(t, "listeners_kuma.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Listener{{Name: "inbound:127.0.0.1:8000", Address: "127.0.0.1:8000", IP: "127.0.0.1", Port: 8000}}
	if !reflect.DeepEqual(ls, want) {
		t.Errorf("%+v", ls)
	}
	// It listens on 127.0.0.1 only: it captures no service's traffic,
	// whether the service's VIPs are known or not.
	if ls[0].CoversPort(8000, []string{"10.96.0.5"}) || ls[0].CoversPort(8000, nil) {
		t.Error("a loopback inbound listener taken for an outbound one")
	}
}

// Three whole config_dumps (OpenShift Service Mesh 2 on Istio 1.20, a
// sidecar and its ingress gateway; slime's Istio 1.9.1 productpage sidecar)
// carry udpa.type.v1.TypedStruct, which go-control-plane does not link.
// Both decoders read every cluster and agree.
func TestRealworldConfigDumps(t *testing.T) {
	all := func(string) bool { return true }
	for _, c := range []struct {
		file     string
		clusters int
		version  string
	}{
		{"ossm2_hello_openshift_sidecar.json", 20, "2025-06-04T14:49:56Z/41"},
		{"ossm2_ingressgateway.json", 17, "2025-06-04T14:24:41Z/32"},
		{"slime_scout.json", 32, "2021-03-25T08:16:06Z/16"},
	} {
		t.Run(c.file, func(t *testing.T) {
			data := readRealworld(t, "config_dump/"+c.file)
			streamed, err := StreamConfigDump(bytes.NewReader(data), all)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := DecodeConfigDump(data, all)
			if err != nil {
				t.Fatal(err)
			}
			if streamed.DynamicClusters != c.clusters || len(streamed.Clusters) != c.clusters || streamed.ClustersVersion != c.version {
				t.Errorf("streamed: %d dynamic, %d decoded, version %q", streamed.DynamicClusters, len(streamed.Clusters), streamed.ClustersVersion)
			}
			if !reflect.DeepEqual(streamed.Clusters, whole.Clusters) || !reflect.DeepEqual(streamed.FallbackTypes(), whole.FallbackTypes()) {
				t.Errorf("the decoders disagree")
			}
			if got := streamed.FallbackTypes(); !reflect.DeepEqual(got, []string{"udpa.type.v1.TypedStruct"}) {
				t.Errorf("fallbacks %v", got)
			}
			for _, cl := range streamed.Clusters {
				// No DestinationRule limits anything in these meshes.
				if cl.Type == "EDS" && (cl.MaxConnections != Unlimited || cl.MaxPendingRequests != Unlimited || cl.OutlierDetection) {
					t.Errorf("%s: %+v", cl.Name, cl)
				}
			}
		})
	}

	// What the sidecar sends to hello-openshift: auto mTLS, no limits; to
	// istiod-basic:8188 TLS without a client certificate (a DestinationRule
	// with tls SIMPLE).
	dump, err := StreamConfigDump(bytes.NewReader(readRealworld(t, "config_dump/ossm2_hello_openshift_sidecar.json")),
		TargetMatcher("hello-openshift.vanilla-playground.svc.cluster.local", 8080))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := dump.Active("outbound|8080||hello-openshift.vanilla-playground.svc.cluster.local"); !ok || c.TLS != TLSAuto || c.ConnectTimeout != 10*time.Second || len(dump.Clusters) != 1 {
		t.Errorf("hello-openshift %+v", dump.Clusters)
	}
	dump, _ = StreamConfigDump(bytes.NewReader(readRealworld(t, "config_dump/ossm2_hello_openshift_sidecar.json")),
		TargetMatcher("istiod-basic.istio-system.svc.cluster.local", 8188))
	if len(dump.Clusters) != 1 || dump.Clusters[0].TLS != TLSOrigination {
		t.Errorf("istiod-basic:8188 %+v", dump.Clusters)
	}
	// slime's productpage has details' v1 and v2 subsets besides the
	// default cluster, all auto mTLS.
	dump, _ = StreamConfigDump(bytes.NewReader(readRealworld(t, "config_dump/slime_scout.json")), TargetMatcher("details.default.svc.cluster.local", 9080))
	var names []string
	for _, c := range dump.Clusters {
		names = append(names, c.Name+" "+c.TLS)
	}
	sort.Strings(names)
	if len(names) != 3 {
		t.Fatalf("details clusters %v", names)
	}
	if names[0] != "outbound|9080|v1|details.default.svc.cluster.local auto" || names[1] != "outbound|9080|v2|details.default.svc.cluster.local auto" ||
		names[2] != "outbound|9080||details.default.svc.cluster.local auto" {
		t.Errorf("details clusters %v", names)
	}
}

// istio/istio#8846's outlier block (Istio 1.0/1.1, DestinationRule
// consecutiveErrors: 1): 5xx ejection is off (enforcing 0), gateway
// failures eject after one, up to every host, for ten minutes.
func TestRealworldOutlierGatewayFailure(t *testing.T) {
	data := readRealworld(t, "config_dump/wrapped_istio8846_outlier.json")
	for name, decode := range map[string]func() (ConfigDump, error){
		"stream": func() (ConfigDump, error) {
			return StreamConfigDump(bytes.NewReader(data), func(string) bool { return true })
		},
		"whole": func() (ConfigDump, error) { return DecodeConfigDump(data, func(string) bool { return true }) },
	} {
		d, err := decode()
		if err != nil {
			t.Fatal(name, err)
		}
		c, ok := d.Active("outbound|8080||demo.default.svc.cluster.local")
		if !ok || !c.OutlierDetection || c.Consecutive5xx != 0 || c.ConsecutiveGatewayFailure != 1 || c.MaxEjectionPercent != 100 || c.BaseEjectionTime != 10*time.Minute {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

// Envoy before 1.15 printed a family's samples apart (istio/istio#21125):
// envoy_listener_admin_http_admin_downstream_rq's five classes come in
// three runs. All of them are read, under one name.
func TestRealworldPrometheusUngrouped(t *testing.T) {
	m, err := ParsePrometheus(readRealworld(t, "prometheus/istio21125_fragment.txt"))
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]float64{}
	for _, s := range m["envoy_listener_admin_http_admin_downstream_rq"] {
		classes[s.Labels["response_code_class"]] = s.Value
	}
	if want := map[string]float64{"1xx": 0, "2xx": 1196, "3xx": 0, "4xx": 0, "5xx": 0}; !reflect.DeepEqual(classes, want) {
		t.Errorf("admin rq by class %v", classes)
	}
	if n := len(m["envoy_cluster_upstream_cx_total"]); n != 2 {
		t.Errorf("%d envoy_cluster_upstream_cx_total samples", n)
	}
	if v := m.Sum("envoy_http_stats_downstream_cx_tx_bytes_total", func(map[string]string) bool { return true }); v != 1410002 {
		t.Errorf("tx bytes %v", v)
	}

	m, err = ParsePrometheus(readRealworld(t, "prometheus/istio21125_head.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if s := m["envoy_cluster_upstream_cx_total"]; len(s) != 1 || s[0].Labels["cluster_name"] != "outbound|9901||istio-galley.istio-system.svc.cluster.local" {
		t.Errorf("%+v", s)
	}
}

func TestPrometheusClusterNameNormalised(t *testing.T) {
	m, err := ParsePrometheus([]byte("# TYPE envoy_cluster_upstream_cx_connect_fail counter\n" +
		`envoy_cluster_upstream_cx_connect_fail{cluster_name="outbound|8080||orders.shop.svc.cluster.local;"} 7` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := m.Sum("envoy_cluster_upstream_cx_connect_fail", func(l map[string]string) bool {
		return IsTargetCluster(l["cluster_name"], "orders.shop.svc.cluster.local", 8080)
	}); v != 7 {
		t.Errorf("connect failures of orders: %v", v)
	}
}

// Envoy's defaults apply where Istio leaves a field unset: consecutive_5xx
// 5 enforced at 100%, gateway failures not enforced.
func TestOutlierThresholdsAsEnvoyApplies(t *testing.T) {
	u := func(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }
	for _, c := range []struct {
		name          string
		od            *clusterv3.OutlierDetection
		fiveXX, gwErr int
	}{
		{"outlierDetection with only an interval", &clusterv3.OutlierDetection{}, 5, 0},
		{"consecutive5xxErrors 1", &clusterv3.OutlierDetection{Consecutive_5Xx: u(1), EnforcingConsecutive_5Xx: u(100)}, 1, 0},
		{"consecutiveGatewayErrors 2 alone", &clusterv3.OutlierDetection{Consecutive_5Xx: u(0), EnforcingConsecutive_5Xx: u(0),
			ConsecutiveGatewayFailure: u(2), EnforcingConsecutiveGatewayFailure: u(100)}, 0, 2},
		{"gateway failures enforced at the default threshold", &clusterv3.OutlierDetection{EnforcingConsecutiveGatewayFailure: u(100)}, 5, 5},
	} {
		got := AnalyzeCluster(&clusterv3.Cluster{Name: "outbound|8080||orders.shop.svc.cluster.local", OutlierDetection: c.od})
		if got.Consecutive5xx != c.fiveXX || got.ConsecutiveGatewayFailure != c.gwErr || !got.OutlierDetection {
			t.Errorf("%s: 5xx %d gateway %d, want %d %d", c.name, got.Consecutive5xx, got.ConsecutiveGatewayFailure, c.fiveXX, c.gwErr)
		}
	}
}

// TestHostHealthFlags reads every health state of a host, text and JSON,
// as Envoy treats it (testdata/SOURCES.md): a host pending its first
// health check or excluded by an immediate failure takes no request, nor
// one whose checks time out; a degraded one takes requests only when too
// few hosts are healthy, so it is neither healthy nor unhealthy.
func TestHostHealthFlags(t *testing.T) {
	type state struct{ healthy, degraded, routable bool }
	want := map[string]state{
		"10.244.1.10:8080": {healthy: true, routable: true},
		"10.244.1.11:8080": {},                               // failed_active_hc + excluded_via_immediate_hc_fail
		"10.244.1.12:8080": {degraded: true, routable: true}, // degraded_active_hc
		"10.244.1.13:8080": {},                               // failed_active_hc + active_hc_timeout
		"10.244.1.14:8080": {},                               // pending_active_hc alone: excluded until checked
		"10.244.1.15:8080": {},                               // failed_active_hc + pending_active_hc
		"10.244.1.16:8080": {},                               // excluded_via_immediate_hc_fail alone
		"10.244.1.17:8080": {},                               // active_hc_timeout alone
		"10.244.1.18:8080": {degraded: true, routable: true}, // EDS DEGRADED
		"10.244.1.19:8080": {degraded: true, routable: true}, // failed_degraded_outlier_detection (JSON only)
	}
	for _, file := range []string{"clusters_health_flags.txt", "clusters_health_flags.json"} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			cs, err := ParseClusters(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 1 || len(cs[0].Hosts) < 9 {
				t.Fatalf("%+v", cs)
			}
			for _, h := range cs[0].Hosts {
				w, ok := want[h.Address]
				if !ok {
					t.Fatalf("unexpected host %s", h.Address)
				}
				if got := (state{h.Healthy(), h.Degraded(), h.Routable()}); got != w {
					t.Errorf("%s %+v: healthy/degraded/routable = %+v, want %+v", h.Address, h, got, w)
				}
			}
		})
	}
}

// The real istio-proxy logs (access log lines, with the warnings and
// pilot-agent lines the samples keep) hold no rejected xDS update: no
// "gRPC config for ... rejected" or "delta config ... rejected" line, so a
// triage reading them reports none.
func TestRealworldLogsHoldNoXDSRejection(t *testing.T) {
	for _, name := range []string{"accesslog/text.log", "accesslog/json.log"} {
		if r := ParseXDSRejections(readRealworld(t, name)); len(r) != 0 {
			t.Errorf("%s: %d rejections read, the first %+v", name, len(r), r[0])
		}
	}
}

// The SDS secrets of every real config_dump with a SecretsConfigDump: each
// proxy (two sidecars, an OSSM ingress gateway, the envoy fixture's
// sidecar) holds its workload certificate and root active, none warming;
// both decoders agree. wrapped_istio8846_outlier.json has no secrets
// section: nothing is read from it.
func TestRealworldConfigDumpSecrets(t *testing.T) {
	none := func(string) bool { return false }
	for _, file := range []string{
		"realworld/config_dump/ossm2_hello_openshift_sidecar.json",
		"realworld/config_dump/ossm2_ingressgateway.json",
		"realworld/config_dump/slime_scout.json",
		"realworld/config_dump/wrapped_istio8846_outlier.json",
		"envoy/config_dump.json",
	} {
		t.Run(file, func(t *testing.T) {
			data := readRealworld(t, "../"+file)
			streamed, err := StreamConfigDump(bytes.NewReader(data), none)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := DecodeConfigDump(data, none)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"default", "ROOTCA"}
			if strings.Contains(file, "wrapped") {
				want = nil
			}
			if !reflect.DeepEqual(streamed.ActiveSecrets, want) || len(streamed.WarmingSecrets) != 0 {
				t.Errorf("streamed: active %q, warming %q; want active %q, none warming", streamed.ActiveSecrets, streamed.WarmingSecrets, want)
			}
			if !reflect.DeepEqual(streamed.ActiveSecrets, whole.ActiveSecrets) || !reflect.DeepEqual(streamed.WarmingSecrets, whole.WarmingSecrets) {
				t.Errorf("the decoders disagree: whole active %q, warming %q", whole.ActiveSecrets, whole.WarmingSecrets)
			}
		})
	}
}

// A gateway whose credentialName Secret istiod cannot find: Envoy asked
// for kubernetes://shop-cert and was sent nothing, so the secret stays in
// dynamic_warming_secrets (SecretsConfigDump's shape: a DynamicSecret with
// its name and no secret yet).
func TestConfigDumpWarmingSecret(t *testing.T) {
	doc := `{"configs": [
	 {"@type": "type.googleapis.com/envoy.admin.v3.SecretsConfigDump",
	  "dynamic_active_secrets": [
	   {"name": "default", "version_info": "2026-12-04T08:30:00Z/3", "last_updated": "2026-12-04T08:30:00Z",
	    "secret": {"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", "name": "default",
	     "tls_certificate": {"certificate_chain": {"inline_bytes": "W3JlZGFjdGVkXQ=="}, "private_key": {"inline_bytes": "W3JlZGFjdGVkXQ=="}}}}],
	  "dynamic_warming_secrets": [
	   {"name": "kubernetes://shop-cert", "version_info": "uninitialized", "last_updated": "2026-12-04T08:31:00Z",
	    "secret": {"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", "name": "kubernetes://shop-cert"}}]}]}`
	none := func(string) bool { return false }
	streamed, err := StreamConfigDump(strings.NewReader(doc), none)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := DecodeConfigDump([]byte(doc), none)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []ConfigDump{streamed, whole} {
		if !reflect.DeepEqual(d.ActiveSecrets, []string{"default"}) || !reflect.DeepEqual(d.WarmingSecrets, []string{"kubernetes://shop-cert"}) {
			t.Errorf("active %q, warming %q", d.ActiveSecrets, d.WarmingSecrets)
		}
	}
}
