// Package runbook is the triage engine: a runbook graph loaded from YAML
// (steps that run probes, branch rules over the facts they emit, cause nodes
// with fix directions and verification), and the Session that walks it and
// records every move as an event. The engine knows nothing about Istio: the
// knowledge is in the YAML, the facts come from the probes.
package runbook

import "github.com/meshtriage/meshtriage/probes"

// Graph is one runbook, loaded and validated by Load.
type Graph struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Start Start  `json:"start"`
	// Steps are in the order the runbook lists them; free mode shows them so.
	Steps  []*Step  `json:"steps"`
	Causes []*Cause `json:"causes"`
	// Warnings is the runbook's catalogue of anti-patterns; steps and causes
	// name the ones that bite there.
	Warnings []Warning `json:"warnings,omitempty"`

	file     string
	steps    map[string]*Step
	causes   map[string]*Cause
	warnings map[string]Warning
	// factProbe maps a fact to the probe that declares it, to say why a
	// fact is unknown.
	factProbe map[string]string
	facts     map[string]probes.FactType
	// varDocs say what each ${NAME} of the fix prover is: its words when
	// no prover filled it.
	varDocs map[string]string
}

// Start asks the on-call for the symptom; each option leads to a first step.
type Start struct {
	Question string          `json:"question"`
	Options  []SymptomOption `json:"options"`
}

// SymptomOption is one answer to the start question.
type SymptomOption struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Next  string `json:"next"`
}

// Step runs one probe and branches on the facts.
type Step struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Probe string `json:"probe"`
	// Tell is what to tell the on-call while, or before, the probe runs.
	Tell string `json:"tell,omitempty"`
	// Warnings are IDs from Graph.Warnings.
	Warnings []string `json:"warnings,omitempty"`
	Branches []Branch `json:"branches,omitempty"`
	// Required: without this step's result (its probe errored or was
	// skipped) nothing can be triaged, e.g. the target cannot be read.
	Required bool `json:"required,omitempty"`
	// Otherwise is the next step when no `next` branch matches; "" ends the
	// walk here.
	Otherwise string `json:"otherwise,omitempty"`
	// ExplainedBy lists causes that explain this step's probe failing when
	// they are found at another step (no ready endpoint when the selector
	// matches no pod). A failure nothing explains is an unexplained finding.
	ExplainedBy []string `json:"explained_by,omitempty"`
	// BenignFailure says why this step's probe failing needs no cause;
	// empty means a failure must be explained.
	BenignFailure string `json:"benign_failure,omitempty"`
	// Unexplained is what to look at next when the step fails and no cause
	// explains it.
	Unexplained string `json:"unexplained,omitempty"`
}

// Branch is one rule of a step: when When holds, go to Next or report Cause.
type Branch struct {
	When string `json:"when"`
	Next string `json:"next,omitempty"`
	// Cause is a cause ID; Confidence is how sure the rule is when it fires.
	Cause      string     `json:"cause,omitempty"`
	Confidence Confidence `json:"confidence,omitempty"`
	// Abort: the facts say the triage cannot go on (the target does not
	// exist); Reason says why.
	Abort bool `json:"abort,omitempty"`
	// Reason explains the move; {expr} interpolates an expression over the
	// facts, e.g. "{envoy_hosts_healthy}/{envoy_hosts_total} hosts healthy".
	Reason string `json:"reason,omitempty"`
	// Summary, when set, opens the finding's summary: what this rule says
	// that the cause's own summary cannot ("10% of requests ...").
	Summary string `json:"summary,omitempty"`
	// Confirm lists evidence that would confirm the cause: shown as
	// confirmed when it holds, and, when its facts are unknown, as the
	// missing evidence with the commands that get it. It never gates the
	// rule: what the configuration makes certain stands on its own.
	Confirm []Check `json:"confirm,omitempty"`
	// Weaken lists evidence that contradicts the cause: when one holds, the
	// finding's confidence drops to its confidence and its reason is said.
	// Unknown facts weaken nothing.
	Weaken []Weakening `json:"weaken,omitempty"`

	cond *condition
	// reason is Reason split into literal text and compiled expressions.
	reason []reasonPart
	// summary is Summary, compiled as reason is.
	summary []reasonPart
}

// Check is evidence a finding can cite.
type Check struct {
	When     string `json:"when"`
	Describe string `json:"describe"`

	cond *condition
}

// Weakening is evidence that contradicts a cause rule.
type Weakening struct {
	When       string     `json:"when"`
	Confidence Confidence `json:"confidence"`
	Reason     string     `json:"reason"`

	cond   *condition
	reason []reasonPart
}

// Cause is a root cause node: what it is, how to fix it, how to verify the
// fix, and what makes it worse.
type Cause struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Summary string `json:"summary"`
	// Severity is "cause" (the default) or "warning": a warning-level finding
	// is reported but is not a root cause of the 503s by itself.
	Severity string       `json:"severity,omitempty"`
	Fixes    []Fix        `json:"fixes"`
	Verify   []VerifyStep `json:"verify"`
	// Warnings are IDs from Graph.Warnings: the things that make it worse.
	Warnings []string `json:"warnings,omitempty"`
	// ConsequenceOf names causes this one follows from when both are found
	// (hosts ejected because a wrong port fails every request): the finding
	// is then reported after them, marked as a consequence.
	ConsequenceOf []string `json:"consequence_of,omitempty"`
	// ArisesIn are the data planes that can produce the cause, when only
	// some can (outlier detection runs in the proxy that load-balances to
	// the hosts, never at the destination): it is a hypothesis only where
	// one of them is on the path. Empty: any path can produce it.
	ArisesIn []Origin `json:"arises_in,omitempty"`
}

// Origin is a data plane that can produce a cause: In says which, in the
// on-call's words; When holds when the facts put it on the path. Caller
// marks the caller's own proxy, which a session without a caller (the
// service side of a triage) has no way to read: the cause then waits for
// one instead of being ruled out.
type Origin struct {
	In     string `json:"in"`
	When   string `json:"when"`
	Caller bool   `json:"caller,omitempty"`

	cond *condition
}

// Severities of a cause.
const (
	SeverityCause   = "cause"
	SeverityWarning = "warning"
)

// Fix is one fix direction for a cause. meshtriage never applies it: the
// on-call does, after reading the trade-offs.
//
// In the runbook a direction either names a Remedy, which computes its
// change from the evidence when the cause is found, or says in
// Unpatchable why its remedy is no change to an object the triage reads.
// Patches and Simulation are computed, never written in the runbook.
type Fix struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
	// YAML is advice that is no patch of an object the triage read (Helm
	// values, a manifest fragment to read, not to apply).
	YAML      []string `json:"yaml,omitempty"`
	Commands  []string `json:"commands,omitempty"`
	Tradeoffs []string `json:"tradeoffs,omitempty"`
	Security  []string `json:"security,omitempty"`
	// Remedy names the remedy (Catalogue.Remedies) that computes this
	// direction's patches from the evidence.
	Remedy string `json:"remedy,omitempty"`
	// Patches are the changes to the objects the triage read, in the
	// order to apply them (make-before-break).
	Patches []Patch `json:"patches,omitempty"`
	// Unpatchable says why this direction changes no object the triage
	// read (an image that does not pull, a node without ztunnel), or why
	// the change computed is not offered.
	Unpatchable string `json:"unpatchable,omitempty"`
	// Simulation is what the patches do to the triaged configuration,
	// re-judged in memory before they are shown.
	Simulation *Simulation `json:"simulation,omitempty"`
}

// VerifyStep is one check that the fix worked: a probe re-run whose facts
// must satisfy Expect, or, without a probe, a manual Command the on-call runs
// (a test request through the sidecar: meshtriage itself sends no traffic).
type VerifyStep struct {
	Probe    string `json:"probe,omitempty"`
	Expect   string `json:"expect,omitempty"`
	Describe string `json:"describe"`
	Command  string `json:"command,omitempty"`

	cond *condition
}

// Placeholders a runbook's text, YAML snippets and commands may use; the
// session replaces them with the target's values (see Session.Expand). A
// finding's fix directions and verification may also use the variables
// the fix prover fills from the evidence (Catalogue.Vars, e.g.
// ${SERVICE_WORKLOAD}); a value nobody knows is said in words.
const (
	PlaceholderNamespace       = "${NAMESPACE}"
	PlaceholderService         = "${SERVICE}"
	PlaceholderHost            = "${HOST}"
	PlaceholderPort            = "${PORT}"
	PlaceholderSource          = "${SOURCE}"
	PlaceholderSourceNamespace = "${SOURCE_NAMESPACE}"
)

// Warning is an anti-pattern the on-call should not fall into.
type Warning struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Confidence of a finding.
type Confidence string

const (
	ConfidenceHigh   Confidence = "high"
	ConfidenceMedium Confidence = "medium"
	ConfidenceLow    Confidence = "low"
)

// Rank orders confidences: high > medium > low > anything else.
func (c Confidence) Rank() int {
	switch c {
	case ConfidenceHigh:
		return 3
	case ConfidenceMedium:
		return 2
	case ConfidenceLow:
		return 1
	}
	return 0
}

// File is the name the graph was loaded from, for messages.
func (g *Graph) File() string { return g.file }

// Step returns the step with id.
func (g *Graph) Step(id string) (*Step, bool) {
	s, ok := g.steps[id]
	return s, ok
}

// Cause returns the cause node with id.
func (g *Graph) Cause(id string) (*Cause, bool) {
	c, ok := g.causes[id]
	return c, ok
}

// Warning returns the catalogue warning with id.
func (g *Graph) Warning(id string) (Warning, bool) {
	w, ok := g.warnings[id]
	return w, ok
}

// WarningsFor resolves warning IDs, skipping unknown ones (Load rejects
// those, so none are skipped on a loaded graph).
func (g *Graph) WarningsFor(ids []string) []Warning {
	var out []Warning
	for _, id := range ids {
		if w, ok := g.warnings[id]; ok {
			out = append(out, w)
		}
	}
	return out
}

// ProbeOf names the probe that declares fact, or "".
func (g *Graph) ProbeOf(fact string) string { return g.factProbe[fact] }

// Probes lists the probe IDs the steps use, once each, in step order.
func (g *Graph) Probes() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range g.Steps {
		if !seen[s.Probe] {
			seen[s.Probe] = true
			out = append(out, s.Probe)
		}
	}
	return out
}

// Option returns the start option with id.
func (g *Graph) Option(id string) (SymptomOption, bool) {
	for _, o := range g.Start.Options {
		if o.ID == id {
			return o, true
		}
	}
	return SymptomOption{}, false
}

// Facts returns the identifiers of the catalogue that the condition reads.
func (b Branch) Facts() []string {
	if b.cond == nil {
		return nil
	}
	return b.cond.facts
}

// Facts returns the identifiers of the catalogue that Expect reads (none for
// a manual step).
func (v VerifyStep) Facts() []string {
	if v.cond == nil {
		return nil
	}
	return v.cond.facts
}

// causeIDs are the causes the step's rules can report, once each.
func (s *Step) causeIDs() []string {
	var out []string
	for _, b := range s.Branches {
		if b.Cause != "" && !contains(out, b.Cause) {
			out = append(out, b.Cause)
		}
	}
	return out
}
