package probes

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// ewServiceDoc is cluster 2's east-west gateway Service as
// gen-eastwest-gateway.sh writes it, its gateway port 15443 targeting
// targetPort.
func ewServiceDoc(targetPort int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: istio-eastwestgateway, namespace: istio-system, labels: {istio: eastwestgateway, topology.istio.io/network: network2}}
spec: {type: LoadBalancer, selector: {istio: eastwestgateway}, ports: [{name: status-port, port: 15021}, {name: tls, port: 15443, targetPort: %d}]}
status: {loadBalancer: {ingress: [{ip: 172.18.2.10}]}}`, targetPort)
}

const ewPodDoc = `apiVersion: v1
kind: Pod
metadata: {name: istio-eastwestgateway-1, namespace: istio-system, labels: {istio: eastwestgateway, topology.istio.io/network: network2}}
spec: {containers: [{name: istio-proxy, image: proxyv2, args: [proxy, router]}]}
status: {podIP: 10.2.0.20, phase: Running}`

const ewIstiodDoc = `apiVersion: v1
kind: Pod
metadata: {name: istiod-1, namespace: istio-system, labels: {app: istiod}}
spec: {containers: [{name: discovery, image: pilot}]}
status: {phase: Running}`

// ewGatewayDoc is expose-services.yaml's Gateway, with the port, mode and
// hosts given.
func ewGatewayDoc(port int, mode, hosts string) string {
	return fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: cross-network-gateway, namespace: istio-system}
spec:
  selector: {istio: eastwestgateway}
  servers:
  - port: {number: %d, name: tls, protocol: TLS}
    tls: {mode: %s}
    hosts: [%s]`, port, mode, hosts)
}

// ewClusters is a primary (local, with istiod and localDocs) and a remote
// on network2 whose east-west gateway carries the remote endpoint.
func ewClusters(t *testing.T, localDocs []string, remoteDocs ...string) cluster.Cluster {
	local := recordedDocs(t, append([]string{mcNamespaceDoc("network1"), mcServiceDoc,
		mcPodDoc("web-1", "10.1.0.9", "cluster1"), mcPodDoc("orders-a", "10.1.0.5", "cluster1"), mcSliceDoc("10.1.0.5", "orders-a"),
		strings.ReplaceAll(mcGatewayDoc("network1", 15443), "172.18.2.10", "172.18.1.10")}, localDocs...)...)
	remote := recordedDocs(t, append([]string{mcNamespaceDoc("network2"), mcServiceDoc,
		mcPodDoc("orders-b", "10.2.0.5", "cluster2"), mcSliceDoc("10.2.0.5", "orders-b"), ewPodDoc}, remoteDocs...)...)
	return withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}}
}

func runEastWest(t *testing.T, c cluster.Cluster) Result {
	t.Helper()
	r := EastWestPassthroughProbe{}.Run(context.Background(), c, mcTarget)
	if r.Status == StatusError {
		t.Fatalf("error: %s", r.Summary)
	}
	return r
}

// Primary-remote without expose-services.yaml's Gateway: istiod gives the
// remote gateway no 15443 SNI chains; the Gateways read are the config
// cluster's, and the evidence says so.
func TestEastWestPassthroughMissing(t *testing.T) {
	r := runEastWest(t, ewClusters(t, []string{ewIstiodDoc}, ewServiceDoc(15443)))
	got := r.Facts["ewpt_not_passthrough"].([]string)
	if r.Status != StatusFail || len(got) != 1 || !strings.HasPrefix(got[0], "ctx2: istio-system/istio-eastwestgateway port 15443→15443 (Gateways read in (current))") {
		t.Fatalf("status %s, ewpt_not_passthrough = %q, unknown %q", r.Status, got, r.Facts["ewpt_unknown"])
	}
}

// With it, the gateway forwards the target by SNI.
func TestEastWestPassthroughPresent(t *testing.T) {
	r := runEastWest(t, ewClusters(t, []string{ewIstiodDoc, ewGatewayDoc(15443, "AUTO_PASSTHROUGH", `"*.local"`)}, ewServiceDoc(15443)))
	if r.Status != StatusPass || len(r.Facts["ewpt_not_passthrough"].([]string)) != 0 || r.Facts["ewpt_gateways_checked"] != 1 {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// The server on the port in another tls mode, or with hosts that do not
// take the target, is named with why.
func TestEastWestPassthroughWrongModeOrHosts(t *testing.T) {
	for name, tc := range map[string]struct{ gateway, want string }{
		"istio-mutual": {ewGatewayDoc(15443, "ISTIO_MUTUAL", `"*.local"`), "tls mode ISTIO_MUTUAL, not AUTO_PASSTHROUGH"},
		"other-ns":     {ewGatewayDoc(15443, "AUTO_PASSTHROUGH", `"billing/*"`), "do not cover orders.shop.svc.cluster.local"},
		"other-port":   {ewGatewayDoc(15444, "AUTO_PASSTHROUGH", `"*.local"`), "no Gateway selecting the pods has a server on port 15443"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runEastWest(t, ewClusters(t, []string{ewIstiodDoc, tc.gateway}, ewServiceDoc(15443)))
			if got := r.Facts["ewpt_not_passthrough"].([]string); len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Fatalf("ewpt_not_passthrough = %q", got)
			}
		})
	}
}

// A label-selected Gateway's port is the Service port's number, which
// istiod translates to its targetPort: a server on 15443 serves the
// Service's 15443→15444; a server written on the Service port's target
// number does too (no Service port 15444 translates it).
func TestEastWestPassthroughThroughTargetPort(t *testing.T) {
	for _, port := range []int{15443, 15444} {
		r := runEastWest(t, ewClusters(t, []string{ewIstiodDoc, ewGatewayDoc(port, "AUTO_PASSTHROUGH", "'*'")}, ewServiceDoc(15444)))
		if r.Status != StatusPass {
			t.Errorf("server port %d: %s %v", port, r.Summary, r.Facts)
		}
	}
}

// Multi-primary: the remote cluster runs its own istiod, which serves its
// gateway and reads its own Gateways: the config cluster's Gateway does
// not count.
func TestEastWestPassthroughMultiPrimaryReadsGatewaysCluster(t *testing.T) {
	gw := ewGatewayDoc(15443, "AUTO_PASSTHROUGH", `"*.local"`)
	r := runEastWest(t, ewClusters(t, []string{ewIstiodDoc, gw}, ewServiceDoc(15443), ewIstiodDoc))
	if got := r.Facts["ewpt_not_passthrough"].([]string); len(got) != 1 || !strings.Contains(got[0], "(Gateways read in ctx2)") {
		t.Fatalf("ewpt_not_passthrough = %q", got)
	}
	r = runEastWest(t, ewClusters(t, []string{ewIstiodDoc}, ewServiceDoc(15443), ewIstiodDoc, gw))
	if r.Status != StatusPass {
		t.Fatalf("with the Gateway in ctx2: %s %v", r.Summary, r.Facts)
	}
}

// No istiod found in either cluster: which Gateways count is not known,
// never "no Gateway".
func TestEastWestPassthroughNoIstiodIsUnknown(t *testing.T) {
	r := runEastWest(t, ewClusters(t, nil, ewServiceDoc(15443)))
	if len(r.Facts["ewpt_not_passthrough"].([]string)) != 0 || len(r.Facts["ewpt_unknown"].([]string)) != 1 || r.Status != StatusWarn {
		t.Fatalf("status %s %v", r.Status, r.Facts)
	}
}

// PILOT_SCOPE_GATEWAY_TO_NAMESPACE on istiod: a Gateway of another
// namespace than the gateway pod's does not select it.
func TestEastWestPassthroughScopedToNamespace(t *testing.T) {
	gw := strings.Replace(ewGatewayDoc(15443, "AUTO_PASSTHROUGH", `"*.local"`), "namespace: istio-system", "namespace: shop", 1)
	scoped := strings.Replace(ewIstiodDoc, "image: pilot", "image: pilot, env: [{name: PILOT_SCOPE_GATEWAY_TO_NAMESPACE, value: \"true\"}]", 1)
	if r := runEastWest(t, ewClusters(t, []string{ewIstiodDoc, gw}, ewServiceDoc(15443))); r.Status != StatusPass {
		t.Errorf("unscoped: %s", r.Summary)
	}
	if r := runEastWest(t, ewClusters(t, []string{scoped, gw}, ewServiceDoc(15443))); r.Status != StatusFail {
		t.Errorf("scoped: %s", r.Summary)
	}
}
