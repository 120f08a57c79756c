package callerview

import (
	"context"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// ReadAmbientMultiNetwork reads whether istiod merges other clusters into
// what it gives ztunnel (mesh.AmbientMultiNetwork), from the running
// istiod replicas of the caller's cluster, the istiod its ztunnel is
// served by when the cluster has one. Shared by the ambient multi-cluster
// probes.
func ReadAmbientMultiNetwork(ctx context.Context, c cluster.Cluster) mesh.AmbientMultiNetwork {
	ns := istioconfig.ControlPlane(c)
	pods, err := c.ListPods(ctx, ns, map[string]string{"app": "istiod"})
	if err != nil {
		return mesh.AmbientMultiNetwork{Unknown: cluster.AccessProblem("list the istiod pods of "+ns, err)}
	}
	running := cluster.OrderIstiods(pods)
	if len(running) == 0 {
		return mesh.AmbientMultiNetwork{Unknown: "no running istiod pod (app=istiod) in " + ns + " of the caller's cluster: the istiod serving its ztunnel runs elsewhere"}
	}
	return mesh.AmbientMultiNetworkOf(running)
}
