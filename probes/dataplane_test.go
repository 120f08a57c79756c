package probes

import (
	"context"
	"reflect"
	"strings"
	"testing"
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
