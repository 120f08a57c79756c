package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
)

type checkRun struct {
	code           int
	stdout, stderr string
}

func runCheck(t *testing.T, args ...string) checkRun {
	t.Helper()
	var out, errOut bytes.Buffer
	// No kubeconfig of the machine running the tests leaks in.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	code := execute(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, append([]string{"check"}, args...))
	return checkRun{code, out.String(), errOut.String()}
}

const noSelectorDir = "testdata/check/no-selector-match"

func TestCheckExitCodes(t *testing.T) {
	t.Run("healthy scenario: 0", func(t *testing.T) {
		r := runCheck(t, "--scenario", "healthy")
		if r.code != exitOK || !strings.Contains(r.stdout, "no finding") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("finding: 3", func(t *testing.T) {
		r := runCheck(t, "-n", "shop", "svc/web", "--manifests", noSelectorDir)
		if r.code != exitFindings || !strings.Contains(r.stdout, "FINDING 1  service.no-selector-match") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if r.stderr != "" {
			t.Errorf("findings are not errors; stderr: %q", r.stderr)
		}
	})
	// No finding is no all-clear while the checks that decide the path did
	// not run: exit 3, the open hypotheses listed, with what settles them,
	// and every check that could not run counted (skipped ones too).
	t.Run("no finding with checks that could not run: 3, hypotheses and what settles them", func(t *testing.T) {
		r := runCheck(t, "-n", "shop", "svc/web", "--manifests", "testdata/check/unchecked")
		if r.code != exitFindings {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{"no finding, but the path could not be judged", "HYPOTHESES", "what would settle the open hypotheses",
			// The causes only a caller's Envoy produces wait for one.
			"outlier.all-ejected, circuit-breaker.overflow", "arise only in a caller's proxy on this path: name the calling pod with --from pod/NAME"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout does not say %q:\n%s", want, r.stdout)
			}
		}
		want := "from the service side, 7 of 17 checks of the path could not run: envoy-clusters, access-log, metrics, envoy-listeners, envoy-config, proxy-status, service-entry"
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	})
	bad := []struct {
		name string
		args []string
		want string
	}{
		{"no target", []string{"-n", "shop", "--manifests", noSelectorDir}, "need exactly one target"},
		{"two targets", []string{"-n", "shop", "svc/a", "svc/b", "--manifests", noSelectorDir}, "need exactly one target"},
		{"not a service", []string{"-n", "shop", "deploy/web", "--manifests", noSelectorDir}, "only Services can be triaged"},
		{"empty name", []string{"-n", "shop", "svc/", "--manifests", noSelectorDir}, "no Service name"},
		{"bad port", []string{"-n", "shop", "svc/web", "--port", "70000", "--manifests", noSelectorDir}, "1-65535"},
		{"bad from", []string{"-n", "shop", "svc/web", "--from", "a/b/c/d", "--manifests", noSelectorDir}, "want pod/NAME or NAMESPACE/pod/NAME"},
		{"bad format", []string{"-n", "shop", "svc/web", "-o", "yaml", "--manifests", noSelectorDir}, `unknown output format "yaml"`},
		{"unknown scenario", []string{"--scenario", "no-such-incident"}, `no scenario "no-such-incident"`},
		{"two sources", []string{"--scenario", "healthy", "--manifests", noSelectorDir}, "give one"},
		{"service absent", []string{"-n", "shop", "svc/payments", "--manifests", noSelectorDir}, "cannot triage (step target)"},
		{"port absent", []string{"-n", "shop", "svc/web", "--port", "81", "--manifests", noSelectorDir}, "not a port of the Service"},
		{"no kubeconfig", []string{"-n", "shop", "svc/web"}, "no kubeconfig"},
	}
	for _, c := range bad {
		t.Run(c.name+": 1", func(t *testing.T) {
			r := runCheck(t, c.args...)
			if r.code != exitTriage {
				t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, c.want) {
				t.Errorf("stderr %q does not say %q", r.stderr, c.want)
			}
			if n := strings.Count(strings.TrimRight(r.stderr, "\n"), "\n"); n != 0 {
				t.Errorf("stderr is %d lines, want one:\n%s", n+1, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("a failed triage printed a report:\n%s", r.stdout)
			}
		})
	}
}

// An API server that does not answer is "could not triage", in seconds.
func TestCheckUnreachableCluster(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: dead
  context: {cluster: dead, user: u}
current-context: dead
users:
- name: u
  user: {token: t}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := execute(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		[]string{"check", "--kubeconfig", kubeconfig, "-n", "shop", "svc/web"})
	if code != exitTriage || !strings.Contains(errOut.String(), "cannot reach the API server at https://127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

func TestCheckJSONAndLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "incident.jsonl")
	r := runCheck(t, "-n", "shop", "svc/web", "--port", "80", "--manifests", noSelectorDir, "-o", "json", "--log", logPath)
	if r.code != exitFindings {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Target   cluster.Target `json:"target"`
		Steps    []struct{ ID, Probe, Status string }
		Findings []struct {
			Cause    string
			Evidence []json.RawMessage
			Fix      struct{ Directions []json.RawMessage }
			Verify   []json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if doc.Target.Service != "web" || doc.Target.Namespace != "shop" || doc.Target.Port != 80 {
		t.Errorf("target = %+v", doc.Target)
	}
	if len(doc.Findings) != 1 || doc.Findings[0].Cause != "service.no-selector-match" ||
		len(doc.Findings[0].Evidence) == 0 || len(doc.Findings[0].Fix.Directions) == 0 || len(doc.Findings[0].Verify) == 0 {
		t.Fatalf("findings = %+v", doc.Findings)
	}
	if len(doc.Steps) < 10 || doc.Steps[0].ID != "target" || doc.Steps[0].Status != "fail" {
		t.Errorf("steps = %+v", doc.Steps)
	}

	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, problems := incidentlog.Read(f)
	if len(problems) > 0 || len(events) < 3 {
		t.Fatalf("log: %d events, problems %v", len(events), problems)
	}
	if events[0].Started == nil || events[0].Started.Mode != "auto" || events[0].Started.Target.Service != "web" {
		t.Errorf("first event = %+v", events[0])
	}
	last := events[len(events)-1]
	if last.Ended == nil || len(last.Ended.Findings) != 1 || last.Ended.Findings[0] != "service.no-selector-match" {
		t.Errorf("last event = %+v", last)
	}
}

func TestCheckScenarioTargetOverride(t *testing.T) {
	// The scenario's own target is used; an argument replaces the Service.
	r := runCheck(t, "--scenario", "healthy", "svc/nope", "-o", "json")
	if r.code != exitTriage || !strings.Contains(r.stderr, "cannot triage") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

func TestParseTarget(t *testing.T) {
	ok := []struct {
		args []string
		f    targetFlags
		want cluster.Target
	}{
		{[]string{"svc/web"}, targetFlags{}, cluster.Target{Namespace: "shop", Service: "web"}},
		{[]string{"web"}, targetFlags{port: 8080}, cluster.Target{Namespace: "shop", Service: "web", Port: 8080}},
		{[]string{"service/web"}, targetFlags{from: "pod/client-7d9c"},
			cluster.Target{Namespace: "shop", Service: "web", Source: &cluster.PodRef{Namespace: "shop", Name: "client-7d9c"}}},
		{[]string{"svc/web"}, targetFlags{from: "front/pod/client-1"},
			cluster.Target{Namespace: "shop", Service: "web", Source: &cluster.PodRef{Namespace: "front", Name: "client-1"}}},
		{[]string{"svc/web"}, targetFlags{from: "client-1"},
			cluster.Target{Namespace: "shop", Service: "web", Source: &cluster.PodRef{Namespace: "shop", Name: "client-1"}}},
	}
	for _, c := range ok {
		got, err := parseTarget("shop", c.args, c.f)
		if err != nil {
			t.Errorf("%v %+v: %v", c.args, c.f, err)
			continue
		}
		if got.String() != c.want.String() {
			t.Errorf("%v %+v = %s, want %s", c.args, c.f, got, c.want)
		}
	}
	bad := []struct {
		ns   string
		args []string
		f    targetFlags
	}{
		{"shop", []string{"svc/Web"}, targetFlags{}},
		{"shop", []string{"svc/web.shop"}, targetFlags{}},
		{"Shop", []string{"svc/web"}, targetFlags{}},
		{"shop", []string{"svc/web"}, targetFlags{port: -1}},
		{"shop", []string{"svc/web"}, targetFlags{from: "deploy/client"}},
		{"shop", []string{"svc/web"}, targetFlags{from: "pod/"}},
		{"shop", []string{"svc/web"}, targetFlags{from: "Front/pod/x"}},
	}
	for _, c := range bad {
		if got, err := parseTarget(c.ns, c.args, c.f); err == nil {
			t.Errorf("%s %v %+v accepted as %s", c.ns, c.args, c.f, got)
		}
	}
}

// --metrics-window 0 trades the current 503 rate for a triage that does not
// wait for the second sample of the counters.
func TestCheckMetricsWindowZeroSkipsTheSampling(t *testing.T) {
	r := runCheck(t, "--scenario", "healthy", "-o", "json", "--metrics-window", "0")
	if r.code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var rep struct {
		Steps []struct{ Probe, Status, Summary string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, st := range rep.Steps {
		if st.Probe == "metrics" {
			found = true
			if st.Status != "skipped" || !strings.Contains(st.Summary, "not sampled") {
				t.Errorf("metrics step = %s %q", st.Status, st.Summary)
			}
		}
	}
	if !found {
		t.Error("no metrics step in the report")
	}
}

// The all-clear that was not one: an ambient Service's manifests, no
// caller named or found. The checks that judge the path (the ambient
// policy, ztunnel's logs) could not run: exit 3, the real cause among the
// open hypotheses, and the input that settles them named.
func TestCheckWithoutCallerOnAmbientIsNoAllClear(t *testing.T) {
	r := runCheck(t, "--manifests", "../../assets/scenarios/ambient-hbone-networkpolicy/manifests", "-n", "shop", "svc/orders", "-o", "json")
	if r.code != exitFindings {
		t.Fatalf("exit %d, want 3 (undecided)\nstderr:\n%s", r.code, r.stderr)
	}
	var rep struct {
		Verdict    string   `json:"verdict"`
		Unread     []string `json:"unread"`
		Hypotheses []struct {
			Cause string `json:"cause"`
		} `json:"hypotheses"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "undecided" {
		t.Errorf("verdict %q, want undecided", rep.Verdict)
	}
	open := map[string]bool{}
	for _, h := range rep.Hypotheses {
		open[h.Cause] = true
	}
	if !open["ambient.hbone-blocked"] {
		t.Errorf("hypotheses %v lack the real cause ambient.hbone-blocked", rep.Hypotheses)
	}
	unread := strings.Join(rep.Unread, "\n")
	for _, want := range []string{"--from pod/NAME", "cannot read the log of istio-system/ztunnel"} {
		if !strings.Contains(unread, want) {
			t.Errorf("what settles them does not name %q:\n%s", want, unread)
		}
	}
	if !strings.Contains(r.stderr, "from the service side, ") || !strings.Contains(r.stderr, "ambient-policy") {
		t.Errorf("stderr does not count the skipped ambient-policy check: %s", r.stderr)
	}
}

// A hypothesis is open only if the data plane on the path can produce it,
// through check on the two inputs issue 26 met. mtls-plaintext-to-strict:
// the caller (report-cron in batch) has no sidecar, so no pool of its own
// overflows and no outlier detection of its own ejects; the metrics the
// destination's sidecar could not give leave circuit-breaker.overflow no
// hypothesis. The ambient manifests without a caller: the Service's pods
// have no Envoy, so the Envoy-only causes wait for a caller (named in
// caller_needed and in what settles the path) instead of being open.
func TestCheckOpensNoHypothesisTheDataPlaneCannotProduce(t *testing.T) {
	type rep struct {
		Verdict      string   `json:"verdict"`
		Unread       []string `json:"unread"`
		CallerNeeded []string `json:"caller_needed"`
		Hypotheses   []struct {
			Cause  string   `json:"cause"`
			Settle []string `json:"settle"`
		} `json:"hypotheses"`
	}
	read := func(r checkRun) (rep, map[string]bool) {
		var out rep
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, r.stderr)
		}
		open := map[string]bool{}
		for _, h := range out.Hypotheses {
			open[h.Cause] = true
			for _, c := range h.Settle {
				if strings.Contains(c, "report-cron") && strings.Contains(c, "-c istio-proxy") {
					t.Errorf("%s settles with a command into report-cron's istio-proxy, which it has not: %s", h.Cause, c)
				}
			}
		}
		return out, open
	}

	t.Run("caller without a sidecar", func(t *testing.T) {
		r := runCheck(t, "--scenario", "mtls-plaintext-to-strict", "--metrics-window", "10ms", "-o", "json")
		if r.code != exitFindings {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		_, open := read(r)
		for _, c := range []string{"circuit-breaker.overflow", "outlier.all-ejected"} {
			if open[c] {
				t.Errorf("open hypothesis %s: the caller has no Envoy and the destination's sidecar does not produce it", c)
			}
		}
	})

	t.Run("ambient manifests, no caller", func(t *testing.T) {
		r := runCheck(t, "--manifests", "../../assets/scenarios/ambient-hbone-networkpolicy/manifests", "-n", "shop", "svc/orders", "-o", "json")
		if r.code != exitFindings {
			t.Fatalf("exit %d, want 3 (undecided)\n%s", r.code, r.stderr)
		}
		out, open := read(r)
		for _, c := range []string{"outlier.all-ejected", "circuit-breaker.overflow", "upstream.idle-reset"} {
			if open[c] {
				t.Errorf("open hypothesis %s: the Service's pods have no Envoy and no caller was read", c)
			}
			if !slices.Contains(out.CallerNeeded, c) {
				t.Errorf("%s not said to wait for a caller: %v", c, out.CallerNeeded)
			}
		}
		if !open["ambient.hbone-blocked"] || out.Verdict != "undecided" {
			t.Errorf("verdict %s, hypotheses %v: the real cause must stay open", out.Verdict, open)
		}
		if !strings.Contains(strings.Join(out.Unread, "\n"), "arise only in a caller's proxy") {
			t.Errorf("what settles the path does not name the caller:\n%s", strings.Join(out.Unread, "\n"))
		}
	})
}
