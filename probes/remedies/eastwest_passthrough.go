package remedies

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// ExposeEastWestPassthrough gives an east-west gateway the AUTO_PASSTHROUGH
// server istiod turns into its SNI filter chains, in the cluster whose
// istiod serves the gateway: the existing server on the gateway port set
// to AUTO_PASSTHROUGH when its mode alone is wrong, else a new Gateway as
// samples/multicluster/expose-services.yaml writes it, selecting the pods
// by the gateway Service's selector (what the pods carry and keep across
// rollouts, unlike pod-template-hash), on the Service's gateway port,
// hosts *.local.
type ExposeEastWestPassthrough struct{}

func (ExposeEastWestPassthrough) Meta() Meta {
	return Meta{
		ID:     "expose-eastwest-passthrough",
		Causes: []string{"multicluster.eastwest-not-passthrough"},
		Does:   "sets the east-west gateway's server on its gateway port to AUTO_PASSTHROUGH (JSON patch), or creates the AUTO_PASSTHROUGH Gateway selecting its pods (create), with --context when the Gateway is in a remote cluster",
		Reads:  []string{"what the eastwest-passthrough probe reads"},
	}
}

func (ExposeEastWestPassthrough) Compute(ctx context.Context, in *Input) Output {
	caller := mesh.Caller{Sidecar: true, NetworkUnknown: "no caller named (--from)"}
	if in.Target.Source != nil {
		p, err := in.Cluster.GetPod(ctx, in.Target.Source.Namespace, in.Target.Source.Name)
		if err != nil {
			return unpatchable("the caller %s could not be read: %v", in.Target.Source, err)
		}
		caller = mesh.CallerFromPod(p)
	}
	host := mesh.ServiceHost(in.Target.Service, in.Target.Namespace)
	var patches []patch.Patch
	var notes, remote []string
	for _, g := range callerview.ReadEastWestGateways(ctx, in.Cluster, in.Target, caller) {
		if g.Unknown != "" {
			continue
		}
		pt := mesh.EastWestPassthrough(mesh.PassthroughInput{Service: g.Service, Port: g.Gateway.Port, Pods: g.Pods,
			Gateways: g.Gateways, ScopeToNamespace: g.ScopeToNamespace, Host: host, Namespace: in.Target.Namespace})
		if pt.Unknown != "" || pt.Server != "" {
			continue
		}
		inContext := ""
		if g.GatewaysContext != g.LocalContext {
			inContext = g.GatewaysContext
			remote = append(remote, inContext)
		}
		if len(pt.WrongMode) > 0 {
			s := pt.WrongMode[0]
			path := patch.Pointer("spec", "servers", s.Index, "tls", "mode")
			p, err := change(objectOf(istioNetworking, "Gateway", s.Gateway), s.Gateway, patch.Test(path, s.Mode), patch.Replace(path, "AUTO_PASSTHROUGH"))
			if err != nil {
				return unpatchable("the change of Gateway %s/%s does not apply: %v", s.Gateway.Namespace, s.Gateway.Name, err)
			}
			p.Context = inContext
			patches = append(patches, p)
			notes = append(notes, fmt.Sprintf("sets Gateway %s/%s servers[%d] (in %s) from %s to AUTO_PASSTHROUGH", s.Gateway.Namespace, s.Gateway.Name, s.Index, g.GatewaysContext, s.Mode))
			continue
		}
		name := "cross-network-gateway"
		for _, gw := range g.Gateways {
			if gw.Namespace == g.Service.Namespace && gw.Name == name {
				name = g.Service.Name + "-passthrough"
			}
		}
		obj := patch.Object{APIVersion: istioNetworking, Kind: "Gateway", Namespace: g.Service.Namespace, Name: name}
		p, err := patch.CreateObject(obj, newObject(obj, map[string]any{
			"selector": g.Service.Spec.Selector,
			"servers": []any{map[string]any{
				"port":  map[string]any{"number": g.Gateway.Port, "name": "tls", "protocol": "TLS"},
				"tls":   map[string]any{"mode": "AUTO_PASSTHROUGH"},
				"hosts": []any{"*.local"},
			}},
		}))
		if err != nil {
			return unpatchable("%v", err)
		}
		p.Context = inContext
		patches = append(patches, p)
		notes = append(notes, fmt.Sprintf("creates Gateway %s/%s in %s, selecting %s (the pods of Service %s/%s) with an AUTO_PASSTHROUGH server on port %d for *.local",
			obj.Namespace, obj.Name, g.GatewaysContext, selectorString(g.Service.Spec.Selector), g.Service.Namespace, g.Service.Name, g.Gateway.Port))
	}
	if len(patches) == 0 {
		return unpatchable("no east-west gateway read lacks an AUTO_PASSTHROUGH server whose Gateways could be read")
	}
	out := Output{Patches: patches, Note: "The patch " + strings.Join(notes, "; ") + ": istiod then gives the gateway SNI filter chains for every *.local Service of its network, and forwards the caller's mTLS to the pods unterminated."}
	if len(remote) > 0 {
		slices.Sort(remote)
		out.NotSimulated = remoteNotSimulated(strings.Join(slices.Compact(remote), ","))
	}
	return out
}
