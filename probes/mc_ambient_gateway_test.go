package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// ambientCallerDoc is web-1 enrolled in ambient by the CNI, no sidecar.
const ambientCallerDoc = `apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {istio.io/dataplane-mode: ambient}, annotations: {ambient.istio.io/redirection: enabled}}
spec: {containers: [{name: web, image: web}]}
status: {phase: Running, podIP: 10.1.0.9}`

// ambientGatewayDoc is a network gateway as the ambient multi-network docs
// write it: class, network label, listener protocol and status address.
func ambientGatewayDoc(name, class, network, protocol string, withAddress bool) string {
	status := "{}"
	if withAddress {
		status = "{addresses: [{type: IPAddress, value: 172.18.2.20}]}"
	}
	return fmt.Sprintf("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: %s, namespace: istio-system, labels: {topology.istio.io/network: %s}}\n"+
		"spec: {gatewayClassName: %s, listeners: [{name: mesh, port: 15008, protocol: %s}]}\nstatus: %s", name, network, class, protocol, status)
}

// istiodDoc is the caller's cluster's istiod running with env, as
// NAME: VALUE pairs.
func istiodDoc(env ...string) string {
	var vars []string
	for i := 0; i+1 < len(env); i += 2 {
		vars = append(vars, fmt.Sprintf("{name: %s, value: %q}", env[i], env[i+1]))
	}
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: istiod-1, namespace: istio-system, labels: {app: istiod}}\n" +
		"spec: {containers: [{name: discovery, image: pilot, env: [" + strings.Join(vars, ", ") + "]}]}\nstatus: {phase: Running}"
}

// multiNetworkIstiod is istiod as the ambient multi-network docs install
// it.
var multiNetworkIstiod = istiodDoc("PILOT_ENABLE_AMBIENT", "true", "AMBIENT_ENABLE_MULTI_NETWORK", "true")

// ambientClusters: the ambient caller in ctx1 (network1) with an istiod
// running ambient multi-network, orders-b in ctx2 (network2);
// localGateways in the caller's cluster, remoteGateways in ctx2.
func ambientClusters(t *testing.T, localGateways, remoteGateways []string) withRemotes {
	return ambientClustersWith(t, multiNetworkIstiod, localGateways, remoteGateways)
}

// ambientClustersWith is ambientClusters with istiod, a document ("" for
// no istiod pod), in the caller's cluster.
func ambientClustersWith(t *testing.T, istiod string, localGateways, remoteGateways []string) withRemotes {
	docs := []string{mcNamespaceDoc("network1"), mcServiceDoc, ambientCallerDoc}
	if istiod != "" {
		docs = append(docs, istiod)
	}
	local := recordedDocs(t, append(docs, localGateways...)...)
	remote := recordedDocs(t, append([]string{mcNamespaceDoc("network2"), mcServiceDoc, mcPodDoc("orders-b", "10.2.0.5", "cluster2"), mcSliceDoc("10.2.0.5", "orders-b")}, remoteGateways...)...)
	return withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}}
}

func runAmbientGateway(t *testing.T, c cluster.Cluster) Result {
	t.Helper()
	r := MultiClusterAmbientGatewayProbe{}.Run(context.Background(), c, mcTarget)
	if r.Status == StatusError || r.Status == StatusSkipped {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
	return r
}

// The remote network has only its own istio-east-west Gateway, which
// istiod takes from a remote cluster with no HBONE port: ztunnel is given
// no gateway for network2.
func TestMultiClusterAmbientGatewayMissing(t *testing.T) {
	r := runAmbientGateway(t, ambientClusters(t, nil, []string{ambientGatewayDoc("istio-eastwestgateway", "istio-east-west", "network2", "HBONE", true)}))
	missing, _ := r.Facts["mcamb_networks_without_gateway"].([]string)
	if r.Status != StatusFail || len(missing) != 1 || missing[0] != "network2: ctx2: 10.2.0.5 (pod orders-b)" {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
	if eps := r.Facts["mcamb_remote_endpoints"].([]string); len(eps) != 1 || eps[0] != "ctx2: 10.2.0.5 (pod orders-b) network network2" {
		t.Fatalf("mcamb_remote_endpoints = %q", eps)
	}
	if !strings.Contains(r.Evidence.Raw, "  ctx2: 10.2.0.5 (pod orders-b) network network2\n") || len(r.Evidence.Rows) != 1 || r.Evidence.Rows[0][0] != "ctx2" {
		t.Fatalf("evidence: %q %q", r.Evidence.Raw, r.Evidence.Rows)
	}
	if gws := r.Facts["mcamb_gateways"].([]string); len(gws) != 1 || !strings.HasPrefix(gws[0], "ctx2: istio-system/istio-eastwestgateway (class istio-east-west, network network2): none: a remote cluster's") {
		t.Fatalf("mcamb_gateways = %q", gws)
	}
	// In the caller's cluster, a Gateway lacking the HBONE listener, the
	// status address, or of the east-west class gives ztunnel nothing.
	for name, gw := range map[string]string{
		"no HBONE listener": ambientGatewayDoc("network2", "istio-remote", "network2", "TLS", true),
		"no address":        ambientGatewayDoc("network2", "istio-remote", "network2", "HBONE", false),
		"east-west class":   ambientGatewayDoc("network2", "istio-east-west", "network2", "HBONE", true),
	} {
		r := runAmbientGateway(t, ambientClusters(t, []string{gw}, nil))
		if missing, _ := r.Facts["mcamb_networks_without_gateway"].([]string); r.Status != StatusFail || len(missing) != 1 {
			t.Fatalf("%s: status %s: %s %v", name, r.Status, r.Summary, r.Facts)
		}
	}
}

// An istio-remote Gateway in the caller's cluster for network2, with an
// HBONE listener and a status address: istiod gives ztunnel its gateway.
func TestMultiClusterAmbientGatewayPresentPasses(t *testing.T) {
	r := runAmbientGateway(t, ambientClusters(t, []string{ambientGatewayDoc("network2", "istio-remote", "network2", "HBONE", true)}, nil))
	if missing, set := r.Facts["mcamb_networks_without_gateway"].([]string); r.Status != StatusPass || !set || len(missing) != 0 || r.Facts["mcamb_gateways_read"] != true {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
	if gws := r.Facts["mcamb_gateways"].([]string); len(gws) != 1 || !strings.HasSuffix(gws[0], ": 172.18.2.20:15008") {
		t.Fatalf("mcamb_gateways = %q", gws)
	}
}

// The caller's cluster's Gateways not read: whether a gateway exists is
// unknown, never "none".
func TestMultiClusterAmbientGatewayUnreadIsUnknown(t *testing.T) {
	c := ambientClusters(t, nil, nil)
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc, ambientCallerDoc, multiNetworkIstiod)
	refused := withRemotes{Cluster: local.(*recorded.Cluster), remotes: c.remotes}
	r := MultiClusterAmbientGatewayProbe{}.Run(context.Background(), gatewaysRefusedRemotes{gatewaysRefused{refused}, refused}, mcTarget)
	if _, set := r.Facts["mcamb_networks_without_gateway"]; set || r.Status != StatusWarn || r.Facts["mcamb_gateways_read"] != false ||
		len(r.Facts["mcamb_remote_endpoints"].([]string)) != 1 || len(r.Facts["mcamb_unknown"].([]string)) != 1 {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// istiod without AMBIENT_ENABLE_MULTI_NETWORK (the default) gives ztunnel
// no other cluster's workload: no gateway is missing, for no gateway
// would bring them; the step says so. Not known (no istiod in the
// caller's cluster, a value from a reference) leaves the gateway finding
// standing beside the unknown.
func TestMultiClusterAmbientGatewayMultiNetworkOff(t *testing.T) {
	for name, istiod := range map[string]string{
		"unset":           istiodDoc("PILOT_ENABLE_AMBIENT", "true"),
		"false":           istiodDoc("PILOT_ENABLE_AMBIENT", "true", "AMBIENT_ENABLE_MULTI_NETWORK", "false"),
		"without ambient": istiodDoc("AMBIENT_ENABLE_MULTI_NETWORK", "true"),
	} {
		r := runAmbientGateway(t, ambientClustersWith(t, istiod, nil, []string{ambientGatewayDoc("istio-eastwestgateway", "istio-east-west", "network2", "HBONE", true)}))
		if _, set := r.Facts["mcamb_networks_without_gateway"]; set || r.Facts["mcamb_istiod_multinetwork"] != false || r.Status != StatusWarn ||
			!strings.Contains(r.Summary, "istiod runs without ambient multi-network (istiod-1: AMBIENT_ENABLE_MULTI_NETWORK") {
			t.Errorf("%s: status %s: %s %v", name, r.Status, r.Summary, r.Facts)
		}
		if !strings.Contains(r.Evidence.Raw, "istiod's ambient multi-network: off") {
			t.Errorf("%s: evidence %q", name, r.Evidence.Raw)
		}
	}
	for name, istiod := range map[string]string{
		"no istiod pod":    "",
		"from a reference": strings.Replace(istiodDoc("PILOT_ENABLE_AMBIENT", "true"), "env: [", "env: [{name: AMBIENT_ENABLE_MULTI_NETWORK, valueFrom: {configMapKeyRef: {name: istiod-env, key: multi}}}, ", 1),
	} {
		r := runAmbientGateway(t, ambientClustersWith(t, istiod, nil, nil))
		missing, _ := r.Facts["mcamb_networks_without_gateway"].([]string)
		_, set := r.Facts["mcamb_istiod_multinetwork"]
		unknown, _ := r.Facts["mcamb_unknown"].([]string)
		if set || len(missing) != 1 || r.Status != StatusFail || len(unknown) != 1 || !strings.Contains(unknown[0], "AMBIENT_ENABLE_MULTI_NETWORK") {
			t.Errorf("%s: status %s: %s %v", name, r.Status, r.Summary, r.Facts)
		}
	}
}

// The other cluster on the caller's own network: no gateway is needed,
// yet without ambient multi-network its endpoint is not given to ztunnel
// either, and the step says so.
func TestMultiClusterAmbientGatewayMultiNetworkOffSameNetwork(t *testing.T) {
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc, ambientCallerDoc, istiodDoc("PILOT_ENABLE_AMBIENT", "true"))
	remote := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc, mcPodDoc("orders-b", "10.2.0.5", "cluster2"), mcSliceDoc("10.2.0.5", "orders-b"))
	r := runAmbientGateway(t, withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}})
	if len(r.Facts["mcamb_remote_endpoints"].([]string)) != 0 || r.Facts["mcamb_istiod_multinetwork"] != false || r.Status != StatusWarn ||
		!strings.Contains(r.Summary, "none of the 1 endpoint in the other clusters, on any network") {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// gatewaysRefusedRemotes refuses the Gateways of the current cluster and
// keeps its remotes.
type gatewaysRefusedRemotes struct {
	gatewaysRefused
	w withRemotes
}

func (g gatewaysRefusedRemotes) RemoteClusters() ([]cluster.Remote, string) {
	return g.w.RemoteClusters()
}

// The caller's control-plane namespace not read: its network, and so
// which endpoints are on another, is unknown; the Gateways were read.
func TestMultiClusterAmbientGatewayCallerNetworkUnknown(t *testing.T) {
	r := runAmbientGateway(t, namespaceRefused{ambientClusters(t, nil, nil)})
	_, missingSet := r.Facts["mcamb_networks_without_gateway"]
	_, endpointsSet := r.Facts["mcamb_remote_endpoints"]
	if missingSet || endpointsSet || r.Status != StatusWarn || r.Facts["mcamb_gateways_read"] != true {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// namespaceRefused refuses every namespace of the current cluster.
type namespaceRefused struct{ withRemotes }

func (namespaceRefused) GetNamespace(context.Context, string) (*corev1.Namespace, error) {
	return nil, errors.New("namespaces is forbidden")
}

// A sidecar caller is the multicluster step's; one cluster is skipped as
// the other multi-cluster steps skip it.
func TestMultiClusterAmbientGatewaySidecarCallerIsNotIts(t *testing.T) {
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc, mcPodDoc("web-1", "10.1.0.9", "cluster1"))
	c := withRemotes{Cluster: local.(*recorded.Cluster), remotes: ambientClusters(t, nil, nil).remotes}
	if r := (MultiClusterAmbientGatewayProbe{}).Run(context.Background(), c, mcTarget); r.Status != StatusSkipped || !strings.Contains(r.Summary, "not an ambient pod") {
		t.Fatalf("sidecar: %s: %s", r.Status, r.Summary)
	}
	if r := (MultiClusterAmbientGatewayProbe{}).Run(context.Background(), recordedDocs(t, mcServiceDoc, ambientCallerDoc), mcTarget); r.Status != StatusSkipped || r.Summary != cluster.RemotesNotRecorded {
		t.Fatalf("one cluster: %s: %s", r.Status, r.Summary)
	}
}
