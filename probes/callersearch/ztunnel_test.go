package callersearch

import (
	"context"
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// ztunnel-b's access lines of two connections to orders-1: the
// waypoint's and web-1's.
const ztunnelBLog = `2026-12-02T05:11:20.000000Z	info	access	connection complete	src.addr=10.244.1.30:51740 src.workload="orders-waypoint-5c8d-x7k2p" src.namespace="shop" src.identity="spiffe://cluster.local/ns/shop/sa/orders-waypoint" dst.addr=10.244.1.7:15008 dst.hbone_addr=10.244.1.7:8080 dst.service="orders.shop.svc.cluster.local" dst.workload="orders-1" dst.namespace="shop" dst.identity="spiffe://cluster.local/ns/shop/sa/orders" direction="inbound" bytes_sent=0 bytes_recv=0 duration="0ms"
2026-12-02T05:11:21.000000Z	info	access	connection complete	src.addr=10.244.0.21:51740 src.workload="web-1" src.namespace="shop" src.identity="spiffe://cluster.local/ns/shop/sa/web" dst.addr=10.244.1.7:15008 dst.hbone_addr=10.244.1.7:8080 dst.service="orders.shop.svc.cluster.local" dst.workload="orders-1" dst.namespace="shop" dst.identity="spiffe://cluster.local/ns/shop/sa/orders" direction="inbound" bytes_sent=0 bytes_recv=0 duration="0ms"
`

// The caller search reads the target's ztunnels for who connects to it:
// the waypoint is a hop of ambient callers' traffic, not a caller.
func TestZtunnelCallersLeaveOutTheWaypoint(t *testing.T) {
	// The probes' ambient shop (orders-1 on worker-b, its ztunnel, web-1)
	// and the Service's waypoint on the same node.
	var objs []runtime.Object
	for _, file := range []string{"../testdata/ambient/world.yaml", "../testdata/ambient/waypoint-pod.yaml"} {
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := manifests.Decode(file, doc, true)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decoded...)
	}
	s := recorded.FromObjects("ambient", objs)
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
