//go:build integration

package lab

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// pushTrigger makes istiod push the caller's namespace every type: a new
// Service there. It is deleted at the test's end.
func pushTrigger(ctx context.Context, t *testing.T, l *Lab, namespace, name string) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 9999, TargetPort: intstr.FromInt32(9999)}}},
	}
	if _, err := l.Kube.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Kube.CoreV1().Services(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// The proxy-status probe on a real istiod, through pods/portforward: a
// proxy left on Istio 1.28.3 by an in-place upgrade (its ISTIO_VERSION),
// whose sidecar then NACKs a CDS push as an Envoy that cannot take it
// does. istiod's own records are what the probe reads: its /version
// against the proxy's (outside the supported skew), the endpoints
// /debug/edsz says it would send, the NACK's error in syncz's lastError
// (CDS STALE, the rejection, not a slow push), cleared by the next ACK.
// The triage finds xds.config-rejected at high confidence from them.
func TestProxyStatusReadsIstiodsRecord(t *testing.T) {
	l, i := istiodLab(t)
	s := loadScenario(t, "healthy")
	applyToIstiod(t, l, i, s)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc, err := i.ConnectSidecarVersion(ctx, scenarioPodByRef(t, s, *s.Target.Source), "1.28.3")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	if err := sc.XDS.WaitQuiet(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	version, err := i.Get(ctx, "/version")
	if err != nil {
		t.Fatal(err)
	}
	want := IstioRelease + "-" + istioCommit() + "-Clean"
	if strings.TrimSpace(string(version)) != want {
		t.Fatalf("istiod /version %q, want %q", version, want)
	}

	synced := runProbe(t, l, s, "proxy-status")
	requireFacts(t, synced, probes.Facts{"xds_proxy_known": true, "xds_cds": "SYNCED", "xds_rejected_types": []string{}, "xds_last_error": "",
		"xds_proxy_version": "1.28.3", "xds_istiod_version": want, "xds_version_skew": 3, "xds_skew_supported": false,
		"xds_edsz_endpoints": 3})

	// The NACK: every CDS push from now on is rejected with Envoy's
	// words.
	const reason = "Error adding/updating cluster(s) outbound|9999||meshlab-nack-trigger.shop.svc.cluster.local: 'istio.hashable_string' does not have an object factory"
	sc.XDS.SetReject(ClusterType, reason)
	before := sc.XDS.TypeState(ClusterType).Rejected
	pushTrigger(ctx, t, l, s.Target.Source.Namespace, "meshlab-nack-trigger")
	if err := sc.XDS.WaitFor(ctx, "a CDS push it rejects", func(types map[string]*XDSTypeState) bool {
		return types[ClusterType].Rejected > before
	}); err != nil {
		t.Fatal(err)
	}
	if err := sc.XDS.WaitQuiet(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	rejected := runProbe(t, l, s, "proxy-status")
	requireFacts(t, rejected, probes.Facts{"xds_proxy_known": true, "xds_cds": "STALE", "xds_rejected_types": []string{"CDS"},
		"xds_last_error": "CDS: " + reason, "xds_stale_types": []string{"CDS"}})
	if rejected.Status != probes.StatusFail || !strings.Contains(rejected.Summary, "rejected: "+reason) {
		t.Errorf("rejected: %s %q", rejected.Status, rejected.Summary)
	}

	// The whole triage, live: istiod's record is the finding, the STALE
	// type no second one.
	run := runCheck(t, ctx, triage.LiveSource(liveCluster(t, l.Kubeconfig, s, 20*time.Second)), s.Target)
	if run.err != nil {
		t.Fatal(run.err)
	}
	if !slices.Contains(run.causes, "xds.config-rejected") || slices.Contains(run.causes, "xds.stale") || slices.Contains(run.causes, "xds.version-skew") {
		t.Errorf("causes %v, want xds.config-rejected and neither xds.stale nor xds.version-skew", run.causes)
	}

	// Accepted again: the next ACK clears istiod's record.
	sc.XDS.SetReject(ClusterType, "")
	applied := sc.XDS.TypeState(ClusterType).Applied
	pushTrigger(ctx, t, l, s.Target.Source.Namespace, "meshlab-ack-trigger")
	if err := sc.XDS.WaitFor(ctx, "a CDS push it accepts", func(types map[string]*XDSTypeState) bool {
		return types[ClusterType].Applied > applied
	}); err != nil {
		t.Fatal(err)
	}
	if err := sc.XDS.WaitQuiet(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	requireFacts(t, runProbe(t, l, s, "proxy-status"), probes.Facts{"xds_cds": "SYNCED", "xds_rejected_types": []string{}, "xds_last_error": ""})
}

// eds.synced-but-empty on a real istiod: a Service whose EndpointSlice
// holds a ready endpoint that names, by targetRef, a pod istiod does not
// know. istiod holds such an endpoint back until it sees the pod, so it
// sends the caller's proxy the cluster with no endpoint and says so in
// /debug/edsz, while the proxy is SYNCED and the slice is ready: the
// triage finds eds.synced-but-empty at high confidence, from istiod's own
// answer.
func TestSyncedButEmptyFromIstiodsEndpointIndex(t *testing.T) {
	l, i := istiodLab(t)
	s := loadScenario(t, "healthy")
	applyToIstiod(t, l, i, s)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := s.Target.Namespace
	const name = "orders-legacy"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := l.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Kube.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	ready, port, proto := true, int32(8080), corev1.ProtocolTCP
	portName := "http"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-x7k2p", Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "meshlab"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.3.40"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "orders-legacy-5d7c9-qq8wz"}}},
		Ports: []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
	}
	if _, err := l.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Kube.DiscoveryV1().EndpointSlices(ns).Delete(context.Background(), slice.Name, metav1.DeleteOptions{})
	})
	if err := i.WaitKnows(ctx, []runtime.Object{svc}); err != nil {
		t.Fatal(err)
	}
	sc := connectSource(t, i, s)
	target := cluster.Target{Namespace: ns, Service: name, Port: 8080, Source: s.Target.Source}
	legacy := fmt.Sprintf("outbound|8080||%s.%s.svc.cluster.local", name, ns)
	if st := sc.XDS.TypeState(EndpointType); st.Resources[legacy] == nil {
		t.Fatalf("the sidecar holds no assignment for %s (it watches %v)", legacy, st.Names)
	}

	run := runCheck(t, ctx, triage.LiveSource(liveCluster(t, l.Kubeconfig, s, 20*time.Second)), target)
	if run.err != nil {
		t.Fatal(run.err)
	}
	requireFacts(t, asResult(run.results["proxy-status"]), probes.Facts{"xds_eds": "SYNCED", "xds_edsz_endpoints": 0})
	requireFacts(t, asResult(run.results["envoy-clusters"]), probes.Facts{"envoy_cluster_present": true, "envoy_hosts_total": 0})
	requireFacts(t, asResult(run.results["endpoints"]), probes.Facts{"endpoints_ready": 1})
	if !slices.Contains(run.causes, "eds.synced-but-empty") {
		t.Errorf("causes %v, want eds.synced-but-empty", run.causes)
	}
}
