package incidentlog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

// Material a triage can pick up and that must never reach the log: each
// value below is a distinct secret the test greps the file for.
var (
	secretToken   = "sk-live-a1b2c3d4"
	secretCookie  = "sid=s3ss10n-c00k1e"
	secretAPIKey  = "ak-9f8e7d6c"
	secretPEMBody = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
	secretCert    = "MIIDUTCCAjmgAwIBAgIQb77iVMIpAGFcsfdOPS8XEzANBgkqhkiG9w0BAQsFADAY"
	secretInline  = "c2VjcmV0LWtleS1ieXRlcy1mb3ItdGVzdA=="
	secretKubeTok = "abcdef.0123456789abcdef"
	secretKeyData = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB"
	secretPass    = "hunter2-but-longer"
	secretExec    = "wJalrXUtnFEMIK7MDENGbPxRfiCY"
)

var allSecrets = []string{jwt, "eyJpc3Mi", secretToken, secretCookie, secretAPIKey, secretPEMBody, secretCert,
	secretInline, secretKubeTok, secretKeyData, secretPass, secretExec}

var leakyAccessLog = strings.Join([]string{
	`[2026-12-02T03:01:12.345Z] "GET /api/cart HTTP/1.1" 503 UF upstream_reset_before_response_started{connection_failure} - "-" 0 91 2 - "-" "curl/8.4" "Authorization: Bearer ` + secretToken + `" "checkout:8080" "10.4.1.7:8080" outbound|8080||checkout.shop.svc.cluster.local`,
	`{"start_time":"2026-12-02T03:01:13.001Z","method":"GET","path":"/api/cart","response_code":503,"response_flags":"UF","authorization":"Bearer ` + jwt + `","cookie":"` + secretCookie + `","x-api-key":"` + secretAPIKey + `"}`,
}, "\n")

var leakyConfigDump = `{"name":"default","tls_certificate":{` +
	`"certificate_chain":{"inline_string":"-----BEGIN CERTIFICATE-----\n` + secretCert + `\n-----END CERTIFICATE-----\n"},` +
	`"private_key":{"inline_bytes":"` + secretInline + `"}}}` + "\n" +
	"-----BEGIN PRIVATE KEY-----\n" + secretPEMBody + "\n-----END PRIVATE KEY-----"

var leakyKubeconfig = `apiVersion: v1
kind: Config
current-context: prod
users:
- name: admin
  user:
    client-key-data: ` + secretKeyData + `
    token: ` + secretKubeTok + `
    password: ` + secretPass + `
- name: eks
  user:
    exec:
      command: aws
      env:
      - name: AWS_SECRET_ACCESS_KEY
        value: ` + secretExec

// leakyRunner stands in for probes.Run: every probe returns a result whose
// summary, evidence, facts and commands carry credentials, as real access
// logs and config_dump fragments can.
func leakyRunner(_ context.Context, p probes.Probe, _ cluster.Cluster, _ cluster.Target) probes.Result {
	id := p.Meta().ID
	res := probes.Result{
		Probe: id, Status: probes.StatusFail, Duration: 120 * time.Millisecond,
		Summary: "503 UF, request carried Authorization: Bearer " + secretToken,
		Evidence: probes.Evidence{
			Columns: []string{"entry", "header"},
			Rows:    [][]string{{"1", "cookie: " + secretCookie}, {"2", "Bearer " + jwt}},
			Raw:     leakyAccessLog + "\n" + leakyConfigDump,
		},
		Facts:    probes.Facts{},
		Commands: []string{"kubectl --token=" + secretKubeTok + " logs -n shop web-7d9c -c istio-proxy"},
	}
	if id == "access-log" {
		res.Facts["log_details"] = []string{"upstream_reset_before_response_started{connection_failure}", "authorization: Bearer " + secretToken}
		res.Facts["log_transport_failures"] = []string{"TLS_error " + jwt}
		res.Facts["log_5xx"] = 2
		res.Facts["log_503"] = 2
		res.Facts["log_flag_uf"] = 2
	}
	return res
}

// A real session over the shipped 503 runbook writes its events through the
// Writer; no secret the probes saw may be in the file or in its rendering.
func TestSessionLogHoldsNoSecrets(t *testing.T) {
	g, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "session.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	clock := t0
	s, err := runbook.NewSession(runbook.Config{
		Graph: g, Probes: probes.ByID(), Sinks: []runbook.Sink{w}, Run: leakyRunner,
		Target: cluster.Target{Namespace: "shop", Service: "checkout", Port: 8080},
		User:   "alice", Mode: runbook.ModeGuided, SessionID: "flow",
		Clock: func() time.Time { clock = clock.Add(time.Second); return clock },
		Started: runbook.SessionStarted{KubeContext: "prod", Server: "https://admin:" + secretPass + "@10.0.0.1:6443",
			Extra: map[string]string{"token": secretKubeTok}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Start(g.Start.Options[0].ID); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := s.RunStep(ctx, s.Current()); err != nil {
			t.Fatal(err)
		}
		p := s.Proposal()
		if p.Next == "" {
			break
		}
		if err := s.Choose(p.Next, runbook.ChosenByEngine); err != nil {
			t.Fatal(err)
		}
	}
	s.Note(s.Current(), "kubeconfig I used:\n"+leakyKubeconfig)
	s.RunAll(ctx) // concurrent probes, one writer
	cause := g.Causes[0]
	if err := s.Hypothesis(cause.ID, runbook.VerdictConfirmed, "curl with Authorization: Bearer "+secretToken+" got 503"); err != nil {
		t.Fatal(err)
	}
	if err := s.ChooseFix(cause.ID, cause.Fixes[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, cause.ID); err != nil {
		t.Fatal(err)
	}
	s.End("completed")
	if err := s.SinkErr(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range allSecrets {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("the log holds %q", secret)
		}
	}
	events, problems := Read(bytes.NewReader(data))
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if want := len(s.Events()); len(events) != want {
		t.Fatalf("the log has %d events, the session emitted %d", len(events), want)
	}
	kinds := map[runbook.EventKind]int{}
	for _, ev := range events {
		kinds[ev.Kind]++
	}
	for _, k := range []runbook.EventKind{runbook.EventSessionStarted, runbook.EventProbeRan, runbook.EventBranchTaken,
		runbook.EventNote, runbook.EventHypothesis, runbook.EventFixChosen, runbook.EventSessionEnded} {
		if kinds[k] == 0 {
			t.Errorf("no %s event in the log: the flow did not exercise it", k)
		}
	}
	// The redaction kept the readable context around each secret.
	for _, want := range []string{"Authorization: [REDACTED]", `"cookie":"[REDACTED]"`, "-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----",
		"client-key-data: [REDACTED]", "token: [REDACTED]", "https://admin:[REDACTED]@10.0.0.1:6443", "503 UF"} {
		if !bytes.Contains(data, []byte(strings.ReplaceAll(want, `"`, `\"`))) && !bytes.Contains(data, []byte(want)) {
			t.Errorf("the log lost the context %q", want)
		}
	}
	// Only the log is redacted: the session's own events (the UI shows
	// them) and the facts it branches on are untouched.
	for _, ev := range s.Events() {
		if ev.Kind == runbook.EventProbeRan && ev.Probe.Probe == "access-log" {
			if !strings.Contains(ev.Probe.Evidence.Raw, secretToken) || !strings.Contains(ev.Probe.Facts["log_details"].([]string)[1], secretToken) {
				t.Error("writing the log redacted the session's own event")
			}
			break
		}
	}

	var md bytes.Buffer
	if err := Render(events, problems, &md, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	for _, secret := range allSecrets {
		if strings.Contains(md.String(), secret) {
			t.Errorf("the record holds %q", secret)
		}
	}
}
