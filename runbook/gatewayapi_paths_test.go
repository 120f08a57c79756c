package runbook_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/runbooktest"
)

// caseFor is the first causeCases entry for cause.
func caseFor(t *testing.T, cause string) map[string]probes.Facts {
	t.Helper()
	for _, c := range causeCases {
		if c.cause == cause {
			return c.over
		}
	}
	t.Fatalf("no causeCases entry for %s", cause)
	return nil
}

// The existing endpoint, outlier, subset and mTLS causes reached through
// an HTTPRoute from a Gateway API gateway: its step finds the route
// attached and every backend valid (gatewayAPIHealthy), and hands on to
// the gateway's Envoy, the endpoints and the mTLS steps, which find the
// cause as they do for any caller.
func TestGatewayAPIGatewayReachesExistingCauses(t *testing.T) {
	g := load503(t)
	for _, cause := range []string{"endpoints.none-ready", "service.no-endpoints", "outlier.all-ejected", "dr.subset-no-pods",
		"mtls.plaintext-to-strict", "mtls.origination-conflict"} {
		t.Run(cause, func(t *testing.T) {
			over := with(with(healthy(), gatewayAPIHealthy), caseFor(t, cause))
			s := newSession(t, g, newRecorded(over), runbook.ModeAuto)
			findings, err := s.Auto(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := causeIDs(findings); !reflect.DeepEqual(got, []string{cause}) {
				t.Fatalf("findings %v, want %s\nskipped: %+v", got, cause, s.Skipped())
			}
			walked := false
			for _, ev := range s.Events() {
				walked = walked || ev.Kind == runbook.EventBranchTaken && ev.Branch.From == "gateway-routes"
			}
			if !walked {
				t.Error("the walk did not pass the gateway step")
			}
		})
	}
}

// The same from an ambient caller through the Service's waypoint (a
// Gateway API Gateway whose HTTPRoutes name the Service as parent): the
// waypoint step finds its hosts and log healthy and hands on to the
// endpoints, which find the cause.
func TestWaypointReachesEndpointCauses(t *testing.T) {
	g := load503(t)
	for cause, over := range map[string]map[string]probes.Facts{
		"endpoints.none-ready": {
			"endpoints": {"endpoints_ready": 0, "endpoints_not_ready": 3,
				"endpoints_not_ready_pods": []string{"web-1 ContainersNotReady", "web-2 ContainersNotReady", "web-3 ContainersNotReady"}},
			"waypoint": {"waypoint_hosts_total": 0, "waypoint_hosts_healthy": 0, "waypoint_log_503": 40, "waypoint_log_flags": []string{"UH=40"}},
		},
	} {
		t.Run(cause, func(t *testing.T) {
			s := newSession(t, g, newRecorded(with(runbooktest.AmbientHealthy(), over)), runbook.ModeAuto)
			findings, err := s.Auto(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := causeIDs(findings); !reflect.DeepEqual(got, []string{cause}) {
				t.Fatalf("findings %v, want %s\nskipped: %+v", got, cause, s.Skipped())
			}
			walked := false
			for _, ev := range s.Events() {
				walked = walked || ev.Kind == runbook.EventBranchTaken && ev.Branch.From == "waypoint" && ev.Branch.To == "endpoints"
			}
			if !walked {
				t.Error("the walk did not go from the waypoint to the endpoints")
			}
		})
	}
}
