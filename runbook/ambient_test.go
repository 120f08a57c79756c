package runbook_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/runbooktest"
)

// ambientSteps are walked only when ztunnel or a waypoint is on the path.
var ambientSteps = map[string]bool{"dataplane": true, "ambient-policy": true, "ztunnel": true, "waypoint": true}

// A healthy ambient Service (the caller and the pods enrolled, a ready
// waypoint the caller goes through) has no finding, and its walk takes the
// ambient steps and not the caller's Envoy ones: an ambient caller has no
// sidecar to read, and that is no failure.
func TestHealthyAmbientServiceHasNoFinding(t *testing.T) {
	g := load503(t)
	s := newSession(t, g, newRecorded(runbooktest.AmbientHealthy()), runbook.ModeAuto)
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Fatalf("healthy ambient service: findings %v", causeIDs(findings))
	}
	walked, moves := map[string]bool{}, map[string]bool{}
	for _, ev := range s.Events() {
		if ev.Kind == runbook.EventBranchTaken {
			walked[ev.Branch.To] = true
			moves[ev.Branch.From+">"+ev.Branch.To] = true
		}
	}
	for id := range ambientSteps {
		if !walked[id] {
			t.Errorf("healthy ambient walk never reached step %s", id)
		}
	}
	// From the 503 symptom: the ambient steps, then the Service's
	// endpoints and mTLS, never the caller's Envoy.
	for _, m := range []string{"target>dataplane", "dataplane>ambient-policy", "ambient-policy>ztunnel", "ztunnel>waypoint", "waypoint>endpoints", "endpoints>mtls"} {
		if !moves[m] {
			t.Errorf("no move %s", m)
		}
	}
	for _, m := range []string{"target>envoy-clusters", "waypoint>envoy-clusters", "endpoints>envoy-config"} {
		if moves[m] {
			t.Errorf("an ambient caller's walk moved %s: it has no Envoy of its own", m)
		}
	}
	if len(s.Skipped()) != 0 {
		t.Errorf("complete facts, yet rules skipped: %+v", s.Skipped())
	}
}

// An ambient caller whose Service has endpoints on another network is
// walked through multicluster-ambient-gateway before mTLS: with an
// istio-remote Gateway for that network it passes on, without one it is
// the finding. The multicluster probe skips an ambient caller, as it does
// live, so the move stands on facts every triage knows: it is taken, not
// left undecided among the rules that could not decide.
func TestAmbientCallerRemoteNetworkWalksAmbientGateway(t *testing.T) {
	remote := map[string]probes.Facts{"target": {"target_remote_endpoints": 1}, "multicluster-ambient-gateway": {
		"mcamb_remote_endpoints": []string{"c2: 10.2.0.5 (pod orders-b) network network2"},
		"mcamb_gateways":         []string{"c1: istio-system/network2 (class istio-remote, network network2): 172.18.2.20:15008"},
	}}
	for name, tc := range map[string]struct {
		missing []string
		want    []string
	}{
		"gateway":    {[]string{}, nil},
		"no gateway": {[]string{"network2: c2: 10.2.0.5 (pod orders-b)"}, []string{"multicluster.ambient-gateway-missing"}},
	} {
		facts := runbooktest.With(runbooktest.AmbientHealthy(), remote)
		facts["multicluster-ambient-gateway"]["mcamb_networks_without_gateway"] = tc.missing
		rec := newRecorded(facts).Fail("multicluster", probes.StatusSkipped, "the caller shop/client-1 is not a sidecar")
		s := newSession(t, load503(t), rec, runbook.ModeAuto)
		findings, err := s.Auto(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := causeIDs(findings); !reflect.DeepEqual(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
			t.Fatalf("%s: findings %v, want %v", name, got, tc.want)
		}
		for _, sk := range s.Skipped() {
			if sk.Step == "endpoints" {
				t.Errorf("%s: rule at endpoints left undecided: %s (%s)", name, sk.When, sk.Why)
			}
		}
		moves := map[string]bool{}
		for _, ev := range s.Events() {
			if ev.Kind == runbook.EventBranchTaken {
				moves[ev.Branch.From+">"+ev.Branch.To] = true
			}
		}
		if !moves["endpoints>multicluster-ambient-gateway"] || (tc.want == nil && !moves["multicluster-ambient-gateway>mtls"]) {
			t.Fatalf("%s: moves %v", name, moves)
		}
	}
}

// One incident, one cause: the refusals a missing waypoint causes (the
// pods admit only the waypoint) are the waypoint's finding, not an
// AuthorizationPolicy's; a sidecar caller refused for going around the
// waypoint is the bypass, not the policy.
func TestAmbientRefusalsExplainedByThePath(t *testing.T) {
	for name, tc := range map[string]struct {
		over map[string]probes.Facts
		want []string
	}{
		"waypoint not ready, policy admits only it": {map[string]probes.Facts{
			"dataplane":      {"waypoint_named": true, "waypoint_name": "shop/orders-waypoint", "waypoint_state": "not-ready", "waypoint_ready_pods": 0},
			"ambient-policy": {"authz_denied": true, "authz_waypoint_admitted": true, "authz_reason": "allow policies exist, but none allowed"},
			"ztunnel":        {"ztunnel_entries": 9, "ztunnel_rejections": 9, "ztunnel_unauthorized": 9},
		}, []string{"ambient.waypoint-not-ready"}},
		"waypoint bound and traversed, the policy refuses the waypoint": {map[string]probes.Facts{
			"dataplane":      {"waypoint_named": true, "waypoint_name": "shop/orders-waypoint", "waypoint_state": "bound", "waypoint_ready_pods": 1, "waypoint_traversed": true},
			"ambient-policy": {"authz_denied": true, "authz_waypoint_admitted": false, "authz_reason": "explicitly denied by: shop/deny-all"},
			"ztunnel":        {"ztunnel_entries": 9, "ztunnel_rejections": 9},
		}, []string{"ambient.authz-rejected"}},
		"a plaintext caller refused under STRICT is not an AuthorizationPolicy finding": {map[string]probes.Facts{
			"dataplane": {"dataplane_source": "none"},
			"mtls":      {"mtls_mismatch": "plaintext-to-strict", "mtls_upstream_mode": "STRICT", "mtls_client_sends": "plaintext", "mtls_client_config": "no-sidecar"},
			"ztunnel":   {"ztunnel_entries": 9, "ztunnel_rejections": 9, "ztunnel_strict_rejections": 9},
		}, []string{"mtls.plaintext-to-strict"}},
		"no caller named: ztunnel refused pods with a sidecar at a Service bound to a waypoint": {map[string]probes.Facts{
			"target":         {"target_source_named": false, "target_source_found": false},
			"dataplane":      {"dataplane_source": "", "waypoint_named": true, "waypoint_name": "shop/orders-waypoint", "waypoint_state": "bound", "waypoint_ready_pods": 1},
			"ambient-policy": {"authz_denied": false},
			"ztunnel":        {"ztunnel_entries": 9, "ztunnel_rejections": 9, "ztunnel_sidecar_rejections": 9},
		}, []string{"ambient.sidecar-bypasses-waypoint"}},
		"the CNI did not enroll the caller: its plaintext into STRICT is a consequence": {map[string]probes.Facts{
			"dataplane": {"dataplane_source": "none", "dataplane_source_not_enrolled": true},
			"mtls":      {"mtls_mismatch": "plaintext-to-strict", "mtls_upstream_mode": "STRICT", "mtls_client_sends": "plaintext", "mtls_client_config": "no-sidecar"},
			"ztunnel":   {"ztunnel_entries": 9, "ztunnel_rejections": 9, "ztunnel_strict_rejections": 9},
		}, []string{"ambient.pod-not-enrolled", "mtls.plaintext-to-strict"}},
		"ztunnel times out on 15008 and no NetworkPolicy read drops it": {map[string]probes.Facts{
			"ambient-policy": {"hbone_netpol_blocked": false},
			"ztunnel":        {"ztunnel_entries": 9, "ztunnel_hbone_timeouts": 9},
		}, []string{"ambient.hbone-blocked"}},
	} {
		t.Run(name, func(t *testing.T) {
			findings := autoFindings(t, runbooktest.With(runbooktest.AmbientHealthy(), tc.over))
			if got := causeIDs(findings); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("findings = %v, want %v", got, tc.want)
			}
		})
	}
}

// istiod's WaypointBound True for a Gateway of no waypoint class does not
// prove the connections fail: a gateway sandwich or another implementation
// takes the tunnel. High confidence needs ztunnel's failures; where ztunnel
// completes every connection the finding is low.
func TestNotAWaypointIsCertainOnlyWithZtunnelFailures(t *testing.T) {
	dataplane := probes.Facts{"waypoint_named": true, "waypoint_name": "shop/edge", "waypoint_state": "not-waypoint",
		"waypoint_ready_pods": 1, "waypoint_bound_condition": "True"}
	for name, tc := range map[string]struct {
		ztunnel probes.Facts
		want    runbook.Confidence
	}{
		"ztunnel logs failing connections":   {probes.Facts{"ztunnel_entries": 9, "ztunnel_completed": 0}, runbook.ConfidenceHigh},
		"ztunnel completed every connection": {probes.Facts{"ztunnel_entries": 9, "ztunnel_completed": 9}, runbook.ConfidenceLow},
	} {
		t.Run(name, func(t *testing.T) {
			findings := autoFindings(t, runbooktest.With(runbooktest.AmbientHealthy(), map[string]probes.Facts{"dataplane": dataplane, "ztunnel": tc.ztunnel}))
			if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"ambient.waypoint-not-bound"}) {
				t.Fatalf("findings = %v", got)
			}
			if findings[0].Confidence != tc.want {
				t.Errorf("confidence %s, want %s (%s)", findings[0].Confidence, tc.want, findings[0].Summary)
			}
		})
	}
}
