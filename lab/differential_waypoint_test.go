package lab

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// The waypoint comparison on waypoint-bindings.yaml: istiod's clusters for
// the Services the model binds agree; a cluster for one the model does not
// bind, or none for one it binds, is a difference.
func TestCompareWaypointServices(t *testing.T) {
	objs := meshtest.Objects(t, "../probes/mesh/testdata/model", "base.yaml", "waypoint-bindings.yaml")
	var services []corev1.Service
	namespaces := map[string]*corev1.Namespace{}
	var gateways []*gatewayv1.Gateway
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			services = append(services, *o)
		case *corev1.Namespace:
			namespaces[o.Name] = o
		case *gatewayv1.Gateway:
			gateways = append(gateways, o)
		}
	}
	wp := mesh.WaypointRef{Namespace: "shop", Name: "shop-waypoint"}
	orders := "inbound-vip|8080|http|orders.shop.svc.cluster.local"
	if c := CompareWaypointServices(services, namespaces, gateways, wp, []string{orders, "outbound|8080||orders.shop.svc.cluster.local"}); len(c.Diffs) != 0 || c.Clusters != 2 {
		t.Errorf("agreeing clusters: %+v", c)
	}
	if c := CompareWaypointServices(services, namespaces, gateways, wp, []string{orders, "inbound-vip|8080|http|search.web.svc.cluster.local"}); len(c.Diffs) != 1 || !strings.Contains(c.Diffs[0], "search.web.svc.cluster.local:8080: istiod pushed it") {
		t.Errorf("a Service the model does not bind: %q", c.Diffs)
	}
	if c := CompareWaypointServices(services, namespaces, gateways, wp, nil); len(c.Diffs) != 1 || !strings.Contains(c.Diffs[0], "orders.shop.svc.cluster.local:8080: the model has it") {
		t.Errorf("no cluster for a Service the model binds: %q", c.Diffs)
	}
}
