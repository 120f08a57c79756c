package manifests_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// TestLoadManifestsKubectlDump reads `kubectl get -o yaml` output: a List
// of mixed kinds, fields from a newer Kubernetes (kept lenient for real
// dumps), and Istio objects at the older versions a cluster may serve.
func TestLoadManifestsKubectlDump(t *testing.T) {
	objects, err := manifests.LoadDir("testdata/kubectl-dump")
	if err != nil {
		t.Fatal(err)
	}
	s := recorded.FromObjects("testdata/kubectl-dump", objects)
	if len(s.Objects) != 6 || len(s.Envoy) != 0 || len(s.Logs) != 0 || len(s.Istiod) != 0 {
		t.Fatalf("objects %d, envoy %d, logs %d, istiod %d; want 6 objects and no recorded data", len(s.Objects), len(s.Envoy), len(s.Logs), len(s.Istiod))
	}
	ci := cluster.ClusterInfo{Context: "prod-eu-west-1"}
	c, err := recorded.NewClusterWithInfo(s, ci)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if info := c.Info(); info.Context != "prod-eu-west-1" || info.ControlPlaneNamespace != cluster.DefaultControlPlane || !strings.Contains(info.Server, "kubectl-dump") {
		t.Errorf("Info = %+v", info)
	}
	pods, err := c.ListPods(ctx, "shop", map[string]string{"app": "orders"})
	if err != nil || len(pods) != 1 || pods[0].Status.ContainerStatuses[0].Ready {
		t.Errorf("ListPods = %v, %v", pods, err)
	}
	slices, err := c.EndpointSlices(ctx, "shop", "orders")
	if err != nil || len(slices) != 1 {
		t.Errorf("EndpointSlices = %v, %v", slices, err)
	}
	drs, err := c.DestinationRules(ctx, "shop")
	if err != nil || len(drs) != 1 || drs[0].Spec.GetTrafficPolicy().GetOutlierDetection().GetConsecutive_5XxErrors().GetValue() != 1 {
		t.Fatalf("v1beta1 DestinationRule not served as v1: %v, %v", drs, err)
	}
	if drs[0].APIVersion != networkingv1.SchemeGroupVersion.String() {
		t.Errorf("DestinationRule apiVersion = %q", drs[0].APIVersion)
	}
	if pas, err := c.PeerAuthentications(ctx, "shop"); err != nil || len(pas) != 1 {
		t.Errorf("v1beta1 PeerAuthentication not served as v1: %v, %v", pas, err)
	}
	pod := cluster.PodRef{Namespace: "shop", Name: "orders-69f4d7c8b-fx2mw"}
	_, err = c.EnvoyAdmin(ctx, pod, "/clusters?format=json")
	if !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("EnvoyAdmin on manifests: %v, want ErrNotFound", err)
	}
	if _, err := c.Logs(ctx, pod, cluster.LogOptions{Container: mesh.ProxyContainer}); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("Logs on manifests: %v, want ErrNotFound", err)
	}
	if _, err := c.ServerVersion(ctx); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("ServerVersion on manifests: %v, want ErrNotFound (unknown, not the fake's placeholder)", err)
	}
	// A probe on manifests reads the objects and says plainly what is missing.
	res := probes.Run(ctx, probes.EndpointsProbe{}, c, cluster.Target{Namespace: "shop", Service: "orders", Port: 8080})
	if res.Facts["endpoints_ready"] != 0 || res.Facts["endpoints_not_ready"] != 1 {
		t.Errorf("endpoints probe on manifests: %s %v", res.Summary, res.Facts)
	}
}

func TestLoadManifestsReportsUnknownKinds(t *testing.T) {
	_, err := manifests.LoadDir("testdata/unknown-kind")
	var uk *manifests.UnknownKindError
	if !errors.As(err, &uk) {
		t.Fatalf("error = %v, want *manifests.UnknownKindError", err)
	}
	want := []string{
		"all.yaml document 2: cert-manager.io/v1 Certificate",
		"all.yaml document 3 item 2: monitoring.coreos.com/v1 ServiceMonitor",
	}
	if strings.Join(uk.Documents, "|") != strings.Join(want, "|") {
		t.Errorf("unknown documents = %q, want %q", uk.Documents, want)
	}
}

func TestLoadManifestsNeedsNamespaces(t *testing.T) {
	dir := t.TempDir()
	data := "apiVersion: v1\nkind: Service\nmetadata: {name: orders, namespace: shop}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: pay}\n"
	if err := os.WriteFile(filepath.Join(dir, "dump.yaml"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := manifests.LoadDir(dir)
	if err == nil || !strings.Contains(err.Error(), "pay, shop") || !strings.Contains(err.Error(), "kubectl get namespace shop -o yaml") {
		t.Errorf("error = %v, want the namespaces and the command to add them", err)
	}
}

func TestLoadManifestsEmptyDir(t *testing.T) {
	if _, err := manifests.LoadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no .yaml") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := manifests.LoadDir("testdata/does-not-exist"); err == nil {
		t.Error("missing dir: no error")
	}
}
