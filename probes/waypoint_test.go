package probes

import (
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// The shop with orders bound to waypoint orders-waypoint, whose pod runs
// on worker-b.
var waypointWorld = strings.Replace(ambientWorld, "metadata: {name: orders, namespace: shop}",
	"metadata: {name: orders, namespace: shop, labels: {istio.io/use-waypoint: orders-waypoint}}", 1) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: orders-waypoint, namespace: shop}
spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE}]}
status: {addresses: [{type: Hostname, value: orders-waypoint.shop.svc.cluster.local}]}
---` + ordersWaypointPod

// A busy waypoint's Envoy: its access lines run ~400-600 bytes, so the
// tail read passes the default 4 MB limit, which counts from the oldest
// line. The newest line, the one 503, must be read.
func TestWaypointLogReadKeepsTheNewestLines(t *testing.T) {
	const n = 12000
	wp := cluster.PodRef{Namespace: "shop", Name: "orders-waypoint-5c8d-x7k2p"}
	log := busyLog(n, func(i int, ts string) string {
		code, flag, details := "200", "-", "via_upstream"
		if i == n-1 {
			code, flag, details = "503", "UH", "no_healthy_upstream"
		}
		return "[" + ts + `] "GET /api/orders/` + strings.Repeat("7", 120) + ` HTTP/1.1" ` + code + " " + flag + " " + details +
			` - "-" 0 412 4 3 "-" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36" "a1b2c3d4-e5f6-4711-8899-aabbccddeeff"` +
			` "orders.shop.svc.cluster.local:8080" "envoy://connect_originate/10.244.1.7:8080" inbound-vip|8080|http|orders.shop.svc.cluster.local` +
			" envoy://internal_client_address/ 10.96.14.20:8080 10.244.0.21:51702 - default\n"
	})
	if len(log)/n < 400 || len(log) <= cluster.DefaultLogLimit {
		t.Fatalf("lines of %d bytes, %d in all: not a busy waypoint's", len(log)/n, len(log))
	}
	c := recordedAmbient(t, map[recorded.LogKey][]byte{{Pod: wp, Container: "istio-proxy"}: log}, waypointWorld)
	r := runChecked(t, WaypointProbe{}, c, webToOrders)
	if r.Facts["waypoint_log_503"] != 1 {
		t.Errorf("the newest line, a 503, was not read: 503s %v of %v entries (%s)", r.Facts["waypoint_log_503"], r.Facts["waypoint_log_entries"], r.Summary)
	}
}
