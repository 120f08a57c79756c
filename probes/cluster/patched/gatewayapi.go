package patched

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

var _ cluster.GatewayAPILister = (*Cluster)(nil)

// GatewayAPIList (cluster.GatewayAPILister): the routes, ReferenceGrants
// and GatewayClasses read, patched, and those the patches create (a
// ReferenceGrant a fix adds).
func (c *Cluster) GatewayAPIList(ctx context.Context, kind cluster.GatewayAPIKind, namespace string) ([]runtime.Object, error) {
	items, err := cluster.GatewayAPIList(ctx, c.base, kind, namespace)
	if err != nil {
		return nil, err
	}
	switch kind {
	case cluster.HTTPRoutes:
		return listedObjects[gatewayv1.HTTPRoute](c, kind.Kind, namespace, items)
	case cluster.GRPCRoutes:
		return listedObjects[gatewayv1.GRPCRoute](c, kind.Kind, namespace, items)
	case cluster.TLSRoutes:
		return listedObjects[gatewayv1.TLSRoute](c, kind.Kind, namespace, items)
	case cluster.TCPRoutes:
		return listedObjects[gatewayv1.TCPRoute](c, kind.Kind, namespace, items)
	case cluster.ReferenceGrants:
		return listedObjects[gatewayv1.ReferenceGrant](c, kind.Kind, namespace, items)
	case cluster.GatewayClasses:
		return listedObjects[gatewayv1.GatewayClass](c, kind.Kind, namespace, items)
	}
	return nil, fmt.Errorf("simulation: no list of %s", kind)
}

// gatewayObject is a Gateway API object's pointer type.
type gatewayObject[T any] interface {
	*T
	runtime.Object
	GetNamespace() string
	GetName() string
}

// listedObjects is listed for objects served as runtime.Objects.
func listedObjects[T any, P gatewayObject[T]](c *Cluster, kind, namespace string, items []runtime.Object) ([]runtime.Object, error) {
	typed := make([]*T, 0, len(items))
	for _, it := range items {
		if p, ok := it.(P); ok {
			typed = append(typed, (*T)(p))
		}
	}
	patched, err := listed(c, cluster.GatewayAPIGroup, kind, namespace, typed, func(x *T) (string, string) { return P(x).GetNamespace(), P(x).GetName() })
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, len(patched))
	for i, p := range patched {
		out[i] = P(p)
	}
	return out, nil
}
