package remedies

import (
	"context"
	"fmt"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// GrantReference creates, in the namespace of each Service a route
// refers to across namespaces (and of each Secret a Gateway listener
// does), the ReferenceGrant that admits exactly that reference: from the
// route's kind in its namespace (the Gateway's), to that Service (Secret)
// by name.
type GrantReference struct{}

func (GrantReference) Meta() Meta {
	return Meta{
		ID:     "grant-reference",
		Causes: []string{"gateway.ref-not-permitted"},
		Does:   "creates a ReferenceGrant in the referred object's namespace admitting the route (or Gateway) to that one Service (or Secret)",
	}
}

// referenceGrantVersion is the version every Gateway API release serves
// ReferenceGrants at (v1 only from v1.5), and istiod watches.
const referenceGrantVersion = "gateway.networking.k8s.io/v1beta1"

func (GrantReference) Compute(ctx context.Context, in *Input) Output {
	cfg, api, routes, forMesh, why := apiRoutesFor(ctx, in)
	if why != "" {
		return unpatchable("%s", why)
	}
	if forMesh {
		return unpatchable("a mesh route needs no ReferenceGrant (istiod enforces them for gateway parents only)")
	}
	type grant struct{ ns, fromKind, fromNS, toKind, toName string }
	var grants []grant
	seen := map[grant]bool{}
	add := func(g grant) {
		if !seen[g] {
			seen[g] = true
			grants = append(grants, g)
		}
	}
	for _, rv := range routesWithBrokenBackendsOf(in, api, routes) {
		for _, b := range rv.InvalidBackends(false) {
			if b.Invalid == mesh.BackendRefNotAllowed && b.Kind == "Service" {
				add(grant{ns: b.Namespace, fromKind: rv.Kind, fromNS: rv.Namespace, toKind: "Service", toName: b.Name})
			}
		}
	}
	if g := api.Gateway; g != nil {
		if gw := apiGatewayObject(cfg, g.Namespace, g.Name); gw != nil {
			for _, l := range gw.Spec.Listeners {
				if ml := g.Listener(string(l.Name)); ml == nil || ml.NotProgrammedReason != string(gatewayv1.ListenerReasonRefNotPermitted) || l.TLS == nil {
					continue
				}
				for _, ref := range l.TLS.CertificateRefs {
					if ref.Namespace != nil && string(*ref.Namespace) != gw.Namespace {
						add(grant{ns: string(*ref.Namespace), fromKind: mesh.KindGateway, fromNS: gw.Namespace, toKind: "Secret", toName: string(ref.Name)})
					}
				}
			}
		}
	}
	if len(grants) == 0 {
		return unpatchable("no reference the triage judged is refused for want of a ReferenceGrant")
	}
	var out Output
	var notes []string
	for _, g := range grants {
		obj := patch.Object{APIVersion: referenceGrantVersion, Kind: "ReferenceGrant", Namespace: g.ns,
			Name: dnsLabel(g.fromNS + "-" + strings.ToLower(g.fromKind) + "s-to-" + g.toName)}
		p, err := patch.CreateObject(obj, newObject(obj, map[string]any{
			"from": []map[string]any{{"group": gatewayv1.GroupName, "kind": g.fromKind, "namespace": g.fromNS}},
			"to":   []map[string]any{{"group": "", "kind": g.toKind, "name": g.toName}},
		}))
		if err != nil {
			return unpatchable("%v", err)
		}
		out.Patches = append(out.Patches, p)
		notes = append(notes, fmt.Sprintf("lets %ss of namespace %s refer to %s %s/%s", g.fromKind, g.fromNS, g.toKind, g.ns, g.toName))
	}
	out.Note = "The patch " + strings.Join(notes, "; ") + ", and nothing else of those namespaces."
	return out
}
