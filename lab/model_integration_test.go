//go:build integration

package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// The config model's cases, loaded into the lab's real API server and read
// back as a triage reads them: the YAML must be what a real API server
// accepts and serves (CRD validation, defaulting, EndpointSlices), and the
// model must judge what it serves as it judged the files.
func TestConfigModelCasesOnTheLab(t *testing.T) {
	l := sharedLab(t)
	for _, tc := range meshtest.Cases {
		name := strings.TrimSuffix(tc.File, ".yaml") + "/" + tc.Caller
		if tc.Mesh != "" {
			name += "/" + tc.Mesh
		}
		t.Run(name, func(t *testing.T) {
			source, ok := callerPod(tc.Caller)
			if !ok {
				t.Skip("a meshed pod of unknown labels is the model's own notion: no pod to name in a cluster")
			}
			objs := meshtest.Objects(t, "../probes/mesh/testdata/model", "base.yaml", tc.File)
			if tc.Mesh != "" {
				objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: mesh.MeshConfigMap, Namespace: cluster.DefaultControlPlane},
					Data: map[string]string{"mesh": tc.Mesh}})
			}
			s := recorded.FromObjects("model/"+tc.File, withCreationOrder(objs))
			s.Name = "model-" + strings.TrimSuffix(tc.File, ".yaml")
			applyShared(t, l, s)

			svc, ns, _ := strings.Cut(tc.Host, ".")
			ns, _, _ = strings.Cut(ns, ".")
			target := cluster.Target{Namespace: ns, Service: svc, Port: tc.Port, Source: &source}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _, views, err := callerview.Read(ctx, liveCluster(t, l.Kubeconfig, s, 20*time.Second), target)
			if err != nil {
				t.Fatal(err)
			}
			tc.Check(t, views[0])
			if t.Failed() {
				t.Logf("chain:\n%s", strings.Join(views[0].Chain(), "\n"))
			}
		})
	}
}

// callerPod names the case's caller as the pod a triage would be given.
func callerPod(spec string) (cluster.PodRef, bool) {
	ns, name, ok := strings.Cut(spec, "/")
	if !ok || strings.HasPrefix(spec, "meshed ") {
		return cluster.PodRef{}, false
	}
	return cluster.PodRef{Namespace: ns, Name: name}, true
}

// withCreationOrder stamps the objects a second apart in file order, as the
// YAML lists them: Istio breaks ties between rules by age.
func withCreationOrder(objs []runtime.Object) []runtime.Object {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, o := range objs {
		if m, ok := o.(metav1.Object); ok {
			if ts := m.GetCreationTimestamp(); !ts.IsZero() {
				continue
			}
			m.SetCreationTimestamp(metav1.NewTime(start.Add(time.Duration(i) * time.Second)))
		}
	}
	return objs
}
