package runbook_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

func portMismatchFacts() map[string]probes.Facts {
	return with(healthy(), map[string]probes.Facts{
		"endpoints": {"endpoints_port_mismatch": true, "endpoints_mismatched_ports": []string{"80->8081"}},
		"access-log": {"log_503": 40, "log_5xx": 40, "log_flag_uf": 40, "log_2xx": 0,
			"log_transport_failures": []string{"delayed connect error: 111"}},
	})
}

func TestGuidedSession(t *testing.T) {
	g := load503(t)
	r := newRecorded(portMismatchFacts())
	sink := &memSink{}
	s := newSession(t, g, r, runbook.ModeGuided, sink)
	ctx := context.Background()

	if err := s.Start("nope"); err == nil {
		t.Fatal("unknown symptom accepted")
	}
	if err := s.Start("callers-see-503"); err != nil {
		t.Fatal(err)
	}
	if s.Current() != "target" {
		t.Fatalf("current = %q", s.Current())
	}
	if p := s.Proposal(); !p.NeedsRun {
		t.Errorf("proposal before the step ran: %+v", p)
	}
	if _, err := s.RunStep(ctx, "target"); err != nil {
		t.Fatal(err)
	}
	p := s.Proposal()
	if p.Next != "envoy-clusters" || !strings.Contains(p.Reason, "3 pods selected") {
		t.Fatalf("proposal = %+v", p)
	}
	if err := s.Choose(p.Next, runbook.ChosenByEngine); err != nil {
		t.Fatal(err)
	}
	// The on-call goes their own way: straight to endpoints.
	if err := s.Choose("endpoints", runbook.ChosenByUser); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunStep(ctx, "endpoints"); err != nil {
		t.Fatal(err)
	}
	p = s.Proposal()
	if len(p.Causes) != 1 || p.Causes[0].Cause != "service.port-mismatch" {
		t.Fatalf("causes at endpoints = %+v", p.Causes)
	}
	if got := causeIDs(s.Findings()); !reflect.DeepEqual(got, []string{"service.port-mismatch"}) {
		t.Fatalf("findings = %v", got)
	}
	if err := s.Choose("service.port-mismatch", runbook.ChosenByUser); err != nil {
		t.Fatal(err)
	}
	if s.Current() != "endpoints" {
		t.Errorf("reaching a cause moved the walk to %q", s.Current())
	}
	s.Note("endpoints", "targetPort 8081, app listens on 8080")
	if err := s.Hypothesis("service.port-mismatch", runbook.VerdictConfirmed, "matches the deploy at 01:55"); err != nil {
		t.Fatal(err)
	}
	if err := s.Hypothesis("service.port-mismatch", "maybe", ""); err == nil {
		t.Error("bad verdict accepted")
	}
	if err := s.ChooseFix("service.port-mismatch", "align-target-port"); err != nil {
		t.Fatal(err)
	}
	if err := s.ChooseFix("service.port-mismatch", "restart-everything"); err == nil {
		t.Error("unknown fix accepted")
	}
	f := s.Findings()[0]
	if f.Verdict != runbook.VerdictConfirmed || f.ChosenFix != "align-target-port" {
		t.Errorf("finding verdict/fix = %q/%q", f.Verdict, f.ChosenFix)
	}
	s.End("completed")
	s.End("completed")

	kinds := []runbook.EventKind{}
	for _, ev := range sink.Events() {
		kinds = append(kinds, ev.Kind)
	}
	want := []runbook.EventKind{
		runbook.EventSessionStarted, runbook.EventBranchTaken, // start -> target
		runbook.EventProbeRan,                              // dataplane: the target step's rules read its facts
		runbook.EventProbeRan,                              // target
		runbook.EventBranchTaken, runbook.EventBranchTaken, // -> envoy-clusters, -> endpoints
	}
	if !reflect.DeepEqual(kinds[:len(want)], want) {
		t.Fatalf("events start %v, want %v", kinds[:len(want)], want)
	}
	if last := sink.Events()[len(sink.Events())-1]; last.Kind != runbook.EventSessionEnded ||
		!reflect.DeepEqual(last.Ended.Findings, []string{"service.port-mismatch"}) {
		t.Errorf("last event = %+v", last)
	}
	if n := strings.Count(strings.Join(kindStrings(kinds), " "), "session_ended"); n != 1 {
		t.Errorf("session_ended %d times", n)
	}
	// Events carry the session's clock, strictly increasing, and its ID.
	for i, ev := range sink.Events() {
		if ev.Session != "test-session" {
			t.Errorf("event %d session %q", i, ev.Session)
		}
		if i > 0 && !ev.Time.After(sink.Events()[i-1].Time) {
			t.Errorf("event %d time %v not after %v", i, ev.Time, sink.Events()[i-1].Time)
		}
	}
	// Who chose what is on record.
	var moves []string
	for _, ev := range sink.Events() {
		if ev.Kind == runbook.EventBranchTaken {
			moves = append(moves, ev.Branch.From+">"+ev.Branch.To+":"+ev.Branch.ChosenBy)
		}
	}
	wantMoves := []string{"start>target:user", "target>envoy-clusters:engine", "envoy-clusters>endpoints:user", "endpoints>service.port-mismatch:user"}
	if !reflect.DeepEqual(moves, wantMoves) {
		t.Errorf("moves = %v, want %v", moves, wantMoves)
	}
	if !reflect.DeepEqual(s.Events(), sink.Events()) {
		t.Errorf("Events() differs from what the sink got")
	}
}

func kindStrings(k []runbook.EventKind) []string {
	out := make([]string, len(k))
	for i, x := range k {
		out[i] = string(x)
	}
	return out
}

// In guided mode a step's rules may read other probes' facts; RunStep runs
// those probes too, so coming by another path does not leave them unknown.
func TestRunStepFetchesFactsItsRulesRead(t *testing.T) {
	g := load503(t)
	r := newRecorded(portMismatchFacts())
	s := newSession(t, g, r, runbook.ModeGuided)
	_ = s.Start("rollout-503")
	if _, err := s.RunStep(context.Background(), "endpoints"); err != nil {
		t.Fatal(err)
	}
	if r.Calls("target") != 1 {
		t.Errorf("target ran %d times, want once (endpoints rules read target_pods_selected)", r.Calls("target"))
	}
	if r.Calls("access-log") != 1 {
		t.Errorf("access-log ran %d times, want once (endpoints rules read log_flag_uf for the port-mismatch proof)", r.Calls("access-log"))
	}
	if r.Calls("mtls") != 0 {
		t.Errorf("mtls ran though endpoints does not read it")
	}
	for _, sk := range s.Skipped() {
		if sk.Step == "endpoints" {
			t.Errorf("endpoints rule skipped: %+v", sk)
		}
	}
}

func TestRerunSeesFreshData(t *testing.T) {
	g := load503(t)
	r := newRecorded(portMismatchFacts())
	r.Next = map[string]probes.Facts{"endpoints": healthy()["endpoints"]}
	sink := &memSink{}
	s := newSession(t, g, r, runbook.ModeFree, sink)
	_ = s.Start("callers-see-503")
	ctx := context.Background()
	_, _ = s.RunStep(ctx, "endpoints")
	if got := causeIDs(s.Findings()); len(got) != 1 {
		t.Fatalf("findings before the fix = %v", got)
	}
	res, _ := s.RunStep(ctx, "endpoints")
	if res.Facts["endpoints_port_mismatch"] != false {
		t.Fatalf("re-run did not see fresh data: %v", res.Facts)
	}
	if got := causeIDs(s.Findings()); len(got) != 0 {
		t.Errorf("findings after the fix = %v", got)
	}
	if s.Ran("endpoints") != 2 {
		t.Errorf("Ran = %d", s.Ran("endpoints"))
	}
	var reruns []bool
	for _, ev := range sink.Events() {
		if ev.Kind == runbook.EventProbeRan && ev.Probe.Step == "endpoints" {
			reruns = append(reruns, ev.Probe.Rerun)
			if !reflect.DeepEqual(ev.Probe.Causes, []string{"service.port-mismatch", "service.no-endpoints", "endpoints.none-ready"}) {
				t.Errorf("probe_ran causes = %v", ev.Probe.Causes)
			}
		}
	}
	if !reflect.DeepEqual(reruns, []bool{false, true}) {
		t.Errorf("rerun flags = %v", reruns)
	}
}

// A re-run resets a caching cluster so the probe reads the cluster again.
type resettable struct {
	cluster.Cluster
	resets int
}

func (r *resettable) Info() cluster.ClusterInfo { return cluster.ClusterInfo{Context: "test"} }
func (r *resettable) Reset()                    { r.resets++ }

func TestRerunResetsTheCache(t *testing.T) {
	g := load503(t)
	c := &resettable{}
	s, err := runbook.NewSession(runbook.Config{Graph: g, Cluster: c, Target: testTarget, Probes: probes.ByID(),
		Run: newRecorded(healthy()).Run, Clock: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Start("callers-see-503")
	_, _ = s.RunStep(context.Background(), "target")
	if c.resets != 0 {
		t.Fatalf("first run reset the cache")
	}
	_, _ = s.RunStep(context.Background(), "target")
	if c.resets != 1 {
		t.Fatalf("re-run: %d resets", c.resets)
	}
}

func TestVerify(t *testing.T) {
	g := load503(t)
	r := newRecorded(portMismatchFacts())
	// After the fix: targetPort aligned, 200s in the log.
	r.Next = map[string]probes.Facts{
		"endpoints":  healthy()["endpoints"],
		"access-log": healthy()["access-log"],
	}
	sink := &memSink{}
	s := newSession(t, g, r, runbook.ModeGuided, sink)
	_ = s.Start("callers-see-503")
	ctx := context.Background()
	for _, st := range []string{"target", "envoy-clusters", "access-log", "endpoints"} {
		_, _ = s.RunStep(ctx, st)
	}
	results, err := s.Verify(ctx, "service.port-mismatch")
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 5 {
		t.Fatalf("results = %+v", results)
	}
	for _, vr := range results {
		if vr.Manual {
			if !strings.Contains(vr.Command, "kubectl exec -n shop client-1 -- curl") ||
				!strings.Contains(vr.Command, "http://web.shop.svc.cluster.local:80/") {
				t.Errorf("manual command not expanded: %q", vr.Command)
			}
			continue
		}
		if !vr.Passed {
			t.Errorf("verification %s (%s) failed: %s", vr.Probe, vr.Expect, vr.Detail)
		}
	}
	var verif int
	for _, ev := range sink.Events() {
		if ev.Kind == runbook.EventVerification {
			verif++
			if ev.Verification.Describe == "" {
				t.Errorf("verification event without describe")
			}
		}
	}
	if verif != len(results) {
		t.Errorf("%d verification events", verif)
	}

	// Against a cluster still broken, the same verification fails.
	s2 := newSession(t, g, newRecorded(portMismatchFacts()), runbook.ModeGuided)
	_ = s2.Start("callers-see-503")
	res2, _ := s2.Verify(ctx, "service.port-mismatch")
	if res2[0].Passed || !strings.Contains(res2[0].Detail, "endpoints_port_mismatch=true") {
		t.Errorf("broken cluster verified: %+v", res2[0])
	}

	// With the probe failing, verification fails and says why.
	r3 := newRecorded(healthy()).Fail("endpoints", probes.StatusError, "forbidden: cannot list endpointslices in shop")
	s3 := newSession(t, g, r3, runbook.ModeGuided)
	_ = s3.Start("callers-see-503")
	res3, _ := s3.Verify(ctx, "service.port-mismatch")
	if res3[0].Passed || !strings.Contains(res3[0].Detail, "forbidden") {
		t.Errorf("errored probe verified: %+v", res3[0])
	}
}

// A session rebuilt from its JSON log comes back where it was.
func TestResumeFromLog(t *testing.T) {
	g := load503(t)
	s := newSession(t, g, newRecorded(portMismatchFacts()), runbook.ModeGuided)
	_ = s.Start("callers-see-503")
	ctx := context.Background()
	_, _ = s.RunStep(ctx, "target")
	_ = s.Choose("endpoints", runbook.ChosenByUser)
	_, _ = s.RunStep(ctx, "endpoints")
	_ = s.Hypothesis("service.port-mismatch", runbook.VerdictConfirmed, "")
	_ = s.ChooseFix("service.port-mismatch", "align-target-port")

	var lines []byte
	for _, ev := range s.Events() {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(append(lines, b...), '\n')
	}
	var history []runbook.Event
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var ev runbook.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		history = append(history, ev)
	}
	sink := &memSink{}
	r := newRecorded(healthy())
	resumed, err := runbook.Resume(runbook.Config{Graph: g, Target: testTarget, Probes: probes.ByID(),
		Run: r.Run, Clock: newClock().Now, Mode: runbook.ModeGuided, Sinks: []runbook.Sink{sink}}, history)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.ID() != "test-session" || resumed.Current() != "endpoints" || resumed.Symptom() != "callers-see-503" {
		t.Errorf("resumed id/current/symptom = %q/%q/%q", resumed.ID(), resumed.Current(), resumed.Symptom())
	}
	if !reflect.DeepEqual(causeIDs(resumed.Findings()), causeIDs(s.Findings())) {
		t.Errorf("findings %v, want %v", causeIDs(resumed.Findings()), causeIDs(s.Findings()))
	}
	f := resumed.Findings()[0]
	if f.Verdict != runbook.VerdictConfirmed || f.ChosenFix != "align-target-port" {
		t.Errorf("verdict/fix lost: %+v", f)
	}
	// Facts come back with their declared types (JSON numbers are float64).
	if v, ok := resumed.Facts()["endpoints_ready"].(int); !ok || v != 3 {
		t.Errorf("endpoints_ready = %#v", resumed.Facts()["endpoints_ready"])
	}
	if _, ok := resumed.Facts()["target_ports"].([]string); !ok {
		t.Errorf("target_ports = %#v", resumed.Facts()["target_ports"])
	}
	if len(sink.Events()) != 0 {
		t.Errorf("resume rewrote %d history events", len(sink.Events()))
	}
	resumed.Note("", "back after a break")
	if len(sink.Events()) != 1 || len(resumed.Events()) != len(history)+1 {
		t.Errorf("new events after resume: sink %d, history %d", len(sink.Events()), len(resumed.Events()))
	}
	if _, err := runbook.Resume(runbook.Config{Graph: g, Probes: probes.ByID()}, history[1:]); err == nil {
		t.Error("history without session_started resumed")
	}
}

// The TUI runs steps in the background while it renders.
func TestSessionIsSafeForConcurrentUse(t *testing.T) {
	g := load503(t)
	s := newSession(t, g, newRecorded(portMismatchFacts()), runbook.ModeFree)
	_ = s.Start("callers-see-503")
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, st := range g.Steps {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _ = s.RunStep(ctx, st.ID)
		}()
		go func() {
			defer wg.Done()
			_ = s.Findings()
			_ = s.ProposalAt(st.ID)
			_ = s.Events()
		}()
	}
	wg.Wait()
	if got := causeIDs(s.Findings()); !reflect.DeepEqual(got, []string{"service.port-mismatch"}) {
		t.Errorf("findings = %v", got)
	}
}

func TestProbeTimeoutBoundsARun(t *testing.T) {
	g := load503(t)
	slow := func(ctx context.Context, p probes.Probe, _ cluster.Cluster, _ cluster.Target) probes.Result {
		<-ctx.Done()
		return probes.Result{Status: probes.StatusError, Summary: ctx.Err().Error()}
	}
	s, err := runbook.NewSession(runbook.Config{Graph: g, Target: testTarget, Probes: probes.ByID(),
		Run: slow, ProbeTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Auto(context.Background())
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("auto with hanging probes: err %v after %v", err, time.Since(start))
	}
}

func TestNewSessionNeedsEveryProbe(t *testing.T) {
	g := load503(t)
	reg := probes.ByID()
	delete(reg, "mtls")
	if _, err := runbook.NewSession(runbook.Config{Graph: g, Probes: reg}); err == nil || !strings.Contains(err.Error(), `"mtls"`) {
		t.Fatalf("err = %v", err)
	}
}
