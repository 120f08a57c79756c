package probes

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// A gateway's UC to envoy://connect_originate/IP:PORT (the shape of
// istio/ztunnel#1662) is a pooled HBONE connection reset under the
// request. It points at a reused IP only when the pod that owns the IP now
// started after the caller's Envoy, before the first reset and within the
// pool's idle timeout of it; a time not read leaves it unknown.
func TestAccessLogTunnelResetsAgainstPodStarts(t *testing.T) {
	const ucLine = `[2026-12-05T03:10:00.000Z] "GET /api/orders HTTP/2" 503 UC upstream_reset_before_response_started{connection_termination} - "-" 0 95 0 - "10.168.22.98" "curl/8.5.0" "0388d678" "orders.shop.svc.cluster.local:8080" "envoy://connect_originate/10.244.1.7:8080" outbound|8080||orders.shop.svc.cluster.local envoy://internal_client_address/ 10.244.0.21:8443 10.168.22.98:41152 orders.shop.svc.cluster.local -`
	firstReset := time.Date(2026, 12, 5, 3, 10, 0, 0, time.UTC)
	gatewayStarted := firstReset.Add(-48 * time.Hour)
	pods := func(started time.Time) map[string]podStarted {
		return map[string]podStarted{"10.244.1.7": {Pod: "shop/orders-9", Started: started}}
	}
	for _, c := range []struct {
		name          string
		in            accessLogInput
		reused, known bool
	}{
		{"the pod started minutes before the resets", accessLogInput{CallerProxyStarted: gatewayStarted, PodsByIP: pods(firstReset.Add(-5 * time.Minute)),
			HBONEIdleTimeout: mesh.DefaultHBONEIdleTimeout, MeshConfigRead: true}, true, true},
		{"the pod is older than the gateway", accessLogInput{CallerProxyStarted: firstReset.Add(-time.Minute), PodsByIP: pods(firstReset.Add(-5 * time.Minute)),
			HBONEIdleTimeout: mesh.DefaultHBONEIdleTimeout, MeshConfigRead: true}, false, true},
		{"the pod started after the first reset", accessLogInput{CallerProxyStarted: gatewayStarted, PodsByIP: pods(firstReset.Add(time.Minute)),
			HBONEIdleTimeout: mesh.DefaultHBONEIdleTimeout, MeshConfigRead: true}, false, true},
		{"the pod started longer than the idle timeout before", accessLogInput{CallerProxyStarted: gatewayStarted, PodsByIP: pods(firstReset.Add(-2 * time.Hour)),
			HBONEIdleTimeout: mesh.DefaultHBONEIdleTimeout, MeshConfigRead: true}, false, true},
		{"no idle timeout at all (hboneIdleTimeout 0s)", accessLogInput{CallerProxyStarted: gatewayStarted, PodsByIP: pods(firstReset.Add(-2 * time.Hour)),
			HBONEIdleTimeout: 0, MeshConfigRead: true}, true, true},
		{"the gateway's start not read", accessLogInput{PodsByIP: pods(firstReset.Add(-5 * time.Minute)),
			HBONEIdleTimeout: mesh.DefaultHBONEIdleTimeout, MeshConfigRead: true}, false, false},
		{"the Service's pods not listed", accessLogInput{CallerProxyStarted: gatewayStarted,
			HBONEIdleTimeout: mesh.DefaultHBONEIdleTimeout, MeshConfigRead: true}, false, false},
		{"no pod has the IP", accessLogInput{CallerProxyStarted: gatewayStarted, PodsByIP: map[string]podStarted{},
			HBONEIdleTimeout: mesh.DefaultHBONEIdleTimeout, MeshConfigRead: true}, false, false},
		{"the mesh config not read", accessLogInput{CallerProxyStarted: gatewayStarted, PodsByIP: pods(firstReset.Add(-5 * time.Minute))}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := splitCallerLog(nil, *evTarget.Source, []byte(ucLine+"\n"), evTarget, true)
			c.in.Logs = []podLog{pl}
			r := evaluateAccessLog(evTarget, c.in)
			if r.Facts["log_tunnel_resets"] != 1 || !reflect.DeepEqual(r.Facts["log_tunnel_reset_ips"], []string{"10.244.1.7"}) {
				t.Fatalf("resets %v ips %v, want the one UC to 10.244.1.7", r.Facts["log_tunnel_resets"], r.Facts["log_tunnel_reset_ips"])
			}
			var want []string
			if c.reused {
				want = []string{"10.244.1.7"}
			}
			if got := r.Facts["log_tunnel_reset_reused_ips"].([]string); len(got) != len(want) || len(want) > 0 && got[0] != want[0] {
				t.Errorf("reused %v, want %v", got, want)
			}
			if r.Facts["log_tunnel_reset_times_known"] != c.known {
				t.Errorf("times known %v, want %v", r.Facts["log_tunnel_reset_times_known"], c.known)
			}
			if !strings.Contains(r.Evidence.Raw, "10.244.1.7: 1 reset(s)") {
				t.Errorf("raw lacks the reset's line:\n%s", r.Evidence.Raw)
			}
		})
	}
}
