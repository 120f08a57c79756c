package probes

import (
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RealworldFacts are the facts of the probes that read Envoy and Istio
// output, run on every realworld sample (realworldRuns), for the tests of
// package probes_test.
func RealworldFacts(t *testing.T) []Facts {
	var out []Facts
	for _, r := range realworldRuns(t) {
		out = append(out, r.result.Facts)
	}
	return out
}

// UnexplainedFlagWorld is a caller whose sidecar logs 504 UT to orders,
// which no cause of the catalogue produces, and nothing else wrong: for
// the test that a triage of it ends in an unexplained finding.
func UnexplainedFlagWorld(t *testing.T) (cluster.Cluster, cluster.Target) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"istio-injection": "enabled"}}}
	f := newFakeCluster(t, ns, evPod("web-7d9", "web", true), evService(8080), evPod("orders-1", "orders", true))
	f.logs[logKey(evSource, mesh.ProxyContainer)] = []byte(accessLogUT504)
	return f, evTarget
}
