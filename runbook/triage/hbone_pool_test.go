package triage

import (
	"testing"

	"github.com/meshtriage/meshtriage/runbook"
)

// A pod IP reused under the gateway's pooled HBONE connections is read in
// the gateway's own log: its UC to envoy://connect_originate of an IP whose
// pod started after the gateway's Envoy and before the resets. The UC are
// no longer the app's idle reset, and the fix the triage offers is a
// retry-on-reset patch it proved, beside the mesh config it cannot patch.
func TestAmbientHBONEPoolIPReusedFromTheGateway(t *testing.T) {
	src, err := Scenario("ambient-hbone-pool-ip-reused")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Open(t.Context(), src, *src.Target, Options{Mode: runbook.ModeAuto, Probes: fastMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Session.End("completed")
	if err := tr.Auto(t.Context()); err != nil {
		t.Fatal(err)
	}
	rep := tr.Report()
	if len(rep.Findings) != 1 || rep.Findings[0].Cause != "ambient.hbone-pool-ip-reused" || rep.Findings[0].Confidence != runbook.ConfidenceMedium {
		t.Fatalf("findings %+v, want ambient.hbone-pool-ip-reused (medium) alone", rep.Findings)
	}
	f := rep.Findings[0]
	steps := map[string]bool{}
	for _, e := range f.Evidence {
		steps[e.Step] = true
	}
	if !steps["access-log"] {
		t.Errorf("evidence from steps %v, want the access-log step's", steps)
	}
	var patched, unpatchable bool
	for _, fix := range f.Fix.Directions {
		switch fix.ID {
		case "retry-on-reset":
			patched = len(fix.Patches) > 0
		case "hbone-idle-timeout":
			unpatchable = fix.Unpatchable != ""
		}
	}
	if !patched || !unpatchable {
		t.Errorf("retry-on-reset patched %v, hbone-idle-timeout said unpatchable %v; want both: %+v", patched, unpatchable, f.Fix.Directions)
	}
}
