package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

type logCLIResult struct {
	code        int
	stdout, err string
}

func runLogCLI(t *testing.T, stdin string, args ...string) logCLIResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, args)
	return logCLIResult{code, out.String(), errOut.String()}
}

// writeTestLog records a short guided session through the incident-log
// writer, as a real session does.
func writeTestLog(t *testing.T) string {
	t.Helper()
	at := time.Date(2026, 12, 2, 3, 4, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), incidentlog.FileName(at, "c1"))
	w, err := incidentlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	target := cluster.Target{Namespace: "shop", Service: "checkout", Port: 8080}
	for _, ev := range []runbook.Event{
		{Time: at, Kind: runbook.EventSessionStarted, Started: &runbook.SessionStarted{User: "alice", KubeContext: "prod", Target: target, Runbook: "503", Mode: "guided"}},
		{Time: at.Add(time.Minute), Kind: runbook.EventProbeRan, Probe: &runbook.ProbeRan{Step: "target", Probe: "target", Status: probes.StatusFail,
			Summary: "Service shop/checkout selects no pods", Evidence: probes.Evidence{Raw: "selector app=checkout-v2\nAuthorization: Bearer leaked-token-123"}}},
		{Time: at.Add(2 * time.Minute), Kind: runbook.EventBranchTaken, Branch: &runbook.BranchTaken{From: "target", To: "service.no-selector-match", IsCause: true, ChosenBy: runbook.ChosenByEngine}},
		{Time: at.Add(3 * time.Minute), Kind: runbook.EventSessionEnded, Ended: &runbook.SessionEnded{Findings: []string{"service.no-selector-match"}, Reason: "completed"}},
	} {
		ev.Session = "c1"
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLogRenderMarkdown(t *testing.T) {
	path := writeTestLog(t)
	r := runLogCLI(t, "", "log", "render", path)
	if r.code != 0 || r.err != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.err)
	}
	for _, want := range []string{
		"# Incident record: svc/checkout -n shop port 8080 — 2026-12-02",
		"Ran `target`: **fail** — Service shop/checkout selects no pods",
		"### `service.no-selector-match`",
		"Authorization: [REDACTED]",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("missing %q in:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "leaked-token-123") {
		t.Error("the token reached the record")
	}
}

// The record is short; --full adds every event with its evidence.
func TestLogRenderFull(t *testing.T) {
	path := writeTestLog(t)
	short := runLogCLI(t, "", "log", "render", path)
	full := runLogCLI(t, "", "log", "render", "--full", path)
	if full.code != 0 || !strings.Contains(full.stdout, "## Appendix: every event, with its evidence") || strings.Contains(short.stdout, "## Appendix") {
		t.Fatalf("--full exit %d:\n%s", full.code, full.stdout)
	}
	if !strings.Contains(short.stdout, "meshtriage log render --full") {
		t.Errorf("the short record does not say where the evidence is:\n%s", short.stdout)
	}
	if strings.Contains(full.stdout, "leaked-token-123") {
		t.Error("the token reached the full record")
	}
}

func TestLogRenderJSONFromStdin(t *testing.T) {
	data, err := os.ReadFile(writeTestLog(t))
	if err != nil {
		t.Fatal(err)
	}
	r := runLogCLI(t, string(data), "log", "render", "-", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	var doc struct {
		Events   []runbook.Event       `json:"events"`
		Problems []incidentlog.Problem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if len(doc.Events) != 4 || doc.Events[1].Probe.Probe != "target" || doc.Problems == nil || len(doc.Problems) != 0 {
		t.Errorf("doc = %+v", doc)
	}
}

// A crash tore the last line: the record renders, stderr warns, exit 0.
func TestLogRenderTruncatedWarnsAndSucceeds(t *testing.T) {
	path := writeTestLog(t)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"ts":"2026-12-02T03:08:00Z","kind":"note","sess`)
	f.Close()
	r := runLogCLI(t, "", "log", "render", path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	if want := "meshtriage: warning: " + path + ": line 5: truncated, skipped\n"; r.err != want {
		t.Errorf("stderr = %q, want %q", r.err, want)
	}
	if !strings.Contains(r.stdout, "line 5: truncated, skipped") || !strings.Contains(r.stdout, "Session ended (completed)") {
		t.Errorf("record:\n%s", r.stdout)
	}
}

func TestLogRenderErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.jsonl")
	os.WriteFile(garbage, []byte("not json\n{also not\n"), 0o600)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	cases := []struct {
		name string
		args []string
		want string // the one-line error
	}{
		{"missing file", []string{"log", "render", filepath.Join(dir, "nope.jsonl")}, "meshtriage: cannot read incident log: open " + filepath.Join(dir, "nope.jsonl") + ": no such file or directory\n"},
		{"directory", []string{"log", "render", dir}, "is a directory, not an incident log"},
		{"empty", []string{"log", "render", empty}, "meshtriage: " + empty + " is empty: its session ended before anything was recorded"},
		{"garbage", []string{"log", "render", garbage}, garbage + " holds no incident log events\n"},
		{"format", []string{"log", "render", "-o", "html", empty}, "meshtriage: unknown output format \"html\" (one of md, json)\n"},
		{"no file", []string{"log", "render"}, "accepts 1 arg(s), received 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runLogCLI(t, "", tc.args...)
			if r.code != exitTriage {
				t.Errorf("exit %d, want %d", r.code, exitTriage)
			}
			if !strings.Contains(r.err, tc.want) {
				t.Errorf("stderr %q, want %q", r.err, tc.want)
			}
			lastLine := r.err[strings.LastIndex(strings.TrimSuffix(r.err, "\n"), "\n")+1:]
			if !strings.HasPrefix(lastLine, "meshtriage: ") || strings.Count(lastLine, "\n") != 1 {
				t.Errorf("the error is not one line: %q", r.err)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q", r.stdout)
			}
		})
	}
}

func TestLogPath(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	r := runLogCLI(t, "", "log", "path")
	if r.code != 0 || r.stdout != filepath.Join(state, "meshtriage")+"\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.err)
	}
}

func TestLogResumeNeedsATerminal(t *testing.T) {
	path := writeTestLog(t)
	r := runLogCLI(t, "", "log", "resume", path)
	if r.code != exitTriage || !strings.Contains(r.err, "resume opens the terminal UI and needs a terminal") || !strings.Contains(r.err, "log render "+path) {
		t.Errorf("exit %d, stderr %q", r.code, r.err)
	}
	if r := runLogCLI(t, "", "log", "resume", filepath.Join(t.TempDir(), "nope.jsonl")); r.code != exitTriage || !strings.Contains(r.err, "cannot read incident log") {
		t.Errorf("missing file: exit %d, stderr %q", r.code, r.err)
	}
}

// A demo session recorded, ended, then resumed: the rebuilt session has the
// recorded results and appends its new events to the same log.
func TestPrepareResumeOfADemoSession(t *testing.T) {
	src, err := triage.Scenario("healthy")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.jsonl")
	tr, err := triage.Open(context.Background(), src, *src.Target, triage.Options{Mode: runbook.ModeAuto, LogPath: path})
	if err != nil {
		t.Fatal(err)
	}
	sess := tr.Session
	if _, err := sess.Auto(context.Background()); err != nil {
		t.Fatal(err)
	}
	sess.End("quit")
	tr.Close()
	recorded := len(sess.Events())

	g := &globalOptions{streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	log, err := readLog(g, path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := prepareResume(context.Background(), g, path, log.events)
	if err != nil {
		t.Fatal(err)
	}
	if r.Session.ID() != sess.ID() {
		t.Errorf("resumed session %s, recorded %s", r.Session.ID(), sess.ID())
	}
	if r.Session.Mode() != runbook.ModeGuided {
		t.Errorf("an auto session resumes in the UI as %s", r.Session.Mode())
	}
	step := sess.Steps()[0].ID
	if r.Session.Ran(step) == 0 {
		t.Errorf("step %s's recorded run was not restored", step)
	}
	if !strings.Contains(r.Source.Label, "scenario healthy") {
		t.Errorf("context label %q", r.Source.Label)
	}
	r.Session.Note("", "resumed after the bridge call")
	r.Close()

	events, problems := readLogFile(t, path)
	if len(problems) > 0 || len(events) != recorded+2 {
		t.Fatalf("%d events (%v), want %d recorded + resumed + note", len(events), problems, recorded)
	}
	again, note := events[recorded], events[recorded+1]
	if again.Kind != runbook.EventSessionStarted || again.Session != sess.ID() || again.Started.Mode != string(runbook.ModeGuided) || again.Started.Target.String() != sess.Target().String() {
		t.Errorf("resume marker = %+v", again)
	}
	if note.Kind != runbook.EventNote || note.Session != sess.ID() {
		t.Errorf("appended event = %+v", note)
	}
	var md bytes.Buffer
	if err := incidentlog.Render(events, nil, &md, incidentlog.FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "Session resumed by") || !strings.Contains(md.String(), "resumed after the bridge call") {
		t.Errorf("record does not show the resume:\n%s", md.String())
	}
}

func TestPrepareResumeWithoutStart(t *testing.T) {
	g := &globalOptions{}
	history := []runbook.Event{{Kind: runbook.EventNote, Session: "x", Note: &runbook.Note{Text: "orphan"}}}
	if _, err := prepareResume(context.Background(), g, "x.jsonl", history); err == nil || !strings.Contains(err.Error(), "no session_started event") {
		t.Errorf("err = %v", err)
	}
}

func readLogFile(t *testing.T, path string) ([]runbook.Event, []incidentlog.Problem) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return incidentlog.Read(f)
}
