package recorded

import (
	"context"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

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

// addTracked adds obj to a fake clientset's tracker. The tracker guesses
// a kind's resource by English plural rules and files a Gateway under
// "gatewaies", where no list finds it: a Gateway is created under
// "gateways", the resource the clientset lists.
func addTracked(tracker k8stesting.ObjectTracker, obj runtime.Object) error {
	if gw, ok := obj.(*networkingv1.Gateway); ok {
		return tracker.Create(networkingv1.SchemeGroupVersion.WithResource("gateways"), gw, gw.Namespace)
	}
	return tracker.Add(obj)
}
