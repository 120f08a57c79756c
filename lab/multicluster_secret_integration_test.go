//go:build integration

package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// Two kube-apiservers and the real istiod of the first, found by the
// triage as an istiod pod of cluster 1 (app=istiod in istio-system, its
// monitoring port forwarded through the pod). Cluster 2 runs a pod of
// orders whose sidecar names cluster ID cluster2. Without the remote
// secret istiod's clusterz lists only its own cluster, and `meshtriage
// check --remote-contexts c2` from a sidecar in cluster 1 finds
// multicluster.remote-secret-missing at high, naming the
// create-remote-secret command built from what it read; once the secret
// is there and istiod has synced cluster2, it does not.
func TestRemoteSecretMissingAgainstIstiod(t *testing.T) {
	c1, c2 := startTwoLabs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	i, err := StartIstiodEnv(ctx, c1, "PILOT_REMOTE_CLUSTER_TIMEOUT=5s")
	if err != nil {
		t.Fatalf("start istiod: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("istiod log tail:\n%s", tail(i.Log, 60))
		}
		i.Stop()
	})

	istiodPod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "istiod-7d4f9c8b6-sec1", Namespace: "istio-system", Labels: map[string]string{"app": "istiod", "istio": "pilot"}},
		Spec: corev1.PodSpec{NodeName: NodeName, Containers: []corev1.Container{{Name: "discovery", Image: "pilot",
			Ports: []corev1.ContainerPort{{ContainerPort: cluster.IstiodMonitoringPort}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.2", PodIPs: []corev1.PodIP{{IP: "10.1.0.2"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	// istiod's own cluster ID is Kubernetes (its default CLUSTER_ID).
	applyOrdersSide(ctx, t, c1, "network1", "orders-c1", "10.1.0.5", "Kubernetes", mcPod("web-1", "10.1.0.9", "Kubernetes", "network1"), istiodPod)
	applyOrdersSide(ctx, t, c2, "network2", "orders-c2", "10.2.0.5", "cluster2")
	i.ServeAs(cluster.PodRef{Namespace: istiodPod.Namespace, Name: istiodPod.Name})

	args := twoContextKubeconfig(t, c1, c2)

	// No remote secret: istiod reads only its own cluster.
	if err := i.WaitClusterz(ctx, remoteClusterID, ""); err != nil {
		t.Fatal(err)
	}
	findings, steps := checkTwoClusters(t, args...)
	step := steps["multicluster"]
	const wantCmd = "istioctl create-remote-secret --context=c2 --name=cluster2 | kubectl apply -f - --context=c1"
	if got := findings["multicluster.remote-secret-missing"]; got != "high" {
		t.Errorf("without the secret: multicluster.remote-secret-missing at %q, want high; findings %v; step %s: %s", got, findings, step.Status, step.Summary)
	}
	if got := step.list("mc_remote_secret_missing"); len(got) != 1 || !strings.HasPrefix(got[0], "c2: cluster ID cluster2 ") || !strings.HasSuffix(got[0], wantCmd) {
		t.Errorf("without the secret: mc_remote_secret_missing = %q", got)
	}
	if got := step.list("mc_istiod_clusters"); len(got) != 1 || got[0] != "Kubernetes (config cluster): synced" {
		t.Errorf("without the secret: mc_istiod_clusters = %q", got)
	}

	// The secret, as create-remote-secret writes it: istiod syncs cluster2.
	if err := i.AddRemote(ctx, c2, remoteClusterID); err != nil {
		t.Fatal(err)
	}
	if err := i.WaitClusterz(ctx, remoteClusterID, "synced"); err != nil {
		t.Fatal(err)
	}
	findings, steps = checkTwoClusters(t, args...)
	step = steps["multicluster"]
	for _, cause := range []string{"multicluster.remote-secret-missing", "multicluster.remote-secret-stale"} {
		if got, ok := findings[cause]; ok {
			t.Errorf("with the secret: %s at %s; step %s: %s", cause, got, step.Status, step.Summary)
		}
	}
	if got, ok := step.Facts["mc_remote_secret_missing"].([]any); !ok || len(got) != 0 {
		t.Errorf("with the secret: mc_remote_secret_missing = %#v (read and empty, not unknown)", step.Facts["mc_remote_secret_missing"])
	}
}
