package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/tui/engine"
)

func session(t *testing.T, name string) *runbook.Session {
	t.Helper()
	s, err := recorded.Load(assets.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	g, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := runbook.NewSession(runbook.Config{Graph: g, Cluster: cluster.NewCache(c), Target: s.Target, Probes: probes.ByID(), Mode: runbook.ModeGuided})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func branches(s *runbook.Session) []runbook.BranchTaken {
	var out []runbook.BranchTaken
	for _, ev := range s.Events() {
		if ev.Branch != nil {
			out = append(out, *ev.Branch)
		}
	}
	return out
}

// The session proposes its current step until it has run: the adapter
// makes that "run this step", with the reason of the move into it, and
// accepting it records no second move.
func TestProposalRunsCurrentStepFirst(t *testing.T) {
	sess := session(t, "outlier-all-ejected")
	e := engine.FromSession(sess)
	if len(e.Symptoms()) < 3 || e.Question() == "" {
		t.Fatalf("start question not mapped: %q %v", e.Question(), e.Symptoms())
	}
	sym := e.Symptoms()[0]
	if err := e.Start(context.Background(), sym.ID); err != nil {
		t.Fatal(err)
	}
	p := e.Proposal()
	if p.Next != "target" || p.IsCause || p.Reason != sym.Title {
		t.Fatalf("first proposal = %+v, want run target because %q", p, sym.Title)
	}
	moves := len(branches(sess))
	if err := e.Choose(p.Next, engine.ByEngine); err != nil {
		t.Fatal(err)
	}
	if n := len(branches(sess)); n != moves {
		t.Fatalf("choosing the current step recorded a move: %+v", branches(sess))
	}
	res := e.RunStep(context.Background(), "target")
	if res.Status != probes.StatusPass {
		t.Fatalf("target: %s %s", res.Status, res.Summary)
	}
	next := e.Proposal()
	if next.Next == "" || next.Next == "target" || next.From != "target" || next.Reason == "" {
		t.Fatalf("after target the proposal is %+v", next)
	}
	if err := e.Choose(next.Next, engine.ByEngine); err != nil {
		t.Fatal(err)
	}
	bs := branches(sess)
	last := bs[len(bs)-1]
	if last.From != "target" || last.To != next.Next || last.ChosenBy != runbook.ChosenByEngine {
		t.Fatalf("move recorded as %+v", last)
	}
	if again := e.Proposal(); again.Next != next.Next || again.Reason != next.Reason {
		t.Fatalf("proposal after the move = %+v, want run %s because %q", again, next.Next, next.Reason)
	}
}

// Walking the guided path to the outlier cause, the finding comes back with
// its evidence readable and its commands expanded for the target.
func TestFindingsAndVerdicts(t *testing.T) {
	sess := session(t, "outlier-all-ejected")
	e := engine.FromSession(sess)
	ctx := context.Background()
	if err := e.Start(ctx, e.Symptoms()[0].ID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20 && !slices.ContainsFunc(e.Findings(), func(f engine.Finding) bool { return f.Cause == "outlier.all-ejected" }); i++ {
		p := e.Proposal()
		if p.Next == "" || p.IsCause {
			break
		}
		_ = e.Choose(p.Next, engine.ByEngine)
		e.RunStep(ctx, p.Next)
	}
	var f *engine.Finding
	for _, x := range e.Findings() {
		if x.Cause == "outlier.all-ejected" {
			f = &x
		}
	}
	if f == nil {
		t.Fatalf("outlier.all-ejected not found: %+v", e.Findings())
	}
	if f.Title == "" || len(f.Evidence) == 0 || len(f.Evidence[0].Facts) == 0 || len(f.Fixes) == 0 {
		t.Fatalf("finding incomplete: %+v", f)
	}
	if !slices.IsSorted(f.Evidence[0].Facts) || !strings.Contains(f.Evidence[0].Facts[0], "=") {
		t.Errorf("facts not name=value sorted: %v", f.Evidence[0].Facts)
	}
	for _, fix := range f.Fixes {
		for _, c := range append(fix.Commands, fix.YAML...) {
			if strings.Contains(c, "${") {
				t.Errorf("fix %s keeps a placeholder: %s", fix.ID, c)
			}
		}
	}
	var c engine.Cause
	for _, x := range e.Causes() {
		if x.ID == "outlier.all-ejected" {
			c = x
		}
	}
	if len(c.Verify) == 0 || len(c.Fixes) == 0 {
		t.Fatalf("cause node not mapped: %+v", c)
	}
	if err := e.Hypothesis("mtls.plaintext-to-strict", engine.RuledOut, "PERMISSIVE upstream"); err != nil {
		t.Fatal(err)
	}
	if err := e.Hypothesis("outlier.all-ejected", engine.Confirmed, "3/3 ejected"); err != nil {
		t.Fatal(err)
	}
	got := e.Hypotheses()
	if got["mtls.plaintext-to-strict"] != engine.RuledOut || got["outlier.all-ejected"] != engine.Confirmed {
		t.Fatalf("hypotheses = %v", got)
	}
	if err := e.ChooseFix("outlier.all-ejected", c.Fixes[0].ID); err != nil {
		t.Fatal(err)
	}
	vs, err := e.Verify(ctx, "outlier.all-ejected")
	if err != nil || len(vs) != len(c.Verify) {
		t.Fatalf("verify: %v, %d results for %d steps", err, len(vs), len(c.Verify))
	}
	if err := e.End("quit"); err != nil || e.LogError() != nil {
		t.Fatalf("end: %v %v", err, e.LogError())
	}
}

// An unknown step is an error result, not a panic or a silent pass.
func TestRunUnknownStep(t *testing.T) {
	e := engine.FromSession(session(t, "healthy"))
	_ = e.Start(context.Background(), e.Symptoms()[0].ID)
	r := e.RunStep(context.Background(), "no-such-step")
	if r.Status != probes.StatusError || !strings.Contains(r.Summary, "no-such-step") {
		t.Fatalf("got %+v", r)
	}
}

// failingProbe fails with no facts: a step the runbook has no cause for.
type failingProbe struct{ meta probes.Meta }

func (p failingProbe) Meta() probes.Meta { return p.meta }
func (p failingProbe) Run(context.Context, cluster.Cluster, cluster.Target) probes.Result {
	return probes.Result{Status: probes.StatusFail, Summary: p.meta.ID + " failed in a way no rule reads", Facts: probes.Facts{}}
}

// Each failed step no cause explains is its own finding in the UI, under an
// ID of its own, and the causes left undecided (no caller: its Envoy could
// not be read) come through as open hypotheses with what settles them.
func TestFindingsKeepEachUnexplainedStepAndTheOpenHypotheses(t *testing.T) {
	s, err := recorded.Load(assets.FS, "outlier-all-ejected")
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	g, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: -1}
	var failing []string
	for _, id := range []string{"startup-order", "shutdown-order"} {
		reg[id] = failingProbe{meta: reg[id].Meta()}
		failing = append(failing, engine.UnexplainedPrefix+stepOfProbe(t, g, id))
	}
	target := s.Target
	target.Source = nil
	sess, err := runbook.NewSession(runbook.Config{Graph: g, Cluster: cluster.NewCache(c), Target: target, Probes: reg, Mode: runbook.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Auto(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := engine.FromSession(sess)
	var ids []string
	for _, f := range e.Findings() {
		ids = append(ids, f.Cause)
		if strings.HasPrefix(f.Cause, engine.UnexplainedPrefix) && (f.Title == "" || len(f.Fixes) == 0) {
			t.Errorf("unexplained finding %s has no title or no next step: %+v", f.Cause, f)
		}
	}
	for _, want := range failing {
		if !slices.Contains(ids, want) {
			t.Errorf("findings %v lack %s", ids, want)
		}
	}
	open := e.Undecided()
	if len(open) == 0 {
		t.Fatal("no open hypothesis without the caller's Envoy")
	}
	for _, u := range open {
		if u.Cause == "" || u.Title == "" || len(u.Unknown) == 0 || u.Why == "" {
			t.Errorf("hypothesis %+v: want cause, title, the unknown facts and why", u)
		}
	}
}

func stepOfProbe(t *testing.T, g *runbook.Graph, probe string) string {
	t.Helper()
	for _, st := range g.Steps {
		if st.Probe == probe {
			return st.ID
		}
	}
	t.Fatalf("no step runs probe %s", probe)
	return ""
}
