package remedies

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingk8s "k8s.io/api/networking/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// AdmitHBONE adds TCP 15008 beside the app's port in every rule of the
// NetworkPolicies that drop the path's HBONE and admit the app's port: the
// same peers reach the pods on HBONE as on the app's port, nothing else
// of the policies changes. A policy that admits nothing (a default deny)
// needs a rule of the team's, and is said so.
type AdmitHBONE struct{}

func (AdmitHBONE) Meta() Meta {
	return Meta{
		ID:     "admit-hbone",
		Causes: []string{"ambient.hbone-blocked"},
		Does:   "adds TCP 15008 to the NetworkPolicy rules that admit the app's port (JSON patch)",
		Reads:  []string{"networkpolicies"},
	}
}

func (AdmitHBONE) Compute(ctx context.Context, in *Input) Output {
	names, _ := in.Facts["hbone_netpol_policies"].([]string)
	if len(names) == 0 {
		return unpatchable("the ambient-policy step names no NetworkPolicy that drops HBONE: the drop is outside Kubernetes NetworkPolicy (next direction)")
	}
	appPorts := in.appPorts(ctx)
	var out Output
	var notes, untouched []string
	for _, ref := range names {
		ns, name, ok := splitRef(ref)
		if !ok {
			continue
		}
		pols, err := cluster.NetworkPolicies(ctx, in.Cluster, ns)
		if err != nil {
			return unpatchable("the NetworkPolicies of %s could not be read again: %v", ns, err)
		}
		var np *networkingk8s.NetworkPolicy
		for i := range pols {
			if pols[i].Name == name {
				np = &pols[i]
			}
		}
		if np == nil {
			return unpatchable("NetworkPolicy %s is not among the objects read", ref)
		}
		var ops []patch.Op
		for i, r := range np.Spec.Ingress {
			if admitsApp(r.Ports, appPorts) && !admitsHBONE(r.Ports) {
				ops = append(ops, patch.Add(patch.Pointer("spec", "ingress", i, "ports", "-"), hbonePort()))
			}
		}
		for i, r := range np.Spec.Egress {
			if admitsApp(r.Ports, appPorts) && !admitsHBONE(r.Ports) {
				ops = append(ops, patch.Add(patch.Pointer("spec", "egress", i, "ports", "-"), hbonePort()))
			}
		}
		if len(ops) == 0 {
			untouched = append(untouched, ref)
			continue
		}
		p, err := change(objectOf(k8sNetworking, "NetworkPolicy", np), np, ops...)
		if err != nil {
			return unpatchable("the change of NetworkPolicy %s does not apply: %v", ref, err)
		}
		out.Patches = append(out.Patches, p)
		notes = append(notes, fmt.Sprintf("%s (%s)", ref, plural(len(ops), "1 rule", fmt.Sprintf("%d rules", len(ops)))))
	}
	if len(out.Patches) == 0 {
		return unpatchable("no rule of %s admits the app's port (%s): admit TCP 15008 from the Service's callers in a rule of your own", strings.Join(names, ", "), strings.Join(appPorts, ", "))
	}
	out.Note = "The patch adds TCP " + fmt.Sprint(mesh.HBONEPort) + " beside the app's port in " + strings.Join(notes, ", ") + "."
	if len(untouched) > 0 {
		out.Note += " " + strings.Join(untouched, ", ") + plural(len(untouched), " admits", " admit") + " nothing and stays as it is: the rules above admit the callers."
	}
	return out
}

func hbonePort() map[string]any {
	return map[string]any{"protocol": "TCP", "port": mesh.HBONEPort}
}

// appPorts are the Service's target ports on its pods, as numbers and names.
func (in *Input) appPorts(ctx context.Context) []string {
	_, sd, err := in.ServiceData(ctx)
	if err != nil {
		return nil
	}
	pods, _ := in.Pods(ctx)
	var out []string
	add := func(s string) {
		if s != "" && !contains(out, s) {
			out = append(out, s)
		}
	}
	for _, sp := range sd.Service.Spec.Ports {
		if in.Target.Port != 0 && sp.Port != in.Target.Port {
			continue
		}
		if sp.TargetPort.StrVal != "" {
			add(sp.TargetPort.StrVal)
		}
		for _, pod := range pods {
			if n, ok := mesh.TargetPortOf(sp, pod); ok {
				add(fmt.Sprint(n))
				add(portName(pod, n))
			}
		}
		if len(pods) == 0 && sp.TargetPort.IntVal != 0 {
			add(fmt.Sprint(sp.TargetPort.IntVal))
		}
	}
	return out
}

func portName(pod *corev1.Pod, n int32) string {
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.ContainerPort == n {
				return cp.Name
			}
		}
	}
	return ""
}

// admitsApp: the rule lists a port of the app (a rule without ports
// admits every port, HBONE's too).
func admitsApp(ports []networkingk8s.NetworkPolicyPort, app []string) bool {
	for _, p := range ports {
		if p.Port != nil && contains(app, p.Port.String()) {
			return true
		}
	}
	return false
}

func admitsHBONE(ports []networkingk8s.NetworkPolicyPort) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.IntVal == mesh.HBONEPort:
			return true
		case p.EndPort != nil && p.Port.IntVal <= mesh.HBONEPort && *p.EndPort >= mesh.HBONEPort:
			return true
		}
	}
	return false
}
