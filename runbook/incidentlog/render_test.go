package incidentlog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

// representativeSession is a guided triage of a DestinationRule that turned
// mTLS off toward a STRICT upstream, with everything a record must show: a
// symptom, passing, failing and unreadable checks, an undecidable rule, an
// engine branch to a cause, notes, verdicts, a fix, a change and its undo,
// verification, and the end.
func representativeSession() []runbook.Event {
	at := func(min, sec int) time.Time { return time.Date(2026, 12, 2, 3, 4+min, sec, 0, time.UTC) }
	ev := func(t time.Time, kind runbook.EventKind) runbook.Event {
		return runbook.Event{Time: t, Kind: kind, Session: "3f9a0c12"}
	}
	target := cluster.Target{Namespace: "shop", Service: "checkout", Port: 8080, Source: &cluster.PodRef{Namespace: "shop", Name: "web-7d9c"}}
	var out []runbook.Event
	add := func(e runbook.Event) { out = append(out, e) }

	e := ev(at(0, 1), runbook.EventSessionStarted)
	e.Started = &runbook.SessionStarted{User: "alice", KubeContext: "prod-eu", Server: "https://10.0.0.1:6443",
		ServerVersion: "v1.31.2", Target: target, Runbook: "envoy-503", Symptom: "upstream-connect-error",
		Mode: "guided", Tool: "v0.1.0"}
	add(e)
	e = ev(at(0, 2), runbook.EventBranchTaken)
	e.Branch = &runbook.BranchTaken{From: runbook.StartNode, To: "target", ChosenBy: runbook.ChosenByUser,
		Reason: "upstream connect error or disconnect/reset before headers"}
	add(e)
	e = ev(at(0, 3), runbook.EventProbeRan)
	e.Probe = &runbook.ProbeRan{Step: "target", Probe: "target", Status: probes.StatusPass,
		Summary:  "Service shop/checkout selects 3 pods, all with istio-proxy",
		Facts:    probes.Facts{"target_pods_selected": 3, "target_pods_with_sidecar": 3},
		Evidence: probes.Evidence{Columns: []string{"pod", "ready", "sidecar"}, Rows: [][]string{{"checkout-5f8d-abc", "2/2", "yes"}, {"checkout-5f8d-def", "2/2", "yes"}, {"checkout-5f8d-ghi", "2/2", "yes"}}},
		Commands: []string{"kubectl get svc checkout -n shop -o yaml", "kubectl get pods -n shop -l app=checkout"},
		Causes:   []string{"service.no-selector-match", "service.port-mismatch"}, DurationMS: 142}
	add(e)
	e = ev(at(0, 20), runbook.EventBranchTaken)
	e.Branch = &runbook.BranchTaken{From: "target", To: "access-log", ChosenBy: runbook.ChosenByEngine,
		Reason: "3 pods selected", When: "target_pods_selected > 0"}
	add(e)
	e = ev(at(1, 5), runbook.EventProbeRan)
	e.Probe = &runbook.ProbeRan{Step: "access-log", Probe: "access-log", Status: probes.StatusFail,
		Summary: "40 of 52 requests got 503 UF: TLS_error ... WRONG_VERSION_NUMBER",
		Facts: probes.Facts{"log_503": 40, "log_flag_uf": 40, "log_flag_uo": 0,
			"log_transport_failures": []string{"TLS_error:|268435703:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER"}},
		Evidence: probes.Evidence{Columns: []string{"flag", "count", "example"}, Rows: [][]string{{"UF", "40", "upstream_reset_before_response_started{connection_failure}"}},
			Raw: `[2026-12-02T03:01:12.345Z] "GET /api/cart HTTP/1.1" 503 UF upstream_reset_before_response_started{connection_failure} - "TLS_error:|268435703:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER" 0 91 2 - "-" "Mozilla/5.0" "Authorization: Bearer sk-live-a1b2c3" "checkout:8080" "10.4.1.7:8080" outbound|8080||checkout.shop.svc.cluster.local - 10.96.12.4:8080 10.4.0.9:51234 - default` + "\n" +
				"```not a fence```\n"},
		Commands: []string{"kubectl logs -n shop web-7d9c -c istio-proxy --since=15m"},
		Causes:   []string{"circuit-breaker.overflow", "upstream.idle-reset"}, DurationMS: 1830}
	add(e)
	e = ev(at(1, 30), runbook.EventProbeRan)
	e.Probe = &runbook.ProbeRan{Step: "clusters", Probe: "envoy-clusters", Status: probes.StatusError,
		Summary: `forbidden: cannot port-forward to shop/web-7d9c (RBAC: User "alice" cannot create resource "pods/portforward" in API group "" in the namespace "shop")`,
		Causes:  []string{"outlier.all-ejected", "dr.subset-no-pods"}, DurationMS: 95}
	add(e)
	e = ev(at(1, 31), runbook.EventRuleSkipped)
	e.Skipped = &runbook.RuleSkipped{Step: "clusters", When: "envoy_hosts_healthy == 0", Unknown: []string{"envoy_hosts_healthy"},
		Why: "rule skipped: envoy_hosts_healthy unknown (envoy-clusters: error: forbidden)"}
	add(e)
	e = ev(at(2, 0), runbook.EventProbeRan)
	e.Probe = &runbook.ProbeRan{Step: "mtls", Probe: "mtls", Status: probes.StatusFail,
		Summary:  "DestinationRule shop/checkout sets tls DISABLE; PeerAuthentication shop/default is STRICT",
		Facts:    probes.Facts{"mtls_dr_mode": "DISABLE", "mtls_peer_mode": "STRICT"},
		Evidence: probes.Evidence{Columns: []string{"object", "mode"}, Rows: [][]string{{"DestinationRule shop/checkout", "DISABLE"}, {"PeerAuthentication shop/default", "STRICT"}}},
		Causes:   []string{"mtls.plaintext-to-strict", "mtls.origination-conflict", "sidecar.missing-upstream"}, DurationMS: 210}
	add(e)
	e = ev(at(2, 1), runbook.EventBranchTaken)
	e.Branch = &runbook.BranchTaken{From: "mtls", To: "mtls.plaintext-to-strict", IsCause: true, ChosenBy: runbook.ChosenByEngine,
		Reason: "client sends plaintext (DISABLE) to a STRICT upstream", When: `mtls_dr_mode == "DISABLE" && mtls_peer_mode == "STRICT"`}
	add(e)
	e = ev(at(3, 10), runbook.EventNote)
	e.Note = &runbook.Note{Step: "mtls", Text: "DR changed at 02:50 by the payments deploy (#ops-channel).\nTicket INC-4411; <b>not</b> html."}
	add(e)
	e = ev(at(3, 40), runbook.EventHypothesis)
	e.Hypothesis = &runbook.Hypothesis{Cause: "circuit-breaker.overflow", Verdict: runbook.VerdictRuledOut, Why: "no UO flags in the access log"}
	add(e)
	e = ev(at(4, 0), runbook.EventHypothesis)
	e.Hypothesis = &runbook.Hypothesis{Cause: "mtls.plaintext-to-strict", Verdict: runbook.VerdictConfirmed, Why: "the DR change at 02:50 matches the first 503s"}
	add(e)
	e = ev(at(4, 30), runbook.EventFixChosen)
	e.Fix = &runbook.FixChosen{Cause: "mtls.plaintext-to-strict", Fix: "dr-istio-mutual", Text: "Set the DestinationRule's tls mode to ISTIO_MUTUAL"}
	add(e)
	e = ev(at(5, 0), runbook.EventAction)
	e.Action = &runbook.Action{Name: "envoy-debug-logging", Target: "pod/web-7d9c -n shop",
		Done: "connection and http loggers at debug for 60 s", Undo: "kubectl exec -n shop web-7d9c -c istio-proxy -- pilot-agent request POST 'logging?level=info'",
		Output: "[debug][http] [C12][S3] request headers complete (end_stream=true):\n':authority', 'checkout:8080'\n'authorization', 'Bearer sk-live-a1b2c3'\n[debug][connection] [C13] TLS error: WRONG_VERSION_NUMBER"}
	add(e)
	e = ev(at(6, 0), runbook.EventAction)
	e.Action = &runbook.Action{Name: "envoy-debug-logging", Target: "pod/web-7d9c -n shop", Done: "loggers back at info", Reverted: true}
	add(e)
	e = ev(at(9, 0), runbook.EventAction)
	e.Action = &runbook.Action{Name: "apply-destinationrule", Target: "destinationrule/checkout -n shop",
		Done: "tls.mode DISABLE -> ISTIO_MUTUAL", Undo: "kubectl apply -f checkout-dr.before.yaml"}
	add(e)
	e = ev(at(10, 0), runbook.EventProbeRan)
	e.Probe = &runbook.ProbeRan{Step: "mtls", Probe: "mtls", Status: probes.StatusPass, Rerun: true,
		Summary: "DestinationRule shop/checkout sets tls ISTIO_MUTUAL; PeerAuthentication shop/default is STRICT",
		Facts:   probes.Facts{"mtls_dr_mode": "ISTIO_MUTUAL", "mtls_peer_mode": "STRICT"},
		Causes:  []string{"mtls.plaintext-to-strict", "mtls.origination-conflict", "sidecar.missing-upstream"}, DurationMS: 180}
	add(e)
	e = ev(at(10, 1), runbook.EventVerification)
	e.Verification = &runbook.Verification{Cause: "mtls.plaintext-to-strict", Probe: "mtls", Expect: `mtls_dr_mode != "DISABLE"`,
		Passed: true, Status: probes.StatusPass, Detail: "mtls_dr_mode=ISTIO_MUTUAL", Describe: "the client no longer sends plaintext"}
	add(e)
	e = ev(at(10, 2), runbook.EventVerification)
	e.Verification = &runbook.Verification{Cause: "mtls.plaintext-to-strict", Detail: "manual check",
		Describe: "a request through the client sidecar returns 200",
		Command:  "kubectl exec -n shop web-7d9c -- curl -s -o /dev/null -w '%{http_code}' http://checkout:8080/healthz"}
	add(e)
	e = ev(at(12, 30), runbook.EventSessionEnded)
	e.Ended = &runbook.SessionEnded{Findings: []string{"mtls.plaintext-to-strict"}, Reason: "completed"}
	add(e)
	return out
}

// writeLog writes events through a Writer, as a session does.
func writeLog(t *testing.T, events []runbook.Event) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName(events[0].Time, events[0].Session))
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func render(t *testing.T, events []runbook.Event, problems []Problem, format string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(events, problems, &buf, format); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// events -> JSONL file -> Read -> Markdown.
func TestRenderSession(t *testing.T) {
	path := writeLog(t, representativeSession())
	events, problems := readFile(t, path)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	md := render(t, events, problems, FormatMarkdown)
	if strings.Contains(md, "sk-live-a1b2c3") {
		t.Fatal("the bearer token reached the record")
	}
	golden.RequireEqual(t, md)
}

// The laptop died while writing the verification: the record says what it
// has and that the log is incomplete.
func TestRenderTruncatedLog(t *testing.T) {
	path := writeLog(t, representativeSession())
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.Index(data, []byte(`"kind":"verification"`))
	if cut < 0 {
		t.Fatal("no verification event in the log")
	}
	events, problems := Read(bytes.NewReader(data[:cut+40]))
	if len(problems) != 1 || problems[0].String() != "line 18: truncated, skipped" {
		t.Fatalf("problems = %v", problems)
	}
	golden.RequireEqual(t, render(t, events, problems, FormatMarkdown))
}

func TestRenderJSON(t *testing.T) {
	all := representativeSession()
	path := writeLog(t, all[:2])
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte(`{"ts":"2026-12-02T03:04:03Z","kind":"probe_ran","sess`)...)
	events, problems := Read(bytes.NewReader(data))
	out := render(t, events, problems, FormatJSON)
	golden.RequireEqual(t, out)

	var doc struct {
		Events   []runbook.Event `json:"events"`
		Problems []Problem       `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Events) != 2 || doc.Events[1].Branch.To != "target" || len(doc.Problems) != 1 || doc.Problems[0].Line != 3 {
		t.Errorf("json round trip: %+v", doc)
	}
}

func TestRenderEmptyAndUnknown(t *testing.T) {
	if err := Render(nil, nil, &bytes.Buffer{}, "html"); err == nil {
		t.Error("unknown format accepted")
	}
	if got := render(t, nil, nil, FormatJSON); got != "{\n  \"events\": [],\n  \"problems\": []\n}\n" {
		t.Errorf("empty json = %q", got)
	}
	// A log written by a newer meshtriage: its event is listed, not dropped.
	md := render(t, []runbook.Event{{Time: t0, Kind: "probe_cancelled", Session: "x"}}, nil, FormatMarkdown)
	for _, want := range []string{"unknown target", "`probe_cancelled` event", "no session_started event"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
}

func TestMarkdownQuoting(t *testing.T) {
	if got := code("a `b` c"); got != "``a `b` c``" {
		t.Errorf("code = %s", got)
	}
	if got := code("`x`"); got != "`` `x` ``" {
		t.Errorf("code = %s", got)
	}
	if got := fence("a\n```\nb", "text"); !strings.HasPrefix(got, "````text\n") || !strings.HasSuffix(got, "\n````\n") {
		t.Errorf("fence = %q", got)
	}
	if got := cell("outbound|8080||checkout <x>\nnext"); got != `outbound\|8080\|\|checkout &lt;x> next` {
		t.Errorf("cell = %s", got)
	}
	raw := strings.Repeat("line\n", maxRawLines+50)
	short, note := truncate(raw)
	if strings.Count(short, "\n") != maxRawLines-1 || note != "50 more lines in the JSON log." {
		t.Errorf("truncate: %d lines, note %q", strings.Count(short, "\n")+1, note)
	}
}
