package triage

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
)

func TestScenarioSource(t *testing.T) {
	src, err := Scenario("startup-race")
	if err != nil {
		t.Fatal(err)
	}
	c, target := src.Cluster, src.Target
	if target.Service != "orders-api" || target.Source == nil {
		t.Errorf("target = %+v", target)
	}
	if _, err := c.GetService(t.Context(), target.Namespace, target.Service); err != nil {
		t.Errorf("target service through the scenario cluster: %v", err)
	}
	if !strings.Contains(src.Label, "scenario startup-race") || src.Runner != nil || src.Extra["scenario"] != "startup-race" {
		t.Errorf("source = %+v: a scenario is labelled, named for resume and runs no action", src)
	}
	if _, err := Scenario("nope"); err == nil || !strings.Contains(err.Error(), "healthy") {
		t.Errorf("unknown scenario error = %v, want the list of names", err)
	}
}

func TestManifestsSource(t *testing.T) {
	src, err := Manifests([]string{"../../probes/cluster/manifests/testdata/kubectl-dump"}, manifests.Options{Namespace: "default"}, cluster.ClusterInfo{Context: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	c := src.Cluster
	if info := c.Info(); info.Context != "prod" || !strings.Contains(info.Server, "kubectl-dump") {
		t.Errorf("Info = %+v", info)
	}
	if _, err := c.GetService(t.Context(), "shop", "orders"); err != nil {
		t.Errorf("GetService: %v", err)
	}
	if _, err := Manifests([]string{t.TempDir()}, manifests.Options{}, cluster.ClusterInfo{}); err == nil {
		t.Error("empty dir: no error")
	}
	if len(src.Skipped) != 0 || src.Extra != nil {
		t.Errorf("skipped %v, extra %v", src.Skipped, src.Extra)
	}
	skipping, err := Manifests([]string{"../../probes/cluster/manifests/testdata/unknown-kind"}, manifests.Options{}, cluster.ClusterInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if len(skipping.Skipped) != 2 || !strings.HasPrefix(skipping.Skipped[0], "skipped ") || !strings.Contains(skipping.Skipped[0], "all.yaml document 2 (cert-manager.io/v1 Certificate)") {
		t.Errorf("skipped lines = %q", skipping.Skipped)
	}
	// A dump with Gateway API routes serves a triage (it used to abort:
	// "no kind is registered for the type v1.GatewayClass"), its routes
	// read as istiod reads them.
	gw, err := Manifests([]string{"../../probes/cluster/manifests/testdata/gateway-api"}, manifests.Options{Namespace: "shop"}, cluster.ClusterInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Cluster.GetPod(t.Context(), "shop", "orders-6d9f7b8c5-k2x9p"); err != nil {
		t.Errorf("GetPod: %v", err)
	}
	if len(gw.Skipped) != 0 {
		t.Errorf("skipped lines = %q, want none", gw.Skipped)
	}
	if routes, err := cluster.GatewayAPIList(t.Context(), gw.Cluster, cluster.HTTPRoutes, ""); err != nil || len(routes) != 2 {
		t.Errorf("HTTPRoutes = %d, %v; want the dump's 2", len(routes), err)
	}
}

// A recording opens as the cluster it was taken from, names its target,
// and records its absolute path for `log resume`.
func TestRecordingSource(t *testing.T) {
	s, err := recorded.Load(assets.FS, "healthy")
	if err != nil {
		t.Fatal(err)
	}
	s.Name, s.Context = "capture", "prod-eu"
	files, err := s.Files(incidentlog.Redact)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := recorded.WriteDir(dir, files); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(dir))
	src, err := Recording("rec", "default")
	if err != nil {
		t.Fatal(err)
	}
	if src.Target == nil || src.Target.String() != s.Target.String() || src.Extra["recording"] != dir ||
		src.Label != "prod-eu (recording rec)" || src.Runner != nil {
		t.Errorf("source = %+v, target %v", src, src.Target)
	}
	if _, err := Recording(filepath.Join(dir, "missing"), "default"); err == nil {
		t.Error("missing recording: no error")
	}
}
