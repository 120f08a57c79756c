package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/meshtriage/meshtriage/runbook/triage"
)

// triageInput is one input the CLI and the TUI are held to: a scenario
// with its caller (--from), the same scenario without (the caller
// search), or manifests alone.
type triageInput struct {
	name string
	args []string
}

// manifestsOnly is the input issue 26 met: the ambient scenario's objects
// without their logs and Envoy output, and no caller named.
var manifestsOnly = triageInput{
	name: "ambient-hbone-networkpolicy/manifests-only",
	args: []string{"--manifests", filepath.Join("..", "..", "assets", "scenarios", "ambient-hbone-networkpolicy", "manifests"), "-n", "shop", "svc/orders"},
}

// triageInputs are every embedded scenario with and without --from, and
// the manifests-only input.
func triageInputs(t *testing.T) []triageInput {
	t.Helper()
	var out []triageInput
	for _, name := range scenarioNames(t) {
		src, err := triage.Scenario(name)
		if err != nil {
			t.Fatal(err)
		}
		tg := *src.Target
		out = append(out, triageInput{name: name + "/from", args: []string{"--scenario", name}})
		noFrom := []string{"--scenario", name, "-n", tg.Namespace, "svc/" + tg.Service}
		if tg.Port != 0 {
			noFrom = append(noFrom, "--port", fmt.Sprint(tg.Port))
		}
		out = append(out, triageInput{name: name + "/no-from", args: noFrom})
	}
	return append(out, manifestsOnly)
}

// notPlaceholders are the words of the reports that look like placeholders
// and are none: the syntax of a flag the on-call is told to give (no value
// the tool could have read: the caller is what it lacks), the Markdown
// record's <details> blocks, and ztunnel's own message quoted as it is
// logged.
var notPlaceholders = regexp.MustCompile(`--from (NAMESPACE/)?pod/NAME|svc/NAME|</?(details|summary)>|"explicitly denied by: NS/NAME"`)

// runCLI runs meshtriage with args in process: its exit code and output.
func runCLI(t *testing.T, args ...string) checkRun {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return checkRun{code, out.String(), errOut.String()}
}

// Every surface the on-call reads a command from keeps no placeholder for
// a value the tool read: check's text and Markdown reports (steps,
// findings, open hypotheses and what settles them), the incident log
// rendered with its appendix (every step's "by hand" commands), and the
// TUI's detail pane for every step it ran and every open hypothesis. On
// every scenario with and without --from, and on manifests alone.
//
// And no surface offers a command into the istio-proxy of a pod without
// one (issue 26: kubectl exec into report-cron, which has no sidecar).
func TestNoPlaceholderOnAnySurface(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	for _, in := range triageInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			surfaces := map[string]string{}
			logPath := filepath.Join(t.TempDir(), "incident.jsonl")
			for _, format := range []string{"text", "md"} {
				args := append([]string{"check", "--metrics-window", "10ms", "-o", format}, in.args...)
				if format == "text" {
					args = append(args, "--log", logPath)
				}
				r := runCLI(t, args...)
				if r.code != exitOK && r.code != exitFindings {
					t.Fatalf("check %v: exit %d\n%s", args, r.code, r.stderr)
				}
				surfaces["check -o "+format] = r.stdout
				surfaces["check -o "+format+" (stderr)"] = r.stderr
			}
			r := runCLI(t, "log", "render", "--full", logPath)
			if r.code != exitOK {
				t.Fatalf("log render --full: exit %d\n%s", r.code, r.stderr)
			}
			surfaces["log render --full"] = r.stdout
			for k, v := range tuiSurfaces(t, in) {
				surfaces[k] = v
			}
			checkProxyCommands(t, in, surfaces)
			seen := map[string]bool{}
			for where, text := range surfaces {
				for _, line := range strings.Split(text, "\n") {
					for _, l := range placeholdersIn(notPlaceholders.ReplaceAllString(line, "")) {
						if !seen[l] {
							seen[l] = true
							t.Errorf("%s: placeholder %q left in %q", where, l, strings.TrimSpace(line))
						}
					}
				}
			}
		})
	}
}

// proxyCommand is a command into a named pod's istio-proxy: an exec (Envoy
// admin through pilot-agent) or a log read.
var proxyCommand = regexp.MustCompile(`kubectl (?:-n (\S+) )?(exec|logs) (?:-n (\S+) )?([a-z0-9][-a-z0-9.]*) -c istio-proxy\b`)

// checkProxyCommands: no surface offers an exec into the istio-proxy of a
// pod that has none (a caller outside the mesh, a pod in ambient), and
// what settles an open hypothesis reads no log of one either.
func checkProxyCommands(t *testing.T, in triageInput, surfaces map[string]string) {
	t.Helper()
	sidecar := podsWithSidecar(t, in)
	seen := map[string]bool{}
	for where, text := range surfaces {
		for _, m := range proxyCommand.FindAllStringSubmatch(text, -1) {
			if m[2] == "logs" && !strings.HasPrefix(where, "TUI hypothesis") {
				continue
			}
			m = []string{m[0], m[1], m[3], m[4]}
			ns := m[1] + m[2]
			pod := ns + "/" + m[3]
			has, known := sidecar[pod]
			if known && !has && !seen[pod] {
				seen[pod] = true
				t.Errorf("%s: %q goes into the istio-proxy of %s, which has none", where, m[0], pod)
			}
		}
	}
}

// podsWithSidecar are the input's pods, by namespace/name, and whether
// each carries an istio-proxy (a container, or a native sidecar).
func podsWithSidecar(t *testing.T, in triageInput) map[string]bool {
	t.Helper()
	dir := ""
	for i, a := range in.args {
		switch {
		case a == "--scenario":
			dir = filepath.Join("..", "..", "assets", "scenarios", in.args[i+1], "manifests")
		case a == "--manifests":
			dir = in.args[i+1]
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	out := map[string]bool{}
	for _, d := range docsOf(t, files...) {
		var pod struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Spec     struct{ Containers, InitContainers []struct{ Name string } }
		}
		if err := json.Unmarshal(d, &pod); err != nil || pod.Kind != "Pod" {
			continue
		}
		has := false
		for _, c := range append(pod.Spec.Containers, pod.Spec.InitContainers...) {
			has = has || c.Name == "istio-proxy"
		}
		out[pod.Metadata.Namespace+"/"+pod.Metadata.Name] = has
	}
	if len(out) == 0 {
		t.Fatalf("%s: no pod in %s", in.name, dir)
	}
	return out
}

// tuiSurfaces are the TUI's detail pane, as the guided triage of the input
// shows it once every step has run: each step's pane (its "By hand"
// commands) and each open hypothesis's (what would settle it).
func tuiSurfaces(t *testing.T, in triageInput) map[string]string {
	t.Helper()
	g := guidedTriage(t, in)
	defer g.tr.Close()
	out := map[string]string{}
	for _, st := range g.eng.Steps() {
		if pane, ok := g.stepPane(st.ID); ok {
			out["TUI detail · "+st.ID] = pane
		}
	}
	for _, u := range g.eng.Undecided() {
		out["TUI hypothesis · "+u.Cause] = g.hypothesisPane(u)
	}
	return out
}
