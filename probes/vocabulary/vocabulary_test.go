package vocabulary

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/parse/ztunnel"
)

// TestEmbeddedIsValid: the shipped vocabulary loads against the catalogue
// and answers every flag and error on every hop.
func TestEmbeddedIsValid(t *testing.T) {
	v, err := Load(assets.FS, Path, assets.Causes)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append([]string{NoFlag}, shorts()...) {
		for _, h := range EnvoyHops {
			a := v.Flag(f, h, accesslog.FailureKey{Flags: f, Code: 503})
			if a.Explained() == (a.Unexplained != "" || a.Benign != "") {
				t.Errorf("%s on %s: %+v", f, h, a)
			}
		}
	}
	for _, k := range ztunnel.ErrorKinds {
		for _, h := range ZtunnelHops {
			a := v.ZtunnelError(k.Name, h, true, k.Text)
			if a.Explained() == (a.Unexplained != "" || a.Benign != "") {
				t.Errorf("%s on %s: %+v", k.Name, h, a)
			}
		}
	}
}

func shorts() []string {
	var out []string
	for _, f := range accesslog.Flags {
		out = append(out, f.Short)
	}
	return out
}

// TestFlagMapping pins what the vocabulary says of the flags, details and
// transport failures triages meet, hop by hop.
func TestFlagMapping(t *testing.T) {
	v := Default()
	for _, c := range []struct {
		hop                Hop
		key                accesslog.FailureKey
		causes             []string
		unexplainedContain string
	}{
		{SidecarOutbound, accesslog.FailureKey{Flags: "UO", Code: 503, Details: "upstream_reset_before_response_started{overflow}"}, []string{"circuit-breaker.overflow"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "UF,URX", Code: 503, Transport: "delayed connect error: 111"},
			[]string{"service.port-mismatch", "startup.app-before-proxy", "sidecar.missing-upstream"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "UF", Code: 503, Details: "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_111}"},
			[]string{"service.port-mismatch", "startup.app-before-proxy", "sidecar.missing-upstream"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "UF,URX", Code: 503, Transport: "TLS error: 268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"},
			[]string{"mtls.origination-conflict", "sidecar.missing-upstream", "mtls.plaintext-to-strict"}, ""},
		{SidecarInbound, accesslog.FailureKey{Flags: "UF", Code: 503, Transport: "delayed_connect_error:_111"}, []string{"service.port-mismatch", "startup.app-before-proxy", "app.localhost-bound"}, ""},
		// The inbound dials the pod's IP: an app on loopback refuses it
		// (real shape: istio/istio#51267, fixtures accesslog/text.log).
		{SidecarInbound, accesslog.FailureKey{Flags: "UF", Code: 503, Details: "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_111}"}, []string{"service.port-mismatch", "startup.app-before-proxy", "app.localhost-bound"}, ""},
		{SidecarInbound, accesslog.FailureKey{Flags: "UF", Code: 503}, nil, "could not connect to its own app"},
		{SidecarInbound, accesslog.FailureKey{Flags: "NR", Details: "filter_chain_not_found", TCP: true}, []string{"mtls.plaintext-to-strict", "sidecar.missing-upstream", "sidecar.app-runs-as-proxy-uid", "probe.blocked-by-strict"}, ""},
		{Gateway, accesslog.FailureKey{Flags: "NR", Code: 404, Details: "route_not_found"}, []string{"gateway.vs-not-bound", "gateway.host-mismatch"}, ""},
		// A route or cluster the caller's Envoy lacks: a Service it does
		// not see, a stale proxy, or one that rejected the push with it.
		{SidecarOutbound, accesslog.FailureKey{Flags: "NR", Code: 404, Details: "route_not_found"}, []string{"config.not-visible", "xds.stale", "xds.config-rejected"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "NC", Code: 503, Details: "cluster_not_found"}, []string{"vs.subset-undefined", "xds.stale", "xds.config-rejected"}, ""},
		// Gateway API semantics: the same missing cluster answered 500.
		{Gateway, accesslog.FailureKey{Flags: "NC", Code: 500, Details: "cluster_not_found"}, []string{"gateway.backend-not-found", "gateway.backend-port-missing", "gateway.ref-not-permitted", "xds.stale", "xds.config-rejected"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "NC", Code: 500, Details: "cluster_not_found"}, []string{"gateway.backend-not-found", "gateway.backend-port-missing", "gateway.ref-not-permitted", "xds.stale", "xds.config-rejected"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "UH", Code: 503, Details: "no_healthy_upstream"},
			[]string{"outlier.all-ejected", "dr.subset-no-pods", "endpoints.none-ready", "service.no-endpoints", "service.no-selector-match", "xds.stale", "eds.synced-but-empty"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "UH", TCP: true},
			[]string{"serviceentry.missing", "config.not-visible", "outlier.all-ejected", "service.no-endpoints", "endpoints.none-ready", "dr.subset-no-pods"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "DC", Code: 0, Details: "downstream_remote_disconnect"}, []string{"shutdown.proxy-exits-first"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Code: 502, Details: "direct_response"}, []string{"serviceentry.missing", "config.not-visible"}, ""},
		{Waypoint, accesslog.FailureKey{Code: 403, Details: "rbac_access_denied_matched_policy[none]"}, []string{"ambient.authz-rejected"}, ""},
		{Waypoint, accesslog.FailureKey{Flags: "UH", Code: 503}, []string{"endpoints.none-ready", "service.no-endpoints", "service.no-selector-match", "outlier.all-ejected"}, ""},
		{SidecarInbound, accesslog.FailureKey{Code: 403, Details: "rbac_access_denied_matched_policy[ns[shop]-policy[deny-all]-rule[0]]"}, nil, "AuthorizationPolicy at the destination's sidecar"},
		{SidecarOutbound, accesslog.FailureKey{Code: 503, Details: "via_upstream"}, nil, ""},
		{SidecarInbound, accesslog.FailureKey{Code: 426, Details: "low_version"}, []string{"http.1.0-rejected"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Code: 426, Details: "low_version"}, []string{"http.1.0-rejected"}, ""},
		{Gateway, accesslog.FailureKey{Code: 426, Details: "low_version"}, []string{"http.1.0-rejected"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "UT", Code: 504, Details: "response_timeout"}, nil, "route timeout"},
		{SidecarInbound, accesslog.FailureKey{Flags: "DPE", Code: 431, Details: "http1.headers_too_large"}, nil, "malformed HTTP request"},
		{SidecarOutbound, accesslog.FailureKey{Flags: "UPE", Code: 502, Details: "upstream_reset_before_response_started{protocol_error}"}, nil, "HTTP protocol error"},
		{SidecarOutbound, accesslog.FailureKey{Flags: "FI", Code: 503, Details: "fault_filter_abort"}, nil, "fault injection aborted"},
		{SidecarOutbound, accesslog.FailureKey{Flags: "URX", Code: 503, Details: "via_upstream"}, nil, "retries (HTTP) or connect attempts (TCP) ran out"},
		// A gateway tunnels to ambient pods: one that ended before istiod's
		// removal of it reached the gateway refuses or resets (istio/istio#58514).
		{Gateway, accesslog.FailureKey{Flags: "UC", Code: 503, Details: "upstream_reset_before_response_started{connection_termination}"},
			[]string{"upstream.idle-reset", "shutdown.proxy-exits-first", "mtls.plaintext-to-strict", "ambient.drain-before-removal", "ambient.hbone-pool-ip-reused"}, ""},
		// ...and reused a pooled HBONE connection to an IP a new pod has
		// now (istio/ztunnel#1662), as a waypoint or a sidecar in ambient.
		{Waypoint, accesslog.FailureKey{Flags: "UC", Code: 503, Details: "upstream_reset_before_response_started{connection_termination}"},
			[]string{"shutdown.proxy-exits-first", "upstream.idle-reset", "ambient.drain-before-removal", "ambient.hbone-pool-ip-reused"}, ""},
		{SidecarOutbound, accesslog.FailureKey{Flags: "UC", Code: 503, Details: "upstream_reset_before_response_started{connection_termination}"},
			[]string{"upstream.idle-reset", "shutdown.proxy-exits-first", "mtls.plaintext-to-strict", "ambient.hbone-pool-ip-reused"}, ""},
		// The destination's inbound reuses its app's connections, no HBONE pool.
		{SidecarInbound, accesslog.FailureKey{Flags: "UC", Code: 503, Details: "upstream_reset_before_response_started{connection_termination}"},
			[]string{"upstream.idle-reset", "shutdown.proxy-exits-first"}, ""},
		{Gateway, accesslog.FailureKey{Flags: "UF", Code: 503, Details: "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_111}"},
			[]string{"service.port-mismatch", "startup.app-before-proxy", "sidecar.missing-upstream", "ambient.drain-before-removal"}, ""},
	} {
		got := v.Entry(c.hop, c.key)
		var causes []string
		var texts []string
		for _, a := range got {
			causes = append(causes, a.Causes...)
			texts = append(texts, a.Unexplained)
		}
		if !reflect.DeepEqual(causes, c.causes) {
			t.Errorf("%s on %s: causes %v, want %v", c.key, c.hop, causes, c.causes)
		}
		if c.unexplainedContain != "" && !strings.Contains(strings.Join(texts, " "), c.unexplainedContain) {
			t.Errorf("%s on %s: unexplained %q, want it to say %q", c.key, c.hop, texts, c.unexplainedContain)
		}
	}
	if a := v.Flag("RFCF", SidecarOutbound, accesslog.FailureKey{Flags: "RFCF", Code: 200}); a.Benign == "" {
		t.Errorf("RFCF: %+v, want benign", a)
	}
	if a := v.Flag(NoFlag, SidecarInbound, accesslog.FailureKey{Code: 502, Details: "via_upstream"}); !strings.Contains(a.Benign, "the upstream app answered") {
		t.Errorf("502 via_upstream: %+v, want benign: the app answered it", a)
	}
}

// TestZtunnelMapping pins ztunnel's errors, as ClassifyError reads them.
func TestZtunnelMapping(t *testing.T) {
	v := Default()
	for _, c := range []struct {
		hop         Hop
		hbone       bool
		text        string
		causes      []string
		unexplained bool
	}{
		{ZtunnelSource, true, "connection timed out, maybe a NetworkPolicy is blocking HBONE port 15008: deadline has elapsed", []string{"ambient.hbone-blocked"}, false},
		{ZtunnelSource, true, "io error: deadline has elapsed", []string{"ambient.hbone-blocked"}, false}, // ztunnel 1.22
		{ZtunnelSource, false, "io error: deadline has elapsed", nil, true},                               // plaintext destination
		{ZtunnelDestination, false, "io error: Connection refused (os error 111)", []string{"service.port-mismatch", "startup.app-before-proxy"}, false},
		{ZtunnelDestination, true, "connection closed due to policy rejection: allow policies exist, but none allowed",
			[]string{"ambient.authz-rejected", "ambient.sidecar-bypasses-waypoint", "ambient.waypoint-missing", "ambient.waypoint-not-ready", "ambient.waypoint-not-bound"}, false},
		{ZtunnelDestination, false, "connection closed due to policy rejection: explicitly denied by: istio-system/istio_converted_static_strict",
			[]string{"mtls.plaintext-to-strict", "ambient.pod-not-enrolled"}, false},
		{ZtunnelSource, true, "http status: 401 Unauthorized",
			[]string{"ambient.authz-rejected", "ambient.sidecar-bypasses-waypoint", "ambient.waypoint-missing", "ambient.waypoint-not-ready", "ambient.waypoint-not-bound", "mtls.plaintext-to-strict"}, false},
		{ZtunnelSource, true, "unknown waypoint: shop/waypoint", []string{"ambient.waypoint-missing", "ambient.waypoint-not-ready"}, false},
		{ZtunnelSource, true, "pool draining", nil, true},
		{ZtunnelSource, true, "unsupported feature: HBONE double tunnel", nil, true},
		// A pod ending drains its connections (istio/istio#58514); the
		// caller's connects to its 15008 are refused meanwhile.
		{ZtunnelDestination, false, "connection closed due to connection drain", []string{"ambient.drain-before-removal"}, false},
		{ZtunnelDestination, false, "connection failed to drain within the timeout", []string{"ambient.drain-before-removal"}, false},
		// ...as does one whose node's ztunnel was not Ready yet when it
		// started (istio/istio#53843).
		{ZtunnelSource, true, "io error: Connection refused (os error 111)",
			[]string{"ambient.pod-not-enrolled", "ambient.ztunnel-unavailable", "ambient.waypoint-not-bound", "ambient.drain-before-removal", "ambient.pod-started-before-ztunnel"}, false},
		{ZtunnelSource, true, "send: io error: Broken pipe (os error 32)", nil, true},
	} {
		k := ztunnel.ClassifyError(c.text)
		a := v.ZtunnelError(k.Kind, c.hop, c.hbone, c.text)
		if !reflect.DeepEqual(a.Causes, c.causes) || (a.Unexplained != "") != c.unexplained {
			t.Errorf("%q (%s) on %s: %+v", c.text, k.Kind, c.hop, a)
		}
	}
	// "pool draining" is the caller's own outbound pool torn down
	// (ztunnel src/proxy/pool.rs), not the reuse of a destination's IP,
	// which is the Envoys' pool.
	k := ztunnel.ClassifyError("pool draining")
	if a := v.ZtunnelError(k.Kind, ZtunnelSource, true, "pool draining"); !strings.Contains(a.Unexplained, "tore down the caller's outbound HBONE pool") || strings.Contains(a.Unexplained, "reused") {
		t.Errorf("pool draining (%s): %q, want the caller's pool torn down, no IP reuse", k.Kind, a.Unexplained)
	}
}

// TestLoadRefuses: each way a vocabulary can be wrong is refused, naming it.
func TestLoadRefuses(t *testing.T) {
	good, err := assets.FS.ReadFile(Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, edit, want string }{
		{"unknown cause", strings.Replace(string(good), "causes: [circuit-breaker.overflow]", "causes: [circuit-breaker.full]", 1), `cause "circuit-breaker.full" is not in the catalogue`},
		{"flag outside the set", strings.Replace(string(good), "\n  UMSDR:", "\n  XX:\n    - hops: [waypoint]\n      unexplained: x\n  UMSDR:", 1), `flag "XX" is not in the closed set`},
		{"missing flag", strings.Replace(string(good), "\n  RFCF:\n", "\n  RFCFX:\n", 1), "flag RFCF has no row"},
		{"missing error", strings.Replace(string(good), "\n  DnsEmpty:\n", "\n  DnsEmptyX:\n", 1), "ztunnel error DnsEmpty has no row"},
		{"hop without a final row", strings.Replace(string(good), "  UO:\n    - hops: [sidecar-outbound, gateway, waypoint]\n      causes", "  UO:\n    - hops: [sidecar-outbound, gateway, waypoint]\n      details: [x]\n      causes", 1), "flag UO: no row answers every case on sidecar-outbound"},
		{"two answers", strings.Replace(string(good), "causes: [circuit-breaker.overflow]", "causes: [circuit-breaker.overflow]\n      benign: x", 1), "needs exactly one of causes, unexplained, benign"},
		{"unknown hop", strings.Replace(string(good), "  UO:\n    - hops: [sidecar-outbound,", "  UO:\n    - hops: [sidecar,", 1), `hop "sidecar" is not one of`},
	} {
		_, err := Load(fstest.MapFS{Path: {Data: []byte(c.edit)}}, Path, assets.Causes)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
