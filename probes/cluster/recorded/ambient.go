package recorded

import (
	"context"
	"k8s.io/apimachinery/pkg/runtime"
	"sort"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	networkingk8s "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

var (
	_ cluster.NetworkPolicyReader       = (*Cluster)(nil)
	_ cluster.AuthorizationPolicyReader = (*Cluster)(nil)
	_ cluster.GatewayReader             = (*Cluster)(nil)
	_ cluster.NetworkPolicyReader       = (*Recorder)(nil)
	_ cluster.AuthorizationPolicyReader = (*Recorder)(nil)
	_ cluster.GatewayReader             = (*Recorder)(nil)
	_ cluster.NetworkPolicyReader       = (*cluster.Cache)(nil)
	_ cluster.AuthorizationPolicyReader = (*cluster.Cache)(nil)
	_ cluster.GatewayReader             = (*cluster.Cache)(nil)
)

// The reads of ambient mode's probes (cluster.NetworkPolicyReader,
// AuthorizationPolicyReader, GatewayReader), served and recorded like the
// others.

func readNetworkPolicies(ns string) string { return "list networkpolicies " + ns }
func readGateways(ns string) string        { return "list gateways.gateway.networking.k8s.io " + ns }

func (c *Cluster) NetworkPolicies(ctx context.Context, namespace string) ([]networkingk8s.NetworkPolicy, error) {
	if err := c.failed(readNetworkPolicies(namespace)); err != nil {
		return nil, err
	}
	return c.Reader.NetworkPolicies(ctx, namespace)
}

func (c *Cluster) AuthorizationPolicies(ctx context.Context, namespace string) ([]*securityv1.AuthorizationPolicy, error) {
	if err := c.failed(readIstioList("authorizationpolicies", namespace)); err != nil {
		return nil, err
	}
	return c.Reader.AuthorizationPolicies(ctx, namespace)
}

// GatewayAPIGateways serves the recorded Gateways of namespace, sorted by
// name as the API lists them.
func (c *Cluster) GatewayAPIGateways(ctx context.Context, namespace string) ([]*gatewayv1.Gateway, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.failed(readGateways(namespace)); err != nil {
		return nil, err
	}
	if err := c.notExported(namespace, "Gateway (gateway.networking.k8s.io)", func(o runtime.Object) bool { _, ok := o.(*gatewayv1.Gateway); return ok }); err != nil {
		return nil, err
	}
	var out []*gatewayv1.Gateway
	for _, obj := range c.s.Objects {
		if gw, ok := obj.(*gatewayv1.Gateway); ok && gw.Namespace == namespace {
			out = append(out, gw.DeepCopy())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// NetworkPolicies keeps the NetworkPolicies read.
func (r *Recorder) NetworkPolicies(ctx context.Context, namespace string) ([]networkingk8s.NetworkPolicy, error) {
	v, err := cluster.NetworkPolicies(ctx, r.c, namespace)
	return record(r, readNetworkPolicies(namespace), v, err, values[networkingk8s.NetworkPolicy])
}

// AuthorizationPolicies keeps the AuthorizationPolicies read.
func (r *Recorder) AuthorizationPolicies(ctx context.Context, namespace string) ([]*securityv1.AuthorizationPolicy, error) {
	v, err := cluster.AuthorizationPolicies(ctx, r.c, namespace)
	return record(r, readIstioList("authorizationpolicies", namespace), v, err, pointers[*securityv1.AuthorizationPolicy])
}

// GatewayAPIGateways keeps the Gateways read.
func (r *Recorder) GatewayAPIGateways(ctx context.Context, namespace string) ([]*gatewayv1.Gateway, error) {
	v, err := cluster.GatewayAPIGateways(ctx, r.c, namespace)
	return record(r, readGateways(namespace), v, err, pointers[*gatewayv1.Gateway])
}
