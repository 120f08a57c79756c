//go:build integration

package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/runbook"
)

// labPane is a detached tmux pane of its own server running one script.
type labPane struct {
	t    *testing.T
	sock string
}

func startLabPane(t *testing.T, script string) *labPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the TUI is driven in tmux")
	}
	p := &labPane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "lab", "-x", "120", "-y", "40", "-e", "TERM=xterm-256color", "-e", "NO_COLOR=", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	return p
}

func (p *labPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (p *labPane) keys(k ...string) { p.tmux(append([]string{"send-keys", "-t", "lab"}, k...)...) }

// waitFor returns the screen once it shows every want and none of unless.
func (p *labPane) waitFor(timeout time.Duration, want []string, unless ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := p.tmux("capture-pane", "-p", "-t", "lab")
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(s, w)
		}
		for _, u := range unless {
			ok = ok && !strings.Contains(s, u)
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the pane never showed %q (without %q):\n%s", want, unless, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// triageConclusion is what a triage concluded: its findings' causes and
// its open hypotheses, sorted.
type triageConclusion struct {
	Findings, Open []string
}

// tuiConclusion walks the target in the TUI binary against the lab (the
// symptom, a, quit) and reads what its incident log's session_ended says.
func tuiConclusion(t *testing.T, args []string, symptom int) triageConclusion {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "incident.jsonl")
	p := startLabPane(t, fmt.Sprintf("%s %s --log %s; echo EXIT=$?; sleep 300", meshtriageBinary(t), strings.Join(args, " "), logPath))
	p.waitFor(2*time.Minute, []string{"What does the on-call see?"})
	for i := 0; i < symptom; i++ {
		p.keys("Down")
	}
	p.keys("Enter")
	p.waitFor(2*time.Minute, []string{"Runbook · guided"}, "starting the session")
	p.keys("a")
	p.waitFor(5*time.Minute, []string{"remaining steps"}, "running", "steps · esc cancels")
	p.keys("q")
	p.waitFor(time.Minute, []string{"Quit meshtriage?"})
	p.keys("y")
	p.waitFor(2*time.Minute, []string{"EXIT=0"})

	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ended struct {
		Ended *runbook.SessionEnded `json:"ended"`
	}
	last := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("log line is not JSON: %v", err)
		}
		last = ev.Kind
		if ev.Kind == string(runbook.EventSessionEnded) {
			_ = json.Unmarshal(sc.Bytes(), &ended)
		}
	}
	if last != string(runbook.EventSessionEnded) || ended.Ended == nil {
		t.Fatalf("the log does not end with session_ended (last %q)", last)
	}
	c := triageConclusion{Findings: ended.Ended.Findings}
	for _, st := range ended.Ended.Causes {
		if st.State == runbook.CauseOpen {
			c.Open = append(c.Open, st.Cause)
		}
	}
	sort.Strings(c.Findings)
	sort.Strings(c.Open)
	return c
}

// checkConclusionLive is `meshtriage check ARGS -o json` against the lab.
func checkConclusionLive(t *testing.T, args []string) triageConclusion {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, meshtriageBinary(t), append(append([]string{"check"}, args...), "-o", "json")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) {
		t.Fatalf("check %v: %v\n%s", args, err, stderr.String())
	}
	var rep struct {
		Findings   []struct{ Cause string }
		Hypotheses []struct{ Cause string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var c triageConclusion
	for _, f := range rep.Findings {
		c.Findings = append(c.Findings, f.Cause)
	}
	for _, h := range rep.Hypotheses {
		c.Open = append(c.Open, h.Cause)
	}
	sort.Strings(c.Findings)
	sort.Strings(c.Open)
	return c
}

// One triage against a real API server and istiod: the TUI binary, driven
// in tmux through the lab's kubeconfig with and without --from (the
// caller search on the live cluster), ends with the findings and open
// hypotheses check reports on the same target, and finds the scenario's
// cause (issue 26: without --from the TUI searched for no caller and
// reached no cause on gateway-vs-not-bound).
func TestTUILiveAgreesWithCheck(t *testing.T) {
	l := sharedLab(t)
	meshtriageBinary(t)
	for _, c := range []struct {
		name    string
		symptom int // the start option the on-call picks
	}{
		{"gateway-vs-not-bound", 3}, // an ingress gateway answers 404 NR
		// The two inputs of the data-plane rule: a caller without a
		// sidecar, and ambient pods without a waypoint.
		{"mtls-plaintext-to-strict", 0},
		{"ambient-hbone-networkpolicy", 0},
		{"subset-no-pods", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := loadScenario(t, c.name)
			applyShared(t, l, s)
			noFrom := *s
			noFrom.Target.Source = nil
			for _, v := range []struct {
				name string
				args []string
			}{
				{"from", targetArgs(s)},
				{"no-from", targetArgs(&noFrom)},
			} {
				t.Run(v.name, func(t *testing.T) {
					args := append([]string{"--kubeconfig", l.Kubeconfig}, v.args...)
					want := checkConclusionLive(t, args)
					got := tuiConclusion(t, args, c.symptom)
					t.Logf("%+v", got)
					if !reflect.DeepEqual(got, want) {
						t.Errorf("the TUI's record concludes %+v\ncheck reports %+v", got, want)
					}
					for _, cause := range s.Expect {
						found := false
						for _, f := range got.Findings {
							found = found || f == cause
						}
						if !found {
							t.Errorf("the TUI did not find %s: %+v", cause, got)
						}
					}
				})
			}
		})
	}
}
