//go:build integration

package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// modelInput is one configuration the lab loads, a target, and the callers
// whose view of it the model and istiod both give.
type modelInput struct {
	name    string
	s       *recorded.Scenario
	target  cluster.Target
	callers []cluster.PodRef
}

// sidecarCaller: a pod whose istio-proxy is a sidecar istiod pushes a
// sidecar's config to. ztunnel's pods and waypoints also run a container
// named istio-proxy, but ztunnel is no Envoy and a waypoint connects as
// proxy type waypoint: connecting either as sidecar~ would compare the
// model with a config no such pod is given.
func sidecarCaller(pod *corev1.Pod) bool {
	return mesh.PodSidecar(pod) != mesh.SidecarNone && !mesh.IsZtunnelPod(pod, cluster.DefaultControlPlane) && !mesh.IsWaypointPod(pod)
}

// modelInputs are every embedded scenario (each of its running pods with a
// sidecar calling its target) and every config-model case whose caller is
// a pod.
func modelInputs(t *testing.T) []modelInput {
	var out []modelInput
	for _, name := range scenarioNames(t) {
		s := loadScenario(t, name)
		in := modelInput{name: "scenario/" + name, s: s, target: s.Target}
		for _, obj := range s.Objects {
			pod, ok := obj.(*corev1.Pod)
			if ok && sidecarCaller(pod) && pod.Status.PodIP != "" && pod.DeletionTimestamp == nil {
				in.callers = append(in.callers, cluster.PodRef{Namespace: pod.Namespace, Name: pod.Name})
			}
		}
		out = append(out, in)
	}
	for _, tc := range meshtest.Cases {
		source, ok := callerPod(tc.Caller)
		if !ok {
			continue // "a meshed pod of NS" is no pod istiod can push to
		}
		objs := meshtest.Objects(t, "../probes/mesh/testdata/model", tc.Files()...)
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
		in := modelInput{name: name, s: s, target: cluster.Target{Namespace: ns, Service: svc, Port: tc.Port, Source: &source}}
		if mesh.PodSidecar(scenarioPodByRef(t, s, source)) != mesh.SidecarNone {
			in.callers = []cluster.PodRef{source}
		}
		out = append(out, in)
	}
	return out
}

// The config model against a real istiod: for every scenario and every
// config-model case the lab can load, and each caller with a sidecar, the
// clusters the model says istiod gives the caller for the target's ports
// (those its routes name and every subset's), their serving endpoints
// with their metadata, the TLS the caller sends each of them, and the
// routes with their weights must be what istiod pushed to that caller's
// sidecar. A difference is a bug in the model, or a limit to write down in
// ARCHITECTURE.md ("The config model and its limits").
func TestConfigModelAgainstIstiod(t *testing.T) {
	l, i := istiodLab(t)
	for _, in := range modelInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			if len(in.callers) == 0 {
				t.Skip("no caller with a sidecar: istiod gives a pod without one nothing to compare the model's kube-proxy answer with")
			}
			applyToIstiod(t, l, i, in.s)
			for _, caller := range in.callers {
				compareCaller(t, l, i, in, caller)
			}
		})
	}
}

// undecided: some cluster of v has endpoints the model could not decide.
func undecided(v *mesh.View) bool {
	for _, cl := range v.Clusters {
		if cl.Undecided > 0 {
			return true
		}
	}
	return false
}

// fullReadView is the model's view for caller from every object of the
// scenario, with its mesh config.
func fullReadView(t *testing.T, s *recorded.Scenario, caller cluster.PodRef, host string, port int32) *mesh.View {
	t.Helper()
	text, _ := scenarioMeshConfig(s)
	mc := mesh.MeshConfig{NetworksRead: true}
	if text != "" {
		raw, err := mesh.ParseMeshConfig(text)
		if err != nil {
			t.Fatal(err)
		}
		mc = mesh.MeshConfig{Raw: raw, Found: true, NetworksRead: true}
	}
	cfg := mesh.ConfigFromObjects(s.Objects, mc, cluster.DefaultControlPlane)
	v, err := cfg.ViewFor(mesh.CallerFromPod(scenarioPodByRef(t, s, caller)), host, port)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// compareCaller connects caller's sidecar to istiod and compares what it
// was pushed with the model's views of the target for caller.
func compareCaller(t *testing.T, l *Lab, i *Istiod, in modelInput, caller cluster.PodRef) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc, err := i.ConnectSidecar(ctx, scenarioPodByRef(t, in.s, caller))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.XDS.WaitQuiet(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	pushed := sc.XDS.Pushed()
	target := in.target
	target.Source = &caller
	cfg, _, views, err := callerview.Read(ctx, liveCluster(t, l.Kubeconfig, in.s, 20*time.Second), target)
	if err != nil {
		t.Fatalf("caller %s: %v", caller, err)
	}
	if len(views) == 0 {
		t.Fatalf("caller %s: the model gave no view", caller)
	}
	clusters, endpoints, diffs := 0, 0, 0
	pushedRoutes, listeners := sc.XDS.PushedRoutes(), sc.XDS.PushedListeners()
	// Where a triage's read leaves endpoints undecided, the model of every
	// object (as a dump gives it) decides them: compare that too.
	for _, v := range views {
		if undecided(v) {
			views = append(views, fullReadView(t, in.s, caller, v.Host, v.Port))
		}
	}
	for _, v := range views {
		c := CompareView(v, pushed)
		c.add(CompareSubsets(cfg, v, pushed))
		c.add(CompareRoutes(v, pushedRoutes, listeners))
		if v.Gateway != nil {
			// A gateway's routes are the model's too: which hosts reach
			// the target, on which route configurations.
			rc := CompareGatewayRoutes(v, pushedRoutes)
			c.Clusters, c.Endpoints, c.Diffs = c.Clusters+rc.Clusters, c.Endpoints+rc.Endpoints, append(c.Diffs, rc.Diffs...)
		}
		clusters, endpoints, diffs = clusters+c.Clusters, endpoints+c.Endpoints, diffs+len(c.Diffs)
		for _, d := range c.Diffs {
			t.Errorf("caller %s: %s", caller, d)
		}
		if len(c.Diffs) > 0 {
			t.Logf("the model's chain for port %d:\n%s", v.Port, strings.Join(v.Chain(), "\n"))
		}
	}
	t.Logf("caller %s: compared %d clusters and %d serving endpoints", caller, clusters, endpoints)
	if clusters == 0 {
		t.Errorf("caller %s: nothing compared: the model named no cluster for the target", caller)
	}
	if diffs > 0 {
		host := mesh.ServiceHost(in.target.Service, in.target.Namespace)
		for _, name := range sortedKeysOf(pushed) {
			if strings.HasSuffix(name, "|"+host) {
				t.Logf("istiod pushed %s (%s): %+v", name, pushed[name].Type, pushed[name].Endpoints)
			}
		}
	}
}
