package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"

	pactions "github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/tui/actions"
	"github.com/meshtriage/meshtriage/tui/enginetest"
)

// ledger is the incident log as the test sees it: the actions recorded and
// the session's end, in the order they happened.
type ledger struct {
	mu      sync.Mutex
	entries []string
}

func (l *ledger) add(s string) {
	l.mu.Lock()
	l.entries = append(l.entries, s)
	l.mu.Unlock()
}

func (l *ledger) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.entries...)
}

func (l *ledger) record(a pactions.Record) {
	l.add(fmt.Sprintf("action %s reverted=%t error=%q", a.Name, a.Reverted, a.Error))
}

// endsInLedger is the scripted engine whose End lands in the ledger.
type endsInLedger struct {
	*enginetest.Engine
	l *ledger
}

func (e endsInLedger) End(reason string) error {
	e.l.add("end " + reason)
	return e.Engine.End(reason)
}

// sidecar is a calling pod's Envoy as the debug-logging action sees it: its
// admin API keeps logger levels, its log has one debug line. It reads
// nothing else, as a cluster with only that pod.
type sidecar struct {
	cluster.Cluster
	mu     sync.Mutex
	levels map[string]string
}

func newSidecar() *sidecar {
	return &sidecar{levels: map[string]string{"connection": "info", "upstream": "info", "http": "info"}}
}

func (c *sidecar) Logs(context.Context, cluster.PodRef, cluster.LogOptions) ([]byte, error) {
	return []byte("2025-03-14T03:07:01.200000Z\tdebug\tenvoy connection [C412] delayed connect error: 111\n"), nil
}

func (c *sidecar) Exec(context.Context, cluster.PodRef, string, []string) ([]byte, []byte, error) {
	return nil, nil, fmt.Errorf("no exec in this test")
}

func (c *sidecar) EnvoyAdminPost(_ context.Context, _ cluster.PodRef, path string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name, level, ok := strings.Cut(strings.TrimPrefix(path, "/logging?"), "="); ok {
		c.levels[name] = level
	}
	out := "active loggers:\n"
	for _, n := range []string{"connection", "http", "upstream"} {
		out += "  " + n + ": " + c.levels[n] + "\n"
	}
	return []byte(out), nil
}

func (c *sidecar) level(n string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.levels[n]
}

// TestDebugLoggingRevertedBeforeTheSessionEnds turns debug logging on from
// the main screen with a long window and quits while it is on: the revert
// is in the log before the session's end.
func TestDebugLoggingRevertedBeforeTheSessionEnds(t *testing.T) {
	l := &ledger{}
	c := newSidecar()
	eng := enginetest.New(outlierScript())
	web := cluster.PodRef{Namespace: "shop", Name: "productpage-1"}
	target := eng.Target()
	target.Source = &web
	deps := actions.Deps{Cluster: c, Runner: c, Target: target, Record: l.record}
	h := startEngine(t, Options{
		Engine:     endsInLedger{eng, l},
		ActionDeps: func() (actions.Deps, bool) { return deps, true },
	}, 100, 30)
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next: Service and selected pods")

	h.key("D")
	h.waitFor("Turn on Envoy debug logging?", "shop/productpage-1")
	if got := l.all(); len(got) != 0 || c.level("connection") != "info" {
		t.Fatalf("debug logging ran before it was confirmed: %v %v", got, c.levels)
	}
	for range len(actions.DefaultDebugWindow.String()) {
		h.tm.Send(backspace())
	}
	h.key("10m")
	h.key("enter")
	h.waitFor("Envoy debug logging is ON", "connection, http, upstream set to debug")
	if c.level("upstream") != "debug" {
		t.Fatalf("levels %v", c.levels)
	}

	h.key("ctrl+c")
	h.waitFor("Quit meshtriage?")
	h.key("y")
	h.tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if c.level("upstream") != "info" || c.level("connection") != "info" {
		t.Errorf("quit left debug logging on: %v", c.levels)
	}
	want := []string{
		"action " + pactions.DebugLoggingAction + ` reverted=false error=""`,
		"action " + pactions.DebugLoggingAction + ` reverted=true error=""`,
		"end quit",
	}
	if got := l.all(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestActionsWithoutDepsSayTheyNeedALiveCluster: demo and log resume give
// no deps; T and D say why nothing happens and leave the screen as it was.
func TestActionsWithoutDepsSayTheyNeedALiveCluster(t *testing.T) {
	eng := enginetest.New(outlierScript())
	h := start(t, eng, 100, 30, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next: Service and selected pods")
	before := len(eng.Calls())
	for _, k := range []string{"T", "D"} {
		h.key(k)
		s := h.waitFor("needs a live cluster")
		if strings.Contains(s, "Send a test request?") || strings.Contains(s, "Turn on Envoy debug logging?") {
			t.Errorf("%s opened the panel without deps:\n%s", k, s)
		}
		h.key("esc") // no panel to close: esc is the checklist's again
	}
	h.key("enter")
	h.waitFor("next: Kubernetes endpoints")
	calls := eng.Calls()
	for _, c := range calls[before:] {
		if c.Kind != "run" && c.Kind != "choose" {
			t.Errorf("T/D without deps touched the session: %+v", calls[before:])
			break
		}
	}
	if m := h.f.m; m.actions != nil {
		t.Error("the panel was built without deps")
	}
}
