package main

import (
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// openScenario serves an embedded scenario (`demo NAME`, `check --scenario
// NAME`) and returns the target it was recorded for.
func openScenario(name string) (cluster.Cluster, *cluster.Target, error) {
	s, err := loadScenario(name)
	if err != nil {
		return nil, nil, err
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		return nil, nil, err
	}
	t := s.Target
	return c, &t, nil
}

// loadScenario reads an embedded scenario; an unknown name lists the valid
// ones, so a typo is one retry away.
func loadScenario(name string) (*recorded.Scenario, error) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == name {
			return recorded.Load(assets.FS, name)
		}
	}
	return nil, fmt.Errorf("no scenario %q; the scenarios are: %s", name, strings.Join(names, ", "))
}

// openManifests serves `kubectl get -o yaml` files from dir (`check
// --manifests DIR`): objects only, so the probes that need Envoy admin, logs
// or istiod report that nothing was recorded.
func openManifests(dir string, ci cluster.ClusterInfo) (cluster.Cluster, error) {
	objects, err := manifests.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	s := recorded.FromObjects(dir, objects)
	if ci.Server == "" {
		ci.Server = s.Source
	}
	return recorded.NewClusterWithInfo(s, ci)
}
