//go:build integration

package lab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	istiodparse "github.com/meshtriage/meshtriage/probes/parse/istiod"
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
	i, istiodPod := startIstiodOfC1(ctx, t, c1, "istiod-7d4f9c8b6-sec1")

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

// The remote cluster cut off from istiod (its secret reaches the API
// server through a Relay, then the relay is cut) while the triage still
// reads it. What the real istiod does, seen here: clusterz goes on saying
// cluster2 is synced (a cluster that synced once stays so), and its
// endpoint index keeps the endpoints it had. The triage compares that
// index with the cluster: connected, nothing is said; cut off, with the
// orders pod of cluster 2 replaced by one Ready for five minutes,
// multicluster.remote-secret-stale at high, naming the new pod istiod
// lacks and the old address it still pushes.
func TestRemoteClusterCutOffAgainstIstiod(t *testing.T) {
	c1, c2 := startTwoLabs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	i, istiodPod := startIstiodOfC1(ctx, t, c1, "istiod-7d4f9c8b6-cut1")
	caller := mcPod("web-1", "10.1.0.9", "Kubernetes", "network1")
	applyOrdersSide(ctx, t, c1, "network1", "orders-c1", "10.1.0.5", "Kubernetes", caller, istiodPod)
	// Cluster 2's orders pod, Ready for ten minutes: old enough that
	// istiod lacking it would count.
	applyOrdersSide(ctx, t, c2, "network2", "orders-c2", "10.2.0.5", "cluster2")
	original, err := c2.Kube.CoreV1().Pods("shop").Get(ctx, "orders-c2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	original.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-10 * time.Minute))}}
	if _, err := c2.Kube.CoreV1().Pods("shop").UpdateStatus(ctx, original, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setGatewayAddresses(ctx, t, map[*Lab]string{c1: "172.18.1.10", c2: "172.18.2.10"})
	i.ServeAs(cluster.PodRef{Namespace: istiodPod.Namespace, Name: istiodPod.Name})
	args := twoContextKubeconfig(t, c1, c2)

	relay, err := StartRelay(strings.TrimPrefix(c2.Server, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Cut)
	if err := i.AddRemoteThrough(ctx, c2, remoteClusterID, relay); err != nil {
		t.Fatal(err)
	}
	if err := i.WaitClusterz(ctx, remoteClusterID, "synced"); err != nil {
		t.Fatal(err)
	}
	if err := waitShard(ctx, i, remoteClusterID, "10.2.0.5"); err != nil {
		t.Fatal(err)
	}
	// The caller connected to istiod: its syncz lists web-1, and the
	// probe takes that replica's word.
	sc, err := i.ConnectSidecar(ctx, caller)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	findings, steps := checkTwoClusters(t, args...)
	step := steps["multicluster"]
	if got, _ := step.Facts["mc_istiod_asked"].(string); got != istiodPod.Name+", the replica the caller shop/web-1 is connected to (its syncz lists it)" {
		t.Errorf("connected: mc_istiod_asked = %q", got)
	}
	if got, ok := findings["multicluster.remote-secret-stale"]; ok {
		t.Errorf("connected: multicluster.remote-secret-stale at %s; step %s: %s", got, step.Status, step.Summary)
	}
	for _, f := range []string{"mc_istiod_shard_behind", "mc_istiod_shard_lacks"} {
		if got, ok := step.Facts[f].([]any); !ok || len(got) != 0 {
			t.Errorf("connected: %s = %#v (read and empty, not unknown)", f, step.Facts[f])
		}
	}

	relay.Cut()
	// The pod replaced: a new one, Ready for five minutes, in the slice
	// instead of the old one.
	replacement := mcPod("orders-c2-new", "10.2.0.6", "cluster2", "network2")
	replacement.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Now().Add(-5 * time.Minute))
	if _, err := Apply(ctx, c2, recorded.FromObjects("orders-replaced", []runtime.Object{replacement, mcSlice("10.2.0.6", "orders-c2-new")})); err != nil {
		t.Fatal(err)
	}
	if err := c2.Kube.DiscoveryV1().EndpointSlices("shop").Delete(ctx, "orders-orders-c2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c2.Kube.CoreV1().Pods("shop").Delete(ctx, "orders-c2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// istiod's own word, unchanged by the cut: synced, and the old pod.
	if err := i.WaitClusterz(ctx, remoteClusterID, "synced"); err != nil {
		t.Fatal(err)
	}
	if err := waitShard(ctx, i, remoteClusterID, "10.2.0.5"); err != nil {
		t.Fatal(err)
	}
	findings, steps = checkTwoClusters(t, args...)
	step = steps["multicluster"]
	if got := findings["multicluster.remote-secret-stale"]; got != "high" {
		t.Errorf("cut off: multicluster.remote-secret-stale at %q, want high; findings %v; step %s: %s", got, findings, step.Status, step.Summary)
	}
	behind := step.list("mc_istiod_shard_behind")
	if len(behind) != 1 || !strings.HasPrefix(behind[0], "c2: cluster ID cluster2 is synced in istiod's clusterz, but istiod's endpoint index lacks 1 endpoint Ready there for over 1m0s: 10.2.0.6 (pod orders-c2-new)") ||
		!strings.Contains(behind[0], "still holds 1 address the cluster no longer lists: 10.2.0.5") {
		t.Errorf("cut off: mc_istiod_shard_behind = %q", behind)
	}
}

// waitShard waits until istiod's endpoint index holds address for orders
// in the shard of clusterID.
func waitShard(ctx context.Context, i *Istiod, clusterID, address string) error {
	for {
		body, err := i.Get(ctx, istiodparse.EndpointShardzPath)
		if err != nil {
			return err
		}
		services, err := istiodparse.ParseEndpointShardz(body, func(host, ns string) bool { return strings.HasPrefix(host, "orders.shop.") })
		if err != nil {
			return err
		}
		for _, s := range services {
			for _, sh := range s.Shards {
				for _, e := range sh.Endpoints {
					if sh.Cluster == clusterID && e.Address() == address {
						return nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("istiod's endpointShardz never held %s in %s: %s", address, clusterID, body)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startIstiodOfC1 starts the real istiod on c1 (remote clusters time out
// after 5 s, so a bad secret does not hold it) and returns it with the
// pod a triage finds it as: app=istiod in istio-system, its monitoring
// port forwarded through the pod once the test applies the pod and calls
// ServeAs.
func startIstiodOfC1(ctx context.Context, t *testing.T, c1 *Lab, podName string) (*Istiod, *corev1.Pod) {
	t.Helper()
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
	return i, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: "istio-system", Labels: map[string]string{"app": "istiod", "istio": "pilot"}},
		Spec: corev1.PodSpec{NodeName: NodeName, Containers: []corev1.Container{{Name: "discovery", Image: "pilot",
			Ports: []corev1.ContainerPort{{ContainerPort: cluster.IstiodMonitoringPort}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.2", PodIPs: []corev1.PodIP{{IP: "10.1.0.2"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}
