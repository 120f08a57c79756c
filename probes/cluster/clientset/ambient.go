package clientset

import (
	"context"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	networkingk8s "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkPolicies lists a namespace's Kubernetes NetworkPolicies.
func (r Reader) NetworkPolicies(ctx context.Context, namespace string) ([]networkingk8s.NetworkPolicy, error) {
	l, err := r.Kube.NetworkingV1().NetworkPolicies(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// AuthorizationPolicies lists a namespace's Istio AuthorizationPolicies.
func (r Reader) AuthorizationPolicies(ctx context.Context, namespace string) ([]*securityv1.AuthorizationPolicy, error) {
	l, err := r.Istio.SecurityV1().AuthorizationPolicies(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}
