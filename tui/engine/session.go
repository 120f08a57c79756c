package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

// sessionEngine adapts a runbook.Session, which is safe for concurrent use,
// to the UI's view of it.
type sessionEngine struct {
	s *runbook.Session
}

// FromSession adapts s. Text shown to the on-call (tells, fix commands and
// YAML) has the runbook placeholders expanded for s's target.
func FromSession(s *runbook.Session) Engine { return &sessionEngine{s: s} }

func (e *sessionEngine) Target() cluster.Target { return e.s.Target() }

func (e *sessionEngine) Question() string { return e.s.Graph().Start.Question }

func (e *sessionEngine) Symptoms() []Symptom {
	var out []Symptom
	for _, o := range e.s.Graph().Start.Options {
		out = append(out, Symptom{ID: o.ID, Title: o.Title})
	}
	return out
}

func (e *sessionEngine) Start(_ context.Context, symptom string) error { return e.s.Start(symptom) }

func (e *sessionEngine) Steps() []Step {
	g := e.s.Graph()
	var out []Step
	for _, st := range g.Steps {
		out = append(out, Step{
			ID: st.ID, Title: st.Title, Probe: st.Probe,
			Tell:     e.s.Expand(st.Tell),
			Warnings: e.warnings(st.Warnings),
		})
	}
	return out
}

func (e *sessionEngine) warnings(ids []string) []Warning {
	var out []Warning
	for _, w := range e.s.Graph().WarningsFor(ids) {
		out = append(out, Warning{ID: w.ID, Title: w.Title, Text: e.s.Expand(w.Text)})
	}
	return out
}

func (e *sessionEngine) Causes() []Cause {
	var out []Cause
	for _, c := range e.s.Graph().Causes {
		out = append(out, Cause{
			ID: c.ID, Title: c.Title, Summary: e.s.Expand(c.Summary),
			Warning:  c.Severity == runbook.SeverityWarning,
			Fixes:    e.fixes(e.s.FixesOf(c.ID)),
			Verify:   e.verifySteps(c.Verify),
			Warnings: e.warnings(c.Warnings),
		})
	}
	return out
}

func (e *sessionEngine) fixes(in []runbook.Fix) []Fix {
	var out []Fix
	for _, f := range in {
		fx := Fix{ID: f.ID, Title: f.Title, Text: e.s.Expand(f.Text), Patches: runbook.Commands(f.Patches), Unpatchable: f.Unpatchable}
		if f.Simulation != nil {
			fx.Simulation = f.Simulation.Summary
		}
		for _, y := range f.YAML {
			fx.YAML = append(fx.YAML, e.s.Expand(y))
		}
		for _, c := range f.Commands {
			fx.Commands = append(fx.Commands, e.s.Expand(c))
		}
		for _, t := range f.Tradeoffs {
			fx.Tradeoffs = append(fx.Tradeoffs, e.s.Expand(t))
		}
		for _, t := range f.Security {
			fx.Security = append(fx.Security, e.s.Expand(t))
		}
		out = append(out, fx)
	}
	return out
}

func (e *sessionEngine) verifySteps(in []runbook.VerifyStep) []VerifyStep {
	var out []VerifyStep
	for _, v := range in {
		out = append(out, VerifyStep{Describe: e.s.Expand(v.Describe), Probe: v.Probe, Expect: v.Expect, Command: e.s.Expand(v.Command)})
	}
	return out
}

func (e *sessionEngine) Result(step string) (probes.Result, bool) { return e.s.Result(step) }

func (e *sessionEngine) RunStep(ctx context.Context, step string) probes.Result {
	res, err := e.s.RunStep(ctx, step)
	if err != nil {
		return probes.Result{Status: probes.StatusError, Summary: err.Error(), Facts: probes.Facts{}}
	}
	return res
}

func (e *sessionEngine) RunAll(steps []string) { e.s.RecordRunAll(steps) }

func (e *sessionEngine) RunRemaining(ctx context.Context, step string) probes.Result {
	res, err := e.s.RunRemaining(ctx, step)
	if err != nil {
		return probes.Result{Status: probes.StatusError, Summary: err.Error(), Facts: probes.Facts{}}
	}
	return res
}

func (e *sessionEngine) Callers() string { return "" }

// Proposal maps the session's guided proposal: while the current step has
// not run, running it is the proposal (with the reason that led there);
// once it has, the proposal is the next step, or the first cause reached
// when the walk ends there.
func (e *sessionEngine) Proposal() Proposal {
	sp := e.s.Proposal()
	p := Proposal{From: sp.From, Abort: sp.Abort}
	for _, c := range sp.Causes {
		p.Causes = append(p.Causes, c.Cause)
	}
	for _, sk := range sp.Skipped {
		p.Undecided = append(p.Undecided, fmt.Sprintf("%s: %s", sk.When, strings.TrimPrefix(sk.Why, "rule skipped: ")))
	}
	switch {
	case sp.Abort != "":
		p.Reason = sp.Abort
	case sp.NeedsRun && sp.From != "":
		p.Next, p.Reason = sp.From, e.reasonInto(sp.From)
	case sp.Next != "":
		p.Next, p.Reason = sp.Next, sp.Reason
	case len(p.Causes) > 0:
		p.Next, p.IsCause = p.Causes[0], true
		p.Reason = sp.Causes[0].Summary
		if len(sp.Causes[0].Evidence) > 0 && sp.Causes[0].Evidence[0].Reason != "" {
			p.Reason = sp.Causes[0].Evidence[0].Reason
		}
	}
	return p
}

// reasonInto is the reason recorded for the last move into step.
func (e *sessionEngine) reasonInto(step string) string {
	evs := e.s.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		if b := evs[i].Branch; b != nil && b.To == step && !b.IsCause {
			if b.Reason != "" {
				return b.Reason
			}
			break
		}
	}
	return "the runbook's next check"
}

// Choose records the move; moving to the step that is already current is
// not a move (accepting "run the current step").
func (e *sessionEngine) Choose(to string, by ChosenBy) error {
	if to == e.s.Current() {
		return nil
	}
	return e.s.Choose(to, string(by))
}

func (e *sessionEngine) Findings() []Finding {
	var out []Finding
	for _, f := range e.s.Findings() {
		out = append(out, e.finding(f.Cause, f.Step, f.Title, string(f.Confidence), f.Summary, f.Fixes, f.Verify, f.ChosenFix, f.Evidence))
	}
	return out
}

func (e *sessionEngine) finding(cause, step, title, confidence, summary string, fixes []runbook.Fix, verify []runbook.VerifyStep, chosen string, evidence []runbook.Evidence) Finding {
	fd := Finding{
		Cause: cause, Title: title, Confidence: confidence, Summary: summary,
		Fixes: e.fixes(fixes), Verify: e.verifySteps(verify), ChosenFix: chosen,
	}
	if cause == runbook.Unexplained {
		// One row per failed step, each with its own evidence.
		fd.Cause = UnexplainedPrefix + step
	}
	{
		for _, ev := range evidence {
			item := Evidence{Step: ev.Step, Reason: ev.Reason, When: ev.When, Table: ev.Table}
			for k, v := range ev.Facts {
				item.Facts = append(item.Facts, k+"="+runbook.FormatValue(v))
			}
			sort.Strings(item.Facts)
			for _, p := range ev.Probes {
				item.Probes = append(item.Probes, fmt.Sprintf("%s %s: %s", p.Probe, p.Status, p.Summary))
			}
			fd.Evidence = append(fd.Evidence, item)
		}
	}
	return fd
}

func (e *sessionEngine) Undecided() []Undecided { return undecided(e.s.Undecided()) }

func undecided(in []runbook.Undecided) []Undecided {
	var out []Undecided
	for _, u := range in {
		out = append(out, Undecided{Cause: u.Cause, Title: u.Title, Confidence: string(u.Confidence),
			Unknown: u.Unknown, Why: u.Why, Settle: u.Settle})
	}
	return out
}

// Hypotheses replays the recorded verdicts, so a resumed session shows
// what was already ruled out.
func (e *sessionEngine) Hypotheses() map[string]Verdict {
	out := map[string]Verdict{}
	for _, ev := range e.s.Events() {
		if h := ev.Hypothesis; h != nil {
			out[h.Cause] = Verdict(h.Verdict)
		}
	}
	return out
}

func (e *sessionEngine) Note(step, text string) error {
	e.s.Note(step, text)
	return e.s.SinkErr()
}

func (e *sessionEngine) Hypothesis(cause string, v Verdict, why string) error {
	return e.s.Hypothesis(cause, string(v), why)
}

func (e *sessionEngine) ChooseFix(cause, fix string) error { return e.s.ChooseFix(cause, fix) }

func (e *sessionEngine) Verify(ctx context.Context, cause string) ([]VerifyResult, error) {
	rs, err := e.s.Verify(ctx, cause)
	if err != nil {
		return nil, err
	}
	var out []VerifyResult
	for _, r := range rs {
		out = append(out, VerifyResult{
			Step:   VerifyStep{Describe: r.Describe, Probe: r.Probe, Expect: r.Expect, Command: r.Command},
			Manual: r.Manual, Passed: r.Passed,
			Result: probes.Result{Probe: r.Probe, Status: r.Status},
			Detail: strings.TrimSpace(r.Detail),
		})
	}
	return out, nil
}

func (e *sessionEngine) End(reason string) error {
	e.s.End(reason)
	return e.s.SinkErr()
}

func (e *sessionEngine) LogError() error { return e.s.SinkErr() }
