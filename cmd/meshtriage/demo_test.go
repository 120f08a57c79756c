package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

func runDemoCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	code := execute(streams, args)
	return code, out.String(), errOut.String()
}

// Without a terminal, `demo` lists every scenario and says how to open one
// instead of prompting into a pipe.
func TestDemoListsScenarios(t *testing.T) {
	code, out, errOut := runDemoCLI(t, "", "demo")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	names, _ := recorded.Names(assets.FS)
	for _, n := range names {
		if !strings.Contains(out, n) {
			t.Errorf("list lacks %s:\n%s", n, out)
		}
	}
	if !strings.Contains(out, "meshtriage demo startup-race") {
		t.Errorf("no hint how to open one:\n%s", out)
	}
	if strings.Contains(out, "Scenario [") {
		t.Errorf("prompted without a terminal:\n%s", out)
	}
}

// Without a terminal, `demo NAME` runs the unattended triage and exits as
// check does: 3 with a finding, 0 without.
func TestDemoUnattended(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runDemoCLI(t, "", "demo", "port-mismatch", "--log", filepath.Join(dir, "pm.jsonl"))
	if code != exitFindings || !strings.Contains(out, "service.port-mismatch") || !strings.Contains(errOut, filepath.Join(dir, "pm.jsonl")) {
		t.Errorf("port-mismatch: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = runDemoCLI(t, "", "demo", "healthy", "--log", filepath.Join(dir, "h.jsonl"))
	if code != exitOK || !strings.Contains(out, "no finding") {
		t.Errorf("healthy: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, _, errOut = runDemoCLI(t, "", "demo", "no-such-incident")
	if code != exitTriage || !strings.Contains(errOut, "startup-race") {
		t.Errorf("unknown scenario: exit %d, stderr %q (want the valid names)", code, errOut)
	}
}
