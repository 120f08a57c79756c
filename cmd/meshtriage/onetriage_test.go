package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/triage"
	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/detail"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// guided is a triage opened as the terminal UI opens it, and its engine.
type guided struct {
	tr  *triage.Triage
	eng engine.Engine
}

// guidedTriage opens the input as `meshtriage ARGS` does (the root
// command's flags and arguments, resolved and opened by the UI's own
// code: tuiOptions.resolve and openGuided), picks the first symptom and
// runs every remaining step, as `a` does. The metrics window is check's in
// these tests (a scenario's second sample is recorded).
func guidedTriage(t *testing.T, in triageInput) *guided {
	t.Helper()
	ctx := context.Background()
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}
	root, ui := newRoot("meshtriage", streams)
	if err := root.ParseFlags(in.args); err != nil {
		t.Fatal(err)
	}
	src, target, _, err := ui.resolve(ctx, root.Flags().Args())
	if err != nil {
		t.Fatal(err)
	}
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: 10 * time.Millisecond}
	tr, eng, err := openGuided(ctx, src, target, triage.Options{
		Mode: runbook.ModeGuided, Probes: reg, User: "test",
		LogPath: filepath.Join(t.TempDir(), "incident.jsonl"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx, eng.Symptoms()[0].ID); err != nil {
		t.Fatal(err)
	}
	var remaining []string
	for _, st := range eng.Steps() {
		if _, ran := eng.Result(st.ID); !ran {
			remaining = append(remaining, st.ID)
		}
	}
	// As the UI's batch does: recorded once, run four at a time.
	eng.RunAll(remaining)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, id := range remaining {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			eng.RunRemaining(ctx, id)
		}()
	}
	wg.Wait()
	return &guided{tr: tr, eng: eng}
}

// stepPane is the detail pane of a step that ran, as plain text, wide
// enough that no line wraps.
func (g *guided) stepPane(id string) (string, bool) {
	res, ran := g.eng.Result(id)
	if !ran {
		return "", false
	}
	for _, st := range g.eng.Steps() {
		if st.ID == id {
			return ansi.Strip(detail.RenderStep(common.NewStyles(true, true), 400, st, res, detail.StepState{Ran: true})), true
		}
	}
	return "", false
}

// hypothesisPane is the detail pane of an open hypothesis.
func (g *guided) hypothesisPane(u engine.Undecided) string {
	c := engine.Cause{ID: u.Cause, Title: u.Title}
	for _, cc := range g.eng.Causes() {
		if cc.ID == u.Cause {
			c = cc
		}
	}
	return ansi.Strip(detail.RenderUndecided(common.NewStyles(true, true), 400, c, u, ""))
}

// outcome is what a triage concluded: its findings (cause, the failed step
// of an unexplained one, confidence) and its open hypotheses.
type outcome struct {
	Findings   []string
	Hypotheses []string
}

func (o outcome) String() string {
	return fmt.Sprintf("findings %v, open hypotheses %v", o.Findings, o.Hypotheses)
}

func sortedOutcome(o outcome) outcome {
	sort.Strings(o.Findings)
	sort.Strings(o.Hypotheses)
	return o
}

func findingKeyOf(cause, step, confidence string) string {
	if step != "" {
		cause += "@" + step
	}
	return cause + " (" + confidence + ")"
}

// checkOutcome is `meshtriage check ARGS -o json`'s conclusion.
func checkOutcome(t *testing.T, in triageInput) outcome {
	t.Helper()
	r := runCLI(t, append([]string{"check", "--metrics-window", "10ms", "-o", "json"}, in.args...)...)
	if r.code != exitOK && r.code != exitFindings {
		t.Fatalf("check %v: exit %d\n%s", in.args, r.code, r.stderr)
	}
	var rep struct {
		Findings   []struct{ Cause, Step, Confidence string }
		Hypotheses []struct{ Cause string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var o outcome
	for _, f := range rep.Findings {
		o.Findings = append(o.Findings, findingKeyOf(f.Cause, f.Step, f.Confidence))
	}
	for _, h := range rep.Hypotheses {
		o.Hypotheses = append(o.Hypotheses, h.Cause)
	}
	return sortedOutcome(o)
}

// tuiOutcome is what the UI's engine shows once every step has run: its
// findings and its open hypotheses.
func (g *guided) outcome() outcome {
	var o outcome
	for _, f := range g.eng.Findings() {
		cause, step := f.Cause, ""
		if id, ok := strings.CutPrefix(f.Cause, engine.UnexplainedPrefix); ok {
			cause, step = runbook.Unexplained, id
		}
		o.Findings = append(o.Findings, findingKeyOf(cause, step, f.Confidence))
	}
	for _, u := range g.eng.Undecided() {
		o.Hypotheses = append(o.Hypotheses, u.Cause)
	}
	return sortedOutcome(o)
}

// One triage: the TUI's guided opening (openGuided: triage.Guide and
// engine.FromTriage), walked to the end with `a`, reaches the findings and
// open hypotheses check reports on the same input: every scenario, with
// and without --from, and manifests alone.
func TestGuidedTriageReachesWhatCheckReports(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	for _, in := range triageInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			want := checkOutcome(t, in)
			g := guidedTriage(t, in)
			defer g.tr.Close()
			if got := g.outcome(); !reflect.DeepEqual(got, want) {
				t.Errorf("the TUI shows %s\ncheck reports %s", got, want)
			}
		})
	}
}
