package probes

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

func fxIstiod(name, image string, phase corev1.PodPhase, env ...corev1.EnvVar) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "istio-system", Labels: map[string]string{"app": "istiod", label.IoIstioRev.Name: "default"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Image: image, Env: env}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func TestVersionsEvaluate(t *testing.T) {
	env := func(v string) corev1.EnvVar { return corev1.EnvVar{Name: "ENABLE_NATIVE_SIDECARS", Value: v} }
	cases := []struct {
		name    string
		in      versionsInput
		status  Status
		summary string
		facts   Facts
		all     bool
	}{
		{
			name:    "old Istio, explicit true",
			in:      versionsInput{Kubernetes: "v1.30.0-gke.1", ControlPlane: "istio-system", Istiods: []corev1.Pod{*fxIstiod("istiod-a", "docker.io/istio/pilot:1.24.2", corev1.PodRunning, env("true"))}},
			status:  StatusPass,
			summary: "Kubernetes v1.30.0-gke.1; istiod 1.24.2, native sidecars on",
			all:     true,
			facts: Facts{"versions_kubernetes": "v1.30.0-gke.1", "versions_native_sidecar_supported": true, "versions_istiod": "1.24.2",
				"versions_native_sidecar_mode": "true", "versions_native_sidecars_enabled": true},
		},
		{
			name:    "old Istio, env unset means false",
			in:      versionsInput{Kubernetes: "v1.31.2", ControlPlane: "istio-system", Istiods: []corev1.Pod{*fxIstiod("istiod-a", "istio/pilot:1.24.2", corev1.PodRunning)}},
			status:  StatusPass,
			summary: "Kubernetes v1.31.2; istiod 1.24.2, native sidecars off",
			all:     true,
			facts:   Facts{"versions_native_sidecar_mode": "false", "versions_native_sidecars_enabled": false},
		},
		{
			name:    "Istio 1.27+ auto on Kubernetes 1.33",
			in:      versionsInput{Kubernetes: "v1.33.1", ControlPlane: "istio-system", Istiods: []corev1.Pod{*fxIstiod("istiod-a", "istio/pilot:1.28.0", corev1.PodRunning)}},
			status:  StatusPass,
			summary: "Kubernetes v1.33.1; istiod 1.28.0, native sidecars on",
			all:     true,
			facts:   Facts{"versions_native_sidecar_mode": "auto", "versions_native_sidecars_enabled": true},
		},
		{
			name:    "Istio 1.27+ auto on Kubernetes 1.31 stays classic",
			in:      versionsInput{Kubernetes: "v1.31.0", ControlPlane: "istio-system", Istiods: []corev1.Pod{*fxIstiod("istiod-a", "istio/pilot:1.27.3", corev1.PodRunning)}},
			status:  StatusPass,
			summary: "Kubernetes v1.31.0; istiod 1.27.3, native sidecars off",
			all:     true,
			facts:   Facts{"versions_native_sidecar_mode": "auto", "versions_native_sidecars_enabled": false, "versions_native_sidecar_supported": true},
		},
		{
			name: "running pod speaks over a pending canary; native on old Kubernetes warned",
			in: versionsInput{Kubernetes: "v1.28.9", ControlPlane: "istio-system", Istiods: []corev1.Pod{
				*fxIstiod("istiod-a-canary", "istio/pilot:1.29.0", corev1.PodPending),
				*fxIstiod("istiod-b", "istio/pilot:1.26.1", corev1.PodRunning, env("TRUE")),
			}},
			status:  StatusWarn,
			summary: "Kubernetes v1.28.9; istiod 1.26.1, native sidecars on; istiod injects native sidecars but Kubernetes is older than 1.29",
			all:     true,
			facts:   Facts{"versions_istiod": "1.26.1", "versions_native_sidecar_supported": false},
		},
		{
			name:    "istiod absent",
			in:      versionsInput{Kubernetes: "v1.31.2", ControlPlane: "istio-system"},
			status:  StatusWarn,
			summary: "Kubernetes v1.31.2; no istiod pod (app=istiod) in istio-system",
			all:     true,
			facts:   Facts{"versions_istiod": "", "versions_native_sidecar_mode": "", "versions_native_sidecars_enabled": false},
		},
		{
			name:    "istiod unreadable leaves its facts unknown",
			in:      versionsInput{Kubernetes: "v1.31.2", ControlPlane: "istio-system", IstiodProblem: "forbidden: cannot list istiod pods in istio-system (RBAC: x)"},
			status:  StatusWarn,
			summary: "Kubernetes v1.31.2; forbidden: cannot list istiod pods in istio-system (RBAC: x)",
			facts:   Facts{"versions_native_sidecar_supported": true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluateVersions(tc.in)
			if tc.all {
				mustAllFacts(t, VersionsProbe{}, r)
			} else {
				mustFacts(t, VersionsProbe{}, r)
				if _, ok := r.Facts["versions_istiod"]; ok {
					t.Error("istiod facts emitted though istiod could not be read")
				}
			}
			if r.Status != tc.status || r.Summary != tc.summary {
				t.Errorf("got %s %q\nwant %s %q", r.Status, r.Summary, tc.status, tc.summary)
			}
			for k, want := range tc.facts {
				if got := r.Facts[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("fact %s = %#v, want %#v", k, got, want)
				}
			}
		})
	}
}

func TestVersionsProbeThroughClusterReads(t *testing.T) {
	ctx := context.Background()
	objs := []runtime.Object{fxIstiod("istiod-5d8f", "docker.io/istio/pilot:1.24.2", corev1.PodRunning,
		corev1.EnvVar{Name: "ENABLE_NATIVE_SIDECARS", Value: "true"})}
	f := newFakeCluster(t, objs...)
	f.setServerVersion("v1.30.4")
	r := Run(ctx, VersionsProbe{}, f, cluster.Target{Namespace: "shop", Service: "orders"})
	mustAllFacts(t, VersionsProbe{}, r)
	if r.Status != StatusPass || r.Facts["versions_istiod"] != "1.24.2" || r.Facts["versions_native_sidecars_enabled"] != true {
		t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
	}

	f.forbid("list", "pods")
	r = Run(ctx, VersionsProbe{}, f, cluster.Target{})
	if r.Status != StatusWarn || r.Facts["versions_kubernetes"] != "v1.30.4" || !strings.Contains(r.Summary, "forbidden: cannot list istiod pods in istio-system") {
		t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
	}

	f = newFakeCluster(t)
	f.kube.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
	})
	r = Run(ctx, VersionsProbe{}, f, cluster.Target{})
	if r.Status != StatusError || len(r.Facts) != 0 || r.Summary != "cannot read the Kubernetes server version: dial tcp 10.0.0.1:443: connect: connection refused" {
		t.Fatalf("%s %q %v", r.Status, r.Summary, r.Facts)
	}
}
