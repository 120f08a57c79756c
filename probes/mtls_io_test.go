package probes

import (
	"context"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	securityv1beta1 "istio.io/api/security/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The three pod-spec probes through the I/O layer: objects come from fake
// clientsets behind objects.Reader, so selectors and Istio lists behave as
// against a real API server.
func TestPodSpecProbesThroughTheClusterReads(t *testing.T) {
	ctx := context.Background()
	upstream := meshedPod("orders-1", true)
	upstream.CreationTimestamp = metav1.NewTime(podCreated)
	client := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	strict := peerAuth("shop", "default", securityv1beta1.PeerAuthentication_MutualTLS_STRICT, nil, nil)
	f := newFakeCluster(t, ns, mtlsService(), &upstream, client, strict)
	target := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}

	res := Run(ctx, MTLSProbe{}, f, target)
	if res.Facts["mtls_mismatch"] != MismatchPlaintextStrict || res.Status != StatusFail {
		t.Errorf("mtls through the fake = %s %v: %s", res.Status, res.Facts, res.Summary)
	}
	if res.Probe != "mtls" {
		t.Errorf("Run did not stamp the probe ID: %q", res.Probe)
	}

	res = Run(ctx, ShutdownOrderProbe{}, f, target)
	if res.Facts["shutdown_at_risk"] != true {
		t.Errorf("shutdown through the fake: %v", res.Facts)
	}

	ref := cluster.PodRef{Namespace: "shop", Name: "orders-1"}
	f.logs[logKey(ref, mesh.ProxyContainer)] = []byte(ordersProxyLog)
	res = Run(ctx, StartupOrderProbe{}, f, target)
	if res.Status != StatusPass || res.Facts["startup_early_restarts"] != 0 {
		t.Errorf("startup through the fake = %s %v", res.Status, res.Facts)
	}
}

func TestPodSpecProbesReportAccessProblems(t *testing.T) {
	ctx := context.Background()
	target := cluster.Target{Namespace: "shop", Service: "orders"}

	f := newFakeCluster(t, mtlsService())
	f.withoutKind("peerauthentications")
	res := Run(ctx, MTLSProbe{}, f, target)
	if res.Status != StatusError || !strings.Contains(res.Summary, "Istio CRDs not installed") || len(res.Facts) != 0 {
		t.Errorf("no CRDs: %s %q %v", res.Status, res.Summary, res.Facts)
	}

	f = newFakeCluster(t, mtlsService())
	f.forbid("list", "pods")
	for _, p := range []Probe{MTLSProbe{}, StartupOrderProbe{}, ShutdownOrderProbe{}} {
		res := Run(ctx, p, f, target)
		if res.Status != StatusError || !strings.Contains(res.Summary, "forbidden: cannot list pods in shop") || len(res.Facts) != 0 {
			t.Errorf("%s forbidden: %s %q %v", p.Meta().ID, res.Status, res.Summary, res.Facts)
		}
	}

	f = newFakeCluster(t)
	res = Run(ctx, ShutdownOrderProbe{}, f, target)
	if res.Status != StatusError || !strings.Contains(res.Summary, "get service shop/orders: not found") {
		t.Errorf("absent service: %s %q", res.Status, res.Summary)
	}
}
