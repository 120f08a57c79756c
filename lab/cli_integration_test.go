//go:build integration

package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// meshtriageBinary builds cmd/meshtriage once per test binary.
func meshtriageBinary(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		root, err := ModuleRoot(ctx)
		if err != nil {
			cliErr = err
			return
		}
		dir, err := os.MkdirTemp("", "meshtriage-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "meshtriage")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", cliPath, "./cmd/meshtriage")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			cliErr = errors.New("go build ./cmd/meshtriage: " + err.Error() + "\n" + string(out))
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

// runMeshtriage runs the binary with args and -o json: its stdout,
// stderr and exit code.
func runMeshtriage(t *testing.T, args ...string) ([]byte, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, meshtriageBinary(t), append(args, "-o", "json")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		return stdout.Bytes(), stderr.String(), exitErr.ExitCode()
	case err != nil:
		t.Fatalf("meshtriage %v: %v", args, err)
	}
	return stdout.Bytes(), stderr.String(), 0
}

// cliCheck runs `meshtriage check -o json` and returns the cause IDs of its
// findings and its exit code.
func cliCheck(t *testing.T, args ...string) ([]string, int, string) {
	t.Helper()
	stdout, stderr, code := runMeshtriage(t, args...)
	if code == 1 {
		return nil, code, stderr
	}
	var rep struct {
		Findings []struct {
			Cause string `json:"cause"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("meshtriage %v: exit %d, output is not the JSON report: %v\n%s\n%s", args, code, err, stdout, stderr)
	}
	causes := []string{}
	for _, f := range rep.Findings {
		causes = append(causes, f.Cause)
	}
	sort.Strings(causes)
	return causes, code, stderr
}

// targetArgs are the check arguments that name s's target on a live cluster.
func targetArgs(s *recorded.Scenario) []string {
	args := []string{"-n", s.Target.Namespace, "svc/" + s.Target.Service}
	if s.Target.Port != 0 {
		args = append(args, "--port", strconv.Itoa(int(s.Target.Port)))
	}
	if src := s.Target.Source; src != nil {
		args = append(args, "--from", src.Namespace+"/pod/"+src.Name)
	}
	if s.ControlPlaneNamespace != "" {
		args = append(args, "--istio-namespace", s.ControlPlaneNamespace)
	}
	return args
}

// `meshtriage check` itself, against the lab through its kubeconfig, reports
// the causes and exit code that `meshtriage check --scenario` does.
func TestCheckCommandLiveMatchesScenario(t *testing.T) {
	l := sharedLab(t)
	meshtriageBinary(t)
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			s := loadScenario(t, name)
			want, wantCode, wantErr := cliCheck(t, "check", "--scenario", name)
			applyShared(t, l, s)
			got, gotCode, gotErr := cliCheck(t, append([]string{"--kubeconfig", l.Kubeconfig, "check"}, targetArgs(s)...)...)
			if gotCode != wantCode || !slices.Equal(got, want) {
				t.Errorf("lab: exit %d causes %v (stderr %q)\nscenario: exit %d causes %v (stderr %q)", gotCode, got, gotErr, wantCode, want, wantErr)
			}
			// Without --from (the on-call often does not know the caller),
			// the caller search on the real API server (a status.podIP field
			// selector, the inbound logs the kubelet serves) leads to the
			// same causes.
			noFrom := *s
			noFrom.Target.Source = nil
			got, gotCode, gotErr = cliCheck(t, append([]string{"--kubeconfig", l.Kubeconfig, "check"}, targetArgs(&noFrom)...)...)
			if gotCode != wantCode || !slices.Equal(got, want) {
				t.Errorf("lab without --from: exit %d causes %v (stderr %q)\nscenario: exit %d causes %v", gotCode, got, gotErr, wantCode, want)
			}
		})
	}
}
