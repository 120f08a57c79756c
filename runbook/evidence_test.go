package runbook_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/runbooktest"
)

type recordedT = runbooktest.Recorded

// autoFindings runs the unattended triage on the healthy facts with over
// applied; setup may fail probes or give them commands.
func autoTriage(t *testing.T, over map[string]probes.Facts, setup func(*recordedT)) (*runbook.Session, []runbook.Finding) {
	t.Helper()
	rec := newRecorded(with(healthy(), over))
	if setup != nil {
		setup(rec)
	}
	s := newSession(t, load503(t), rec, runbook.ModeAuto)
	f, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

// What the configuration makes certain needs no runtime evidence: with
// the access log unreadable, a route sending everything to an empty subset
// is still a high-confidence finding, which names the evidence that would
// confirm it and the command that reads it.
func TestConfigCertainCauseWithoutRuntimeEvidence(t *testing.T) {
	_, findings := autoTriage(t, map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "vs_found": true, "dr_subsets_without_pods": []string{"orders/v2"},
			"dr_subsets_without_pods_routed": []string{"orders/v2"}, "dr_subset_no_pods_percent": 100},
	}, func(r *recordedT) {
		r.Fail("access-log", probes.StatusError, "cannot read the istio-proxy log of shop/client-1: forbidden")
		r.Commands("access-log", "kubectl logs -n shop client-1 -c istio-proxy --since=30m")
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"dr.subset-no-pods"}) {
		t.Fatalf("findings %v, want dr.subset-no-pods alone", got)
	}
	f := findings[0]
	if f.Confidence != runbook.ConfidenceHigh {
		t.Errorf("confidence %s, want high: the configuration makes it certain", f.Confidence)
	}
	var missing []runbook.MissingEvidence
	for _, ev := range f.Evidence {
		missing = append(missing, ev.Missing...)
	}
	if len(missing) == 0 || !strings.Contains(missing[0].Describe, "503 UH") ||
		!reflect.DeepEqual(missing[0].Commands, []string{"kubectl logs -n shop client-1 -c istio-proxy --since=30m"}) {
		t.Errorf("missing evidence %+v, want the proxy log's UH with the command that reads it", missing)
	}
}

// A canary's 10% on an empty subset breaks 10% of requests: a finding,
// whose summary says the share.
func TestPartialWeightIsAFindingWithItsShare(t *testing.T) {
	_, findings := autoTriage(t, map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "vs_found": true, "dr_subsets_without_pods": []string{"orders/v3"},
			"dr_subsets_without_pods_routed": []string{"orders/v3"}, "dr_subset_no_pods_percent": 10},
	}, nil)
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"dr.subset-no-pods"}) {
		t.Fatalf("findings %v", got)
	}
	if !strings.HasPrefix(findings[0].Summary, "10% of requests") {
		t.Errorf("summary %q, want it to open with the share of requests", findings[0].Summary)
	}
}

// Runtime evidence that contradicts the configuration lowers the finding:
// only 2xx and no 503 in the caller's log.
func TestContradictingEvidenceLowersConfidence(t *testing.T) {
	_, findings := autoTriage(t, map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "vs_found": true, "vs_undefined_subsets": []string{"orders/v9"}, "vs_undefined_subset_percent": 100},
		"access-log":        {"log_lines": 500, "log_2xx": 500, "log_503": 0},
	}, nil)
	if len(findings) != 1 || findings[0].Confidence != runbook.ConfidenceLow || findings[0].Evidence[0].Weakened == "" {
		t.Fatalf("findings %+v, want vs.subset-undefined lowered to low, saying why", findings)
	}
}

// A step that fails and no cause explains is a finding of its own, not a
// silent "no finding".
func TestFailedStepWithoutCauseIsUnexplained(t *testing.T) {
	_, findings := autoTriage(t, nil, func(r *recordedT) {
		r.Fail("destination-rules", probes.StatusFail, "100% of shop/orders http[0]'s requests go to payments.shop.svc.cluster.local, for which the caller has no cluster")
	})
	if len(findings) != 1 || findings[0].Cause != runbook.Unexplained || findings[0].Step != "destination-rules" {
		t.Fatalf("findings %+v, want one unexplained finding for destination-rules", findings)
	}
	if !strings.Contains(findings[0].Summary, "payments") || len(findings[0].Fixes) == 0 {
		t.Errorf("unexplained finding %+v: it must carry the step's evidence and what to look at next", findings[0])
	}
}

// The 503s in the log are the symptom every cause explains; a cause found
// elsewhere leaves no unexplained access-log failure beside it.
func TestSymptomStepsAreExplainedByAnyCause(t *testing.T) {
	_, findings := autoTriage(t, map[string]probes.Facts{
		"proxy-status": {"xds_stale_types": []string{"EDS"}, "xds_eds": "STALE"},
	}, func(r *recordedT) {
		r.Fail("access-log", probes.StatusFail, "40 503s")
		r.Fail("proxy-status", probes.StatusFail, "EDS STALE")
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"xds.stale"}) {
		t.Fatalf("findings %v, want xds.stale alone", got)
	}
}

// Causes whose evidence could not be read are hypotheses, most likely
// first, each with what would settle it.
func TestUndecidedCausesAreRankedHypotheses(t *testing.T) {
	s, findings := autoTriage(t, map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "dr_outlier_aggressive": true, "dr_outlier_consecutive_5xx": 1, "dr_outlier_max_ejection_percent": 100},
	}, func(r *recordedT) {
		r.Fail("envoy-clusters", probes.StatusSkipped, "no calling pod named: name one with --from")
		r.Commands("envoy-clusters", "istioctl proxy-config endpoint <caller> --cluster 'outbound|80||web.shop.svc.cluster.local'")
	})
	if len(findings) != 0 {
		t.Fatalf("findings %v", causeIDs(findings))
	}
	und := s.Undecided()
	if len(und) == 0 {
		t.Fatal("no hypothesis")
	}
	var outlier *runbook.Undecided
	for i := range und {
		if und[i].Cause == "outlier.all-ejected" {
			outlier = &und[i]
		}
	}
	if outlier == nil || len(outlier.Settle) == 0 || !strings.Contains(outlier.Settle[0], "proxy-config endpoint") {
		t.Errorf("hypotheses %+v, want outlier.all-ejected settled by the caller's endpoints", und)
	}
	// Most likely first: the rule closest to firing (TestHypothesesRank-
	// ByWhatAlreadyHolds), then confidence; among those with nothing
	// holding yet, by confidence alone.
	var none []runbook.Undecided
	for _, u := range und {
		if len(u.Holding) == 0 {
			none = append(none, u)
		}
	}
	for i := 1; i < len(none); i++ {
		if none[i].Confidence.Rank() > none[i-1].Confidence.Rank() {
			t.Errorf("hypotheses not ranked: %s (%s) before %s (%s)", none[i-1].Cause, none[i-1].Confidence, none[i].Cause, none[i].Confidence)
		}
	}
}
