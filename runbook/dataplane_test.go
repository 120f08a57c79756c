package runbook_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

// A hypothesis is open only if the data plane on the path can produce it
// and no passed step rules it out. The causes that arise only in an Envoy
// that load-balances to the Service (the caller's sidecar or gateway, the
// Service's waypoint), or also at the destination's sidecar (an idle
// reset), are no hypothesis where the path has none of them.

// envoyOnly are the causes of the catalogue that only a caller's Envoy or
// the Service's waypoint produce, and the idle reset, which the
// destination's sidecar produces too.
var envoyOnly = []string{"outlier.all-ejected", "circuit-breaker.overflow", "upstream.idle-reset", "xds.stale",
	"mtls.origination-conflict", "dr.subset-no-pods", "vs.subset-undefined", "serviceentry.missing", "config.not-visible"}

func stateOf(states []runbook.CauseState, cause string) (runbook.CauseState, bool) {
	for _, st := range states {
		if st.Cause == cause {
			return st, true
		}
	}
	return runbook.CauseState{}, false
}

// The caller has no sidecar (a CronJob in a namespace without injection)
// and the Service's pods have theirs: the metrics come from the
// destination's sidecar and could not be read. A UO there is no
// DestinationRule pool of the caller's: circuit-breaker.overflow cannot
// happen on this path, and outlier detection neither.
func TestCallerWithoutSidecarOpensNoCallerEnvoyHypothesis(t *testing.T) {
	g := load503(t)
	facts := with(healthy(), map[string]probes.Facts{
		"target":    {"target_source_has_sidecar": false},
		"dataplane": {"dataplane_source": "none"},
		"mtls": {"mtls_source_sidecar": false, "mtls_client_config": "no-sidecar", "mtls_client_sends": "plaintext",
			"mtls_upstream_mode": "STRICT", "mtls_mismatch": "plaintext-to-strict"},
	})
	r := newRecorded(facts).
		Fail("metrics", probes.StatusError, "cannot read /stats/prometheus of shop/web-1").
		Fail("envoy-clusters", probes.StatusSkipped, "source pod shop/client-1 has no istio-proxy").
		Fail("envoy-config", probes.StatusSkipped, "source pod shop/client-1 has no istio-proxy").
		Fail("proxy-status", probes.StatusSkipped, "source pod shop/client-1 has no istio-proxy")
	s := newSession(t, g, r, runbook.ModeAuto)
	if _, err := s.Auto(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(causeIDs(s.Findings()), "mtls.plaintext-to-strict") {
		t.Fatalf("findings %v, want mtls.plaintext-to-strict", causeIDs(s.Findings()))
	}
	for _, u := range s.Undecided() {
		if u.Cause == "circuit-breaker.overflow" || u.Cause == "outlier.all-ejected" {
			t.Errorf("open hypothesis %s, though no Envoy of the path produces it: %s", u.Cause, u.Why)
		}
	}
	st, ok := stateOf(s.Assess(), "circuit-breaker.overflow")
	if !ok || st.State != runbook.CauseRuledOut || len(st.Reasons) == 0 || !strings.Contains(st.Reasons[0], "caller") {
		t.Errorf("circuit-breaker.overflow: %+v, want ruled out, saying the caller has no Envoy", st)
	}
	if len(s.CallerNeeded()) > 0 {
		t.Errorf("a caller is named, yet %v wait for one", s.CallerNeeded())
	}
}

// The service side of an ambient Service without a waypoint (no caller
// named or found): the Service's pods have no sidecar, so only a caller's
// Envoy could produce the Envoy-only causes, and there is no caller to
// read. They are no open hypothesis: they wait for a caller, and the
// session says so.
func TestAmbientServiceSideOpensNoEnvoyHypothesis(t *testing.T) {
	g := load503(t)
	facts := with(ambientHealthy(), map[string]probes.Facts{
		"target": {"target_source_named": false, "target_source_found": false},
		"dataplane": {"waypoint_named": false, "waypoint_name": "", "waypoint_state": "none", "waypoint_ready_pods": 0,
			"waypoint_bound_condition": "", "waypoint_traversed": false},
	})
	delete(facts["dataplane"], "dataplane_source")
	delete(facts["target"], "target_source_has_sidecar")
	r := newRecorded(facts).
		Fail("access-log", probes.StatusSkipped, "no istio-proxy log to read: none of the 3 selected pods has a sidecar").
		Fail("metrics", probes.StatusError, "cannot find a meshed pod of web").
		Fail("envoy-clusters", probes.StatusSkipped, "no source pod").
		Fail("envoy-config", probes.StatusSkipped, "no source pod").
		Fail("envoy-listeners", probes.StatusSkipped, "no source pod").
		Fail("proxy-status", probes.StatusSkipped, "no source pod").
		Fail("ambient-policy", probes.StatusSkipped, "no caller to judge the path from").
		Fail("ztunnel", probes.StatusWarn, "0 ztunnel logs read").
		Fail("waypoint", probes.StatusSkipped, "no waypoint")
	s, err := runbook.NewSession(runbook.Config{
		Graph: g, Target: cluster.Target{Namespace: "shop", Service: "web", Port: 80}, Probes: probes.ByID(), Run: r.Run,
		Clock: newClock().Now, User: "oncall", Mode: runbook.ModeAuto, SessionID: "service-side",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Auto(context.Background()); err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, u := range s.Undecided() {
		open[u.Cause] = true
	}
	for _, c := range []string{"outlier.all-ejected", "circuit-breaker.overflow", "upstream.idle-reset"} {
		if open[c] {
			t.Errorf("open hypothesis %s: no Envoy of the known path produces it", c)
		}
		if !slices.Contains(s.CallerNeeded(), c) {
			t.Errorf("%s is not said to wait for a caller: %v", c, s.CallerNeeded())
		}
		st, _ := stateOf(s.Assess(), c)
		if st.State == runbook.CauseRuledOut {
			t.Errorf("%s ruled out for want of a caller: %+v", c, st)
		}
	}
	if !open["ambient.hbone-blocked"] {
		t.Errorf("ambient.hbone-blocked, which the pods' ztunnel produces, is not open: %v", open)
	}
}

// Every cause that arises only in Envoy says so in the runbook, so that
// the rule above holds for all of them, not for the three an audit met.
func TestEnvoyOnlyCausesSayWhereTheyArise(t *testing.T) {
	g := load503(t)
	for _, id := range envoyOnly {
		c, ok := g.Cause(id)
		if !ok {
			t.Fatalf("no cause %s", id)
		}
		if len(c.ArisesIn) == 0 {
			t.Errorf("%s does not say which data plane produces it", id)
		}
	}
}
