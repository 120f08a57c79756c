package istioconfig

import (
	"context"
	"errors"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/readgroup"
)

// gatewayAPIKinds pairs each listed kind with the model's name for it.
var gatewayAPIKinds = []struct {
	kind cluster.GatewayAPIKind
	name string
}{
	{cluster.HTTPRoutes, mesh.KindHTTPRoute},
	{cluster.GRPCRoutes, mesh.KindGRPCRoute},
	{cluster.TLSRoutes, mesh.KindTLSRoute},
	{cluster.TCPRoutes, mesh.KindTCPRoute},
	{cluster.ReferenceGrants, mesh.KindReferenceGrant},
	{cluster.GatewayClasses, mesh.KindGatewayClass},
}

// ReadGatewayAPI reads the Gateway API configuration as istiod reads it:
// Gateways and each kind in GatewayAPIKinds listed once across every
// namespace, all at once through the read cache. A kind whose CRD is not
// installed has no object, as for istiod. A kind whose list across
// namespaces is refused (a namespaced role) is read in namespaces instead
// and is partial; one that cannot be read at all (an input that holds
// none, a refusal) is unread: the model concludes nothing from its
// absence. It never fails: what it could not read is in the config.
func ReadGatewayAPI(ctx context.Context, c cluster.Cluster, namespaces []string) *mesh.GatewayAPIConfig {
	g := &mesh.GatewayAPIConfig{Read: map[string]map[string]bool{}, Unread: map[string]string{}}
	lists := make([][]runtime.Object, len(gatewayAPIKinds))
	errs := make([]error, len(gatewayAPIKinds))
	var gateways []*gatewayv1.Gateway
	var gatewaysErr error
	var wave readgroup.Group
	wave.Go(func() { gateways, gatewaysErr = cluster.GatewayAPIGateways(ctx, c, metav1.NamespaceAll) })
	for i, k := range gatewayAPIKinds {
		wave.Go(func() { lists[i], errs[i] = cluster.GatewayAPIList(ctx, c, k.kind, metav1.NamespaceAll) })
	}
	wave.Wait()

	refused := map[string]bool{}
	switch {
	case gatewaysErr == nil:
		g.Gateways = gateways
	case apierrors.IsForbidden(gatewaysErr):
		refused[mesh.KindGateway] = true
	default:
		unreadOrNone(g, mesh.KindGateway, "list gateways.gateway.networking.k8s.io in all namespaces", gatewaysErr)
	}
	for i, k := range gatewayAPIKinds {
		switch err := errs[i]; {
		case err == nil:
			for _, o := range lists[i] {
				g.Add(o)
			}
		case apierrors.IsForbidden(err) && !k.kind.ClusterScoped:
			refused[k.name] = true
		default:
			unreadOrNone(g, k.name, "list "+k.kind.String()+" in all namespaces", err)
		}
	}
	if len(refused) > 0 {
		readInNamespaces(ctx, c, g, refused, namespaces)
	}
	return g
}

// unreadOrNone records a failed list: a kind the API server does not
// serve has no object (istiod watches only CRDs that exist); anything
// else leaves the kind unread.
func unreadOrNone(g *mesh.GatewayAPIConfig, kind, what string, err error) {
	if apierrors.IsNotFound(err) && cluster.IsMissingKind(err) {
		return
	}
	if errors.Is(err, cluster.ErrNotInInput) || errors.Is(err, cluster.ErrNotFound) {
		g.Unread[kind] = err.Error()
		return
	}
	g.Unread[kind] = cluster.AccessProblem(what, err)
}

// readInNamespaces reads the refused kinds in each namespace, all at once;
// a namespace whose read fails stays out of Read (not known).
func readInNamespaces(ctx context.Context, c cluster.Cluster, g *mesh.GatewayAPIConfig, refused map[string]bool, namespaces []string) {
	var todo []string
	seen := map[string]bool{}
	for _, ns := range namespaces {
		if ns != "" && !seen[ns] {
			seen[ns] = true
			todo = append(todo, ns)
		}
	}
	sort.Strings(todo)
	type read struct {
		kind, ns string
		objs     []runtime.Object
		gws      []*gatewayv1.Gateway
		err      error
	}
	var reads []*read
	var wave readgroup.Group
	for _, ns := range todo {
		if refused[mesh.KindGateway] {
			r := &read{kind: mesh.KindGateway, ns: ns}
			reads = append(reads, r)
			wave.Go(func() { r.gws, r.err = cluster.GatewayAPIGateways(ctx, c, ns) })
		}
		for _, k := range gatewayAPIKinds {
			if !refused[k.name] {
				continue
			}
			r := &read{kind: k.name, ns: ns}
			reads = append(reads, r)
			wave.Go(func() { r.objs, r.err = cluster.GatewayAPIList(ctx, c, k.kind, ns) })
		}
	}
	wave.Wait()
	for kind := range refused {
		g.Read[kind] = map[string]bool{}
	}
	for _, r := range reads {
		if r.err != nil {
			continue
		}
		g.Read[r.kind][r.ns] = true
		g.Gateways = append(g.Gateways, r.gws...)
		for _, o := range r.objs {
			g.Add(o)
		}
	}
}
