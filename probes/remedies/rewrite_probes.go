package remedies

import (
	"context"
	"fmt"
	"strings"

	"istio.io/api/annotation"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podfacts"
)

// RewriteProbes has the injector rewrite the Service's pods' health
// probes to pilot-agent again: sidecar.istio.io/rewriteAppHTTPProbers
// "true" in the pod template of each workload whose pods the kubelet
// probes as they are. The annotation wins over the injector's values
// (ShouldRewriteAppHTTPProbers), so it also undoes a mesh-wide
// rewriteAppHTTPProbe false for these workloads. The pods are rewritten
// when the rollout the patch starts recreates them, which a simulation of
// the configuration cannot show.
type RewriteProbes struct{}

func (RewriteProbes) Meta() Meta {
	return Meta{
		ID:     "rewrite-probes",
		Causes: []string{"probe.blocked-by-strict"},
		Does:   "sets sidecar.istio.io/rewriteAppHTTPProbers: \"true\" in the pod template of the workloads whose probes are not rewritten (merge patch)",
	}
}

func (RewriteProbes) Compute(ctx context.Context, in *Input) Output {
	pods, _ := in.Pods(ctx)
	var plain []*corev1.Pod
	for _, p := range pods {
		if mesh.PodSidecar(p) == mesh.SidecarNone {
			continue
		}
		for _, c := range mesh.AppContainers(p) {
			if podfacts.ProbeThroughSidecar(p, c.ReadinessProbe) || podfacts.ProbeThroughSidecar(p, c.LivenessProbe) || podfacts.ProbeThroughSidecar(p, c.StartupProbe) {
				plain = append(plain, p)
				break
			}
		}
	}
	if len(plain) == 0 {
		return unpatchable("every health probe of the Service's pods the triage read is rewritten to pilot-agent, or is an exec probe")
	}
	name := annotation.SidecarRewriteAppHTTPProbers.Name
	var out Output
	var names []string
	for _, w := range workloadsOf(plain) {
		if !w.restartable() {
			return unpatchable("pod of %s: it has no Deployment, StatefulSet or DaemonSet whose template to annotate with %s: \"true\"", w, name)
		}
		p, err := templatePatch(w, map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{name: "true"},
		}}}})
		if err != nil {
			return unpatchable("%v", err)
		}
		out.Patches = append(out.Patches, p)
		names = append(names, w.String())
	}
	was := "no annotation (the injector's values turned the rewrite off)"
	if v, ok := plain[0].Annotations[name]; ok {
		was = fmt.Sprintf("%q", v)
	}
	out.NotSimulated = "it patches " + strings.Join(names, ", ") + ", which the triage does not read (it reads the pods), and the injector rewrites the probes only when the rollout recreates the pods"
	out.Note = fmt.Sprintf("The patch sets %s: \"true\" in the pod template of %s (the pods say %s), so the injector rewrites their probes to pilot-agent's /app-health/ paths on port 15020 and records the originals in ISTIO_KUBE_APP_PROBERS; STRICT stays as it is. The rollout it starts recreates the pods.",
		name, strings.Join(names, ", "), was)
	return out
}
