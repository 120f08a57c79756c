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
