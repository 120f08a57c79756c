//go:build integration

package lab

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	networkingclientv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/patch"
)

// Two real kube-apiservers as a primary-remote mesh on two networks: c1
// runs istiod (a pod labelled app=istiod stands for its Deployment: the
// lab's istiod runs as a process, and none is needed here, the
// configuration decides), c2 runs the east-west gateway pod its Service
// selects. `meshtriage check --remote-contexts c2` from a sidecar in c1
// finds c2's endpoint reached through c2's gateway, reads the Istio
// Gateways of c1 (whose istiod serves c2's gateway) and, without
// expose-services.yaml's Gateway there, reaches
// multicluster.eastwest-not-passthrough; its fix, a Gateway created in
// c1 as the on-call would (kubectl create), clears it.
func TestEastWestPassthroughAcrossContexts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c1, _, args := eastWestPair(ctx, t)

	step := checkStep(t, "eastwest-passthrough", args...)
	got := step.list("ewpt_not_passthrough")
	if len(got) != 1 || !strings.HasPrefix(got[0], "c2: istio-system/istio-eastwestgateway port 15443→15443 (Gateways read in c1)") {
		t.Fatalf("without the Gateway: %s %s, ewpt_not_passthrough = %q", step.Status, step.Summary, got)
	}
	fix := findingPatch(t, "multicluster.eastwest-not-passthrough", args...)
	if fix.Type != patch.Create || fix.Kind != "Gateway" || fix.Context != "" || fix.Namespace != "istio-system" {
		t.Fatalf("fix = %+v %s", fix, fix.Patch)
	}
	var gw networkingclientv1.Gateway
	if err := json.Unmarshal(fix.Patch, &gw); err != nil {
		t.Fatalf("the fix's object: %v\n%s", err, fix.Patch)
	}
	ic, err := istioclient.NewForConfig(c1.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ic.NetworkingV1().Gateways(fix.Namespace).Create(ctx, &gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	step = checkStep(t, "eastwest-passthrough", args...)
	if step.Status != "pass" || len(step.list("ewpt_not_passthrough")) != 0 || step.Facts["ewpt_gateways_checked"] != float64(1) {
		t.Errorf("with the Gateway: %s %s %v", step.Status, step.Summary, step.Facts)
	}
}

// eastWestPair starts the two clusters of TestEastWestPassthroughAcrossContexts
// and writes a kubeconfig of their contexts c1 (current) and c2; args
// run check on orders from web-1 with --remote-contexts c2.
func eastWestPair(ctx context.Context, t *testing.T) (c1, c2 *Lab, args []string) {
	c1, c2 = startTwoLabs(t)

	gatewayPod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "istio-eastwestgateway-1", Namespace: "istio-system",
			Labels: map[string]string{"istio": "eastwestgateway", "topology.istio.io/network": "network2"}},
		Spec:   corev1.PodSpec{NodeName: NodeName, Containers: []corev1.Container{{Name: "istio-proxy", Image: "proxyv2", Args: []string{"proxy", "router"}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.2.0.20"}}
	applyOrdersSide(ctx, t, c1, "network1", "orders-cluster1", "10.1.0.5", "cluster1", mcPod("web-1", "10.1.0.9", "cluster1", "network1"), istiodPod())
	applyOrdersSide(ctx, t, c2, "network2", "orders-cluster2", "10.2.0.5", "cluster2", gatewayPod)
	setGatewayAddresses(ctx, t, map[*Lab]string{c1: "172.18.1.10", c2: "172.18.2.10"})

	args = twoContextKubeconfig(t, c1, c2)

	return c1, c2, args
}
