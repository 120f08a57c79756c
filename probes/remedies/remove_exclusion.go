package remedies

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// RemoveExclusion takes the target's port out of the exclude annotations
// of the pod templates that carry it (the caller's for outbound, the
// Service's for inbound), keeping the other ports excluded.
type RemoveExclusion struct{}

var exclusionAnnotations = []string{"traffic.sidecar.istio.io/excludeOutboundPorts", "traffic.sidecar.istio.io/excludeInboundPorts"}

func (RemoveExclusion) Meta() Meta {
	return Meta{
		ID:     "remove-exclusion",
		Causes: []string{"security.port-excluded"},
		Does:   "removes the target port from the exclude annotations of the Deployments' pod templates (merge patch)",
		Reads:  []string{"pods (the caller)"},
	}
}

func (RemoveExclusion) Compute(ctx context.Context, in *Input) Output {
	_, sd, err := in.ServiceData(ctx)
	if err != nil {
		return unpatchable("%v", err)
	}
	pods, _ := in.Pods(ctx)
	var ports []string
	for _, sp := range sd.Service.Spec.Ports {
		if in.Target.Port != 0 && sp.Port != in.Target.Port {
			continue
		}
		ports = append(ports, fmt.Sprint(sp.Port))
		for _, p := range pods {
			if n, ok := mesh.TargetPortOf(sp, p); ok && !contains(ports, fmt.Sprint(n)) {
				ports = append(ports, fmt.Sprint(n))
			}
		}
	}
	candidates := append([]*corev1.Pod(nil), pods...)
	if in.Target.Source != nil {
		if src, err := in.Cluster.GetPod(ctx, in.Target.Source.Namespace, in.Target.Source.Name); err == nil {
			candidates = append([]*corev1.Pod{src}, candidates...)
		}
	}
	var out Output
	var notes []string
	done := map[workload]bool{}
	for _, pod := range candidates {
		w := workloadOf(pod)
		if done[w] {
			continue
		}
		annotations := map[string]any{}
		for _, a := range exclusionAnnotations {
			v, ok := pod.Annotations[a]
			if !ok {
				continue
			}
			var kept []string
			removed := false
			for _, p := range strings.Split(v, ",") {
				if contains(ports, strings.TrimSpace(p)) {
					removed = true
					continue
				}
				kept = append(kept, strings.TrimSpace(p))
			}
			if !removed {
				continue
			}
			if len(kept) == 0 {
				annotations[a] = nil
			} else {
				annotations[a] = strings.Join(kept, ",")
			}
		}
		if len(annotations) == 0 {
			continue
		}
		done[w] = true
		p, err := templatePatch(w, map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": annotations}}}})
		if err != nil {
			return unpatchable("pod %s excludes the port, and %v: remove it from its owner's pod template", pod.Name, err)
		}
		out.Patches = append(out.Patches, p)
		notes = append(notes, w.String())
	}
	if len(out.Patches) == 0 {
		return unpatchable("no pod read carries the target port (%s) in an exclude annotation", strings.Join(ports, ", "))
	}
	out.NotSimulated = "it patches " + strings.Join(notes, ", ") + ", which the triage does not read (it reads the pods), and takes effect when the rollout recreates the pods"
	out.Note = "The patch takes port " + strings.Join(ports, "/") + " out of the exclude annotations of the pod template of " + strings.Join(notes, ", ") + "; other excluded ports stay excluded."
	return out
}
