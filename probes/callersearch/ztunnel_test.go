package callersearch

import (
	"context"
	"reflect"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// orders-1 (enrolled in ambient, on worker-b), the ztunnel of worker-b,
// a caller (web-1) and the Service's waypoint, whose istio-proxy
// container is an Envoy, on the same node.
const ambientNode = `
apiVersion: v1
kind: Pod
metadata: {name: orders-1, namespace: shop, labels: {app: orders}, annotations: {ambient.istio.io/redirection: enabled}}
spec: {nodeName: worker-b, serviceAccountName: orders, containers: [{name: orders, ports: [{name: http, containerPort: 8080}]}]}
status: {phase: Running, podIP: 10.244.1.7, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: ztunnel-b, namespace: istio-system, labels: {app: ztunnel}}
spec: {nodeName: worker-b, containers: [{name: istio-proxy}]}
status: {phase: Running, podIP: 10.244.1.3, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}, annotations: {ambient.istio.io/redirection: enabled}}
spec: {nodeName: worker-a, serviceAccountName: web, containers: [{name: web}]}
status: {phase: Running, podIP: 10.244.0.21, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: orders-waypoint-5c8d-x7k2p, namespace: shop, labels: {gateway.networking.k8s.io/gateway-name: orders-waypoint, gateway.istio.io/managed: istio.io-mesh-controller}}
spec: {nodeName: worker-b, serviceAccountName: orders-waypoint, containers: [{name: istio-proxy, args: [proxy, waypoint, --domain, shop.svc.cluster.local]}]}
status: {phase: Running, podIP: 10.244.1.30, conditions: [{type: Ready, status: "True"}]}
`

// ztunnel-b's access lines of two connections to orders-1: the
// waypoint's and web-1's.
const ztunnelBLog = `2026-12-02T05:11:20.000000Z	info	access	connection complete	src.addr=10.244.1.30:51740 src.workload="orders-waypoint-5c8d-x7k2p" src.namespace="shop" src.identity="spiffe://cluster.local/ns/shop/sa/orders-waypoint" dst.addr=10.244.1.7:15008 dst.hbone_addr=10.244.1.7:8080 dst.service="orders.shop.svc.cluster.local" dst.workload="orders-1" dst.namespace="shop" dst.identity="spiffe://cluster.local/ns/shop/sa/orders" direction="inbound" bytes_sent=0 bytes_recv=0 duration="0ms"
2026-12-02T05:11:21.000000Z	info	access	connection complete	src.addr=10.244.0.21:51740 src.workload="web-1" src.namespace="shop" src.identity="spiffe://cluster.local/ns/shop/sa/web" dst.addr=10.244.1.7:15008 dst.hbone_addr=10.244.1.7:8080 dst.service="orders.shop.svc.cluster.local" dst.workload="orders-1" dst.namespace="shop" dst.identity="spiffe://cluster.local/ns/shop/sa/orders" direction="inbound" bytes_sent=0 bytes_recv=0 duration="0ms"
`

// The caller search reads the target's ztunnels for who connects to it:
// the waypoint is a hop of ambient callers' traffic, not a caller.
func TestZtunnelCallersLeaveOutTheWaypoint(t *testing.T) {
	objs, err := manifests.Decode("ambient-node", []byte(ambientNode), true)
	if err != nil {
		t.Fatal(err)
	}
	s := recorded.FromObjects("ambient-node", objs)
	s.Logs[recorded.LogKey{Pod: cluster.PodRef{Namespace: "istio-system", Name: "ztunnel-b"}, Container: "istio-proxy"}] = []byte(ztunnelBLog)
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.ListPods(context.Background(), "shop", map[string]string{"app": "orders"})
	if err != nil {
		t.Fatal(err)
	}
	webToOrders := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "web-1"}}
	got, problems := ztunnelCallers(context.Background(), c, webToOrders, pods)
	var names []string
	for _, zc := range got {
		names = append(names, zc.Pod.Name)
	}
	if !reflect.DeepEqual(names, []string{"web-1"}) {
		t.Errorf("callers %v (problems %v), want web-1 alone", names, problems)
	}
}
