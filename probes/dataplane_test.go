package probes

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/ambientpath"
	"github.com/meshtriage/meshtriage/probes/cluster"
)

// setRedirection sets (or, with "", removes) the CNI's
// ambient.istio.io/redirection annotation on a pod of the fake.
func setRedirection(t *testing.T, c *ambientFake, ns, name, value string) {
	t.Helper()
	pod, err := c.GetPod(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{}
	if value != "" {
		pod.Annotations["ambient.istio.io/redirection"] = value
	}
	if _, err := c.kube.CoreV1().Pods(ns).Update(context.Background(), pod, metav1Update); err != nil {
		t.Fatal(err)
	}
}

// A pod marked ambient.istio.io/redirection=pending is captured and held:
// no traffic in or out until ztunnel on its node proxies it. It is not a
// pod the CNI left out (whose traffic goes around ztunnel in plaintext):
// the not-enrolled facts, which lead to ambient.pod-not-enrolled and its
// "restart the pod", must not count it; a fact of its own lists it.
func TestDataPlanePendingPodsAreHeldNotUnenrolled(t *testing.T) {
	c := newAmbientFake(t)
	setRedirection(t, c, "shop", "web-1", "pending")
	setRedirection(t, c, "shop", "orders-2", "pending")
	r := runChecked(t, DataPlaneProbe{}, c, webToOrders)
	if r.Facts["dataplane_source_not_enrolled"] != false || r.Facts["dataplane_target_not_enrolled"] != 0 ||
		!reflect.DeepEqual(r.Facts["dataplane_not_enrolled_pods"], []string{}) {
		t.Errorf("pending pods counted as not enrolled: %v", r.Facts)
	}
	pending, _ := r.Facts["dataplane_pending_pods"].([]string)
	if len(pending) != 2 || !strings.Contains(pending[0], "shop/web-1 (caller) on worker-a") || !strings.Contains(pending[1], "shop/orders-2 on worker-c") {
		t.Errorf("dataplane_pending_pods = %q", pending)
	}
	if r.Facts["dataplane_target_ambient"] != 1 || r.Facts["dataplane_target"] != "ambient" {
		t.Errorf("target %v, %v enrolled", r.Facts["dataplane_target"], r.Facts["dataplane_target_ambient"])
	}
	if r.Status != StatusFail || !strings.Contains(r.Summary, "held") || strings.Contains(r.Summary, "not enrolled") {
		t.Errorf("%s %s", r.Status, r.Summary)
	}

	// The CNI never saw the caller: that one is not enrolled.
	c = newAmbientFake(t)
	setRedirection(t, c, "shop", "web-1", "")
	r = runChecked(t, DataPlaneProbe{}, c, webToOrders)
	if r.Facts["dataplane_source_not_enrolled"] != true {
		t.Errorf("a caller without the annotation: %v", r.Facts)
	}
	if _, ok := r.Facts["dataplane_pending_pods"]; ok {
		t.Errorf("no pod pending, yet dataplane_pending_pods = %v", r.Facts["dataplane_pending_pods"])
	}
}

// A waypoint's pod named as the caller is a waypoint: not a sidecar that
// goes around the Service's waypoint, whatever its istio-proxy says.
func TestDataPlaneWaypointCallerIsNoSidecar(t *testing.T) {
	c := newAmbientFake(t, ordersWaypointPod)
	from := webToOrders
	from.Source = &cluster.PodRef{Namespace: "shop", Name: "orders-waypoint-5c8d-x7k2p"}
	pod, _ := c.GetPod(context.Background(), "shop", "orders-waypoint-5c8d-x7k2p")
	if k := ambientpath.CallerKind(pod); k == "sidecar" || k != "waypoint" {
		t.Errorf("callerKind(waypoint pod) = %q, want waypoint", k)
	}
	r := runChecked(t, DataPlaneProbe{}, c, from)
	if r.Facts["dataplane_source"] != "waypoint" {
		t.Errorf("dataplane_source = %v, want waypoint", r.Facts["dataplane_source"])
	}
}
