package callersearch_test

import (
	"context"
	"strings"
	"testing"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
)

// A gateway that answers 404 NR never reaches the target's pods: the
// caller search finds it through the VirtualService routing to the
// target and the Gateway it names, even when the name resolves to no
// Gateway (the mistake the triage must find).
func TestFindCallersFindsAGatewayThroughTheVirtualService(t *testing.T) {
	for name, why := range map[string]string{
		"gateway-vs-not-bound":  `names "public-gateway", which is no Gateway (shop/public-gateway)`,
		"gateway-host-mismatch": "which VirtualService shop/orders-public routing to the target names",
	} {
		tg, _, c := withoutCaller(t, name)
		res := callersearch.Find(context.Background(), cluster.NewCache(c), tg, callersearch.Options{})
		found := false
		for _, cl := range res.Callers {
			if cl.Pod.Name == "istio-ingressgateway-6b7f9c8d4-k2x7p" {
				found = true
				if cl.By != callersearch.ByGateway || !strings.Contains(cl.Why, why) || !cl.Sidecar {
					t.Errorf("%s: caller %+v, want found by %s: ...%s", name, cl, callersearch.ByGateway, why)
				}
			}
		}
		if !found {
			t.Errorf("%s: the gateway is not among the callers: %s", name, res.Summary())
		}
	}
}

// An Istio Gateway's selector matches gateway pods in every namespace (as
// istiod reads it, without PILOT_SCOPE_GATEWAY_TO_NAMESPACE): a Helm
// install runs the gateway in istio-ingress while the Gateway sits in the
// app's namespace, and the caller search finds it there.
func TestFindCallersFindsAGatewayInItsOwnNamespace(t *testing.T) {
	objs := meshtest.Objects(t, "../mesh/testdata/model", "base.yaml", "gateway-vs-bound.yaml")
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			if o.Name == "istio-ingressgateway-5b7c9-x2x4t" {
				o.Namespace = "istio-ingress"
			}
		case *networkingv1.Gateway:
			o.Namespace = "shop"
		case *networkingv1.VirtualService:
			if o.Name == "orders-public" {
				o.Spec.Gateways = []string{"shop/public"}
			}
		}
	}
	c, err := recorded.NewCluster(recorded.FromObjects("gateway-in-istio-ingress", objs))
	if err != nil {
		t.Fatal(err)
	}
	res := callersearch.Find(context.Background(), cluster.NewCache(c), cluster.Target{Namespace: "shop", Service: "orders", Port: 8080}, callersearch.Options{})
	for _, cl := range res.Callers {
		if cl.Pod == (cluster.PodRef{Namespace: "istio-ingress", Name: "istio-ingressgateway-5b7c9-x2x4t"}) {
			if cl.By != callersearch.ByGateway || !strings.Contains(cl.Why, "pod of Gateway shop/public") {
				t.Errorf("caller %+v, want found by %s through Gateway shop/public", cl, callersearch.ByGateway)
			}
			return
		}
	}
	t.Errorf("the gateway in istio-ingress is not among the callers: %s", res.Summary())
}
