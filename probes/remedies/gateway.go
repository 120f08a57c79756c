package remedies

import (
	"context"
	"fmt"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// gatewayView is the model's view of the target for a gateway caller.
func gatewayView(ctx context.Context, in *Input) (*mesh.Config, mesh.Caller, *mesh.View, string) {
	cfg, caller, views, err := in.Model(ctx)
	if err != nil {
		return nil, caller, nil, fmt.Sprintf("the config model could not be read: %v", err)
	}
	if !caller.Gateway {
		return nil, caller, nil, "the caller is no Istio gateway"
	}
	for _, v := range views {
		if v.Gateway != nil {
			return cfg, caller, v, ""
		}
	}
	return nil, caller, nil, "the model has no gateway binding for the target"
}

func findGateway(cfg *mesh.Config, ref string) *networkingv1.Gateway {
	ns, name, _ := splitRef(ref)
	for _, gw := range cfg.Gateways {
		if gw.Namespace == ns && gw.Name == name {
			return gw
		}
	}
	return nil
}

// BindToGateway binds each VirtualService that routes to the target but
// is not applied to the gateway to the Gateway that selects the gateway
// pod: a `gateways` entry that names a Gateway that does not exist by that
// Gateway's name is corrected to it, one that lists none (sidecars only)
// gets it and keeps "mesh", and an exportTo that hides it from the
// gateway's namespace gets that namespace.
type BindToGateway struct{}

func (BindToGateway) Meta() Meta {
	return Meta{
		ID:     "bind-to-gateway",
		Causes: []string{"gateway.vs-not-bound"},
		Does:   "names the Gateway that selects the gateway pod in the VirtualService's gateways, or exports it to the gateway's namespace (JSON patch)",
	}
}

func (BindToGateway) Compute(ctx context.Context, in *Input) Output {
	cfg, caller, v, why := gatewayView(ctx, in)
	if why != "" {
		return unpatchable("%s", why)
	}
	var selecting []string
	for _, ref := range v.Gateway.Selecting() {
		if _, name, _ := splitRef(ref); !mesh.IsInternalGatewayName(name) {
			selecting = append(selecting, ref)
		}
	}
	if len(selecting) == 0 && v.Gateway.GatewayAPI != "" {
		return unpatchable("the gateway is Gateway API Gateway %s's, which a VirtualService cannot bind to (istiod gives its pods its listeners and the routes attached to them): route the host with an HTTPRoute whose parentRef is that Gateway", v.Gateway.GatewayAPI)
	}
	if len(selecting) == 0 {
		return unpatchable("no Gateway read selects the gateway pod: make a Gateway select it (next direction)")
	}
	var out Output
	var notes []string
	for _, vv := range v.Gateway.VirtualServices {
		if !vv.RoutesTarget {
			continue
		}
		vs := findVS(cfg, vv.Namespace, vv.Name)
		if vs == nil {
			continue
		}
		ref := vs.Namespace + "/" + vs.Name
		gw := pickGateway(cfg, selecting, vs)
		var ops []patch.Op
		var note string
		entries := vs.Spec.GetGateways()
		switch vv.Reason {
		case mesh.GatewayMeshOnly:
			if len(entries) == 0 {
				ops = append(ops, patch.Add("/spec/gateways", []string{gw, mesh.MeshGateway}))
				note = fmt.Sprintf("binds %s to %s and keeps it bound to sidecars (mesh)", ref, gw)
			} else {
				ops = append(ops, patch.Add("/spec/gateways/-", gw))
				note = fmt.Sprintf("adds %s to the gateways of %s", gw, ref)
			}
		case mesh.GatewayMissing, mesh.GatewayNotSelecting:
			_, gwName, _ := splitRef(gw)
			fixed := false
			for i, e := range entries {
				resolved := mesh.ResolveGatewayName(e, vs.Namespace)
				if resolved == mesh.MeshGateway || findGateway(cfg, resolved) != nil {
					continue
				}
				if _, name, _ := splitRef(resolved); name == gwName {
					ops = append(ops, patch.Test(patch.Pointer("spec", "gateways", i), e), patch.Replace(patch.Pointer("spec", "gateways", i), gw))
					note = fmt.Sprintf("corrects gateways entry %q of %s, read as %s, which does not exist, to %s", e, ref, resolved, gw)
					fixed = true
					break
				}
			}
			if !fixed {
				ops = append(ops, patch.Add("/spec/gateways/-", gw))
				note = fmt.Sprintf("adds %s to the gateways of %s (its other entries stay)", gw, ref)
			}
		case mesh.GatewayNotExported:
			gwNS, _, _ := splitRef(gw)
			ops = append(ops, patch.Add("/spec/exportTo/-", gwNS))
			note = fmt.Sprintf("exports %s to %s, the gateway's namespace", ref, gwNS)
		default:
			continue
		}
		p, err := change(objectOf(istioNetworking, "VirtualService", vs), vs, ops...)
		if err != nil {
			return unpatchable("the change of VirtualService %s does not apply: %v", ref, err)
		}
		out.Patches = append(out.Patches, p)
		notes = append(notes, note)
	}
	if len(out.Patches) == 0 {
		return unpatchable("no VirtualService routing to the target is unbound for a reason a gateways entry or exportTo fixes (%s)", v.Gateway.VSRefs())
	}
	out.Note = "The patch " + strings.Join(notes, "; ") + " (" + caller.String() + " is selected by " + strings.Join(selecting, ", ") + ")."
	return out
}

// pickGateway is the selecting Gateway whose servers take a host of vs,
// else the first.
func pickGateway(cfg *mesh.Config, selecting []string, vs *networkingv1.VirtualService) string {
	for _, ref := range selecting {
		gw := findGateway(cfg, ref)
		if gw == nil {
			continue
		}
		for _, s := range gw.Spec.GetServers() {
			for _, h := range vs.Spec.GetHosts() {
				if serverAdmits(s.GetHosts(), gw.Namespace, vs.Namespace, h) {
					return ref
				}
			}
		}
	}
	return selecting[0]
}

// serverAdmits: a Gateway server's hosts ("ns/host", "*/host", "./host",
// "host") let a VirtualService of vsNS bind host.
func serverAdmits(hosts []string, gwNS, vsNS, host string) bool {
	for _, entry := range hosts {
		ns, h, ok := strings.Cut(entry, "/")
		if !ok {
			ns, h = "*", entry
		}
		if ns == "." {
			ns = gwNS
		}
		if ns != "*" && ns != vsNS {
			continue
		}
		if h == "*" || h == host || strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) ||
			strings.HasPrefix(host, "*.") && strings.HasSuffix(h, host[1:]) {
			return true
		}
	}
	return false
}

// FixGatewaySelector makes the Gateway a VirtualService names select the
// gateway pod, when it selects on the same label keys with other values:
// each value becomes the gateway pod's.
type FixGatewaySelector struct{}

func (FixGatewaySelector) Meta() Meta {
	return Meta{
		ID:     "fix-gateway-selector",
		Causes: []string{"gateway.vs-not-bound"},
		Does:   "sets the named Gateway's selector values to the gateway pod's labels (merge patch)",
	}
}

func (FixGatewaySelector) Compute(ctx context.Context, in *Input) Output {
	cfg, caller, v, why := gatewayView(ctx, in)
	if why != "" {
		return unpatchable("%s", why)
	}
	for _, vv := range v.Gateway.VirtualServices {
		if !vv.RoutesTarget || vv.Reason != mesh.GatewayNotSelecting {
			continue
		}
		for _, ref := range vv.Gateways {
			gw := findGateway(cfg, ref)
			if gw == nil {
				continue
			}
			sel := gw.Spec.GetSelector()
			var ops []patch.Op
			var changes []string
			for _, k := range sortedKeys(sel) {
				pv, ok := caller.Labels[k]
				if !ok {
					return unpatchable("Gateway %s selects on %s, a label the gateway pod does not carry: which pods it is meant for is the team's call", ref, k)
				}
				if pv != sel[k] {
					path := patch.Pointer("spec", "selector", k)
					ops = append(ops, patch.Test(path, sel[k]), patch.Replace(path, pv))
					changes = append(changes, fmt.Sprintf("%s=%s → %s", k, sel[k], pv))
				}
			}
			if len(ops) == 0 {
				continue
			}
			p, err := change(objectOf(istioNetworking, "Gateway", gw), gw, ops...)
			if err != nil {
				return unpatchable("the change of Gateway %s does not apply: %v", ref, err)
			}
			return Output{Patches: []patch.Patch{p}, Note: "The patch sets the selector of Gateway " + ref + " to the gateway pod's labels (" + strings.Join(changes, ", ") + "); pods the old selector chose no longer get its servers."}
		}
	}
	return unpatchable("no VirtualService routing to the target names a Gateway that exists and selects other pods")
}

// AlignGatewayHosts makes the host clients send meet: the hosts the
// gateway answered 404 NR for (its access log) are added to the
// VirtualService that routes to the target and to the Gateway server it
// binds to, where they do not take them yet. What clients send is never
// guessed: without the log's hosts, it says so.
type AlignGatewayHosts struct{}

func (AlignGatewayHosts) Meta() Meta {
	return Meta{
		ID:     "align-gateway-hosts",
		Causes: []string{"gateway.host-mismatch"},
		Does:   "adds the request hosts the gateway answered 404 NR for to the VirtualService's hosts and the Gateway server's (JSON patch)",
	}
}

func (AlignGatewayHosts) Compute(ctx context.Context, in *Input) Output {
	cfg, _, v, why := gatewayView(ctx, in)
	if why != "" {
		return unpatchable("%s", why)
	}
	hosts, _ := in.Facts["gateway_nr_hosts_unrouted"].([]string)
	if len(hosts) == 0 {
		return unpatchable("which host clients send is not in the configuration, and the gateway's log names no 404 NR host: read it (the command below) before changing hosts")
	}
	var vs *networkingv1.VirtualService
	var gwRefs []string
	for _, vv := range v.Gateway.VirtualServices {
		if vv.RoutesTarget && (vv.Reason == mesh.GatewayBound || vv.Reason == mesh.GatewayHostMismatch) {
			vs, gwRefs = findVS(cfg, vv.Namespace, vv.Name), vv.Gateways
			break
		}
	}
	if vs == nil {
		return unpatchable("no VirtualService routing to the target is bound to a Gateway that selects the gateway pod (the gateway.vs-not-bound directions fix that first)")
	}
	var out Output
	var notes []string
	var vsOps []patch.Op
	for _, h := range hosts {
		covered := false
		for _, vh := range vs.Spec.GetHosts() {
			covered = covered || mesh.HostCovers(vh, vs.Namespace, h)
		}
		if !covered {
			vsOps = append(vsOps, patch.Add("/spec/hosts/-", h))
			notes = append(notes, fmt.Sprintf("adds %s to the hosts of VirtualService %s/%s", h, vs.Namespace, vs.Name))
		}
	}
	// The Gateway servers must take them too, for the VirtualService's namespace.
	var gwPatches []patch.Patch
	for _, ref := range gwRefs {
		gw := findGateway(cfg, ref)
		if gw == nil || len(gw.Spec.GetServers()) == 0 {
			continue
		}
		var ops []patch.Op
		for _, h := range hosts {
			admitted := false
			for _, s := range gw.Spec.GetServers() {
				admitted = admitted || serverAdmits(s.GetHosts(), gw.Namespace, vs.Namespace, h)
			}
			if !admitted {
				idx := httpServer(gw)
				ops = append(ops, patch.Add(patch.Pointer("spec", "servers", idx, "hosts", "-"), vs.Namespace+"/"+h))
				notes = append(notes, fmt.Sprintf("adds %s/%s to server %d of Gateway %s", vs.Namespace, h, idx, ref))
			}
		}
		if len(ops) > 0 {
			p, err := change(objectOf(istioNetworking, "Gateway", gw), gw, ops...)
			if err != nil {
				return unpatchable("the change of Gateway %s does not apply: %v", ref, err)
			}
			gwPatches = append(gwPatches, p)
		}
	}
	// Make before break: the Gateway takes the host before a route claims it.
	out.Patches = append(out.Patches, gwPatches...)
	if len(vsOps) > 0 {
		p, err := change(objectOf(istioNetworking, "VirtualService", vs), vs, vsOps...)
		if err != nil {
			return unpatchable("the change of VirtualService %s/%s does not apply: %v", vs.Namespace, vs.Name, err)
		}
		out.Patches = append(out.Patches, p)
	}
	if len(out.Patches) == 0 {
		return unpatchable("the VirtualService and the Gateway already take %s: the 404s come from elsewhere", strings.Join(hosts, ", "))
	}
	out.Note = "Clients send " + strings.Join(hosts, ", ") + " (the gateway's 404 NR): the patch " + strings.Join(notes, "; ") + "; the hosts already there stay."
	return out
}

// httpServer is the index of the Gateway's first plain HTTP server, else 0.
func httpServer(gw *networkingv1.Gateway) int {
	for i, s := range gw.Spec.GetServers() {
		if strings.EqualFold(s.GetPort().GetProtocol(), "HTTP") {
			return i
		}
	}
	return 0
}
