package callerview

import (
	"context"
	"net"
	"strconv"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// EastWestGateway is what a triage read for one east-west gateway the caller
// reaches a remote network through.
type EastWestGateway struct {
	Gateway mesh.NetworkGateway
	// Context is the gateway Service's cluster; GatewaysContext the one
	// whose istiod serves its pods and whose Gateways were read.
	Context, GatewaysContext string
	// LocalContext is the current context's name in the evidence.
	LocalContext     string
	Service          *corev1.Service
	Pods             []*corev1.Pod
	Gateways         []*networkingv1.Gateway
	ScopeToNamespace bool
	Unknown          string
}

// ReadEastWestGateways reads, for every network gateway through which
// the multi-cluster model sends the caller to the target's remote
// endpoints, its Service, its pods, and the Istio Gateways of the cluster
// whose istiod serves those pods: the gateway's own cluster when it runs
// an istiod (multi-primary: each istiod reads its own cluster's Istio
// config), else the current cluster (primary-remote: the config
// cluster's istiod serves the remote's proxies).
func ReadEastWestGateways(ctx context.Context, c cluster.Cluster, t cluster.Target, caller mesh.Caller) []EastWestGateway {
	remotes, _ := cluster.RemoteClusters(c)
	in := ReadClusters(ctx, c, t)
	mc := mesh.MultiClusterEndpoints(caller, in.Mesh.Networks, in.Reads)
	byContext := map[string]cluster.Cluster{}
	for _, r := range remotes {
		byContext[r.Context] = r.Cluster
	}
	for _, cr := range in.Reads {
		if cr.Local {
			byContext[cr.Context] = c
		}
	}
	localContext := in.Reads[0].Context
	seen := map[string]bool{}
	var gws []EastWestGateway
	for _, e := range mc.Endpoints {
		for _, g := range e.Via {
			key := g.Network + " " + net.JoinHostPort(g.Address, strconv.Itoa(int(g.Port)))
			if seen[key] {
				continue
			}
			seen[key] = true
			gws = append(gws, readEastWestGateway(ctx, g, in.Reads, byContext, localContext))
		}
	}
	return gws
}

// readEastWestGateway reads one gateway's Service, pods, and the
// Gateways of the cluster whose istiod serves it.
func readEastWestGateway(ctx context.Context, g mesh.NetworkGateway, reads []mesh.ClusterRead, byContext map[string]cluster.Cluster, localContext string) EastWestGateway {
	out := EastWestGateway{Gateway: g, LocalContext: localContext}
	cr, svc := mesh.GatewayServiceOf(reads, g)
	if svc == nil {
		out.Unknown = "no network-labelled Service read gives it (" + g.From + "): its pods are not known"
		return out
	}
	out.Context, out.Service = cr.Context, svc
	gc := byContext[cr.Context]
	if len(svc.Spec.Selector) == 0 {
		out.Unknown = "Service " + svc.Namespace + "/" + svc.Name + " has no selector: its pods are not known"
		return out
	}
	pods, err := gc.ListPods(ctx, svc.Namespace, svc.Spec.Selector)
	if err != nil {
		out.Unknown = cluster.AccessProblem("list the pods of Service "+svc.Namespace+"/"+svc.Name+" in "+cr.Context, err)
		return out
	}
	for i := range pods {
		out.Pods = append(out.Pods, &pods[i])
	}
	// The istiod that serves the gateway: its own cluster's, else the
	// current (config) cluster's.
	istiodContext, istiod := "", []corev1.Pod(nil)
	for _, ctxName := range []string{cr.Context, localContext} {
		ic := byContext[ctxName]
		ps, err := ic.ListPods(ctx, istioconfig.ControlPlane(ic), map[string]string{"app": "istiod"})
		if err != nil {
			out.Unknown = cluster.AccessProblem("list the istiod pods of "+ctxName, err)
			return out
		}
		if len(ps) > 0 {
			istiodContext, istiod = ctxName, ps
			break
		}
	}
	if istiodContext == "" {
		out.Unknown = "no istiod pod (app=istiod) in " + cr.Context + " nor " + localContext + ": which cluster's Gateways istiod reads for it is not known"
		return out
	}
	out.GatewaysContext = istiodContext
	out.ScopeToNamespace = istiodEnvTrue(istiod, "PILOT_SCOPE_GATEWAY_TO_NAMESPACE")
	list, err := cluster.Gateways(ctx, byContext[istiodContext], "")
	if err != nil {
		out.Unknown = cluster.AccessProblem("list the Gateways (networking.istio.io) of "+istiodContext, err)
		return out
	}
	out.Gateways = list
	return out
}

// istiodEnvTrue: the discovery container of every istiod pod sets the
// variable to a true value (strconv.ParseBool, as istiod's env.Register).
func istiodEnvTrue(pods []corev1.Pod, name string) bool {
	for _, p := range pods {
		for _, ct := range p.Spec.Containers {
			for _, e := range ct.Env {
				if e.Name == name {
					if v, err := strconv.ParseBool(e.Value); err == nil && v {
						return true
					}
				}
			}
		}
	}
	return false
}
