package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// A mesh whose serviceScopeConfigs make every Service of a namespace
// labelled istio.io/global=true global, as the ambient multicluster docs
// write it.
const scopeMeshDoc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata:\n  mesh: |\n    serviceScopeConfigs:\n    - namespaceSelector: {matchLabels: {istio.io/global: \"true\"}}\n      scope: GLOBAL"

func wpNamespaceDoc(labels string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {istio.io/dataplane-mode: ambient" + labels + "}}"
}

func wpServiceDoc(labels string) string {
	return "apiVersion: v1\nkind: Service\nmetadata: {name: orders, namespace: shop, labels: {app: orders" + labels + "}}\nspec: {selector: {app: orders}, ports: [{name: http, port: 8080}]}"
}

// wpGatewayDoc is a waypoint as istioctl waypoint apply writes it, ready.
func wpGatewayDoc(name string) string {
	return fmt.Sprintf("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: %s, namespace: shop, labels: {istio.io/waypoint-for: service}}\n"+
		"spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE}]}\nstatus: {addresses: [{type: IPAddress, value: 10.96.0.50}]}", name)
}

// wpClusters: the current cluster (its istiod running ambient
// multi-network) with localDocs, ctx2 with remoteDocs.
func wpClusters(t *testing.T, localDocs, remoteDocs []string) cluster.Cluster {
	return wpClustersWith(t, multiNetworkIstiod, localDocs, remoteDocs)
}

func wpClustersWith(t *testing.T, istiod string, localDocs, remoteDocs []string) cluster.Cluster {
	local := recordedDocs(t, append([]string{scopeMeshDoc, mcNamespaceDoc("network1"), istiod}, localDocs...)...)
	remote := recordedDocs(t, append([]string{mcNamespaceDoc("network2")}, remoteDocs...)...)
	return withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}}
}

func runWaypoint(t *testing.T, c cluster.Cluster) Result {
	t.Helper()
	r := MultiClusterWaypointProbe{}.Run(context.Background(), c, mcTarget)
	if r.Status == StatusError || r.Status == StatusSkipped {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
	return r
}

// The waypoint removed from the remote cluster's namespace while the
// current one keeps it (#60985's "incorrect setup").
func TestMultiClusterWaypointLabelDiffers(t *testing.T) {
	r := runWaypoint(t, wpClusters(t,
		[]string{wpNamespaceDoc(`, istio.io/global: "true", istio.io/use-waypoint: waypoint`), wpServiceDoc(""), wpGatewayDoc("waypoint")},
		[]string{wpNamespaceDoc(`, istio.io/global: "true"`), wpServiceDoc(""), wpGatewayDoc("waypoint")}))
	got := r.Facts["mcwp_label_differs"].([]string)
	if r.Status != StatusFail || len(got) != 1 || !strings.HasPrefix(got[0], "ctx2: no istio.io/use-waypoint on the Service or its namespace, where ") ||
		!strings.HasSuffix(got[0], ": waypoint shop/waypoint (namespace label)") || r.Facts["mcwp_clusters_compared"] != 1 {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// The same label in both, the waypoint Gateway only in the current one.
func TestMultiClusterWaypointGatewayMissing(t *testing.T) {
	r := runWaypoint(t, wpClusters(t,
		[]string{wpNamespaceDoc(`, istio.io/global: "true"`), wpServiceDoc(", istio.io/use-waypoint: waypoint"), wpGatewayDoc("waypoint")},
		[]string{wpNamespaceDoc(`, istio.io/global: "true"`), wpServiceDoc(", istio.io/use-waypoint: waypoint"), wpGatewayDoc("other")}))
	got := r.Facts["mcwp_gateway_missing"].([]string)
	if r.Status != StatusFail || len(got) != 1 || !strings.HasPrefix(got[0], "ctx2: waypoint shop/waypoint (Gateway in ") || len(r.Facts["mcwp_label_differs"].([]string)) != 0 {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
}

// The same waypoint in both, and a Service that is not global (its
// namespace not selected): istiod merges nothing, whatever the labels.
func TestMultiClusterWaypointSameOrLocalPasses(t *testing.T) {
	same := runWaypoint(t, wpClusters(t,
		[]string{wpNamespaceDoc(`, istio.io/global: "true", istio.io/use-waypoint: waypoint`), wpServiceDoc(""), wpGatewayDoc("waypoint")},
		[]string{wpNamespaceDoc(`, istio.io/global: "true", istio.io/use-waypoint: waypoint`), wpServiceDoc(""), wpGatewayDoc("waypoint")}))
	if same.Status != StatusPass || same.Facts["mcwp_clusters_compared"] != 1 {
		t.Fatalf("same: %s: %s %v", same.Status, same.Summary, same.Facts)
	}
	local := runWaypoint(t, wpClusters(t,
		[]string{wpNamespaceDoc(`, istio.io/use-waypoint: waypoint`), wpServiceDoc(""), wpGatewayDoc("waypoint")},
		[]string{wpNamespaceDoc(""), wpServiceDoc("")}))
	if local.Status != StatusPass || local.Facts["mcwp_clusters_compared"] != 0 || len(local.Facts["mcwp_label_differs"].([]string)) != 0 {
		t.Fatalf("local: %s: %s %v", local.Status, local.Summary, local.Facts)
	}
}

type gatewaysRefused struct{ cluster.Cluster }

func (gatewaysRefused) GatewayAPIGateways(context.Context, string) ([]*gatewayv1.Gateway, error) {
	return nil, errors.New("gateways.gateway.networking.k8s.io is forbidden")
}

// A remote whose namespace is not in the input, or whose Gateways cannot
// be read, is unknown: never "no waypoint" nor "no Gateway".
func TestMultiClusterWaypointUnreadIsUnknown(t *testing.T) {
	noNS := runWaypoint(t, wpClusters(t,
		[]string{wpNamespaceDoc(`, istio.io/global: "true", istio.io/use-waypoint: waypoint`), wpServiceDoc(""), wpGatewayDoc("waypoint")},
		[]string{wpServiceDoc("")}))
	if noNS.Status != StatusWarn || len(noNS.Facts["mcwp_label_differs"].([]string)) != 0 || len(noNS.Facts["mcwp_unknown"].([]string)) != 1 {
		t.Fatalf("namespace not read: %s: %s %v", noNS.Status, noNS.Summary, noNS.Facts)
	}
	local := recordedDocs(t, scopeMeshDoc, mcNamespaceDoc("network1"), multiNetworkIstiod, wpNamespaceDoc(`, istio.io/global: "true"`), wpServiceDoc(", istio.io/use-waypoint: waypoint"), wpGatewayDoc("waypoint"))
	remote := recordedDocs(t, mcNamespaceDoc("network2"), wpNamespaceDoc(`, istio.io/global: "true"`), wpServiceDoc(", istio.io/use-waypoint: waypoint"))
	c := withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: gatewaysRefused{remote}}}}
	refused := runWaypoint(t, c)
	if refused.Status != StatusWarn || len(refused.Facts["mcwp_gateway_missing"].([]string)) != 0 || len(refused.Facts["mcwp_unknown"].([]string)) != 1 {
		t.Fatalf("gateways refused: %s: %s %v", refused.Status, refused.Summary, refused.Facts)
	}
}

// istiod without AMBIENT_ENABLE_MULTI_NETWORK reads no serviceScopeConfigs:
// the Service is each cluster's own, and no difference is a problem; the
// scope column says why.
func TestMultiClusterWaypointMultiNetworkOff(t *testing.T) {
	r := runWaypoint(t, wpClustersWith(t, istiodDoc("PILOT_ENABLE_AMBIENT", "true"),
		[]string{wpNamespaceDoc(`, istio.io/global: "true", istio.io/use-waypoint: waypoint`), wpServiceDoc(""), wpGatewayDoc("waypoint")},
		[]string{wpNamespaceDoc(`, istio.io/global: "true"`), wpServiceDoc(""), wpGatewayDoc("waypoint")}))
	if r.Status != StatusPass || len(r.Facts["mcwp_label_differs"].([]string)) != 0 || r.Facts["mcwp_clusters_compared"] != 0 || r.Facts["mcwp_istiod_multinetwork"] != false {
		t.Fatalf("status %s: %s %v", r.Status, r.Summary, r.Facts)
	}
	if len(r.Evidence.Rows) != 2 || !strings.Contains(r.Evidence.Rows[0][1], "without ambient multi-network") {
		t.Fatalf("rows %q", r.Evidence.Rows)
	}
}

func TestMultiClusterWaypointWithoutRemotesIsSkipped(t *testing.T) {
	r := MultiClusterWaypointProbe{}.Run(context.Background(), recordedDocs(t, wpServiceDoc("")), mcTarget)
	if r.Status != StatusSkipped || r.Summary != cluster.RemotesNotRecorded {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
}
