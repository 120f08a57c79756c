package probes

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// A pending pod (ambient.istio.io/redirection=pending) waits for ztunnel
// on its node: a node with one and no ztunnel is where the traffic stops,
// as much as a node with an enrolled pod.
func TestZtunnelNodesWithoutCountPendingPods(t *testing.T) {
	c := newAmbientFake(t)
	// orders-2 alone on worker-c, which has no ztunnel.
	setRedirection(t, c, "shop", "orders-2", "pending")
	r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
	if !reflect.DeepEqual(r.Facts["ztunnel_nodes_without"], []string{"worker-c"}) || r.Status != StatusFail || !strings.Contains(r.Summary, "worker-c") {
		t.Errorf("nodes without %v; %s %s", r.Facts["ztunnel_nodes_without"], r.Status, r.Summary)
	}
}

// The Service's waypoint, on worker-b: an Envoy in an istio-proxy
// container, which PodSidecar calls a classic sidecar.
var ordersWaypointPod = testdataText("testdata/ambient/waypoint-pod.yaml")

// ztunnelLine is an access line of ztunnel about a connection to orders-1
// (10.244.1.7 on worker-b) from src (NAMESPACE/POD) at srcIP.
func ztunnelLine(ts, src, srcIP, sa, direction, errMsg string) string {
	ns, pod, _ := strings.Cut(src, "/")
	level, tail := "info", ""
	if errMsg != "" {
		level, tail = "error", ` error="`+errMsg+`"`
	}
	return ts + "\t" + level + "\taccess\tconnection complete\tsrc.addr=" + srcIP + `:51740 src.workload="` + pod + `" src.namespace="` + ns +
		`" src.identity="spiffe://cluster.local/ns/` + ns + `/sa/` + sa + `" dst.addr=10.244.1.7:15008 dst.hbone_addr=10.244.1.7:8080` +
		` dst.service="orders.shop.svc.cluster.local" dst.workload="orders-1" dst.namespace="shop" dst.identity="spiffe://cluster.local/ns/shop/sa/orders"` +
		` direction="` + direction + `" bytes_sent=0 bytes_recv=0 duration="0ms"` + tail + "\n"
}

var ztunnelB = cluster.PodRef{Namespace: "istio-system", Name: "ztunnel-b"}

// A waypoint sends to the Service's pods with its own identity: ztunnel
// refusing it is an AuthorizationPolicy refusing the waypoint
// (ambient.authz-rejected), not a sidecar going around the waypoint
// (ambient.sidecar-bypasses-waypoint). Its istio-proxy container must not
// make it count as a sidecar.
func TestZtunnelWaypointRejectionsAreNotSidecarRejections(t *testing.T) {
	c := newAmbientFake(t, ordersWaypointPod)
	c.logs = map[string][]byte{logKey(ztunnelB, "istio-proxy"): []byte(
		ztunnelLine("2026-12-02T05:11:21.003920Z", "shop/orders-waypoint-5c8d-x7k2p", "10.244.1.30", "orders-waypoint", "inbound",
			"connection closed due to policy rejection: explicitly denied by: shop/deny-waypoint"))}
	r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
	if r.Facts["ztunnel_rejections"] != 1 || r.Facts["ztunnel_sidecar_rejections"] != 0 {
		t.Errorf("rejections %v, of sidecars %v: the waypoint is no sidecar", r.Facts["ztunnel_rejections"], r.Facts["ztunnel_sidecar_rejections"])
	}
}

// busyLog is n access lines of a busy proxy, one every 10 ms up to the
// newest, which is last; line(i, ts) writes line i (n-1 the newest).
func busyLog(n int, line func(i int, ts string) string) []byte {
	start := time.Date(2026, 12, 2, 5, 11, 0, 0, time.UTC)
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i, start.Add(time.Duration(i)*10*time.Millisecond).Format("2006-01-02T15:04:05.000000Z")))
	}
	return []byte(b.String())
}

// recordedAmbient serves objects and logs as a recorded scenario does: the
// API server's log semantics (Since, then TailLines, then LimitBytes from
// the oldest line of the tail), which the probes' fake does not model.
func recordedAmbient(t *testing.T, logs map[recorded.LogKey][]byte, docs ...string) cluster.Cluster {
	t.Helper()
	s := recorded.FromObjects("test", decodeObjects(t, docs...))
	s.Logs = logs
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The incident is the newest lines. ztunnel logs every connection of its
// node, 520-650 bytes a line: a tail whose bytes pass the read's limit
// loses its newest lines, as LimitBytes counts from the oldest. The
// newest line, the one refusal, must be read, with lines of a typical
// length and with lines longer than the read allows for.
func TestZtunnelLogReadKeepsTheNewestLines(t *testing.T) {
	// The test line is ~445 bytes; padded to a real one's ~580, or to
	// ~2.4 KB.
	for name, pad := range map[string]int{"typical lines": 135, "lines twice as long as allowed for": 2000} {
		t.Run(name, func(t *testing.T) {
			log := busyLog(20000, func(i int, ts string) string {
				if i == 19999 {
					return ztunnelLine(ts, "shop/web-1", "10.244.0.21", "web", "inbound", "connection closed due to policy rejection: explicitly denied by: shop/deny-web")
				}
				l := ztunnelLine(ts, "shop/web-1", "10.244.0.21", "web", "inbound", "")
				return strings.TrimSuffix(l, "\n") + strings.Repeat(" ", pad) + "\n"
			})
			if n := len(log) / 20000; n < 520 || len(log) <= 2*cluster.DefaultLogLimit {
				t.Fatalf("lines of %d bytes, %d in all: not a busy ztunnel's", len(log)/20000, len(log))
			}
			c := recordedAmbient(t, map[recorded.LogKey][]byte{{Pod: ztunnelB, Container: "istio-proxy"}: log}, ambientWorld)
			r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
			if r.Facts["ztunnel_rejections"] != 1 || !reflect.DeepEqual(r.Facts["ztunnel_denied_by"], []string{"shop/deny-web=1"}) {
				t.Errorf("the newest line, a refusal, was not read: rejections %v, entries %v", r.Facts["ztunnel_rejections"], r.Facts["ztunnel_entries"])
			}
			// The caller search reads the same logs.
			res := callersearch.Find(context.Background(), c, cluster.Target{Namespace: "shop", Service: "orders", Port: 8080}, callersearch.Options{})
			var callers []callersearch.Caller
			for _, cl := range append(res.Callers, res.Others...) {
				if cl.By == callersearch.ByZtunnelLog {
					callers = append(callers, cl)
				}
			}
			if len(callers) != 1 || callers[0].Pod.Name != "web-1" || !strings.HasPrefix(callers[0].Why, "1 failed of ") {
				for _, zc := range callers {
					t.Logf("caller %s: %s", zc.Pod, zc.Why)
				}
				t.Errorf("caller search: %d callers, want web-1 with its one failure", len(callers))
			}
		})
	}
}

// A ztunnel that runs but is not Ready does not carry its node's pods
// (its readiness says it has no workload config yet, or lost it): the node
// has no Running, Ready ztunnel, as ztunnel_nodes_without says.
func TestZtunnelNotReadyIsNoZtunnel(t *testing.T) {
	c := newAmbientFake(t)
	zb, err := c.GetPod(context.Background(), "istio-system", "ztunnel-b")
	if err != nil {
		t.Fatal(err)
	}
	zb.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
	if _, err := c.kube.CoreV1().Pods("istio-system").UpdateStatus(context.Background(), zb, metav1Update); err != nil {
		t.Fatal(err)
	}
	r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
	if !reflect.DeepEqual(r.Facts["ztunnel_nodes_without"], []string{"worker-b", "worker-c"}) || r.Status != StatusFail ||
		!strings.Contains(r.Summary, "ztunnel-b not ready") {
		t.Errorf("nodes without %v; %s %s", r.Facts["ztunnel_nodes_without"], r.Status, r.Summary)
	}
}

// moveZtunnels puts the world's ztunnel pods in namespace ns, as GKE's
// install has them (kube-system), away from istiod's.
func moveZtunnels(t *testing.T, c *ambientFake, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{"ztunnel-a", "ztunnel-b"} {
		p, err := c.GetPod(ctx, "istio-system", name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.kube.CoreV1().Pods("istio-system").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		p.Namespace, p.ResourceVersion = ns, ""
		if _, err := c.kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// ztunnel installed outside istiod's namespace is still ztunnel: only the
// node that has none (worker-c) is without one. Before, every node was.
func TestZtunnelOutsideTheControlPlaneNamespace(t *testing.T) {
	c := newAmbientFake(t)
	moveZtunnels(t, c, "kube-system")
	r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
	if !reflect.DeepEqual(r.Facts["ztunnel_nodes_without"], []string{"worker-c"}) || r.Facts["ztunnel_pods"] != 2 {
		t.Errorf("pods %v, nodes without %v: %s", r.Facts["ztunnel_pods"], r.Facts["ztunnel_nodes_without"], r.Summary)
	}
}

// When istiod's namespace has no ztunnel and the others cannot be listed,
// which nodes lack one is unknown, never "all of them".
func TestZtunnelNodesUnknownWhenOtherNamespacesAreForbidden(t *testing.T) {
	c := newAmbientFake(t)
	moveZtunnels(t, c, "kube-system")
	c.kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != "" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("cannot list pods at the cluster scope"))
	})
	r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
	if v, ok := r.Facts["ztunnel_nodes_without"]; ok {
		t.Errorf("ztunnel_nodes_without = %v with no ztunnel list readable", v)
	}
	if !strings.Contains(r.Summary, "which nodes have one is unknown") {
		t.Errorf("summary does not say what is unknown: %s", r.Summary)
	}
}

// A pod that carries no traffic (evicted, or terminating on a node that
// died with its ztunnel) needs no ztunnel: its node is no node without one.
func TestZtunnelNodesWithoutIgnorePodsThatCarryNoTraffic(t *testing.T) {
	evicted := `
apiVersion: v1
kind: Pod
metadata: {name: orders-old, namespace: shop, labels: {app: orders}, annotations: {ambient.istio.io/redirection: enabled}}
spec: {nodeName: worker-dead, serviceAccountName: orders, containers: [{name: orders}]}
status: {phase: Failed, reason: Evicted}
`
	r := runChecked(t, ZtunnelProbe{}, newAmbientFake(t, evicted), webToOrders)
	if !reflect.DeepEqual(r.Facts["ztunnel_nodes_without"], []string{"worker-c"}) {
		t.Errorf("nodes without %v, want worker-c only (worker-dead runs only an evicted pod)", r.Facts["ztunnel_nodes_without"])
	}
}

// ztunnel 1.22 through the probe (probes/parse/ztunnel/testdata/SOURCES.md):
// the debug "connection opened" lines are no connections, completed or
// failed, and the bare io timeout to a pod's 15008 is the HBONE-blocked
// shape the runbook's ambient.hbone-blocked rule reads.
func TestZtunnel122HBONETimeoutAndOpenedLines(t *testing.T) {
	log, err := os.ReadFile("parse/ztunnel/testdata/access_1_22.log")
	if err != nil {
		t.Fatal(err)
	}
	c := newAmbientFake(t)
	c.logs = map[string][]byte{logKey(ztunnelB, "istio-proxy"): log}
	r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
	if r.Facts["ztunnel_entries"] != 3 || r.Facts["ztunnel_completed"] != 1 || r.Facts["ztunnel_hbone_timeouts"] != 2 {
		t.Errorf("entries %v completed %v hbone timeouts %v, want 3 1 2 (%s)", r.Facts["ztunnel_entries"], r.Facts["ztunnel_completed"], r.Facts["ztunnel_hbone_timeouts"], r.Summary)
	}
	if u, _ := r.Facts["ztunnel_unexplained"].([]string); len(u) != 0 {
		t.Errorf("unexplained %v: the HBONE timeout has its cause", u)
	}
}

// An error no cause of the catalogue produces is named, with its hop, in
// the facts and in the summary an unexplained finding shows.
func TestZtunnelUnexplainedErrorIsNamed(t *testing.T) {
	c := newAmbientFake(t)
	c.logs = map[string][]byte{logKey(ztunnelB, "istio-proxy"): []byte(
		ztunnelLine("2026-12-02T05:11:21.003920Z", "shop/web-1", "10.244.0.22", "web", "outbound", "pool draining"))}
	r := runChecked(t, ZtunnelProbe{}, c, webToOrders)
	u, _ := r.Facts["ztunnel_unexplained"].([]string)
	if len(u) != 1 || !strings.Contains(u[0], "WorkloadHBONEPoolDraining at the caller's ztunnel") || r.Status != StatusFail ||
		!strings.Contains(r.Summary, "WorkloadHBONEPoolDraining") {
		t.Errorf("%s %q, unexplained %v", r.Status, r.Summary, u)
	}
}
