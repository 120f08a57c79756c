package main

import (
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/scenario"
)

// openScenario serves an embedded scenario (`demo NAME`, `check --scenario
// NAME`) and returns the target it was recorded for.
func openScenario(name string) (probes.Cluster, *probes.Target, error) {
	s, err := loadScenario(name)
	if err != nil {
		return nil, nil, err
	}
	c, err := scenario.NewCluster(s)
	if err != nil {
		return nil, nil, err
	}
	t := s.Target
	return c, &t, nil
}

// loadScenario reads an embedded scenario; an unknown name lists the valid
// ones, so a typo is one retry away.
func loadScenario(name string) (*scenario.Scenario, error) {
	names, err := scenario.Names(assets.FS)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == name {
			return scenario.Load(assets.FS, name)
		}
	}
	return nil, fmt.Errorf("no scenario %q; the scenarios are: %s", name, strings.Join(names, ", "))
}

// openManifests serves `kubectl get -o yaml` files from dir (`check
// --manifests DIR`): objects only, so the probes that need Envoy admin, logs
// or istiod report that nothing was recorded.
func openManifests(dir string, ci probes.ClusterInfo) (probes.Cluster, error) {
	s, err := scenario.LoadManifests(dir)
	if err != nil {
		return nil, err
	}
	if ci.Server == "" {
		ci.Server = s.Source
	}
	return scenario.NewClusterWithInfo(s, ci)
}
