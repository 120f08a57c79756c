package probes

import (
	"reflect"
	"strings"
	"testing"
)

// A pending pod (ambient.istio.io/redirection=pending) waits for ztunnel
// on its node: a node with one and no ztunnel is where the traffic stops,
// as much as a node with an enrolled pod.
func TestZtunnelNodesWithoutCountPendingPods(t *testing.T) {
	c := newAmbientFake(t)
	// orders-2 alone on worker-c, which has no ztunnel.
	setRedirection(t, c, "shop", "orders-2", "pending")
	r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
	if !reflect.DeepEqual(r.Facts["ztunnel_nodes_without"], []string{"worker-c"}) || r.Status != StatusFail || !strings.Contains(r.Summary, "worker-c") {
		t.Errorf("nodes without %v; %s %s", r.Facts["ztunnel_nodes_without"], r.Status, r.Summary)
	}
}
