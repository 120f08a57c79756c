package mesh

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// readyAt is a pod of cluster 2 that became Ready at since (never, when
// since is zero: no Ready time recorded).
func readyAt(name string, since time.Time) *corev1.Pod {
	p := mcPod(name, "", "istio", "cluster2")
	cond := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	if !since.IsZero() {
		cond.LastTransitionTime = metav1.NewTime(since)
	}
	p.Status.Conditions = []corev1.PodCondition{cond}
	return p
}

// A pod replaced in cluster 2 over a minute ago while istiod's shard of
// cluster2 still holds the old pod's address: the index is behind. A
// pod Ready only seconds ago, or without a Ready time, is not counted
// missing (the reads are moments apart); neither is istiod's own cluster,
// nor a cluster whose ID istiod does not read as synced (no key in held).
func TestStaleShards(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	c2 := ClusterRead{Context: "c2", ClusterID: "cluster2",
		Slices: []discoveryv1.EndpointSlice{mcSlice("10.2.0.6", "orders-new", "10.2.0.7", "orders-fresh", "10.2.0.8", "orders-undated", "10.2.0.9", "orders-same")},
		Pods: pods(readyAt("orders-new", now.Add(-5*time.Minute)), readyAt("orders-fresh", now.Add(-10*time.Second)),
			readyAt("orders-undated", time.Time{}), readyAt("orders-same", now.Add(-time.Hour)))}
	local := ClusterRead{Context: "c1", Local: true, ClusterID: "cluster1", Slices: c2.Slices, Pods: c2.Pods}
	c3 := ClusterRead{Context: "c3", ClusterID: "cluster3", Slices: c2.Slices, Pods: c2.Pods}

	stale, unknown := StaleShards([]ClusterRead{local, c2, c3}, map[string][]string{
		"cluster1": nil,
		"cluster2": {"10.2.0.5", "10.2.0.9"},
	}, now)
	if len(stale) != 1 {
		t.Fatalf("stale = %+v, want c2 only", stale)
	}
	s := stale[0]
	if s.Context != "c2" || s.ClusterID != "cluster2" || len(s.Missing) != 1 || s.Missing[0].Address != "10.2.0.6" || s.Missing[0].Pod != "orders-new" ||
		strings.Join(s.Gone, ",") != "10.2.0.5" {
		t.Errorf("stale = %+v, want c2 missing 10.2.0.6 (orders-new), gone 10.2.0.5", s)
	}
	if len(unknown) != 1 || !strings.HasPrefix(unknown[0], "c2: ") {
		t.Errorf("unknown = %q, want the undated endpoint of c2 said", unknown)
	}

	// In step: nothing missing, whatever the shard holds beyond (a pod
	// removed between the reads).
	stale, _ = StaleShards([]ClusterRead{c2}, map[string][]string{"cluster2": {"10.2.0.5", "10.2.0.6", "10.2.0.7", "10.2.0.8", "10.2.0.9"}}, now)
	if len(stale) != 0 {
		t.Errorf("in step: stale = %+v", stale)
	}
	// A shard istiod holds nothing in: every settled endpoint missing.
	stale, _ = StaleShards([]ClusterRead{c2}, map[string][]string{"cluster2": nil}, now)
	if len(stale) != 1 || len(stale[0].Missing) != 2 || len(stale[0].Gone) != 0 {
		t.Errorf("empty shard: stale = %+v, want orders-new and orders-same missing", stale)
	}
}
