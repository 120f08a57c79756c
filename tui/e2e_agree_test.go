package tui

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// e2eInput is a scenario as the on-call opens it: with its caller
// (--from), or the same Service without one (the caller search).
type e2eInput struct {
	name    string
	args    []string
	symptom int
}

func e2eInputs(t *testing.T) []e2eInput {
	t.Helper()
	names, err := recorded.Names(assets.FS)
	if err != nil || len(names) < 20 {
		t.Fatalf("scenarios: %v %v", names, err)
	}
	var out []e2eInput
	for _, name := range names {
		src, err := triage.Scenario(name)
		if err != nil {
			t.Fatal(err)
		}
		tg := *src.Target
		out = append(out, e2eInput{name: name + "/from", args: []string{"--scenario", name}, symptom: symptomOf(name)})
		noFrom := []string{"--scenario", name, "-n", tg.Namespace, "svc/" + tg.Service}
		if tg.Port != 0 {
			noFrom = append(noFrom, "--port", fmt.Sprint(tg.Port))
		}
		out = append(out, e2eInput{name: name + "/no-from", args: noFrom, symptom: symptomOf(name)})
	}
	// The ambient scenario's objects alone, no caller: issue 26's
	// all-clear that was not one.
	manifests, err := filepath.Abs(filepath.Join("..", "assets", "scenarios", "ambient-hbone-networkpolicy", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, e2eInput{name: "ambient-hbone-networkpolicy/manifests-only", args: []string{"--manifests", manifests, "-n", "shop", "svc/orders"}})
}

// tmuxPane is a detached tmux pane of its own server, driven from any
// goroutine: its waits return errors instead of failing the test.
type tmuxPane struct {
	sock string
}

func newTmuxPane(dir, script string, w, h int) (*tmuxPane, error) {
	p := &tmuxPane{sock: filepath.Join(dir, "tmux.sock")}
	_, err := p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "e2e", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h),
		"-e", "TERM=xterm-256color", "-e", "NO_COLOR=", script)
	return p, err
}

func (p *tmuxPane) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("tmux %v: %v: %s", args, err, out)
	}
	return string(out), nil
}

func (p *tmuxPane) close() { _, _ = p.tmux("kill-server") }

func (p *tmuxPane) keys(k ...string) error {
	_, err := p.tmux(append([]string{"send-keys", "-t", "e2e"}, k...)...)
	return err
}

// text types s literally.
func (p *tmuxPane) text(s string) error {
	_, err := p.tmux("send-keys", "-t", "e2e", "-l", s)
	return err
}

func (p *tmuxPane) screen() string {
	s, _ := p.tmux("capture-pane", "-p", "-t", "e2e")
	return s
}

// waitFor returns the screen once it shows every want and none of
// unless (probes still running).
func (p *tmuxPane) waitFor(timeout time.Duration, want []string, unless ...string) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		s := p.screen()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(s, w)
		}
		for _, u := range unless {
			ok = ok && !strings.Contains(s, u)
		}
		if ok {
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("the pane never showed %q (without %q):\n%s", want, unless, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ended is a log's session_ended event of the triage (its main session).
type ended struct {
	Session string `json:"session"`
	Ended   struct {
		Findings []string             `json:"findings"`
		Reason   string               `json:"reason"`
		Causes   []runbook.CauseState `json:"causes"`
	} `json:"ended"`
}

// readEnded is the last session_ended of the log at path: the triage's, the
// record's last event.
func readEnded(path string) (*ended, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var last *ended
	var kinds []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("log line is not JSON: %v", err)
		}
		kinds = append(kinds, ev.Kind)
		if ev.Kind == string(runbook.EventSessionEnded) {
			last = &ended{}
			_ = json.Unmarshal(sc.Bytes(), last)
		}
	}
	if last == nil || kinds[len(kinds)-1] != string(runbook.EventSessionEnded) {
		return nil, fmt.Errorf("the log does not end with session_ended: %v", kinds)
	}
	return last, sc.Err()
}

// conclusion is what a triage concluded: its findings' causes (one entry
// a finding) and its open hypotheses.
type conclusion struct {
	Findings, Open []string
}

func (c conclusion) sorted() conclusion {
	sort.Strings(c.Findings)
	sort.Strings(c.Open)
	return c
}

// guidedRun is one input walked in the TUI and checked by check.
type guidedRun struct {
	in          e2eInput
	tui, check  conclusion
	err         error
	tuiDuration time.Duration
}

// walkAll opens the input in the TUI (in tmux), picks its symptom, runs
// every step (a), quits and reads what the incident log concluded.
func walkAll(bin, dir string, in e2eInput) (conclusion, error) {
	logPath := filepath.Join(dir, "incident.jsonl")
	script := fmt.Sprintf("%s %s --log %s; echo EXIT=$?; sleep 120", bin, strings.Join(in.args, " "), logPath)
	p, err := newTmuxPane(dir, script, 120, 40)
	if err != nil {
		return conclusion{}, err
	}
	defer p.close()
	step := func(timeout time.Duration, keys []string, want []string, unless ...string) error {
		if len(keys) > 0 {
			if err := p.keys(keys...); err != nil {
				return err
			}
		}
		_, err := p.waitFor(timeout, want, unless...)
		return err
	}
	if err := step(60*time.Second, nil, []string{"What does the on-call see?"}); err != nil {
		return conclusion{}, err
	}
	for i := 0; i < in.symptom; i++ {
		if err := p.keys("Down"); err != nil {
			return conclusion{}, err
		}
	}
	if err := step(60*time.Second, []string{"Enter"}, []string{"Runbook · guided"}, "starting the session"); err != nil {
		return conclusion{}, err
	}
	if err := step(120*time.Second, []string{"a"}, []string{"remaining steps"}, "running", "steps · esc cancels"); err != nil {
		return conclusion{}, err
	}
	if err := step(30*time.Second, []string{"q"}, []string{"Quit meshtriage?"}); err != nil {
		return conclusion{}, err
	}
	if err := step(60*time.Second, []string{"y"}, []string{"EXIT=0"}); err != nil {
		return conclusion{}, err
	}
	e, err := readEnded(logPath)
	if err != nil {
		return conclusion{}, err
	}
	if e.Ended.Reason != "quit" {
		return conclusion{}, fmt.Errorf("session ended %q, want quit", e.Ended.Reason)
	}
	c := conclusion{Findings: e.Ended.Findings}
	for _, st := range e.Ended.Causes {
		if st.State == runbook.CauseOpen {
			c.Open = append(c.Open, st.Cause)
		}
	}
	return c.sorted(), nil
}

// checkConclusion is `meshtriage check ARGS -o json`'s.
func checkConclusion(bin string, in e2eInput) (conclusion, error) {
	cmd := exec.Command(bin, append(append([]string{"check"}, in.args...), "-o", "json")...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) {
		return conclusion{}, fmt.Errorf("check %v: %v", in.args, err)
	}
	var rep struct {
		Findings   []struct{ Cause string }
		Hypotheses []struct{ Cause string }
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return conclusion{}, err
	}
	var c conclusion
	for _, f := range rep.Findings {
		c.Findings = append(c.Findings, f.Cause)
	}
	for _, h := range rep.Hypotheses {
		c.Open = append(c.Open, h.Cause)
	}
	return c.sorted(), nil
}

// One triage, end to end: every scenario, with and without --from, walked
// in the TUI binary in tmux (the symptom, a, quit) ends with the findings
// and open hypotheses check -o json reports on the same input, as the
// incident log's session_ended records them. The binary is built once;
// the panes run side by side.
func TestEndToEndTUIAgreesWithCheck(t *testing.T) {
	bin, _ := e2eBinary(t)
	inputs := e2eInputs(t)
	runs := make([]guidedRun, len(inputs))
	dirs := make([]string, len(inputs))
	for i := range inputs {
		dirs[i] = t.TempDir()
	}
	// The TUI samples the metrics for 5 s: the panes wait side by side.
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, in := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := guidedRun{in: in}
			start := time.Now()
			r.tui, r.err = walkAll(bin, dirs[i], in)
			r.tuiDuration = time.Since(start)
			if r.err == nil {
				r.check, r.err = checkConclusion(bin, in)
			}
			runs[i] = r
		}()
	}
	wg.Wait()
	for _, r := range runs {
		t.Run(r.in.name, func(t *testing.T) {
			if r.err != nil {
				t.Fatal(r.err)
			}
			t.Logf("%s: %+v (TUI walk %s)", r.in.name, r.tui, r.tuiDuration.Round(100*time.Millisecond))
			if !reflect.DeepEqual(r.tui, r.check) {
				t.Errorf("the TUI's record concludes %+v\ncheck reports %+v", r.tui, r.check)
			}
		})
	}
}

// timeline is the entries of `meshtriage log render`'s timeline, without
// their times.
func timeline(bin, logPath string) ([]string, error) {
	out, err := exec.Command(bin, "log", "render", logPath).Output()
	if err != nil {
		return nil, fmt.Errorf("log render: %v", err)
	}
	md := string(out)
	start := strings.Index(md, "## Timeline")
	if start < 0 {
		return nil, fmt.Errorf("no timeline:\n%s", md)
	}
	body := md[start+1:]
	if end := strings.Index(body, "\n## "); end >= 0 {
		body = body[:end]
	}
	var entries []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "- **") {
			if _, rest, ok := strings.Cut(line, "** "); ok {
				entries = append(entries, rest)
			}
		}
	}
	return entries, nil
}

// The postmortem tells what the on-call did: a scripted session in the
// TUI binary (tmux), on port-mismatch, whose rendered record's timeline is
// exactly the actions sent, in order, one entry each: the symptom, the
// step the runbook proposed and the next, a note, run all, a re-run, the
// cause taken from the checklist, a confirmation with its reason, the
// fix's patch copied (which chooses it), the verification, and the quit.
// Keys that only move (down, tab, esc, G) record nothing.
func TestEndToEndRecordIsTheScript(t *testing.T) {
	bin, dir := e2eBinary(t)
	logPath := filepath.Join(dir, "incident.jsonl")
	p, err := newTmuxPane(dir, fmt.Sprintf("%s --scenario port-mismatch --log %s; echo EXIT=$?; sleep 120", bin, logPath), 120, 40)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	const cause = "`service.port-mismatch`"
	script := []struct {
		keys  []string
		text  string
		entry string // the timeline entry it adds: its start
		done  string // what the screen shows once the action is over
	}{
		// The session starts with the symptom: the log, with it.
		{[]string{"Enter"}, "", "Triage started by ", ""},
		{nil, "", "Symptom: Callers see 503s", ""},
		{[]string{"Enter"}, "", "Ran `target`: **pass**", ""},
		{[]string{"Enter"}, "", "Ran `envoy-clusters` (the runbook's next step: ", ""},
		{[]string{"n"}, "all hosts healthy", "Note at `envoy-clusters`: all hosts healthy", ""},
		{[]string{"a"}, "", "Ran all ", ""},
		{[]string{"r"}, "", "Re-ran `envoy-clusters`: **pass**", ""},
		{[]string{"G", "Enter"}, "", "Chose the cause " + cause, ""},
		{[]string{"c"}, "targetPort 8081, the app listens on 8080", "Confirmed " + cause + ": targetPort 8081, the app listens on 8080", ""},
		{[]string{"Tab", "y"}, "", "Chose the fix `align-target-port` for " + cause, ""},
		{[]string{"v"}, "", "Verified the fix of " + cause + ": ", "Verification  (v runs it)"},
		{[]string{"Escape", "q", "y"}, "", "Session ended (quit); findings: " + cause, ""},
	}
	// A key's screen is up before the next key goes: an Escape read with
	// the q after it is alt+q, and y answers the quit dialog only.
	before := map[string]string{"q": "Runbook · guided", "y": "Quit meshtriage?"}
	if _, err := p.waitFor(60*time.Second, []string{"What does the on-call see?"}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, a := range script {
		for _, k := range a.keys {
			if screen, ok := before[k]; ok && i == len(script)-1 {
				if _, err := p.waitFor(30*time.Second, []string{screen}); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.keys(k); err != nil {
				t.Fatal(err)
			}
			time.Sleep(150 * time.Millisecond)
		}
		if a.text != "" {
			// A note or a verdict's reason: typed in the box the key
			// opened, then saved.
			if _, err := p.waitFor(30*time.Second, []string{"enter save"}); err != nil {
				t.Fatal(err)
			}
			if err := p.text(a.text); err != nil {
				t.Fatal(err)
			}
			if err := p.keys("Enter"); err != nil {
				t.Fatal(err)
			}
		}
		if a.done != "" {
			// The verification is over (not only recorded): esc then goes
			// back rather than cancelling it.
			if _, err := p.waitFor(60*time.Second, []string{a.done}, "running… esc cancels"); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, a.entry)
		// The action is in the record before the next is sent, so the
		// order is the script's.
		deadline := time.Now().Add(60 * time.Second)
		for {
			got, err := timeline(bin, logPath)
			if err == nil && len(got) >= len(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after action %d (%v), the timeline is %q\n%s", i+1, a.keys, got, p.screen())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if _, err := p.waitFor(30*time.Second, []string{"EXIT=0"}); err != nil {
		t.Fatal(err)
	}
	got, err := timeline(bin, logPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("the timeline has %d entries, the script %d actions:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("entry %d = %q, want the script's %q", i+1, got[i], want[i])
		}
	}
}
