package probes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// A waypoint without a ready pod says why its pod is not ready: the
// container state the kubelet reports (ImagePullBackOff), not only the
// Ready condition's "containers with unready status", which names no cause.
func TestDataPlaneShowsWhyTheWaypointPodIsNotReady(t *testing.T) {
	s, c := scenarioCluster(t, "ambient-waypoint-not-ready")
	r := probes.DataPlaneProbe{}.Run(context.Background(), c, s.Target)
	var row []string
	for _, rw := range r.Evidence.Rows {
		if len(rw) > 1 && rw[1] == "waypoint" {
			row = rw
		}
	}
	if row == nil {
		t.Fatalf("no waypoint row in %v", r.Evidence.Rows)
	}
	if !strings.Contains(strings.Join(row, " "), "container istio-proxy waiting: ImagePullBackOff") {
		t.Errorf("waypoint row %q does not say ImagePullBackOff", row)
	}
	if !strings.Contains(r.Summary, "ImagePullBackOff") {
		t.Errorf("summary %q does not say why the waypoint has no ready pod", r.Summary)
	}
}

// On the real port-mismatch scenario the summary names the containerPort
// the pods declare: the value the Service's targetPort should have.
func TestEndpointsShowsTheContainerPortOnPortMismatch(t *testing.T) {
	s, c := scenarioCluster(t, "port-mismatch")
	r := probes.EndpointsProbe{}.Run(context.Background(), c, s.Target)
	if r.Status != probes.StatusFail {
		t.Fatalf("status %s, want fail: %s", r.Status, r.Summary)
	}
	if !strings.Contains(r.Summary, "the pods declare http=8000") {
		t.Errorf("summary %q does not name the containerPort the pods declare (8000)", r.Summary)
	}
	if got, _ := r.Facts["endpoints_declared_ports"].([]string); len(got) != 1 || !strings.Contains(got[0], "http=8000") {
		t.Errorf("endpoints_declared_ports %v, want the declared http=8000", r.Facts["endpoints_declared_ports"])
	}
}

// scenarioCluster is an embedded scenario and the cluster it replays.
func scenarioCluster(t *testing.T, name string) (*recorded.Scenario, cluster.Cluster) {
	t.Helper()
	s, err := recorded.Load(assets.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}
