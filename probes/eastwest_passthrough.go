package probes

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// EastWestPassthroughProbe checks, for every east-west gateway the caller
// reaches a remote network's endpoints through (GW:PORT, as the
// multi-cluster model says), that istiod gives that gateway a listener
// forwarding the target's mTLS by SNI: an Istio Gateway selecting the
// gateway's pods, with a server on the port the Service's gateway port
// targets, tls mode AUTO_PASSTHROUGH, and a host covering the target
// (samples/multicluster/expose-services.yaml). Without one the gateway
// has no 0.0.0.0_15443 SNI chain for the host and resets or refuses the
// caller's connections (503 UF,URX). Gateways are Istio config, read by
// istiod from its own cluster only: they are read in the gateway's
// cluster when that cluster runs an istiod (multi-primary), else in the
// current cluster (primary-remote, the config cluster's istiod serves
// the gateway).
type EastWestPassthroughProbe struct{}

func (EastWestPassthroughProbe) Meta() Meta {
	return Meta{
		ID:    "eastwest-passthrough",
		Title: "The east-west gateways the caller goes through forward the Service by SNI (AUTO_PASSTHROUGH)",
		Reads: []string{"what the multicluster probe reads", "the gateway Services' pods", "istiod pods (app=istiod) in each cluster's control-plane namespace", "gateways.networking.istio.io of the cluster whose istiod serves the gateway"},
		Facts: []FactSpec{
			{"ewpt_gateways_checked", FactInt, "east-west gateways through which the caller reaches remote endpoints whose Gateways were read"},
			{"ewpt_not_passthrough", FactList, "east-west gateways no AUTO_PASSTHROUGH server covering the target is given, as CONTEXT: NS/SERVICE port P→T (Gateways read in CONTEXT): what the servers on that port are"},
			{"ewpt_unknown", FactList, "east-west gateways whose Gateways could not be judged, with why (never taken as missing)"},
		},
	}
}

// eastWestGateway is what the probe read for one gateway.
type eastWestGateway struct {
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

func (EastWestPassthroughProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	remotes, unread := cluster.RemoteClusters(c)
	if unread != "" {
		return skippedResult(unread, nil)
	}
	caller := mesh.Caller{Sidecar: true, NetworkUnknown: "no caller named (--from)"}
	if t.Source != nil {
		p, err := c.GetPod(ctx, t.Source.Namespace, t.Source.Name)
		if err != nil {
			caller.NetworkUnknown = cluster.AccessProblem("the caller "+t.Source.String(), err)
		} else if caller = mesh.CallerFromPod(p); !caller.Sidecar || caller.Gateway {
			return skippedResult("the caller "+t.Source.String()+" is not a sidecar: east-west gateways are checked for sidecar callers", nil)
		}
	}
	in := callerview.ReadClusters(ctx, c, t)
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
	var gws []eastWestGateway
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
	return evaluateEastWestPassthrough(t, gws)
}

// readEastWestGateway reads one gateway's Service, pods, and the
// Gateways of the cluster whose istiod serves it.
func readEastWestGateway(ctx context.Context, g mesh.NetworkGateway, reads []mesh.ClusterRead, byContext map[string]cluster.Cluster, localContext string) eastWestGateway {
	out := eastWestGateway{Gateway: g, LocalContext: localContext}
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

func evaluateEastWestPassthrough(t cluster.Target, gws []eastWestGateway) Result {
	host := mesh.ServiceHost(t.Service, t.Namespace)
	r := Result{Facts: Facts{}}
	r.Evidence.Columns = []string{"GATEWAY", "SERVICE", "PORT", "GATEWAYS READ IN", "AUTO_PASSTHROUGH SERVER", "WHY"}
	var missing, unknown []string
	checked := 0
	var raw strings.Builder
	for _, g := range gws {
		addr := net.JoinHostPort(g.Gateway.Address, strconv.Itoa(int(g.Gateway.Port)))
		svcRef := "-"
		if g.Service != nil {
			svcRef = g.Context + ": " + g.Service.Namespace + "/" + g.Service.Name
		}
		if g.Unknown != "" {
			unknown = append(unknown, addr+": "+g.Unknown)
			r.Evidence.Rows = append(r.Evidence.Rows, []string{addr, svcRef, strconv.Itoa(int(g.Gateway.Port)), wording.Dash(g.GatewaysContext), "not known", g.Unknown})
			continue
		}
		pt := mesh.EastWestPassthrough(mesh.PassthroughInput{Service: g.Service, Port: g.Gateway.Port, Pods: g.Pods,
			Gateways: g.Gateways, ScopeToNamespace: g.ScopeToNamespace, Host: host, Namespace: t.Namespace})
		if pt.Unknown != "" {
			unknown = append(unknown, addr+": "+pt.Unknown)
			r.Evidence.Rows = append(r.Evidence.Rows, []string{addr, svcRef, strconv.Itoa(int(g.Gateway.Port)), g.GatewaysContext, "not known", pt.Unknown})
			continue
		}
		checked++
		port := fmt.Sprintf("%d→%d", g.Gateway.Port, pt.ListenerPort)
		fmt.Fprintf(&raw, "%s (%s): %s of pods %s; Gateways read in %s: %s\n", addr, svcRef, wording.CountNoun(len(g.Gateways), "Gateway"), eastWestPodNames(g.Pods), g.GatewaysContext, eastWestGatewayNames(g.Gateways))
		if pt.Server != "" {
			r.Evidence.Rows = append(r.Evidence.Rows, []string{addr, svcRef, port, g.GatewaysContext, pt.Server, "covers " + host})
			continue
		}
		why := "no Gateway selecting the pods has a server on port " + strconv.Itoa(int(pt.ListenerPort))
		if len(pt.Near) > 0 {
			why = strings.Join(pt.Near, "; ")
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{addr, svcRef, port, g.GatewaysContext, "none", why})
		missing = append(missing, fmt.Sprintf("%s port %s (Gateways read in %s): %s", svcRef, port, g.GatewaysContext, why))
	}
	sort.Strings(missing)
	sort.Strings(unknown)
	r.Facts["ewpt_gateways_checked"] = checked
	r.Facts["ewpt_not_passthrough"] = nonNil(missing)
	r.Facts["ewpt_unknown"] = nonNil(unknown)
	r.Evidence.Raw = raw.String()
	for _, g := range gws {
		switch g.GatewaysContext {
		case "":
		case g.LocalContext:
			r.Commands = append(r.Commands, "kubectl get gateways.networking.istio.io -A -o yaml")
		default:
			r.Commands = append(r.Commands, "kubectl get gateways.networking.istio.io -A -o yaml --context "+g.GatewaysContext)
		}
	}
	if len(gws) == 0 {
		return Result{Status: StatusPass, Summary: "the caller reaches no endpoint through an east-west gateway", Facts: r.Facts}
	}
	v := verdict{Head: wording.CountNoun(len(gws), "east-west gateway")}
	v.Problems = append(v.Problems, missing...)
	v.Warnings = append(v.Warnings, unknown...)
	r.Status, r.Summary = v.judge()
	return r
}

func eastWestPodNames(pods []*corev1.Pod) string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return wording.Dash(strings.Join(names, ", "))
}

func eastWestGatewayNames(gws []*networkingv1.Gateway) string {
	var names []string
	for _, g := range gws {
		names = append(names, g.Namespace+"/"+g.Name)
	}
	return wording.Dash(strings.Join(names, ", "))
}
