//go:build integration

package lab

import (
	"context"
	"testing"
	"time"
)

// A Service whose pods run only in the other cluster, as a multi-cluster
// mesh often has it (the Service in every cluster, the Deployment in
// one): istiod merges c2's endpoints into it, so the selector matching no
// pod in c1 is no cause while c2 holds some. Once c2's are gone too,
// service.no-selector-match is found at high again. The target step
// counts c2's endpoints through c2's own API server.
func TestSelectorMatchingOnlyRemotePodsIsNoCause(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c1, c2, args := eastWestPair(ctx, t)
	deleteOrders(ctx, t, c1, "orders-cluster1")

	findings, steps := checkTwoClusters(t, args...)
	target := steps["target"]
	if got, ok := findings["service.no-selector-match"]; ok {
		t.Errorf("orders only in c2: service.no-selector-match at %s; target %s: %s", got, target.Status, target.Summary)
	}
	if target.Facts["target_pods_selected"] != float64(0) || target.Facts["target_remote_endpoints"] != float64(1) || target.Facts["target_remotes_given"] != true {
		t.Errorf("orders only in c2: target facts %v", target.Facts)
	}

	deleteOrders(ctx, t, c2, "orders-cluster2")
	findings, steps = checkTwoClusters(t, args...)
	if got := findings["service.no-selector-match"]; got != "high" {
		t.Errorf("orders nowhere: service.no-selector-match at %q, want high; target %s: %s", got, steps["target"].Status, steps["target"].Summary)
	}
}
