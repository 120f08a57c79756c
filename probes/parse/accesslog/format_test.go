package accesslog

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// The formats of testdata/json_mesh_keys.log and text_custom.log, as
// their meshes declare them (probes/testdata/meshconfig_*.yaml).
const (
	meshJSONKeysFormat = `{"ts":"%START_TIME%","status":"%RESPONSE_CODE%","flags":"%RESPONSE_FLAGS%",` +
		`"details":"%RESPONSE_CODE_DETAILS%","tls_failure":"%UPSTREAM_TRANSPORT_FAILURE_REASON%",` +
		`"upstream":"%UPSTREAM_CLUSTER%","upstream_ip":"%UPSTREAM_HOST%","client":"%DOWNSTREAM_REMOTE_ADDRESS%",` +
		`"req":{"method":"%REQ(:METHOD)%","path":"%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%","host":"%REQ(:AUTHORITY)%","id":"%REQ(X-REQUEST-ID)%"},` +
		`"proto":"%PROTOCOL%","ms":"%DURATION%","rx":"%BYTES_RECEIVED%","tx":"%BYTES_SENT%","route":"%ROUTE_NAME%"}`
	meshTextCustomFormat = `%START_TIME% %RESPONSE_CODE% %RESPONSE_FLAGS% %REQ(:METHOD)% %REQ(:AUTHORITY)% %REQ(:PATH)% ` +
		`upstream=%UPSTREAM_CLUSTER% host=%UPSTREAM_HOST% reason="%UPSTREAM_TRANSPORT_FAILURE_REASON%" ` +
		`details=%RESPONSE_CODE_DETAILS% client=%DOWNSTREAM_REMOTE_ADDRESS% dur=%DURATION%ms` + "\n"
)

func mustFormat(t *testing.T, encoding, format string) Formats {
	t.Helper()
	f, err := ParseFormat("test", encoding, format)
	if err != nil {
		t.Fatal(err)
	}
	return Formats{f}
}

func tallyWith(t *testing.T, fs Formats, name string) Summary {
	t.Helper()
	fh, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	s, err := fs.Tally(fh)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMeshJSONKeys: JSON lines under the mesh's own keys, nested ones
// included, are read by the keys its accessLogFormat gives; without the
// format they are no entries at all (and nothing is guessed).
func TestMeshJSONKeys(t *testing.T) {
	s := tallyWith(t, mustFormat(t, "JSON", meshJSONKeysFormat), "json_mesh_keys.log")
	if s.Lines != 5 || s.Unparsed != 1 || s.Entries != 4 || s.Status503 != 2 || s.Status2xx != 1 || s.TCP != 1 {
		t.Errorf("lines %d unparsed %d entries %d 503 %d 2xx %d tcp %d, want 5 1 4 2 1 1", s.Lines, s.Unparsed, s.Entries, s.Status503, s.Status2xx, s.TCP)
	}
	if got := s.FlagCodes.Keys(); !reflect.DeepEqual(got, []string{"UF 503", "UH 503"}) {
		t.Errorf("flag codes %v", got)
	}
	if s.TCPFlags.Counts["UF"] != 1 || s.TCPFlags.Counts["URX"] != 1 || s.ConnectionRefused != 1 {
		t.Errorf("tcp flags %v, refused %d", s.TCPFlags.Counts, s.ConnectionRefused)
	}
	if got := s.Clusters5xx.Keys(); !reflect.DeepEqual(got, []string{"outbound|8080|v2|orders.shop.svc.cluster.local", "outbound|8080||orders.shop.svc.cluster.local"}) {
		t.Errorf("5xx clusters %v", got)
	}
	if got := s.PeersFailed.Keys(); !reflect.DeepEqual(got, []string{"10.244.0.21"}) {
		t.Errorf("failed peers %v", got)
	}
	e, ok := mustFormat(t, "JSON", meshJSONKeysFormat).ParseLine(`{"status":503,"flags":"UH","details":"no_healthy_upstream","upstream":"outbound|8080|v2|orders.shop.svc.cluster.local;","req":{"method":"POST","path":"/api/orders","host":"orders.shop:8080"},"proto":"HTTP/1.1","ms":0}`)
	if !ok || e.ResponseCode != 503 || e.Flags != "UH" || e.Method != "POST" || e.Authority != "orders.shop:8080" ||
		e.UpstreamCluster != "outbound|8080|v2|orders.shop.svc.cluster.local" || e.TCP {
		t.Errorf("%v %+v", ok, e)
	}
	if base := (Formats{}).Tally; true {
		fh, _ := os.Open("testdata/json_mesh_keys.log")
		defer fh.Close()
		s, _ := base(fh)
		if s.Entries != 0 {
			t.Errorf("without the format %d entries were guessed", s.Entries)
		}
	}
}

// TestMeshTextFormat: a TEXT format that is not Istio's default is read by
// its own layout, long flag names as short ones; the built-in layouts
// still read a default line in the same log.
func TestMeshTextFormat(t *testing.T) {
	fs := mustFormat(t, "TEXT", meshTextCustomFormat)
	s := tallyWith(t, fs, "text_custom.log")
	if s.Lines != 5 || s.Unparsed != 1 || s.Entries != 4 || s.Status503 != 3 {
		t.Errorf("lines %d unparsed %d entries %d 503 %d, want 5 1 4 3", s.Lines, s.Unparsed, s.Entries, s.Status503)
	}
	if got := s.FlagCodes.Keys(); !reflect.DeepEqual(got, []string{"UF 503", "UO 503", "URX 503"}) || s.FlagCodes.Counts["UF 503"] != 2 {
		t.Errorf("flag codes %v", s.FlagCodes.Counts)
	}
	if got := s.TransportFailures.Keys(); len(got) != 2 || !strings.HasPrefix(got[1], "delayed connect error: 111") && !strings.HasPrefix(got[0], "delayed connect error: 111") {
		t.Errorf("transport failures %v", got)
	}
	e, ok := fs.ParseLine(`2026-12-02T03:04:07.009Z 503 UO GET orders.shop:8080 /api/orders upstream=outbound|8080||orders.shop.svc.cluster.local host=- reason="-" details=upstream_reset_before_response_started{overflow} client=10.244.0.21:51706 dur=0ms`)
	if !ok || e.Flags != "UO" || e.Path != "/api/orders" || e.UpstreamHost != "" || e.UpstreamTransportFailure != "" ||
		e.ResponseCodeDetails != "upstream_reset_before_response_started{overflow}" || e.DownstreamRemoteAddress != "10.244.0.21:51706" {
		t.Errorf("%v %+v", ok, e)
	}
	def := `[2026-12-02T03:04:05.123Z] "GET /api/orders HTTP/1.1" 503 UH no_healthy_upstream - "-" 0 19 0 - "-" "curl/8.5.0" "1f0c" "orders.shop:8080" "-" outbound|8080||orders.shop.svc.cluster.local - 10.96.12.4:8080 10.244.0.21:51702 - default`
	if e, ok := fs.ParseLine(def); !ok || e.Flags != "UH" || e.ResponseCode != 503 {
		t.Errorf("a default line beside the custom format: %v %+v", ok, e)
	}
	if _, ok := (Formats{}).ParseLine(`2026-12-02T03:04:06.201Z 503 UF GET orders.shop:8080 /api/orders upstream=outbound|8080||orders.shop.svc.cluster.local host=10.244.1.7:8080 reason="-" details=x client=10.244.0.21:51702 dur=1ms`); ok {
		t.Error("the built-in layouts took a custom line")
	}
}

// TestParseFormatErrors: a format that names no response code or flags
// reads nothing a triage needs and is refused with its name.
func TestParseFormatErrors(t *testing.T) {
	for _, c := range []struct{ enc, format string }{
		{"TEXT", "%START_TIME% %REQ(:PATH)%"},
		{"JSON", `{"path":"%REQ(:PATH)%"}`},
		{"JSON", `not json`},
	} {
		if _, err := ParseFormat("meshConfig.accessLogFormat", c.enc, c.format); err == nil || !strings.Contains(err.Error(), "meshConfig.accessLogFormat") {
			t.Errorf("%s %q: %v", c.enc, c.format, err)
		}
	}
}

// TestResponseFlagNames: the long names and the ResponseFlags fields of
// gRPC access logs read as the short names; the closed set is Envoy's.
func TestResponseFlagNames(t *testing.T) {
	for in, want := range map[string]string{
		"UH": "UH", "UF,URX": "UF,URX", "-": "", "NoHealthyUpstream": "UH",
		"UpstreamConnectionFailure, UpstreamRetryLimitExceeded": "UF,URX", "no_healthy_upstream": "UH", "XYZ": "XYZ",
	} {
		if got := normalizeFlags(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	e, ok := ParseLine(`{"response_code":503,"response_flags":{"no_healthy_upstream":true,"upstream_retry_limit_exceeded":false},"upstream_cluster":"outbound|80||a.b.svc.cluster.local"}`)
	if !ok || e.Flags != "UH" {
		t.Errorf("a ResponseFlags object: %v %+v", ok, e)
	}
	if len(Flags) != 30 {
		t.Errorf("%d flags, want Envoy's 30", len(Flags))
	}
	seen := map[string]bool{}
	for _, f := range Flags {
		for _, n := range []string{f.Short, f.Long, f.Field} {
			if n != "" && seen[n] {
				t.Errorf("name %q twice", n)
			}
			seen[n] = true
		}
	}
}

// TestFailureKeys: each failed entry is counted by what tells it apart.
func TestFailureKeys(t *testing.T) {
	s := tallyWith(t, mustFormat(t, "TEXT", meshTextCustomFormat), "text_custom.log")
	if got := len(s.Failures.Counts); got != 3 {
		t.Errorf("%d failure keys, want 3: %v", got, s.Failures.Keys())
	}
	for _, k := range s.Failures.Keys() {
		if ParseFailureKey(k).String() != k {
			t.Errorf("%q does not read back", k)
		}
	}
	k := ParseFailureKey(FailureKey{Flags: "UF,URX", Code: 503, Details: "d", Transport: "t"}.String())
	var flags []string
	k.EachFlag(func(f string) { flags = append(flags, f) })
	if !reflect.DeepEqual(flags, []string{"UF", "URX"}) || k.Code != 503 || k.TCP {
		t.Errorf("%+v %v", k, flags)
	}
}

// istioJSONFormat is Istio's own JSON accessLogFormat keys
// (pilot/pkg/model/telemetry_logging.go EnvoyJSONLogFormatIstio), as a
// mesh that declares them spells them.
const istioJSONFormat = `{"start_time":"%START_TIME%","route_name":"%ROUTE_NAME%","method":"%REQ(:METHOD)%",` +
	`"path":"%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%","protocol":"%PROTOCOL%","response_code":"%RESPONSE_CODE%",` +
	`"response_flags":"%RESPONSE_FLAGS%","response_code_details":"%RESPONSE_CODE_DETAILS%",` +
	`"connection_termination_details":"%CONNECTION_TERMINATION_DETAILS%","bytes_received":"%BYTES_RECEIVED%",` +
	`"bytes_sent":"%BYTES_SENT%","duration":"%DURATION%","upstream_service_time":"%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%",` +
	`"x_forwarded_for":"%REQ(X-FORWARDED-FOR)%","user_agent":"%REQ(USER-AGENT)%","request_id":"%REQ(X-REQUEST-ID)%",` +
	`"authority":"%REQ(:AUTHORITY)%","upstream_host":"%UPSTREAM_HOST%","upstream_cluster":"%UPSTREAM_CLUSTER%",` +
	`"upstream_local_address":"%UPSTREAM_LOCAL_ADDRESS%","downstream_local_address":"%DOWNSTREAM_LOCAL_ADDRESS%",` +
	`"downstream_remote_address":"%DOWNSTREAM_REMOTE_ADDRESS%","requested_server_name":"%REQUESTED_SERVER_NAME%",` +
	`"upstream_transport_failure_reason":"%UPSTREAM_TRANSPORT_FAILURE_REASON%"}`

// TestRealworldJSONByTheDeclaredFormat: the real JSON lines under Istio's
// keys (Istio 1.3's all-string values, 1.9+'s typed ones and null) read by
// the format a mesh declares read as the built-in reader reads them; a
// real line under keys the format does not name is no entry of it.
func TestRealworldJSONByTheDeclaredFormat(t *testing.T) {
	headers, groups := realworldGroups(t, "json.log")
	fs := mustFormat(t, "JSON", istioJSONFormat)
	read, other := 0, 0
	for _, h := range headers {
		for _, line := range groups[h] {
			builtin, ok := ParseLine(line)
			if !ok {
				t.Errorf("%s: the built-in reader reads no entry in %.60s", h, line)
				continue
			}
			var byFormat Entry
			doc, ok := decodeObject(line)
			ok = ok && fs[0].parseJSON(doc, &byFormat)
			if !strings.Contains(line, `"response_code"`) {
				if ok {
					t.Errorf("%s: Istio's keys read a line without them: %.60s", h, line)
				}
				other++
				continue
			}
			if !ok {
				t.Errorf("%s: the declared format reads no entry in %.60s", h, line)
				continue
			}
			read++
			type key struct {
				Code                                     int
				Flags, Details, Cluster, Host, Authority string
				Local, Remote, Method, Transport, SNI    string
				Sent, Ms                                 int64
				TCP                                      bool
			}
			k := func(e Entry) key {
				if !strings.Contains(line, `"authority":`) {
					e.Authority = "" // Envoy Gateway's ":authority", a key Istio's format does not name
				}
				return key{e.ResponseCode, e.Flags, e.ResponseCodeDetails, e.UpstreamCluster, e.UpstreamHost, e.Authority,
					e.DownstreamLocalAddress, e.DownstreamRemoteAddress, e.Method, e.UpstreamTransportFailure, e.RequestedServerName,
					e.BytesSent, e.DurationMs, e.TCP}
			}
			if k(builtin) != k(byFormat) {
				t.Errorf("%s:\n built-in %+v\n format   %+v", h, k(builtin), k(byFormat))
			}
		}
	}
	if read < 6 || other < 1 {
		t.Errorf("%d lines under Istio's keys read, %d under others: the fixture changed", read, other)
	}
}
