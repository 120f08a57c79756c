package runbook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
)

// Mode is how the session moves through the graph.
type Mode string

const (
	// ModeGuided: the engine proposes the next step from the facts and the
	// on-call accepts it or picks another.
	ModeGuided Mode = "guided"
	// ModeFree: any step, in any order.
	ModeFree Mode = "free"
	// ModeAuto: every probe runs, the engine walks every branch (check).
	ModeAuto Mode = "auto"
)

// Who moved through the graph, for BranchTaken.ChosenBy.
const (
	ChosenByEngine = "engine"
	ChosenByUser   = "user"
)

// Hypothesis verdicts.
const (
	VerdictConfirmed = "confirmed"
	VerdictRuledOut  = "ruled_out"
)

// StartNode is the BranchTaken.From of the move from the symptom question.
const StartNode = "start"

// Runner runs one probe; probes.Run in production, recorded results in tests.
type Runner func(ctx context.Context, p probes.Probe, c cluster.Cluster, t cluster.Target) probes.Result

// Config is what a session needs. Graph, Probes and Target are required.
type Config struct {
	Graph   *Graph
	Cluster cluster.Cluster
	Target  cluster.Target
	// Probes is the registry the steps' probe IDs resolve in (probes.ByID()).
	Probes map[string]probes.Probe
	Sinks  []Sink
	// Clock stamps events; time.Now when nil.
	Clock func() time.Time
	User  string
	Mode  Mode
	// SessionID names the session in every event; generated when empty.
	SessionID string
	// Run runs a probe; probes.Run when nil.
	Run Runner
	// ProbeTimeout bounds each probe run; probes.DefaultTimeout when zero.
	ProbeTimeout time.Duration
	// Started fills the session_started event beyond what the session
	// knows itself (kube context, server version, tool version).
	Started SessionStarted
	// Fixes computes the found causes' fix directions from the evidence
	// (patches, their simulation, the values commands use); nil leaves
	// the runbook's directions as they are.
	Fixes FixProver
}

// Session is one triage: it runs steps, evaluates branch rules over the facts
// and records every move as an Event. It is safe for concurrent use: the TUI
// runs probes in the background while it renders.
type Session struct {
	cfg Config

	mu      sync.Mutex
	id      string
	started bool
	ended   bool
	symptom string
	events  []Event
	// results holds the latest result of each probe; a step's result is its
	// probe's, so two steps running one probe see the same data.
	results map[string]probes.Result
	runs    map[string]int // step -> times run
	// userRuns counts the runs the on-call asked for: only a second one of
	// those is a re-run.
	userRuns map[string]int
	// inflight are the probes running now: a second request for one waits
	// for it instead of running it again.
	inflight map[string]*flight
	// reached lists, in order, the steps whose cause rules count toward
	// Findings: the steps run (guided, free) or walked (auto).
	reached    []string
	reachedSet map[string]bool
	current    string
	verdicts   map[string]Hypothesis
	fixes      map[string]string
	sinkErr    error
	expander   *strings.Replacer
	// proven holds the fix prover's answer per cause (see ProveFixes).
	proven map[string]proven
}

// ProbeSummary is one probe's outcome in a finding's evidence.
type ProbeSummary struct {
	Probe   string        `json:"probe"`
	Status  probes.Status `json:"status"`
	Summary string        `json:"summary"`
}

// Evidence is why a rule fired: the facts it read with their values and the
// probes that produced them.
type Evidence struct {
	Step       string         `json:"step"`
	When       string         `json:"when"`
	Reason     string         `json:"reason,omitempty"`
	Confidence Confidence     `json:"confidence"`
	Facts      map[string]any `json:"facts"`
	Probes     []ProbeSummary `json:"probes"`
	// Table is the step probe's evidence table (the rows the on-call reads).
	Table *probes.Evidence `json:"table,omitempty"`
	// Weakened says which contradicting evidence lowered the confidence.
	Weakened string `json:"weakened,omitempty"`
	// Confirmed and NotSeen are the rule's confirming evidence that held
	// or did not; Missing is what could not be read, with how to get it.
	Confirmed []string          `json:"confirmed,omitempty"`
	NotSeen   []string          `json:"not_seen,omitempty"`
	Missing   []MissingEvidence `json:"missing,omitempty"`
}

// MissingEvidence is evidence that would confirm a finding but could not be
// read, and the commands that read it by hand.
type MissingEvidence struct {
	Describe string   `json:"describe"`
	Unknown  []string `json:"unknown"`
	Probes   []string `json:"probes,omitempty"`
	Why      string   `json:"why"`
	Commands []string `json:"commands,omitempty"`
}

// Unexplained is the cause ID of a finding that is a failed step no cause
// explains.
const Unexplained = "unexplained"

// Finding is a cause the facts support, or (Cause Unexplained) a step that
// failed with no cause to explain it.
type Finding struct {
	Cause string `json:"cause"`
	// Step is the failed step of an unexplained finding.
	Step       string       `json:"step,omitempty"`
	Title      string       `json:"title"`
	Severity   string       `json:"severity"`
	Confidence Confidence   `json:"confidence"`
	Summary    string       `json:"summary"`
	Evidence   []Evidence   `json:"evidence"`
	Fixes      []Fix        `json:"fixes"`
	Verify     []VerifyStep `json:"verify"`
	Warnings   []Warning    `json:"warnings,omitempty"`
	// Verdict is the on-call's hypothesis verdict, if any.
	Verdict string `json:"verdict,omitempty"`
	// ChosenFix is the fix ID the on-call picked, if any.
	ChosenFix string `json:"chosen_fix,omitempty"`
	// ConsequenceOf lists the other findings this one follows from: fix
	// those first.
	ConsequenceOf []string `json:"consequence_of,omitempty"`

	// ruleSummary: a rule's summary already opens Summary.
	ruleSummary bool
}

// SkippedRule is a rule that could not decide because a fact it reads is
// unknown: its probe errored, was skipped, or has not run. An undecidable
// rule never matches; "Envoy admin unreachable" must not read as "0 hosts".
type SkippedRule struct {
	Step    string   `json:"step"`
	When    string   `json:"when"`
	Unknown []string `json:"unknown"`
	// Cause and Confidence are the rule's, for a cause rule.
	Cause      string     `json:"cause,omitempty"`
	Confidence Confidence `json:"confidence,omitempty"`
	// Probes declare the unknown facts, once each.
	Probes []string `json:"probes,omitempty"`
	Why    string   `json:"why"`
	// RuledOut: a term of the rule whose facts are known is false, so the
	// rule cannot match whatever the unknown facts turn out to be.
	RuledOut bool `json:"ruled_out,omitempty"`
	// Holding are the rule's terms whose facts are known and hold, guards
	// that hold in an empty world left out: the evidence it has so far.
	Holding []string `json:"holding,omitempty"`
	// terms is how many "&&" terms the rule has.
	terms int
}

// Proposal is the engine's suggestion at the current step (guided mode).
type Proposal struct {
	From string `json:"from"`
	// NeedsRun: From's probe has not run; run it before trusting Next.
	NeedsRun bool `json:"needs_run,omitempty"`
	// Next is the proposed step, "" when the walk ends at From.
	Next   string `json:"next,omitempty"`
	When   string `json:"when,omitempty"` // the condition that chose Next; "" for otherwise
	Reason string `json:"reason,omitempty"`
	// Causes are the causes From's rules reach with the current facts.
	Causes  []Finding     `json:"causes,omitempty"`
	Skipped []SkippedRule `json:"skipped,omitempty"`
	// Abort says why the triage cannot go on from here, if an abort rule
	// matched.
	Abort string `json:"abort,omitempty"`
}

// VerificationResult is one verification step checked after a fix.
type VerificationResult struct {
	Cause    string        `json:"cause"`
	Probe    string        `json:"probe,omitempty"`
	Expect   string        `json:"expect,omitempty"`
	Describe string        `json:"describe"`
	Passed   bool          `json:"passed"`
	Status   probes.Status `json:"status,omitempty"`
	Detail   string        `json:"detail,omitempty"`
	// Manual: no probe can check this; Command is for the on-call to run.
	Manual  bool   `json:"manual,omitempty"`
	Command string `json:"command,omitempty"`
}

// NewSession prepares a session; nothing is recorded until Start.
func NewSession(cfg Config) (*Session, error) {
	if cfg.Graph == nil {
		return nil, errors.New("runbook session: no graph")
	}
	if cfg.Probes == nil {
		return nil, errors.New("runbook session: no probe registry")
	}
	for _, id := range cfg.Graph.Probes() {
		if _, ok := cfg.Probes[id]; !ok {
			return nil, fmt.Errorf("runbook session: probe %q of %s is not in the registry", id, cfg.Graph.ID)
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Run == nil {
		cfg.Run = probes.Run
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = probes.DefaultTimeout
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeGuided
	}
	id := cfg.SessionID
	if id == "" {
		id = newSessionID(cfg.Clock())
	}
	return &Session{
		cfg:        cfg,
		id:         id,
		results:    map[string]probes.Result{},
		runs:       map[string]int{},
		userRuns:   map[string]int{},
		inflight:   map[string]*flight{},
		reachedSet: map[string]bool{},
		verdicts:   map[string]Hypothesis{},
		fixes:      map[string]string{},
		expander:   targetReplacer(cfg.Target),
	}, nil
}

func targetReplacer(t cluster.Target) *strings.Replacer {
	port, source, sourceNS := "<port>", "<source-pod>", t.Namespace
	if t.Port != 0 {
		port = fmt.Sprint(t.Port)
	}
	if t.Source != nil {
		source, sourceNS = t.Source.Name, t.Source.Namespace
	}
	return strings.NewReplacer(
		PlaceholderNamespace, t.Namespace,
		PlaceholderService, t.Service,
		PlaceholderHost, t.Host(),
		PlaceholderPort, port,
		PlaceholderSource, source,
		PlaceholderSourceNamespace, sourceNS,
	)
}

// Expand replaces the runbook placeholders (${NAMESPACE}, ${SERVICE},
// ${HOST}, ${PORT}, ${SOURCE}, ${SOURCE_NAMESPACE}) with the target's values,
// so commands can be pasted as they are. Findings come expanded; the TUI
// expands a step's tell with it.
func (s *Session) Expand(text string) string { return s.expander.Replace(text) }

func newSessionID(t time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

// ID names the session.
func (s *Session) ID() string { return s.id }

// Graph is the runbook the session walks.
func (s *Session) Graph() *Graph { return s.cfg.Graph }

// Target is what the session triages.
func (s *Session) Target() cluster.Target { return s.cfg.Target }

// Mode is the session's mode.
func (s *Session) Mode() Mode { return s.cfg.Mode }

// Start records session_started. symptom is a start option ID; in guided mode
// its first step becomes current. Auto mode walks every option and takes "".
func (s *Session) Start(symptom string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("session already started")
	}
	var opt SymptomOption
	if symptom != "" {
		var ok bool
		if opt, ok = s.cfg.Graph.Option(symptom); !ok {
			return fmt.Errorf("unknown symptom %q (one of %s)", symptom, s.optionIDs())
		}
	}
	st := s.cfg.Started
	st.User = s.cfg.User
	st.Target = s.cfg.Target
	st.Runbook = s.cfg.Graph.ID
	st.Symptom = symptom
	st.Mode = string(s.cfg.Mode)
	if s.cfg.Cluster != nil && st.KubeContext == "" {
		info := s.cfg.Cluster.Info()
		st.KubeContext, st.Server = info.Context, info.Server
	}
	s.started = true
	s.symptom = symptom
	s.emit(Event{Kind: EventSessionStarted, Started: &st})
	if symptom != "" {
		s.current = opt.Next
		s.emit(Event{Kind: EventBranchTaken, Branch: &BranchTaken{
			From: StartNode, To: opt.Next, ChosenBy: ChosenByUser, Reason: opt.Title,
		}})
	}
	return nil
}

func (s *Session) optionIDs() string {
	var ids []string
	for _, o := range s.cfg.Graph.Start.Options {
		ids = append(ids, o.ID)
	}
	return fmt.Sprint(ids)
}

// Symptom is the start option chosen, "" before Start or in auto mode.
func (s *Session) Symptom() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.symptom
}

// Steps lists every step, in runbook order (free mode shows them all).
func (s *Session) Steps() []*Step { return s.cfg.Graph.Steps }

// Current is the guided walk's current step ("" before Start).
func (s *Session) Current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// RunStep runs the step's probe for the on-call and records probe_ran; a
// step they ran before is recorded as a re-run and reads fresh data (a
// caching Cluster is reset). The probes whose facts the step's rules read
// and that have not run run too, recorded after it as needed for it.
func (s *Session) RunStep(ctx context.Context, stepID string) (probes.Result, error) {
	return s.runStep(ctx, stepID, TriggerUser)
}

// RunRemaining is one step of the on-call's "run all remaining": it runs
// the step unless its probe already ran (as another step's dependency, a
// moment ago), in which case that result stands and nothing is recorded
// twice. RecordRunAll records the on-call's request first.
func (s *Session) RunRemaining(ctx context.Context, stepID string) (probes.Result, error) {
	return s.runStep(ctx, stepID, TriggerRunAll)
}

// RecordRunAll records that the on-call asked to run every remaining step.
func (s *Session) RecordRunAll(steps []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit(Event{Kind: EventRunAll, RunAll: &RunAll{Steps: steps}})
}

func (s *Session) runStep(ctx context.Context, stepID, trigger string) (probes.Result, error) {
	step, ok := s.cfg.Graph.Step(stepID)
	if !ok {
		return probes.Result{}, fmt.Errorf("unknown step %q", stepID)
	}
	s.mu.Lock()
	if trigger == TriggerUser && s.userRuns[stepID] > 0 {
		trigger = TriggerRerun
	}
	if res, ran := s.results[step.Probe]; ran && trigger == TriggerRunAll {
		s.reach(stepID)
		s.mu.Unlock()
		return res, nil
	}
	deps := s.missingDeps(step)
	s.mu.Unlock()
	if trigger == TriggerRerun {
		s.resetCache()
	}
	ids := append([]string{step.Probe}, deps...)
	// The step's own probe runs anew for the on-call (a run-all takes a
	// result already in); its dependencies take one already in.
	out, ours := s.runConcurrently(ctx, ids, trigger == TriggerRunAll)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userRuns[stepID]++
	if ours[0] || trigger != TriggerRunAll {
		s.recordRun(step, out[0], trigger, "")
	}
	s.reach(stepID)
	for i, dep := range deps {
		if !ours[i+1] {
			// It joined a run already under way: whoever started it
			// records it.
			continue
		}
		depStep := s.stepForProbe(dep)
		if depStep == nil {
			depStep = &Step{ID: dep, Probe: dep}
		}
		s.recordRun(depStep, out[i+1], TriggerNeeded, stepID)
		s.reach(depStep.ID)
	}
	// The findings this run reaches get their fixes proven (cached per
	// facts: a run that changed nothing proves nothing anew).
	s.mu.Unlock()
	s.ProveFixes(ctx)
	s.mu.Lock()
	return out[0], nil
}

// missingDeps lists the probes, other than the step's own, whose facts the
// step's rules read and that have not reported: RunStep runs them too (or
// waits for them when they are running), so that in guided mode a rule is
// not undecidable only because the on-call came by another path. s.mu is
// held.
func (s *Session) missingDeps(step *Step) []string {
	var deps []string
	for _, b := range step.Branches {
		for _, f := range b.cond.facts {
			p := s.cfg.Graph.ProbeOf(f)
			if _, ran := s.results[p]; ran || p == "" || p == step.Probe || contains(deps, p) {
				continue
			}
			if _, ok := s.cfg.Probes[p]; ok {
				deps = append(deps, p)
			}
		}
	}
	return deps
}

// runConcurrently runs the probes at once; ours says which runs this call
// started (the others it joined, or took as they were in). The first
// probe takes a result already in only when reuseFirst; the others always
// do.
func (s *Session) runConcurrently(ctx context.Context, ids []string, reuseFirst bool) ([]probes.Result, []bool) {
	out := make([]probes.Result, len(ids))
	ours := make([]bool, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], ours[i] = s.runShared(ctx, id, i > 0 || reuseFirst)
		}()
	}
	wg.Wait()
	return out, ours
}

// flight is one probe run under way.
type flight struct {
	done chan struct{}
	res  probes.Result
}

// runShared runs the probe, or waits for the run of it already under way
// (two steps whose rules read it, a run-all and a dependency): one run, one
// result. With reuse, a result already in is taken as it is. The result is
// the probe's latest as soon as it is in. started says whether this call
// ran it.
func (s *Session) runShared(ctx context.Context, probeID string, reuse bool) (res probes.Result, started bool) {
	s.mu.Lock()
	if r, ok := s.results[probeID]; ok && reuse {
		s.mu.Unlock()
		return r, false
	}
	if f, ok := s.inflight[probeID]; ok {
		s.mu.Unlock()
		<-f.done // the run is bounded by the probe timeout
		return f.res, false
	}
	f := &flight{done: make(chan struct{})}
	s.inflight[probeID] = f
	s.mu.Unlock()
	f.res = s.runProbe(ctx, probeID)
	s.mu.Lock()
	s.results[probeID] = f.res
	delete(s.inflight, probeID)
	s.mu.Unlock()
	close(f.done)
	return f.res, true
}

// RunAll runs every probe the graph's steps use, concurrently and once each,
// and records probe_ran for every step: the unattended triage's reads.
func (s *Session) RunAll(ctx context.Context) {
	ids := s.cfg.Graph.Probes()
	out, _ := s.runConcurrently(ctx, ids, false)
	byProbe := map[string]probes.Result{}
	for i, id := range ids {
		byProbe[id] = out[i]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, step := range s.cfg.Graph.Steps {
		s.recordRun(step, byProbe[step.Probe], TriggerAuto, "")
	}
}

func (s *Session) runProbe(ctx context.Context, probeID string) probes.Result {
	p := s.cfg.Probes[probeID]
	pctx, cancel := context.WithTimeout(ctx, s.cfg.ProbeTimeout)
	defer cancel()
	res := s.cfg.Run(pctx, p, s.cfg.Cluster, s.cfg.Target)
	res.Probe = probeID
	if res.Facts == nil {
		res.Facts = probes.Facts{}
	}
	if ctx.Err() != nil {
		// The triage was interrupted (Ctrl-C, esc) under it: what it read
		// is partial, and none of it is a fact.
		res.Status = probes.StatusError
		prior := strings.TrimSpace(res.Summary)
		res.Summary = InterruptedSummary
		if prior != "" && !strings.HasPrefix(prior, InterruptedSummary) {
			res.Summary += " (" + prior + ")"
		}
	}
	return res
}

// InterruptedSummary is the summary of a probe the triage was interrupted
// under.
const InterruptedSummary = "interrupted before it reported"

// Interrupted reports whether the step's latest result is a probe the
// triage was interrupted under.
func (s *Session) Interrupted(stepID string) bool {
	r, ok := s.Result(stepID)
	return ok && r.Status == probes.StatusError && strings.HasPrefix(r.Summary, InterruptedSummary)
}

// resetCache makes the next reads go to the cluster again.
func (s *Session) resetCache() {
	if r, ok := s.cfg.Cluster.(interface{ Reset() }); ok {
		r.Reset()
	}
}

// recordRun records a run of step's probe, why it ran (trigger) and for
// which step (forStep, a dependency's); runShared has stored the result.
// s.mu is held.
func (s *Session) recordRun(step *Step, res probes.Result, trigger, forStep string) {
	s.runs[step.ID]++
	s.emit(Event{Kind: EventProbeRan, Probe: &ProbeRan{
		Step: step.ID, Probe: step.Probe, Status: res.Status, Summary: res.Summary,
		Facts: res.Facts, Evidence: res.Evidence, Commands: res.Commands,
		DurationMS: res.Duration.Milliseconds(), Rerun: trigger == TriggerRerun, Causes: step.causeIDs(),
		Trigger: trigger, For: forStep,
	}})
}

// reach counts stepID's cause rules toward Findings; s.mu is held.
func (s *Session) reach(stepID string) {
	if !s.reachedSet[stepID] {
		s.reachedSet[stepID] = true
		s.reached = append(s.reached, stepID)
	}
}

// Result is the latest result of the step's probe.
func (s *Session) Result(stepID string) (probes.Result, bool) {
	step, ok := s.cfg.Graph.Step(stepID)
	if !ok {
		return probes.Result{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.results[step.Probe]
	return r, ok
}

// Ran reports how many times the step has run.
func (s *Session) Ran(stepID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[stepID]
}

// Facts are the known facts: those of every probe's latest result, except
// results that errored or were skipped, whose facts are not trusted.
func (s *Session) Facts() probes.Facts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.knownFacts()
}

func (s *Session) knownFacts() probes.Facts {
	out := probes.Facts{}
	for _, r := range s.results {
		if !trusted(r.Status) {
			continue
		}
		for k, v := range r.Facts {
			out[k] = v
		}
	}
	return out
}

func trusted(st probes.Status) bool {
	return st != probes.StatusError && st != probes.StatusSkipped
}

// Proposal is the engine's next move from the current step.
func (s *Session) Proposal() Proposal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proposalAt(s.current)
}

// ProposalAt is the engine's move from any step (free mode shows it too).
func (s *Session) ProposalAt(stepID string) Proposal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proposalAt(stepID)
}

func (s *Session) proposalAt(stepID string) Proposal {
	p := Proposal{From: stepID}
	step, ok := s.cfg.Graph.Step(stepID)
	if !ok {
		return p
	}
	if _, ran := s.results[step.Probe]; !ran {
		p.NeedsRun = true
	}
	d := s.decide(step, s.knownFacts())
	p.Next, p.When, p.Reason, p.Skipped, p.Abort = d.next, d.when, d.reason, d.skipped, d.abort
	for _, f := range s.dedupe(d.causes) {
		p.Causes = append(p.Causes, f)
	}
	return p
}

// Choose records a move from the current step to target, a step or a cause
// ID, by chosenBy (ChosenByUser or ChosenByEngine). Moving to a step makes it
// current; reaching a cause records it without moving.
func (s *Session) Choose(target, chosenBy string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.cfg.Graph
	_, isStep := g.Step(target)
	_, isCause := g.Cause(target)
	if !isStep && !isCause {
		return fmt.Errorf("unknown step or cause %q", target)
	}
	from := s.current
	if from == "" {
		from = StartNode
	}
	bt := &BranchTaken{From: from, To: target, IsCause: isCause, ChosenBy: chosenBy}
	if step, ok := g.Step(s.current); ok {
		d := s.decide(step, s.knownFacts())
		if _, ran := s.results[step.Probe]; ran {
			// Leaving a step that never ran skips nothing worth a record.
			s.recordSkipped(d.skipped)
		}
		switch {
		case isStep && target == d.next:
			bt.When, bt.Reason = d.when, d.reason
		case isCause:
			for _, c := range d.causes {
				if c.cause == target {
					bt.When, bt.Reason = c.branch.When, c.reason
					break
				}
			}
		}
	}
	s.emit(Event{Kind: EventBranchTaken, Branch: bt})
	if isStep {
		s.current = target
	}
	return nil
}

// Findings are the causes the facts support at the reached steps, deduped by
// cause (highest confidence, evidence merged), most confident first.
func (s *Session) Findings() []Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.findings()
}

func (s *Session) findings() []Finding {
	facts := s.knownFacts()
	steps := s.counted(facts)
	var hits []causeHit
	for _, step := range steps {
		hits = append(hits, s.decide(step, facts).causes...)
	}
	found := s.dedupe(hits)
	return append(found, s.unexplained(steps, hits, found)...)
}

// ExplainedByAny in a step's explained_by: any finding explains its
// failure (the step reads a symptom, such as 503s in the log).
const ExplainedByAny = "*"

// unexplained turns each reached step whose probe failed, and that no
// finding explains, into a finding of its own: a failure the runbook has
// no cause for must not end in "no finding". A failure is explained by a
// cause reached at the step, by a finding that read the probe's facts, by
// a cause the step lists in explained_by, or by the step's benign_failure.
func (s *Session) unexplained(steps []*Step, hits []causeHit, found []Finding) []Finding {
	foundIDs := map[string]bool{}
	for _, f := range found {
		foundIDs[f.Cause] = true
	}
	cited := map[string]bool{}
	for _, h := range hits {
		cited[h.step.Probe] = true
		facts := append([]string(nil), h.branch.cond.facts...)
		for _, c := range h.branch.Confirm {
			facts = append(facts, c.cond.facts...)
		}
		for _, f := range facts {
			cited[s.cfg.Graph.ProbeOf(f)] = true
		}
	}
	judged := map[string]bool{}
	var out []Finding
	for _, step := range steps {
		res, ran := s.results[step.Probe]
		if !ran || res.Status != probes.StatusFail || judged[step.Probe] {
			continue
		}
		judged[step.Probe] = true
		explained := step.BenignFailure != "" || cited[step.Probe]
		for _, c := range step.ExplainedBy {
			explained = explained || foundIDs[c] || c == ExplainedByAny && len(found) > 0
		}
		if explained {
			continue
		}
		next := step.Unexplained
		if next == "" {
			next = "Read the step's evidence and run its commands by hand: the runbook has no cause for what it shows."
		}
		ev := Evidence{Step: step.ID, When: "probe " + step.Probe + " failed", Reason: res.Summary, Confidence: ConfidenceLow,
			Facts: map[string]any{}, Probes: []ProbeSummary{{Probe: step.Probe, Status: res.Status, Summary: res.Summary}}}
		if len(res.Evidence.Rows) > 0 {
			ev.Table = &probes.Evidence{Columns: res.Evidence.Columns, Rows: res.Evidence.Rows}
		}
		out = append(out, Finding{
			Cause: Unexplained, Step: step.ID, Severity: SeverityCause, Confidence: ConfidenceLow,
			Title:    step.Title + ": failed, and no cause of the runbook explains it",
			Summary:  res.Summary,
			Evidence: []Evidence{ev},
			Fixes:    []Fix{{ID: "look-next", Title: "What to look at next", Text: s.Expand(next), Commands: res.Commands}},
		})
	}
	return out
}

// Undecided is a cause no rule could rule in or out because the evidence
// it reads could not be read: a hypothesis, with what would settle it.
type Undecided struct {
	Cause string `json:"cause"`
	Title string `json:"title"`
	// Confidence is that of the strongest rule that could not decide.
	Confidence Confidence `json:"confidence"`
	Unknown    []string   `json:"unknown"`
	Probes     []string   `json:"probes,omitempty"`
	Why        string     `json:"why"`
	// Settle are the commands that read the missing evidence by hand.
	Settle []string `json:"settle,omitempty"`
	Rules  []string `json:"rules"`
	// Holding are the terms of its rules that the known facts already
	// satisfy: what speaks for it so far.
	Holding []string `json:"holding,omitempty"`
	// closest is the largest share of a rule's terms that hold.
	closest float64
}

// Undecided lists the causes that rules at the reached steps of the path
// could not decide and no rule found, most likely first: the rule closest
// to firing (the largest share of its terms that the known facts satisfy,
// guards aside), then the strongest rule's confidence, then the fewest
// facts missing. A rule that a known fact already rules out is no
// hypothesis, nor is one waiting only for facts that no step of the path
// reads (an Envoy the traffic does not cross): the data plane on the path
// cannot produce it. What would settle it are the commands of the probes
// of the path that should have read them.
func (s *Session) Undecided() []Undecided {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.undecided(s.knownFacts())
}

func (s *Session) undecided(facts probes.Facts) []Undecided {
	found := map[string]bool{}
	for _, f := range s.findings() {
		found[f.Cause] = true
	}
	onProbes := s.pathProbes(facts)
	byCause := map[string]*Undecided{}
	var order []string
	for _, step := range s.counted(facts) {
		for _, r := range s.decide(step, facts).skipped {
			if r.Cause == "" || found[r.Cause] || r.RuledOut {
				continue
			}
			if ok, _, _ := s.producible(r.Cause, facts); !ok {
				// No data plane of the path produces it (or only the
				// caller's, and there is none to read): no hypothesis.
				continue
			}
			unknown := s.readable(r.Unknown, onProbes)
			if len(unknown) == 0 {
				continue
			}
			u := byCause[r.Cause]
			if u == nil {
				c, _ := s.cfg.Graph.Cause(r.Cause)
				u = &Undecided{Cause: r.Cause, Title: c.Title}
				byCause[r.Cause] = u
				order = append(order, r.Cause)
			}
			if r.Confidence.Rank() > u.Confidence.Rank() {
				u.Confidence = r.Confidence
			}
			u.Rules = append(u.Rules, r.When)
			if share := float64(len(r.Holding)) / float64(max(1, r.terms)); share > u.closest {
				u.closest = share
			}
			for _, h := range r.Holding {
				if !contains(u.Holding, h) {
					u.Holding = append(u.Holding, h)
				}
			}
			for _, f := range unknown {
				if !contains(u.Unknown, f) {
					u.Unknown = append(u.Unknown, f)
				}
			}
		}
	}
	out := make([]Undecided, 0, len(order))
	for _, id := range order {
		u := byCause[id]
		m := s.missingEvidence("", u.Unknown)
		u.Probes, u.Why, u.Settle = m.Probes, m.Why, m.Commands
		out = append(out, *u)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].closest != out[j].closest {
			return out[i].closest > out[j].closest
		}
		if out[i].Confidence.Rank() != out[j].Confidence.Rank() {
			return out[i].Confidence.Rank() > out[j].Confidence.Rank()
		}
		return len(out[i].Unknown) < len(out[j].Unknown)
	})
	return out
}

// Skipped lists the undecidable rules at the reached steps of the path (or,
// before any step ran, none).
func (s *Session) Skipped() []SkippedRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	facts := s.knownFacts()
	var out []SkippedRule
	for _, step := range s.counted(facts) {
		for _, r := range s.decide(step, facts).skipped {
			if r.Cause != "" {
				if ok, _, _ := s.producible(r.Cause, facts); !ok {
					continue
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// Note records free text from the on-call, optionally about a step.
func (s *Session) Note(step, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit(Event{Kind: EventNote, Note: &Note{Step: step, Text: text}})
}

// Remark records a note of the tool's own: what it did on its own account
// (the caller search), which the record keeps apart from the on-call's.
func (s *Session) Remark(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit(Event{Kind: EventNote, Note: &Note{Text: text, By: NoteByTool}})
}

// Hypothesis records a cause confirmed or ruled out, and why.
func (s *Session) Hypothesis(cause, verdict, why string) error {
	if _, ok := s.cfg.Graph.Cause(cause); !ok {
		return fmt.Errorf("unknown cause %q", cause)
	}
	if verdict != VerdictConfirmed && verdict != VerdictRuledOut {
		return fmt.Errorf("verdict must be %s or %s, not %q", VerdictConfirmed, VerdictRuledOut, verdict)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := Hypothesis{Cause: cause, Verdict: verdict, Why: why}
	s.verdicts[cause] = h
	s.emit(Event{Kind: EventHypothesis, Hypothesis: &h})
	return nil
}

// ChooseFix records the fix direction the on-call picked for a cause.
func (s *Session) ChooseFix(cause, fixID string) error {
	c, ok := s.cfg.Graph.Cause(cause)
	if !ok {
		return fmt.Errorf("unknown cause %q", cause)
	}
	for _, f := range c.Fixes {
		if f.ID == fixID {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.fixes[cause] = fixID
			s.emit(Event{Kind: EventFixChosen, Fix: &FixChosen{Cause: cause, Fix: fixID, Text: f.Title}})
			return nil
		}
	}
	return fmt.Errorf("cause %s has no fix %q", cause, fixID)
}

// Verify re-runs the cause's verification probes (fresh data) and checks each
// expectation; manual checks come back with Manual set and their command.
func (s *Session) Verify(ctx context.Context, causeID string) ([]VerificationResult, error) {
	c, ok := s.cfg.Graph.Cause(causeID)
	if !ok {
		return nil, fmt.Errorf("unknown cause %q", causeID)
	}
	s.resetCache()
	fresh := map[string]probes.Result{}
	for _, v := range c.Verify {
		if v.Probe == "" || hasResult(fresh, v.Probe) {
			continue
		}
		fresh[v.Probe], _ = s.runShared(ctx, v.Probe, false)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range c.Verify {
		res, ok := fresh[v.Probe]
		if !ok {
			continue
		}
		delete(fresh, v.Probe)
		step := s.stepForProbe(v.Probe)
		if step == nil {
			step = &Step{ID: "verify/" + causeID, Probe: v.Probe}
		}
		s.recordRun(step, res, TriggerVerify, "")
	}
	facts := s.knownFacts()
	var out []VerificationResult
	for _, v := range c.Verify {
		vr := VerificationResult{Cause: causeID, Probe: v.Probe, Expect: v.Expect, Describe: v.Describe, Command: s.Expand(v.Command)}
		if v.Probe == "" {
			vr.Manual = true
			vr.Detail = "manual check"
		} else {
			res := s.results[v.Probe]
			vr.Status = res.Status
			vr.Passed, vr.Detail = s.checkExpect(v, res, facts)
		}
		out = append(out, vr)
		s.emit(Event{Kind: EventVerification, Verification: &Verification{
			Cause: causeID, Probe: v.Probe, Expect: v.Expect, Passed: vr.Passed, Status: vr.Status, Detail: vr.Detail,
			Describe: vr.Describe, Command: vr.Command,
		}})
	}
	return out, nil
}

func hasResult(m map[string]probes.Result, id string) bool {
	_, ok := m[id]
	return ok
}

func (s *Session) stepForProbe(probeID string) *Step {
	for _, st := range s.cfg.Graph.Steps {
		if st.Probe == probeID {
			return st
		}
	}
	return nil
}

func (s *Session) checkExpect(v VerifyStep, res probes.Result, facts probes.Facts) (bool, string) {
	if !trusted(res.Status) {
		return false, fmt.Sprintf("%s %s: %s", v.Probe, res.Status, res.Summary)
	}
	if miss := missingFacts(v.cond.facts, facts); len(miss) > 0 {
		return false, s.unknownWhy(miss)
	}
	out, err := v.cond.eval(facts)
	if err != nil {
		return false, "cannot evaluate: " + err.Error()
	}
	passed, _ := out.(bool)
	detail := factValues(v.cond.facts, facts)
	return passed, detail
}

func factValues(names []string, facts probes.Facts) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, n+"="+FormatValue(facts[n]))
	}
	sort.Strings(parts)
	return joinComma(parts)
}

func joinComma(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += ", "
		}
		out += p
	}
	return out
}

// End records session_ended with the findings' cause IDs and where the
// session left every cause of its path (Assess). Ending twice is a no-op.
func (s *Session) End(reason string) {
	s.EndWith(reason, nil, nil)
}

// EndWith is End with the findings and cause states of a triage this
// session is the record of (the merge of several sessions); nil takes the
// session's own.
func (s *Session) EndWith(reason string, findings []string, causes []CauseState) {
	if causes == nil {
		causes = s.Assess()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	if findings == nil {
		for _, f := range s.findings() {
			findings = append(findings, f.Cause)
		}
	}
	s.emit(Event{Kind: EventSessionEnded, Ended: &SessionEnded{Findings: findings, Reason: reason, Causes: causes}})
}

// Ended reports whether the session has ended.
func (s *Session) Ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// ChosenFix is the fix the on-call chose for the cause, "" if none.
func (s *Session) ChosenFix(cause string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fixes[cause]
}

// Verdict is the on-call's verdict on the cause, "" if none.
func (s *Session) Verdict(cause string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.verdicts[cause].Verdict
}

// Events is the history so far, oldest first.
func (s *Session) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// SinkErr is the first error a sink returned (the incident log could not be
// written); the session keeps going, the caller decides what to say.
func (s *Session) SinkErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sinkErr
}

// emit stamps and records ev and hands it to every sink; s.mu is held.
func (s *Session) emit(ev Event) {
	if s.ended && ev.Kind != EventSessionEnded && ev.Kind != EventAction {
		// The record is closed: a probe cancelled by the quit that reports
		// late is not part of it. A change to the cluster (a revert of
		// debug logging) is recorded whenever it happens.
		return
	}
	ev.Time = s.cfg.Clock()
	ev.Session = s.id
	s.events = append(s.events, ev)
	for _, sink := range s.cfg.Sinks {
		if err := sink.Write(ev); err != nil && s.sinkErr == nil {
			s.sinkErr = err
		}
	}
}
