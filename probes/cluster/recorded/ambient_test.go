package recorded_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
)

const ambientManifests = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {istio.io/dataplane-mode: ambient}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: orders-from-web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: orders}}
  ingress: [{ports: [{port: 8080}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: orders-via-waypoint, namespace: shop}
spec:
  selector: {matchLabels: {app: orders}}
  rules: [{from: [{source: {principals: [cluster.local/ns/shop/sa/orders-waypoint]}}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: orders-waypoint, namespace: shop, labels: {istio.io/waypoint-for: service}}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
status:
  addresses: [{type: Hostname, value: orders-waypoint.shop.svc.cluster.local}]
`

// The ambient probes' reads: served from a recording, through the read
// cache, and kept by a Recorder so that a capture replays them.
func TestAmbientReads(t *testing.T) {
	fsys := fstest.MapFS{
		"scenarios/amb/scenario.yaml":       {Data: []byte("name: amb\ntarget: {namespace: shop, service: orders}\n")},
		"scenarios/amb/manifests/shop.yaml": {Data: []byte(ambientManifests)},
	}
	s, err := recorded.Load(fsys, "amb")
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	rec := recorded.NewRecorder(c)
	check := func(name string, c cluster.Cluster) {
		t.Helper()
		ctx := context.Background()
		nps, err := cluster.NetworkPolicies(ctx, c, "shop")
		if err != nil || len(nps) != 1 || nps[0].Name != "orders-from-web" {
			t.Errorf("%s: NetworkPolicies = %v, %v", name, nps, err)
		}
		aps, err := cluster.AuthorizationPolicies(ctx, c, "shop")
		if err != nil || len(aps) != 1 || aps[0].Name != "orders-via-waypoint" {
			t.Errorf("%s: AuthorizationPolicies = %v, %v", name, aps, err)
		}
		gws, err := cluster.GatewayAPIGateways(ctx, c, "shop")
		if err != nil || len(gws) != 1 || gws[0].Name != "orders-waypoint" || len(gws[0].Status.Addresses) != 1 || gws[0].Labels["istio.io/waypoint-for"] != "service" {
			t.Errorf("%s: GatewayAPIGateways = %v, %v", name, gws, err)
		}
		if gws, err := cluster.GatewayAPIGateways(ctx, c, "other"); err != nil || len(gws) != 0 {
			t.Errorf("%s: Gateways of another namespace = %v, %v", name, gws, err)
		}
	}
	check("recording", c)
	check("cache", cluster.NewCache(c))
	check("recorder", rec)

	files, err := rec.Scenario(s.Target, nil).Files(incidentlog.Redact)
	if err != nil {
		t.Fatal(err)
	}
	r, err := recorded.LoadRecording(files, "capture", "default")
	if err != nil {
		t.Fatal(err)
	}
	again, err := recorded.NewCluster(r.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	check("replayed capture", again)
}
