package cluster

import (
	"context"
	"fmt"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	networkingk8s "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The reads ambient mode's probes make beyond Cluster, each optional like
// NodeGetter: a source without one (an istioctl bug report, a recording
// made before they existed) leaves what they decide unknown, never false.
// All are lists of one namespace.

// NetworkPolicyReader lists a namespace's Kubernetes NetworkPolicies:
// whether HBONE (port 15008) gets through to a pod.
type NetworkPolicyReader interface {
	NetworkPolicies(ctx context.Context, namespace string) ([]networkingk8s.NetworkPolicy, error)
}

// AuthorizationPolicyReader lists a namespace's Istio
// AuthorizationPolicies: what ztunnel and waypoints enforce.
type AuthorizationPolicyReader interface {
	AuthorizationPolicies(ctx context.Context, namespace string) ([]*securityv1.AuthorizationPolicy, error)
}

// GatewayReader lists a namespace's Gateway API Gateways: a waypoint is
// one (class istio-waypoint).
type GatewayReader interface {
	GatewayAPIGateways(ctx context.Context, namespace string) ([]*gatewayv1.Gateway, error)
}

// NetworkPolicies reads through c when c can; ErrNotFound when it cannot.
func NetworkPolicies(ctx context.Context, c Cluster, namespace string) ([]networkingk8s.NetworkPolicy, error) {
	if r, ok := c.(NetworkPolicyReader); ok {
		return r.NetworkPolicies(ctx, namespace)
	}
	return nil, fmt.Errorf("%w: this source has no NetworkPolicies", ErrNotFound)
}

// AuthorizationPolicies reads through c when c can; ErrNotFound when it
// cannot.
func AuthorizationPolicies(ctx context.Context, c Cluster, namespace string) ([]*securityv1.AuthorizationPolicy, error) {
	if r, ok := c.(AuthorizationPolicyReader); ok {
		return r.AuthorizationPolicies(ctx, namespace)
	}
	return nil, fmt.Errorf("%w: this source has no AuthorizationPolicies", ErrNotFound)
}

// GatewayAPIGateways reads through c when c can; ErrNotFound when it
// cannot.
func GatewayAPIGateways(ctx context.Context, c Cluster, namespace string) ([]*gatewayv1.Gateway, error) {
	if r, ok := c.(GatewayReader); ok {
		return r.GatewayAPIGateways(ctx, namespace)
	}
	return nil, fmt.Errorf("%w: this source has no Gateway API Gateways", ErrNotFound)
}

// NetworkPolicies reads through when the cached cluster can.
func (c *Cache) NetworkPolicies(ctx context.Context, namespace string) ([]networkingk8s.NetworkPolicy, error) {
	return read(ctx, c, cacheKey{op: "networkpolicies", namespace: namespace},
		func(ctx context.Context) ([]networkingk8s.NetworkPolicy, error) {
			return NetworkPolicies(ctx, c.c, namespace)
		},
		cloneValues[networkingk8s.NetworkPolicy])
}

// AuthorizationPolicies reads through when the cached cluster can.
func (c *Cache) AuthorizationPolicies(ctx context.Context, namespace string) ([]*securityv1.AuthorizationPolicy, error) {
	return read(ctx, c, cacheKey{op: "authorizationpolicies", namespace: namespace},
		func(ctx context.Context) ([]*securityv1.AuthorizationPolicy, error) {
			return AuthorizationPolicies(ctx, c.c, namespace)
		},
		clonePointers[securityv1.AuthorizationPolicy])
}

// GatewayAPIGateways reads through when the cached cluster can.
func (c *Cache) GatewayAPIGateways(ctx context.Context, namespace string) ([]*gatewayv1.Gateway, error) {
	return read(ctx, c, cacheKey{op: "gateways.gateway.networking.k8s.io", namespace: namespace},
		func(ctx context.Context) ([]*gatewayv1.Gateway, error) {
			return GatewayAPIGateways(ctx, c.c, namespace)
		},
		clonePointers[gatewayv1.Gateway])
}
