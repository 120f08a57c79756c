package tui

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/triage"
	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/picker"
)

// memSink keeps a session's events for the test to read.
type memSink struct {
	mu     sync.Mutex
	events []runbook.Event
}

func (m *memSink) Write(ev runbook.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, ev)
	return nil
}

func (m *memSink) all() []runbook.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]runbook.Event(nil), m.events...)
}

// scenarioSession is the real runbook session on an embedded scenario, as
// `meshtriage demo` builds it. The metrics probe samples 50 ms apart instead
// of 5 s: that scales its rates, not what it counts.
func scenarioSession(t *testing.T, name string) (*runbook.Session, *recorded.Scenario, *memSink) {
	t.Helper()
	s, err := recorded.Load(assets.FS, name)
	if err != nil {
		t.Fatalf("scenario %s: %v", name, err)
	}
	src, err := triage.Scenario(name)
	if err != nil {
		t.Fatalf("scenario %s: %v", name, err)
	}
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: 50 * time.Millisecond}
	sink := &memSink{}
	tr, err := triage.Open(context.Background(), src, s.Target, triage.Options{
		Mode: runbook.ModeGuided, Probes: reg, User: "oncall", Sinks: []runbook.Sink{sink},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Session, s, sink
}

// symptomOf is the start answer an on-call would give for each scenario.
func symptomOf(name string) int {
	switch name {
	case "startup-race":
		return 1 // pods restart at startup with connection refused
	case "rollout-shutdown-503":
		return 2 // 503 bursts during rollouts
	case "gateway-vs-not-bound", "gateway-host-mismatch", "gatewayapi-route-not-attached":
		return 3 // an ingress gateway answers 404 NR
	}
	return 0 // callers see 503s
}

func findingIDs(sess *runbook.Session) []string {
	var ids []string
	for _, f := range sess.Findings() {
		ids = append(ids, f.Cause)
	}
	return ids
}

// TestScenarioWalks drives the real session on every embedded scenario with
// the keys an on-call would press: the symptom, then enter on each proposal
// until the scenario's cause is found, then o to open it. The healthy
// scenario walks to the end without a finding. Every move is the engine's.
func TestScenarioWalks(t *testing.T) {
	names, err := recorded.Names(assets.FS)
	if err != nil || len(names) == 0 {
		t.Fatalf("no embedded scenarios: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sess, sc, sink := scenarioSession(t, name)
			h := startEngine(t, Options{Engine: engine.FromSession(sess), Context: "scenario " + name}, 100, 30)
			h.waitFor("What does the on-call see?")
			for i := 0; i < symptomOf(name); i++ {
				h.key("down")
			}
			// The cursor is on the scenario's symptom (a gateway's 404 NR
			// has one of its own).
			h.waitFor("› " + sess.Graph().Start.Options[symptomOf(name)].Title)
			h.key("enter")
			h.waitFor("Runbook · guided")
			if got, want := sess.Symptom(), sess.Graph().Start.Options[symptomOf(name)].ID; got != want {
				t.Errorf("symptom %q recorded, want %q", got, want)
			}

			reached := func() bool {
				ids := findingIDs(sess)
				for _, want := range sc.Expect {
					if !slices.Contains(ids, want) {
						return false
					}
				}
				return len(sc.Expect) > 0
			}
			for step := 0; !reached(); step++ {
				if step > 20 {
					t.Fatalf("20 proposals accepted and %v not found (found %v)", sc.Expect, findingIDs(sess))
				}
				screen := h.waitIdle()
				if strings.Contains(screen, "runbook finished") || strings.Contains(screen, "cannot go on") {
					break
				}
				before := ran(sink)
				h.key("enter")
				h.waitFor("") // let the key land
				deadline := time.Now().Add(10 * time.Second)
				for ran(sink) == before && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			h.waitIdle()
			if len(sc.Expect) == 0 {
				if ids := findingIDs(sess); len(ids) > 0 {
					t.Fatalf("healthy scenario found %v", ids)
				}
				h.waitFor("runbook finished without a cause")
				return
			}
			if !reached() {
				t.Fatalf("guided walk ended without %v; found %v\n%s", sc.Expect, findingIDs(sess), h.f.screen())
			}
			// The session holds the finding before the screen has taken the
			// probe's result in: o opens the cause only once the status bar
			// offers it first, so wait for it (a loaded machine pressed o
			// early, on an unexplained/ finding the screen already had).
			h.waitFor("◆ " + sc.Expect[0])
			h.key("o")
			h.waitFor("◆ "+sc.Expect[0], "fix direction")
			for _, ev := range sink.all() {
				if b := ev.Branch; b != nil && b.From != runbook.StartNode && b.ChosenBy != runbook.ChosenByEngine {
					t.Errorf("enter recorded a move by %q: %+v", b.ChosenBy, b)
				}
			}
		})
	}
}

// runningOnScreen is what the screen shows while something runs: a step
// row's label (checklist.go), the status line (view.go), a verification
// (cause.go).
var runningOnScreen = regexp.MustCompile(`running\s*│|running \d+ probe\(s\)|running…`)

func ran(s *memSink) int {
	n := 0
	for _, ev := range s.all() {
		if ev.Kind == runbook.EventProbeRan {
			n++
		}
	}
	return n
}

// waitIdle waits until no probe is running: no step row labelled
// "running", no "running N probe(s)" status line, no verification
// "running…". Not the bare word, which evidence holds too ("container
// orders running, unready", Flask's "Running on ...").
func (h *harness) waitIdle() string {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := h.f.screen()
		if s != "" && !runningOnScreen.MatchString(s) && !strings.Contains(s, "starting the session") {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("probes still running:\n%s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A resumed incident log reopens where it stopped: the steps already read
// are on the path with their results, the verdicts are back, and the
// session is not started a second time.
func TestResumedSession(t *testing.T) {
	first, sc, _ := scenarioSession(t, "outlier-all-ejected")
	e := engine.FromSession(first)
	ctx := t.Context()
	if err := e.Start(ctx, e.Symptoms()[0].ID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		p := e.Proposal()
		_ = e.Choose(p.Next, engine.ByEngine)
		e.RunStep(ctx, p.Next)
	}
	if err := e.Hypothesis("mtls.plaintext-to-strict", engine.RuledOut, "PERMISSIVE"); err != nil {
		t.Fatal(err)
	}
	history := first.Events()

	again, _, sink := scenarioSession(t, "outlier-all-ejected")
	resumed, err := runbook.Resume(runbook.Config{
		Graph: again.Graph(), Cluster: cluster.NewCache(mustCluster(t, sc)), Target: sc.Target,
		Probes: probes.ByID(), Sinks: []runbook.Sink{sink}, Mode: runbook.ModeGuided,
	}, history)
	if err != nil {
		t.Fatal(err)
	}
	// Tall enough for every step and the causes below them (the three
	// multi-cluster steps of issue 30 pushed the verdicts below a
	// 40-line screen).
	h := startEngine(t, Options{Engine: engine.FromSession(resumed), Resumed: true}, 100, 60)
	h.waitFor("Runbook · guided", "✓ Resolve the Service", "✗ Envoy upstream hosts", "next:")
	h.key("m")
	h.waitFor("✘ Plaintext sent to a S", "ruled out")
	for _, ev := range sink.all() {
		if ev.Kind == runbook.EventSessionStarted {
			t.Fatal("the resumed session was started again")
		}
	}
}

func mustCluster(t *testing.T, s *recorded.Scenario) cluster.Cluster {
	t.Helper()
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The picker on a scenario's cluster (the same fake clientset the probes
// read) hands the chosen target to a real session.
func TestPickerOnScenarioCluster(t *testing.T) {
	_, sc, _ := scenarioSession(t, "outlier-all-ejected")
	c, ok := mustCluster(t, sc).(*recorded.Cluster)
	if !ok {
		t.Fatal("scenario cluster has no clientset")
	}
	var built *runbook.Session
	newEngine := func(_ context.Context, target cluster.Target) (engine.Engine, error) {
		sess, _, _ := scenarioSession(t, "outlier-all-ejected")
		s, err := runbook.NewSession(runbook.Config{Graph: sess.Graph(), Cluster: c, Target: target, Probes: probes.ByID(), Mode: runbook.ModeGuided})
		built = s
		return engine.FromSession(s), err
	}
	h := startEngine(t, Options{Catalog: picker.KubeCatalog{Kube: c.Kube}, NewEngine: newEngine}, 100, 30)
	h.waitFor("Choose a namespace", sc.Target.Namespace)
	h.key("/")
	h.key(sc.Target.Namespace)
	h.key("enter")
	h.key("enter")
	h.waitFor("Choose a service in "+sc.Target.Namespace, "with sidecar")
	h.key("/")
	h.key(sc.Target.Service)
	h.key("enter")
	h.key("enter")
	h.waitFor("Choose a source pod", "(no source pod)", sc.Target.Source.Name)
	h.key("/")
	h.key(sc.Target.Source.Name)
	h.key("enter")
	h.key("enter")
	h.waitFor("What does the on-call see?")
	h.key("enter")
	h.waitFor("Runbook · guided")
	want := cluster.Target{Namespace: sc.Target.Namespace, Service: sc.Target.Service, Source: sc.Target.Source}
	if got := built.Target(); got.String() != want.String() {
		t.Fatalf("session target %v, want %v", got, want)
	}
}

// `meshtriage demo` without a name: the picker lists the recorded incidents,
// and the one chosen opens with its own target and label.
func TestDemoPickerOpensTheChosenScenario(t *testing.T) {
	list, err := triage.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	var summaries []picker.ScenarioSummary
	for _, s := range list {
		summaries = append(summaries, picker.ScenarioSummary{Name: s.Name, Title: s.Title, Summary: s.Summary})
	}
	var (
		mu     sync.Mutex
		opened *runbook.Session
	)
	open := func(_ context.Context, name string) (engine.Engine, string, error) {
		sess, _, _ := scenarioSession(t, name)
		mu.Lock()
		opened = sess
		mu.Unlock()
		return engine.FromSession(sess), "prod-eu-west-1 (scenario " + name + ")", nil
	}
	h := startEngine(t, Options{Scenarios: summaries, OpenScenario: open}, 120, 30)
	h.waitFor("Choose a recorded incident", "no cluster needed")
	h.key("/")
	h.key("port-mismatch")
	h.key("enter")
	h.key("enter")
	h.waitFor("What does the on-call see?", "(scenario port-mismatch)")
	mu.Lock()
	defer mu.Unlock()
	if opened == nil || opened.Target().Service != "orders" {
		t.Fatalf("opened session %v, want port-mismatch's target svc/orders", opened)
	}
}

// The caller list ranks the callers the search finds across namespaces:
// in the plaintext-to-STRICT incident the failing caller is a CronJob pod in
// another namespace, whose refused connections are in the target's inbound
// log. It comes first, says why, the cursor starts on it, and the session
// gets its namespace.
func TestPickerRanksCallersAcrossNamespaces(t *testing.T) {
	_, sc, _ := scenarioSession(t, "mtls-plaintext-to-strict")
	c, ok := mustCluster(t, sc).(*recorded.Cluster)
	if !ok {
		t.Fatal("scenario cluster has no clientset")
	}
	caller := *sc.Target.Source
	if caller.Namespace == sc.Target.Namespace {
		t.Fatalf("the scenario's caller %s is in the target's namespace: not a cross-namespace case", caller)
	}
	var built *runbook.Session
	newEngine := func(_ context.Context, target cluster.Target) (engine.Engine, error) {
		sess, _, _ := scenarioSession(t, "mtls-plaintext-to-strict")
		s, err := runbook.NewSession(runbook.Config{Graph: sess.Graph(), Cluster: c, Target: target, Probes: probes.ByID(), Mode: runbook.ModeGuided})
		built = s
		return engine.FromSession(s), err
	}
	cat := picker.SearchCatalog{KubeCatalog: picker.KubeCatalog{Kube: c.Kube}, Cluster: c}
	h := startEngine(t, Options{Catalog: cat, NewEngine: newEngine, Namespace: sc.Target.Namespace}, 120, 30)
	h.waitFor("Choose a service in "+sc.Target.Namespace, "with sidecar")
	h.key("/")
	h.key(sc.Target.Service)
	h.key("enter")
	h.key("enter")
	h.waitFor("Choose the caller · most likely first", "(no source pod)", caller.String(), "in the target's inbound log")
	// Most likely first: the cursor is on it already (it was on "(no
	// source pod)", and enter triaged without the caller).
	h.key("enter")
	h.waitFor("What does the on-call see?")
	h.key("enter")
	h.waitFor("Runbook · guided")
	if got := built.Target().Source; got == nil || *got != caller {
		t.Fatalf("session caller %v, want %s", got, caller)
	}
}
