package remedies_test

import (
	"context"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/patch"
	"github.com/meshtriage/meshtriage/probes/remedies"
)

// A mesh whose namespaces labelled istio.io/global=true hold global
// Services (ambient multi-network).
const wpScopeMesh = `---
apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: |
    serviceScopeConfigs:
    - namespaceSelector: {matchLabels: {istio.io/global: "true"}}
      scope: GLOBAL
`

func wpNamespace(labels string) string {
	return "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {istio.io/global: \"true\"" + labels + "}}\n"
}

func wpService(labels string) string {
	return "---\napiVersion: v1\nkind: Service\nmetadata: {name: orders, namespace: shop, labels: {app: orders" + labels + "}}\nspec: {selector: {app: orders}, ports: [{name: http, port: 8080}]}\n"
}

const wpGateway = `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: waypoint, namespace: shop, uid: "1234", resourceVersion: "99", labels: {istio.io/waypoint-for: service}}
spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE}]}
status: {addresses: [{type: IPAddress, value: 10.96.0.50}]}
`

func wpInput(t *testing.T, localDocs, remoteDocs string) *remedies.Input {
	t.Helper()
	local := world(t, wpScopeMesh+localDocs)
	return &remedies.Input{Cluster: remoteWorld{Cluster: local.(*recorded.Cluster), remote: world(t, remoteDocs)},
		Target: cluster.Target{Namespace: "shop", Service: "orders", Port: 8080},
		Cause:  "multicluster.waypoint-differs", Facts: probes.Facts{}}
}

// The current cluster's namespace names the waypoint; c2's names none
// and has no Gateway: c2's namespace is labelled and the Gateway created
// there as read here, without what the API server wrote.
func TestAlignRemoteWaypointLabelsAndCreatesInTheRemote(t *testing.T) {
	in := wpInput(t, wpNamespace(", istio.io/use-waypoint: waypoint")+wpService("")+wpGateway, wpNamespace("")+wpService(""))
	out := remedies.AlignRemoteWaypoint{}.Compute(context.Background(), in)
	if len(out.Patches) != 2 {
		t.Fatalf("out = %+v", out)
	}
	label, gw := out.Patches[0], out.Patches[1]
	if label.Kind != "Namespace" || label.Name != "shop" || label.Context != "c2" || label.Type != patch.Merge ||
		string(label.Patch) != `{"metadata":{"labels":{"istio.io/use-waypoint":"waypoint"}}}` {
		t.Errorf("label patch = %+v %s", label, label.Patch)
	}
	body := string(gw.Patch)
	if gw.Type != patch.Create || gw.Kind != "Gateway" || gw.Context != "c2" || !strings.Contains(body, `"gatewayClassName":"istio-waypoint"`) ||
		!strings.Contains(body, `"protocol":"HBONE"`) || strings.Contains(body, "status") || strings.Contains(body, "1234") || strings.Contains(body, `"99"`) {
		t.Errorf("gateway = %+v %s", gw, body)
	}
	if !strings.Contains(label.Command(), "--context c2") || !strings.Contains(out.NotSimulated, "c2") {
		t.Errorf("command %q, not simulated %q", label.Command(), out.NotSimulated)
	}
}

// c2's Service opts out (use-waypoint=none), overriding its namespace:
// the Service is patched, not the namespace; c2 already has the Gateway.
func TestAlignRemoteWaypointPatchesTheOptedOutService(t *testing.T) {
	in := wpInput(t, wpNamespace(", istio.io/use-waypoint: waypoint")+wpService("")+wpGateway,
		wpNamespace(", istio.io/use-waypoint: waypoint")+wpService(", istio.io/use-waypoint: none")+wpGateway)
	out := remedies.AlignRemoteWaypoint{}.Compute(context.Background(), in)
	if len(out.Patches) != 1 || out.Patches[0].Kind != "Service" || out.Patches[0].Context != "c2" ||
		string(out.Patches[0].Patch) != `{"metadata":{"labels":{"istio.io/use-waypoint":"waypoint"}}}` {
		t.Fatalf("out = %+v", out)
	}
}

// Not global (the namespace not selected): nothing to align.
func TestAlignRemoteWaypointLocalServiceIsUnpatchable(t *testing.T) {
	in := wpInput(t, strings.Replace(wpNamespace(", istio.io/use-waypoint: waypoint"), `istio.io/global: "true"`, `team: a`, 1)+wpService("")+wpGateway, wpNamespace("")+wpService(""))
	out := remedies.AlignRemoteWaypoint{}.Compute(context.Background(), in)
	if len(out.Patches) != 0 || out.Unpatchable == "" {
		t.Fatalf("out = %+v", out)
	}
}
