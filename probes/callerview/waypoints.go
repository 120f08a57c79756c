package callerview

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/readgroup"
)

// ClusterWaypoint is the target Service's waypoint binding as one
// cluster's registry gives it to istiod: istiod builds each cluster's
// ServiceInfo from that cluster's own Service, namespace and waypoint
// Gateways (ambient/services.go GlobalNestedWorkloadServicesCollection:
// the waypoints indexed by the cluster's ID; serviceServiceBuilder →
// fetchWaypointForService).
type ClusterWaypoint struct {
	Context string
	Local   bool
	// Service is nil when not found (ServiceNotFound) or not read
	// (ServiceUnknown).
	Service         *corev1.Service
	ServiceNotFound bool
	ServiceUnknown  string
	// Namespace is the Service's namespace in this cluster (nil when not
	// read: NamespaceUnknown).
	Namespace        *corev1.Namespace
	NamespaceUnknown string
	// Binding is mesh.BindServiceWaypoint over what was read; Gateway the
	// Gateway the use-waypoint label names, as read (nil when there is
	// none or the Gateways were not read: GatewaysUnknown).
	Binding         mesh.WaypointBinding
	Gateway         *gatewayv1.Gateway
	GatewaysUnknown string
}

// ClusterWaypoints is the target Service's waypoint binding in every
// cluster read, with the mesh config of the current cluster's istiod,
// which decides the Service's scope in every cluster
// (serviceServiceBuilder reads the local istiod's meshConfig for remote
// Services too).
type ClusterWaypoints struct {
	Clusters      []ClusterWaypoint
	RemotesUnread string
	Mesh          mesh.MeshConfig
	MeshUnknown   string
}

// ReadClusterWaypoints reads, in the current context and in each remote
// one, the target Service, its namespace and the Gateways of the
// namespace its waypoint label names.
func ReadClusterWaypoints(ctx context.Context, c cluster.Cluster, t cluster.Target) ClusterWaypoints {
	var out ClusterWaypoints
	remotes, unread := cluster.RemoteClusters(c)
	out.RemotesUnread = unread
	all := append([]cluster.Remote{{Context: c.Info().Context, Cluster: c}}, remotes...)
	out.Clusters = make([]ClusterWaypoint, len(all))
	var g readgroup.Group
	g.Go(func() {
		m, err := istioconfig.ReadMeshConfig(ctx, c)
		out.Mesh = m
		if err != nil {
			out.MeshUnknown = cluster.AccessProblem("read the mesh config", err)
		}
	})
	for i, r := range all {
		g.Go(func() { out.Clusters[i] = readClusterWaypoint(ctx, r, t, i == 0) })
	}
	g.Wait()
	return out
}

func readClusterWaypoint(ctx context.Context, r cluster.Remote, t cluster.Target, local bool) ClusterWaypoint {
	out := ClusterWaypoint{Context: r.Context, Local: local}
	if out.Context == "" {
		out.Context = "(current)"
	}
	c := r.Cluster
	var svcErr, nsErr error
	var g readgroup.Group
	g.Go(func() { out.Service, svcErr = c.GetService(ctx, t.Namespace, t.Service) })
	g.Go(func() { out.Namespace, nsErr = c.GetNamespace(ctx, t.Namespace) })
	g.Wait()
	switch {
	case svcErr == nil:
	case apierrors.IsNotFound(svcErr):
		out.Service, out.ServiceNotFound = nil, true
	default:
		out.Service, out.ServiceUnknown = nil, cluster.AccessProblem("get service "+t.Namespace+"/"+t.Service+" in "+out.Context, svcErr)
	}
	if nsErr != nil {
		// Not found or not read alike: istiod's matchServiceScope skips a
		// Service whose namespace it does not hold, but an input that
		// lacks the namespace says nothing of the cluster's.
		out.Namespace, out.NamespaceUnknown = nil, cluster.AccessProblem("get namespace "+t.Namespace+" in "+out.Context, nsErr)
	}
	if out.Service == nil {
		return out
	}
	out.Binding = mesh.BindServiceWaypoint(out.Service, out.Namespace, nil, false)
	if !out.Binding.Use.Named {
		return out
	}
	ref := out.Binding.Use.Ref
	gws, err := cluster.GatewayAPIGateways(ctx, c, ref.Namespace)
	known := true
	switch {
	case err == nil:
	case apierrors.IsNotFound(err) && cluster.IsMissingKind(err):
		gws = nil // the Gateway API is not installed: no Gateway exists
	default:
		known = false
		out.GatewaysUnknown = cluster.AccessProblem("list gateways.gateway.networking.k8s.io in "+ref.Namespace+" in "+out.Context, err)
	}
	out.Binding = mesh.BindServiceWaypoint(out.Service, out.Namespace, gws, known)
	for _, gw := range gws {
		if gw.Name == ref.Name && gw.Namespace == ref.Namespace {
			out.Gateway = gw
		}
	}
	return out
}
