package probes

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An ambient pod whose app started before its node's ztunnel was Ready
// (istiod frees the node when istio-cni is Ready, not ztunnel:
// istio/istio#53843) is named, with its restarts; a pod much older than
// its ztunnel saw the ztunnel replaced (an upgrade), not the node's start;
// times the input does not hold leave the facts unset, never empty.
func TestZtunnelPodsStartedBeforeItWasReady(t *testing.T) {
	nodeUp := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	setTimes := func(t *testing.T, c *ambientFake, ns, name string, started, ready time.Time, restarts int32, container string) {
		t.Helper()
		ctx := context.Background()
		p, err := c.GetPod(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		p.Status.StartTime = &metav1.Time{Time: started}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: ready}}}
		st := corev1.ContainerStatus{Name: container, Ready: true, RestartCount: restarts,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: started.Add(time.Second)}}}}
		if restarts > 0 {
			st.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				StartedAt: metav1.Time{Time: started.Add(time.Second)}, FinishedAt: metav1.Time{Time: started.Add(20 * time.Second)}}}
			st.State.Running.StartedAt = metav1.Time{Time: started.Add(45 * time.Second)}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
		if _, err := c.kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1Update); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name              string
		ordersStarted     time.Time
		restarts          int32
		before, restarted []string
	}{
		{"started with the node, restarted", nodeUp.Add(5 * time.Second), 2, []string{"shop/orders-1"}, []string{"shop/orders-1"}},
		{"started with the node, no restart", nodeUp.Add(5 * time.Second), 0, []string{"shop/orders-1"}, []string{}},
		{"started after ztunnel was Ready", nodeUp.Add(time.Minute), 0, []string{}, []string{}},
		{"days older than its ztunnel (an upgrade)", nodeUp.Add(-72 * time.Hour), 0, []string{}, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newAmbientFake(t)
			// worker-b came up at nodeUp: its ztunnel started 20 s later,
			// Ready 40 s later. worker-a's long before, web-1 after it.
			setTimes(t, f, "istio-system", "ztunnel-b", nodeUp.Add(20*time.Second), nodeUp.Add(40*time.Second), 0, "istio-proxy")
			setTimes(t, f, "istio-system", "ztunnel-a", nodeUp.Add(-240*time.Hour), nodeUp.Add(-240*time.Hour+30*time.Second), 0, "istio-proxy")
			setTimes(t, f, "shop", "web-1", nodeUp.Add(-48*time.Hour), nodeUp.Add(-48*time.Hour+10*time.Second), 0, "web")
			setTimes(t, f, "shop", "orders-1", c.ordersStarted, c.ordersStarted.Add(80*time.Second), c.restarts, "orders")
			r := runChecked(t, ZtunnelProbe{}, f, webToOrders)
			if got := r.Facts["ztunnel_started_before_ready"]; !reflect.DeepEqual(got, c.before) {
				t.Errorf("started before ready %v, want %v", got, c.before)
			}
			if got := r.Facts["ztunnel_started_before_ready_restarted"]; !reflect.DeepEqual(got, c.restarted) {
				t.Errorf("restarted %v, want %v", got, c.restarted)
			}
			if len(c.before) > 0 && !strings.Contains(r.Evidence.Raw, "shop/orders-1 on worker-b: app started") {
				t.Errorf("raw lacks orders-1's times:\n%s", r.Evidence.Raw)
			}
		})
	}
	// The world as read without status times: unknown.
	r := runChecked(t, ZtunnelProbe{}, newAmbientFake(t), webToOrders)
	if v, ok := r.Facts["ztunnel_started_before_ready"]; ok {
		t.Errorf("started before ready %v without any time read, want unset", v)
	}
}
