package remedies

import (
	"context"
	"fmt"
	"strings"

	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// EnableInjection gives pods without a sidecar one the next time they
// start: the upstream's pods for sidecar.missing-upstream, the caller's
// for mtls.plaintext-to-strict. It labels their namespace
// istio-injection=enabled when nothing labels it for injection, or
// removes a pod template's sidecar.istio.io/inject=false from its
// Deployment. A namespace labelled disabled was opted out on purpose and is
// left to the team. Pods get the sidecar when they are recreated, which a
// simulation of the configuration cannot show.
type EnableInjection struct{}

const injectLabel = "sidecar.istio.io/inject"

func (EnableInjection) Meta() Meta {
	return Meta{
		ID:     "enable-injection",
		Causes: []string{"sidecar.missing-upstream", "mtls.plaintext-to-strict"},
		Does:   "labels the namespace for injection, or removes the Deployment's opt-out; the pods get a sidecar once recreated",
		Reads:  []string{"namespaces"},
	}
}

func (EnableInjection) Compute(ctx context.Context, in *Input) Output {
	var pods []*corev1.Pod
	ns := in.Target.Namespace
	whose := "the Service's pods"
	if in.Cause == "mtls.plaintext-to-strict" {
		if in.Target.Source == nil {
			return unpatchable("no caller was named (--from): whose pods need a sidecar is not known")
		}
		pod, err := in.Cluster.GetPod(ctx, in.Target.Source.Namespace, in.Target.Source.Name)
		if err != nil {
			return unpatchable("the caller pod could not be read: %v", err)
		}
		if mesh.PodSidecar(pod) != mesh.SidecarNone {
			if bypassing, all := mesh.SidecarBypass(pod); all {
				return unpatchable("the caller %s has a sidecar, which its app goes around (%s): the UID is what to change (sidecar.app-runs-as-proxy-uid)", in.Target.Source, strings.Join(bypassing, "; "))
			}
			return unpatchable("the caller %s has a sidecar: the plaintext comes from a DestinationRule (the direction before)", in.Target.Source)
		}
		pods, ns, whose = []*corev1.Pod{pod}, pod.Namespace, "the caller "+pod.Name
	} else {
		all, _ := in.Pods(ctx)
		for _, p := range all {
			if mesh.PodSidecar(p) == mesh.SidecarNone {
				pods = append(pods, p)
			}
		}
		if len(pods) == 0 {
			return unpatchable("every pod of the Service has a sidecar")
		}
	}
	nsObj, err := in.Cluster.GetNamespace(ctx, ns)
	if err != nil {
		return unpatchable("namespace %s could not be read: %v", ns, err)
	}
	restart := "restart " + describeWorkloads(workloadsOf(pods)) + " after it (the command below) to recreate them"
	if w := workloadsOf(pods); len(w) == 1 && w[0].Kind == "CronJob" {
		restart = "the next Job of " + w[0].String() + " starts with it"
	}
	notSimulated := "the pods get the sidecar only when they are recreated, which the simulation of the configuration cannot do"
	switch inj := mesh.NamespaceInjection(nsObj); {
	case nsObj.Labels[label.IoIstioDataplaneMode.Name] == mesh.DataplaneModeAmbient:
		return unpatchable("namespace %s is in ambient (istio.io/dataplane-mode=ambient): a sidecar there is the team's call, not a fix", ns)
	case inj == "disabled":
		return unpatchable("namespace %s is labelled %s=%s: it was opted out of injection on purpose, which is the team's call to undo", ns, mesh.NamespaceInjectionName, nsObj.Labels[mesh.NamespaceInjectionName])
	case inj == "none":
		modified := nsObj.DeepCopy()
		if modified.Labels == nil {
			modified.Labels = map[string]string{}
		}
		op := patch.Add(patch.Pointer("metadata", "labels", mesh.NamespaceInjectionName), "enabled")
		if nsObj.Labels == nil {
			op = patch.Add("/metadata/labels", map[string]string{mesh.NamespaceInjectionName: "enabled"})
		}
		p, err := change(patch.Object{APIVersion: coreV1, Kind: "Namespace", Name: ns}, nsObj, op)
		if err != nil {
			return unpatchable("the change of namespace %s does not apply: %v", ns, err)
		}
		return Output{Patches: []patch.Patch{p}, NotSimulated: notSimulated,
			Note: fmt.Sprintf("Nothing labels namespace %s for injection: the patch labels it %s=enabled (with a revisioned istiod, label istio.io/rev with its revision instead); %s of %s.", ns, mesh.NamespaceInjectionName, restart, whose)}
	}
	// The namespace injects: the pods opt out, or predate the label.
	var out Output
	var optedOut []string
	for _, w := range workloadsOf(pods) {
		var pod *corev1.Pod
		for _, p := range pods {
			if workloadOf(p) == w {
				pod = p
				break
			}
		}
		if pod.Labels[injectLabel] != "false" && pod.Annotations[injectLabel] != "false" {
			continue
		}
		if w.Kind != "Deployment" {
			return unpatchable("%s opts out of injection (%s=false on its pods), and only a Deployment's template is patched here: remove it from %s's pod template", w, injectLabel, w)
		}
		meta := map[string]any{}
		if pod.Labels[injectLabel] == "false" {
			meta["labels"] = map[string]any{injectLabel: nil}
		}
		if pod.Annotations[injectLabel] == "false" {
			meta["annotations"] = map[string]any{injectLabel: nil}
		}
		p, err := templatePatch(w, map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": meta}}})
		if err != nil {
			return unpatchable("%v", err)
		}
		out.Patches = append(out.Patches, p)
		optedOut = append(optedOut, w.String())
	}
	if len(out.Patches) == 0 {
		return unpatchable("namespace %s injects sidecars and %s do not opt out: they were created before injection was enabled, and a restart gives them one", ns, whose)
	}
	out.NotSimulated = "it patches " + strings.Join(optedOut, ", ") + ", which the triage does not read (it reads pods), and takes effect when the rollout recreates the pods"
	out.Note = "The patch removes " + injectLabel + "=false from the pod template of " + strings.Join(optedOut, ", ") + ": the rollout it starts recreates the pods with a sidecar."
	return out
}

// templatePatch is an RFC 7386 merge patch of a workload's pod template
// metadata, a kind the triage does not read (it reads the pods). Only maps
// change (labels, annotations), where a merge patch and a strategic one
// agree, and the contract of check's patches is merge, json or create.
func templatePatch(w workload, body map[string]any) (patch.Patch, error) {
	if w.Kind != "Deployment" && w.Kind != "StatefulSet" && w.Kind != "DaemonSet" {
		return patch.Patch{}, fmt.Errorf("%s is no Deployment, StatefulSet or DaemonSet", w)
	}
	b, err := jsonMarshal(body)
	if err != nil {
		return patch.Patch{}, err
	}
	return patch.Patch{APIVersion: appsV1, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Type: patch.Merge, Patch: b}, nil
}
