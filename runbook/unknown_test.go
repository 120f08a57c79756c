package runbook_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
)

// Envoy admin unreachable must never read as "0 healthy hosts": the errored
// probe's facts are not trusted even if it left numbers behind, the rules
// reading them do not match, and the session says why.
func TestErroredProbeIsUnknownNotZero(t *testing.T) {
	g := load503(t)
	facts := with(healthy(), map[string]probes.Facts{
		// What a careless probe might leave behind on error.
		"envoy-clusters": {"envoy_hosts_total": 3, "envoy_hosts_healthy": 0, "envoy_hosts_outlier_ejected": 3},
		"access-log":     {"log_503": 30, "log_5xx": 30, "log_flag_uh": 30},
	})
	r := newRecorded(facts).Fail("envoy-clusters", probes.StatusError,
		"cannot read /clusters: Envoy admin of shop/client-1 unreachable: connection refused")
	sink := &memSink{}
	s := newSession(t, g, r, runbook.ModeAuto, sink)
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Fatalf("findings %v from an unreachable Envoy admin", causeIDs(findings))
	}
	if _, ok := s.Facts()["envoy_hosts_total"]; ok {
		t.Errorf("errored probe's facts are in the session")
	}
	var why []string
	for _, ev := range sink.Events() {
		if ev.Kind == runbook.EventRuleSkipped {
			why = append(why, ev.Skipped.Why)
		}
	}
	joined := strings.Join(why, "\n")
	want := "rule skipped: envoy_hosts_outlier_ejected unknown (envoy-clusters: error: cannot read /clusters: Envoy admin of shop/client-1 unreachable"
	if !strings.Contains(joined, want) {
		t.Errorf("rule_skipped events do not say why:\n%s", joined)
	}
}

// The same facts with the probe working do give the finding: the test above
// fails for the right reason.
func TestErroredProbeControl(t *testing.T) {
	g := load503(t)
	facts := with(healthy(), map[string]probes.Facts{
		"envoy-clusters": {"envoy_hosts_total": 3, "envoy_hosts_healthy": 0, "envoy_hosts_outlier_ejected": 3},
		"access-log":     {"log_503": 30, "log_5xx": 30, "log_flag_uh": 30},
	})
	s := newSession(t, g, newRecorded(facts), runbook.ModeAuto)
	findings, _ := s.Auto(context.Background())
	if got := causeIDs(findings); len(got) != 1 || got[0] != "outlier.all-ejected" {
		t.Fatalf("findings = %v", got)
	}
}

// idle-reset needs to know no rollout is in progress; with shutdown-order
// unknown it cannot decide, and it does not guess.
func TestIdleResetUndecidedWithoutRolloutFacts(t *testing.T) {
	g := load503(t)
	facts := with(healthy(), map[string]probes.Facts{
		"access-log": {"log_503": 7, "log_5xx": 7, "log_flag_uc": 7,
			"log_details": []string{"upstream_reset_before_response_started{connection_termination}"}},
	})
	r := newRecorded(facts).Fail("shutdown-order", probes.StatusError, "forbidden: cannot list pods in shop")
	s := newSession(t, g, r, runbook.ModeAuto)
	findings, _ := s.Auto(context.Background())
	if len(findings) != 0 {
		t.Fatalf("findings %v with shutdown-order unknown", causeIDs(findings))
	}
	var found bool
	for _, sk := range s.Skipped() {
		if sk.Step == "access-log" && strings.Contains(sk.Why, "shutdown_pods_terminating unknown (shutdown-order: error: forbidden") {
			found = true
		}
	}
	if !found {
		t.Errorf("skipped rules do not explain: %+v", s.Skipped())
	}
}

// A skipped probe (no sidecar to ask) is unknown too.
func TestSkippedProbeIsUnknown(t *testing.T) {
	g := load503(t)
	facts := with(healthy(), map[string]probes.Facts{
		"proxy-status": {"xds_stale_types": []string{"EDS"}},
	})
	r := newRecorded(facts).Fail("proxy-status", probes.StatusSkipped, "no source proxy to ask istiod about")
	s := newSession(t, g, r, runbook.ModeAuto)
	findings, _ := s.Auto(context.Background())
	if len(findings) != 0 {
		t.Fatalf("findings %v from a skipped probe", causeIDs(findings))
	}
}

func TestCannotTriage(t *testing.T) {
	g := load503(t)
	t.Run("target unreadable", func(t *testing.T) {
		r := newRecorded(healthy()).Fail("target", probes.StatusError, "cannot get service shop/web: connection refused")
		s := newSession(t, g, r, runbook.ModeAuto)
		_, err := s.Auto(context.Background())
		var te *runbook.TriageError
		if !errors.As(err, &te) || te.Step != "target" || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no such service", func(t *testing.T) {
		facts := with(healthy(), map[string]probes.Facts{"target": {"target_service_found": false, "target_pods_selected": 0}})
		r := newRecorded(facts).Fail("target", probes.StatusFail, "Service shop/web not found")
		s := newSession(t, g, r, runbook.ModeAuto)
		_, err := s.Auto(context.Background())
		var te *runbook.TriageError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err = %v", err)
		}
	})
}

// Without the access log the outlier rule cannot decide, but the
// configuration already says most of it: it is the first hypothesis, with
// what holds; a cause whose rules a known fact rules out is none.
func TestHypothesesRankByWhatAlreadyHolds(t *testing.T) {
	g := load503(t)
	facts := with(healthy(), map[string]probes.Facts{
		"destination-rules": {"dr_outlier_aggressive": true, "dr_outlier_max_ejection_percent": 100, "dr_outlier_consecutive_5xx": 1},
	})
	r := newRecorded(facts).Fail("access-log", probes.StatusError, "forbidden: cannot get pods/log in shop").
		Fail("envoy-clusters", probes.StatusError, "Envoy admin unreachable").
		Fail("metrics", probes.StatusError, "Envoy admin unreachable")
	s := newSession(t, g, r, runbook.ModeAuto)
	if _, err := s.Auto(context.Background()); err != nil {
		t.Fatal(err)
	}
	open := s.Undecided()
	if len(open) == 0 || open[0].Cause != "outlier.all-ejected" || !slices.Contains(open[0].Holding, "dr_outlier_aggressive") {
		t.Fatalf("first hypothesis %+v; want outlier.all-ejected with dr_outlier_aggressive holding", open)
	}
	for _, sk := range s.Skipped() {
		if sk.RuledOut {
			for _, u := range open {
				if u.Cause == sk.Cause && len(u.Rules) == 1 && u.Rules[0] == sk.When {
					t.Errorf("%s is a hypothesis on a rule a known fact rules out: %s", u.Cause, sk.When)
				}
			}
		}
	}
}
