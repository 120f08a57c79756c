package recorded

import (
	"context"
	"testing"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// A recorded Gateway is listed back: the fake clientset's tracker would
// file it under "gatewaies" and lose it.
func TestRecordedGatewaysAreListed(t *testing.T) {
	gw := &networkingv1.Gateway{TypeMeta: metav1.TypeMeta{APIVersion: "networking.istio.io/v1", Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: "public", Namespace: "istio-system"}}
	s := FromObjects("test", []runtime.Object{gw})
	c, err := NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	gws, err := cluster.Gateways(context.Background(), c, "istio-system")
	if err != nil || len(gws) != 1 || gws[0].Name != "public" {
		t.Fatalf("Gateways = %v, %v; want istio-system/public", gws, err)
	}
}
