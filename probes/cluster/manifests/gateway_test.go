package manifests_test

import (
	"testing"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
)

// Gateways as users have them: Istio's bookinfo sample (v1alpha3 in the
// releases most clusters were set up from), read as the v1 the probes list.
func TestDecodeReadsOlderGatewaysAsV1(t *testing.T) {
	for _, version := range []string{"v1alpha3", "v1beta1", "v1"} {
		doc := `apiVersion: networking.istio.io/` + version + `
kind: Gateway
metadata:
  name: bookinfo-gateway
  namespace: default
spec:
  selector:
    istio: ingressgateway
  servers:
  - port:
      number: 8080
      name: http
      protocol: HTTP
    hosts:
    - "*"
`
		objs, err := manifests.Decode("bookinfo-gateway.yaml", []byte(doc), true)
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		gw, ok := objs[0].(*networkingv1.Gateway)
		if !ok {
			t.Fatalf("%s: decoded %T, want *v1.Gateway", version, objs[0])
		}
		if gw.Spec.GetSelector()["istio"] != "ingressgateway" || gw.Spec.GetServers()[0].GetPort().GetNumber() != 8080 || gw.Spec.GetServers()[0].GetHosts()[0] != "*" {
			t.Errorf("%s: spec %v", version, &gw.Spec)
		}
	}
	// A misspelt field in data this project writes is an error, as for
	// the other Istio kinds.
	bad := "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g, namespace: default}\nspec:\n  selectr: {istio: ingressgateway}\n"
	if _, err := manifests.Decode("bad.yaml", []byte(bad), true); err == nil {
		t.Error("a misspelt Gateway field decoded without error")
	}
}
