package runbook

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/probes"
)

// Catalogue is what a runbook is validated against, handed in by the caller
// so the engine stays generic: the facts with their types, the probes with
// the facts each declares, and the cause IDs every runbook must cover.
type Catalogue struct {
	Facts map[string]probes.FactType
	// Probes maps a probe ID to the facts it declares.
	Probes map[string][]string
	// Causes are the stable cause IDs; every one needs a cause node and no
	// other cause node is allowed. Nil skips both checks.
	Causes []string
	// Remedies are the IDs a fix's `remedy:` may name (the registry that
	// computes patches from the evidence); with them, every fix names a
	// remedy or says why it is unpatchable. Nil skips both checks.
	Remedies []string
	// Vars are the ${NAME} values the fix prover fills besides the
	// target's (TargetVarNames), with what each is; a fix or verification
	// naming another is rejected. Nil skips the check.
	Vars map[string]string
}

// WithRemedies is c with the remedy registry's IDs and the values the fix
// prover fills (name: what it is), so that Load validates fixes against
// them.
func (c Catalogue) WithRemedies(ids []string, vars map[string]string) Catalogue {
	c.Remedies = append([]string{}, ids...)
	c.Vars = map[string]string{}
	for k, v := range vars {
		c.Vars[k] = v
	}
	return c
}

// CatalogueOf builds the catalogue from probe metas and the cause IDs.
func CatalogueOf(ps []probes.Probe, causes []string) Catalogue {
	c := Catalogue{Facts: map[string]probes.FactType{}, Probes: map[string][]string{}, Causes: causes}
	for _, p := range ps {
		m := p.Meta()
		var names []string
		for _, f := range m.Facts {
			c.Facts[f.Name] = f.Type
			names = append(names, f.Name)
		}
		c.Probes[m.ID] = names
	}
	return c
}

// ProblemKind classifies a load problem, so tests and tools can tell them apart.
type ProblemKind string

const (
	ProblemSyntax        ProblemKind = "syntax"          // not YAML, or a field the schema does not have
	ProblemInvalid       ProblemKind = "invalid"         // a required field missing, a duplicate ID, a bad value
	ProblemUnknownProbe  ProblemKind = "unknown-probe"   // a step or verification names no known probe
	ProblemUnknownFact   ProblemKind = "unknown-fact"    // an expression reads a fact no probe declares
	ProblemExpression    ProblemKind = "expression"      // an expression does not compile or type-check
	ProblemDangling      ProblemKind = "dangling"        // next/otherwise/option names no step
	ProblemUnknownCause  ProblemKind = "unknown-cause"   // a branch names no cause node, or a node is not in the catalogue
	ProblemMissingCause  ProblemKind = "missing-cause"   // a catalogue cause has no node
	ProblemUnknownWarn   ProblemKind = "unknown-warning" // a warning ID not in the runbook's catalogue
	ProblemUnreachable   ProblemKind = "unreachable"     // a step or cause no path leads to
	ProblemCycle         ProblemKind = "cycle"           // steps that loop with no way out
	ProblemUnknownRemedy ProblemKind = "unknown-remedy"  // a fix names no remedy of the registry
	ProblemUnknownVar    ProblemKind = "unknown-var"     // a ${NAME} nobody fills
)

// Problem is one thing wrong with a runbook, with where it is.
type Problem struct {
	Kind  ProblemKind
	Where string // "step envoy-clusters, branch 2 (when: ...)"
	Msg   string
}

// LoadError lists every problem found in one runbook file.
type LoadError struct {
	File     string
	Problems []Problem
}

func (e *LoadError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		if p.Where == "" {
			lines[i] = fmt.Sprintf("%s: %s", e.File, p.Msg)
		} else {
			lines[i] = fmt.Sprintf("%s: %s: %s", e.File, p.Where, p.Msg)
		}
	}
	return strings.Join(lines, "\n")
}

// Has reports whether a problem of kind was found.
func (e *LoadError) Has(kind ProblemKind) bool {
	for _, p := range e.Problems {
		if p.Kind == kind {
			return true
		}
	}
	return false
}

// LoadFS loads and validates the runbook at name in fsys.
func LoadFS(fsys fs.FS, name string, cat Catalogue) (*Graph, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	return Load(path.Base(name), data, cat)
}

// Load parses a runbook and validates it against cat; the error is a
// *LoadError naming every problem with its position.
func Load(file string, data []byte, cat Catalogue) (*Graph, error) {
	g := &Graph{}
	if err := yaml.UnmarshalStrict(data, g); err != nil {
		return nil, &LoadError{File: file, Problems: []Problem{{Kind: ProblemSyntax, Msg: oneLine(err.Error())}}}
	}
	g.file = file
	v := &validator{g: g, cat: cat}
	v.index()
	v.checkStart()
	v.checkSteps()
	v.checkCauses()
	v.checkReachable()
	v.checkCycles()
	if len(v.problems) > 0 {
		return nil, &LoadError{File: file, Problems: v.problems}
	}
	return g, nil
}

type validator struct {
	g        *Graph
	cat      Catalogue
	problems []Problem
}

func (v *validator) add(kind ProblemKind, where, format string, args ...any) {
	v.problems = append(v.problems, Problem{Kind: kind, Where: where, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) index() {
	g := v.g
	if g.ID == "" {
		v.add(ProblemInvalid, "", "runbook has no id")
	}
	if g.Title == "" {
		v.add(ProblemInvalid, "", "runbook has no title")
	}
	g.facts = v.cat.Facts
	g.varDocs = v.cat.Vars
	g.factProbe = map[string]string{}
	for probe, facts := range v.cat.Probes {
		for _, f := range facts {
			g.factProbe[f] = probe
		}
	}
	g.steps = map[string]*Step{}
	for i, s := range g.Steps {
		where := fmt.Sprintf("step %d", i+1)
		switch {
		case s.ID == "":
			v.add(ProblemInvalid, where, "step has no id")
		case g.steps[s.ID] != nil:
			v.add(ProblemInvalid, "step "+s.ID, "step id declared twice")
		default:
			g.steps[s.ID] = s
		}
	}
	g.causes = map[string]*Cause{}
	for i, c := range g.Causes {
		where := fmt.Sprintf("cause %d", i+1)
		switch {
		case c.ID == "":
			v.add(ProblemInvalid, where, "cause has no id")
		case g.causes[c.ID] != nil:
			v.add(ProblemInvalid, "cause "+c.ID, "cause id declared twice")
		case g.steps[c.ID] != nil:
			v.add(ProblemInvalid, "cause "+c.ID, "id is also a step id")
		default:
			g.causes[c.ID] = c
		}
	}
	g.warnings = map[string]Warning{}
	for i, w := range g.Warnings {
		where := fmt.Sprintf("warning %d", i+1)
		switch {
		case w.ID == "":
			v.add(ProblemInvalid, where, "warning has no id")
		case strings.TrimSpace(w.Text) == "":
			v.add(ProblemInvalid, "warning "+w.ID, "warning has no text")
			g.warnings[w.ID] = w
		case g.warnings[w.ID].ID != "":
			v.add(ProblemInvalid, "warning "+w.ID, "warning id declared twice")
		default:
			g.warnings[w.ID] = w
		}
	}
}

func (v *validator) checkStart() {
	g := v.g
	if len(g.Start.Options) == 0 {
		v.add(ProblemInvalid, "start", "start has no options")
	}
	seen := map[string]bool{}
	for i, o := range g.Start.Options {
		where := fmt.Sprintf("start option %d", i+1)
		if o.ID != "" {
			where = "start option " + o.ID
		}
		switch {
		case o.ID == "":
			v.add(ProblemInvalid, where, "option has no id")
		case seen[o.ID]:
			v.add(ProblemInvalid, where, "option id declared twice")
		}
		seen[o.ID] = true
		if o.Title == "" {
			v.add(ProblemInvalid, where, "option has no title")
		}
		v.checkStepRef(where, "next", o.Next, true)
	}
}

func (v *validator) checkStepRef(where, field, target string, required bool) {
	if target == "" {
		if required {
			v.add(ProblemDangling, where, "%s is empty", field)
		}
		return
	}
	if _, ok := v.g.steps[target]; !ok {
		hint := ""
		if _, isCause := v.g.causes[target]; isCause {
			hint = " (it is a cause: use cause: instead)"
		}
		v.add(ProblemDangling, where, "%s %q is not a step%s", field, target, hint)
	}
}

func (v *validator) checkWarnings(where string, ids []string) {
	for _, id := range ids {
		if _, ok := v.g.warnings[id]; !ok {
			v.add(ProblemUnknownWarn, where, "unknown warning %q", id)
		}
	}
}

func (v *validator) checkProbe(where, id string) bool {
	if id == "" {
		v.add(ProblemUnknownProbe, where, "no probe")
		return false
	}
	if _, ok := v.cat.Probes[id]; !ok {
		v.add(ProblemUnknownProbe, where, "unknown probe %q (known: %s)", id, strings.Join(sortedKeys(v.cat.Probes), ", "))
		return false
	}
	return true
}

// compile reports a compile error as unknown-fact when expr names an
// unknown identifier, otherwise as an expression problem.
func (v *validator) compile(where, src string) *condition {
	c, err := compileCondition(src, v.cat.Facts, true)
	if err != nil {
		v.exprProblem(where, err)
		return nil
	}
	return c
}

func (v *validator) exprProblem(where string, err error) {
	msg := err.Error()
	if strings.Contains(msg, "unknown name ") {
		name := msg[strings.Index(msg, "unknown name ")+len("unknown name "):]
		if i := strings.IndexAny(name, " ("); i >= 0 {
			name = name[:i]
		}
		v.add(ProblemUnknownFact, where, "unknown fact %s (%s)", name, msg)
		return
	}
	v.add(ProblemExpression, where, "%s", msg)
}

func (v *validator) checkSteps() {
	for _, s := range v.g.Steps {
		if s.ID == "" {
			continue
		}
		where := "step " + s.ID
		if s.Title == "" {
			v.add(ProblemInvalid, where, "step has no title")
		}
		v.checkProbe(where, s.Probe)
		v.checkWarnings(where, s.Warnings)
		v.checkStepRef(where, "otherwise", s.Otherwise, false)
		for i := range s.Branches {
			b := &s.Branches[i]
			bw := fmt.Sprintf("%s, branch %d (when: %s)", where, i+1, b.When)
			targets := 0
			for _, set := range []bool{b.Next != "", b.Cause != "", b.Abort} {
				if set {
					targets++
				}
			}
			switch {
			case targets > 1:
				v.add(ProblemInvalid, bw, "a branch has one of next, cause or abort")
			case targets == 0:
				v.add(ProblemInvalid, bw, "a branch needs next, cause or abort")
			case b.Abort:
				if strings.TrimSpace(b.Reason) == "" {
					v.add(ProblemInvalid, bw, "an abort branch needs a reason")
				}
			case b.Next != "":
				v.checkStepRef(bw, "next", b.Next, true)
				if b.Confidence != "" {
					v.add(ProblemInvalid, bw, "confidence belongs to cause branches")
				}
			default:
				if _, ok := v.g.causes[b.Cause]; !ok {
					v.add(ProblemUnknownCause, bw, "unknown cause %q", b.Cause)
				}
				if b.Confidence.Rank() == 0 {
					v.add(ProblemInvalid, bw, "confidence must be high, medium or low, not %q", b.Confidence)
				}
			}
			b.cond = v.compile(bw, b.When)
			parts, err := compileReason(b.Reason, v.cat.Facts)
			if err != nil {
				v.exprProblem(bw+", reason", err)
			}
			b.reason = parts
			if b.summary, err = compileReason(b.Summary, v.cat.Facts); err != nil {
				v.exprProblem(bw+", summary", err)
			}
			if (len(b.Confirm) > 0 || len(b.Weaken) > 0 || b.Summary != "") && b.Cause == "" {
				v.add(ProblemInvalid, bw, "summary, confirm and weaken belong to cause branches")
			}
			for j := range b.Confirm {
				c := &b.Confirm[j]
				cw := fmt.Sprintf("%s, confirm %d", bw, j+1)
				if c.Describe == "" {
					v.add(ProblemInvalid, cw, "confirm needs describe")
				}
				c.cond = v.compile(cw, c.When)
			}
			for j := range b.Weaken {
				w := &b.Weaken[j]
				ww := fmt.Sprintf("%s, weaken %d", bw, j+1)
				if w.Confidence.Rank() == 0 || w.Confidence.Rank() >= b.Confidence.Rank() {
					v.add(ProblemInvalid, ww, "weaken needs a confidence below the branch's %s, not %q", b.Confidence, w.Confidence)
				}
				w.cond = v.compile(ww, w.When)
				if w.reason, err = compileReason(w.Reason, v.cat.Facts); err != nil {
					v.exprProblem(ww+", reason", err)
				}
			}
		}
		for _, id := range s.ExplainedBy {
			if _, ok := v.g.causes[id]; !ok && id != ExplainedByAny {
				v.add(ProblemUnknownCause, where, "explained_by names unknown cause %q", id)
			}
		}
	}
}

func (v *validator) checkCauses() {
	inCatalogue := map[string]bool{}
	for _, id := range v.cat.Causes {
		inCatalogue[id] = true
		if _, ok := v.g.causes[id]; !ok {
			v.add(ProblemMissingCause, "", "catalogue cause %s has no cause node", id)
		}
	}
	for _, c := range v.g.Causes {
		if c.ID == "" {
			continue
		}
		where := "cause " + c.ID
		if v.cat.Causes != nil && !inCatalogue[c.ID] {
			v.add(ProblemUnknownCause, where, "cause %s is not in the cause catalogue", c.ID)
		}
		if c.Title == "" || strings.TrimSpace(c.Summary) == "" {
			v.add(ProblemInvalid, where, "cause needs a title and a summary")
		}
		if c.Severity != "" && c.Severity != SeverityCause && c.Severity != SeverityWarning {
			v.add(ProblemInvalid, where, "severity must be %s or %s, not %q", SeverityCause, SeverityWarning, c.Severity)
		}
		v.checkWarnings(where, c.Warnings)
		for _, other := range c.ConsequenceOf {
			if _, ok := v.g.causes[other]; !ok || other == c.ID {
				v.add(ProblemUnknownCause, where, "consequence_of names %q, not another cause", other)
			}
		}
		for i := range c.ArisesIn {
			o := &c.ArisesIn[i]
			ow := fmt.Sprintf("%s, arises_in %d", where, i+1)
			if o.In == "" || o.When == "" {
				v.add(ProblemInvalid, ow, "an origin needs in (the data plane, in words) and when")
				continue
			}
			o.cond = v.compile(ow+" (when: "+o.When+")", o.When)
		}
		if len(c.Fixes) == 0 {
			v.add(ProblemInvalid, where, "cause has no fix direction")
		}
		fixIDs := map[string]bool{}
		for i, f := range c.Fixes {
			fw := fmt.Sprintf("%s, fix %d", where, i+1)
			switch {
			case f.ID == "":
				v.add(ProblemInvalid, fw, "fix has no id")
			case fixIDs[f.ID]:
				v.add(ProblemInvalid, fw, "fix id %q declared twice", f.ID)
			}
			fixIDs[f.ID] = true
			if f.Title == "" || strings.TrimSpace(f.Text) == "" {
				v.add(ProblemInvalid, fw, "fix needs a title and text")
			}
			v.checkFixRemedy(fw, f)
			for _, text := range fixTexts(f) {
				v.checkVars(fw, text)
			}
		}
		if len(c.Verify) == 0 {
			v.add(ProblemInvalid, where, "cause has no verification step")
		}
		for i := range c.Verify {
			vs := &c.Verify[i]
			vw := fmt.Sprintf("%s, verify %d", where, i+1)
			if vs.Describe == "" {
				v.add(ProblemInvalid, vw, "verification needs describe")
			}
			v.checkVars(vw, vs.Describe)
			v.checkVars(vw, vs.Command)
			if vs.Probe == "" {
				if vs.Command == "" {
					v.add(ProblemInvalid, vw, "verification needs a probe with expect, or a manual command")
				}
				if vs.Expect != "" {
					v.add(ProblemInvalid, vw, "expect without a probe")
				}
				continue
			}
			if v.checkProbe(vw, vs.Probe) {
				if vs.Expect == "" {
					v.add(ProblemInvalid, vw, "verification probe %s needs expect", vs.Probe)
					continue
				}
				vs.cond = v.compile(vw+" (expect: "+vs.Expect+")", vs.Expect)
			}
		}
	}
}

// checkFixRemedy: a fix's patches and simulation are computed, never
// written; with a remedy registry, a fix names one of its remedies or
// says why its remedy is no change to an object the triage reads.
func (v *validator) checkFixRemedy(where string, f Fix) {
	if len(f.Patches) > 0 || f.Simulation != nil {
		v.add(ProblemInvalid, where, "patches and simulation are computed from the evidence: name a remedy instead")
	}
	if f.Remedy != "" && f.Unpatchable != "" {
		v.add(ProblemInvalid, where, "a fix has a remedy or is unpatchable, not both")
	}
	if v.cat.Remedies == nil {
		return
	}
	switch {
	case f.Remedy != "" && !contains(v.cat.Remedies, f.Remedy):
		known := append([]string(nil), v.cat.Remedies...)
		sort.Strings(known)
		v.add(ProblemUnknownRemedy, where, "unknown remedy %q (known: %s)", f.Remedy, strings.Join(known, ", "))
	case f.Remedy == "" && strings.TrimSpace(f.Unpatchable) == "":
		v.add(ProblemInvalid, where, "a fix names a remedy, or says in unpatchable why it changes no object the triage reads")
	}
}

// checkVars: every ${NAME} is the target's or one the fix prover fills.
func (v *validator) checkVars(where, text string) {
	if v.cat.Vars == nil {
		return
	}
	for _, name := range varNames(text) {
		if _, ok := v.cat.Vars[name]; !ok && !contains(TargetVarNames, name) {
			v.add(ProblemUnknownVar, where, "${%s} is filled by nobody (the target's: %s; the prover's: %s)",
				name, strings.Join(TargetVarNames, ", "), strings.Join(sortedKeys(v.cat.Vars), ", "))
		}
	}
}

// fixTexts are the texts of a fix that may use ${NAME}.
func fixTexts(f Fix) []string {
	out := []string{f.Title, f.Text, f.Unpatchable}
	out = append(out, f.Commands...)
	out = append(out, f.YAML...)
	out = append(out, f.Tradeoffs...)
	return append(out, f.Security...)
}

// successors are the steps a step can move to.
func successors(s *Step) []string {
	var out []string
	for _, b := range s.Branches {
		if b.Next != "" {
			out = append(out, b.Next)
		}
	}
	if s.Otherwise != "" {
		out = append(out, s.Otherwise)
	}
	return out
}

func (v *validator) checkReachable() {
	g := v.g
	seen := map[string]bool{}
	var stack []string
	for _, o := range g.Start.Options {
		stack = append(stack, o.Next)
	}
	causes := map[string]bool{}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		s, ok := g.steps[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		for _, b := range s.Branches {
			if b.Cause != "" {
				causes[b.Cause] = true
			}
		}
		stack = append(stack, successors(s)...)
	}
	for _, s := range g.Steps {
		if s.ID != "" && !seen[s.ID] {
			v.add(ProblemUnreachable, "step "+s.ID, "no start option or branch leads here")
		}
	}
	for _, c := range g.Causes {
		if c.ID != "" && !causes[c.ID] {
			v.add(ProblemUnreachable, "cause "+c.ID, "no reachable branch reports this cause")
		}
	}
}

// checkCycles finds steps from which no path leaves the graph: a step exits
// when it reports a cause or has no otherwise (the walk may end there).
func (v *validator) checkCycles() {
	g := v.g
	exits := map[string]bool{}
	for _, s := range g.Steps {
		if s.ID == "" {
			continue
		}
		if s.Otherwise == "" {
			exits[s.ID] = true
		}
		for _, b := range s.Branches {
			if b.Cause != "" || b.Abort {
				exits[s.ID] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, s := range g.Steps {
			if s.ID == "" || exits[s.ID] {
				continue
			}
			for _, n := range successors(s) {
				if exits[n] {
					exits[s.ID] = true
					changed = true
					break
				}
			}
		}
	}
	reported := map[string]bool{}
	for _, s := range g.Steps {
		if s.ID == "" || exits[s.ID] || reported[s.ID] {
			continue
		}
		// Follow successors inside the trapped set until one repeats.
		pos := map[string]int{}
		var path []string
		for id := s.ID; ; {
			if i, ok := pos[id]; ok {
				loop := append(path[i:], id)
				for _, l := range loop {
					reported[l] = true
				}
				v.add(ProblemCycle, "step "+loop[0], "cycle without exit: %s", strings.Join(loop, " -> "))
				break
			}
			if reported[id] {
				break // leads into a loop already reported
			}
			// Prefer a step not yet on the path, so the reported loop names
			// every step it traps rather than the shortest self-loop.
			next, closing := "", ""
			for _, n := range successors(g.steps[id]) {
				if _, ok := g.steps[n]; !ok || exits[n] {
					continue
				}
				if _, onPath := pos[n]; !onPath && n != id {
					next = n
					break
				}
				if closing == "" {
					closing = n
				}
			}
			if next == "" {
				next = closing
			}
			pos[id] = len(path)
			path = append(path, id)
			reported[id] = true
			if next == "" {
				break
			}
			id = next
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
