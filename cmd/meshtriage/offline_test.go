package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
)

// runWith is execute with stdin, as a pipe gives it.
func runWith(t *testing.T, stdin string, args ...string) checkRun {
	t.Helper()
	var out, errOut bytes.Buffer
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	code := execute(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, args)
	return checkRun{code, out.String(), errOut.String()}
}

// jsonReport is what the offline tests read of check's JSON report.
type jsonReport struct {
	Steps []struct {
		ID     string         `json:"id"`
		Status string         `json:"status"`
		Facts  map[string]any `json:"facts"`
	} `json:"steps"`
	Findings []struct {
		Cause string `json:"cause"`
	} `json:"findings"`
}

func parseReport(t *testing.T, r checkRun) jsonReport {
	t.Helper()
	var rep jsonReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("exit %d, stdout is not the JSON report: %v\n%s\nstderr:\n%s", r.code, err, r.stdout, r.stderr)
	}
	return rep
}

func (r jsonReport) causes() []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Cause)
	}
	return out
}

func (r jsonReport) facts(step string) map[string]any {
	for _, s := range r.Steps {
		if s.ID == step {
			return s.Facts
		}
	}
	return nil
}

// A VirtualService from a repository names no namespace, as `kubectl
// apply -n shop` takes it. It used to be loaded into no namespace and never
// seen: "no finding", exit 0, while every request on the route gets 503 NC.
func TestCheckManifestsGiveNamespacelessObjectsTheTargetNamespace(t *testing.T) {
	r := runCheck(t, "-n", "shop", "svc/web", "--manifests", "testdata/check/route-without-namespace", "-o", "json")
	if r.code != exitFindings {
		t.Fatalf("exit %d, want 3 (a finding)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := parseReport(t, r).causes(); !slices.Equal(got, []string{"vs.subset-undefined"}) {
		t.Errorf("findings = %v, want vs.subset-undefined", got)
	}
}

// A namespace dump carries no Namespace object, and one document is of a
// kind meshtriage does not read: the rest is triaged, the skipped document
// named on stderr in one line, and the namespace's injection setting is
// unknown, not "none".
func TestCheckManifestsAsUsersHaveThem(t *testing.T) {
	dump, err := os.ReadFile("testdata/check/namespaceless/dump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := runWith(t, string(dump), "check", "-n", "shop", "svc/web", "-f", "-", "-f", "testdata/check/namespaceless/repo", "-o", "json")
	if r.code != exitFindings {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rep := parseReport(t, r)
	if got := rep.causes(); !slices.Equal(got, []string{"vs.subset-undefined"}) {
		t.Errorf("findings = %v, want vs.subset-undefined", got)
	}
	skipped := filepath.Join("testdata", "check", "namespaceless", "repo", "routing.yaml") + " document 2 (cert-manager.io/v1 Certificate)"
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "meshtriage: skipped "+skipped) {
		t.Errorf("stderr = %q, want one line naming %s", r.stderr, skipped)
	}
	target := rep.facts("target")
	if target == nil || target["target_service_found"] != true {
		t.Fatalf("target facts = %v", target)
	}
	if inj, known := target["target_namespace_injection"]; known {
		t.Errorf("target_namespace_injection = %v from a dump without the Namespace: must be unknown", inj)
	}
}

func TestCheckOfflineSourcesRefuseBadInput(t *testing.T) {
	bad := []struct {
		name string
		args []string
		want string
	}{
		{"a file that is no manifest", []string{"-n", "shop", "svc/web", "-f", "check_test.go"}, "no Kubernetes or Istio object in check_test.go"},
		{"missing file", []string{"-n", "shop", "svc/web", "-f", "testdata/nope.yaml"}, "nope.yaml"},
		{"two sources", []string{"--recording", "x.tar.gz", "--scenario", "healthy"}, "--recording and --scenario are different sources: give one"},
		{"recording is no archive", []string{"--recording", "check_test.go"}, "not a .tar.gz"},
		{"missing recording", []string{"--recording", "testdata/nope.tar.gz"}, "nope.tar.gz"},
		{"bug report is no archive", []string{"-n", "shop", "svc/web", "--bug-report", "check_test.go"}, "not a .tar.gz"},
		{"bug report without target", []string{"--bug-report", "check_test.go"}, "need exactly one target"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := runCheck(t, c.args...)
			if r.code != exitTriage || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 || r.stdout != "" {
				t.Errorf("exit %d (want 1), stderr %q (want one line with %q), stdout %q", r.code, r.stderr, c.want, r.stdout)
			}
		})
	}
}

// writeRecording records a triage of the embedded scenario name (in
// memory, as a capture does of a live cluster) and writes it to dir.
func writeRecording(t *testing.T, name, dir string, withHeader bool) *recorded.Scenario {
	t.Helper()
	s, err := recorded.Load(assets.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	// A capture waited this long between the two samples of the counters.
	s.SamplesApart = 300 * time.Millisecond
	files, err := s.Files(incidentlog.Redact)
	if err != nil {
		t.Fatal(err)
	}
	if !withHeader {
		delete(files, recorded.HeaderFile)
	}
	if err := recorded.WriteDir(dir, files); err != nil {
		t.Fatal(err)
	}
	return s
}

// check --recording triages a recording to what the embedded scenario it
// holds is diagnosed to; one assembled by hand (no scenario.yaml) needs
// the target on the command line.
func TestCheckRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	s := writeRecording(t, "startup-race", dir, true)
	want := parseReport(t, runCheck(t, "--scenario", "startup-race", "-o", "json")).causes()
	r := runCheck(t, "--recording", dir, "-o", "json")
	rep := parseReport(t, r)
	if got := rep.causes(); r.code != exitFindings || !slices.Equal(got, want) {
		t.Errorf("--recording: exit %d findings %v, want 3 and %v\nstderr: %s", r.code, got, want, r.stderr)
	}
	// The replay samples the counters as far apart as the capture did, so
	// its rates are the capture's.
	if w, _ := rep.facts("metrics")["metrics_window_s"].(float64); w < 0.3 || w > 2 {
		t.Errorf("metrics window %v s, want the recording's 0.3 s", w)
	}

	byHand := filepath.Join(t.TempDir(), "by-hand")
	writeRecording(t, "startup-race", byHand, false)
	if r := runCheck(t, "--recording", byHand); r.code != exitTriage || !strings.Contains(r.stderr, "names no target") {
		t.Errorf("no target anywhere: exit %d, stderr %q", r.code, r.stderr)
	}
	args := []string{"--recording", byHand, "-n", s.Target.Namespace, "svc/" + s.Target.Service, "--from", "pod/" + s.Target.Source.Name, "-o", "json"}
	r = runCheck(t, args...)
	if got := parseReport(t, r).causes(); !slices.Equal(got, want) {
		t.Errorf("recording by hand: exit %d findings %v, want %v\nstderr: %s", r.code, got, want, r.stderr)
	}
}

// demo --recording, without a terminal, prints check's report of it and
// writes an incident log that names the recording, so that `log resume`
// reopens the recording and never the cluster it was taken from.
func TestDemoRecordingAndResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	writeRecording(t, "idle-timeout-uc", dir, true)
	logPath := filepath.Join(t.TempDir(), "incident.jsonl")
	r := runWith(t, "", "demo", "--recording", dir, "--log", logPath)
	if r.code != exitFindings || !strings.Contains(r.stdout, "upstream.idle-reset") {
		t.Fatalf("demo --recording: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, problems := incidentlog.Read(f)
	if len(problems) > 0 || len(events) == 0 || events[0].Started == nil {
		t.Fatalf("log: %d events, problems %v", len(events), problems)
	}
	if got := events[0].Started.Extra["recording"]; got != dir {
		t.Errorf("session_started extra recording = %q, want %q", got, dir)
	}
	// A kube context that exists nowhere: resuming must not try it.
	events[0].Started.KubeContext = "prod-that-must-not-be-contacted"
	g := &globalOptions{kube: live.NewConfigFlags(), streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	tr, err := prepareResume(t.Context(), g, logPath, events)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if !strings.Contains(tr.Source.Label, "recording") || tr.Source.Runner != nil {
		t.Errorf("resumed source %q (runner %v): want the recording", tr.Source.Label, tr.Source.Runner)
	}
	if r := runWith(t, "", "demo", "--recording", dir, "startup-race"); r.code != exitTriage || !strings.Contains(r.stderr, "not both") {
		t.Errorf("demo NAME --recording: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestCaptureRefusesBadOutput(t *testing.T) {
	exists := filepath.Join(t.TempDir(), "there.tar.gz")
	if err := os.WriteFile(exists, []byte("evidence"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		args []string
		want string
	}{
		{"no output", []string{"-n", "shop", "svc/web"}, "-o FILE.tar.gz"},
		{"not an archive name", []string{"-n", "shop", "svc/web", "-o", filepath.Join(t.TempDir(), "x.yaml")}, "written as FILE.tar.gz"},
		{"existing file", []string{"-n", "shop", "svc/web", "-o", exists}, "never replaces"},
		{"no such folder", []string{"-n", "shop", "svc/web", "-o", "/nonexistent/dir/x.tar.gz"}, "no folder"},
		{"no target", []string{"-o", filepath.Join(t.TempDir(), "x.tar.gz")}, "need exactly one target"},
		{"no cluster", []string{"-n", "shop", "svc/web", "-o", filepath.Join(t.TempDir(), "x.tar.gz")}, "no kubeconfig"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := runWith(t, "", append([]string{"capture"}, c.args...)...)
			if r.code != exitTriage || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 {
				t.Errorf("exit %d (want 1), stderr %q (want one line with %q)", r.code, r.stderr, c.want)
			}
		})
	}
	if b, err := os.ReadFile(exists); err != nil || string(b) != "evidence" {
		t.Errorf("the existing file changed: %q %v", b, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(exists))
	if len(entries) != 1 {
		t.Errorf("capture left files behind: %v", entries)
	}
}

// A dump with every Gateway API kind (GatewayClass, HTTPRoute, GRPCRoute,
// ReferenceGrant, TCPRoute, TLSRoute) triages: it used to exit 1 with "no
// kind is registered for the type v1.HTTPRoute in scheme". A kind the
// triage does not read is named once on stderr, however many documents of
// it there are.
func TestCheckManifestsOfAGatewayAPIDump(t *testing.T) {
	r := runWith(t, "", "check", "-f", filepath.Join("..", "..", "probes", "cluster", "manifests", "testdata", "gateway-api"),
		"-n", "shop", "svc/orders", "-o", "json")
	if r.code == 1 {
		t.Fatalf("exit 1 on a valid Gateway API dump:\n%s", r.stderr)
	}
	rep := parseReport(t, r)
	if rep.facts("target")["target_pods_selected"] != float64(1) {
		t.Errorf("target facts %v: the dump's pod is not read", rep.facts("target"))
	}
	seen := map[string]int{}
	for _, line := range strings.Split(r.stderr, "\n") {
		if _, kind, ok := strings.Cut(line, "("); ok && strings.Contains(line, "skipped") {
			kind, _, _ = strings.Cut(kind, ")")
			seen[kind]++
		}
	}
	for kind, n := range seen {
		if n > 1 {
			t.Errorf("%s named %d times on stderr:\n%s", kind, n, r.stderr)
		}
	}
}
