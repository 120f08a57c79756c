package recorded

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

var (
	_ cluster.GatewayAPILister = (*Cluster)(nil)
	_ cluster.GatewayAPILister = (*Recorder)(nil)
	_ cluster.GatewayAPILister = (*cluster.Cache)(nil)
)

// The Gateway API's routes, ReferenceGrants and GatewayClasses
// (cluster.GatewayAPILister), served from the recorded objects, as the
// Gateways are: no fake clientset of ours holds the kinds.

func readGatewayAPI(kind cluster.GatewayAPIKind, ns string) string {
	return "list " + kind.String() + " " + ns
}

// isGatewayAPIKind reports whether obj is of kind, as the recording
// holds it (its v1 Go type).
func isGatewayAPIKind(kind cluster.GatewayAPIKind) func(runtime.Object) bool {
	return func(o runtime.Object) bool {
		switch o.(type) {
		case *gatewayv1.HTTPRoute:
			return kind == cluster.HTTPRoutes
		case *gatewayv1.GRPCRoute:
			return kind == cluster.GRPCRoutes
		case *gatewayv1.TLSRoute:
			return kind == cluster.TLSRoutes
		case *gatewayv1.TCPRoute:
			return kind == cluster.TCPRoutes
		case *gatewayv1.ReferenceGrant:
			return kind == cluster.ReferenceGrants
		case *gatewayv1.GatewayClass:
			return kind == cluster.GatewayClasses
		}
		return false
	}
}

// GatewayAPIList serves the recorded objects of kind in namespace (""
// for every namespace), sorted by namespace and name as the API lists
// them. A dump that holds no object of the kind, or nothing of the
// namespace, answers cluster.ErrNotInInput: not exported is not absent.
func (c *Cluster) GatewayAPIList(ctx context.Context, kind cluster.GatewayAPIKind, namespace string) ([]runtime.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if kind.ClusterScoped {
		namespace = ""
	}
	if err := c.failed(readGatewayAPI(kind, namespace)); err != nil {
		return nil, err
	}
	is := isGatewayAPIKind(kind)
	if err := c.notExported(namespace, kind.Kind+" ("+cluster.GatewayAPIGroup+")", is); err != nil {
		return nil, err
	}
	return recordedOf(c.s.Objects, namespace, is), nil
}

// recordedOf are deep copies of the objects is picks in namespace (""
// for every namespace), sorted by namespace and name.
func recordedOf(objects []runtime.Object, namespace string, is func(runtime.Object) bool) []runtime.Object {
	type named struct {
		ns, name string
		obj      runtime.Object
	}
	var found []named
	for _, obj := range objects {
		m, err := meta.Accessor(obj)
		if err != nil || !is(obj) || namespace != "" && m.GetNamespace() != namespace {
			continue
		}
		found = append(found, named{m.GetNamespace(), m.GetName(), obj.DeepCopyObject()})
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].ns != found[j].ns {
			return found[i].ns < found[j].ns
		}
		return found[i].name < found[j].name
	})
	out := make([]runtime.Object, 0, len(found))
	for _, f := range found {
		out = append(out, f.obj)
	}
	return out
}

// GatewayAPIList keeps the objects read.
func (r *Recorder) GatewayAPIList(ctx context.Context, kind cluster.GatewayAPIKind, namespace string) ([]runtime.Object, error) {
	if kind.ClusterScoped {
		namespace = ""
	}
	v, err := cluster.GatewayAPIList(ctx, r.c, kind, namespace)
	return record(r, readGatewayAPI(kind, namespace), v, err, func(objs []runtime.Object) []runtime.Object { return objs })
}
