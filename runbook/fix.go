package runbook

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// Patch is one change to one object, as `kubectl patch` sends it, or a
// whole new object (probes/patch, which makes and applies them with the
// libraries kubectl uses). The engine only carries and shows them.
type Patch = patch.Patch

// Patch types (see probes/patch).
const (
	PatchMerge     = patch.Merge
	PatchJSON      = patch.JSON
	PatchStrategic = patch.Strategic
	PatchCreate    = patch.Create
)

// Commands are the kubectl commands of patches, in order.
func Commands(patches []Patch) []string {
	out := make([]string, len(patches))
	for i, p := range patches {
		out[i] = p.Command()
	}
	return out
}

// Simulation is what a fix's patches do to the triaged configuration: the
// patches applied in memory to the objects the triage read, and the part of
// the triage that judges configuration run again on the result (runtime
// evidence, Envoy admin, logs, istiod, is left out of both runs, so the
// comparison is configuration against configuration).
type Simulation struct {
	// Simulated: the patched configuration was judged. Why says why not.
	Simulated bool   `json:"simulated"`
	Why       string `json:"why,omitempty"`
	// Clears are the causes the triaged configuration gives and the
	// patched one does not; Remains the fix's own cause when it stays.
	Clears  []string           `json:"clears,omitempty"`
	Remains []SimulatedFinding `json:"remains,omitempty"`
	// New are the findings the patched configuration gives that the
	// triaged one does not (or at a higher confidence): what the patch
	// would break. Expected are those the patch leads to by design until a
	// controller acts (a new waypoint has no pod until istiod deploys it).
	New      []SimulatedFinding `json:"new,omitempty"`
	Expected []SimulatedFinding `json:"expected,omitempty"`
	// Checks are the cause's verification checks that the configuration
	// answers, judged on the patched configuration: for a cause that only
	// runtime evidence shows (hosts ejected), they say the patch removes
	// what made it.
	Checks []SimulatedCheck `json:"checks,omitempty"`
	// Summary says it in one line: "simulated: clears dr.subset-no-pods,
	// no new finding".
	Summary string `json:"summary"`
}

// SimulatedFinding is a finding of a simulated run.
type SimulatedFinding struct {
	Cause      string     `json:"cause"`
	Confidence Confidence `json:"confidence,omitempty"`
	// Was is, for the fix's own cause in Remains, its confidence on the
	// configuration as read.
	Was    Confidence `json:"was,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

// SimulatedCheck is a verification check judged on a simulated run.
type SimulatedCheck struct {
	Describe string `json:"describe"`
	Expect   string `json:"expect"`
	Passed   bool   `json:"passed"`
	Detail   string `json:"detail,omitempty"`
}

// Worse reports whether the simulation found a finding the patch causes
// and that is not expected of it.
func (s *Simulation) Worse() bool { return s != nil && len(s.New) > 0 }

// KeepsCause reports whether the patched configuration still gives the
// fix's own cause at the confidence it had: the patch does not fix it. A
// cause that stays at a lower confidence (what made it certain is gone) is
// not kept.
func (s *Simulation) KeepsCause() bool {
	if s == nil {
		return false
	}
	for _, r := range s.Remains {
		if r.Confidence.Rank() >= r.Was.Rank() {
			return true
		}
	}
	return false
}

// Var is a value a fix direction's text or commands use (${NAME}): known,
// or said in words with why it is not known.
type Var struct {
	Value string `json:"value,omitempty"`
	// Words name the value when it is not known ("the caller's
	// Deployment"); Why says why not ("no caller was named (--from)").
	Words string `json:"words,omitempty"`
	Why   string `json:"why,omitempty"`
}

// Known reports whether the value is known.
func (v Var) Known() bool { return v.Value != "" }

// FixProver computes a found cause's fix directions from the evidence:
// the patches of each direction's remedy against the objects the triage
// read, their simulation, and the values the texts and commands use. The
// engine asks it through this interface and stays free of Istio;
// runbook/triage provides it.
type FixProver interface {
	Prove(ctx context.Context, req ProofRequest) Proof
}

// ProofRequest is one found cause to prove the fixes of.
type ProofRequest struct {
	Target cluster.Target
	Cause  string
	// Fixes are the cause node's directions as the runbook has them.
	Fixes  []Fix
	Verify []VerifyStep
	// Facts are the session's known facts.
	Facts probes.Facts
}

// Proof is the prover's answer: one ProvedFix per direction, in the
// runbook's order, and the values for ${NAME} in texts and commands.
type Proof struct {
	Fixes []ProvedFix
	Vars  map[string]Var
}

// ProvedFix is what the prover computed for one direction.
type ProvedFix struct {
	Patches     []Patch
	Unpatchable string
	// Note says what the patches do, in the evidence's terms ("moves the
	// 10% of shop/orders http[0] sent to v2 to v1"); it ends the text.
	Note       string
	Simulation *Simulation
}

// proven is a cause's proof and the facts it was computed on.
type proven struct {
	facts string
	proof Proof
}

// ProveFixes asks the fix prover (Config.Fixes) for the directions of each
// cause found so far that it has not proved on the current facts. Auto and
// RunStep call it; without a prover it does nothing and the findings carry
// the runbook's directions with what the target says.
func (s *Session) ProveFixes(ctx context.Context) {
	if s.cfg.Fixes == nil {
		return
	}
	s.mu.Lock()
	found := s.findings()
	facts := s.knownFacts()
	key := factsKey(facts)
	var todo []ProofRequest
	for _, f := range found {
		c, ok := s.cfg.Graph.Cause(f.Cause)
		if !ok {
			continue
		}
		if p, ok := s.proven[f.Cause]; ok && p.facts == key {
			continue
		}
		todo = append(todo, ProofRequest{Target: s.cfg.Target, Cause: c.ID, Fixes: c.Fixes, Verify: c.Verify, Facts: facts})
	}
	s.mu.Unlock()
	for _, req := range todo {
		if ctx.Err() != nil {
			return
		}
		proof := s.cfg.Fixes.Prove(ctx, req)
		s.mu.Lock()
		if s.proven == nil {
			s.proven = map[string]proven{}
		}
		s.proven[req.Cause] = proven{facts: key, proof: proof}
		s.mu.Unlock()
	}
}

func factsKey(f probes.Facts) string {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Sprint(len(f))
	}
	return string(b)
}

// fixesOf is the cause's directions as a finding shows them: each with
// what the prover computed, its text and commands filled with the values
// known and, where a value is not known, said in words. A direction whose
// simulation finds that it breaks something keeps its text and loses its
// patches, and so does one whose simulation still finds its cause as
// certain as before. s.mu is held.
func (s *Session) fixesOf(c *Cause) ([]Fix, map[string]Var) {
	var proof Proof
	if p, ok := s.proven[c.ID]; ok {
		proof = p.proof
	}
	vars := targetVars(s.cfg.Target)
	for name, doc := range s.cfg.Graph.varDocs {
		if _, ok := vars[name]; !ok {
			vars[name] = Var{Words: doc, Why: remedyNotRun(s.cfg.Fixes)}
		}
	}
	for k, v := range proof.Vars {
		vars[k] = v
	}
	out := make([]Fix, 0, len(c.Fixes))
	for i, fix := range c.Fixes {
		if i < len(proof.Fixes) {
			pf := proof.Fixes[i]
			fix.Patches, fix.Simulation = pf.Patches, pf.Simulation
			if pf.Unpatchable != "" {
				fix.Unpatchable = pf.Unpatchable
			}
			if pf.Note != "" {
				fix.Text = strings.TrimSpace(fix.Text) + " " + pf.Note
			}
			if fix.Simulation.Worse() || fix.Simulation.KeepsCause() {
				fix.Unpatchable = "the change computed is not offered: " + fix.Simulation.Summary
				fix.Patches = nil
			}
		} else if fix.Remedy != "" && fix.Unpatchable == "" {
			fix.Unpatchable = "not computed: " + remedyNotRun(s.cfg.Fixes)
		}
		out = append(out, expandFix(fix, vars))
	}
	return out, vars
}

func remedyNotRun(p FixProver) string {
	if p == nil {
		return "this session has no fix prover, so no patch was computed from the evidence"
	}
	return "the prover has not run on the current evidence yet"
}

// targetVars are the values the target gives; ${SOURCE} and ${PORT} are
// said in words when the target names no caller or port.
func targetVars(t cluster.Target) map[string]Var {
	vars := map[string]Var{
		"NAMESPACE": {Value: t.Namespace},
		"SERVICE":   {Value: t.Service},
		"HOST":      {Value: t.Host()},
	}
	if t.Port != 0 {
		vars["PORT"] = Var{Value: fmt.Sprint(t.Port)}
	} else {
		vars["PORT"] = Var{Words: "the Service's port", Why: "no port was named (--port)"}
	}
	if t.Source != nil {
		vars["SOURCE"] = Var{Value: t.Source.Name}
		vars["SOURCE_NAMESPACE"] = Var{Value: t.Source.Namespace}
	} else {
		vars["SOURCE"] = Var{Words: "a calling pod", Why: "no caller was named (--from)"}
		vars["SOURCE_NAMESPACE"] = Var{Value: t.Namespace}
	}
	return vars
}

// TargetVarNames are the ${NAME} values every session fills from its target.
var TargetVarNames = []string{"NAMESPACE", "SERVICE", "HOST", "PORT", "SOURCE", "SOURCE_NAMESPACE"}

// expandFix fills a direction's text and commands. A command that needs a
// value nobody knows is not shown: the text says what it needs and why it
// is not known.
func expandFix(fix Fix, vars map[string]Var) Fix {
	var missing []string
	fix.Title = expandWords(fix.Title, vars)
	fix.Text = expandWords(fix.Text, vars)
	fix.Unpatchable = expandWords(fix.Unpatchable, vars)
	fix.Commands, missing = expandCommands(fix.Commands, vars)
	var yamls []string
	for _, y := range fix.YAML {
		if out, unknown := expandStrict(y, vars); unknown == nil {
			yamls = append(yamls, out)
		} else {
			missing = append(missing, unknown...)
		}
	}
	fix.YAML = yamls
	fix.Tradeoffs = expandAllWords(fix.Tradeoffs, vars)
	fix.Security = expandAllWords(fix.Security, vars)
	if len(missing) > 0 {
		fix.Text = strings.TrimSpace(fix.Text) + " " + notShown(missing, vars)
	}
	return fix
}

// expandVerify fills a verification step's command, or says in its
// description what the command needs when that is not known.
func expandVerify(v VerifyStep, vars map[string]Var) VerifyStep {
	v.Describe = expandWords(v.Describe, vars)
	if v.Command == "" {
		return v
	}
	out, missing := expandStrict(v.Command, vars)
	if missing == nil {
		v.Command = out
		return v
	}
	v.Command = ""
	v.Describe += " (" + strings.TrimSuffix(notShown(missing, vars), ".") + ")"
	return v
}

func expandCommands(cmds []string, vars map[string]Var) ([]string, []string) {
	if cmds == nil {
		return nil, nil
	}
	var out, missing []string
	for _, c := range cmds {
		x, unknown := expandStrict(c, vars)
		if unknown != nil {
			missing = append(missing, unknown...)
			continue
		}
		out = append(out, x)
	}
	return out, missing
}

// notShown says which commands were left out and why: "A command is not
// shown: it needs the caller's Deployment, not known: no caller was named
// (--from)."
func notShown(missing []string, vars map[string]Var) string {
	seen := map[string]bool{}
	var parts []string
	for _, name := range missing {
		if seen[name] {
			continue
		}
		seen[name] = true
		v := vars[name]
		words, why := v.Words, v.Why
		if words == "" {
			words = strings.ToLower(strings.ReplaceAll(name, "_", " "))
		}
		if why == "" {
			why = "the triage did not read it"
		}
		parts = append(parts, words+" ("+why+")")
	}
	sort.Strings(parts)
	return "A command is not shown because it needs " + strings.Join(parts, " and ") + "."
}

func expandAllWords(list []string, vars map[string]Var) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = expandWords(x, vars)
	}
	return out
}

// expandWords fills ${NAME} with its value, or its words when not known:
// prose reads either way.
func expandWords(s string, vars map[string]Var) string {
	return replaceVars(s, func(name string) (string, bool) {
		v, ok := vars[name]
		switch {
		case !ok:
			return strings.ToLower(strings.ReplaceAll(name, "_", " ")), true
		case v.Known():
			return v.Value, true
		case v.Words != "":
			return v.Words, true
		}
		return strings.ToLower(strings.ReplaceAll(name, "_", " ")), true
	})
}

// expandStrict fills ${NAME} with known values only, and lists the names
// it could not fill (nil when it filled them all).
func expandStrict(s string, vars map[string]Var) (string, []string) {
	var missing []string
	out := replaceVars(s, func(name string) (string, bool) {
		if v, ok := vars[name]; ok && v.Known() {
			return v.Value, true
		}
		missing = append(missing, name)
		return "", false
	})
	return out, missing
}

// replaceVars replaces each ${NAME} (NAME: upper-case letters, digits and
// underscores) with what value returns.
func replaceVars(s string, value func(name string) (string, bool)) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s)
			return b.String()
		}
		name := s[i+2 : i+end]
		b.WriteString(s[:i])
		if validVarName(name) {
			v, _ := value(name)
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+end+1])
		}
		s = s[i+end+1:]
	}
}

func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// varNames lists the ${NAME} a text uses.
func varNames(s string) []string {
	var out []string
	replaceVars(s, func(name string) (string, bool) {
		out = append(out, name)
		return "", true
	})
	return out
}

// Holds judges the check on facts: passed, and whether the facts it reads
// are known at all.
func (v VerifyStep) Holds(facts probes.Facts) (passed, known bool) {
	if v.cond == nil {
		return false, false
	}
	if len(missingFacts(v.cond.facts, facts)) > 0 {
		return false, false
	}
	out, err := v.cond.eval(facts)
	if err != nil {
		return false, false
	}
	b, _ := out.(bool)
	return b, true
}

// SimulatedRun is what a run of the configuration part of the triage found.
type SimulatedRun struct {
	Findings []Finding
	Facts    probes.Facts
}

// Simulate compares the configuration-only run of the triaged world
// (before) with that of the patched world (after) for a fix of cause:
// what it clears, what stays, what it breaks, and the cause's
// verification checks that the configuration answers. expected are causes
// the patch leads to by design, reported apart from what it breaks.
func Simulate(cause string, verify []VerifyStep, before, after SimulatedRun, expected map[string]string) *Simulation {
	sim := &Simulation{Simulated: true}
	had := map[string]Finding{}
	for _, f := range before.Findings {
		had[findingKey(f)] = f
	}
	now := map[string]Finding{}
	for _, f := range after.Findings {
		now[findingKey(f)] = f
	}
	for _, f := range before.Findings {
		if _, ok := now[findingKey(f)]; !ok && f.Cause != Unexplained {
			sim.Clears = append(sim.Clears, f.Cause)
		}
	}
	for _, f := range after.Findings {
		sf := SimulatedFinding{Cause: f.Cause, Confidence: f.Confidence, Reason: findingReason(f)}
		if f.Cause == Unexplained {
			sf.Cause = Unexplained + " (" + f.Step + ")"
		}
		old, existed := had[findingKey(f)]
		switch {
		case f.Cause == cause && existed:
			sf.Was = old.Confidence
			sim.Remains = append(sim.Remains, sf)
		case existed && f.Confidence.Rank() <= old.Confidence.Rank():
		case expected[f.Cause] != "":
			sf.Reason = expected[f.Cause]
			sim.Expected = append(sim.Expected, sf)
		default:
			sim.New = append(sim.New, sf)
		}
	}
	_, causeBefore := had[cause+"\x00"]
	for _, v := range verify {
		if v.Probe == "" {
			continue
		}
		passed, known := v.Holds(after.Facts)
		if !known {
			continue
		}
		sim.Checks = append(sim.Checks, SimulatedCheck{Describe: v.Describe, Expect: v.Expect, Passed: passed,
			Detail: factValues(v.cond.facts, after.Facts)})
	}
	sim.Summary = simulationSummary(cause, causeBefore, sim, had)
	return sim
}

func findingKey(f Finding) string { return f.Cause + "\x00" + f.Step }

func findingReason(f Finding) string {
	for _, e := range f.Evidence {
		if e.Reason != "" {
			return e.Reason
		}
	}
	return f.Summary
}

func simulationSummary(cause string, causeBefore bool, sim *Simulation, had map[string]Finding) string {
	var parts []string
	switch {
	case len(sim.Remains) > 0:
		r := sim.Remains[0]
		old := had[cause+"\x00"]
		if r.Confidence.Rank() < old.Confidence.Rank() {
			parts = append(parts, fmt.Sprintf("lowers %s from %s to %s confidence (%s)", cause, old.Confidence, r.Confidence, r.Reason))
		} else {
			parts = append(parts, fmt.Sprintf("does not clear %s (%s)", cause, r.Reason))
		}
	case causeBefore || contains(sim.Clears, cause):
		parts = append(parts, "clears "+strings.Join(sim.Clears, ", "))
	default:
		line := cause + " rests on runtime evidence the simulation leaves out"
		var passed, failed []string
		for _, c := range sim.Checks {
			if c.Passed {
				passed = append(passed, "`"+c.Expect+"`")
			} else {
				failed = append(failed, "`"+c.Expect+"` ("+c.Detail+")")
			}
		}
		if len(passed) > 0 {
			line += "; on the patched configuration " + strings.Join(passed, ", ") + " holds"
		}
		if len(failed) > 0 {
			line += "; still failing: " + strings.Join(failed, ", ")
		}
		if len(passed) == 0 && len(failed) == 0 {
			line += ", and no check of its verification reads the configuration"
		}
		parts = append(parts, line)
		if others := without(sim.Clears, cause); len(others) > 0 {
			parts = append(parts, "clears "+strings.Join(others, ", "))
		}
	}
	switch {
	case len(sim.New) == 0:
		parts = append(parts, "no new finding")
	default:
		var news []string
		for _, n := range sim.New {
			news = append(news, fmt.Sprintf("%s (%s: %s)", n.Cause, n.Confidence, n.Reason))
		}
		parts = append(parts, "new finding "+strings.Join(news, "; "))
	}
	for _, e := range sim.Expected {
		parts = append(parts, fmt.Sprintf("then %s until %s", e.Cause, e.Reason))
	}
	return "simulated: " + strings.Join(parts, ", ")
}

func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// NotSimulated is the simulation of patches that cannot be applied to the
// triaged world: why says why ("patches Deployment shop/orders, which the
// triage did not read").
func NotSimulated(why string) *Simulation {
	return &Simulation{Why: why, Summary: "cannot be simulated: " + why}
}

// FixesOf are a cause's directions as the session shows them, found or
// not: with what the prover computed for it, and the values known, the
// rest said in words (the TUI's cause screen, before the cause is found).
func (s *Session) FixesOf(causeID string) []Fix {
	c, ok := s.cfg.Graph.Cause(causeID)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fixes, _ := s.fixesOf(c)
	return fixes
}
