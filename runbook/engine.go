package runbook

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes"
)

// causeHit is one cause rule that matched at a step.
type causeHit struct {
	cause  string
	step   *Step
	branch *Branch
	reason string
	// confidence is the branch's, lowered by contradicting evidence.
	confidence Confidence
	weakened   string
}

// decision is what a step's rules say with the given facts.
type decision struct {
	next, when, reason string
	// abort is the reason of the first matching abort rule.
	abort   string
	causes  []causeHit
	skipped []SkippedRule
}

// decide evaluates every rule of step: each matching cause rule is a hit, the
// first matching next rule (else otherwise) is the way on. A rule that reads
// an unknown fact does not match and is reported as skipped.
func (s *Session) decide(step *Step, facts probes.Facts) decision {
	var d decision
	for i := range step.Branches {
		b := &step.Branches[i]
		if b.Next != "" && d.next != "" {
			continue // a later next rule cannot win
		}
		if miss := missingFacts(b.cond.facts, facts); len(miss) > 0 {
			could, holding, terms := b.cond.couldHold(facts)
			d.skipped = append(d.skipped, SkippedRule{
				Step: step.ID, When: b.When, Unknown: miss, Probes: s.probesOf(miss),
				Why: "rule skipped: " + s.unknownWhy(miss), Cause: b.Cause, Confidence: b.Confidence,
				RuledOut: !could, Holding: holding, terms: terms,
			})
			continue
		}
		out, err := b.cond.eval(facts)
		if err != nil {
			d.skipped = append(d.skipped, SkippedRule{
				Step: step.ID, When: b.When, Why: "rule skipped: cannot evaluate: " + err.Error(),
			})
			continue
		}
		if matched, _ := out.(bool); !matched {
			continue
		}
		reason := renderReason(b.reason, facts)
		if b.Abort {
			if d.abort == "" {
				d.abort = reason
			}
			continue
		}
		if b.Cause != "" {
			h := causeHit{cause: b.Cause, step: step, branch: b, reason: reason, confidence: b.Confidence}
			weaken(&h, facts)
			d.causes = append(d.causes, h)
			continue
		}
		d.next, d.when, d.reason = b.Next, b.When, reason
	}
	if d.next == "" && step.Otherwise != "" {
		d.next, d.reason = step.Otherwise, "no rule matched"
	}
	return d
}

// weaken lowers a hit's confidence to that of the first contradicting
// evidence that holds (the lowest when several do). Evidence whose facts
// are unknown contradicts nothing.
func weaken(h *causeHit, facts probes.Facts) {
	for i := range h.branch.Weaken {
		w := &h.branch.Weaken[i]
		if len(missingFacts(w.cond.facts, facts)) > 0 {
			continue
		}
		if out, err := w.cond.eval(facts); err == nil && out == true && w.Confidence.Rank() < h.confidence.Rank() {
			h.confidence, h.weakened = w.Confidence, renderReason(w.reason, facts)
		}
	}
}

// unknownWhy says, per probe, which facts are unknown and what happened
// to the probe that should have reported them: "envoy_hosts_total unknown
// (envoy-clusters: error: ...)".
func (s *Session) unknownWhy(missing []string) string {
	var order []string
	byWhy := map[string][]string{}
	for _, f := range missing {
		probeID := s.cfg.Graph.ProbeOf(f)
		var why string
		res, ran := s.results[probeID]
		switch {
		case probeID == "":
			why = "no probe declares it"
		case !ran:
			why = probeID + " has not run"
		case !trusted(res.Status):
			why = fmt.Sprintf("%s: %s: %s", probeID, res.Status, res.Summary)
		default:
			why = probeID + " did not report it"
		}
		if _, seen := byWhy[why]; !seen {
			order = append(order, why)
		}
		byWhy[why] = append(byWhy[why], f)
	}
	parts := make([]string, 0, len(order))
	for _, why := range order {
		parts = append(parts, fmt.Sprintf("%s unknown (%s)", strings.Join(byWhy[why], ", "), why))
	}
	return strings.Join(parts, "; ")
}

func (s *Session) probesOf(facts []string) []string {
	var out []string
	for _, f := range facts {
		if p := s.cfg.Graph.ProbeOf(f); p != "" && !contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// recordSkipped logs undecidable rules; s.mu is held.
func (s *Session) recordSkipped(skipped []SkippedRule) {
	for _, r := range skipped {
		s.emit(Event{Kind: EventRuleSkipped, Skipped: &RuleSkipped{
			Step: r.Step, When: r.When, Unknown: r.Unknown, Why: r.Why,
		}})
	}
}

// dedupe turns hits into findings, one per cause: the highest confidence
// wins, evidence is merged; most confident first, then in the order reached.
func (s *Session) dedupe(hits []causeHit) []Finding {
	facts := s.knownFacts()
	byCause := map[string]*Finding{}
	var order []string
	for _, h := range hits {
		ev := s.evidence(h, facts)
		f, ok := byCause[h.cause]
		if !ok {
			f = s.newFinding(h.cause)
			byCause[h.cause] = f
			order = append(order, h.cause)
		}
		if h.confidence.Rank() > f.Confidence.Rank() {
			f.Confidence = h.confidence
		}
		if len(h.branch.summary) > 0 && !f.ruleSummary {
			f.Summary = renderReason(h.branch.summary, facts) + " " + f.Summary
			f.ruleSummary = true
		}
		if !hasEvidence(f.Evidence, ev) {
			f.Evidence = append(f.Evidence, ev)
		}
	}
	out := make([]Finding, 0, len(order))
	for _, id := range order {
		f := byCause[id]
		c, _ := s.cfg.Graph.Cause(id)
		for _, other := range c.ConsequenceOf {
			if byCause[other] != nil {
				f.ConsequenceOf = append(f.ConsequenceOf, other)
			}
		}
		out = append(out, *f)
	}
	// Root causes first, most confident first, then in the order reached.
	sort.SliceStable(out, func(i, j int) bool {
		ci, cj := len(out[i].ConsequenceOf) > 0, len(out[j].ConsequenceOf) > 0
		if ci != cj {
			return !ci
		}
		return out[i].Confidence.Rank() > out[j].Confidence.Rank()
	})
	return out
}

func hasEvidence(list []Evidence, ev Evidence) bool {
	for _, e := range list {
		if e.Step == ev.Step && e.When == ev.When {
			return true
		}
	}
	return false
}

func (s *Session) newFinding(causeID string) *Finding {
	c, _ := s.cfg.Graph.Cause(causeID)
	sev := c.Severity
	if sev == "" {
		sev = SeverityCause
	}
	f := &Finding{
		Cause: c.ID, Title: c.Title, Severity: sev, Summary: s.Expand(c.Summary),
		Warnings: s.cfg.Graph.WarningsFor(c.Warnings),
		Verdict:  s.verdicts[causeID].Verdict, ChosenFix: s.fixes[causeID],
	}
	fixes, vars := s.fixesOf(c)
	f.Fixes = fixes
	for _, v := range c.Verify {
		f.Verify = append(f.Verify, expandVerify(v, vars))
	}
	return f
}

// evidence is the facts a hit read and the probes behind them.
func (s *Session) evidence(h causeHit, facts probes.Facts) Evidence {
	ev := Evidence{
		Step: h.step.ID, When: h.branch.When, Reason: h.reason,
		Confidence: h.confidence, Weakened: h.weakened, Facts: map[string]any{},
	}
	for i := range h.branch.Confirm {
		c := &h.branch.Confirm[i]
		if miss := missingFacts(c.cond.facts, facts); len(miss) > 0 {
			ev.Missing = append(ev.Missing, s.missingEvidence(c.Describe, miss))
			continue
		}
		if out, err := c.cond.eval(facts); err == nil && out == true {
			ev.Confirmed = append(ev.Confirmed, c.Describe)
		} else {
			ev.NotSeen = append(ev.NotSeen, c.Describe)
		}
	}
	probeIDs := []string{h.step.Probe}
	for _, f := range h.branch.cond.facts {
		ev.Facts[f] = facts[f]
		if p := s.cfg.Graph.ProbeOf(f); p != "" && !contains(probeIDs, p) {
			probeIDs = append(probeIDs, p)
		}
	}
	for _, id := range probeIDs {
		if r, ok := s.results[id]; ok {
			ev.Probes = append(ev.Probes, ProbeSummary{Probe: id, Status: r.Status, Summary: r.Summary})
		}
	}
	if r, ok := s.results[h.step.Probe]; ok && len(r.Evidence.Rows) > 0 {
		ev.Table = &probes.Evidence{Columns: r.Evidence.Columns, Rows: r.Evidence.Rows}
	}
	return ev
}

// missingEvidence says what would confirm a finding and how to get it: the
// commands of the probes that should have reported the unknown facts.
func (s *Session) missingEvidence(describe string, unknown []string) MissingEvidence {
	m := MissingEvidence{Describe: describe, Unknown: unknown, Probes: s.probesOf(unknown), Why: s.unknownWhy(unknown)}
	for _, p := range m.Probes {
		if r, ok := s.results[p]; ok {
			for _, c := range r.Commands {
				if !contains(m.Commands, c) {
					m.Commands = append(m.Commands, c)
				}
			}
		}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Auto is the unattended triage of `meshtriage check`: it starts the session
// if needed, runs every probe concurrently, then walks the graph from every
// start option, visiting each step once. At a step every matching cause rule
// is a finding and the first matching next rule (else otherwise) goes on.
// Every move is recorded with chosen_by engine.
func (s *Session) Auto(ctx context.Context) ([]Finding, error) {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		if err := s.Start(""); err != nil {
			return nil, err
		}
	}
	s.RunAll(ctx)
	// Interrupted (Ctrl-C), the walk still goes over what had finished:
	// the probes cut short are unknown, and the on-call gets what is known
	// with ctx's error; no fix is proven then.
	interrupted := ctx.Err()
	if err := s.walk(interrupted); err != nil {
		return nil, err
	}
	if interrupted == nil {
		s.ProveFixes(ctx)
	}
	return s.Findings(), interrupted
}

// walk is Auto's walk of the graph over the facts of the probes run. An
// interrupted walk does not hold the probes cut short against the target:
// it returns interrupted where the target could not be judged.
func (s *Session) walk(interrupted error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, step := range s.cfg.Graph.Steps {
		if res := s.results[step.Probe]; step.Required && !trusted(res.Status) && interrupted == nil {
			return &TriageError{Step: step.ID, Reason: fmt.Sprintf("%s %s", step.Probe, res.Status), Summary: res.Summary}
		}
	}
	facts := s.knownFacts()
	visited := map[string]bool{}
	for _, opt := range s.cfg.Graph.Start.Options {
		s.emit(Event{Kind: EventBranchTaken, Branch: &BranchTaken{
			From: StartNode, To: opt.Next, ChosenBy: ChosenByEngine, Reason: opt.Title,
		}})
		for id := opt.Next; id != "" && !visited[id]; {
			visited[id] = true
			s.reach(id)
			step, _ := s.cfg.Graph.Step(id)
			d := s.decide(step, facts)
			s.recordSkipped(d.skipped)
			if d.abort != "" {
				res := s.results[step.Probe]
				if interrupted != nil {
					return interrupted
				}
				return &TriageError{Step: id, Reason: d.abort, Summary: res.Summary}
			}
			for _, c := range d.causes {
				s.emit(Event{Kind: EventBranchTaken, Branch: &BranchTaken{
					From: id, To: c.cause, IsCause: true, ChosenBy: ChosenByEngine,
					Reason: c.reason, When: c.branch.When,
				}})
			}
			if d.next != "" {
				s.emit(Event{Kind: EventBranchTaken, Branch: &BranchTaken{
					From: id, To: d.next, ChosenBy: ChosenByEngine, Reason: d.reason, When: d.when,
				}})
			}
			id = d.next
		}
	}
	// Every probe ran: the steps the walk did not take still count where
	// the path may go through them (a rule that could not decide which
	// way), and the path decides which do.
	for _, step := range s.cfg.Graph.Steps {
		s.reach(step.ID)
	}
	return nil
}

// TriageError says the runbook cannot be walked: a required step's probe
// failed to read (cluster unreachable, RBAC) or an abort rule matched (the
// target does not exist). check exits 1 on it.
type TriageError struct {
	Step    string
	Reason  string
	Summary string // the step probe's summary
}

func (e *TriageError) Error() string {
	if e.Summary == "" || e.Summary == e.Reason {
		return fmt.Sprintf("cannot triage (step %s): %s", e.Step, e.Reason)
	}
	return fmt.Sprintf("cannot triage (step %s): %s: %s", e.Step, e.Reason, e.Summary)
}

// Resume rebuilds a session from its recorded history (meshtriage log
// resume): results, the current step, verdicts and fixes come back; new
// events go to cfg.Sinks, the history is not written again.
func Resume(cfg Config, history []Event) (*Session, error) {
	if len(history) > 0 && cfg.SessionID == "" {
		cfg.SessionID = history[0].Session
	}
	s, err := NewSession(cfg)
	if err != nil {
		return nil, err
	}
	g := cfg.Graph
	for _, ev := range history {
		switch ev.Kind {
		case EventSessionStarted:
			if ev.Started != nil {
				s.started = true
				s.symptom = ev.Started.Symptom
			}
		case EventProbeRan:
			if p := ev.Probe; p != nil {
				s.results[p.Probe] = probes.Result{
					Probe: p.Probe, Status: p.Status, Summary: p.Summary,
					Facts: coerceFacts(p.Facts, g.facts), Evidence: p.Evidence, Commands: p.Commands,
				}
				if _, ok := g.Step(p.Step); ok {
					s.runs[p.Step]++
					s.reach(p.Step)
				}
			}
		case EventBranchTaken:
			if b := ev.Branch; b != nil && !b.IsCause {
				if _, ok := g.Step(b.To); ok {
					s.current = b.To
				}
			}
		case EventHypothesis:
			if h := ev.Hypothesis; h != nil {
				s.verdicts[h.Cause] = *h
			}
		case EventFixChosen:
			if f := ev.Fix; f != nil {
				s.fixes[f.Cause] = f.Fix
			}
		}
	}
	if !s.started {
		return nil, fmt.Errorf("history of session %s has no session_started event", s.id)
	}
	s.events = append([]Event(nil), history...)
	return s, nil
}

// coerceFacts restores declared types to facts decoded from JSON (numbers
// arrive as float64, lists as []any).
func coerceFacts(in probes.Facts, types map[string]probes.FactType) probes.Facts {
	out := probes.Facts{}
	for k, v := range in {
		out[k] = coerce(v, types[k])
	}
	return out
}

func coerce(v any, t probes.FactType) any {
	switch t {
	case probes.FactInt:
		if f, ok := v.(float64); ok {
			return int(f)
		}
	case probes.FactFloat:
		if i, ok := v.(int); ok {
			return float64(i)
		}
	case probes.FactList:
		if l, ok := v.([]any); ok {
			s := make([]string, 0, len(l))
			for _, e := range l {
				s = append(s, fmt.Sprint(e))
			}
			return s
		}
		if v == nil {
			return []string{}
		}
	}
	return v
}
