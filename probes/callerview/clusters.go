package callerview

import (
	"context"
	"errors"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/readgroup"
)

// Clusters is what a triage reads of a Service with endpoints in several
// clusters: in the current context and in each remote one, what istiod's
// registry for that cluster holds of it.
type Clusters struct {
	Reads []mesh.ClusterRead
	// RemotesUnread says why no remote cluster was read (none given, or an
	// input that holds one cluster).
	RemotesUnread string
	Mesh          mesh.MeshConfig
	MeshUnknown   string
}

// ReadClusters reads the target Service's endpoints, their pods, the
// control-plane namespace and the network gateways in the current
// context (c) and in each remote cluster c reaches (cluster.RemoteClusters),
// all at once. The remotes are read through their own clients; the mesh
// config is the current cluster's (istiod reads Istio config from its
// config cluster only).
func ReadClusters(ctx context.Context, c cluster.Cluster, t cluster.Target) Clusters {
	var out Clusters
	remotes, unread := cluster.RemoteClusters(c)
	out.RemotesUnread = unread
	all := append([]cluster.Remote{{Context: c.Info().Context, Cluster: c}}, remotes...)
	out.Reads = make([]mesh.ClusterRead, len(all))
	var g readgroup.Group
	var mu sync.Mutex
	g.Go(func() {
		m, err := istioconfig.ReadMeshConfig(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		out.Mesh = m
		if err != nil {
			out.MeshUnknown = cluster.AccessProblem("read the mesh config", err)
		}
	})
	for i, r := range all {
		g.Go(func() { out.Reads[i] = readCluster(ctx, r, t, i == 0) })
	}
	g.Wait()
	return out
}

// readCluster is one cluster's part; every read it could not make is
// said in the ClusterRead, never left empty as if absent.
func readCluster(ctx context.Context, r cluster.Remote, t cluster.Target, local bool) mesh.ClusterRead {
	out := mesh.ClusterRead{Context: r.Context, Local: local}
	if out.Context == "" {
		out.Context = "(current)"
	}
	c := r.Cluster
	system := istioconfig.ControlPlane(c)
	var g readgroup.Group
	g.Go(func() {
		ns, err := c.GetNamespace(ctx, system)
		switch {
		case err == nil:
			out.SystemNamespace = ns
		case apierrors.IsNotFound(err):
			// No such namespace: no label to give a network (nil, and
			// nothing unknown).
		default:
			out.SystemNamespaceUnknown = cluster.AccessProblem("get namespace "+system, err)
		}
	})
	g.Go(func() {
		svcs, err := cluster.NetworkGatewayServices(ctx, c)
		if err != nil {
			out.GatewaysUnknown = cluster.AccessProblem("list the Services labelled "+mesh.LabelNetwork, err)
			return
		}
		for i := range svcs {
			out.GatewayServices = append(out.GatewayServices, &svcs[i])
		}
	})
	g.Go(func() {
		slices, err := c.EndpointSlices(ctx, t.Namespace, t.Service)
		if err != nil {
			out.SlicesUnknown = cluster.AccessProblem("list the EndpointSlices of "+t.Namespace+"/"+t.Service, err)
			return
		}
		out.Slices = slices
		out.Pods = map[string]*corev1.Pod{}
		var names []string
		for _, s := range slices {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && e.TargetRef.Kind == "Pod" && e.TargetRef.Name != "" {
					names = append(names, e.TargetRef.Name)
				}
			}
		}
		sort.Strings(names)
		var pg readgroup.Group
		var mu sync.Mutex
		for _, name := range names {
			pg.Go(func() {
				p, err := c.GetPod(ctx, t.Namespace, name)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					out.Pods[name] = p
				case errors.Is(err, cluster.ErrNotInInput):
					out.PodsUnknown = cluster.AccessProblem("get pod "+t.Namespace+"/"+name, err)
				case apierrors.IsNotFound(err) || errors.Is(err, cluster.ErrNotFound):
					// Read and not there: istiod holds its endpoint back.
				default:
					out.PodsUnknown = cluster.AccessProblem("get pod "+t.Namespace+"/"+name, err)
				}
			})
		}
		pg.Wait()
	})
	g.Wait()
	var pods []*corev1.Pod
	for _, p := range out.Pods {
		pods = append(pods, p)
	}
	out.ClusterID, out.ClusterIDUnknown = mesh.ClusterIDOfPods(pods)
	return out
}
