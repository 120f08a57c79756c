package runbook_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
)

// runEveryStep is the TUI's "run all remaining": every step that has not
// run, at once.
func runEveryStep(t *testing.T, s *runbook.Session) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, st := range s.Steps() {
		if _, ran := s.Result(st.ID); ran {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.RunRemaining(ctx, st.ID); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// One "run all" runs each probe once: a step whose facts another step's
// rules read runs once, as that step's dependency, and is then no re-run
// (the on-call asked for none).
func TestRunAllIsNoRerun(t *testing.T) {
	g := load503(t)
	r := newRecorded(portMismatchFacts())
	sink := &memSink{}
	s := newSession(t, g, r, runbook.ModeGuided, sink)
	_ = s.Start("callers-see-503")
	if _, err := s.RunStep(context.Background(), "target"); err != nil {
		t.Fatal(err)
	}
	s.RecordRunAll(nil)
	runEveryStep(t, s)
	perStep := map[string]int{}
	for _, ev := range sink.Events() {
		if p := ev.Probe; p != nil {
			if p.Rerun || p.Trigger == runbook.TriggerRerun {
				t.Errorf("%s recorded as a re-run (trigger %q)", p.Step, p.Trigger)
			}
			perStep[p.Step]++
		}
	}
	for step, n := range perStep {
		if n != 1 {
			t.Errorf("step %s recorded %d times, want once", step, n)
		}
	}
	for _, id := range g.Probes() {
		if n := r.Calls(id); n != 1 {
			t.Errorf("probe %s ran %d times, want once", id, n)
		}
	}
}

// A second run the on-call asks for is a re-run; one the engine needed is
// not, and does not make the on-call's next run a re-run either.
func TestRerunIsTheOnCallsSecondRun(t *testing.T) {
	g := load503(t)
	sink := &memSink{}
	s := newSession(t, g, newRecorded(portMismatchFacts()), runbook.ModeGuided, sink)
	_ = s.Start("rollout-503")
	ctx := context.Background()
	// endpoints' rules read target's facts: target runs as its dependency.
	_, _ = s.RunStep(ctx, "endpoints")
	_, _ = s.RunStep(ctx, "target")
	_, _ = s.RunStep(ctx, "target")
	var got []string
	for _, ev := range sink.Events() {
		if p := ev.Probe; p != nil && p.Step == "target" {
			got = append(got, p.Trigger)
		}
	}
	want := []string{runbook.TriggerNeeded, runbook.TriggerUser, runbook.TriggerRerun}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("target's runs: %v, want %v", got, want)
	}
}

// The step the on-call chose comes first in the log; the probes it needed
// follow, marked as run for it.
func TestDependenciesAreLoggedAfterTheChosenStep(t *testing.T) {
	g := load503(t)
	sink := &memSink{}
	s := newSession(t, g, newRecorded(portMismatchFacts()), runbook.ModeGuided, sink)
	_ = s.Start("rollout-503")
	if _, err := s.RunStep(context.Background(), "endpoints"); err != nil {
		t.Fatal(err)
	}
	var runs []*runbook.ProbeRan
	for _, ev := range sink.Events() {
		if ev.Probe != nil {
			runs = append(runs, ev.Probe)
		}
	}
	if len(runs) < 2 || runs[0].Step != "endpoints" || runs[0].Trigger != runbook.TriggerUser {
		t.Fatalf("first probe_ran = %+v, want the chosen endpoints step", runs[0])
	}
	for _, p := range runs[1:] {
		if p.Trigger != runbook.TriggerNeeded || p.For != "endpoints" {
			t.Errorf("dependency %s: trigger %q for %q, want needed for endpoints", p.Step, p.Trigger, p.For)
		}
	}
}

// Nothing is recorded after session_ended: a probe cancelled by the quit
// that reports late, a note typed after the end.
func TestNothingAfterSessionEnded(t *testing.T) {
	g := load503(t)
	sink := &memSink{}
	s := newSession(t, g, newRecorded(portMismatchFacts()), runbook.ModeGuided, sink)
	_ = s.Start("callers-see-503")
	_, _ = s.RunStep(context.Background(), "target")
	s.End("quit")
	_, _ = s.RunStep(context.Background(), "endpoints")
	s.Note("", "late")
	evs := sink.Events()
	if last := evs[len(evs)-1]; last.Kind != runbook.EventSessionEnded {
		t.Fatalf("last event %s, want session_ended; events after it were recorded", last.Kind)
	}
}

// In a mesh of sidecars the ambient steps are off the path: running them
// (run all) opens no hypothesis about ztunnel, and no hypothesis offers
// ztunnel's commands.
func TestOffPathStepsOpenNoHypothesis(t *testing.T) {
	g := load503(t)
	r := newRecorded(healthy()).
		Fail("ztunnel", probes.StatusSkipped, "no ztunnel on the path").
		Fail("ambient-policy", probes.StatusSkipped, "not in ambient").
		Commands("ztunnel", "kubectl logs -n istio-system ZTUNNEL_POD")
	s := newSession(t, g, r, runbook.ModeGuided)
	_ = s.Start("callers-see-503")
	runEveryStep(t, s)
	for _, u := range s.Undecided() {
		t.Errorf("open hypothesis %s on a healthy sidecar mesh: %s", u.Cause, u.Why)
		for _, c := range u.Settle {
			if strings.Contains(c, "ztunnel") {
				t.Errorf("%s settles with a ztunnel command: %s", u.Cause, c)
			}
		}
	}
	if f := s.Findings(); len(f) != 0 {
		t.Errorf("findings on a healthy mesh: %v", causeIDs(f))
	}
}

// In ambient, with no waypoint and an ambient caller, no Envoy is on the
// path: the caller's access log cannot be read, and the causes only an
// Envoy of the caller produces are no hypothesis.
func TestAmbientPathOffersNoEnvoyHypothesis(t *testing.T) {
	g := load503(t)
	facts := ambientNoWaypoint()
	r := newRecorded(facts).
		Fail("access-log", probes.StatusSkipped, "no istio-proxy log to read").
		Fail("envoy-clusters", probes.StatusSkipped, "the caller has no sidecar").
		Fail("envoy-config", probes.StatusSkipped, "the caller has no sidecar").
		Fail("metrics", probes.StatusSkipped, "no sidecar metrics").
		Commands("access-log", "kubectl logs -n shop client-1 -c istio-proxy")
	s := newSession(t, g, r, runbook.ModeAuto)
	if _, err := s.Auto(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, u := range s.Undecided() {
		switch u.Cause {
		case "outlier.all-ejected", "circuit-breaker.overflow", "upstream.idle-reset", "dr.subset-no-pods", "vs.subset-undefined":
			t.Errorf("open hypothesis %s needs the caller's Envoy, and the caller is in ambient: %s", u.Cause, u.Why)
		}
		for _, c := range u.Settle {
			if strings.Contains(c, "-c istio-proxy") {
				t.Errorf("%s settles with a command into the caller's istio-proxy, which it has not: %s", u.Cause, c)
			}
		}
	}
}

func ambientNoWaypoint() map[string]probes.Facts {
	return with(ambientHealthy(), map[string]probes.Facts{
		"dataplane": {"waypoint_named": false, "waypoint_name": "", "waypoint_state": "none", "waypoint_ready_pods": 0,
			"waypoint_bound_condition": "", "waypoint_traversed": false},
		"destination-rules": {"dr_found": true, "dr_names": []string{"web"}, "dr_outlier_aggressive": true,
			"dr_outlier_consecutive_5xx": 1, "dr_outlier_max_ejection_percent": 100},
		"ztunnel": {"ztunnel_service_waypoint": ""},
		"waypoint": {"waypoint_pods_read": 0, "waypoint_cluster_present": false, "waypoint_hosts_total": 0, "waypoint_hosts_healthy": 0,
			"waypoint_log_entries": 0},
	})
}

// Every cause on the path ends in exactly one state, and a cause is ruled
// out only by the steps whose rules for it did not hold: never because an
// unrelated step passed, never while one of its rules is undecided.
func TestCauseStatesAreDisjointAndReasoned(t *testing.T) {
	g := load503(t)
	facts := ambientHealthy()
	r := newRecorded(facts).Fail("ambient-policy", probes.StatusSkipped, "no caller to judge the path from")
	s := newSession(t, g, r, runbook.ModeAuto)
	if _, err := s.Auto(context.Background()); err != nil {
		t.Fatal(err)
	}
	states := map[string]runbook.CauseState{}
	for _, st := range s.Assess() {
		if _, dup := states[st.Cause]; dup {
			t.Errorf("cause %s assessed twice", st.Cause)
		}
		states[st.Cause] = st
	}
	open := map[string]bool{}
	for _, u := range s.Undecided() {
		open[u.Cause] = true
		if states[u.Cause].State != runbook.CauseOpen {
			t.Errorf("%s is an open hypothesis but assessed %q", u.Cause, states[u.Cause].State)
		}
	}
	// ztunnel's and ambient-policy's rules for authz-rejected could not all
	// decide: the waypoint passing does not rule it out.
	if st := states["ambient.authz-rejected"]; st.State != runbook.CauseOpen {
		t.Errorf("ambient.authz-rejected: %+v, want open (ambient-policy could not judge the path)", st)
	}
	for id, st := range states {
		if st.State == runbook.CauseOpen && !open[id] {
			t.Errorf("%s assessed open but is no hypothesis", id)
		}
		// Ruled out by the steps whose rules did not hold, or because no
		// data plane of the path produces it, which it says.
		if st.State == runbook.CauseRuledOut && len(st.Steps) == 0 && (len(st.Reasons) == 0 || !strings.Contains(st.Reasons[0], "arises only in")) {
			t.Errorf("%s ruled out by no step and for no reason: %+v", id, st)
		}
	}
}
