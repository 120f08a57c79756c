//go:build integration

package lab

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// One lab serves every test that does not break it; scenarios are applied
// and deleted in turn.
var (
	shared     *Lab
	sharedErr  error
	sharedOnce sync.Once
	sharedMu   sync.Mutex // one scenario in the shared lab at a time
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	stopIstiodLab()
	if cliPath != "" {
		os.RemoveAll(filepath.Dir(cliPath))
	}
	os.Exit(code)
}

func sharedLab(t *testing.T) *Lab {
	t.Helper()
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		shared, sharedErr = Start(ctx, Options{Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "lab: "+f+"\n", a...) }})
	})
	if sharedErr != nil {
		t.Fatalf("start lab: %v", sharedErr)
	}
	return shared
}

// applyShared loads s into the shared lab for the rest of the test.
func applyShared(t *testing.T, l *Lab, s *recorded.Scenario) *Applied {
	t.Helper()
	sharedMu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := Apply(ctx, l, s)
	if err != nil {
		sharedMu.Unlock()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer sharedMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := a.Delete(ctx); err != nil {
			t.Errorf("delete scenario %s: %v", s.Name, err)
		}
	})
	return a
}

func loadScenario(t *testing.T, name string) *recorded.Scenario {
	t.Helper()
	s, err := recorded.Load(assets.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func scenarioNames(t *testing.T) []string {
	t.Helper()
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("assets holds no scenarios")
	}
	return names
}

// liveCluster connects to the lab as meshtriage would, from a kubeconfig.
func liveCluster(t *testing.T, kubeconfig string, s *recorded.Scenario, timeout time.Duration) *live.Cluster {
	t.Helper()
	flags := live.NewConfigFlags()
	flags.KubeConfig = &kubeconfig
	c, err := live.New(flags, live.Options{
		ControlPlaneNamespace: s.ControlPlaneNamespace,
		RequestTimeout:        timeout,
		UserAgent:             "meshtriage-lab-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkRun is one unattended check: its findings and every probe result.
type checkRun struct {
	causes  []string
	results map[string]runbook.ProbeRan
	err     error
}

type probeSink struct {
	mu  sync.Mutex
	ran map[string]runbook.ProbeRan
}

func (p *probeSink) Write(e runbook.Event) error {
	if e.Kind == runbook.EventProbeRan && e.Probe != nil {
		p.mu.Lock()
		p.ran[e.Probe.Probe] = *e.Probe
		p.mu.Unlock()
	}
	return nil
}

// runCheck opens the triage as `meshtriage check` does and runs it.
func runCheck(t *testing.T, ctx context.Context, src triage.Source, target cluster.Target) checkRun {
	t.Helper()
	sink := &probeSink{ran: map[string]runbook.ProbeRan{}}
	tr, err := triage.Open(ctx, src, target, triage.Options{Mode: runbook.ModeAuto, User: "lab-test", Sinks: []runbook.Sink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	findings, err := tr.Session.Auto(ctx)
	run := checkRun{results: sink.ran, err: err}
	for _, f := range findings {
		run.causes = append(run.causes, f.Cause)
	}
	sort.Strings(run.causes)
	return run
}

func inMemoryCheck(t *testing.T, s *recorded.Scenario) checkRun {
	t.Helper()
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return runCheck(t, ctx, triage.Source{Cluster: c}, s.Target)
}

// (a) Every scenario diagnoses the same through the real API server, the
// kubelet's streams and client-go as it does from memory: the same causes,
// and every probe with the same status and facts.
func TestScenariosSameCausesLiveAndInMemory(t *testing.T) {
	l := sharedLab(t)
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			s := loadScenario(t, name)
			want := inMemoryCheck(t, s)
			applyShared(t, l, s)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			got := runCheck(t, ctx, triage.LiveSource(liveCluster(t, l.Kubeconfig, s, 20*time.Second)), s.Target)
			if (got.err == nil) != (want.err == nil) {
				t.Fatalf("check error: lab %v, in memory %v", got.err, want.err)
			}
			if !slices.Equal(got.causes, want.causes) {
				t.Errorf("causes: lab %v, in memory %v", got.causes, want.causes)
			}
			compareProbes(t, got, want)
		})
	}
}

// compareProbes fails on a probe whose status or facts differ between the
// runs and logs one whose summary alone does (the two Cluster
// implementations word some errors differently).
func compareProbes(t *testing.T, got, want checkRun) {
	t.Helper()
	var ids []string
	for id := range want.results {
		ids = append(ids, id)
	}
	for id := range got.results {
		if _, ok := want.results[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		g, gok := got.results[id]
		w, wok := want.results[id]
		if gok != wok {
			t.Errorf("probe %s ran only %s", id, map[bool]string{true: "in the lab", false: "in memory"}[gok])
			continue
		}
		same, varies := sameVerdict(asResult(g), asResult(w))
		report := t.Errorf
		if same {
			if varies || g.Summary == w.Summary {
				continue
			}
			report = t.Logf
		}
		report("probe %s:\n  lab:       %s %q %v\n  in memory: %s %q %v", id, g.Status, g.Summary, g.Facts, w.Status, w.Summary, w.Facts)
	}
}

func asResult(p runbook.ProbeRan) probes.Result {
	return probes.Result{Probe: p.Probe, Status: p.Status, Summary: p.Summary, Facts: p.Facts}
}

// runDependent are facts that differ between any two runs or between the
// recording and the lab: the lab's server is a real v1.34, whatever the
// scenario recorded, and the metrics window is measured.
var runDependent = map[string]bool{"versions_kubernetes": true, windowFact: true}

const windowFact = "metrics_window_s"

// sameResult compares status, facts and, unless it may quote a
// run-dependent value, the summary.
func sameResult(got, want probes.Result) bool {
	same, varies := sameVerdict(got, want)
	return same && (varies || got.Summary == want.Summary)
}

// sameVerdict compares status and facts (rates as the counts they divide by
// the measured window; other floats within 2%); varies reports a
// run-dependent fact among them.
func sameVerdict(got, want probes.Result) (same, varies bool) {
	if got.Status != want.Status || len(got.Facts) != len(want.Facts) {
		return false, false
	}
	for k, w := range want.Facts {
		g, ok := got.Facts[k]
		if !ok {
			return false, false
		}
		if runDependent[k] {
			varies = true
			continue
		}
		if wf, isFloat := w.(float64); isFloat {
			gf, _ := g.(float64)
			// A rate is a count over the measured window: compare the counts.
			gw, gok := got.Facts[windowFact].(float64)
			ww, wok := want.Facts[windowFact].(float64)
			if strings.HasSuffix(k, "_rate") && gok && wok {
				gf, wf = gf*gw, wf*ww
			}
			if math.Abs(gf-wf) > 0.02*math.Max(math.Abs(wf), 1e-9) {
				return false, false
			}
			varies = varies || gf != wf
			continue
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			return false, false
		}
	}
	return true, varies
}

// richestScenario is a scenario with Envoy admin data, logs and istiod syncz,
// so every probe has something to read through the streams.
func richestScenario(t *testing.T) *recorded.Scenario {
	t.Helper()
	var best *recorded.Scenario
	score := -1
	for _, name := range scenarioNames(t) {
		s, err := recorded.Load(assets.FS, name)
		if err != nil {
			continue // TestScenariosSameCausesLiveAndInMemory reports it
		}
		n := len(s.Envoy) + len(s.Logs)
		if len(s.Istiod) > 0 && s.Target.Source != nil && n > score {
			best, score = s, n
		}
	}
	if best == nil {
		t.Fatal("no scenario has Envoy data, logs, istiod syncz and a source pod")
	}
	return best
}

// (b) Every probe through real pods/log and pods/portforward streams gives
// the result it gives from memory; and through exec when port-forward is not
// allowed.
func TestEveryProbeThroughKubeletStreams(t *testing.T) {
	l := sharedLab(t)
	s := richestScenario(t)
	t.Logf("scenario %s", s.Name)
	mem, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	applyShared(t, l, s)

	compare := func(t *testing.T, c cluster.Cluster) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, p := range probes.All() {
			want := probes.Run(ctx, p, mem, s.Target)
			got := probes.Run(ctx, p, c, s.Target)
			if !sameResult(got, want) {
				t.Errorf("probe %s:\n  lab:       %s %q %v\n  in memory: %s %q %v", p.Meta().ID, got.Status, got.Summary, got.Facts, want.Status, want.Summary, want.Facts)
			}
		}
	}

	t.Run("port-forward", func(t *testing.T) {
		logs, forwards, execs := l.Kubelet.Requests("logs"), l.Kubelet.Requests("portforward"), l.Kubelet.Requests("exec")
		compare(t, liveCluster(t, l.Kubeconfig, s, 20*time.Second))
		if l.Kubelet.Requests("logs") == logs {
			t.Error("no probe read a log through pods/log")
		}
		if l.Kubelet.Requests("portforward") == forwards {
			t.Error("no probe port-forwarded through pods/portforward")
		}
		if l.Kubelet.Requests("exec") != execs {
			t.Error("exec used although port-forward is allowed")
		}
	})

	t.Run("exec fallback", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Where port-forward is refused, the exec role (bound on top of the
		// read-only one) is what the Envoy admin reads fall back on.
		rules := append(readOnlyRulesWithout(t, "pods/portforward"), readManifest(t, live.ExecRole+".yaml").ClusterRoles[0].Rules...)
		kubeconfig := serviceAccountKubeconfig(t, ctx, l, "meshtriage-exec-only", rules)
		forwards, execs := l.Kubelet.Requests("portforward"), l.Kubelet.Requests("exec")
		c := liveCluster(t, kubeconfig, s, 20*time.Second)
		for _, id := range []string{"envoy-clusters", "envoy-listeners", "envoy-config"} {
			p, ok := probes.ByID()[id]
			if !ok {
				t.Fatalf("no probe %s", id)
			}
			want := probes.Run(ctx, p, mem, s.Target)
			got := probes.Run(ctx, p, c, s.Target)
			if !sameResult(got, want) {
				t.Errorf("probe %s by exec:\n  lab:       %s %q %v\n  in memory: %s %q %v", id, got.Status, got.Summary, got.Facts, want.Status, want.Summary, want.Facts)
			}
		}
		if l.Kubelet.Requests("exec") == execs {
			t.Error("no Envoy admin read went through pods/exec")
		}
		if l.Kubelet.Requests("portforward") != forwards {
			t.Error("a port-forward reached the kubelet for a user not allowed to create pods/portforward")
		}
	})
}

// (c) The API server dies in the middle of a check: every probe still ends
// within its deadline with a one-line error, and the check ends.
func TestAPIServerKilledMidRun(t *testing.T) {
	l := StartT(t, Options{})
	s := richestScenario(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := Apply(ctx, l, s); err != nil {
		t.Fatal(err)
	}
	// Kill it from the first Envoy admin request: by then the object probes
	// have read, the port-forward is open, and the rest still needs the server.
	var once sync.Once
	killed := make(chan struct{})
	source := *s.Target.Source
	sim := EnvoyAdminSimulator(s, source)
	if err := l.Kubelet.Serve(source, cluster.EnvoyAdminPort, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			l.KillAPIServer()
			close(killed)
		})
		sim.ServeHTTP(w, r)
	})); err != nil {
		t.Fatal(err)
	}

	c := liveCluster(t, l.Kubeconfig, s, 5*time.Second)
	start := time.Now()
	deadline := 90 * time.Second
	runCtx, runCancel := context.WithTimeout(context.Background(), deadline)
	defer runCancel()
	done := make(chan checkRun, 1)
	go func() { done <- runCheck(t, runCtx, triage.LiveSource(c), s.Target) }()
	var run checkRun
	select {
	case run = <-done:
	case <-time.After(deadline + 10*time.Second):
		t.Fatalf("check still running %s after the API server was killed", time.Since(start).Round(time.Second))
	}
	select {
	case <-killed:
	default:
		t.Fatal("no Envoy admin request reached the lab, so the API server was never killed mid-run")
	}
	if runCtx.Err() != nil {
		t.Fatalf("check only ended at its deadline (%v): a probe blocked", runCtx.Err())
	}
	t.Logf("check ended %s after start: err %v, causes %v", time.Since(start).Round(time.Millisecond), run.err, run.causes)
	errored := 0
	for id, r := range run.results {
		if strings.Contains(r.Summary, "\n") || r.Summary == "" {
			t.Errorf("probe %s: summary %q is not one line", id, r.Summary)
		}
		if r.Status == probes.StatusError {
			errored++
			t.Logf("probe %s: %s", id, r.Summary)
		}
	}
	if errored == 0 {
		t.Error("no probe reported an error although the API server was killed")
	}

	// After the kill a single read fails fast and says so in one line.
	readStart := time.Now()
	res := probes.Run(context.Background(), probes.ByID()["target"], c, s.Target)
	if res.Status != probes.StatusError || strings.Contains(res.Summary, "\n") || time.Since(readStart) > 30*time.Second {
		t.Errorf("target probe on a dead API server: %s %q after %s", res.Status, res.Summary, time.Since(readStart))
	}
}

// serviceAccountKubeconfig creates a ServiceAccount bound to a ClusterRole
// of rules, asks the API server for a token (TokenRequest) and writes a
// kubeconfig that authenticates with it.
func serviceAccountKubeconfig(t *testing.T, ctx context.Context, l *Lab, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	token, err := l.BindServiceAccount(ctx, "meshtriage", name, rules)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := l.WriteKubeconfig(path, name, token, "default"); err != nil {
		t.Fatal(err)
	}
	return path
}

// readOnlyRules are the rules of the shipped ClusterRole.
func readOnlyRules(t *testing.T) ([]rbacv1.PolicyRule, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "assets", "rbac", "meshtriage-readonly.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role, binding, err := ReadRBAC(data)
	if err != nil {
		t.Fatal(err)
	}
	return role.Rules, role, binding
}

// grantReadOnly binds the shipped read-only ClusterRole in l to the
// ServiceAccount its binding names, waits until the API server allows the
// role's first rule, and returns that ServiceAccount and a token for it:
// the identity a least-privilege test triages as.
func grantReadOnly(ctx context.Context, t *testing.T, l *Lab) (sa rbacv1.Subject, token string) {
	t.Helper()
	_, role, binding := readOnlyRules(t)
	i := slices.IndexFunc(binding.Subjects, func(s rbacv1.Subject) bool { return s.Kind == rbacv1.ServiceAccountKind })
	if i < 0 {
		t.Fatal("the shipped binding has no ServiceAccount subject to test with")
	}
	sa = binding.Subjects[i]
	if binding.RoleRef.Name != role.Name {
		t.Fatalf("the shipped binding refers to %q, the role is %q", binding.RoleRef.Name, role.Name)
	}
	if err := l.ApplyRBAC(ctx, role, binding); err != nil {
		t.Fatal(err)
	}
	token, err := l.ServiceAccountToken(ctx, sa.Namespace, sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WaitAllowed(ctx, sa.Namespace, sa.Name, role.Rules[0]); err != nil {
		t.Fatal(err)
	}
	return sa, token
}

// readOnlyRulesWithout is the shipped role minus one resource.
func readOnlyRulesWithout(t *testing.T, resource string) []rbacv1.PolicyRule {
	t.Helper()
	rules, _, _ := readOnlyRules(t)
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(s string) bool { return s == resource })
		if len(r.Resources) > 0 {
			out = append(out, r)
		}
	}
	return out
}
