// Package enginetest provides a scripted engine.Engine: a small runbook
// whose probe results are given up front, so UI tests walk a triage to its
// cause without a cluster, and can hold a probe open to test cancellation.
package enginetest

import (
	"context"
	"fmt"
	"sync"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// Rule is one branch of a scripted step: when If holds on the step's facts,
// go to Next or reach Cause.
type Rule struct {
	If     func(probes.Facts) bool
	Next   string
	Cause  string
	Reason string
}

// Script describes the scripted runbook.
type Script struct {
	Target   cluster.Target
	Question string
	Symptoms []engine.Symptom
	// First is the first step of each symptom; "" uses Steps[0].
	First    map[string]string
	Steps    []engine.Step
	Causes   []engine.Cause
	Rules    map[string][]Rule
	Results  map[string]probes.Result
	Verify   map[string][]engine.VerifyResult
	Findings map[string]engine.Finding
	// Undecided are the open hypotheses the engine reports.
	Undecided []engine.Undecided
	// Hold lists steps whose probe blocks until its context ends, as a hung
	// port-forward would; "verify/<cause>" holds that verification.
	Hold map[string]bool
	// LogErr is reported as the incident log's write failure.
	LogErr error
	// CallerNote is what Callers says (a triage without a named caller).
	CallerNote string
}

// Call is one recorded mutation of the session, in the order made.
type Call struct {
	Kind string // start, run, choose, note, hypothesis, fix, verify, end
	Args []string
}

// Engine runs a Script. It is safe for concurrent use, like the real one.
type Engine struct {
	s Script

	mu       sync.Mutex
	symptom  string
	results  map[string]probes.Result
	verdicts map[string]engine.Verdict
	calls    []Call
	started  chan string
}

// New returns an engine for s.
func New(s Script) *Engine {
	return &Engine{
		s:        s,
		results:  map[string]probes.Result{},
		verdicts: map[string]engine.Verdict{},
		started:  make(chan string, 64),
	}
}

// Started receives a step ID each time its probe starts running.
func (e *Engine) Started() <-chan string { return e.started }

// Calls returns the recorded mutations so far.
func (e *Engine) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.calls...)
}

func (e *Engine) record(kind string, args ...string) {
	e.calls = append(e.calls, Call{Kind: kind, Args: args})
}

func (e *Engine) Target() cluster.Target     { return e.s.Target }
func (e *Engine) Question() string           { return e.s.Question }
func (e *Engine) Symptoms() []engine.Symptom { return e.s.Symptoms }
func (e *Engine) Steps() []engine.Step       { return e.s.Steps }
func (e *Engine) Causes() []engine.Cause     { return e.s.Causes }

func (e *Engine) Start(_ context.Context, symptom string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.symptom = symptom
	e.record("start", symptom)
	return nil
}

func (e *Engine) Result(step string) (probes.Result, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.results[step]
	return r, ok
}

func (e *Engine) RunStep(ctx context.Context, step string) probes.Result {
	select {
	case e.started <- step:
	default:
	}
	var res probes.Result
	if e.s.Hold[step] {
		<-ctx.Done()
		res = probes.Result{Status: probes.StatusError, Summary: fmt.Sprintf("cancelled: %v", ctx.Err())}
	} else {
		r, ok := e.s.Results[step]
		if !ok {
			r = probes.Result{Status: probes.StatusSkipped, Summary: "no scripted result"}
		}
		res = r
	}
	if s, ok := e.step(step); ok {
		res.Probe = s.Probe
	}
	if res.Facts == nil {
		res.Facts = probes.Facts{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, rerun := e.results[step]
	e.results[step] = res
	if rerun {
		e.record("rerun", step)
	} else {
		e.record("run", step)
	}
	return res
}

// RunAll records the on-call's run-all.
func (e *Engine) RunAll(steps []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("run-all", steps...)
}

// RunRemaining runs the step unless it has a result already.
func (e *Engine) RunRemaining(ctx context.Context, step string) probes.Result {
	if r, ok := e.Result(step); ok {
		return r
	}
	return e.RunStep(ctx, step)
}

// Callers is the script's CallerNote.
func (e *Engine) Callers() string { return e.s.CallerNote }

func (e *Engine) step(id string) (engine.Step, bool) {
	for _, s := range e.s.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return engine.Step{}, false
}

// Proposal walks the script from the symptom's first step: a step not run
// yet is proposed; a run step's first matching rule moves on.
func (e *Engine) Proposal() engine.Proposal {
	e.mu.Lock()
	defer e.mu.Unlock()
	var p engine.Proposal
	cur := e.s.First[e.symptom]
	if cur == "" && len(e.s.Steps) > 0 {
		cur = e.s.Steps[0].ID
	}
	p.Reason = "start here"
	seen := map[string]bool{}
	for cur != "" && !seen[cur] {
		seen[cur] = true
		res, ran := e.results[cur]
		if !ran {
			p.Next = cur
			return p
		}
		from := cur
		cur = ""
		if res.Status == probes.StatusError || res.Status == probes.StatusSkipped {
			// As the real engine: facts of a failed read are unknown, no
			// rule decides, and the step is worth running again.
			p.From, p.Next, p.Reason = from, from, "the probe could not read: run it again"
			return p
		}
		for _, r := range e.s.Rules[from] {
			if r.If != nil && !r.If(res.Facts) {
				continue
			}
			p.From, p.Reason = from, r.Reason
			if r.Cause != "" {
				p.Causes = append(p.Causes, r.Cause)
				p.Next, p.IsCause = r.Cause, true
				return p
			}
			cur = r.Next
			break
		}
	}
	p.Next, p.IsCause = "", false
	return p
}

func (e *Engine) Choose(to string, by engine.ChosenBy) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("choose", to, string(by))
	return nil
}

func (e *Engine) Findings() []engine.Finding {
	p := e.Proposal()
	var out []engine.Finding
	for _, c := range p.Causes {
		f, ok := e.s.Findings[c]
		if !ok {
			f = engine.Finding{Cause: c, Confidence: "high"}
		}
		f.Cause = c
		out = append(out, f)
	}
	return out
}

// Undecided are the script's open hypotheses.
func (e *Engine) Undecided() []engine.Undecided {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]engine.Undecided(nil), e.s.Undecided...)
}

func (e *Engine) Hypotheses() map[string]engine.Verdict {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]engine.Verdict{}
	for k, v := range e.verdicts {
		out[k] = v
	}
	return out
}

func (e *Engine) Note(step, text string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("note", step, text)
	return nil
}

func (e *Engine) Hypothesis(cause string, v engine.Verdict, why string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.verdicts[cause] = v
	e.record("hypothesis", cause, string(v), why)
	return nil
}

func (e *Engine) ChooseFix(cause, fix string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("fix", cause, fix)
	return nil
}

func (e *Engine) Verify(ctx context.Context, cause string) ([]engine.VerifyResult, error) {
	if e.s.Hold["verify/"+cause] {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("verify", cause)
	return e.s.Verify[cause], nil
}

// LogError is the scripted incident-log failure, if any.
func (e *Engine) LogError() error { return e.s.LogErr }

func (e *Engine) End(reason string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("end", reason)
	return nil
}

var _ engine.Engine = (*Engine)(nil)
