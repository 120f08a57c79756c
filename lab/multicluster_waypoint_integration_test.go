//go:build integration

package lab

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshtriage/meshtriage/probes/patch"
)

var gatewayAPIGateways = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}

// The two clusters of TestEastWestPassthroughAcrossContexts made an
// ambient multi-network mesh's view of orders: c1's mesh config makes
// the Services of namespaces labelled istio.io/global=true global
// (serviceScopeConfigs), both clusters label shop so, and each has the
// waypoint Gateway shop/waypoint. c1's shop names it (istio.io/use-waypoint),
// c2's does not: check --remote-contexts c2 reaches
// multicluster.waypoint-differs (medium), and its fix, the merge patch of
// c2's namespace, applied as kubectl would with --context c2, clears it.
// Then c2 loses its Gateway: the fix creates it there from c1's. All of
// it once c1's istiod runs with AMBIENT_ENABLE_MULTI_NETWORK; before,
// no Service is global and nothing is compared.
func TestMultiClusterWaypointAcrossContexts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c1, c2, args := eastWestPair(ctx, t)
	mesh := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio", Namespace: "istio-system"},
		Data: map[string]string{"mesh": "serviceScopeConfigs:\n- namespaceSelector: {matchLabels: {istio.io/global: \"true\"}}\n  scope: GLOBAL\n"}}
	if _, err := c1.Kube.CoreV1().ConfigMaps("istio-system").Create(ctx, mesh, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labelShop := func(l *Lab, labels map[string]string) {
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
		if _, err := l.Kube.CoreV1().Namespaces().Patch(ctx, "shop", types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labelShop(c1, map[string]string{"istio.io/global": "true", "istio.io/use-waypoint": "waypoint"})
	labelShop(c2, map[string]string{"istio.io/global": "true"})
	waypoint := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "waypoint", "namespace": "shop", "labels": map[string]any{"istio.io/waypoint-for": "service"}},
		"spec":     map[string]any{"gatewayClassName": "istio-waypoint", "listeners": []any{map[string]any{"name": "mesh", "port": int64(15008), "protocol": "HBONE"}}},
	}}
	for _, l := range []*Lab{c1, c2} {
		if _, err := l.Dynamic.Resource(gatewayAPIGateways).Namespace("shop").Create(ctx, waypoint.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// c1's istiod as eastWestPair starts it, without ambient
	// multi-network: it reads no serviceScopeConfigs, each cluster's
	// Service is its own, and the difference reaches no traffic.
	step := checkStep(t, "multicluster-waypoint", args...)
	if step.Facts["mcwp_istiod_multinetwork"] != false || len(step.list("mcwp_label_differs")) != 0 {
		t.Fatalf("istiod without AMBIENT_ENABLE_MULTI_NETWORK: %s %s %v", step.Status, step.Summary, step.Facts)
	}
	replaceIstiod(ctx, t, c1, ambientMultiNetworkEnv...)

	step = checkStep(t, "multicluster-waypoint", args...)
	got := step.list("mcwp_label_differs")
	if len(got) != 1 || !strings.HasPrefix(got[0], "c2: no istio.io/use-waypoint on the Service or its namespace, where c1: waypoint shop/waypoint (namespace label)") {
		t.Fatalf("c2 without the label: %s %s, mcwp_label_differs = %q", step.Status, step.Summary, got)
	}
	fix := findingPatch(t, "multicluster.waypoint-differs", args...)
	if fix.Type != patch.Merge || fix.Kind != "Namespace" || fix.Name != "shop" || fix.Context != "c2" {
		t.Fatalf("fix = %+v %s", fix, fix.Patch)
	}
	if _, err := c2.Kube.CoreV1().Namespaces().Patch(ctx, fix.Name, types.MergePatchType, fix.Patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	step = checkStep(t, "multicluster-waypoint", args...)
	if step.Status != "pass" || step.Facts["mcwp_clusters_compared"] != float64(1) {
		t.Fatalf("with the label: %s %s %v", step.Status, step.Summary, step.Facts)
	}

	if err := c2.Dynamic.Resource(gatewayAPIGateways).Namespace("shop").Delete(ctx, "waypoint", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	step = checkStep(t, "multicluster-waypoint", args...)
	if got := step.list("mcwp_gateway_missing"); len(got) != 1 || !strings.HasPrefix(got[0], "c2: waypoint shop/waypoint (Gateway in c1, none in c2)") {
		t.Fatalf("c2 without the Gateway: %s %s, mcwp_gateway_missing = %q", step.Status, step.Summary, got)
	}
	fix = findingPatch(t, "multicluster.waypoint-differs", args...)
	if fix.Type != patch.Create || fix.Kind != "Gateway" || fix.Context != "c2" {
		t.Fatalf("fix = %+v %s", fix, fix.Patch)
	}
	var gw unstructured.Unstructured
	if err := json.Unmarshal(fix.Patch, &gw.Object); err != nil {
		t.Fatalf("the fix's object: %v\n%s", err, fix.Patch)
	}
	if _, err := c2.Dynamic.Resource(gatewayAPIGateways).Namespace(fix.Namespace).Create(ctx, &gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	step = checkStep(t, "multicluster-waypoint", args...)
	if step.Status != "pass" || step.Facts["mcwp_clusters_compared"] != float64(1) {
		t.Errorf("with the Gateway: %s %s %v", step.Status, step.Summary, step.Facts)
	}
}
