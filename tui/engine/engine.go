// Package engine is the narrow view of a triage session that the terminal UI
// drives: the runbook's steps and causes, the probe results so far, and the
// engine's proposal for what to look at next. The runbook.Session is adapted
// to it (session.go); tests drive the UI with a scripted engine
// (tui/enginetest). The UI contains no diagnosis logic: every decision about
// what the facts mean comes from here.
package engine

import (
	"context"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
)

// Engine is one triage session as the UI sees it.
//
// The UI calls every method from inside a tea.Cmd, so from several
// goroutines at once ("run all remaining" runs steps concurrently):
// implementations must be safe for concurrent use. RunStep and Verify honour
// ctx: cancelling it ends the probe promptly.
type Engine interface {
	Target() cluster.Target
	// Question and Symptoms are the runbook's start node: what the on-call
	// sees (callers get 503s, pods restart at startup, ...). A single
	// symptom needs no question.
	Question() string
	Symptoms() []Symptom
	// Start begins the session on a symptom and writes the first event.
	Start(ctx context.Context, symptom string) error

	// Steps are the runbook's steps in the order it lists them.
	Steps() []Step
	// Causes are the runbook's cause nodes.
	Causes() []Cause
	// Result is the latest result of a step, if it ran.
	Result(step string) (probes.Result, bool)
	// RunStep runs a step's probe and records it; a second run of the same
	// step is recorded as a re-run.
	RunStep(ctx context.Context, step string) probes.Result
	// RunAll records the on-call's "run all remaining" over steps;
	// RunRemaining then runs each of them: a step whose probe already ran
	// (another step needed its facts) is not run, nor recorded, again.
	RunAll(steps []string)
	RunRemaining(ctx context.Context, step string) probes.Result
	// Callers says, for a triage without a named caller, whom the caller
	// search found and which one the walk follows; "" otherwise.
	Callers() string
	// Proposal is what the engine would look at next given the facts so far.
	Proposal() Proposal
	// Choose records a move to a step or cause and who chose it.
	Choose(to string, by ChosenBy) error
	// Findings are the causes the facts support so far, strongest first,
	// then the failed steps no cause explains (Unexplained).
	Findings() []Finding
	// Undecided are the causes that rules could neither confirm nor rule
	// out because evidence could not be read: the open hypotheses, most
	// likely first, each with what would settle it.
	Undecided() []Undecided
	// Hypotheses are the verdicts recorded so far, by cause ID.
	Hypotheses() map[string]Verdict

	Note(step, text string) error
	Hypothesis(cause string, v Verdict, why string) error
	ChooseFix(cause, fix string) error
	// Verify runs the cause's verification steps that name a probe and
	// reports each; manual steps (a command for the on-call) come back with
	// Manual set and are not run.
	Verify(ctx context.Context, cause string) ([]VerifyResult, error)
	// End closes the session (quit, completed, interrupted).
	End(reason string) error
	// LogError is the first failure to write the incident log, if any: the
	// session goes on, and the UI must say that the record is incomplete.
	LogError() error
}

// Symptom is one answer to the runbook's start question.
type Symptom struct {
	ID    string
	Title string
}

// Step is a runbook step: the probe it runs and what to tell the on-call.
type Step struct {
	ID    string
	Title string
	Probe string
	// Tell is the runbook's advice for this step, shown before and after
	// the probe runs.
	Tell     string
	Warnings []Warning
}

// Cause is a root cause node with its fix directions and verification.
type Cause struct {
	ID      string
	Title   string
	Summary string
	// Warning marks a warning-level cause: reported, but not a root cause of
	// the 503s by itself.
	Warning  bool
	Fixes    []Fix
	Verify   []VerifyStep
	Warnings []Warning
}

// Fix is one fix direction. meshtriage never applies it; the on-call copies
// what they need.
type Fix struct {
	ID        string
	Title     string
	Text      string
	YAML      []string
	Commands  []string
	Tradeoffs []string
	Security  []string
	// Patches are the kubectl commands that apply the direction's
	// patches, in order; Simulation says what they do to the configuration
	// read; Unpatchable says why there is no patch.
	Patches     []string
	Simulation  string
	Unpatchable string
}

// VerifyStep says how to check a fix: a probe whose facts must satisfy
// Expect, or a manual command.
type VerifyStep struct {
	Describe string
	Probe    string
	Expect   string
	Command  string
}

// Warning is an anti-pattern that makes things worse where it appears.
type Warning struct {
	ID    string
	Title string
	Text  string
}

// Proposal is the engine's suggestion for the next move.
type Proposal struct {
	// Next is a step or cause ID; empty when the runbook has nothing more
	// to suggest.
	Next    string
	IsCause bool
	// Reason is why, in the on-call's terms: "0/5 hosts healthy -> check
	// outlier ejection".
	Reason string
	// From is the step whose facts led here; empty at the start.
	From string
	// Causes are the cause IDs reached so far.
	Causes []string
	// Abort says why the triage cannot go on (the target does not exist).
	Abort string
	// Undecided explains rules that could not decide because a fact they
	// read is unknown (its probe errored or has not run): unknown is never
	// read as zero.
	Undecided []string
}

// UnexplainedPrefix starts the ID of a finding that is a failed step no
// cause explains: "unexplained/<step>", one per step.
const UnexplainedPrefix = "unexplained/"

// Undecided is an open hypothesis: a cause no rule could decide.
type Undecided struct {
	Cause string
	Title string
	// Confidence is that of the strongest rule that could not decide.
	Confidence string
	// Unknown are the facts that could not be read; Why says why.
	Unknown []string
	Why     string
	// Settle are the commands that read the missing evidence by hand.
	Settle []string
}

// Finding is a cause the facts support, with its fix directions expanded for
// the target (commands paste as they are).
type Finding struct {
	// Cause is the cause ID, or UnexplainedPrefix+step for a failed step
	// that no cause explains.
	Cause      string
	Title      string
	Confidence string
	Summary    string
	Evidence   []Evidence
	Fixes      []Fix
	Verify     []VerifyStep
	ChosenFix  string
}

// Evidence is why a rule fired: the facts it read and the probe results
// behind them.
type Evidence struct {
	Step   string
	Reason string
	When   string
	// Facts are "name=value", sorted.
	Facts []string
	// Probes are "probe status: summary".
	Probes []string
	Table  *probes.Evidence
}

// VerifyResult is one verification step after it ran.
type VerifyResult struct {
	Step   VerifyStep
	Manual bool
	Passed bool
	Result probes.Result
	Detail string
}

// ChosenBy says who picked a move.
type ChosenBy string

const (
	ByEngine ChosenBy = "engine"
	ByUser   ChosenBy = "user"
)

// Verdict is the on-call's judgement of a cause hypothesis.
type Verdict string

const (
	Confirmed Verdict = "confirmed"
	RuledOut  Verdict = "ruled_out"
)
