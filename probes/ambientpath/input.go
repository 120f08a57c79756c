// Package ambientpath is what the ambient probes (dataplane,
// ambient-policy, ztunnel, waypoint) read in common: the Service, its
// namespace and pods, the caller and its namespace, the waypoint the
// Service names with its Gateway and pods, and the ztunnel pods; and
// whether ztunnel or a waypoint carries any of the traffic.
package ambientpath

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/readgroup"
)

// Input is what the ambient probes (dataplane, ambient-policy,
// ztunnel, waypoint) read in common: the Service, its namespace and pods,
// the caller and its namespace, and the waypoint the Service names with
// its Gateway and pods. Each probe fetches it; the read cache makes the
// reads happen once per wave.
type Input struct {
	Service          *corev1.Service
	Namespace        *corev1.Namespace
	NamespaceProblem string
	Pods             []corev1.Pod

	Source           *corev1.Pod
	SourceNamespace  *corev1.Namespace
	SourceProblem    string
	SourceNSProblem  string
	SourceNotFound   bool
	ControlPlane     string
	Binding          mesh.WaypointBinding
	GatewaysProblem  string
	WaypointPods     []corev1.Pod
	WaypointProblem  string
	WaypointPodsRead bool
}

// Fetch fails only when the Service or its pods cannot be read.
func Fetch(ctx context.Context, c cluster.Cluster, t cluster.Target) (Input, string, error) {
	in := Input{ControlPlane: istioconfig.ControlPlane(c)}
	var (
		svcErr, nsErr, srcErr error
		g                     readgroup.Group
	)
	g.Go(func() { in.Service, svcErr = c.GetService(ctx, t.Namespace, t.Service) })
	g.Go(func() { in.Namespace, nsErr = c.GetNamespace(ctx, t.Namespace) })
	if t.Source != nil {
		g.Go(func() { in.Source, srcErr = c.GetPod(ctx, t.Source.Namespace, t.Source.Name) })
	}
	g.Wait()
	if svcErr != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), svcErr
	}
	if nsErr != nil {
		in.Namespace = nil
		in.NamespaceProblem = cluster.AccessProblem("get namespace "+t.Namespace, nsErr)
	}
	switch {
	case t.Source == nil:
	case apierrors.IsNotFound(srcErr):
		in.Source, in.SourceNotFound = nil, true
	case srcErr != nil:
		in.Source = nil
		in.SourceProblem = cluster.AccessProblem("get pod "+t.Source.String(), srcErr)
	}

	in.Binding = mesh.BindServiceWaypoint(in.Service, in.Namespace, nil, false)
	var (
		podsErr  error
		gws      []*gatewayv1.Gateway
		gwsErr   error
		wpPods   []corev1.Pod
		wpErr    error
		second   readgroup.Group
		named    = in.Binding.Use.Named
		wp       = in.Binding.Use.Ref
		sourceNS = in.Source != nil && in.Source.Namespace != t.Namespace
	)
	if len(in.Service.Spec.Selector) > 0 {
		second.Go(func() { in.Pods, podsErr = c.ListPods(ctx, t.Namespace, in.Service.Spec.Selector) })
	}
	if sourceNS {
		var err error
		second.Go(func() {
			in.SourceNamespace, err = c.GetNamespace(ctx, in.Source.Namespace)
			if err != nil {
				in.SourceNamespace = nil
				in.SourceNSProblem = cluster.AccessProblem("get namespace "+in.Source.Namespace, err)
			}
		})
	}
	if named {
		second.Go(func() { gws, gwsErr = cluster.GatewayAPIGateways(ctx, c, wp.Namespace) })
		second.Go(func() { wpPods, wpErr = c.ListPods(ctx, wp.Namespace, mesh.WaypointPodSelector(wp.Name)) })
	}
	second.Wait()
	if podsErr != nil {
		return in, fmt.Sprintf("list pods of service %s/%s", t.Namespace, t.Service), podsErr
	}
	sort.Slice(in.Pods, func(i, j int) bool { return in.Pods[i].Name < in.Pods[j].Name })
	if in.Source != nil && !sourceNS {
		in.SourceNamespace = in.Namespace
	}
	if named {
		known := true
		switch {
		case gwsErr == nil:
		case apierrors.IsNotFound(gwsErr) && cluster.IsMissingKind(gwsErr):
			// The Gateway API is not installed: no Gateway exists.
			gws = nil
		default:
			known = false
			in.GatewaysProblem = cluster.AccessProblem("list gateways.gateway.networking.k8s.io in "+wp.Namespace, gwsErr)
		}
		in.Binding = mesh.BindServiceWaypoint(in.Service, in.Namespace, gws, known)
		switch {
		case wpErr != nil:
			in.WaypointProblem = cluster.AccessProblem("list pods of waypoint "+wp.String(), wpErr)
		case len(wpPods) == 0 && inputOnly(c):
			// Not read is not absent: a dump or recording that holds no
			// pod of the waypoint may have left them out (a dump of the
			// caller's pods only); a live cluster answers for itself.
			in.WaypointProblem = "the input holds no pod of waypoint " + wp.String() + ": whether it has a ready one is not known"
		default:
			in.WaypointPods, in.WaypointPodsRead = wpPods, true
			sort.Slice(in.WaypointPods, func(i, j int) bool { return in.WaypointPods[i].Name < in.WaypointPods[j].Name })
			in.Binding = mesh.GatewaySandwich(in.Binding, in.WaypointPods)
		}
	}
	return in, "", nil
}

// inputOnly: c serves an input (a dump, a recording), which answers only
// for what it holds, not a live cluster.
func inputOnly(c cluster.Cluster) bool {
	_, ok := cluster.Uncached(c).(cluster.PodsHolder)
	return ok
}

// CallerKind is what the caller is to the data plane: ambient (enrolled),
// sidecar, gateway, waypoint (a waypoint's pod, whose istio-proxy is no
// sidecar), or none (outside the mesh, not enrolled, or pending).
func CallerKind(pod *corev1.Pod) string {
	if gw, _ := mesh.GatewayPod(pod); gw {
		return mesh.CallerGateway
	}
	d := mesh.DataPlaneOf(pod, nil)
	switch {
	case d.Mode == mesh.DataPlaneWaypoint:
		return mesh.DataPlaneWaypoint
	case d.Mode == mesh.DataPlaneSidecar:
		return mesh.CallerSidecar
	case d.Enrolled():
		return mesh.CallerAmbient
	}
	return mesh.CallerNone
}

// OnPath: ztunnel or a waypoint carries some of the traffic: the
// caller or a pod of the Service is in ambient (enrolled or meant to be),
// or the Service names a waypoint.
func (in Input) OnPath() bool {
	if in.Binding.Use.Named {
		return true
	}
	if in.Source != nil {
		if m := mesh.DataPlaneOf(in.Source, in.SourceNamespace).Mode; m == mesh.DataPlaneAmbient || m == mesh.DataPlaneWaypoint {
			return true
		}
	}
	for i := range in.Pods {
		if mesh.DataPlaneOf(&in.Pods[i], in.Namespace).Mode == mesh.DataPlaneAmbient {
			return true
		}
	}
	return false
}

// ListZtunnels lists ztunnel's pods in the control plane's namespace and,
// when it has none, in every namespace: ztunnel need not share istiod's
// (GKE installs it in kube-system). err is the first list's failure;
// problem says the wider list could not be read, so that which nodes have
// a ztunnel is unknown.
func ListZtunnels(ctx context.Context, c cluster.Cluster, controlPlane string) (pods []corev1.Pod, problem string, err error) {
	sel := map[string]string{"app": mesh.ZtunnelApp}
	pods, err = c.ListPods(ctx, controlPlane, sel)
	if err != nil || len(pods) > 0 {
		return pods, "", err
	}
	all, aerr := c.ListPods(ctx, metav1.NamespaceAll, sel)
	if aerr != nil {
		return nil, "no ztunnel pod in " + controlPlane + "; " + cluster.AccessProblem("list ztunnel pods in every namespace", aerr) + ": which nodes have one is unknown", nil
	}
	// A dump of the application's namespaces holds no ztunnel because it
	// holds nothing of the control plane: not read is not absent.
	if len(all) == 0 && cluster.InputLacksPods(c, controlPlane) {
		return nil, "the input holds no pod of " + controlPlane + " and no ztunnel pod: which nodes run a ztunnel is not known", nil
	}
	return all, "", nil
}
