package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestMain lets a test run meshtriage as a child process: the test binary
// itself, with MESHTRIAGE_AS_CLI set, is the CLI.
func TestMain(m *testing.M) {
	if args := os.Getenv("MESHTRIAGE_AS_CLI"); args != "" {
		streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
		os.Exit(execute(streams, strings.Split(args, "\x1f")))
	}
	os.Exit(m.Run())
}

// cli starts meshtriage with args as a child process.
func cli(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "MESHTRIAGE_AS_CLI="+strings.Join(args, "\x1f"), "HOME="+t.TempDir(), "KUBECONFIG=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, &errOut
}

// Ctrl-C during check, as kubectl and shells do: exit 130, and the report
// of what had finished, marked interrupted, in the format asked for. The
// metrics step (a long sampling window) is the one cut short.
func TestCheckInterruptedPrintsWhatFinished(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "incident.jsonl")
			cmd, out, errOut := cli(t, "check", "--scenario", "healthy", "--metrics-window", "20s", "-o", format, "--log", logPath)
			// Interrupted once the triage has started (the handler is in
			// place before: session_started opens the log), however long
			// the loaded machine took to get there, and the target step,
			// a read of recorded objects, has had a second.
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if data, _ := os.ReadFile(logPath); bytes.Contains(data, []byte(`"kind":"session_started"`)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the triage never started\nstderr:\n%s", errOut)
				}
			}
			time.Sleep(time.Second)
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
				t.Fatalf("exit %v, want %d\nstdout:\n%s\nstderr:\n%s", err, exitInterrupted, out, errOut)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("the interrupt took %v to end the run", time.Since(start))
			}
			if !strings.Contains(errOut.String(), "interrupted") {
				t.Errorf("stderr %q does not say interrupted", errOut)
			}
			if format == "text" {
				for _, want := range []string{"INTERRUPTED", "target", "interrupted before it reported"} {
					if !strings.Contains(out.String(), want) {
						t.Errorf("report lacks %q:\n%s", want, out)
					}
				}
				return
			}
			var rep struct {
				Interrupted bool `json:"interrupted"`
				Steps       []struct {
					ID, Status, Summary string
				} `json:"steps"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			status := map[string]string{}
			for _, st := range rep.Steps {
				status[st.ID] = st.Status + ": " + st.Summary
			}
			if !rep.Interrupted || !strings.HasPrefix(status["target"], "pass") || !strings.Contains(status["metrics"], "interrupted before it reported") {
				t.Errorf("interrupted %v, steps %v", rep.Interrupted, status)
			}
		})
	}
}
