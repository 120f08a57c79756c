package remedies

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
	"github.com/meshtriage/meshtriage/probes/podfacts"
)

// BindAllAddresses tells an app its spec binds to loopback to listen on
// all addresses instead, where the sidecar's inbound (which dials the
// pod's IP) reaches it: a JSON patch of the workload's pod template that
// tests the app container's name and the argument or variable as the pods
// carry it, then replaces the loopback host with the wildcard. An app
// whose loopback bind is its own default or config file has nothing in
// the spec to change.
type BindAllAddresses struct{}

func (BindAllAddresses) Meta() Meta {
	return Meta{
		ID:     "bind-all-addresses",
		Causes: []string{"app.localhost-bound"},
		Does:   "replaces the loopback host of the app container's bind argument or variable with 0.0.0.0 (:: for ::1) in the pod template of the Service's workloads (JSON patch, testing the old value)",
	}
}

func (BindAllAddresses) Compute(ctx context.Context, in *Input) Output {
	_, sd, err := in.ServiceData(ctx)
	if err != nil {
		return unpatchable("%v", err)
	}
	pods, _ := in.Pods(ctx)
	sp := podfacts.ServicePortOf(sd.Service, in.Target.Port)
	if sp == nil {
		return unpatchable("the Service has no port")
	}
	var out Output
	var names, lines []string
	patched := map[workload]bool{}
	for _, pod := range pods {
		w := workloadOf(pod)
		if patched[w] || mesh.PodSidecar(pod) == mesh.SidecarNone {
			continue
		}
		port := podfacts.TargetPortOn(sp, pod)
		apps := mesh.AppContainers(pod)
		for i, c := range apps {
			b, ok := podfacts.SpecBind(c, port)
			if !ok || b.Where != podfacts.BindLoopback {
				continue
			}
			if !w.restartable() {
				return unpatchable("pod %s/%s: it has no Deployment, StatefulSet or DaemonSet whose template to change", pod.Namespace, pod.Name)
			}
			p, err := bindPatch(w, apps, i, b)
			if err != nil {
				return unpatchable("%v", err)
			}
			out.Patches = append(out.Patches, p)
			patched[w] = true
			names = append(names, w.String())
			lines = append(lines, fmt.Sprintf("%s's %s (%s)", w.Name, c.Name, b.Line))
			break
		}
	}
	if len(out.Patches) == 0 {
		return unpatchable("no app container of the Service's pods is told its loopback address by an argument or variable of its spec: the bind is the app's default or its config file's, in no object the triage read")
	}
	out.NotSimulated = "it patches " + strings.Join(names, ", ") + ", which the triage does not read (it reads the pods), and the app listens anew only when the rollout recreates the pods"
	out.Note = "The patch makes " + strings.Join(lines, ", ") + " listen on all addresses, testing first that the template still says what the pods do; the rollout it starts recreates the pods."
	return out
}

// bindPatch is the JSON patch of the workload's template that replaces
// b's value in the app container at index i of apps, which is its index in
// the template: the injector adds istio-proxy (and istio-init) around the
// app containers, never between them. The test operations make a template
// that differs refuse the patch.
func bindPatch(w workload, apps []corev1.Container, i int, b podfacts.Bind) (patch.Patch, error) {
	if w.Kind != "Deployment" && w.Kind != "StatefulSet" && w.Kind != "DaemonSet" {
		return patch.Patch{}, fmt.Errorf("%s is no Deployment, StatefulSet or DaemonSet", w)
	}
	container := patch.Pointer("spec", "template", "spec", "containers", i)
	value := container + patch.Pointer(b.Field, b.Index)
	if b.Field == "env" {
		value += "/value"
	}
	// The template as the pods show it: what the patch must apply to.
	doc, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": apps}}}})
	if err != nil {
		return patch.Patch{}, err
	}
	p, _, err := patch.JSONPatch(patch.Object{APIVersion: appsV1, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}, doc,
		patch.Test(container+"/name", apps[i].Name), patch.Test(value, b.Value), patch.Replace(value, b.AllAddresses()))
	return p, err
}
