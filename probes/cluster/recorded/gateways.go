package recorded

import (
	"context"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// Gateways replays a Gateway list, failing as it failed when recorded.
func (c *Cluster) Gateways(ctx context.Context, namespace string) ([]*networkingv1.Gateway, error) {
	if err := c.failed(readIstioList("gateways", namespace)); err != nil {
		return nil, err
	}
	return c.Reader.Gateways(ctx, namespace)
}

// Gateways keeps the Gateways the config model read for a gateway caller.
func (r *Recorder) Gateways(ctx context.Context, namespace string) ([]*networkingv1.Gateway, error) {
	v, err := cluster.Gateways(ctx, r.c, namespace)
	return record(r, readIstioList("gateways", namespace), v, err, pointers[*networkingv1.Gateway])
}
