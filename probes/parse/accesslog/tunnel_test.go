package accesslog

import (
	"reflect"
	"strings"
	"testing"
)

// A gateway in an ambient mesh reaches a pod through an HBONE tunnel: its
// upstream host is the internal listener connect_originate followed by the
// pod's address, its upstream local address an internal client address.
// The lines are in the shape istio/ztunnel#1662 posted from an ingress
// gateway (Istio 1.27/1.28, Envoy's default text format), with our
// names and addresses.
func TestTunnelFailedPodIPs(t *testing.T) {
	lines := []string{
		`[2026-12-05T01:02:03.101Z] "GET /api/orders HTTP/2" 503 UF upstream_reset_before_response_started{connection_failure} - "-" 0 91 2 - "10.168.22.98" "curl/8.5.0" "0388d677" "shop.example.com" "envoy://connect_originate/10.244.1.7:8080" outbound|8080||orders.shop.svc.cluster.local envoy://internal_client_address/ 10.244.0.21:8443 10.168.22.98:41151 shop.example.com -`,
		`[2026-12-05T01:02:03.204Z] "GET /api/orders HTTP/2" 503 UC upstream_reset_before_response_started{connection_termination} - "-" 0 95 0 - "10.168.22.98" "curl/8.5.0" "0388d678" "shop.example.com" "envoy://connect_originate/10.244.1.7:8080" outbound|8080||orders.shop.svc.cluster.local envoy://internal_client_address/ 10.244.0.21:8443 10.168.22.98:41152 shop.example.com -`,
		`[2026-12-05T01:02:03.305Z] "GET /api/orders HTTP/2" 200 - via_upstream - "-" 0 1024 4 3 "10.168.22.98" "curl/8.5.0" "0388d679" "shop.example.com" "envoy://connect_originate/10.244.2.9:8080" outbound|8080||orders.shop.svc.cluster.local envoy://internal_client_address/ 10.244.0.21:8443 10.168.22.98:41153 shop.example.com -`,
		// A sidecar's 503 to a pod reached directly: no tunnel.
		`[2026-12-05T01:02:03.406Z] "GET /api/orders HTTP/1.1" 503 UF,URX upstream_reset_before_response_started{connection_failure,delayed_connect_error:_111} - "delayed_connect_error:_111" 0 91 2 - "-" "curl/8.5.0" "5c1f" "orders.shop:8080" "10.244.1.17:8080" outbound|8080||orders.shop.svc.cluster.local - 10.96.12.4:8080 10.244.0.9:51234 - default`,
	}
	s, err := Tally(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries != 4 || s.Status503 != 3 {
		t.Fatalf("entries %d 503s %d, want 4 3 (unparsed %d)", s.Entries, s.Status503, s.Unparsed)
	}
	if got := s.TunnelFailed.Keys(); !reflect.DeepEqual(got, []string{"10.244.1.7"}) {
		t.Errorf("tunnel failed %v, want only the pod of the two tunnelled 503s", got)
	}
	// Only the UC is a pooled connection reset under the request; the UF
	// is a connect refused.
	if got := s.TunnelReset.Keys(); !reflect.DeepEqual(got, []string{"10.244.1.7"}) || s.TunnelReset.Counts["10.244.1.7"] != 1 {
		t.Errorf("tunnel reset %v, want the UC to 10.244.1.7 once", got)
	}
	if got := s.TunnelResetFirst; !reflect.DeepEqual(got, map[string]string{"10.244.1.7": "2026-12-05T01:02:03.204Z"}) {
		t.Errorf("first tunnel reset %v, want the UC line's start time", got)
	}
	for host, want := range map[string]string{
		"envoy://connect_originate/10.244.1.7:8080": "10.244.1.7",
		"envoy://connect_originate/[fd00::7]:8080":  "fd00::7",
		"10.244.1.7:8080":                           "",
		"envoy://internal_client_address/":          "",
		"envoy://connect_originate/":                "",
	} {
		e := Entry{UpstreamHost: host}
		if got := e.TunnelPodIP(); got != want {
			t.Errorf("TunnelPodIP(%q) = %q, want %q", host, got, want)
		}
	}
}

// Merged over several logs, the first reset to a pod is the earliest of
// theirs, whichever log came first.
func TestTunnelResetFirstMerges(t *testing.T) {
	line := func(ts string) string {
		return `[` + ts + `] "GET /api/orders HTTP/2" 503 UC upstream_reset_before_response_started{connection_termination} - "-" 0 95 0 - "10.168.22.98" "curl/8.5.0" "0388d678" "shop.example.com" "envoy://connect_originate/10.244.1.7:8080" outbound|8080||orders.shop.svc.cluster.local envoy://internal_client_address/ 10.244.0.21:8443 10.168.22.98:41152 shop.example.com -`
	}
	late, err := Tally(strings.NewReader(line("2026-12-05T01:05:00.000Z") + "\n" + line("2026-12-05T01:04:00.000Z")))
	if err != nil {
		t.Fatal(err)
	}
	early, err := Tally(strings.NewReader(line("2026-12-05T01:03:00.000Z")))
	if err != nil {
		t.Fatal(err)
	}
	late.Merge(early)
	if got := late.TunnelResetFirst["10.244.1.7"]; got != "2026-12-05T01:03:00.000Z" {
		t.Errorf("first reset %q, want the earlier log's", got)
	}
	if got := late.TunnelReset.Counts["10.244.1.7"]; got != 3 {
		t.Errorf("resets %d, want 3", got)
	}
}
