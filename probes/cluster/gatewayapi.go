package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// GatewayAPIKind is a kind of the Gateway API the config model lists
// besides Gateways, as istiod watches it (pilot/pkg/config/kube/gateway):
// the four route kinds istiod turns into VirtualServices, the
// ReferenceGrants that admit their cross-namespace references, and the
// GatewayClasses that say which Gateways istiod owns.
type GatewayAPIKind struct {
	// Resource is the kind's resource, as RBAC and the API name it.
	Resource string
	Kind     string
	// Version is the version listed: the one istiod watches
	// (pkg/config/schema/gvr). Every object is served as its v1 Go type.
	Version string
	// ClusterScoped kinds are listed without a namespace.
	ClusterScoped bool
}

// GatewayAPIGroup is the Gateway API's API group.
const GatewayAPIGroup = "gateway.networking.k8s.io"

// The Gateway API kinds listed, beside Gateways (GatewayReader).
var (
	HTTPRoutes      = GatewayAPIKind{Resource: "httproutes", Kind: "HTTPRoute", Version: "v1"}
	GRPCRoutes      = GatewayAPIKind{Resource: "grpcroutes", Kind: "GRPCRoute", Version: "v1"}
	TLSRoutes       = GatewayAPIKind{Resource: "tlsroutes", Kind: "TLSRoute", Version: "v1"}
	TCPRoutes       = GatewayAPIKind{Resource: "tcproutes", Kind: "TCPRoute", Version: "v1"}
	ReferenceGrants = GatewayAPIKind{Resource: "referencegrants", Kind: "ReferenceGrant", Version: "v1beta1"}
	GatewayClasses  = GatewayAPIKind{Resource: "gatewayclasses", Kind: "GatewayClass", Version: "v1", ClusterScoped: true}
)

// GatewayAPIKinds are the kinds above, in the order they are read.
var GatewayAPIKinds = []GatewayAPIKind{HTTPRoutes, GRPCRoutes, TLSRoutes, TCPRoutes, ReferenceGrants, GatewayClasses}

// String is the kind as kubectl names its resource.
func (k GatewayAPIKind) String() string { return k.Resource + "." + GatewayAPIGroup }

// GatewayAPILister lists one Gateway API kind in a namespace ("" for
// every namespace; a cluster-scoped kind takes ""). The objects are the
// kind's v1 Go types (*gatewayv1.HTTPRoute, *gatewayv1.ReferenceGrant,
// ...). Optional, like NodeGetter: a source without it leaves what the
// kinds decide unknown, never empty. A cluster without the kind's CRD
// answers its API's not-found (IsMissingKind): istiod then has none.
type GatewayAPILister interface {
	GatewayAPIList(ctx context.Context, kind GatewayAPIKind, namespace string) ([]runtime.Object, error)
}

// GatewayAPIList lists kind through c when c can; ErrNotFound when it
// cannot.
func GatewayAPIList(ctx context.Context, c Cluster, kind GatewayAPIKind, namespace string) ([]runtime.Object, error) {
	if l, ok := c.(GatewayAPILister); ok {
		return l.GatewayAPIList(ctx, kind, namespace)
	}
	return nil, fmt.Errorf("%w: this source has no %s", ErrNotFound, kind.Resource)
}

// GatewayAPIList reads through when the cached cluster can.
func (c *Cache) GatewayAPIList(ctx context.Context, kind GatewayAPIKind, namespace string) ([]runtime.Object, error) {
	return read(ctx, c, cacheKey{op: "list " + kind.String(), namespace: namespace},
		func(ctx context.Context) ([]runtime.Object, error) { return GatewayAPIList(ctx, c.c, kind, namespace) },
		cloneObjects)
}

// cloneObjects deep-copies a list of API objects.
func cloneObjects(in []runtime.Object) []runtime.Object {
	if in == nil {
		return nil
	}
	out := make([]runtime.Object, len(in))
	for i, o := range in {
		out[i] = o.DeepCopyObject()
	}
	return out
}
