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

func (EastWestPassthroughProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	if _, unread := cluster.RemoteClusters(c); unread != "" {
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
	gws := callerview.ReadEastWestGateways(ctx, c, t, caller)
	return evaluateEastWestPassthrough(t, gws)
}

func evaluateEastWestPassthrough(t cluster.Target, gws []callerview.EastWestGateway) Result {
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
