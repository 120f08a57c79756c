package remedies_test

import (
	"context"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/patch"
	"github.com/meshtriage/meshtriage/probes/remedies"
)

const ewGatewayPod = `---
apiVersion: v1
kind: Pod
metadata: {name: istio-eastwestgateway-7f9c-x2, namespace: istio-system, labels: {istio: eastwestgateway, pod-template-hash: 7f9c, topology.istio.io/network: network2}}
spec: {containers: [{name: istio-proxy, image: proxyv2, args: [proxy, router]}]}
status: {phase: Running, podIP: 10.2.0.20}
`

const ewIstiod = `---
apiVersion: v1
kind: Pod
metadata: {name: istiod-1, namespace: istio-system, labels: {app: istiod}}
spec: {containers: [{name: discovery, image: pilot}]}
status: {phase: Running}
`

func ewInput(t *testing.T, localDocs, remoteDocs string) *remedies.Input {
	t.Helper()
	localGateway := strings.NewReplacer("network2", "network1", "172.18.2.10", "172.18.1.10").Replace(mcGateway("network2", "{name: tls, port: 15443}"))
	local := world(t, orders+mcCaller+mcNamespace("network1")+localGateway+localDocs)
	remote := world(t, orders+mcRemotePod+mcNamespace("network2")+mcGateway("network2", "{name: tls, port: 15443, targetPort: 15443}")+ewGatewayPod+remoteDocs)
	return &remedies.Input{Cluster: remoteWorld{Cluster: local.(*recorded.Cluster), remote: remote},
		Target: cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "web-1"}},
		Cause:  "multicluster.eastwest-not-passthrough", Facts: probes.Facts{}}
}

// Primary-remote, no Gateway: the patch creates expose-services.yaml's
// Gateway in the config cluster (the current context), selecting the
// gateway's pods by its Service's selector, on its gateway port.
func TestExposeEastWestPassthroughCreatesTheGateway(t *testing.T) {
	out := remedies.ExposeEastWestPassthrough{}.Compute(context.Background(), ewInput(t, ewIstiod, ""))
	if len(out.Patches) != 1 {
		t.Fatalf("out = %+v", out)
	}
	p := out.Patches[0]
	want := `{"apiVersion":"networking.istio.io/v1","kind":"Gateway","metadata":{"name":"cross-network-gateway","namespace":"istio-system"},"spec":{"selector":{"istio":"eastwestgateway"},"servers":[{"hosts":["*.local"],"port":{"name":"tls","number":15443,"protocol":"TLS"},"tls":{"mode":"AUTO_PASSTHROUGH"}}]}}`
	if p.Type != patch.Create || p.Context != "" || string(p.Patch) != want {
		t.Errorf("patch = %+v\n%s\nwant %s", p, p.Patch, want)
	}
	if out.NotSimulated != "" {
		t.Errorf("a Gateway of the current cluster is simulated: %q", out.NotSimulated)
	}
}

// Multi-primary, the remote's Gateway in ISTIO_MUTUAL: its mode is
// patched, in the remote context.
func TestExposeEastWestPassthroughPatchesTheMode(t *testing.T) {
	gw := `---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: cross-network-gateway, namespace: istio-system}
spec:
  selector: {istio: eastwestgateway}
  servers:
  - port: {number: 15443, name: tls, protocol: TLS}
    tls: {mode: ISTIO_MUTUAL}
    hosts: ["*.local"]
`
	out := remedies.ExposeEastWestPassthrough{}.Compute(context.Background(), ewInput(t, ewIstiod, ewIstiod+gw))
	if len(out.Patches) != 1 {
		t.Fatalf("out = %+v", out)
	}
	p := out.Patches[0]
	want := `[{"op":"test","path":"/spec/servers/0/tls/mode","value":"ISTIO_MUTUAL"},{"op":"replace","path":"/spec/servers/0/tls/mode","value":"AUTO_PASSTHROUGH"}]`
	if p.Type != patch.JSON || p.Kind != "Gateway" || p.Context != "c2" || string(p.Patch) != want {
		t.Errorf("patch = %+v\n%s\nwant %s", p, p.Patch, want)
	}
	if !strings.Contains(out.NotSimulated, "c2") {
		t.Errorf("not simulated = %q", out.NotSimulated)
	}
}

// Neither cluster runs an istiod: whose Gateways count is not known, and
// nothing is patched.
func TestExposeEastWestPassthroughWithoutIstiodIsUnpatchable(t *testing.T) {
	out := remedies.ExposeEastWestPassthrough{}.Compute(context.Background(), ewInput(t, "", ""))
	if len(out.Patches) != 0 || out.Unpatchable == "" {
		t.Errorf("out = %+v", out)
	}
}
