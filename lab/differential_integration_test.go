//go:build integration

package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// modelInput is one configuration the lab loads and one caller and target
// whose view the model and istiod both give.
type modelInput struct {
	name   string
	s      *recorded.Scenario
	target cluster.Target
}

// modelInputs are every embedded scenario (its source calling its target)
// and every config-model case whose caller is a pod.
func modelInputs(t *testing.T) []modelInput {
	var out []modelInput
	for _, name := range scenarioNames(t) {
		s := loadScenario(t, name)
		out = append(out, modelInput{name: "scenario/" + name, s: s, target: s.Target})
	}
	for _, tc := range meshtest.Cases {
		source, ok := callerPod(tc.Caller)
		if !ok {
			continue // "a meshed pod of NS" is no pod istiod can push to
		}
		objs := meshtest.Objects(t, "../probes/mesh/testdata/model", "base.yaml", tc.File)
		if tc.Mesh != "" {
			objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: mesh.MeshConfigMap, Namespace: cluster.DefaultControlPlane},
				Data: map[string]string{"mesh": tc.Mesh}})
		}
		s := recorded.FromObjects("model/"+tc.File, withCreationOrder(objs))
		s.Name = "model-" + strings.TrimSuffix(tc.File, ".yaml")
		svc, ns, _ := strings.Cut(tc.Host, ".")
		ns, _, _ = strings.Cut(ns, ".")
		name := "model/" + strings.TrimSuffix(tc.File, ".yaml") + "/" + tc.Caller + "/" + svc
		if tc.Mesh != "" {
			name += "/mesh"
		}
		out = append(out, modelInput{name: name, s: s, target: cluster.Target{Namespace: ns, Service: svc, Port: tc.Port, Source: &source}})
	}
	return out
}

// The config model against a real istiod: for every scenario and every
// config-model case the lab can load, the clusters the model says istiod
// gives the caller for the target's ports, their serving endpoints and the
// TLS the caller sends each of them must be what istiod pushed to that
// caller's sidecar. A difference is a bug in the model, or a limit to write
// down in ARCHITECTURE.md ("The config model and its limits").
func TestConfigModelAgainstIstiod(t *testing.T) {
	l, i := istiodLab(t)
	for _, in := range modelInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			if in.target.Source == nil {
				t.Skip("no caller: the model's answer is for a meshed pod of no name, istiod's for a proxy")
			}
			pod := scenarioPodByRef(t, in.s, *in.target.Source)
			if mesh.PodSidecar(pod) == mesh.SidecarNone {
				t.Skip("the caller has no sidecar: istiod gives it nothing to compare the model's kube-proxy answer with")
			}
			applyToIstiod(t, l, i, in.s)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sc, err := i.ConnectSidecar(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			if err := sc.XDS.WaitQuiet(ctx, time.Second); err != nil {
				t.Fatal(err)
			}
			pushed := sc.XDS.Pushed()
			_, _, views, err := probes.CallerViews(ctx, liveCluster(t, l.Kubeconfig, in.s, 20*time.Second), in.target)
			if err != nil {
				t.Fatal(err)
			}
			if len(views) == 0 {
				t.Fatal("the model gave no view")
			}
			clusters, endpoints := 0, 0
			for _, v := range views {
				c := CompareView(v, pushed)
				clusters, endpoints = clusters+c.Clusters, endpoints+c.Endpoints
				for _, d := range c.Diffs {
					t.Errorf("%s", d)
				}
				if len(c.Diffs) > 0 {
					t.Logf("the model's chain for port %d:\n%s", v.Port, strings.Join(v.Chain(), "\n"))
				}
			}
			t.Logf("compared %d clusters and %d serving endpoints", clusters, endpoints)
			if clusters == 0 {
				t.Error("nothing compared: the model named no cluster for the target")
			}
			if t.Failed() {
				for _, name := range sortedKeysOf(pushed) {
					if pc := pushed[name]; strings.HasSuffix(name, "|"+mesh.ServiceHost(in.target.Service, in.target.Namespace)) {
						t.Logf("istiod pushed %s (%s): %+v", name, pc.Type, pc.Endpoints)
					}
				}
			}
		})
	}
}
