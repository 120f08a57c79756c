package mesh

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWorkloadNameAsIstioTelemetryNamesIt(t *testing.T) {
	yes := true
	owned := func(name, generate, kind, owner string, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: generate, Labels: labels}}
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: owner, Controller: &yes}}
		}
		return p
	}
	cases := []struct {
		pod  *corev1.Pod
		want string
	}{
		{owned("web-5b7d9c6f4-q8w2e", "web-5b7d9c6f4-", "ReplicaSet", "web-5b7d9c6f4", map[string]string{"pod-template-hash": "5b7d9c6f4"}), "web"},
		{owned("api-7c9-x", "api-7c9-", "ReplicaSet", "api-7c9", map[string]string{"rollouts-pod-template-hash": "7c9"}), "api"},
		{owned("db-0", "db-", "StatefulSet", "db", nil), "db"},
		{owned("report-28890120-abcde", "report-28890120-", "Job", "report-28890120", nil), "report"},
		{owned("migrate-x7", "migrate-", "Job", "migrate", nil), "migrate"},
		// A ReplicaSet made by hand, not by a Deployment: no hash label.
		{owned("rs-abc12", "rs-", "ReplicaSet", "rs", nil), "rs"},
		{owned("debug", "", "", "", nil), "debug"},
		// A generated name without a controller.
		{owned("loose-x1", "loose-", "", "", nil), "loose-x1"},
	}
	for _, c := range cases {
		if got := WorkloadName(c.pod); got != c.want {
			t.Errorf("WorkloadName(%s) = %q, want %q", c.pod.Name, got, c.want)
		}
	}
}
