package probes

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/proxylog"
)

// realworld is output real Envoys and istiods wrote, gathered from public
// issues, docs and repositories (../shared/fixtures/realworld/README.md),
// read where it lies.
const realworld = "../../shared/fixtures/realworld"

// realworldRun is one probe evaluated on real output.
type realworldRun struct {
	sample string // what was read, and towards which target
	probe  Probe
	target cluster.Target
	result Result
}

func realworldFile(t testing.TB, name string) []byte {
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

// realworldLogGroup returns the lines of one "## src:" group of a realworld
// access log, found by a part of its header.
func realworldLogGroup(t testing.TB, file, header string) []byte {
	t.Helper()
	var out bytes.Buffer
	in := false
	sc := bufio.NewScanner(bytes.NewReader(realworldFile(t, "accesslog/"+file)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## src: ") {
			in = strings.Contains(line, header)
			continue
		}
		if in {
			out.WriteString(line + "\n")
		}
	}
	if out.Len() == 0 {
		t.Fatalf("%s has no group %q", file, header)
	}
	return out.Bytes()
}

// threadLogGroup is one "## src:" group of the thread lines the access-log
// parser pins (probes/parse/accesslog/testdata/threads.log).
func threadLogGroup(t testing.TB, header string) []byte {
	t.Helper()
	b, err := os.ReadFile("parse/accesslog/testdata/threads.log")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## src: "); ok {
			in = strings.Contains(h, header)
			continue
		}
		if in && line != "" {
			out.WriteString(line + "\n")
		}
	}
	if out.Len() == 0 {
		t.Fatalf("threads.log has no group %q", header)
	}
	return out.Bytes()
}

func rwTarget(namespace, service string, port int32, source string) cluster.Target {
	t := cluster.Target{Namespace: namespace, Service: service, Port: port}
	if source != "" {
		t.Source = &cluster.PodRef{Namespace: namespace, Name: source}
	}
	return t
}

// accessLogRun evaluates the access-log probe on log as the source pod's
// (upstream false) or an upstream pod's log, matched to t as Run matches.
func accessLogRun(sample string, t cluster.Target, log []byte, upstream bool) realworldRun {
	return accessLogRunAt(sample, t, log, upstream, "")
}

// accessLogRunAt reads log as accessLogRun does, an upstream's as the log
// of the pod with podIP.
func accessLogRunAt(sample string, t cluster.Target, log []byte, upstream bool, podIP string) realworldRun {
	pod := cluster.PodRef{Namespace: t.Namespace, Name: "pod"}
	pl := splitCallerLog(nil, pod, log, t, false)
	if upstream {
		pl = podLog{Pod: pod, Upstream: true}
		pl.Target, pl.Other, _ = accesslog.Split(bytes.NewReader(log), proxylog.InboundEntryAt(podIP))
	}
	return realworldRun{sample: sample, probe: AccessLogProbe{}, target: t,
		result: evaluateAccessLog(t, accessLogInput{Logs: []podLog{pl}})}
}

// realworldRuns evaluates the probes that read Envoy and Istio output on
// every realworld sample, each towards the target the sample is about.
func realworldRuns(t testing.TB) []realworldRun {
	t.Helper()
	var runs []realworldRun
	everything := func(*accesslog.Entry) bool { return true }

	// Access logs: a sample group as the log of the proxy that wrote it.
	for _, c := range []struct {
		file, group string
		target      cluster.Target
		upstream    bool
	}{
		{"text.log", "0 DC downstream_remote_disconnect", rwTarget("sample", "helloworld", 5000, "sleep"), false},
		{"text.log", "ssup2 blog, 2025-06-01, 503 UO", rwTarget("default", "httpbin", 8000, "fortio"), false},
		{"text.log", "istio/istio#32562", rwTarget("istio", "productpage", 9080, "sleep"), false},
		{"text.log", "tanjunchen blog post", rwTarget("default", "helloworld", 5000, ""), true},
		{"text.log", "Harness docs, 2022-08-15, NR filter_chain_not_found", rwTarget("default", "db", 9879, ""), true},
		{"text.log", "blog \"istio egress REGISTRY_ONLY\"", rwTarget("default", "web", 80, "sleep"), false},
		{"text.log", "Chinese notes, 2024-06-26, 504 UT to ServiceEntry host", rwTarget("default", "httpbin", 80, "sleep"), false},
		{"json.log", "istio/istio#17139", rwTarget("our_ns", "keycloak-headless", 7600, "keycloak-0"), false},
		{"json.log", "Istio 1.16 JSON 503 UH no_healthy_upstream", rwTarget("chapter11", "envoydummy", 80, "curl"), false},
	} {
		runs = append(runs, accessLogRun(c.file+": "+c.group, c.target, realworldLogGroup(t, c.file, c.group), c.upstream))
	}
	// Real lines no shared fixture holds, pinned from public threads
	// (parse/accesslog/testdata/SOURCES.md).
	runs = append(runs, accessLogRunAt("threads.log: SigNoz/charts#53 426 low_version at the query-service's inbound",
		rwTarget("default", "mon-signoz-query-service", 8080, ""), threadLogGroup(t, "SigNoz/charts#53"), true, "10.240.0.16"))
	// The same log, read after the pod was told ISTIO_META_HTTP10=1: its
	// 426s are older than the change.
	fixed := accessLogRunAt("threads.log: SigNoz/charts#53 426s from a proxy now told to accept HTTP/1.0",
		rwTarget("default", "mon-signoz-query-service", 8080, ""), threadLogGroup(t, "SigNoz/charts#53"), true, "10.240.0.16")
	{
		pl := podLog{Pod: cluster.PodRef{Namespace: "default", Name: "pod"}, Upstream: true, AcceptsHTTP10: "istio-proxy env ISTIO_META_HTTP10=1"}
		pl.Target, pl.Other, _ = accesslog.Split(bytes.NewReader(threadLogGroup(t, "SigNoz/charts#53")), proxylog.InboundEntryAt("10.240.0.16"))
		fixed.result = evaluateAccessLog(fixed.target, accessLogInput{Logs: []podLog{pl}})
	}
	runs = append(runs, fixed)

	// Each whole log as if every entry were about the target: what the
	// tally makes of all the shapes at once.
	for _, file := range []string{"text.log", "json.log"} {
		tg := rwTarget("default", "any", 0, "any")
		pl := podLog{Pod: *tg.Source}
		pl.Target, pl.Other, _ = accesslog.Split(bytes.NewReader(realworldFile(t, "accesslog/"+file)), everything)
		runs = append(runs, realworldRun{sample: file + ": every entry", probe: AccessLogProbe{}, target: tg,
			result: evaluateAccessLog(tg, accessLogInput{Logs: []podLog{pl}})})
	}

	// /clusters and /stats.
	clustersRun := func(sample string, tg cluster.Target, clusters []envoy.Cluster, stats []byte) realworldRun {
		in := envoyClustersInput{Clusters: clusters}
		if stats != nil {
			in.Stats = envoy.ParseStats(stats, targetStats(tg))
		}
		return realworldRun{sample: sample, probe: EnvoyClustersProbe{}, target: tg, result: evaluateEnvoyClusters(tg, in)}
	}
	istioctl, err := envoy.ParseClusters(realworldFile(t, "clusters_json/istioctl_testdata_clusters.json"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := envoy.ParseClusters(realworldFile(t, "clusters_text/istio6085_plain_clusters.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The /stats samples come without their /clusters: the cluster they
	// count is given its one host, as /clusters would list it.
	one := func(name string) []envoy.Cluster {
		return []envoy.Cluster{{Name: name, AddedViaAPI: true, Hosts: []envoy.Host{{Address: "10.244.0.20:80", EDSHealth: "HEALTHY", Stats: map[string]uint64{}}}}}
	}
	runs = append(runs,
		clustersRun("clusters_json: reviews", rwTarget("default", "reviews", 9080, "productpage"), istioctl, nil),
		clustersRun("clusters_json: istio-policy", rwTarget("istio-system", "istio-policy", 15014, "productpage"), istioctl, nil),
		clustersRun("clusters_text: cloudspidergateway", rwTarget("cloudspider", "cloudspidergateway", 9000, "client"), plain, nil),
		clustersRun("stats 1.25: echo-server", rwTarget("default", "echo-server", 80, "fortio"),
			one("outbound|80||echo-server.default.svc.cluster.local"), realworldFile(t, "stats/istio125_echo_server_pending.txt")),
		clustersRun("stats 1.0: httpbin", rwTarget("springistio", "httpbin", 80, "fortio"),
			one("outbound|80||httpbin.springistio.svc.cluster.local"), realworldFile(t, "stats/istio_doc_circuit_breaking_old.txt")),
	)

	// /config_dump.
	configRun := func(sample, file string, tg cluster.Target) realworldRun {
		data := realworldFile(t, "config_dump/"+file)
		dump, err := envoy.StreamConfigDump(bytes.NewReader(data), envoy.TargetMatcher(tg.Host(), tg.Port))
		if err != nil {
			t.Fatal(err)
		}
		return realworldRun{sample: sample, probe: EnvoyConfigProbe{}, target: tg,
			result: evaluateEnvoyConfig(tg, envoyConfigInput{Dump: dump, Size: len(data)})}
	}
	runs = append(runs,
		configRun("config_dump 1.0 outlier: demo", "wrapped_istio8846_outlier.json", rwTarget("default", "demo", 8080, "client")),
		configRun("config_dump ossm2: hello-openshift", "ossm2_hello_openshift_sidecar.json", rwTarget("vanilla-playground", "hello-openshift", 8080, "hello-openshift-5b7bcb9b6d-kggwf")),
		configRun("config_dump ossm2: istiod-basic:8188", "ossm2_hello_openshift_sidecar.json", rwTarget("istio-system", "istiod-basic", 8188, "hello-openshift-5b7bcb9b6d-kggwf")),
		configRun("config_dump ossm2 gateway: hello-openshift", "ossm2_ingressgateway.json", rwTarget("vanilla-playground", "hello-openshift", 8080, "istio-ingressgateway-74ddf8dd9f-6p8p2")),
		configRun("config_dump slime: details", "slime_scout.json", rwTarget("default", "details", 9080, "productpage-v1-64794f5db4-blnt8")),
	)

	// /listeners.
	ls, err := envoy.ParseListeners(realworldFile(t, "listeners_kuma.json"))
	if err != nil {
		t.Fatal(err)
	}
	kuma := rwTarget("kuma-demo", "demo-app", 8000, "demo-app-1")
	runs = append(runs, realworldRun{sample: "listeners kuma", probe: EnvoyListenersProbe{}, target: kuma,
		result: evaluateEnvoyListeners(kuma, envoyListenersInput{Listeners: ls, Ports: []int32{8000}})})

	// istiod /debug/syncz.
	syncRun := func(sample, file string, tg cluster.Target) realworldRun {
		proxies, err := envoy.ParseSyncz(realworldFile(t, "syncz/"+file))
		if err != nil {
			t.Fatal(err)
		}
		return realworldRun{sample: sample, probe: ProxyStatusProbe{}, target: tg,
			result: evaluateProxyStatus(tg, proxyStatusInput{Proxies: proxies, IstiodReplicas: 1, Asked: 1})}
	}
	runs = append(runs,
		syncRun("syncz 1.10: httpbin2", "istio110_praetorian.json", rwTarget("default", "httpbin1", 8000, "httpbin2-5547847fc4-2dvqx")),
		syncRun("syncz 1.10: egress gateway", "istio110_praetorian.json", cluster.Target{Namespace: "default", Service: "httpbin1", Port: 8000,
			Source: &cluster.PodRef{Namespace: "istio-system", Name: "istio-egressgateway-5547fcc8fc-5bbtd"}}),
		syncRun("syncz 1.17: webapp", "istio117_istioinaction.json", rwTarget("istioinaction", "catalog", 80, "webapp-7685bcb84-lwsvj")),
		syncRun("syncz 1.17: a proxy it does not list", "istio117_istioinaction.json", rwTarget("istioinaction", "catalog", 80, "catalog-5c7f8f8447-xvh2k")),
	)
	// The lab's real istiod (pilot-discovery at lab.IstioModuleVersion),
	// its syncz after web's sidecar (ISTIO_VERSION 1.28.3) NACKed a CDS
	// push, its /version and its /debug/edsz for web.
	nack, err := envoy.ParseSyncz(envoyTestdata(t, "istiod_syncz_nack.json"))
	if err != nil {
		t.Fatal(err)
	}
	labTarget := rwTarget("shop", "orders", 8080, "web-5b7d9c6f4-q8w2e")
	runs = append(runs, realworldRun{sample: "istiod (lab): a NACK, /version, edsz", probe: ProxyStatusProbe{}, target: labTarget,
		result: evaluateProxyStatus(labTarget, proxyStatusInput{Proxies: nack, IstiodReplicas: 1, Asked: 1,
			Replica: "istiod-7c9f8b6d5c-mx4qp", Version: "1.31-dev-eed52ebb66ad-Clean", Edsz: envoyTestdata(t, "istiod_edsz.json")})})
	// istio-proxy logs of Envoys that rejected updates, quoted from
	// istio/istio PR #60486, #50658, #47141, #39773, #41793.
	runs = append(runs, accessLogRun("istio-proxy: rejected xDS updates", rwTarget("default", "any", 0, "any"), envoyTestdata(t, "xds_rejected.log"), false))

	// /stats/prometheus of an Envoy before 1.15 (families not grouped).
	for _, file := range []string{"istio21125_fragment.txt", "istio21125_head.txt"} {
		tg := rwTarget("istio-system", "istio-galley", 15019, "")
		text := realworldFile(t, "prometheus/"+file)
		first, err := parseMetricsSample(text, tg, "destination")
		if err != nil {
			t.Fatal(err)
		}
		second, _ := parseMetricsSample(text, tg, "destination")
		first.At, second.At = time.Unix(0, 0), time.Unix(5, 0)
		runs = append(runs, realworldRun{sample: "prometheus " + file, probe: MetricsProbe{}, target: tg,
			result: evaluateMetrics(tg, metricsInput{Reporter: "destination", First: first, Second: second})})
	}
	return runs
}

// TestRealworldProbes pins what each probe concludes from real output: the
// facts an engineer reading the same sample would state.
func TestRealworldProbes(t *testing.T) {
	runs := realworldRuns(t)
	want := map[string]Facts{
		// DC comes with response code 0: counted, with its code.
		"text.log: ssup2 blog, 2025-06-01, 503 UO": {"log_flag_uo": 1, "log_503": 1, "log_flag_codes": []string{"UO 503"},
			"log_details": []string{"upstream_reset_before_response_started{overflow}"}},
		// A TLS failure is no refusal.
		"text.log: istio/istio#32562": {"log_flag_uf": 1, "log_flag_urx": 1, "log_connection_refused": 0, "log_503": 1,
			"log_transport_failures": []string{"TLS error: 268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"}},
		// The upstream side: 431 DPE has no cluster (not an inbound entry
		// of the target), the 502 UPE and 503 UF 111 are.
		// UF 111 at the inbound is a cause's (a port nothing listens on);
		// UPE, an upstream speaking no HTTP, is none of the catalogue's.
		"text.log: tanjunchen blog post": {"log_503": 1, "log_5xx": 2, "log_flag_uf": 1, "log_connection_refused": 1, "log_upstream_pods": 1,
			"log_flag_codes":  []string{"UF 503", "UPE 502"},
			"log_unexplained": []string{"UPE 502 (upstream_reset_before_response_started{protocol_error}) at the destination's sidecar (inbound)=1"}},
		// Plaintext into a STRICT port, seen by the upstream's inbound listener.
		"text.log: Harness docs, 2022-08-15, NR filter_chain_not_found": {"log_tcp": 1, "log_tcp_flag_nr": 1, "log_flag_nr": 0,
			"log_details": []string{"filter_chain_not_found"}},
		// REGISTRY_ONLY: a TCP connection and an HTTP request refused,
		// whatever the target.
		"text.log: blog \"istio egress REGISTRY_ONLY\"":                    {"log_blackhole": 2, "log_blackhole_hosts": []string{"180.97.34.94:443", "www.baidu.com"}},
		"text.log: Chinese notes, 2024-06-26, 504 UT to ServiceEntry host": {"log_flag_ut": 0, "log_5xx": 0},
		"json.log: istio/istio#17139":                                      {"log_tcp": 1, "log_tcp_flag_uf": 1, "log_tcp_flag_urx": 1, "log_flag_uf": 0, "log_5xx": 0},
		"json.log: Istio 1.16 JSON 503 UH no_healthy_upstream": {"log_flag_uh": 1, "log_503": 1,
			"log_details": []string{"no_healthy_upstream"}},
		// Envoy's 426 to HTTP/1.0 at the destination's inbound: no cluster,
		// no flag, no 5xx, and still the whole outage (it was dropped).
		"threads.log: SigNoz/charts#53 426 low_version at the query-service's inbound": {"log_http10_rejected": 1,
			"log_http10_hops": []string{"sidecar-inbound"}, "log_details": []string{"low_version"}, "log_5xx": 0, "log_upstream_pods": 1},
		"threads.log: SigNoz/charts#53 426s from a proxy now told to accept HTTP/1.0": {"log_http10_rejected": 1,
			"log_http10_accepted_by": []string{"default/pod: istio-proxy env ISTIO_META_HTTP10=1"}},
		"text.log: every entry": {"log_flag_nr": 3, "log_flag_dc": 2, "log_tcp": 14, "log_tcp_flag_uf": 6, "log_tcp_flag_urx": 6,
			"log_tcp_flag_uh": 2, "log_tcp_flag_nr": 2, "log_503": 15, "log_connection_refused": 6, "log_blackhole": 5, "log_flag_ut": 3},
		"json.log: every entry": {"log_503": 4, "log_tcp": 3, "log_tcp_flag_uf": 1, "log_flag_uo": 1, "log_flag_uh": 1, "log_flag_uf": 1,
			"log_unexplained": []string{"UAEX 503 at the caller's sidecar (outbound)=1"}},
		// A DC alone has a cause to look for (a proxy exiting first), so
		// it is no unexplained failure.
		"text.log: 0 DC downstream_remote_disconnect": {"log_flag_dc": 1, "log_flag_codes": []string{"DC 0"}, "log_5xx": 0, "log_503": 0, "log_unexplained": []string{}},

		// reviews: one host of three ejected; /stats not given, so the
		// hosts' counters stand in and overflow is unknown.
		"clusters_json: reviews": {"envoy_hosts_total": 3, "envoy_hosts_healthy": 2, "envoy_hosts_outlier_ejected": 1, "envoy_ejections_active": 1,
			"envoy_cluster_stats_present": false, "envoy_counters_from": "hosts", "envoy_clusters_all_ejected": []string{}},
		"clusters_json: istio-policy": {"envoy_hosts_total": 1, "envoy_hosts_healthy": 0, "envoy_hosts_eds_unhealthy": 1},
		"clusters_text: cloudspidergateway": {"envoy_hosts_total": 2, "envoy_hosts_healthy": 2, "envoy_rq_error": 2, "envoy_rq_total": 16923,
			"envoy_cx_connect_fail": 0, "envoy_counters_from": "hosts"},
		// The alt_stat_name stats of Istio 1.25: 139 overflows, not unknown.
		"stats 1.25: echo-server": {"envoy_rq_pending_overflow": 139, "envoy_cluster_stats_present": true, "envoy_counters_from": "stats"},
		"stats 1.0: httpbin":      {"envoy_rq_pending_overflow": 12, "envoy_cluster_stats_present": true},

		// consecutiveErrors: 1 in Istio 1.0/1.1 is a gateway-failure
		// ejection; 5xx ejection is off.
		"config_dump 1.0 outlier: demo": {"config_outlier_consecutive_5xx": 0, "config_outlier_consecutive_gateway_failure": 1,
			"config_outlier_max_ejection_percent": 100, "config_tls": "none"},
		"config_dump ossm2: hello-openshift": {"config_cluster_found": true, "config_tls": "auto", "config_max_connections": envoy.Unlimited,
			"config_outlier_consecutive_5xx": 0},
		"config_dump ossm2: istiod-basic:8188":       {"config_tls": "tls"},
		"config_dump ossm2 gateway: hello-openshift": {"config_cluster_found": true, "config_tls": "auto"},
		"config_dump slime: details":                 {"config_tls": "auto", "config_tls_modes": []string{"auto"}},
		"listeners kuma":                             {"listener_found": false, "listener_missing_ports": []string{"8000"}, "listener_virtual_outbound": false},
		// istio_version is the proxy's; these syncz carry no istiod version.
		"syncz 1.10: httpbin2":       {"xds_proxy_known": true, "xds_stale_types": []string{}, "xds_cds": "SYNCED", "xds_proxy_version": "1.10.3", "xds_istiod_version": "", "xds_rejected_types": []string{}},
		"syncz 1.10: egress gateway": {"xds_proxy_known": true, "xds_stale_types": []string{}, "xds_rds": "NOT SENT"},
		"syncz 1.17: webapp":         {"xds_proxy_known": true, "xds_eds": "SYNCED", "xds_proxy_version": "1.17.8", "xds_istiod_version": ""},
		"istiod (lab): a NACK, /version, edsz": {"xds_proxy_known": true, "xds_cds": "STALE", "xds_rejected_types": []string{"CDS"},
			"xds_last_error":    "CDS: Error adding/updating cluster(s) outbound|9999||meshlab-push-trigger.shop.svc.cluster.local: 'istio.hashable_string' does not have an object factory",
			"xds_proxy_version": "1.28.3", "xds_istiod_version": "1.31-dev-eed52ebb66ad-Clean", "xds_version_skew": 3, "xds_skew_supported": false, "xds_edsz_endpoints": 3},
		"istio-proxy: rejected xDS updates":    {"log_xds_rejected": 7, "log_xds_rejected_reason": "CDS: pilot-agent: cds updates: 0 successful, 13 rejected; lds updates: 13 successful, 0 rejected"},
		"syncz 1.17: a proxy it does not list": {"xds_proxy_known": false},
		"prometheus istio21125_fragment.txt":   {"metrics_requests": 0, "metrics_cx_connect_fail": 0},
		"prometheus istio21125_head.txt":       {"metrics_requests": 0},
	}
	seen := map[string]bool{}
	for _, r := range runs {
		seen[r.sample] = true
		t.Run(r.sample, func(t *testing.T) {
			if err := CheckFacts(r.probe.Meta(), r.result); err != nil {
				t.Fatal(err)
			}
			if r.result.Status == StatusError || r.result.Summary == "" || strings.Contains(r.result.Summary, "\n") {
				t.Fatalf("%s: %q", r.result.Status, r.result.Summary)
			}
			w, ok := want[r.sample]
			if !ok {
				t.Fatal("no expectation for this sample")
			}
			for k, v := range w {
				got := r.result.Facts[k]
				if n, isInt := v.(int); isInt {
					if g, ok := got.(int); !ok || g != n {
						t.Errorf("%s = %#v, want %d", k, got, n)
					}
					continue
				}
				if !reflect.DeepEqual(got, v) {
					t.Errorf("%s = %#v, want %#v", k, got, v)
				}
			}
		})
	}
	for s := range want {
		if !seen[s] {
			t.Errorf("expectation for %q, which no run produced", s)
		}
	}
}
