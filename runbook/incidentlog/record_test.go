package incidentlog

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/runbooktest"
)

func load503(t *testing.T) *runbook.Graph {
	t.Helper()
	g, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// guided is a guided session over recorded facts, its events kept.
func guided(t *testing.T, r *runbooktest.Recorded) (*runbook.Session, *runbooktest.Sink) {
	t.Helper()
	sink := &runbooktest.Sink{}
	s, err := runbook.NewSession(runbook.Config{Graph: load503(t), Target: runbooktest.Target, Probes: probes.ByID(), Run: r.Run,
		Clock: runbooktest.NewClock().Now, User: "oncall", Mode: runbook.ModeGuided, SessionID: "rec", Sinks: []runbook.Sink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	return s, sink
}

// runAll is the TUI's "a": the request, then every step that has not run,
// at once.
func runAll(s *runbook.Session) {
	var ids []string
	for _, st := range s.Steps() {
		if _, ran := s.Result(st.ID); !ran {
			ids = append(ids, st.ID)
		}
	}
	s.RecordRunAll(ids)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = s.RunRemaining(context.Background(), id) }()
	}
	wg.Wait()
}

var timelineEntry = regexp.MustCompile(`(?m)^- \*\*[0-9:]+\*\* (.*)$`)

// timelineOf is the record's timeline entries, without their times.
func timelineOf(t *testing.T, md string) []string {
	t.Helper()
	start := strings.Index(md, "## Timeline")
	end := strings.Index(md[start+1:], "\n## ")
	var out []string
	for _, m := range timelineEntry.FindAllStringSubmatch(md[start:start+1+end], -1) {
		out = append(out, m[1])
	}
	return out
}

// The timeline is the on-call's actions in order and nothing else: the
// steps another step needed and the steps of the run-all are no entries of
// their own, a run-all is one entry, nothing is a re-run the on-call did
// not ask for, and nothing comes after "Session ended".
func TestTimelineIsTheOnCallsActions(t *testing.T) {
	facts := runbooktest.With(runbooktest.Healthy(), map[string]probes.Facts{
		"endpoints": {"endpoints_port_mismatch": true, "endpoints_mismatched_ports": []string{"80->8081"}},
		"access-log": {"log_503": 40, "log_5xx": 40, "log_flag_uf": 40, "log_2xx": 0, "log_connection_refused": 40,
			"log_transport_failures": []string{"delayed connect error: 111"}},
	})
	s, sink := guided(t, runbooktest.NewRecorded(facts))
	ctx := context.Background()
	_ = s.Start("callers-see-503")
	_, _ = s.RunStep(ctx, "target")
	_ = s.Choose("endpoints", runbook.ChosenByUser)
	_, _ = s.RunStep(ctx, "endpoints") // needs access-log: read for it
	runAll(s)
	_, _ = s.RunStep(ctx, "endpoints") // the on-call's second run
	s.Note("endpoints", "targetPort 8081, the app listens on 8080")
	_ = s.Hypothesis("service.port-mismatch", runbook.VerdictConfirmed, "the deploy changed the port")
	_ = s.ChooseFix("service.port-mismatch", "align-target-port")
	_, _ = s.Verify(ctx, "service.port-mismatch")
	s.End("quit")
	_, _ = s.RunStep(ctx, "mtls") // a late result after the quit

	md := Markdown(sink.Events(), nil)
	got := timelineOf(t, md)
	want := []string{
		"Triage started by",
		"Symptom: ",
		"Ran `target`",
		"Ran `endpoints` (the on-call's choice): ",
		"Ran all ",
		"Re-ran `endpoints`",
		"Note at `endpoints`: targetPort 8081",
		"Confirmed `service.port-mismatch`: the deploy changed the port",
		"Chose the fix `align-target-port` for `service.port-mismatch`",
		"Verified the fix of `service.port-mismatch`",
		"Session ended (quit); findings: `service.port-mismatch`",
	}
	if len(got) != len(want) {
		t.Fatalf("timeline has %d entries, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("entry %d = %q, want it to start %q", i+1, got[i], want[i])
		}
	}
	if strings.Count(md, "Re-ran") != 1 {
		t.Errorf("%d re-runs in the record, the on-call made one:\n%s", strings.Count(md, "Re-ran"), md)
	}
}

// A cause is in one place: never ruled out and "not ruled out" at once,
// and ruled out only by the steps whose rules for it did not hold. In
// ambient with the caller's path unjudged (ambient-policy skipped), the
// waypoint passing does not rule out ambient.authz-rejected.
func TestRuledOutAndNotCheckedAreDisjoint(t *testing.T) {
	r := runbooktest.NewRecorded(runbooktest.AmbientHealthy()).
		Fail("ambient-policy", probes.StatusSkipped, "no caller to judge the path from")
	sink := &runbooktest.Sink{}
	s, err := runbook.NewSession(runbook.Config{Graph: load503(t), Target: runbooktest.Target, Probes: probes.ByID(), Run: r.Run,
		Clock: runbooktest.NewClock().Now, Mode: runbook.ModeAuto, SessionID: "auto", Sinks: []runbook.Sink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Auto(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.End("completed")
	md := Markdown(sink.Events(), nil)
	section := func(title string) string {
		i := strings.Index(md, "## "+title)
		if i < 0 {
			return ""
		}
		rest := md[i+3:]
		if j := strings.Index(rest, "\n## "); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	ruled, unchecked := section("What was ruled out"), section("What was not checked")
	cause := regexp.MustCompile("`([a-z-]+\\.[a-z-]+)`")
	for _, m := range cause.FindAllStringSubmatch(ruled, -1) {
		if strings.Contains(unchecked, "`"+m[1]+"`") {
			t.Errorf("%s is both ruled out and not checked:\n%s\n%s", m[1], ruled, unchecked)
		}
	}
	if strings.Contains(ruled, "ambient.authz-rejected") {
		t.Errorf("ambient.authz-rejected ruled out though ambient-policy could not judge the path:\n%s", ruled)
	}
	if !strings.Contains(unchecked, "`ambient.authz-rejected`: open") {
		t.Errorf("ambient.authz-rejected is not listed as open:\n%s", unchecked)
	}
}
