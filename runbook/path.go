package runbook

import (
	"strings"

	"github.com/meshtriage/meshtriage/probes"
)

// The path is what the facts say the traffic goes through: the steps the
// walk can reach from the start. At each step the first rule that holds
// decides the way on; while a rule's facts are unknown and it could still
// hold, every way it could go stays on the path. A caller in ambient takes
// the ztunnel steps and not the caller's Envoy ones; a sidecar mesh takes
// no ambient step. Findings and hypotheses come only from steps on the
// path: a step run off it (run all) reads a data plane the traffic does
// not cross, and its rules say nothing about this incident.

// pathSteps are the steps on the path with the facts known. s.mu is held.
func (s *Session) pathSteps(facts probes.Facts) map[string]bool {
	on := map[string]bool{}
	var queue []string
	for _, opt := range s.cfg.Graph.Start.Options {
		queue = append(queue, opt.Next)
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		step, ok := s.cfg.Graph.Step(id)
		if !ok || on[id] {
			continue
		}
		on[id] = true
		queue = append(queue, possibleNext(step, facts)...)
	}
	return on
}

// possibleNext are the steps the walk can go to from step: the first next
// rule that holds, every earlier one that could still hold, and otherwise
// when no rule holds for sure. A matching abort rule ends the walk.
func possibleNext(step *Step, facts probes.Facts) []string {
	var out []string
	for i := range step.Branches {
		b := &step.Branches[i]
		if b.Next == "" && !b.Abort {
			continue
		}
		if miss := missingFacts(b.cond.facts, facts); len(miss) > 0 {
			if could, _, _ := b.cond.couldHold(facts); could && b.Next != "" {
				out = append(out, b.Next)
			}
			continue
		}
		v, err := b.cond.eval(facts)
		if err != nil {
			continue
		}
		if matched, _ := v.(bool); matched {
			if b.Abort {
				return out
			}
			return append(out, b.Next)
		}
	}
	if step.Otherwise != "" {
		out = append(out, step.Otherwise)
	}
	return out
}

// OnPath reports whether the step is on the path the facts so far give.
func (s *Session) OnPath(stepID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pathSteps(s.knownFacts())[stepID]
}

// counted are the steps whose rules count toward findings and hypotheses:
// those run (or walked) that are on the path, in the order reached. s.mu
// is held.
func (s *Session) counted(facts probes.Facts) []*Step {
	on := s.pathSteps(facts)
	var out []*Step
	for _, id := range s.reached {
		if step, ok := s.cfg.Graph.Step(id); ok && on[id] {
			out = append(out, step)
		}
	}
	return out
}

// pathProbes are the probes a step on the path runs: the only ones whose
// facts this path can read. s.mu is held.
func (s *Session) pathProbes(facts probes.Facts) map[string]bool {
	out := map[string]bool{}
	for id := range s.pathSteps(facts) {
		if step, ok := s.cfg.Graph.Step(id); ok {
			out[step.Probe] = true
		}
	}
	return out
}

// readable keeps the unknown facts a probe on the path reports (or that no
// probe declares): a fact only an Envoy off the path reports cannot be
// read, and a rule waiting for it is no hypothesis of this path.
func (s *Session) readable(unknown []string, onPath map[string]bool) []string {
	var out []string
	for _, f := range unknown {
		if p := s.cfg.Graph.ProbeOf(f); p == "" || onPath[p] {
			out = append(out, f)
		}
	}
	return out
}

// producible says whether a data plane on the path can produce cause id
// (its ArisesIn), given the facts: an origin whose condition holds or, its
// facts unknown, could still hold. When none can, why says where the cause
// arises, and needsCaller that only the caller's proxy could and the
// session has no caller to read (the service side): the cause is then not
// ruled out, it waits for a caller. s.mu is held.
func (s *Session) producible(id string, facts probes.Facts) (ok, needsCaller bool, why string) {
	c, found := s.cfg.Graph.Cause(id)
	if !found || len(c.ArisesIn) == 0 {
		return true, false, ""
	}
	var where []string
	for _, o := range c.ArisesIn {
		where = append(where, o.In)
		if o.Caller && s.cfg.Target.Source == nil {
			needsCaller = true
			continue
		}
		if o.cond == nil {
			return true, false, ""
		}
		if o.cond.mayHold(facts) {
			return true, false, ""
		}
	}
	in := strings.Join(where, " or ")
	if needsCaller {
		return false, true, "it arises only in " + in + ": without a caller, no data plane of the path read produces it"
	}
	return false, false, "no data plane on the path produces it: it arises only in " + in
}

// mayHold: the condition holds on the facts, or, some of them unknown,
// could still hold once they are read.
func (c *condition) mayHold(facts probes.Facts) bool {
	if len(missingFacts(c.facts, facts)) == 0 {
		v, err := c.eval(facts)
		return err == nil && v == true
	}
	could, _, _ := c.couldHold(facts)
	return could
}

// CallerNeeded are the causes that only a caller's proxy could produce on
// this path, which a session without a caller cannot read: neither found
// nor ruled out by a rule, they wait for a caller (--from).
func (s *Session) CallerNeeded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.assess(s.knownFacts()) {
		if st.NeedsCaller {
			out = append(out, st.Cause)
		}
	}
	return out
}

// Cause states (CauseState.State).
const (
	CauseFound      = "found"       // a rule held: a finding
	CauseOpen       = "open"        // a rule could not decide: a hypothesis
	CauseNotChecked = "not-checked" // a step of the path with its rules did not run
	CauseRuledOut   = "ruled-out"   // every rule for it on the path did not hold
)

// CauseState is where the triage left one cause of its path.
type CauseState struct {
	Cause string `json:"cause"`
	State string `json:"state"`
	// Steps are, for a cause ruled out, the steps whose rules for it did
	// not hold; for one not checked, the steps that did not run; for one
	// found, the steps that found it; for one open, the steps whose rules
	// could not decide.
	Steps []string `json:"steps,omitempty"`
	// Reasons are, for a cause found, why its rules held: the record's
	// evidence in a sentence each; for one no data plane of the path
	// produces (ruled out) or that only a caller's proxy could (not
	// checked, without a caller), why.
	Reasons []string `json:"reasons,omitempty"`
	// NeedsCaller: not checked because only a caller's proxy produces it
	// on this path and the session has no caller (the service side).
	NeedsCaller bool `json:"needs_caller,omitempty"`
}

// Assess says, for every cause that a rule on the path can reach, whether
// it was found, is open, was not checked or was ruled out, and by which
// steps. A cause is in one state only: open wins over not checked, which
// wins over ruled out, so nothing is called ruled out while one of its
// rules could still fire. Causes the path cannot reach are not listed.
func (s *Session) Assess() []CauseState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.assess(s.knownFacts())
}

// assess is Assess with the facts known. s.mu is held.
func (s *Session) assess(facts probes.Facts) []CauseState {
	found := map[string][]string{}
	reasons := map[string][]string{}
	for _, f := range s.findings() {
		if f.Cause == Unexplained {
			continue
		}
		for _, ev := range f.Evidence {
			found[f.Cause] = appendOnce(found[f.Cause], ev.Step)
			if ev.Reason != "" {
				reasons[f.Cause] = appendOnce(reasons[f.Cause], ev.Reason)
			}
		}
	}
	open := map[string]bool{}
	for _, u := range s.undecided(facts) {
		open[u.Cause] = true
	}
	on := s.pathSteps(facts)
	onProbes := s.pathProbes(facts)
	reached := map[string]bool{}
	for _, id := range s.reached {
		reached[id] = true
	}
	type tally struct{ open, unrun, ruledOut []string }
	byCause := map[string]*tally{}
	var order []string
	for _, step := range s.cfg.Graph.Steps {
		if !on[step.ID] {
			continue
		}
		for i := range step.Branches {
			b := &step.Branches[i]
			if b.Cause == "" {
				continue
			}
			t := byCause[b.Cause]
			if t == nil {
				t = &tally{}
				byCause[b.Cause] = t
				order = append(order, b.Cause)
			}
			if !reached[step.ID] {
				t.unrun = appendOnce(t.unrun, step.ID)
				continue
			}
			miss := missingFacts(b.cond.facts, facts)
			if len(miss) == 0 {
				if v, err := b.cond.eval(facts); err == nil && v == false {
					t.ruledOut = appendOnce(t.ruledOut, step.ID)
				}
				continue
			}
			could, _, _ := b.cond.couldHold(facts)
			switch {
			case !could:
				t.ruledOut = appendOnce(t.ruledOut, step.ID)
			case len(s.readable(miss, onProbes)) > 0:
				t.open = appendOnce(t.open, step.ID)
			}
		}
	}
	var out []CauseState
	for _, c := range order {
		t := byCause[c]
		st := CauseState{Cause: c}
		ok, needsCaller, why := s.producible(c, facts)
		switch {
		case len(found[c]) > 0:
			st.State, st.Steps, st.Reasons = CauseFound, found[c], reasons[c]
		case !ok && !needsCaller:
			// No data plane of the path produces it, whatever its rules
			// still wait for.
			st.State, st.Reasons = CauseRuledOut, []string{why}
		case !ok && (len(t.open) > 0 || len(t.unrun) > 0):
			// Only the caller's proxy could: not checked until there is
			// one, and no hypothesis of this session.
			st.State, st.Steps, st.Reasons, st.NeedsCaller = CauseNotChecked, append(t.open, t.unrun...), []string{why}, true
		case open[c]:
			st.State, st.Steps = CauseOpen, t.open
		case len(t.unrun) > 0:
			st.State, st.Steps = CauseNotChecked, t.unrun
		case len(t.ruledOut) > 0:
			st.State, st.Steps = CauseRuledOut, t.ruledOut
		default:
			// Its rules on the path wait for facts only a data plane off
			// the path reports: it cannot happen here.
			continue
		}
		out = append(out, st)
	}
	return out
}

func appendOnce(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}
