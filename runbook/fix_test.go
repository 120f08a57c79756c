package runbook_test

import (
	"context"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

// tinyFixes is tinyGood with fixes that name remedies and use values the
// prover fills.
func tinyFixes(fixOne string) string {
	out := strings.Replace(tinyGood, "    fixes: [{id: f, title: F, text: do it}]\n    verify: [{probe: probe-a",
		fixOne+"\n    verify: [{probe: probe-a", 1)
	return strings.Replace(out, "    fixes: [{id: f, title: F, text: do it}]\n    verify: [{describe: look",
		"    fixes: [{id: f, title: F, text: do it, unpatchable: none to make}]\n    verify: [{describe: look", 1)
}

const fixWithRemedy = `    fixes:
      - {id: patch-it, title: Patch it, remedy: shift, text: "shift ${WORKLOAD}", commands: ["kubectl rollout restart ${WORKLOAD} -n ${NAMESPACE}", "kubectl get pods -n ${NAMESPACE}"]}
      - {id: by-hand, title: By hand, unpatchable: "the app's state", text: "read ${SOURCE}"}`

func remedyCatalogue() runbook.Catalogue {
	return tinyCatalogue().WithRemedies([]string{"shift"}, map[string]string{"WORKLOAD": "the Service's workload"})
}

func TestLoadChecksRemediesAndValues(t *testing.T) {
	if _, err := runbook.Load("tiny.yaml", []byte(tinyFixes(fixWithRemedy)), remedyCatalogue()); err != nil {
		t.Fatalf("a runbook whose fixes name remedies and known values: %v", err)
	}
	cases := []struct {
		name, fixes string
		kind        runbook.ProblemKind
	}{
		{"unknown remedy", `    fixes: [{id: f, title: F, text: t, remedy: nope}]`, runbook.ProblemUnknownRemedy},
		{"neither remedy nor unpatchable", `    fixes: [{id: f, title: F, text: t}]`, runbook.ProblemInvalid},
		{"both", `    fixes: [{id: f, title: F, text: t, remedy: shift, unpatchable: x}]`, runbook.ProblemInvalid},
		{"a value nobody fills", `    fixes: [{id: f, title: F, text: t, remedy: shift, commands: ["kubectl get ${GATEWAY_NAME}"]}]`, runbook.ProblemUnknownVar},
		{"patches written in the runbook", `    fixes: [{id: f, title: F, text: t, remedy: shift, patches: [{kind: Service, name: x, type: merge, patch: {}}]}]`, runbook.ProblemInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runbook.Load("tiny.yaml", []byte(tinyFixes(c.fixes)), remedyCatalogue())
			var le *runbook.LoadError
			if err == nil || !asLoadError(err, &le) || !le.Has(c.kind) {
				t.Fatalf("want a %s problem, got %v", c.kind, err)
			}
		})
	}
}

func asLoadError(err error, le **runbook.LoadError) bool {
	l, ok := err.(*runbook.LoadError)
	*le = l
	return ok
}

// fakeProver answers with fixed patches and values, counting calls.
type fakeProver struct {
	calls int
	vars  map[string]runbook.Var
	sim   *runbook.Simulation
}

func (p *fakeProver) Prove(ctx context.Context, req runbook.ProofRequest) runbook.Proof {
	p.calls++
	proof := runbook.Proof{Vars: p.vars}
	for _, f := range req.Fixes {
		pf := runbook.ProvedFix{}
		if f.Remedy != "" {
			pf.Patches = []runbook.Patch{{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "web", Type: runbook.PatchMerge, Patch: []byte(`{"spec":{}}`)}}
			pf.Simulation = p.sim
			pf.Note = "The patch does it."
		}
		proof.Fixes = append(proof.Fixes, pf)
	}
	return proof
}

func tinySession(t *testing.T, prover runbook.FixProver, target cluster.Target) *runbook.Session {
	t.Helper()
	g, err := runbook.Load("tiny.yaml", []byte(tinyFixes(fixWithRemedy)), remedyCatalogue())
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, p probes.Probe, c cluster.Cluster, tg cluster.Target) probes.Result {
		if p.Meta().ID == "probe-a" {
			return probes.Result{Status: probes.StatusFail, Facts: probes.Facts{"a_count": 3, "a_names": []string{}}}
		}
		return probes.Result{Status: probes.StatusPass, Facts: probes.Facts{"b_ok": true}}
	}
	s, err := runbook.NewSession(runbook.Config{Graph: g, Target: target, Mode: runbook.ModeAuto, Run: run, Fixes: prover,
		Probes: map[string]probes.Probe{"probe-a": stubProbe("probe-a"), "probe-b": stubProbe("probe-b")}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type stubProbe string

func (p stubProbe) Meta() probes.Meta { return probes.Meta{ID: string(p)} }
func (p stubProbe) Run(context.Context, cluster.Cluster, cluster.Target) probes.Result {
	return probes.Result{}
}

func TestFindingsCarryTheProversPatchesAndValues(t *testing.T) {
	prover := &fakeProver{vars: map[string]runbook.Var{"WORKLOAD": {Value: "deployment/web"}},
		sim: &runbook.Simulation{Simulated: true, Clears: []string{"x.one"}, Summary: "simulated: clears x.one, no new finding"}}
	s := tinySession(t, prover, cluster.Target{Namespace: "shop", Service: "web"})
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || findings[0].Cause != "x.one" {
		t.Fatalf("findings %+v", findings)
	}
	fix := findings[0].Fixes[0]
	if len(fix.Patches) != 1 || fix.Simulation == nil || !strings.HasSuffix(fix.Text, "The patch does it.") {
		t.Fatalf("the prover's answer is not on the finding: %+v", fix)
	}
	if got := fix.Commands; len(got) != 2 || got[0] != "kubectl rollout restart deployment/web -n shop" {
		t.Errorf("commands = %q", got)
	}
	// No caller was named: the direction says so in words.
	if by := findings[0].Fixes[1]; by.Text != "read a calling pod" {
		t.Errorf("unknown ${SOURCE} in prose = %q", by.Text)
	}
	// Proven once on the same facts, however often findings are read.
	s.Findings()
	s.ProveFixes(context.Background())
	if prover.calls != 1 {
		t.Errorf("prover called %d times on unchanged facts", prover.calls)
	}
}

func TestACommandThatNeedsAnUnknownValueIsNotShown(t *testing.T) {
	prover := &fakeProver{vars: map[string]runbook.Var{"WORKLOAD": {Words: "the Service's workload", Why: "its pods have no controller"}}}
	s := tinySession(t, prover, cluster.Target{Namespace: "shop", Service: "web"})
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fix := findings[0].Fixes[0]
	if len(fix.Commands) != 1 || fix.Commands[0] != "kubectl get pods -n shop" {
		t.Errorf("commands = %q", fix.Commands)
	}
	if !strings.Contains(fix.Text, "shift the Service's workload") || !strings.Contains(fix.Text, "needs the Service's workload (its pods have no controller)") {
		t.Errorf("text = %q", fix.Text)
	}
}

func TestAPatchThatMakesThingsWorseIsWithheld(t *testing.T) {
	worse := &runbook.Simulation{Simulated: true, New: []runbook.SimulatedFinding{{Cause: "x.two", Confidence: runbook.ConfidenceHigh}},
		Summary: "simulated: clears x.one, new finding x.two (high: it breaks)"}
	s := tinySession(t, &fakeProver{sim: worse}, cluster.Target{Namespace: "shop", Service: "web"})
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fix := findings[0].Fixes[0]
	if len(fix.Patches) != 0 || !strings.Contains(fix.Unpatchable, "new finding x.two") {
		t.Errorf("a patch the simulation found harmful is offered: %+v", fix)
	}
}

// A patch after which the cause is still found, as certain as before, is
// no fix: it is not offered, and the direction says what the simulation
// found. One that only lowers the cause's confidence is offered.
func TestAPatchThatDoesNotClearItsCauseIsWithheld(t *testing.T) {
	f := func(conf runbook.Confidence) runbook.Finding {
		return runbook.Finding{Cause: "x.one", Step: "s", Confidence: conf, Evidence: []runbook.Evidence{{Reason: "x.one because"}}}
	}
	before := runbook.SimulatedRun{Findings: []runbook.Finding{f(runbook.ConfidenceHigh)}}
	for _, c := range []struct {
		after   runbook.Confidence
		offered bool
	}{{runbook.ConfidenceHigh, false}, {runbook.ConfidenceLow, true}} {
		sim := runbook.Simulate("x.one", nil, before, runbook.SimulatedRun{Findings: []runbook.Finding{f(c.after)}}, nil)
		s := tinySession(t, &fakeProver{sim: sim}, cluster.Target{Namespace: "shop", Service: "web"})
		findings, err := s.Auto(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		fix := findings[0].Fixes[0]
		if offered := len(fix.Patches) > 0; offered != c.offered {
			t.Errorf("cause still %s after the patch: offered %v, want %v (%+v)", c.after, offered, c.offered, fix)
		}
		if !c.offered && !strings.Contains(fix.Unpatchable, "not offered: simulated: does not clear x.one") {
			t.Errorf("the withheld direction does not say why: %q", fix.Unpatchable)
		}
	}
}

func TestSimulateComparesConfigurationRuns(t *testing.T) {
	f := func(cause string, conf runbook.Confidence) runbook.Finding {
		return runbook.Finding{Cause: cause, Confidence: conf, Evidence: []runbook.Evidence{{Reason: cause + " because"}}}
	}
	before := runbook.SimulatedRun{Findings: []runbook.Finding{f("a", runbook.ConfidenceHigh), f("b", runbook.ConfidenceLow)}}
	cases := []struct {
		name    string
		after   []runbook.Finding
		expect  map[string]string
		summary string
		worse   bool
		keeps   bool
	}{
		{"clears", []runbook.Finding{f("b", runbook.ConfidenceLow)}, nil, "simulated: clears a, no new finding", false, false},
		{"breaks", []runbook.Finding{f("c", runbook.ConfidenceHigh)}, nil, "simulated: clears a, b, new finding c (high: c because)", true, false},
		{"raises another", []runbook.Finding{f("b", runbook.ConfidenceHigh)}, nil, "new finding b (high", true, false},
		{"remains", []runbook.Finding{f("a", runbook.ConfidenceHigh)}, nil, "does not clear a (a because)", false, true},
		{"lowers", []runbook.Finding{f("a", runbook.ConfidenceLow)}, nil, "lowers a from high to low confidence", false, false},
		{"expected", []runbook.Finding{f("w", runbook.ConfidenceMedium)}, map[string]string{"w": "istiod deploys it"}, "then w until istiod deploys it", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sim := runbook.Simulate("a", nil, before, runbook.SimulatedRun{Findings: c.after}, c.expect)
			if !strings.Contains(sim.Summary, c.summary) || sim.Worse() != c.worse || sim.KeepsCause() != c.keeps {
				t.Errorf("summary %q (worse %v, keeps %v), want %q (worse %v, keeps %v)", sim.Summary, sim.Worse(), sim.KeepsCause(), c.summary, c.worse, c.keeps)
			}
		})
	}
	// A cause the configuration alone does not show is judged by its
	// verification checks that the configuration answers.
	g, err := runbook.Load("tiny.yaml", []byte(tinyFixes(fixWithRemedy)), remedyCatalogue())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := g.Cause("x.one")
	sim := runbook.Simulate("x.one", c.Verify, runbook.SimulatedRun{}, runbook.SimulatedRun{Facts: probes.Facts{"a_count": 0}}, nil)
	if len(sim.Checks) != 1 || !sim.Checks[0].Passed || !strings.Contains(sim.Summary, "x.one rests on runtime evidence") || !strings.Contains(sim.Summary, "`a_count == 0` holds") {
		t.Errorf("runtime-only cause: %+v", sim)
	}
}
