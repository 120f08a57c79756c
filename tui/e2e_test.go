package tui

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEndToEndTmux builds the binary, runs `meshtriage demo
// outlier-all-ejected` in a detached tmux pane, and drives it as an on-call
// would: the symptom, enter on each proposal, o on the cause, quit. It
// asserts what the screen shows, that the exit message names the log, and
// that the log records the cause.
//
// Set MESHTRIAGE_SCREENSHOT=FILE to also write the checklist and cause
// screens as a Markdown text capture (the README's screenshot), and
// MESHTRIAGE_BIN to test a binary already built.
func TestEndToEndTmux(t *testing.T) {
	bin, dir := e2eBinary(t)
	logPath := filepath.Join(dir, "incident.jsonl")
	p := startPane(t, dir, fmt.Sprintf("%s demo outlier-all-ejected --log %s; echo EXIT=$?; sleep 60", bin, logPath))
	waitFor, idle, keys := p.waitFor, p.idle, p.keys

	waitFor("What does the on-call see?", "Callers see 503s")
	keys("Enter")
	waitFor("Runbook · guided", "next:")
	var checklist string
	for i := 0; ; i++ {
		s := idle()
		if strings.Contains(s, "outlier.all-ejected") {
			checklist = s
			break
		}
		if i == 20 || strings.Contains(s, "runbook finished without a cause") {
			t.Fatalf("the guided walk did not reach outlier.all-ejected:\n%s", s)
		}
		keys("Enter")
		time.Sleep(300 * time.Millisecond)
	}
	if !strings.Contains(checklist, "✗") || !strings.Contains(checklist, "Causes reached") {
		t.Fatalf("the checklist does not show the failing step and the cause:\n%s", checklist)
	}
	keys("o")
	cause := waitFor("◆ outlier.all-ejected", "Outlier", "fix direction", "Evidence")
	keys("q")
	waitFor("Quit meshtriage?", logPath)
	keys("y")
	waitFor("incident log: "+logPath, "EXIT=0")

	if out := os.Getenv("MESHTRIAGE_SCREENSHOT"); out != "" {
		md := "```\n" + strings.TrimRight(checklist, "\n") + "\n```\n\n```\n" + strings.TrimRight(cause, "\n") + "\n```\n"
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The incident log says what the screen said.
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kinds []string
	var ended struct {
		Ended struct {
			Findings []string `json:"findings"`
			Reason   string   `json:"reason"`
		} `json:"ended"`
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("log line is not JSON: %v", err)
		}
		kinds = append(kinds, ev.Kind)
		if ev.Kind == "session_ended" {
			_ = json.Unmarshal(sc.Bytes(), &ended)
		}
	}
	if !slices.Contains(kinds, "probe_ran") || kinds[len(kinds)-1] != "session_ended" {
		t.Fatalf("log events: %v", kinds)
	}
	if ended.Ended.Reason != "quit" || !slices.Contains(ended.Ended.Findings, "outlier.all-ejected") {
		t.Fatalf("session ended %+v, want quit with outlier.all-ejected", ended.Ended)
	}
}

// `meshtriage demo` with no name, in a terminal: the picker of recorded
// incidents, not a stdin prompt; the incident chosen opens with its story.
func TestEndToEndDemoPicker(t *testing.T) {
	bin, dir := e2eBinary(t)
	logPath := filepath.Join(dir, "incident.jsonl")
	p := startPane(t, dir, fmt.Sprintf("%s demo --log %s; echo EXIT=$?; sleep 60", bin, logPath))
	p.waitFor("Choose a recorded incident", "no cluster needed")
	p.keys("/")
	p.keys("port-mismatch")
	p.keys("Enter")
	p.keys("Enter")
	p.waitFor("What does the on-call see?", "(scenario port-mismatch)")
	p.keys("Enter")
	p.waitFor("Runbook · guided", "orders.shop")
	p.keys("q")
	p.waitFor("Quit meshtriage?")
	p.keys("y")
	p.waitFor("incident log: "+logPath, "EXIT=0")
}

// e2eBinary is the binary under test (MESHTRIAGE_BIN, or a fresh build) and
// a temporary folder for the test's files; it skips without tmux.
func e2eBinary(t *testing.T) (bin, dir string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed; the end-to-end test runs the binary in tmux (apt-get install tmux)")
	}
	dir = t.TempDir()
	// MESHTRIAGE_BIN reuses a binary `make build` made; otherwise build one.
	bin = os.Getenv("MESHTRIAGE_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "meshtriage")
		build := exec.Command("go", "build", "-o", bin, "./cmd/meshtriage")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	return bin, dir
}

// pane is a detached 100x30 tmux pane running one shell script, whose
// waits fail the test.
type pane struct {
	t  *testing.T
	tp *tmuxPane
}

func startPane(t *testing.T, dir, script string) *pane {
	t.Helper()
	// A private server socket: never touch the user's (or another test's)
	// tmux sessions.
	tp, err := newTmuxPane(dir, script, 100, 30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tp.close)
	return &pane{t: t, tp: tp}
}

func (p *pane) screen() string { return p.tp.screen() }

func (p *pane) keys(k ...string) {
	p.t.Helper()
	if err := p.tp.keys(k...); err != nil {
		p.t.Fatal(err)
	}
}

// waitFor returns the screen once it shows every want, failing after 30 s.
func (p *pane) waitFor(want ...string) string {
	p.t.Helper()
	s, err := p.tp.waitFor(30*time.Second, want)
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// idle returns the screen once no probe is running.
func (p *pane) idle() string {
	p.t.Helper()
	s, err := p.tp.waitFor(30*time.Second, nil, "running", "starting the session")
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// Ctrl-C during `meshtriage check` in a terminal: the terminal echoes ^C
// on the line the check's stderr line would start on; that line starts a
// line of its own ("meshtriage: interrupted: ..."), as a shell's next
// prompt does.
func TestEndToEndInterruptedCheckLine(t *testing.T) {
	bin, dir := e2eBinary(t)
	logPath := filepath.Join(dir, "incident.jsonl")
	p := startPane(t, dir, fmt.Sprintf("%s check --scenario healthy --metrics-window 30s -o json --log %s > %s; echo EXIT=$?; sleep 60", bin, logPath, filepath.Join(dir, "report.json")))
	// The check is sampling the metrics window when the on-call gives up:
	// its triage has started (its handler is in place before).
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if data, _ := os.ReadFile(logPath); strings.Contains(string(data), `"kind":"session_started"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the triage never started:\n%s", p.screen())
		}
	}
	time.Sleep(500 * time.Millisecond)
	p.keys("C-c")
	screen := p.waitFor("EXIT=130")
	found := false
	for _, line := range strings.Split(screen, "\n") {
		if strings.Contains(line, "meshtriage: interrupted") {
			found = true
			if !strings.HasPrefix(line, "meshtriage: interrupted") {
				t.Errorf("the interrupted line does not start a line of its own: %q", line)
			}
		}
	}
	if !found {
		t.Fatalf("no interrupted line:\n%s", screen)
	}
}
