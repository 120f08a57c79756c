package live

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/meshtriage/meshtriage/probes/cluster/clientset"
)

func TestGetDeployment(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
	c := newCluster(clientset.Reader{Kube: fake.NewClientset(d)}, &rest.Config{Host: "https://lab:6443"}, Options{})
	got, err := c.GetDeployment(context.Background(), "shop", "orders")
	if err != nil || got.Name != "orders" {
		t.Errorf("%v %v", got, err)
	}
	if _, err := c.GetDeployment(context.Background(), "shop", "nope"); err == nil {
		t.Error("absent deployment found")
	}
}
