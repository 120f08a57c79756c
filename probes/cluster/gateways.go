package cluster

import (
	"context"
	"fmt"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
)

// GatewayLister lists the Istio Gateways (networking.istio.io) of a
// namespace: what the config model reads when the caller is an ingress or
// egress gateway. Optional, like NodeGetter: a source without them leaves
// a gateway's binding unknown, never empty.
type GatewayLister interface {
	Gateways(ctx context.Context, namespace string) ([]*networkingv1.Gateway, error)
}

// Gateways lists the Gateways of namespace through c when c can;
// ErrNotFound when the source cannot.
func Gateways(ctx context.Context, c Cluster, namespace string) ([]*networkingv1.Gateway, error) {
	if l, ok := c.(GatewayLister); ok {
		return l.Gateways(ctx, namespace)
	}
	return nil, fmt.Errorf("%w: this source has no Gateways", ErrNotFound)
}

// Gateways reads through when the cached cluster can list Gateways.
func (c *Cache) Gateways(ctx context.Context, namespace string) ([]*networkingv1.Gateway, error) {
	return read(ctx, c, cacheKey{op: "gateways", namespace: namespace},
		func(ctx context.Context) ([]*networkingv1.Gateway, error) { return Gateways(ctx, c.c, namespace) },
		clonePointers[networkingv1.Gateway])
}
