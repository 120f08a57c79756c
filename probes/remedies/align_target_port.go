package remedies

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// AlignTargetPort points a Service port whose targetPort no container of
// the selected pods declares at the port the app does declare: the only
// one its app containers have, else the one named like the Service port.
// It names the container port by its name when it has one, so the two
// cannot drift apart again. Which port serves is never guessed among
// several.
type AlignTargetPort struct{}

func (AlignTargetPort) Meta() Meta {
	return Meta{
		ID:     "align-target-port",
		Causes: []string{"service.port-mismatch"},
		Does:   "sets the Service port's targetPort to the container port the pods declare (JSON patch of the Service)",
	}
}

func (AlignTargetPort) Compute(ctx context.Context, in *Input) Output {
	_, sd, err := in.ServiceData(ctx)
	if err != nil {
		return unpatchable("%v", err)
	}
	pods, _ := in.Pods(ctx)
	if len(pods) == 0 {
		return unpatchable("the Service selects no pod the triage read, so no container port to align with")
	}
	svc := sd.Service
	var ops []patch.Op
	var notes []string
	for i, sp := range svc.Spec.Ports {
		if in.Target.Port != 0 && sp.Port != in.Target.Port {
			continue
		}
		if declared(sp, pods) {
			continue
		}
		cp, why := containerPortFor(sp, pods)
		if why != "" {
			return unpatchable("port %d: %s", sp.Port, why)
		}
		target := intstr.FromInt32(cp.ContainerPort)
		if cp.Name != "" {
			target = intstr.FromString(cp.Name)
		}
		ops = append(ops, patch.Test(patch.Pointer("spec", "ports", i, "port"), sp.Port), patch.Replace(patch.Pointer("spec", "ports", i, "targetPort"), target))
		notes = append(notes, fmt.Sprintf("points port %d (targetPort %s, which no container declares) at container port %s (%d)", sp.Port, sp.TargetPort.String(), target.String(), cp.ContainerPort))
	}
	if len(ops) == 0 {
		return unpatchable("every targetPort of %s/%s matches a container port of its pods", svc.Namespace, svc.Name)
	}
	p, err := change(objectOf(coreV1, "Service", svc), svc, ops...)
	if err != nil {
		return unpatchable("the change of Service %s/%s does not apply: %v", svc.Namespace, svc.Name, err)
	}
	return Output{Patches: []patch.Patch{p}, Note: "The patch " + strings.Join(notes, "; ") + "."}
}

// declared: every selected pod declares the port the targetPort resolves to.
func declared(sp corev1.ServicePort, pods []*corev1.Pod) bool {
	for _, pod := range pods {
		port, ok := mesh.TargetPortOf(sp, pod)
		if !ok {
			return false
		}
		found := false
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				found = found || cp.ContainerPort == port
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// containerPortFor is the app's port the Service port should reach.
func containerPortFor(sp corev1.ServicePort, pods []*corev1.Pod) (corev1.ContainerPort, string) {
	var ports []corev1.ContainerPort
	seen := map[string]bool{}
	for _, pod := range pods {
		for _, c := range pod.Spec.Containers {
			if c.Name == mesh.ProxyContainer {
				continue
			}
			for _, cp := range c.Ports {
				if cp.Protocol != "" && cp.Protocol != sp.Protocol && sp.Protocol != "" {
					continue
				}
				k := fmt.Sprintf("%s/%d", cp.Name, cp.ContainerPort)
				if !seen[k] {
					seen[k] = true
					ports = append(ports, cp)
				}
			}
		}
	}
	switch len(ports) {
	case 0:
		return corev1.ContainerPort{}, "the pods' app containers declare no port: which one the app listens on is not in the cluster"
	case 1:
		return ports[0], ""
	}
	var named []corev1.ContainerPort
	for _, cp := range ports {
		if cp.Name != "" && cp.Name == sp.Name {
			named = append(named, cp)
		}
	}
	if len(named) == 1 {
		return named[0], ""
	}
	var list []string
	for _, cp := range ports {
		list = append(list, fmt.Sprintf("%s %d", cp.Name, cp.ContainerPort))
	}
	return corev1.ContainerPort{}, "the app containers declare several ports (" + strings.Join(list, ", ") + ") and none is named like the Service port: which one serves it is the team's call"
}
