package triage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/runbook"
)

// A triage without a caller searches for them, triages from each one read
// on the same read cache, and the report merges the sessions: the outlier
// finding holds from the caller's sidecar at high confidence (ejected hosts
// in its /clusters), from the service side at medium (configuration and
// upstream errors), and the incident log says whom it read and what each
// found.
func TestSearchCallersTriagesFromEachAndNotesIt(t *testing.T) {
	src, err := Scenario("outlier-all-ejected")
	if err != nil {
		t.Fatal(err)
	}
	target := *src.Target
	caller := *target.Source
	target.Source = nil
	logPath := filepath.Join(t.TempDir(), "incident.jsonl")
	tr, err := Open(t.Context(), src, target, Options{Mode: runbook.ModeAuto, LogPath: logPath, Probes: fastMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.SearchCallers(t.Context(), callersearch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Callers) != 1 || res.Callers[0].Pod != caller || len(tr.Callers) != 1 {
		t.Fatalf("callers %+v (sessions %d), want %s alone", res.Callers, len(tr.Callers), caller)
	}
	if err := tr.Auto(t.Context()); err != nil {
		t.Fatal(err)
	}
	rep := tr.Report()
	if len(rep.Findings) != 1 {
		t.Fatalf("findings %+v, want outlier.all-ejected once", rep.Findings)
	}
	f := rep.Findings[0]
	if f.Cause != "outlier.all-ejected" || f.Confidence != runbook.ConfidenceHigh || !f.ServiceSide || len(f.Callers) != 1 || f.Callers[0] != caller.String() {
		t.Errorf("finding %s %s service side %v callers %v; want outlier.all-ejected, high, from both", f.Cause, f.Confidence, f.ServiceSide, f.Callers)
	}
	callerSteps := 0
	for _, st := range rep.Steps {
		if st.Caller == caller.String() {
			callerSteps++
		}
	}
	if callerSteps == 0 {
		t.Errorf("no step from the caller: its Envoy checks are not in the report")
	}
	tr.Session.End("completed")
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"caller search (no --from): read 1 caller(s): " + caller.String(), "triage from caller " + caller.String() + ": outlier.all-ejected (high)"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("incident log lacks %q", want)
		}
	}
}

// A named caller is not searched for.
func TestSearchCallersRefusesANamedCaller(t *testing.T) {
	src, err := Scenario("healthy")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Open(t.Context(), src, *src.Target, Options{Mode: runbook.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.SearchCallers(t.Context(), callersearch.Options{}); err == nil {
		t.Error("searched for callers although --from named one")
	}
}

// fastMetrics is the registry with a metrics window short enough for a test:
// the recording answers the second sample at once.
func fastMetrics() map[string]probes.Probe {
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: -1}
	return reg
}
