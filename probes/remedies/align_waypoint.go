package remedies

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"istio.io/api/label"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// AlignRemoteWaypoint gives a global Service the same waypoint in every
// cluster: the cluster that names none (or another) gets the
// istio.io/use-waypoint label the other names, on the object that decides
// its binding there (the Service when it or the other cluster's Service
// carries the label, else the namespace), and the waypoint Gateway as the
// other cluster has it when it lacks one. The side that names a waypoint
// is the model, not the one without: istio/istio#60985's maintainers call
// a waypoint removed from one cluster an incorrect setup (scale it to
// zero in every cluster instead). Two different waypoints: the current
// cluster's is the model.
type AlignRemoteWaypoint struct{}

func (AlignRemoteWaypoint) Meta() Meta {
	return Meta{
		ID:     "align-remote-waypoint",
		Causes: []string{"multicluster.waypoint-differs"},
		Does:   "sets istio.io/use-waypoint on the Service or namespace of the cluster whose binding differs to the other cluster's value (merge patch, --context for a remote cluster), and creates there the waypoint Gateway as read in the other cluster when it has none",
		Reads:  []string{"what the multicluster-waypoint probe reads", "gateways.gateway.networking.k8s.io of the waypoint's namespace in the cluster patched"},
	}
}

func (AlignRemoteWaypoint) Compute(ctx context.Context, in *Input) Output {
	ws := callerview.ReadClusterWaypoints(ctx, in.Cluster, in.Target)
	if ws.RemotesUnread != "" {
		return unpatchable("%s", ws.RemotesUnread)
	}
	if ws.MeshUnknown != "" {
		return unpatchable("%s: which Services are global is not known", ws.MeshUnknown)
	}
	remotes, _ := cluster.RemoteClusters(in.Cluster)
	clusterOf := func(cw callerview.ClusterWaypoint) cluster.Cluster {
		if cw.Local {
			return in.Cluster
		}
		for _, r := range remotes {
			if r.Context == cw.Context {
				return r.Cluster
			}
		}
		return nil
	}
	var local *callerview.ClusterWaypoint
	for i := range ws.Clusters {
		if ws.Clusters[i].Local {
			local = &ws.Clusters[i]
		}
	}
	if local == nil || local.Service == nil {
		return unpatchable("the Service was not read in the current cluster")
	}
	var patches []patch.Patch
	var notes, remote, why []string
	for _, cw := range ws.Clusters {
		if cw.Local || cw.Service == nil || !aligned(ws.Mesh, *local, cw) {
			continue
		}
		model, dest := *local, cw
		if !local.Binding.Use.Named && cw.Binding.Use.Named || local.Binding.Use == cw.Binding.Use && local.Gateway == nil {
			model, dest = cw, *local
		}
		ref := model.Binding.Use.Ref
		if !model.Binding.Use.Named || model.Gateway == nil {
			why = append(why, fmt.Sprintf("%s names waypoint %s, whose Gateway it does not have either: there is no Gateway to copy", model.Context, ref))
			continue
		}
		destCluster := clusterOf(dest)
		if destCluster == nil {
			continue
		}
		inContext := ""
		if !dest.Local {
			inContext = dest.Context
			remote = append(remote, dest.Context)
		}
		if dest.Binding.Use.Named != model.Binding.Use.Named || dest.Binding.Use.Ref != ref {
			p, note, err := waypointLabelPatch(model, dest, in.Target.Namespace)
			if err != nil {
				return unpatchable("%v", err)
			}
			p.Context = inContext
			patches = append(patches, p)
			notes = append(notes, note)
		}
		// The Gateway in the destination cluster: read there, in the
		// waypoint's namespace, whatever its binding named before.
		gws, err := cluster.GatewayAPIGateways(ctx, destCluster, ref.Namespace)
		if err != nil && !(apierrors.IsNotFound(err) && cluster.IsMissingKind(err)) {
			why = append(why, fmt.Sprintf("the Gateways of %s in %s could not be read (%v): whether waypoint %s exists there is not known", ref.Namespace, dest.Context, err, ref))
			continue
		}
		if slices.ContainsFunc(gws, func(g *gatewayv1.Gateway) bool { return g.Name == ref.Name && g.Namespace == ref.Namespace }) {
			continue
		}
		p, err := copiedGateway(model.Gateway)
		if err != nil {
			return unpatchable("%v", err)
		}
		p.Context = inContext
		patches = append(patches, p)
		notes = append(notes, fmt.Sprintf("creates in %s waypoint Gateway %s as %s has it (class %s)", dest.Context, ref, model.Context, model.Gateway.Spec.GatewayClassName))
	}
	if len(patches) == 0 {
		if len(why) > 0 {
			return unpatchable("%s", strings.Join(why, "; "))
		}
		return unpatchable("no cluster read gives the global Service another waypoint than the current one")
	}
	out := Output{Patches: patches, Note: "The patch " + strings.Join(notes, "; ") + ": every cluster's istiod then binds the Service to the same waypoint."}
	if len(remote) > 0 {
		slices.Sort(remote)
		out.NotSimulated = remoteNotSimulated(strings.Join(slices.Compact(remote), ","))
	}
	return out
}

// aligned: the Service is global in both clusters and both bindings are
// known (the probe's conditions for comparing them); they then differ
// in label or in Gateway.
func aligned(m mesh.MeshConfig, local, other callerview.ClusterWaypoint) bool {
	ls, os := mesh.ServiceScopeOf(m, local.Service, local.Namespace), mesh.ServiceScopeOf(m, other.Service, other.Namespace)
	if !ls.Global || !os.Global {
		return false
	}
	for _, cw := range []callerview.ClusterWaypoint{local, other} {
		if cw.Binding.Use.NamespaceUnknown || cw.Binding.Use.Named && cw.GatewaysUnknown != "" {
			return false
		}
	}
	lu, ou := local.Binding.Use, other.Binding.Use
	return lu.Named != ou.Named || lu.Ref != ou.Ref || lu.Named && (local.Gateway == nil) != (other.Gateway == nil)
}

// waypointLabelPatch sets on dest the waypoint model names. The Service
// is patched when its own label decides dest's binding (a Service label
// overrides the namespace's, "none" included) or when the model's comes
// from its Service; else the namespace.
func waypointLabelPatch(model, dest callerview.ClusterWaypoint, namespace string) (patch.Patch, string, error) {
	ref := model.Binding.Use.Ref
	onService := dest.Binding.Use.From == "service label" || dest.Binding.Use.OptedOut || model.Binding.Use.From == "service label"
	var obj patch.Object
	var typed metav1.Object
	if onService {
		obj, typed = objectOf(coreV1, "Service", dest.Service), dest.Service
	} else {
		if dest.Namespace == nil {
			return patch.Patch{}, "", fmt.Errorf("namespace %s of %s was not read", namespace, dest.Context)
		}
		obj, typed = objectOf(coreV1, "Namespace", dest.Namespace), dest.Namespace
	}
	set := map[string]string{label.IoIstioUseWaypoint.Name: ref.Name}
	if _, has := typed.GetLabels()[label.IoIstioUseWaypointNamespace.Name]; has || ref.Namespace != namespace {
		set[label.IoIstioUseWaypointNamespace.Name] = ref.Namespace
	}
	var ops []patch.Op
	if typed.GetLabels() == nil {
		ops = []patch.Op{patch.Add(patch.Pointer("metadata", "labels"), set)}
	} else {
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ops = append(ops, patch.Add(patch.Pointer("metadata", "labels", k), set[k]))
		}
	}
	p, err := change(obj, typed, ops...)
	if err != nil {
		return patch.Patch{}, "", fmt.Errorf("the change of %s %s in %s does not apply: %v", obj.Kind, obj.Name, dest.Context, err)
	}
	return p, fmt.Sprintf("labels %s %s of %s %s=%s, as %s's %s names it", strings.ToLower(obj.Kind), obj.Name, dest.Context, label.IoIstioUseWaypoint.Name, ref.Name, model.Context, model.Binding.Use.From), nil
}

// copiedGateway is gw as a new object: its name, namespace, labels and
// spec, without what the API server and controllers write (status,
// uid, resourceVersion, owner references).
func copiedGateway(gw *gatewayv1.Gateway) (patch.Patch, error) {
	b, err := json.Marshal(gw.Spec)
	if err != nil {
		return patch.Patch{}, err
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		return patch.Patch{}, err
	}
	obj := patch.Object{APIVersion: gatewayAPI, Kind: "Gateway", Namespace: gw.Namespace, Name: gw.Name}
	return patch.CreateObject(obj, newObject(obj, spec, gw.Labels))
}
