package remedies

import (
	"context"
	"fmt"

	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// waypointState is the Service's waypoint binding as istiod decides it,
// from the objects the dataplane step read (through the session's cache).
type waypointState struct {
	svc      *corev1.Service
	ns       *corev1.Namespace
	binding  mesh.WaypointBinding
	gateways []*gatewayv1.Gateway // of the Service's namespace
	named    *gatewayv1.Gateway   // the Gateway the label names, if it exists
}

func readWaypoint(ctx context.Context, in *Input) (waypointState, error) {
	var st waypointState
	svc, err := in.Cluster.GetService(ctx, in.Target.Namespace, in.Target.Service)
	if err != nil {
		return st, fmt.Errorf("the Service could not be read: %w", err)
	}
	st.svc = svc
	st.ns, _ = in.Cluster.GetNamespace(ctx, svc.Namespace)
	use := mesh.UseWaypoint(svc.ObjectMeta, "service", st.ns)
	wpNS := svc.Namespace
	if use.Named {
		wpNS = use.Ref.Namespace
	}
	gws, err := cluster.GatewayAPIGateways(ctx, in.Cluster, wpNS)
	st.binding = mesh.BindServiceWaypoint(svc, st.ns, gws, err == nil)
	if wpNS == svc.Namespace {
		st.gateways = gws
	} else {
		st.gateways, _ = cluster.GatewayAPIGateways(ctx, in.Cluster, svc.Namespace)
	}
	for _, gw := range gws {
		if use.Named && gw.Name == use.Ref.Name {
			st.named = gw
		}
	}
	return st, nil
}

// waypointGateway is the create of a waypoint for service traffic, as
// istioctl waypoint apply --for service writes it.
func waypointGateway(ns, name string) (patch.Patch, error) {
	obj := patch.Object{APIVersion: gatewayAPI, Kind: "Gateway", Namespace: ns, Name: name}
	return patch.CreateObject(obj, newObject(obj, map[string]any{
		"gatewayClassName": mesh.WaypointGatewayClass,
		"listeners":        []any{map[string]any{"name": "mesh", "port": mesh.HBONEPort, "protocol": "HBONE"}},
	}, map[string]string{label.IoIstioWaypointFor.Name: mesh.WaypointForService}))
}

// waypointPending is what a new waypoint leads to until istiod deploys it.
var waypointPending = map[string]string{
	"ambient.waypoint-not-ready": "istiod deploys the new waypoint's pod and gives its Gateway an address (seconds, once the image pulls)",
}

// DeployWaypoint creates the waypoint istio.io/use-waypoint names, where
// it names it, for service traffic.
type DeployWaypoint struct{}

func (DeployWaypoint) Meta() Meta {
	return Meta{
		ID:     "deploy-waypoint",
		Causes: []string{"ambient.waypoint-missing"},
		Does:   "creates the waypoint Gateway istio.io/use-waypoint names (class istio-waypoint, HBONE on 15008, for service traffic)",
		Reads:  []string{"gateways.gateway.networking.k8s.io"},
	}
}

func (DeployWaypoint) Compute(ctx context.Context, in *Input) Output {
	st, err := readWaypoint(ctx, in)
	if err != nil {
		return unpatchable("%v", err)
	}
	if st.binding.State != mesh.WaypointMissing {
		return unpatchable("the waypoint the Service names is not missing (istiod: %s)", st.binding.State)
	}
	ref := st.binding.Use.Ref
	p, err := waypointGateway(ref.Namespace, ref.Name)
	if err != nil {
		return unpatchable("%v", err)
	}
	return Output{Patches: []patch.Patch{p}, Expect: waypointPending,
		Note: fmt.Sprintf("The patch creates waypoint %s, which the %s names, as `istioctl waypoint apply -n %s --name %s --for service` would.", ref, st.binding.Use.From, ref.Namespace, ref.Name)}
}

// WaypointForService lets the named waypoint take the Service: its
// istio.io/waypoint-for label admits service traffic (all, where it took
// workload traffic, so that keeps working), or its HBONE listener's
// allowedRoutes admit the Service's namespace besides its own.
type WaypointForService struct{}

func (WaypointForService) Meta() Meta {
	return Meta{
		ID:     "waypoint-for-service",
		Causes: []string{"ambient.waypoint-not-bound"},
		Does:   "sets the waypoint's istio.io/waypoint-for to take service traffic, or admits the Service's namespace in its HBONE listener",
		Reads:  []string{"gateways.gateway.networking.k8s.io"},
	}
}

func (WaypointForService) Compute(ctx context.Context, in *Input) Output {
	st, err := readWaypoint(ctx, in)
	if err != nil {
		return unpatchable("%v", err)
	}
	gw := st.named
	switch {
	case gw == nil:
		return unpatchable("the Gateway the Service names was not read")
	case st.binding.State == mesh.WaypointNotService:
		wp := mesh.WaypointOf(gw)
		next := mesh.WaypointForService
		if wp.TrafficType == mesh.WaypointForWorkload {
			next = mesh.WaypointForAll
		}
		op := patch.Add(patch.Pointer("metadata", "labels", label.IoIstioWaypointFor.Name), next)
		if gw.Labels == nil {
			op = patch.Add("/metadata/labels", map[string]string{label.IoIstioWaypointFor.Name: next})
		}
		p, err := change(objectOf(gatewayAPI, "Gateway", gw), gw, op)
		if err != nil {
			return unpatchable("the change of Gateway %s/%s does not apply: %v", gw.Namespace, gw.Name, err)
		}
		return Output{Patches: []patch.Patch{p}, Note: fmt.Sprintf("The patch sets %s on waypoint %s/%s from %s to %s.", label.IoIstioWaypointFor.Name, gw.Namespace, gw.Name, wp.TrafficType, next)}
	case st.binding.State == mesh.WaypointDenied:
		for i, l := range gw.Spec.Listeners {
			if l.Protocol != "HBONE" || l.Port != mesh.HBONEPort {
				continue
			}
			if ar := l.AllowedRoutes; ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil && *ar.Namespaces.From == gatewayv1.NamespacesFromSelector {
				return unpatchable("the HBONE listener of %s/%s admits namespaces by a selector that namespace %s's labels do not match: widening it is the team's call", gw.Namespace, gw.Name, st.svc.Namespace)
			}
			allowed := map[string]any{"namespaces": map[string]any{
				"from": string(gatewayv1.NamespacesFromSelector),
				"selector": map[string]any{"matchExpressions": []any{map[string]any{
					"key": "kubernetes.io/metadata.name", "operator": "In", "values": []string{gw.Namespace, st.svc.Namespace},
				}}},
			}}
			p, err := change(objectOf(gatewayAPI, "Gateway", gw), gw,
				patch.Test(patch.Pointer("spec", "listeners", i, "name"), string(l.Name)),
				patch.Add(patch.Pointer("spec", "listeners", i, "allowedRoutes"), allowed))
			if err != nil {
				return unpatchable("the change of Gateway %s/%s does not apply: %v", gw.Namespace, gw.Name, err)
			}
			return Output{Patches: []patch.Patch{p}, Note: fmt.Sprintf("The patch lets the HBONE listener %s of waypoint %s/%s admit namespaces %s and %s (it admitted its own only).", l.Name, gw.Namespace, gw.Name, gw.Namespace, st.svc.Namespace)}
		}
		return unpatchable("waypoint %s/%s has no HBONE listener on %d", gw.Namespace, gw.Name, mesh.HBONEPort)
	}
	return unpatchable("the waypoint takes service traffic from this namespace (istiod: %s): the label names a Gateway that is no waypoint (next direction)", st.binding.State)
}

// NameAWaypoint points istio.io/use-waypoint, where it is set (the
// Service or its namespace), at a waypoint instead of a Gateway that is
// none: the one ready waypoint for service traffic of the Service's
// namespace, or a new one (created first: make-before-break).
type NameAWaypoint struct{}

func (NameAWaypoint) Meta() Meta {
	return Meta{
		ID:     "name-a-waypoint",
		Causes: []string{"ambient.waypoint-not-bound"},
		Does:   "relabels istio.io/use-waypoint to a waypoint of the namespace, creating one when there is none",
		Reads:  []string{"gateways.gateway.networking.k8s.io"},
	}
}

func (NameAWaypoint) Compute(ctx context.Context, in *Input) Output {
	st, err := readWaypoint(ctx, in)
	if err != nil {
		return unpatchable("%v", err)
	}
	if st.binding.State != mesh.WaypointNotAGW {
		return unpatchable("the label names a waypoint (istiod: %s): it only has to take the Service's traffic (the direction before)", st.binding.State)
	}
	var ready []*gatewayv1.Gateway
	for _, gw := range st.gateways {
		wp := mesh.WaypointOf(gw)
		if wp.Class == mesh.WaypointGatewayClass && wp.Serves(mesh.WaypointForService) && wp.Ready {
			ready = append(ready, gw)
		}
	}
	var out Output
	name := ""
	switch len(ready) {
	case 0:
		name = "waypoint"
		for _, gw := range st.gateways {
			if gw.Name == name {
				return unpatchable("namespace %s has no ready waypoint and a Gateway named waypoint exists: deploy a waypoint under another name", st.svc.Namespace)
			}
		}
		p, err := waypointGateway(st.svc.Namespace, name)
		if err != nil {
			return unpatchable("%v", err)
		}
		out.Patches = append(out.Patches, p)
		out.Expect = waypointPending
	case 1:
		name = ready[0].Name
	default:
		return unpatchable("namespace %s has %d ready waypoints: which one serves the Service is the team's call", st.svc.Namespace, len(ready))
	}
	labels := map[string]any{label.IoIstioUseWaypoint.Name: name}
	if st.binding.Use.Ref.Namespace != st.svc.Namespace {
		labels[label.IoIstioUseWaypointNamespace.Name] = nil
	}
	body, err := jsonMarshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return unpatchable("%v", err)
	}
	target := patch.Patch{APIVersion: coreV1, Kind: "Service", Namespace: st.svc.Namespace, Name: st.svc.Name, Type: patch.Merge, Patch: body}
	if st.binding.Use.From == "namespace label" {
		target = patch.Patch{APIVersion: coreV1, Kind: "Namespace", Name: st.svc.Namespace, Type: patch.Merge, Patch: body}
	}
	out.Patches = append(out.Patches, target)
	what := "waypoint " + st.svc.Namespace + "/" + name
	if len(ready) == 0 {
		what = "a new waypoint " + st.svc.Namespace + "/" + name + ", created first"
	}
	out.Note = fmt.Sprintf("The patch moves the %s %s from %s, which is no waypoint, to %s.", st.binding.Use.From, label.IoIstioUseWaypoint.Name, st.binding.Use.Ref, what)
	return out
}

// IngressUseWaypoint labels the Service istio.io/ingress-use-waypoint=true
// so that a gateway caller sends through the Service's waypoint.
type IngressUseWaypoint struct{}

func (IngressUseWaypoint) Meta() Meta {
	return Meta{
		ID:     "ingress-use-waypoint",
		Causes: []string{"ambient.sidecar-bypasses-waypoint"},
		Does:   "labels the Service istio.io/ingress-use-waypoint=true, for a gateway caller",
	}
}

func (IngressUseWaypoint) Compute(ctx context.Context, in *Input) Output {
	if src, _ := in.Facts["dataplane_source"].(string); src != mesh.CallerGateway {
		return unpatchable("the caller is no gateway (%s): only gateways honour %s", dashIfEmpty(src), label.IoIstioIngressUseWaypoint.Name)
	}
	svc, err := in.Cluster.GetService(ctx, in.Target.Namespace, in.Target.Service)
	if err != nil {
		return unpatchable("the Service could not be read: %v", err)
	}
	op := patch.Add(patch.Pointer("metadata", "labels", label.IoIstioIngressUseWaypoint.Name), "true")
	if svc.Labels == nil {
		op = patch.Add("/metadata/labels", map[string]string{label.IoIstioIngressUseWaypoint.Name: "true"})
	}
	p, err := change(objectOf(coreV1, "Service", svc), svc, op)
	if err != nil {
		return unpatchable("the change of Service %s/%s does not apply: %v", svc.Namespace, svc.Name, err)
	}
	return Output{Patches: []patch.Patch{p}, Note: "The patch labels Service " + svc.Namespace + "/" + svc.Name + " " + label.IoIstioIngressUseWaypoint.Name + "=true: the gateway then sends its requests through the waypoint."}
}

// MoveCallerToAmbient moves the caller's namespace from sidecars to
// ambient: its pods leave their sidecar and ztunnel sends their service
// traffic through the waypoint once they are recreated.
type MoveCallerToAmbient struct{}

func (MoveCallerToAmbient) Meta() Meta {
	return Meta{
		ID:     "move-caller-to-ambient",
		Causes: []string{"ambient.sidecar-bypasses-waypoint"},
		Does:   "labels the caller's namespace istio.io/dataplane-mode=ambient and drops its istio-injection label",
		Reads:  []string{"namespaces"},
	}
}

func (MoveCallerToAmbient) Compute(ctx context.Context, in *Input) Output {
	if in.Target.Source == nil {
		return unpatchable("no caller was named (--from): whose namespace moves is not known")
	}
	if src, _ := in.Facts["dataplane_source"].(string); src == mesh.CallerGateway {
		return unpatchable("the caller is a gateway, which keeps its Envoy: let it use the waypoint instead (next direction)")
	}
	ns, err := in.Cluster.GetNamespace(ctx, in.Target.Source.Namespace)
	if err != nil {
		return unpatchable("namespace %s could not be read: %v", in.Target.Source.Namespace, err)
	}
	labels := map[string]any{label.IoIstioDataplaneMode.Name: mesh.DataplaneModeAmbient}
	if _, ok := ns.Labels[mesh.NamespaceInjectionName]; ok {
		labels[mesh.NamespaceInjectionName] = nil
	}
	if rev := ns.Labels[label.IoIstioRev.Name]; rev != "" {
		labels[label.IoIstioRev.Name] = nil
	}
	body, err := jsonMarshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return unpatchable("%v", err)
	}
	return Output{
		Patches:      []patch.Patch{{APIVersion: coreV1, Kind: "Namespace", Name: ns.Name, Type: patch.Merge, Patch: body}},
		NotSimulated: "the caller's pods leave their sidecar only when they are recreated, which the simulation of the configuration cannot do",
		Note:         "The patch moves namespace " + ns.Name + " to ambient; every workload of it changes data plane when its pods are recreated.",
	}
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "not known"
	}
	return s
}
