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

// remoteWorld is the current cluster given a remote one (context c2), as
// a live client given --remote-contexts is.
type remoteWorld struct {
	*recorded.Cluster
	remote cluster.Cluster
}

func (w remoteWorld) RemoteClusters() ([]cluster.Remote, string) {
	return []cluster.Remote{{Context: "c2", Cluster: w.remote}}, ""
}

const mcCaller = `---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec:
  containers: [{name: web, image: web}, {name: istio-proxy, image: proxyv2, env: [{name: ISTIO_META_NETWORK, value: network1}]}]
status: {phase: Running, podIP: 10.1.0.9}
`

func mcNamespace(network string) string {
	labels := ""
	if network != "" {
		labels = ", labels: {topology.istio.io/network: " + network + "}"
	}
	return "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: istio-system" + labels + "}\n"
}

func mcGateway(network string, ports string) string {
	return `---
apiVersion: v1
kind: Service
metadata: {name: istio-eastwestgateway, namespace: istio-system, labels: {istio: eastwestgateway, topology.istio.io/network: ` + network + `}}
spec: {type: LoadBalancer, selector: {istio: eastwestgateway}, ports: [` + ports + `]}
status: {loadBalancer: {ingress: [{ip: 172.18.2.10}]}}
`
}

const mcRemotePod = `---
apiVersion: v1
kind: Pod
metadata: {name: orders-b, namespace: shop, labels: {app: orders, security.istio.io/tlsMode: istio}}
spec:
  containers: [{name: app, image: x}, {name: istio-proxy, image: proxyv2, env: [{name: ISTIO_META_CLUSTER_ID, value: cluster2}]}]
status: {phase: Running, podIP: 10.2.0.5, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: orders-b, namespace: shop, labels: {kubernetes.io/service-name: orders}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [10.2.0.5], conditions: {ready: true}, targetRef: {kind: Pod, name: orders-b, namespace: shop}}]
`

func mcInput(t *testing.T, cause, remoteDocs string) *remedies.Input {
	t.Helper()
	localGateway := strings.NewReplacer("network2", "network1", "172.18.2.10", "172.18.1.10").Replace(mcGateway("network2", "{name: tls, port: 15443}"))
	local := world(t, orders+mcCaller+mcNamespace("network1")+localGateway)
	return &remedies.Input{Cluster: remoteWorld{Cluster: local.(*recorded.Cluster), remote: world(t, orders+mcRemotePod+remoteDocs)},
		Target: cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "web-1"}},
		Cause:  cause, Facts: probes.Facts{}}
}

// The remote cluster's istio-system without a network label: the patch
// labels it, in c2, with the network c2's gateway Service names.
func TestLabelRemoteNetworkPatchesTheRemoteNamespace(t *testing.T) {
	in := mcInput(t, "multicluster.network-label-missing", mcNamespace("")+mcGateway("network2", "{name: tls, port: 15443}"))
	out := remedies.LabelRemoteNetwork{}.Compute(context.Background(), in)
	if len(out.Patches) != 1 {
		t.Fatalf("out = %+v", out)
	}
	p := out.Patches[0]
	if p.Kind != "Namespace" || p.Name != "istio-system" || p.Context != "c2" || p.Type != patch.Merge ||
		string(p.Patch) != `{"metadata":{"labels":{"topology.istio.io/network":"network2"}}}` {
		t.Errorf("patch = %+v %s", p, p.Patch)
	}
	if !strings.Contains(p.Command(), "--context c2") || !strings.Contains(out.NotSimulated, "c2") {
		t.Errorf("command %q, not simulated %q", p.Command(), out.NotSimulated)
	}
}

// istio-system says net2, the gateway network2: the gateway Service is
// patched to the pods' network.
func TestAlignNetworkLabelsPatchesTheOddOne(t *testing.T) {
	in := mcInput(t, "multicluster.network-label-disagrees", mcNamespace("net2")+mcGateway("network2", "{name: tls, port: 15443}"))
	out := remedies.AlignNetworkLabels{}.Compute(context.Background(), in)
	if len(out.Patches) != 1 {
		t.Fatalf("out = %+v", out)
	}
	if p := out.Patches[0]; p.Kind != "Service" || p.Name != "istio-eastwestgateway" || p.Context != "c2" ||
		string(p.Patch) != `{"metadata":{"labels":{"topology.istio.io/network":"net2"}}}` {
		t.Errorf("patch = %+v %s", p, p.Patch)
	}
	// istio-system names the caller's own network: it is the odd one.
	in = mcInput(t, "multicluster.network-label-disagrees", mcNamespace("network1")+mcGateway("network2", "{name: tls, port: 15443}"))
	out = remedies.AlignNetworkLabels{}.Compute(context.Background(), in)
	if len(out.Patches) != 1 || out.Patches[0].Kind != "Namespace" || string(out.Patches[0].Patch) != `{"metadata":{"labels":{"topology.istio.io/network":"network2"}}}` {
		t.Errorf("namespace on the caller's network: %+v", out)
	}
}

func TestAddGatewayPortAddsIstiosDefault(t *testing.T) {
	in := mcInput(t, "multicluster.gateway-unusable", mcNamespace("network2")+mcGateway("network2", "{name: status-port, port: 15021}"))
	out := remedies.AddGatewayPort{}.Compute(context.Background(), in)
	if len(out.Patches) != 1 {
		t.Fatalf("out = %+v", out)
	}
	p := out.Patches[0]
	want := `[{"op":"test","path":"/spec/ports","value":[{"name":"status-port","port":15021,"targetPort":0}]},{"op":"add","path":"/spec/ports/-","value":{"name":"tls","protocol":"TCP","port":15443,"targetPort":15443}}]`
	if p.Type != patch.JSON || p.Context != "c2" || string(p.Patch) != want {
		t.Errorf("patch = %+v\n%s\nwant %s", p, p.Patch, want)
	}
	// A pending load balancer's address is in no object: unpatchable.
	pending := strings.Replace(mcGateway("network2", "{name: tls, port: 15443}"), "status: {loadBalancer: {ingress: [{ip: 172.18.2.10}]}}", "", 1)
	out = remedies.AddGatewayPort{}.Compute(context.Background(), mcInput(t, "multicluster.gateway-unusable", mcNamespace("network2")+pending))
	if len(out.Patches) != 0 || !strings.Contains(out.Unpatchable, "no address") {
		t.Errorf("pending: %+v", out)
	}
}
