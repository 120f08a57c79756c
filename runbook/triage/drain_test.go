package triage

import (
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

// The ambient rollout race is read on each caller's own data plane: from
// the ingress gateway (the scenario's caller) by its 503s to
// envoy://connect_originate of the ending pods, in the access-log step;
// from web, an ambient caller with no Envoy, by its ztunnel's refused
// connects to their 15008, in the ztunnel step. Both reach the one cause.
func TestAmbientRolloutDrainFromEachCaller(t *testing.T) {
	src, err := Scenario("ambient-rollout-drain")
	if err != nil {
		t.Fatal(err)
	}
	web := cluster.PodRef{Namespace: "shop", Name: "web-5b7d9c6f4-q8w2e"}
	for _, c := range []struct {
		source *cluster.PodRef
		step   string
	}{{src.Target.Source, "access-log"}, {&web, "ztunnel"}} {
		t.Run(c.source.Name, func(t *testing.T) {
			target := *src.Target
			target.Source = c.source
			tr, err := Open(t.Context(), src, target, Options{Mode: runbook.ModeAuto, Probes: fastMetrics()})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Session.End("completed")
			if err := tr.Auto(t.Context()); err != nil {
				t.Fatal(err)
			}
			rep := tr.Report()
			if len(rep.Findings) != 1 || rep.Findings[0].Cause != "ambient.drain-before-removal" || rep.Findings[0].Confidence != runbook.ConfidenceMedium {
				t.Fatalf("findings %+v, want ambient.drain-before-removal (medium) alone", rep.Findings)
			}
			steps := map[string]bool{}
			for _, e := range rep.Findings[0].Evidence {
				steps[e.Step] = true
			}
			if !steps[c.step] {
				t.Errorf("evidence from steps %v, want the %s step's", steps, c.step)
			}
		})
	}
}
