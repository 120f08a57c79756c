//go:build integration

package lab

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// The two clusters of TestEastWestPassthroughAcrossContexts, with an
// ambient caller in c1 (shop/web-amb, enrolled by the CNI, no sidecar)
// and, in c2, the ambient east-west gateway: an istio-east-west Gateway
// of network2 with an HBONE listener on 15008. istiod takes a remote
// cluster's istio-east-west Gateway with no HBONE port, so ztunnel gets
// no gateway to network2 from it: check --remote-contexts c2 from web-amb
// finds multicluster.ambient-gateway-missing (medium). The istio-remote
// Gateway of network2 in c1 (the caller's cluster), with an HBONE
// listener and the gateway's address, is what gives ztunnel one: with it,
// the step passes and the cause is gone. All of it only once c1's istiod
// runs with AMBIENT_ENABLE_MULTI_NETWORK: before, istiod gives ztunnel no
// workload of c2 at all, and no gateway is reported missing.
func TestAmbientCallerNeedsARemoteGatewayAcrossContexts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c1, c2, args := eastWestPair(ctx, t)
	caller := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-amb", Namespace: "shop",
			Labels:      map[string]string{"app": "web-amb", "istio.io/dataplane-mode": "ambient"},
			Annotations: map[string]string{"ambient.istio.io/redirection": "enabled"}},
		Spec: corev1.PodSpec{NodeName: NodeName, Containers: []corev1.Container{{Name: "web", Image: "web"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.12", PodIPs: []corev1.PodIP{{IP: "10.1.0.12"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	if _, err := Apply(ctx, c1, recorded.FromObjects("ambient-caller", []runtime.Object{caller})); err != nil {
		t.Fatal(err)
	}
	i := slices.Index(args, "pod/web-1")
	if i < 0 {
		t.Fatalf("args %q name no caller to replace", args)
	}
	args[i] = "pod/web-amb"

	gateway := func(l *Lab, namespace, name, class string) {
		t.Helper()
		gw := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
			"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"topology.istio.io/network": "network2"}},
			"spec": map[string]any{"gatewayClassName": class,
				"addresses": []any{map[string]any{"type": "IPAddress", "value": "172.18.2.20"}},
				"listeners": []any{map[string]any{"name": "mesh", "port": int64(15008), "protocol": "HBONE"}}},
		}}
		created, err := l.Dynamic.Resource(gatewayAPIGateways).Namespace(namespace).Create(ctx, gw, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The address in status, as istiod's gateway controller writes it.
		created.Object["status"] = map[string]any{"addresses": []any{map[string]any{"type": "IPAddress", "value": "172.18.2.20"}}}
		if _, err := l.Dynamic.Resource(gatewayAPIGateways).Namespace(namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gateway(c2, "istio-system", "istio-eastwestgateway", "istio-east-west")

	// c1's istiod as eastWestPair starts it, without the flag: a gateway
	// would bring nothing, and the step says why instead.
	findings, steps := checkTwoClusters(t, args...)
	step, ok := steps["multicluster-ambient-gateway"]
	if !ok {
		t.Fatalf("no multicluster-ambient-gateway step: the walk did not reach it (findings %v)", findings)
	}
	if got, ok := findings["multicluster.ambient-gateway-missing"]; ok || step.Facts["mcamb_istiod_multinetwork"] != false || !strings.Contains(step.Summary, "istiod runs without ambient multi-network") {
		t.Errorf("istiod without AMBIENT_ENABLE_MULTI_NETWORK: ambient-gateway-missing %q; step %s: %s %v", got, step.Status, step.Summary, step.Facts["mcamb_istiod_multinetwork"])
	}
	// c1's orders pod is ready, so no multinetwork-off finding either:
	// the caller is served from its own cluster.
	if got, ok := findings["multicluster.ambient-multinetwork-off"]; ok {
		t.Errorf("a ready endpoint in c1: multicluster.ambient-multinetwork-off at %s", got)
	}

	// Without c1's orders pod, the caller has nowhere to go: istiod
	// gives its ztunnel none of c2's endpoints.
	deleteOrders(ctx, t, c1, "orders-cluster1")
	findings, steps = checkTwoClusters(t, args...)
	if got := findings["multicluster.ambient-multinetwork-off"]; got != "medium" {
		t.Errorf("no endpoint in c1: multicluster.ambient-multinetwork-off at %q, want medium; findings %v; step %s", got, findings, steps["multicluster-ambient-gateway"].Summary)
	}

	// c1's istiod with ambient multi-network, as the ambient
	// multi-cluster install sets it.
	replaceIstiod(ctx, t, c1, ambientMultiNetworkEnv...)

	findings, steps = checkTwoClusters(t, args...)
	step, ok = steps["multicluster-ambient-gateway"]
	if !ok {
		t.Fatalf("no multicluster-ambient-gateway step: the walk did not reach it (findings %v)", findings)
	}
	if got := findings["multicluster.ambient-gateway-missing"]; got != "medium" {
		t.Errorf("only c2's istio-east-west Gateway: multicluster.ambient-gateway-missing at %q, want medium; step %s: %s", got, step.Status, step.Summary)
	}
	if got := step.list("mcamb_networks_without_gateway"); len(got) != 1 || !strings.HasPrefix(got[0], "network2") {
		t.Errorf("only c2's istio-east-west Gateway: mcamb_networks_without_gateway = %q", got)
	}

	gateway(c1, "istio-system", "network2-remote", "istio-remote")
	findings, steps = checkTwoClusters(t, args...)
	step = steps["multicluster-ambient-gateway"]
	if got, ok := findings["multicluster.ambient-multinetwork-off"]; ok {
		t.Errorf("with the flag: multicluster.ambient-multinetwork-off at %s", got)
	}
	if got, ok := findings["multicluster.ambient-gateway-missing"]; ok {
		t.Errorf("with c1's istio-remote Gateway: multicluster.ambient-gateway-missing at %s; step %s: %s", got, step.Status, step.Summary)
	}
	if got, ok := step.Facts["mcamb_networks_without_gateway"].([]any); !ok || len(got) != 0 || step.Status != "pass" {
		t.Errorf("with c1's istio-remote Gateway: %s %s; mcamb_networks_without_gateway = %#v", step.Status, step.Summary, step.Facts["mcamb_networks_without_gateway"])
	}
}
