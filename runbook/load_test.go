package runbook_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
)

// tinyCatalogue: two probes, three facts, two causes.
func tinyCatalogue() runbook.Catalogue {
	return runbook.Catalogue{
		Facts: map[string]probes.FactType{
			"a_count": probes.FactInt, "a_names": probes.FactList, "b_ok": probes.FactBool,
		},
		Probes: map[string][]string{"probe-a": {"a_count", "a_names"}, "probe-b": {"b_ok"}},
		Causes: []string{"x.one", "x.two"},
	}
}

const tinyCauses = `
causes:
  - id: x.one
    title: One
    summary: the first
    fixes: [{id: f, title: F, text: do it}]
    verify: [{probe: probe-a, expect: a_count == 0, describe: none left}]
  - id: x.two
    title: Two
    summary: the second
    fixes: [{id: f, title: F, text: do it}]
    verify: [{describe: look, command: kubectl get pods}]
`

const tinyGood = `
id: tiny
title: Tiny
start:
  question: what?
  options:
    - {id: s1, title: Symptom one, next: a}
steps:
  - id: a
    title: Step A
    probe: probe-a
    branches:
      - {when: a_count > 2, cause: x.one, confidence: high, reason: "{a_count} things"}
      - {when: '"z" in a_names', next: b}
    otherwise: b
  - id: b
    title: Step B
    probe: probe-b
    branches:
      - {when: '!b_ok', cause: x.two, confidence: low}
` + tinyCauses

func TestLoadTinyGraph(t *testing.T) {
	g, err := runbook.Load("tiny.yaml", []byte(tinyGood), tinyCatalogue())
	if err != nil {
		t.Fatal(err)
	}
	st, ok := g.Step("a")
	if !ok || len(st.Branches) != 2 {
		t.Fatalf("step a = %+v", st)
	}
	if got := st.Branches[0].Facts(); len(got) != 1 || got[0] != "a_count" {
		t.Errorf("facts read by branch 1 = %v", got)
	}
	if got := g.ProbeOf("b_ok"); got != "probe-b" {
		t.Errorf("ProbeOf(b_ok) = %q", got)
	}
}

func TestLoadProblems(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		kind runbook.ProblemKind
		want string // in the message, with its position
	}{
		{"unknown field", strings.Replace(tinyGood, "otherwise: b", "otherwize: b", 1),
			runbook.ProblemSyntax, `unknown field "otherwize"`},
		{"unknown probe", strings.Replace(tinyGood, "probe: probe-b", "probe: probe-c", 1),
			runbook.ProblemUnknownProbe, `tiny.yaml: step b: unknown probe "probe-c"`},
		{"unknown fact", strings.Replace(tinyGood, "a_count > 2", "a_cnt > 2", 1),
			runbook.ProblemUnknownFact, `tiny.yaml: step a, branch 1 (when: a_cnt > 2): unknown fact a_cnt`},
		{"type error", strings.Replace(tinyGood, "a_count > 2", `a_count == "many"`, 1),
			runbook.ProblemExpression, `step a, branch 1 (when: a_count == "many"): invalid operation`},
		{"not a boolean", strings.Replace(tinyGood, "a_count > 2", `a_count + 1`, 1),
			runbook.ProblemExpression, `step a, branch 1 (when: a_count + 1)`},
		{"unknown fact in reason", strings.Replace(tinyGood, "{a_count} things", "{a_total} things", 1),
			runbook.ProblemUnknownFact, `step a, branch 1 (when: a_count > 2), reason: unknown fact a_total`},
		{"unknown fact in verify", strings.Replace(tinyGood, "expect: a_count == 0", "expect: b_count == 0", 1),
			runbook.ProblemUnknownFact, `cause x.one, verify 1 (expect: b_count == 0): unknown fact b_count`},
		{"dangling next", strings.Replace(tinyGood, "next: b}", "next: c}", 1),
			runbook.ProblemDangling, `step a, branch 2 (when: "z" in a_names): next "c" is not a step`},
		{"dangling otherwise", strings.Replace(tinyGood, "otherwise: b", "otherwise: x.one", 1),
			runbook.ProblemDangling, `step a: otherwise "x.one" is not a step (it is a cause: use cause: instead)`},
		{"dangling start", strings.Replace(tinyGood, "next: a}", "next: z}", 1),
			runbook.ProblemDangling, `start option s1: next "z" is not a step`},
		{"unknown cause in branch", strings.Replace(tinyGood, "cause: x.two", "cause: x.three", 1),
			runbook.ProblemUnknownCause, `step b, branch 1 (when: !b_ok): unknown cause "x.three"`},
		{"cause node not in catalogue", strings.Replace(tinyGood, "id: x.two", "id: x.2", 1),
			runbook.ProblemUnknownCause, `cause x.2: cause x.2 is not in the cause catalogue`},
		{"catalogue cause without node", strings.Replace(strings.Replace(tinyGood, "id: x.two", "id: x.2", 1), "cause: x.two", "cause: x.2", 1),
			runbook.ProblemMissingCause, `tiny.yaml: catalogue cause x.two has no cause node`},
		{"unknown warning", strings.Replace(tinyGood, "probe: probe-b", "probe: probe-b\n    warnings: [nope]", 1),
			runbook.ProblemUnknownWarn, `step b: unknown warning "nope"`},
		{"confidence missing", strings.Replace(tinyGood, ", confidence: low", "", 1),
			runbook.ProblemInvalid, `step b, branch 1 (when: !b_ok): confidence must be high, medium or low`},
		{"next and cause", strings.Replace(tinyGood, "next: b}", "next: b, cause: x.one}", 1),
			runbook.ProblemInvalid, `a branch has one of next, cause or abort`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runbook.Load("tiny.yaml", []byte(c.yaml), tinyCatalogue())
			var le *runbook.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a LoadError", err)
			}
			if !le.Has(c.kind) {
				t.Errorf("problem kinds %+v, want %s", le.Problems, c.kind)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error\n%s\ndoes not say\n%s", err, c.want)
			}
		})
	}
}

func TestLoadUnreachable(t *testing.T) {
	y := strings.Replace(tinyGood, "steps:\n", `steps:
  - id: orphan
    title: Orphan
    probe: probe-a
`, 1)
	_, err := runbook.Load("tiny.yaml", []byte(y), tinyCatalogue())
	if err == nil || !strings.Contains(err.Error(), "tiny.yaml: step orphan: no start option or branch leads here") {
		t.Fatalf("err = %v", err)
	}
	// A cause no reachable branch reports is unreachable too.
	y = strings.Replace(tinyGood, "      - {when: '!b_ok', cause: x.two, confidence: low}\n", "", 1)
	_, err = runbook.Load("tiny.yaml", []byte(y), tinyCatalogue())
	var le *runbook.LoadError
	if !errors.As(err, &le) || !le.Has(runbook.ProblemUnreachable) || !strings.Contains(err.Error(), "cause x.two: no reachable branch reports this cause") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadCycleWithoutExit(t *testing.T) {
	y := `
id: loop
title: Loop
start:
  question: what?
  options:
    - {id: s1, title: Symptom, next: a}
steps:
  - {id: a, title: A, probe: probe-a, otherwise: b, branches: [{when: 'b_ok', next: a}]}
  - {id: b, title: B, probe: probe-b, otherwise: a}
  - {id: c, title: C, probe: probe-b, branches: [{when: b_ok, cause: x.one, confidence: high}, {when: b_ok, cause: x.two, confidence: high}]}
` + tinyCauses
	y = strings.Replace(y, "next: a}\nsteps", "next: a}\n    - {id: s2, title: Other, next: c}\nsteps", 1)
	_, err := runbook.Load("loop.yaml", []byte(y), tinyCatalogue())
	var le *runbook.LoadError
	if !errors.As(err, &le) || !le.Has(runbook.ProblemCycle) {
		t.Fatalf("err = %v, want a cycle", err)
	}
	if !strings.Contains(err.Error(), "loop.yaml: step a: cycle without exit: a -> b -> a") {
		t.Errorf("err = %v", err)
	}
	if n := strings.Count(err.Error(), "cycle without exit"); n != 1 {
		t.Errorf("cycle reported %d times:\n%v", n, err)
	}
	// Give the loop a way out (a step without otherwise) and it loads.
	y2 := strings.Replace(y, "{id: b, title: B, probe: probe-b, otherwise: a}", "{id: b, title: B, probe: probe-b, branches: [{when: b_ok, next: a}]}", 1)
	if _, err := runbook.Load("loop.yaml", []byte(y2), tinyCatalogue()); err != nil {
		t.Errorf("loop with an exit: %v", err)
	}
}

func TestLoadNotYAML(t *testing.T) {
	_, err := runbook.Load("bad.yaml", []byte("id: [unclosed"), tinyCatalogue())
	var le *runbook.LoadError
	if !errors.As(err, &le) || !le.Has(runbook.ProblemSyntax) || !strings.HasPrefix(err.Error(), "bad.yaml: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadConsequenceOfUnknownCause(t *testing.T) {
	y := strings.Replace(tinyGood, "  - id: x.two\n", "  - id: x.two\n    consequence_of: [x.nine]\n", 1)
	_, err := runbook.Load("tiny.yaml", []byte(y), tinyCatalogue())
	if err == nil || !strings.Contains(err.Error(), `cause x.two: consequence_of names "x.nine"`) {
		t.Fatalf("err = %v", err)
	}
}
