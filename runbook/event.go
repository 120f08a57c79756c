package runbook

import (
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
)

// EventKind names one entry of a session's append-only event stream. The
// stream is the incident log: runbook/incidentlog writes it as JSON Lines and
// renders it as a postmortem timeline.
type EventKind string

const (
	EventSessionStarted EventKind = "session_started"
	EventProbeRan       EventKind = "probe_ran"
	EventBranchTaken    EventKind = "branch_taken"
	EventNote           EventKind = "note"
	EventHypothesis     EventKind = "hypothesis"
	EventFixChosen      EventKind = "fix_chosen"
	EventVerification   EventKind = "verification"
	EventAction         EventKind = "action" // an explicit change to the cluster and its undo
	EventSessionEnded   EventKind = "session_ended"
	// EventRuleSkipped: a branch rule could not decide because a fact it
	// reads is unknown (its probe errored, was skipped or did not run).
	EventRuleSkipped EventKind = "rule_skipped"
	// EventRunAll: the on-call asked to run every step that had not run.
	// The runs follow as probe_ran events with trigger run-all.
	EventRunAll EventKind = "run_all"
)

// Why a probe ran (ProbeRan.Trigger). Only the on-call's own runs (user,
// rerun, run-all) are their actions; the others are what the engine read
// on its own account.
const (
	TriggerUser   = "user"    // the on-call ran the step
	TriggerRerun  = "rerun"   // the on-call ran the step again, on fresh reads
	TriggerRunAll = "run-all" // part of the on-call's "run all remaining"
	TriggerNeeded = "needed"  // the rules of step For read its facts
	TriggerAuto   = "auto"    // the unattended triage (check) ran every probe
	TriggerVerify = "verify"  // a verification of a fix re-ran it
)

// ByOnCall reports whether a run with trigger is one the on-call asked for.
// A log written before triggers existed ("") counts as theirs.
func ByOnCall(trigger string) bool {
	switch trigger {
	case TriggerUser, TriggerRerun, TriggerRunAll, "":
		return true
	}
	return false
}

// Event is one line of the incident log. Exactly one of the pointer fields is
// set, matching Kind.
type Event struct {
	Time    time.Time `json:"ts"`
	Kind    EventKind `json:"kind"`
	Session string    `json:"session"`

	Started      *SessionStarted `json:"started,omitempty"`
	Probe        *ProbeRan       `json:"probe,omitempty"`
	Branch       *BranchTaken    `json:"branch,omitempty"`
	Note         *Note           `json:"note,omitempty"`
	Hypothesis   *Hypothesis     `json:"hypothesis,omitempty"`
	Fix          *FixChosen      `json:"fix,omitempty"`
	Verification *Verification   `json:"verification,omitempty"`
	Action       *Action         `json:"action,omitempty"`
	Ended        *SessionEnded   `json:"ended,omitempty"`
	Skipped      *RuleSkipped    `json:"skipped,omitempty"`
	RunAll       *RunAll         `json:"run_all,omitempty"`
}

// RunAll records the on-call's "run all remaining": the steps it covered.
type RunAll struct {
	Steps []string `json:"steps,omitempty"`
}

// SessionStarted records who triaged what, where.
type SessionStarted struct {
	// Parent is set on the session of a caller the caller search found:
	// the ID of the triage's own session, whose record it is part of.
	Parent        string            `json:"parent,omitempty"`
	User          string            `json:"user"`
	KubeContext   string            `json:"kube_context"`
	Server        string            `json:"server,omitempty"`
	ServerVersion string            `json:"server_version,omitempty"`
	Target        cluster.Target    `json:"target"`
	Runbook       string            `json:"runbook"`
	Symptom       string            `json:"symptom,omitempty"`
	Mode          string            `json:"mode"` // guided, free, auto
	Tool          string            `json:"tool_version,omitempty"`
	Extra         map[string]string `json:"extra,omitempty"`
}

// ProbeRan records one step's probe run with everything it showed.
type ProbeRan struct {
	Step       string          `json:"step"`
	Probe      string          `json:"probe"`
	Status     probes.Status   `json:"status"`
	Summary    string          `json:"summary"`
	Facts      probes.Facts    `json:"facts,omitempty"`
	Evidence   probes.Evidence `json:"evidence"`
	Commands   []string        `json:"commands,omitempty"`
	DurationMS int64           `json:"duration_ms"`
	// Rerun: the on-call ran the step again (Trigger rerun).
	Rerun bool `json:"rerun,omitempty"`
	// Trigger says why it ran (TriggerUser, ...); For is the step whose
	// rules needed it (TriggerNeeded).
	Trigger string `json:"trigger,omitempty"`
	For     string `json:"for,omitempty"`
	// Causes are the cause IDs the step's rules can report: when the step
	// passes and none of them is found, the incident record lists them as
	// ruled out.
	Causes []string `json:"causes,omitempty"`
}

// BranchTaken records a move through the runbook graph.
type BranchTaken struct {
	From     string `json:"from"`
	To       string `json:"to"` // a step ID or a cause ID
	IsCause  bool   `json:"is_cause,omitempty"`
	ChosenBy string `json:"chosen_by"` // engine or user
	Reason   string `json:"reason,omitempty"`
	When     string `json:"when,omitempty"` // the condition that matched
}

// Note is free text the on-call typed, or, with By set, a remark of the
// tool's own (whom the caller search read).
type Note struct {
	Step string `json:"step,omitempty"`
	Text string `json:"text"`
	By   string `json:"by,omitempty"`
}

// NoteByTool is Note.By of the tool's own remarks.
const NoteByTool = "meshtriage"

// Hypothesis records a cause confirmed or ruled out.
type Hypothesis struct {
	Cause   string `json:"cause"`
	Verdict string `json:"verdict"` // confirmed or ruled_out
	Why     string `json:"why,omitempty"`
}

// FixChosen records the fix direction the on-call picked for a cause.
type FixChosen struct {
	Cause string `json:"cause"`
	Fix   string `json:"fix"`
	Text  string `json:"text,omitempty"`
}

// Verification records a verification step's outcome after a fix.
type Verification struct {
	Cause  string        `json:"cause"`
	Probe  string        `json:"probe"`
	Expect string        `json:"expect"`
	Passed bool          `json:"passed"`
	Status probes.Status `json:"status"`
	Detail string        `json:"detail,omitempty"`
	// Describe says what the check shows; for a manual check (no probe) it
	// and Command are all the incident record can say.
	Describe string `json:"describe,omitempty"`
	Command  string `json:"command,omitempty"`
}

// Action records an explicit, confirmed change to the cluster and its undo.
type Action struct {
	Name     string `json:"name"`
	Target   string `json:"target"`
	Done     string `json:"done"`
	Undo     string `json:"undo,omitempty"`
	Reverted bool   `json:"reverted,omitempty"`
	Error    string `json:"error,omitempty"`
	// Output is what the action showed: the test request's transcript, the
	// Envoy debug log lines captured while debug logging was on.
	Output string `json:"output,omitempty"`
}

// SessionEnded closes the log.
type SessionEnded struct {
	Findings []string `json:"findings,omitempty"` // cause IDs
	Reason   string   `json:"reason,omitempty"`   // quit, completed, interrupted
	// Causes is where the triage left every cause of its path: found,
	// open, ruled out (by which steps), not checked. The record's "ruled
	// out" and "not checked" read it, so a cause is in one of them only.
	Causes []CauseState `json:"causes,omitempty"`
}

// RuleSkipped records a rule that could not decide, and why.
type RuleSkipped struct {
	Step    string   `json:"step"`
	When    string   `json:"when"`
	Unknown []string `json:"unknown"`
	Why     string   `json:"why"`
}

// Sink receives every event as it happens. The incident-log writer is one;
// the TUI's timeline is another.
type Sink interface {
	Write(Event) error
}
