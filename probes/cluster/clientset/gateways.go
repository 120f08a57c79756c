package clientset

import (
	"context"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Gateways lists the Istio Gateways of namespace (cluster.GatewayLister).
func (r Reader) Gateways(ctx context.Context, namespace string) ([]*networkingv1.Gateway, error) {
	l, err := r.Istio.NetworkingV1().Gateways(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}
