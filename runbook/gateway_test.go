package runbook_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
)

// gatewayHealthy is a gateway caller whose Gateway and VirtualService
// route the target's host: the walk goes through the gateway step.
var gatewayHealthy = map[string]probes.Facts{
	"target": {"target_source_gateway": true},
	"gateway-routes": {
		"gateway_selecting": []string{"istio-system/public"}, "gateway_route_to_target": true, "gateway_hosts": []string{"shop.example.com:80"},
		"gateway_vs_to_target": []string{"shop/web-public"}, "gateway_vs_unbound": []string{}, "gateway_vs_host_mismatch": []string{},
		"gateway_unbound_why": "", "gateway_envoy_route_to_target": true, "gateway_envoy_hosts": []string{"shop.example.com"},
		"gateway_log_nr": 0, "gateway_nr_hosts": []string{}, "gateway_nr_hosts_unrouted": []string{},
	},
}

// A healthy gateway caller: the first branch takes the gateway step, which
// finds nothing and hands on to the rest of the runbook.
func TestGatewayCallerWalksTheGatewayStep(t *testing.T) {
	s := newSession(t, load503(t), newRecorded(with(healthy(), gatewayHealthy)), runbook.ModeAuto)
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Fatalf("healthy gateway: findings %v", causeIDs(findings))
	}
	var path []string
	for _, ev := range s.Events() {
		if ev.Kind == runbook.EventBranchTaken && (ev.Branch.From == "target" || ev.Branch.From == "gateway-routes") {
			path = append(path, ev.Branch.From+"->"+ev.Branch.To)
		}
	}
	if want := []string{"target->gateway-routes", "gateway-routes->envoy-clusters"}; !reflect.DeepEqual(path[:2], want) {
		t.Errorf("path %v, want %v first", path, want)
	}
}

// The existing causes reached from a gateway: a route of the gateway sends
// every request to a subset without endpoints. The gateway step finds
// nothing wrong with the binding and the destination-rules step finds
// the subset.
func TestGatewayCallerReachesExistingCauses(t *testing.T) {
	over := with(with(healthy(), gatewayHealthy), map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "dr_names": []string{"shop/web"}, "dr_subsets_without_pods": []string{"web/v2"},
			"dr_subsets_without_pods_routed": []string{"web/v2"}, "vs_found": true, "dr_subset_no_pods_percent": 100},
		"access-log": {"log_503": 30, "log_5xx": 30, "log_flag_uh": 30, "log_2xx": 0},
	})
	s := newSession(t, load503(t), newRecorded(over), runbook.ModeAuto)
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"dr.subset-no-pods"}) {
		t.Fatalf("findings %v, want dr.subset-no-pods", got)
	}
}

// An Envoy that routes the target while the configuration read says
// nothing does: the configuration read is incomplete, the finding weak.
func TestGatewayUnboundWeakenedByEnvoyRoute(t *testing.T) {
	over := with(healthy(), map[string]probes.Facts{
		"target": {"target_source_gateway": true},
		"gateway-routes": {"gateway_route_to_target": false, "gateway_vs_to_target": []string{"shop/orders-public"},
			"gateway_vs_unbound": []string{"shop/orders-public"}, "gateway_unbound_why": "shop/orders-public: binds sidecars only (no gateways)",
			"gateway_envoy_route_to_target": true, "gateway_envoy_hosts": []string{"shop.example.com"}},
	})
	s := newSession(t, load503(t), newRecorded(over), runbook.ModeAuto)
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || findings[0].Cause != "gateway.vs-not-bound" || findings[0].Confidence != runbook.ConfidenceLow {
		t.Fatalf("findings %+v, want gateway.vs-not-bound at low confidence", findings)
	}
}
