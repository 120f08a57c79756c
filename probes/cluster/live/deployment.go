package live

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetDeployment reads a Deployment for `watch`: a read, kept apart from
// cluster.Cluster because no probe needs it.
func (c *Cluster) GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return c.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
}
