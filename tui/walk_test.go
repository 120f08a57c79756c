package tui

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/enginetest"
)

func callsOf(e *enginetest.Engine, kind string) [][]string {
	var out [][]string
	for _, c := range e.Calls() {
		if c.Kind == kind {
			out = append(out, c.Args)
		}
	}
	return out
}

// waitCall waits until the engine has recorded a call of kind with args.
func (h *harness) waitCall(kind string, args ...string) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range callsOf(h.eng, kind) {
			if reflect.DeepEqual(c, args) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("engine never recorded %s%q; calls: %+v", kind, args, h.eng.Calls())
}

// TestGuidedWalkToCause walks the outlier incident with enter alone, then
// works the cause screen: every move lands in the session as the incident
// log needs it (who chose, what was confirmed and why, which fix).
func TestGuidedWalkToCause(t *testing.T) {
	eng := enginetest.New(outlierScript())
	h := start(t, eng, 80, 24, Options{})
	walkToCause(h)

	want := [][]string{
		{"start", "callers-503"},
		{"choose", "target", "engine"}, {"run", "target"},
		{"choose", "endpoints", "engine"}, {"run", "endpoints"},
		{"choose", "envoy-clusters", "engine"}, {"run", "envoy-clusters"},
		{"choose", "destination-rules", "engine"}, {"run", "destination-rules"},
	}
	var got [][]string
	for _, c := range eng.Calls() {
		got = append(got, append([]string{c.Kind}, c.Args...))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls:\n got %q\nwant %q", got, want)
	}

	h.key("enter") // the proposal is the cause: open it
	h.waitFor("Outlier detection ejected every host", "1 fix direction")
	h.waitCall("choose", "outlier.all-ejected", "engine")

	h.key("tab")
	h.waitFor("YAML  (y copies)")
	h.key("y")
	h.waitFor("copied relax-outlier YAML (OSC 52)")
	h.key("enter")
	h.waitCall("fix", "outlier.all-ejected", "relax-outlier")
	h.waitFor(`fix "relax-outlier" chosen for outlier.all-ejected`)

	h.key("v")
	h.waitFor("verification: 1 passed, 0 failed, 1 to check by hand")
	h.waitCall("verify", "outlier.all-ejected")

	h.key("c")
	h.waitFor("Why is outlier.all-ejected confirmed?")
	h.key("ejections match the 503 UH in the log")
	h.key("enter")
	h.waitCall("hypothesis", "outlier.all-ejected", "confirmed", "ejections match the 503 UH in the log")
	h.waitFor("outlier.all-ejected confirmed")
	h.key("g")
	h.waitFor("outlier.all-ejected · confidence high · ✔ confirmed")

	h.key("esc")
	h.waitFor("Runbook · guided", "✔ Outlier detec")

	h.key("q")
	h.waitFor("Quit meshtriage?", "/var/tmp/meshtriage/2025-03-14T03-07-00-reviews.jsonl")
	h.key("y")
	fm := h.tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*frames).m
	h.waitCall("end", "quit")
	farewell := fm.Farewell()
	for _, w := range []string{"# relax-outlier YAML", "consecutive5xxErrors: 5", "incident log: /var/tmp/meshtriage/2025-03-14T03-07-00-reviews.jsonl"} {
		if !strings.Contains(farewell, w) {
			t.Errorf("farewell lacks %q:\n%s", w, farewell)
		}
	}
}

// A step other than the proposal is the on-call's choice, and is recorded
// as such; re-running is not a move.
func TestChoosingAnotherStep(t *testing.T) {
	eng := enginetest.New(outlierScript())
	h := start(t, eng, 80, 24, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next: Service and selected pods")
	h.key("G") // last of the other steps: mTLS
	h.waitFor("› · mTLS mode on both sides")
	h.key("enter")
	h.waitFor("ISTIO_MUTUAL to a STRICT upstream")
	h.waitCall("choose", "mtls", "user")
	h.waitCall("run", "mtls")
	h.key("r")
	h.waitCall("rerun", "mtls")
	if n := len(callsOf(eng, "choose")); n != 1 {
		t.Errorf("a re-run recorded a move: %d choose calls: %+v", n, eng.Calls())
	}
}

// esc cancels a probe that would otherwise hang (a port-forward that never
// answers) without freezing the UI, and the probe's context ends.
func TestCancelRunningProbe(t *testing.T) {
	s := outlierScript()
	s.Hold["envoy-clusters"] = true
	eng := enginetest.New(s)
	h := start(t, eng, 80, 24, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next: Service and selected pods")
	h.key("enter")
	h.waitFor("next: Kubernetes endpoints")
	h.key("enter")
	h.waitFor("next: Envoy upstream hosts")
	h.key("enter")
	h.waitFor("running", "Running… esc cancels.")
	// The UI still answers while the probe hangs.
	h.key("m")
	h.waitFor("Runbook · free")
	h.key("m")
	h.waitFor("Runbook · guided")
	if n := len(callsOf(eng, "run")); n != 2 {
		t.Fatalf("envoy-clusters finished while held: %+v", eng.Calls())
	}
	h.key("esc")
	h.waitFor("cancelled 1 running probe(s)")
	// The held probe returns once its context is cancelled, and its result
	// is what the session recorded.
	h.waitCall("run", "envoy-clusters")
	h.waitFor("⊘ Envoy upstrea", "cancelled: context canceled")
	// It can be run again.
	h.key("r")
	h.waitFor("running")
	h.key("esc")
	h.waitFor("⊘ Envoy upstrea")
}

// "run all remaining" runs the steps concurrently with a progress bar, one
// result at a time, and esc stops the ones still running.
func TestRunAllRemaining(t *testing.T) {
	s := outlierScript()
	s.Hold["access-log"] = true
	s.Hold["mtls"] = true
	eng := enginetest.New(s)
	h := start(t, eng, 80, 24, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next: Service and selected pods")
	h.key("a")
	// Both held probes are running at once: the batch is concurrent.
	started := map[string]bool{}
	deadline := time.After(5 * time.Second)
	for !(started["access-log"] && started["mtls"]) {
		select {
		case id := <-eng.Started():
			started[id] = true
		case <-deadline:
			t.Fatalf("held probes did not run concurrently; started %v", started)
		}
	}
	h.waitFor("4/6 steps · esc cancels", "█")
	h.waitFor("✗ Envoy upstream", "! DestinationRule", "✓ Kubernetes endpoin")
	h.key("esc")
	h.waitFor("⊘ mTLS mode", "⊘ Proxy 503", "ran 4 of 6 remaining steps; 2 cancelled")
	if h.f.screen() == "" || strings.Contains(h.f.screen(), "steps · esc cancels") {
		t.Fatalf("progress bar still shown after the batch ended:\n%s", h.f.screen())
	}
	h.key("a")
	h.waitFor("every step has run")
}

// Notes go to the session with the step they are about; an empty note and
// a discarded one record nothing.
func TestNotes(t *testing.T) {
	eng := enginetest.New(outlierScript())
	h := start(t, eng, 80, 24, Options{})
	walkToEnvoy(h)
	h.key("n")
	h.waitFor("Note for the incident log (step envoy-clusters)")
	h.key("q?m") // typed, not commands
	h.waitFor("q?m")
	h.tm.Send(tea.KeyPressMsg{Code: 'j', Mod: tea.ModCtrl})
	h.key("second line")
	h.key("enter")
	h.waitCall("note", "envoy-clusters", "q?m\nsecond line")
	h.waitFor("note recorded at 03:07:00")

	h.key("n")
	h.waitFor("Note for the incident log")
	h.key("never mind")
	h.key("esc")
	h.waitFor("discarded")
	h.key("n")
	h.key("enter")
	h.waitFor("empty note: nothing recorded")
	if n := len(callsOf(eng, "note")); n != 1 {
		t.Fatalf("want 1 note, got %+v", callsOf(eng, "note"))
	}
}

// Ruling a cause out from the checklist, the postmortem's "what we ruled
// out"; without a cause reached there is nothing to judge.
func TestRuleOutFromChecklist(t *testing.T) {
	eng := enginetest.New(outlierScript())
	h := start(t, eng, 80, 24, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next: Service")
	h.key("x")
	h.waitFor("no cause reached yet")
	h.key("m") // free mode lists every cause
	h.waitFor("Runbook · free", "◇ Plaintext to a STRICT")
	h.key("G")
	h.key("x")
	h.waitFor("Why is mtls.plaintext-to-strict ruled out?")
	h.key("DR is ISTIO_MUTUAL, PeerAuthentication PERMISSIVE")
	h.key("enter")
	h.waitCall("hypothesis", "mtls.plaintext-to-strict", "ruled_out", "DR is ISTIO_MUTUAL, PeerAuthentication PERMISSIVE")
	h.waitFor("✘ Plaintext to", "ruled out")
	// Reading a cause the facts do not support is not a move.
	h.key("enter")
	h.waitFor("◆ mtls.plaintext-to-strict", "ruled out")
	if c := callsOf(eng, "choose"); len(c) != 0 {
		t.Fatalf("opening an unreached cause recorded %v", c)
	}
}

// A session whose incident log cannot be written says so on screen.
func TestLogErrorShown(t *testing.T) {
	s := outlierScript()
	s.LogErr = errors.New("write /var/tmp/meshtriage/x.jsonl: no space left on device")
	h := start(t, enginetest.New(s), 80, 24, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("incident log NOT written: write /var/tmp/meshtriage/x.jsonl: no space left")
}

// ctrl+c asks too; a second ctrl+c quits at once and still ends the
// session.
func TestCtrlCTwiceQuits(t *testing.T) {
	eng := enginetest.New(outlierScript())
	h := start(t, eng, 80, 24, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next: Service")
	h.key("ctrl+c")
	h.waitFor("Quit meshtriage?")
	h.key("n")
	h.waitGone("Quit meshtriage?")
	h.key("ctrl+c")
	h.waitFor("Quit meshtriage?")
	h.key("ctrl+c")
	h.tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	h.waitCall("end", "quit")
}

// Every screen fits the terminal exactly, whatever its size, and follows a
// resize.
func TestResize(t *testing.T) {
	h := start(t, enginetest.New(outlierScript()), 80, 24, Options{})
	walkToEnvoy(h)
	want := "Envoy upstream"
	check := func(w, hgt int) {
		t.Helper()
		h.tm.Send(tea.WindowSizeMsg{Width: w, Height: hgt})
		var s string
		deadline := time.Now().Add(5 * time.Second)
		for {
			s = h.f.screen()
			if lines := strings.Split(s, "\n"); len(lines) == hgt && fits(lines, w) && strings.Contains(s, "needs at least") == (w < minWidth || hgt < minHeight) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("at %dx%d the screen does not fit:\n%s", w, hgt, s)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if w >= minWidth && hgt >= minHeight && !strings.Contains(s, want) {
			t.Fatalf("at %dx%d %q is gone:\n%s", w, hgt, want, s)
		}
	}
	for _, sz := range [][2]int{{120, 40}, {80, 24}, {60, 15}, {40, 10}, {30, 8}, {100, 30}} {
		check(sz[0], sz[1])
	}
	h.key("enter") // the cause screen resizes too
	h.waitFor("cause reached")
	h.key("enter")
	h.waitFor("1 fix direction")
	want = "outlier.all-ejected"
	check(50, 12)
	check(80, 24)
}

func fits(lines []string, w int) bool {
	for _, l := range lines {
		if len([]rune(l)) > w {
			return false
		}
	}
	return true
}

// NO_COLOR in the environment selects the colourless styles.
func TestNoColorEnvironment(t *testing.T) {
	m := New(t.Context(), Options{Engine: enginetest.New(outlierScript()), Environ: []string{"TERM=xterm", "NO_COLOR=1"}})
	if !m.common.Styles.NoColor {
		t.Fatal("NO_COLOR=1 did not select the colourless styles")
	}
	m.Update(tea.BackgroundColorMsg{})
	if !m.common.Styles.NoColor {
		t.Fatal("the background reply brought colours back under NO_COLOR")
	}
	if New(t.Context(), Options{Engine: enginetest.New(outlierScript()), Environ: []string{"NO_COLOR="}}).common.Styles.NoColor {
		t.Fatal("an empty NO_COLOR counts as set")
	}
}

// esc stops a verification that hangs, and the screen says so.
func TestCancelVerification(t *testing.T) {
	s := outlierScript()
	s.Hold["verify/outlier.all-ejected"] = true
	h := start(t, enginetest.New(s), 80, 24, Options{})
	walkToCause(h)
	h.key("enter")
	h.waitFor("1 fix direction")
	h.key("v")
	h.key("G")
	h.waitFor("running… esc cancels")
	h.key("esc")
	h.waitFor("verification cancelled", "Verification  (v runs it)")
	// Still on the cause screen: esc cancelled, it did not go back.
	h.waitFor("◆ outlier.all-ejected")
}

// Quitting before the session starts says nothing was recorded, and prints
// no log path.
func TestQuitBeforeStart(t *testing.T) {
	eng := enginetest.New(outlierScript())
	h := start(t, eng, 80, 24, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("q")
	h.waitFor("No session has started; nothing was recorded.")
	h.key("y")
	fm := h.tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*frames).m
	if f := fm.Farewell(); f != "" {
		t.Fatalf("farewell before start = %q", f)
	}
	if c := eng.Calls(); len(c) != 0 {
		t.Fatalf("quitting before start recorded %+v", c)
	}
}

// A failed step no cause explains is a finding of its own, titled by the
// step, and the causes whose evidence could not be read are listed as open
// hypotheses with the commands that settle them: the checklist never says
// "no cause" while either is there.
func TestUnexplainedAndOpenHypothesesShowLikeCauses(t *testing.T) {
	sc := outlierScript()
	sc.Rules["endpoints"] = []enginetest.Rule{{Cause: engine.UnexplainedPrefix + "endpoints", Reason: "endpoints failed, no cause explains it"}}
	sc.Findings[engine.UnexplainedPrefix+"endpoints"] = engine.Finding{
		Title: "Kubernetes endpoints: failed, and no cause of the runbook explains it", Confidence: "low", Summary: "2 endpoints terminating",
		Fixes: []engine.Fix{{ID: "look-next", Title: "What to look at next", Text: "Read the EndpointSlices by hand."}},
	}
	sc.Undecided = []engine.Undecided{{Cause: "mtls.plaintext-to-strict", Title: "Plaintext to a STRICT upstream", Confidence: "high",
		Unknown: []string{"envoy_tls_errors"}, Why: "the caller's Envoy admin could not be read",
		Settle: []string{"kubectl exec -n shop productpage-7d4f9-abcde -c istio-proxy -- pilot-agent request GET stats"}}}
	eng := enginetest.New(sc)
	h := start(t, eng, 100, 30, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next: Service")
	h.key("enter")
	h.waitFor("next: Kubernetes endpoints")
	h.key("enter")
	h.waitFor("Causes reached", "◆ Kubernetes endpoints: fai", "Open hypotheses · could not decide", "? Plaintext to a STRICT", "undecided")
	h.key("down") // the unexplained step's finding
	h.waitFor("◆ Kubernetes endpoints: failed, and no cause of the", "unexplained/endpoints", "2 endpoints terminating", "fix directions (1)")
	h.key("down") // the open hypothesis
	h.waitFor("Hypothesis", "What would settle it", "envoy_tls_errors", "the caller's Envoy admin could not be read", "$ kubectl exec -n shop productpage-7d4f9-abcde")
	h.key("up")
	h.key("enter")
	h.waitFor("What to look at next", "Read the EndpointSlices by hand.")
}
