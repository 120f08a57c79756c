package triage

import (
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
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
	src, err := Manifests("../../probes/cluster/manifests/testdata/kubectl-dump", cluster.ClusterInfo{Context: "prod"})
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
	if _, err := Manifests(t.TempDir(), cluster.ClusterInfo{}); err == nil {
		t.Error("empty dir: no error")
	}
}
