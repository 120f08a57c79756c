package accesslog

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// realworld is output real Envoys and istiods wrote, gathered from public
// issues, docs and posts (../shared/fixtures/realworld/README.md). It is read
// where it lies, never copied into the project.
const realworld = "../../../../shared/fixtures/realworld"

// realworldGroups reads a realworld access log as its "## src:" groups: the
// header line (without "## src: ") and the lines under it, verbatim.
func realworldGroups(t *testing.T, name string) (headers []string, groups map[string][]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(realworld, "accesslog", name))
	if os.IsNotExist(err) {
		t.Skipf("the realworld fixtures are not here (%v): they live in the shared fixtures, outside the repository", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return sourceGroups(t, f)
}

// sourceGroups reads a log in the realworld layout: "## src: " headers,
// each followed by the lines of that source.
func sourceGroups(t *testing.T, f *os.File) (headers []string, groups map[string][]string) {
	t.Helper()
	groups = map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	header := ""
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "## src: "); ok {
			header = h
			headers = append(headers, h)
			continue
		}
		groups[header] = append(groups[header], line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return headers, groups
}

// reading is what an engineer reads off one access-log line. Fields left
// empty are not asserted, except the flags, the cluster and the failure
// texts, which must be exactly what is written ("" when Envoy printed "-").
type reading struct {
	code             int
	flags            string
	tcp              bool
	cluster          string
	dest             string // Destination(): authority, SNI or original address
	details          string
	transport        string
	refused          bool
	blackhole        bool
	start            string
	upstreamHost     string
	route            string
	sni              string
	durationMs       int64
	bytesSent        int64
	method, protocol string
	forwardedFor     string
}

func (w reading) check(t *testing.T, e Entry) {
	t.Helper()
	got := reading{
		code: e.ResponseCode, flags: e.Flags, tcp: e.TCP, cluster: e.UpstreamCluster, details: e.ResponseCodeDetails,
		transport: e.UpstreamTransportFailure, refused: e.ConnectionRefused(), blackhole: e.BlackHole(),
	}
	// Optional fields: compared only when the expectation names them.
	if w.dest != "" {
		got.dest = e.Destination()
	}
	if w.start != "" {
		got.start = e.StartTime
	}
	if w.upstreamHost != "" {
		got.upstreamHost = e.UpstreamHost
	}
	if w.route != "" {
		got.route = e.RouteName
	}
	if w.sni != "" {
		got.sni = e.RequestedServerName
	}
	if w.durationMs != 0 {
		got.durationMs = e.DurationMs
	}
	if w.bytesSent != 0 {
		got.bytesSent = e.BytesSent
	}
	if w.method != "" {
		got.method = e.Method
	}
	if w.protocol != "" {
		got.protocol = e.Protocol
	}
	if w.forwardedFor != "" {
		got.forwardedFor = e.ForwardedFor
	}
	if got != w {
		t.Errorf("read as  %+v\nexpected %+v", got, w)
	}
}

const (
	refusedDetails = "upstream_reset_before_response_started{connection_failure,delayed_connect_error:_111}"
	refused111     = "delayed_connect_error:_111"
	overflow       = "upstream_reset_before_response_started{overflow}"
	termination    = "upstream_reset_before_response_started{connection_termination}"
)

// TestRealworldTextLines reads every line of the real TEXT access logs, from
// Istio 0.6's ingress to 1.2x sidecars, as an on-call engineer reads it.
func TestRealworldTextLines(t *testing.T) {
	headers, groups := realworldGroups(t, "text.log")
	want := map[string][]reading{
		"istio/istio#51267 (2024-05, Istio 1.2x, 1.9+ format) TCP UF,URX inbound passthrough": {
			{tcp: true, flags: "UF,URX", transport: refused111, refused: true, cluster: "InboundPassthroughClusterIpv4", dest: "100.72.2.95:7801"},
		},
		"istio/istio#51267 (2024-05) 503 UF inbound, delayed_connect_error:_111": {
			{code: 503, flags: "UF", details: "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_111}",
				transport: refused111, refused: true, cluster: "inbound|8080||", dest: "redacted.svc.cluster.local:8080", method: "POST"},
		},
		"istio/istio#29109 (2020-11, Istio 1.5-1.7 format: mixer + transport quoted), kubectl --timestamps prefix kept as pasted": {
			// The entry's own START_TIME, not the kubelet's timestamp in front.
			{code: 500, cluster: "inbound|8080|http-8080|scrappers-service.default.svc.cluster.local", dest: "172.17.0.2:30164",
				start: "2020-11-22T20:04:32.765Z", durationMs: 11939, route: "default"},
		},
		"istio/istio#29109 same lines without the kubectl timestamp prefix": {
			{code: 500, cluster: "inbound|8080|http-8080|scrappers-service.default.svc.cluster.local", dest: "172.17.0.2:30164", durationMs: 11939},
			{tcp: true, cluster: "PassthroughCluster", dest: "104.20.28.24:443", bytesSent: 9845236},
			{tcp: true, cluster: "PassthroughCluster", dest: "104.20.28.24:443", bytesSent: 3867470},
		},
		"istio/istio#7817 (2018-08, Istio 1.0 gateway, Envoy default format) 503 NR": {
			{code: 503, flags: "NR", dest: "mns-apiserver.gridarrow.site", forwardedFor: "10.132.0.11", protocol: "HTTP/2"},
		},
		"istio/istio#10515 (2018-12, Istio 1.0 sidecar format, no mixer field) 503 UH": {
			// "GET /HTTP/1.1": path and protocol ran together in the paste.
			{code: 503, flags: "UH", dest: "test.xxx.com", method: "GET", protocol: "HTTP/1.1", bytesSent: 19},
		},
		"istio/istio#3295 (2018-03, Istio 0.6 ingress, Envoy default format) 503 without flag": {
			{code: 503, dest: "35.199.51.155", upstreamHost: "10.36.0.6:8080", durationMs: 11, bytesSent: 57},
		},
		"istio/istio#32562 (2021-04, Istio 1.9/1.10) 503 UF,URX TLS CERTIFICATE_VERIFY_FAILED; transport reason with spaces": {
			// A TLS failure, not a refusal: the fix is certificates, not ports.
			{code: 503, flags: "UF,URX", details: "upstream_reset_before_response_started{connection_failure,TLS_error:_268435581:SSL_routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED}",
				transport: "TLS error: 268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED",
				cluster:   "outbound|9080||productpage.istio.svc.cluster.local", dest: "productpage.istio.svc.cluster.local:9080"},
		},
		"istio/istio#56356 (2025-05, Istio 1.2x) TCP UF,URX via egress SNI": {
			{tcp: true, flags: "UF,URX", cluster: "InboundPassthroughCluster", dest: "api.github.com", durationMs: 9995},
			{tcp: true, flags: "UF,URX", cluster: "InboundPassthroughCluster", dest: "api.github.com", durationMs: 9999},
			{tcp: true, flags: "UF,URX", cluster: "InboundPassthroughCluster", dest: "api.github.com", durationMs: 9994},
			{tcp: true, flags: "UF,URX", cluster: "InboundPassthroughCluster", dest: "api.github.com", durationMs: 9999},
		},
		"istio/istio.io content/en/docs/tasks/observability/logs/access-log/index.md (Istio 1.9+ docs, 2020-11) sleep side and httpbin side": {
			{code: 418, details: "via_upstream", cluster: "outbound|8000||httpbin.foo.svc.cluster.local", dest: "httpbin:8000", route: "default"},
			{code: 418, details: "via_upstream", cluster: "inbound|8000||", dest: "httpbin:8000", sni: "outbound_.8000_._.httpbin.foo.svc.cluster.local", route: "default"},
		},
		"istio/istio.io (zh/es docs, Istio 1.1-1.2 format: mixer status only, no ROUTE_NAME), 2019-03": {
			{code: 418, cluster: "inbound|8000|http|httpbin.default.svc.cluster.local", dest: "httpbin:8000", sni: "outbound_.8000_._.httpbin.default.svc.cluster.local"},
			{code: 418, cluster: "outbound|8000||httpbin.default.svc.cluster.local", dest: "httpbin:8000", upstreamHost: "172.30.146.73:80"},
		},
		"istio.io access-log doc (Istio 1.8 format: transport reason only + ROUTE_NAME), 2020-10": {
			{code: 418, cluster: "outbound|8000||httpbin.default.svc.cluster.local", dest: "httpbin:8000", route: "default", durationMs: 25},
		},
		"public notes, Istio 1.4 (mixer + transport), 2019-12": {
			{code: 418, cluster: "inbound|8000|http|httpbin.bookinfo.svc.cluster.local", dest: "httpbin:8000", route: "default"},
		},
		"tanjunchen blog post 2022-11-21 istio-questions-4, Istio 1.1x: 431 DPE, 502 UPE, 503 UF 111": {
			// "- - HTTP/1.1": a request Envoy could not parse, not a TCP entry.
			{code: 431, flags: "DPE", details: "http1.headers_too_large", protocol: "HTTP/1.1", dest: "192.168.36.246:5000"},
			{code: 502, flags: "UPE", details: "upstream_reset_before_response_started{protocol_error}", cluster: "inbound|5000||", dest: "helloworld:5000"},
			{code: 503, flags: "UF", details: refusedDetails, transport: refused111, refused: true, cluster: "inbound|5000||", dest: "helloworld:5000"},
		},
		"blog, 2022-06 gateway pod, 503 UF 111 without transport field set": {
			// The refusal is only in the details here.
			{code: 503, flags: "UF", details: refusedDetails, refused: true, cluster: "inbound|80||", dest: "10.32.13.107"},
		},
		"blog \"istio egress REGISTRY_ONLY\", 2022-04-26, Istio 1.13: TCP BlackHoleCluster and HTTP block_all": {
			{tcp: true, cluster: "PassthroughCluster", dest: "36.25.253.87:443"},
			{tcp: true, flags: "UH", cluster: "BlackHoleCluster", blackhole: true, dest: "180.97.34.94:443"},
			{code: 502, details: "direct_response", blackhole: true, dest: "www.baidu.com", route: "block_all"},
		},
		"public notes, 2024-04-22, IPv6 BlackHoleCluster; and 2024-05-29 UF 111 inbound IPv6 line (paste lost its leading '[')": {
			{tcp: true, flags: "UH", cluster: "BlackHoleCluster", blackhole: true, dest: "[2001:2::f0f0:89b7]:10002"},
			{code: 503, flags: "UF", details: "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_111}", transport: refused111, refused: true,
				cluster: "inbound|8001||", dest: "xr-light-class-management-server:8001", upstreamHost: "[2406:da24:8:c202:7327::5]:8001", start: "2024-05-29T02:46:11.488Z"},
		},
		"OKD/Maistra lab, 2022-10-26, 502 block_all": {
			{code: 502, details: "direct_response", blackhole: true, dest: "495aa19d-72cd-4f6d-a488-14175d4087d8.apps.sbc-okd.pcbltools.ru", route: "block_all"},
		},
		"istio-in-action study notes, 2025-04-19, 502 block_all with downstream port 0": {
			{code: 502, details: "direct_response", blackhole: true, dest: "jsonplaceholder.typicode.com", route: "block_all", forwardedFor: "172.18.0.1"},
		},
		"gateway mirror notes, 2025-09-22, 404 NR with multi-hop XFF": {
			{code: 404, flags: "NR", details: "route_not_found", dest: "pod1-apigw.rel.anfaqa.com-shadow", forwardedFor: "10.244.1.1,10.244.1.27,172.18.0.8"},
		},
		"German blog, 2021-12-11, 404 NR on ingress gateway": {
			{code: 404, flags: "NR", details: "route_not_found", dest: "helloistio.mcsps.telekomcloud.com"},
		},
		"istio-in-action notes, 504 UT via ingress gateway, 2023-03 and 2025-05": {
			{code: 504, flags: "UT", details: "response_timeout", cluster: "outbound|80|version-v2|catalog.istioinaction.svc.cluster.local", dest: "catalog.istioinaction.io", durationMs: 501},
			{code: 504, flags: "UT", details: "response_timeout", cluster: "outbound|80|version-v2|catalog.istioinaction.svc.cluster.local", dest: "catalog.istioinaction.io:30000", durationMs: 501},
		},
		"Chinese notes, 2024-06-26, 504 UT to ServiceEntry host": {
			{code: 504, flags: "UT", details: "response_timeout", cluster: "outbound|80||httpbin.org", dest: "httpbin.org", durationMs: 3001},
		},
		"notes (a public page), 0 DC downstream_remote_disconnect, 2022-12 outbound and 2022-07 inbound": {
			// Response code 0 on an HTTP request: the caller hung up first.
			{flags: "DC", details: "downstream_remote_disconnect", cluster: "outbound|5000||helloworld.sample.svc.cluster.local", dest: "helloworld.sample.svc:5000", method: "GET", durationMs: 999},
			{flags: "DC", details: "downstream_remote_disconnect", cluster: "inbound|9080||", dest: "reviews:9080", method: "GET", durationMs: 497},
		},
		"ssup2 blog, 2025-06-01, 503 UO circuit breaking sidecar": {
			{code: 503, flags: "UO", details: overflow, cluster: "outbound|8000||httpbin.default.svc.cluster.local", dest: "httpbin:8000", bytesSent: 81},
		},
		"Chinese notes, 2021-08-03, 503 UO on ingress gateway subset": {
			{code: 503, flags: "UO", details: overflow, cluster: "outbound|9080|v1|productpage.istio.svc.cluster.local", dest: "192.168.198.154:31110"},
		},
		"VictoriaMetrics blog, 2025-05-25, 503 UC PassthroughCluster allow_any": {
			{code: 503, flags: "UC", details: termination, cluster: "PassthroughCluster", dest: "10.244.0.13:8080", route: "allow_any"},
		},
		"notes, 2021-10-06, 503 NC cluster_not_found and 503 UC on ingress gateway, HTTP/2": {
			{code: 503, flags: "NC", details: "cluster_not_found", dest: "istio-ingressgateway.istio-system.svc.cluster.local", protocol: "HTTP/2"},
			{code: 503, flags: "UC", details: termination, cluster: "outbound|443||istio-ingressgateway.istio-system.svc.cluster.local", dest: "istio-ingressgateway.istio-system.svc.cluster.local"},
		},
		"istio/istio#31555 (2021-03, Istio 1.9) TCP passthrough and TCP UF,URX inbound": {
			{tcp: true, cluster: "PassthroughCluster", dest: "100.77.28.132:1521"},
			{tcp: true, flags: "UF,URX", cluster: "inbound|12950||", dest: "10.244.0.31:12950", durationMs: 2285},
		},
		"Harness docs, 2022-08-15, NR filter_chain_not_found (pasted with trailing space)": {
			{tcp: true, flags: "NR", details: "filter_chain_not_found", dest: "10.124.9.14:9879"},
		},
		"blog, 2023-08-09, NR filter_chain_not_found": {
			{tcp: true, flags: "NR", details: "filter_chain_not_found", dest: "10.20.223.206:8080"},
		},
		"engarde PR nitishm/engarde#12 sample (Istio 1.9 pre-release, 2020-10)": {
			{code: 200, details: "via_upstream", cluster: "inbound|8000||", dest: "httpbin:8000", bytesSent: 547},
		},
		"Envoy (non-Istio) docker-compose demo, 2024-07-20, Envoy default format + details (custom), 503 UH and 503 UF": {
			{code: 503, flags: "UH", details: "no_healthy_upstream", dest: "localhost:8000", bytesSent: 19},
			{code: 503, flags: "UF", details: refusedDetails, refused: true, dest: "localhost:8000", upstreamHost: "172.28.0.2:801", bytesSent: 145},
		},
	}
	if len(headers) != len(want) {
		t.Errorf("text.log has %d groups, %d are expected here: a sample was added or removed", len(headers), len(want))
	}
	for _, h := range headers {
		t.Run(h, func(t *testing.T) {
			w, ok := want[h]
			if !ok {
				t.Fatalf("no expectation for this sample")
			}
			lines := groups[h]
			if len(lines) != len(w) {
				t.Fatalf("%d lines, %d expected", len(lines), len(w))
			}
			for i, line := range lines {
				e, ok := ParseLine(line)
				if !ok {
					t.Errorf("line %d not read as an access-log entry: %s", i+1, line)
					continue
				}
				w[i].check(t, e)
			}
		})
	}
}

// TestThreadLines reads the real lines no shared fixture holds, pinned
// from the public threads testdata/SOURCES.md names.
func TestThreadLines(t *testing.T) {
	f, err := os.Open("testdata/threads.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	headers, groups := sourceGroups(t, f)
	want := map[string][]reading{
		"SigNoz/charts#53 (2022-07-11, Istio 1.1x), the query-service's istio-proxy: 426 low_version to nginx's HTTP/1.0 proxy_pass": {
			// No flag and no 5xx: Envoy's codec refused HTTP/1.0 itself.
			{code: 426, details: "low_version", dest: "mon-signoz-query-service:8080", method: "GET", protocol: "HTTP/1.0", forwardedFor: "172.16.0.4"},
		},
	}
	if len(headers) != len(want) {
		t.Errorf("threads.log has %d groups, %d are expected here", len(headers), len(want))
	}
	for _, h := range headers {
		t.Run(h, func(t *testing.T) {
			w, ok := want[h]
			if !ok || len(groups[h]) != len(w) {
				t.Fatalf("%d lines, expected %v", len(groups[h]), w)
			}
			for i, line := range groups[h] {
				e, ok := ParseLine(line)
				if !ok {
					t.Fatalf("line %d not read as an access-log entry: %s", i+1, line)
				}
				w[i].check(t, e)
				if !e.HTTP10Rejected() {
					t.Errorf("line %d not read as Envoy's 426 to HTTP/1.0", i+1)
				}
			}
		})
	}
	// The tally keeps it as the failure it is: counted, its details and
	// the line kept, though it has no flag and is no 5xx.
	var s Summary
	for _, line := range groups[headers[0]] {
		s.AddLine(line)
	}
	s.Finish()
	if s.HTTP10Rejected != 1 || s.Details.Counts["low_version"] != 1 || len(s.Samples) != 1 || s.Failures.Total() != 1 {
		t.Errorf("tallied as http10 %d, details %v, %d samples, %d failures; want the 426 counted, its details and the line kept",
			s.HTTP10Rejected, s.Details.Counts, len(s.Samples), s.Failures.Total())
	}
}

// TestRealworldJSONLines reads the JSON-encoded samples: every value a
// string (Istio 1.3-1.8), typed values and nulls (1.9+), and custom key
// spellings.
func TestRealworldJSONLines(t *testing.T) {
	headers, groups := realworldGroups(t, "json.log")
	want := map[string][]reading{
		"istio/istio#19056 (2019-11, Istio 1.4 ingressgateway, JSON encoding: every value a string, mixer istio_policy_status) 503 UAEX": {
			{code: 503, flags: "UAEX", dest: "loki.example.com", method: "POST", bytesSent: 31, sni: "loki.example.com"},
		},
		"istio/istio#17139 (2019-09, Istio 1.3 JSON) TCP UF,URX to headless keycloak, and InboundPassthroughClusterIpv4": {
			{tcp: true, flags: "UF,URX", cluster: "outbound|7600||keycloak-headless.our_ns.svc.cluster.local", dest: "REDACTED_IP1:7600", durationMs: 10002, upstreamHost: "REDACTED_IP1:7600"},
			{tcp: true, cluster: "InboundPassthroughClusterIpv4", dest: "REDACTED_IP2:15090", bytesSent: 759108},
			{tcp: true, cluster: "InboundPassthroughClusterIpv4", dest: "REDACTED_IP2:15090", bytesSent: 303518},
		},
		"Chinese blog, 2020-12-08, Istio 1.6-1.8 JSON, string values": {
			{code: 418, cluster: "outbound|8000||httpbin.default.svc.cluster.local", dest: "httpbin:8000", route: "default", durationMs: 2, bytesSent: 135},
		},
		"notes, 2023-05-02, Istio 1.17 JSON with typed values (numbers, null)": {
			{code: 200, details: "via_upstream", cluster: "outbound|8000||httpbin.istio-demo.svc.cluster.local", dest: "httpbin:8000", durationMs: 12, bytesSent: 508, route: "default"},
		},
		"SAP kyma docs, ingress gateway JSON, typed values, route_name null": {
			{code: 200, details: "via_upstream", cluster: "outbound|8000||httpbin.test.svc.cluster.local", dest: "httpbin.local.kyma.dev", protocol: "HTTP/2", durationMs: 15},
		},
		"Envoy Gateway waypoint blog, 2025-07-22, Envoy Gateway JSON keys (\":authority\", \"user-agent\"), 503 UO": {
			{code: 503, flags: "UO", details: overflow, cluster: "httproute/default/ratings/rule/0", dest: "ratings:9080", upstreamHost: "10.244.1.37:9080", bytesSent: 81},
		},
		"envoyproxy/envoy#17432 (2021-07, custom camelCase JSON keys) 503 UF,URX": {
			{code: 503, flags: "UF,URX", details: "upstream_reset_before_response_started{connection_failure}", method: "GET", durationMs: 55, bytesSent: 91, start: "2021-07-21T09:42:36.514Z"},
		},
		"\"Bootstrap Service Mesh Implementations with Istio\" ch.11 (Chinese translation, a public page), 2022-12-15, Istio 1.16 JSON 503 UH no_healthy_upstream": {
			{code: 503, flags: "UH", details: "no_healthy_upstream", cluster: "outbound|80||envoydummy.chapter11.svc.cluster.local", dest: "envoydummy.chapter11", bytesSent: 19},
		},
	}
	if len(headers) != len(want) {
		t.Errorf("json.log has %d groups, %d are expected here: a sample was added or removed", len(headers), len(want))
	}
	for _, h := range headers {
		t.Run(h, func(t *testing.T) {
			w, ok := want[h]
			if !ok {
				t.Fatalf("no expectation for this sample")
			}
			lines := groups[h]
			if len(lines) != len(w) {
				t.Fatalf("%d lines, %d expected", len(lines), len(w))
			}
			for i, line := range lines {
				e, ok := ParseLine(line)
				if !ok {
					t.Errorf("line %d not read as an access-log entry: %s", i+1, line)
					continue
				}
				if !e.JSON {
					t.Errorf("line %d not read as JSON", i+1)
				}
				w[i].check(t, e)
			}
		})
	}
	// The Envoy Gateway and camelCase lines name their fields differently;
	// what they say is the same.
	eg := groups["Envoy Gateway waypoint blog, 2025-07-22, Envoy Gateway JSON keys (\":authority\", \"user-agent\"), 503 UO"][0]
	if e, _ := ParseLine(eg); e.UserAgent != "hey/0.0.1" || e.Path != "/ratings/0" || e.RequestID != "f611fd0a-8b7f-4c7d-ad18-6f0f8812ac6b" || e.ForwardedFor != "10.244.1.41" {
		t.Errorf("Envoy Gateway keys misread: %+v", e)
	}
	camel := groups["envoyproxy/envoy#17432 (2021-07, custom camelCase JSON keys) 503 UF,URX"][0]
	if e, _ := ParseLine(camel); e.Path != "/v1/KEY_25c5d7699e8d431a94ca282e1ec2156f" || e.Protocol != "HTTP/1.1" {
		t.Errorf("camelCase keys misread: %+v", e)
	}
}

// TestRealworldTally tallies each real log whole: the figures a triage of
// that proxy would branch on.
func TestRealworldTally(t *testing.T) {
	if _, err := os.Stat(filepath.Join(realworld, "accesslog")); err != nil {
		t.Skipf("the realworld fixtures are not here: %v", err)
	}
	tally := func(name string) Summary {
		f, err := os.Open(filepath.Join(realworld, "accesslog", name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		s, err := Tally(f)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := tally("text.log")
	// 33 "## src:" lines are not entries; all 50 others are.
	ints := map[string][2]int{
		"lines":    {s.Lines, 83},
		"unparsed": {s.Unparsed, 33},
		"entries":  {s.Entries, 50},
		"503":      {s.Status503, 15},
		// Besides the 503s: #29109's 500 (twice, with and without the
		// kubectl prefix), 502 UPE, three 502 block_all, two 504 UT from
		// the gateway and one to httpbin.org.
		"5xx": {s.Status5xx, 15 + 2 + 1 + 3 + 3},
		"tcp": {s.TCP, 14},
		// NR with 503 (Istio 1.0) and with 404; DC with 0.
		"NR":     {s.Flags.Counts["NR"], 3},
		"NR 404": {s.FlagCodes.Counts["NR 404"], 2},
		"NR 503": {s.FlagCodes.Counts["NR 503"], 1},
		"DC 0":   {s.FlagCodes.Counts["DC 0"], 2},
		"UT 504": {s.FlagCodes.Counts["UT 504"], 3},
		"UO 503": {s.FlagCodes.Counts["UO 503"], 2},
		// TCP entries fail with flags too: UF,URX six times, UH to
		// BlackHoleCluster twice, NR filter_chain_not_found twice.
		"TCP UF":  {s.TCPFlags.Counts["UF"], 6},
		"TCP URX": {s.TCPFlags.Counts["URX"], 6},
		"TCP UH":  {s.TCPFlags.Counts["UH"], 2},
		"TCP NR":  {s.TCPFlags.Counts["NR"], 2},
		// Refusals: two TCP/HTTP pairs from #51267 and the blogs, the IPv6
		// line and the non-Istio demo.
		"refused":     {s.ConnectionRefused, 6},
		"blackhole":   {s.BlackHole, 5},
		"passthrough": {s.Passthrough, 5},
		// No sample is a 426 low_version: none is an HTTP/1.0 refusal,
		// the 500 without a flag and the 502/504s included.
		"http10": {s.HTTP10Rejected, 0},
	}
	for name, v := range ints {
		if v[0] != v[1] {
			t.Errorf("text.log %s = %d, want %d", name, v[0], v[1])
		}
	}
	for _, d := range []string{"route_not_found", "downstream_remote_disconnect", "filter_chain_not_found", "no_healthy_upstream", overflow} {
		if s.Details.Counts[d] == 0 {
			t.Errorf("text.log details lack %s: %v", d, s.Details.Keys())
		}
	}
	// Each failed entry keyed by what tells it apart, as the vocabulary
	// reads it: the 503 UF of #51267's inbound, with its details and the
	// refusal; the TCP NR of a STRICT port; and the 5xx without a flag.
	failures := 0
	for _, n := range s.Failures.Counts {
		failures += n
	}
	// Every entry but the 11 that succeeded (2xx, and TCP entries without
	// a flag) is a failure.
	if failures != 39 {
		t.Errorf("text.log failures %d (of %d entries), want 39: %q", failures, s.Entries, s.Failures.Keys())
	}
	for _, key := range []FailureKey{
		{Flags: "NR", Details: "filter_chain_not_found", TCP: true},
		{Flags: "DC", Details: "downstream_remote_disconnect"},
		{Flags: "UO", Code: 503, Details: overflow},
	} {
		if s.Failures.Counts[key.String()] == 0 {
			t.Errorf("text.log failures lack %q: %q", key, s.Failures.Keys())
		}
	}

	s = tally("json.log")
	ints = map[string][2]int{
		"entries":  {s.Entries, 10},
		"unparsed": {s.Unparsed, 8},
		"503":      {s.Status503, 4},
		"2xx":      {s.Status2xx, 2},
		"tcp":      {s.TCP, 3},
		"TCP UF":   {s.TCPFlags.Counts["UF"], 1},
		"UO 503":   {s.FlagCodes.Counts["UO 503"], 1},
		"UH 503":   {s.FlagCodes.Counts["UH 503"], 1},
		"http10":   {s.HTTP10Rejected, 0},
	}
	for name, v := range ints {
		if v[0] != v[1] {
			t.Errorf("json.log %s = %d, want %d", name, v[0], v[1])
		}
	}
	if got := s.Flags.Keys(); !reflect.DeepEqual(got, []string{"UAEX", "UF", "UH", "UO", "URX"}) {
		t.Errorf("json.log flags %v", got)
	}
}

// Istio 1.23 and 1.24 print %UPSTREAM_CLUSTER% as the cluster's
// alt_stat_name, the name and ";". The line below is the 1.17 typed JSON
// sample above as such a proxy prints it; the TEXT line is the REGISTRY_ONLY
// blog's TCP entry the same way.
func TestUpstreamClusterWithAltStatDelimiter(t *testing.T) {
	e, ok := ParseLine(`{"route_name":"default","response_flags":"UH","response_code":503,"authority":"httpbin:8000","method":"GET","bytes_sent":19,"upstream_cluster":"outbound|8000||httpbin.istio-demo.svc.cluster.local;","path":"/headers","protocol":"HTTP/1.1","response_code_details":"no_healthy_upstream","duration":0,"upstream_host":null}`)
	if !ok || e.UpstreamCluster != "outbound|8000||httpbin.istio-demo.svc.cluster.local" {
		t.Errorf("JSON upstream_cluster read as %q", e.UpstreamCluster)
	}
	e, ok = ParseLine(`[2022-04-26T13:14:30.905Z] "- - -" 0 UH - - "-" 0 0 7 - "-" "-" "-" "-" "-" BlackHoleCluster; - 180.97.34.94:443 10.122.158.52:54192 - -`)
	if !ok || !e.BlackHole() || e.UpstreamCluster != BlackHoleCluster {
		t.Errorf("BlackHoleCluster; read as %q (black hole %v)", e.UpstreamCluster, e.BlackHole())
	}
	e, _ = ParseLine(`{"response_code":0,"response_flags":"UH","upstream_cluster":"BlackHoleCluster;","requested_server_name":"api.github.com","method":null,"protocol":null}`)
	if !e.BlackHole() || !e.TCP || e.Destination() != "api.github.com" {
		t.Errorf("JSON BlackHoleCluster; read as %+v", e)
	}
}

// Envoy prints the transport failure reason with spaces in some releases;
// TCP entries have no details to carry the underscored spelling.
func TestConnectionRefusedWithSpaces(t *testing.T) {
	e, ok := ParseLine(`[2023-02-01T10:00:00.000Z] "- - -" 0 UF,URX - - "delayed connect error: 111" 0 0 1 - "-" "-" "-" "-" "10.244.1.9:5432" outbound|5432||postgres.shop.svc.cluster.local - 10.96.0.20:5432 10.244.0.9:40000 - -`)
	if !ok || !e.TCP || !e.ConnectionRefused() {
		t.Errorf("%+v refused=%v", e, e.ConnectionRefused())
	}
	// EHOSTUNREACH and TLS failures are not refusals.
	for _, notRefused := range []string{"delayed connect error: 113", "TLS error: 268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"} {
		if mentionsRefused(notRefused) {
			t.Errorf("%q taken as a refusal", notRefused)
		}
	}
}

// The inbound entries of real sidecars name the calling pod in
// downstream_remote_address (the caller search reads it): Gerrit's 503 UF
// from 100.72.9.85, httpbin's 418s from 10.44.1.23 and 172.30.146.82. The
// kubectl --timestamps prefix and IPv6 brackets do not change the host.
func TestRealworldInboundPeers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(realworld, "accesslog", "text.log"))
	if err != nil {
		t.Skipf("the realworld fixtures are not here: %v", err)
	}
	inbound, _, err := Split(bytes.NewReader(data), func(e *Entry) bool { return strings.HasPrefix(e.UpstreamCluster, "inbound|") })
	if err != nil {
		t.Fatal(err)
	}
	for peer, want := range map[string][2]int{"100.72.9.85": {1, 1}, "10.44.1.23": {1, 0}, "172.30.146.82": {1, 0}, "172.18.0.1": {2, 2}} {
		if got := [2]int{inbound.Peers.Counts[peer], inbound.PeersFailed.Counts[peer]}; got != want {
			t.Errorf("peer %s: %v entries/failed, want %v (peers %v)", peer, got, want, inbound.Peers.Counts)
		}
	}
	for addr, want := range map[string]string{"[fd00::7]:8080": "fd00::7", "10.1.2.3": "10.1.2.3", "fd00::7": "fd00::7", "": ""} {
		if got := addressHost(addr); got != want {
			t.Errorf("addressHost(%q) = %q, want %q", addr, got, want)
		}
	}
}
