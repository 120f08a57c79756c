//go:build integration

package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
)

// cliRun is one run of the meshtriage binary.
type cliRun struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, bin string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return cliRun{code, stdout.String(), stderr.String()}
}

// checkReport is what these tests read of check's JSON report.
type checkReport struct {
	Steps []struct {
		ID     string         `json:"id"`
		Status string         `json:"status"`
		Facts  map[string]any `json:"facts"`
	} `json:"steps"`
	Findings []struct {
		Cause string `json:"cause"`
	} `json:"findings"`
}

func jsonCheck(t *testing.T, bin string, args ...string) (checkReport, cliRun) {
	t.Helper()
	r := runCLI(t, bin, append(args, "-o", "json")...)
	var rep checkReport
	if r.code != 1 {
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("meshtriage %v: exit %d, not the JSON report: %v\n%s\n%s", args, r.code, err, r.stdout, r.stderr)
		}
	}
	return rep, r
}

func (r checkReport) causes() []string {
	out := []string{}
	for _, f := range r.Findings {
		out = append(out, f.Cause)
	}
	sort.Strings(out)
	return out
}

// sameSteps requires every step of got to end as in want, with the same
// facts; rates depend on the seconds between two samples, so of those only
// "zero or not" must agree.
func sameSteps(t *testing.T, got, want checkReport) {
	t.Helper()
	byID := map[string]int{}
	for i, s := range got.Steps {
		byID[s.ID] = i
	}
	for _, w := range want.Steps {
		i, ok := byID[w.ID]
		if !ok {
			t.Errorf("step %s: ran live, not on the recording", w.ID)
			continue
		}
		g := got.Steps[i]
		if g.Status != w.Status {
			t.Errorf("step %s: live %s, recording %s", w.ID, w.Status, g.Status)
		}
		for k, v := range w.Facts {
			gv := g.Facts[k]
			if strings.HasSuffix(k, "_rate") || strings.HasSuffix(k, "_window_s") {
				if (fmt.Sprint(v) == "0") != (fmt.Sprint(gv) == "0") {
					t.Errorf("step %s fact %s: live %v, recording %v", w.ID, k, v, gv)
				}
				continue
			}
			if fmt.Sprint(v) != fmt.Sprint(gv) {
				t.Errorf("step %s fact %s: live %v, recording %v", w.ID, k, v, gv)
			}
		}
	}
}

// archiveText is every file of a .tar.gz, as text, by name.
func archiveText(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, _, err := recorded.ReadArchive(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, data := range files {
		out[name] = string(data)
	}
	return out
}

// kubeconfigSecrets are the credentials in the lab's kubeconfig.
func kubeconfigSecrets(t *testing.T, kubeconfig string) []string {
	t.Helper()
	b, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:token|client-key-data|client-certificate-data|password):\s*"?([^"\s]+)`).FindAllStringSubmatch(string(b), -1) {
		secrets = append(secrets, m[1])
	}
	if len(secrets) == 0 {
		t.Fatalf("no credential found in %s to look for", kubeconfig)
	}
	return secrets
}

// Issue 17: `meshtriage capture` against the lab's real API server, fake
// kubelet streams and Envoy admin triages as `check --scenario` does, and
// writes a recording that `check --recording` triages offline to the
// capture's own findings and per-step facts (read from its incident log,
// which names the recording) and check's exit code. The recording holds
// none of the kubeconfig's credentials.
//
// The capture runs first on a freshly applied scenario: the lab's Envoy
// admin simulator answers the n-th read of the counters with the n-th
// recorded sample, so a check run before it would leave it only the last.
func TestCaptureRoundTripOnTheLab(t *testing.T) {
	l := sharedLab(t)
	bin := meshtriageBinary(t)
	secrets := kubeconfigSecrets(t, l.Kubeconfig)
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			s := loadScenario(t, name)
			want, wantRun := jsonCheck(t, bin, "check", "--scenario", name, "--metrics-window", "1s")
			applyShared(t, l, s)
			args := append([]string{"--kubeconfig", l.Kubeconfig}, targetArgs(s)...)

			dir := t.TempDir()
			out, logPath := filepath.Join(dir, "capture.tar.gz"), filepath.Join(dir, "capture.jsonl")
			c := runCLI(t, bin, append([]string{"capture", "-o", out, "--log", logPath, "--metrics-window", "1s"}, args...)...)
			if c.code != 0 || !strings.Contains(c.stdout, "wrote "+out) {
				t.Fatalf("capture: exit %d\nstdout:\n%s\nstderr:\n%s", c.code, c.stdout, c.stderr)
			}
			captured := reportFromLog(t, logPath, out)
			if !slices.Equal(captured.causes(), want.causes()) {
				t.Errorf("capture found %v, check --scenario %v", captured.causes(), want.causes())
			}
			if got := findingsOnLine(c.stdout); !slices.Equal(got, captured.causes()) {
				t.Errorf("capture's findings line differs from its log's %v:\n%s", captured.causes(), c.stdout)
			}

			again, againRun := jsonCheck(t, bin, "check", "--recording", out, "--metrics-window", "1s")
			if againRun.code != wantRun.code || !slices.Equal(again.causes(), captured.causes()) {
				t.Errorf("capture: causes %v (check exit %d)\nrecording: exit %d causes %v (stderr %q)", captured.causes(), wantRun.code, againRun.code, again.causes(), againRun.stderr)
			}
			sameSteps(t, again, captured)

			for file, text := range archiveText(t, out) {
				for _, secret := range secrets {
					if strings.Contains(text, secret) {
						t.Errorf("%s carries a credential of the kubeconfig", file)
					}
				}
			}
		})
	}
}

// reportFromLog reads a triage's steps and findings from its incident
// log, and requires its session_started to name the capture.
func reportFromLog(t *testing.T, logPath, capture string) checkReport {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, problems := incidentlog.Read(f)
	if len(problems) > 0 || len(events) == 0 || events[0].Started == nil {
		t.Fatalf("capture log: %d events, problems %v", len(events), problems)
	}
	if got := events[0].Started.Extra["capture"]; got != capture {
		t.Errorf("session_started extra capture = %q, want %q", got, capture)
	}
	var rep checkReport
	for _, ev := range events {
		if p := ev.Probe; p != nil {
			facts := map[string]any{}
			for k, v := range p.Facts {
				facts[k] = v
			}
			rep.Steps = append(rep.Steps, struct {
				ID     string         `json:"id"`
				Status string         `json:"status"`
				Facts  map[string]any `json:"facts"`
			}{p.Step, string(p.Status), facts})
		}
		if e := ev.Ended; e != nil {
			for _, c := range e.Findings {
				rep.Findings = append(rep.Findings, struct {
					Cause string `json:"cause"`
				}{c})
			}
		}
	}
	return rep
}

// findingsOnLine are the causes capture's "findings:" line names, sorted
// as checkReport.causes sorts them (the line keeps the report's order).
func findingsOnLine(stdout string) []string {
	out := []string{}
	for _, line := range strings.Split(stdout, "\n") {
		rest, ok := strings.CutPrefix(line, "findings: ")
		if !ok || rest == "none" {
			continue
		}
		out = append(out, strings.Split(rest, ", ")...)
	}
	sort.Strings(out)
	return out
}

// istioctlBinary is the istioctl the lab builds (lab/tools/istioctl),
// built on first use by the benchmarks' helper.
func istioctlBinary(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("istioctl bug-report runs kubectl, which is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	root, err := ModuleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./lab/bench/istioctlbin")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build istioctl: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// ownPods makes each scenario pod's ReplicaSet exist, owned by a
// Deployment, as a real cluster's would: istioctl bug-report collects only
// pods a Deployment or DaemonSet owns. The lab has no controllers, so the
// objects only name one another.
func ownPods(t *testing.T, l *Lab, s *recorded.Scenario) {
	t.Helper()
	ctx := context.Background()
	made := map[string]bool{}
	for _, obj := range s.Objects {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		for _, ref := range p.OwnerReferences {
			key := p.Namespace + "/" + ref.Name
			if ref.Kind != "ReplicaSet" || made[key] {
				continue
			}
			made[key] = true
			deploy := ref.Name
			if i := strings.LastIndexByte(deploy, '-'); i > 0 {
				deploy = deploy[:i]
			}
			labels := map[string]string{"app": p.Labels["app"]}
			rs := &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: p.Namespace, OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "Deployment", Name: deploy, UID: "00000000-0000-0000-0000-0000000000d1", Controller: ptr(true),
				}}},
				Spec: appsv1.ReplicaSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c"}}}},
				},
			}
			if _, err := l.Kube.AppsV1().ReplicaSets(p.Namespace).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
				t.Fatalf("replicaset %s: %v", key, err)
			}
			ns, name := p.Namespace, ref.Name
			t.Cleanup(func() {
				_ = l.Kube.AppsV1().ReplicaSets(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
			})
		}
	}
}

func ptr[T any](v T) *T { return &v }

// withBugReportAdmin adds what istioctl asks every sidecar's Envoy admin
// and the lab's recordings do not hold (certs, memory, server_info,
// runtime): istioctl keeps a proxy's output only when every path answered.
// The answers are empty shapes of Envoy's; no probe reads them.
func withBugReportAdmin(s *recorded.Scenario) {
	for _, byPath := range s.Envoy {
		byPath["/certs"] = []byte(`{"certificates": []}`)
		byPath["/memory"] = []byte(`{"allocated": "0", "heap_size": "0"}`)
		byPath["/server_info"] = []byte(`{"state": "LIVE"}`)
		byPath["/runtime"] = []byte(`{"entries": {}}`)
	}
}

// answerPilotDiscovery answers `pilot-discovery request GET <path>` in
// istiod's discovery container from the scenario's recorded syncz (and an
// empty JSON list for the other debug paths istioctl asks), the way the
// lab's kubelet answers pilot-agent: istioctl keeps istiod's output only
// when every debug path answered.
func answerPilotDiscovery(t *testing.T, l *Lab, s *recorded.Scenario) {
	t.Helper()
	l.Kubelet.mu.Lock()
	prev := l.Kubelet.exec
	l.Kubelet.mu.Unlock()
	l.Kubelet.SetExec(func(ctx context.Context, pod cluster.PodRef, container string, command []string, stdout, stderr io.Writer) int {
		if len(command) == 4 && command[0] == "pilot-discovery" && command[1] == "request" && command[2] == "GET" {
			if "/"+strings.TrimPrefix(command[3], "/") == recorded.IstiodSyncz {
				stdout.Write(s.Istiod[recorded.IstiodSyncz])
			} else {
				stdout.Write([]byte("[]"))
			}
			return 0
		}
		return prev(ctx, pod, container, command, stdout, stderr)
	})
	t.Cleanup(func() { l.Kubelet.SetExec(prev) })
}

// bugReport runs `istioctl bug-report` against the lab into dir and
// returns the archive.
func bugReport(t *testing.T, l *Lab, istioctl, dir string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, istioctl, append([]string{"bug-report", "--kubeconfig", l.Kubeconfig, "--output-dir", dir, "--dir", filepath.Join(dir, "work"), "--timeout", "2m"}, extra...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+l.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("istioctl bug-report: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, "bug-report.tar.gz")
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("istioctl wrote no archive: %v\n%s", err, out)
	}
	return archive
}

// Issue 17: real `istioctl bug-report` archives of the lab (istioctl built
// from istio/istio, kubectl on PATH) triage offline. Without --include,
// istioctl writes the objects, each owned sidecar's Envoy output, proxy
// logs and istiod's syncz: the probes that read those end as in the live
// check. With --include NS, its object lists come out empty; meshtriage
// says so and triages once -f adds a kubectl dump.
func TestBugReportFromTheLab(t *testing.T) {
	l := sharedLab(t)
	bin := meshtriageBinary(t)
	istioctl := istioctlBinary(t)
	for _, name := range []string{"circuit-breaker-overflow", "outlier-all-ejected", "stale-xds"} {
		t.Run(name, func(t *testing.T) {
			s := loadScenario(t, name)
			withBugReportAdmin(s)
			applyShared(t, l, s)
			ownPods(t, l, s)
			answerPilotDiscovery(t, l, s)
			args := targetArgs(s)
			live, _ := jsonCheck(t, bin, append([]string{"--kubeconfig", l.Kubeconfig, "check", "--metrics-window", "1s"}, args...)...)

			archive := bugReport(t, l, istioctl, t.TempDir())
			got, run := jsonCheck(t, bin, append([]string{"check", "--bug-report", archive}, args...)...)
			if run.code == 1 {
				t.Fatalf("check --bug-report could not triage: %s", run.stderr)
			}
			t.Logf("check --bug-report: exit %d causes %v; stderr:\n%s", run.code, got.causes(), run.stderr)
			// The probes whose every input a bug report holds end as live.
			held := map[string]bool{"target": true, "endpoints": true, "envoy-clusters": true, "envoy-listeners": true,
				"envoy-config": true, "destination-rules": true, "mtls": true, "proxy-status": true}
			var liveHeld, gotHeld checkReport
			for _, st := range live.Steps {
				if held[st.ID] {
					liveHeld.Steps = append(liveHeld.Steps, st)
				}
			}
			for _, st := range got.Steps {
				if held[st.ID] {
					gotHeld.Steps = append(gotHeld.Steps, st)
				}
			}
			for _, rep := range []checkReport{liveHeld, gotHeld} {
				for i := range rep.Steps {
					st := &rep.Steps[i]
					if st.ID != "envoy-clusters" {
						continue
					}
					// A bug report has no /stats: the cluster counters
					// come from elsewhere there (so the status may
					// differ: a circuit breaker's overflow is only in
					// /stats); host health must agree.
					st.Status = ""
					for _, k := range []string{"envoy_rq_pending_overflow", "envoy_rq_active_overflow", "envoy_rq_overflow", "envoy_cx_overflow", "envoy_ejections_active", "envoy_cx_connect_fail",
						"envoy_rq_total", "envoy_rq_timeout", "envoy_cluster_stats_present", "envoy_counters_from"} {
						delete(st.Facts, k)
					}
				}
			}
			sameSteps(t, gotHeld, liveHeld)
			for _, want := range []string{"one sample of each proxy's counters"} {
				if !strings.Contains(run.stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, run.stderr)
				}
			}

			narrow := bugReport(t, l, istioctl, t.TempDir(), "--include", s.Target.Namespace)
			_, run = jsonCheck(t, bin, append([]string{"check", "--bug-report", narrow}, args...)...)
			if run.code != 1 || !strings.Contains(run.stderr, "cluster/k8s-resources is an empty list") {
				t.Errorf("--include bug report: exit %d, stderr:\n%s", run.code, run.stderr)
			}
			dump := filepath.Join(t.TempDir(), "dump.yaml")
			kubectl := exec.Command("kubectl", "--kubeconfig", l.Kubeconfig, "get", "-n", s.Target.Namespace, "services,pods,endpointslices,destinationrules,virtualservices,peerauthentications,serviceentries,sidecars", "-o", "yaml")
			y, err := kubectl.Output()
			if err != nil {
				t.Fatalf("kubectl get: %v", err)
			}
			if err := os.WriteFile(dump, y, 0o600); err != nil {
				t.Fatal(err)
			}
			withDump, run := jsonCheck(t, bin, append([]string{"check", "--bug-report", narrow, "-f", dump}, args...)...)
			if run.code == 1 {
				t.Fatalf("--include bug report with -f: %s", run.stderr)
			}
			for _, st := range withDump.Steps {
				if st.ID == "target" && st.Status == "error" {
					t.Errorf("target step with the dump added: %+v", st)
				}
			}
		})
	}
}

// A triage that stops (here: the Service does not exist) still leaves its
// capture, which replays to the same stop, with the reason on stderr.
func TestCaptureOfATriageThatStops(t *testing.T) {
	l := sharedLab(t)
	bin := meshtriageBinary(t)
	s := loadScenario(t, "healthy")
	applyShared(t, l, s)
	out := filepath.Join(t.TempDir(), "stopped.tar.gz")
	c := runCLI(t, bin, "--kubeconfig", l.Kubeconfig, "capture", "-n", s.Target.Namespace, "svc/not-there", "-o", out)
	if c.code != 1 || !strings.Contains(c.stderr, "the reads made until then are in "+out) || strings.Count(strings.TrimSpace(c.stderr), "\n") != 0 {
		t.Fatalf("capture of a missing Service: exit %d, stderr %q", c.code, c.stderr)
	}
	r := runCLI(t, bin, "check", "--recording", out)
	if r.code != 1 || !strings.Contains(r.stderr, "not-there") {
		t.Errorf("replay: exit %d, stderr %q; want the same stop", r.code, r.stderr)
	}
}
