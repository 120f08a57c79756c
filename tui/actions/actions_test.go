package actions

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pactions "github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/tui/common"
)

var webPod = cluster.PodRef{Namespace: "web", Name: "web-1"}

// readOnly is a cluster that can only read, as a recorded scenario.
type readOnly struct{ cluster.Cluster }

// liveish reads the calling pod and its log, answers curl with Envoy's
// local reply and keeps logger levels as Envoy admin does.
type liveish struct {
	readOnly
	mu     sync.Mutex
	levels map[string]string
	posts  []string
}

func newLiveish() *liveish {
	return &liveish{levels: map[string]string{"connection": "info", "upstream": "info", "http": "info"}}
}

func (c *liveish) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}, {Name: mesh.ProxyContainer}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}, nil
}

func (c *liveish) Logs(context.Context, cluster.PodRef, cluster.LogOptions) ([]byte, error) {
	return []byte("2025-12-02T03:00:01.200000Z\tdebug\tenvoy connection [C412] delayed connect error: 111\n"), nil
}

func (c *liveish) Exec(context.Context, cluster.PodRef, string, []string) ([]byte, []byte, error) {
	return []byte("HTTP/1.1 503 Service Unavailable\r\nserver: envoy\r\ncontent-length: 19\r\n\r\nno healthy upstream\n@@meshtriage@@ code=503 dns=0.00002 connect=0.0003 ttfb=0.0009 total=0.001 ip=10.96.0.9\n"), nil, nil
}

func (c *liveish) EnvoyAdminPost(_ context.Context, _ cluster.PodRef, path string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.posts = append(c.posts, path)
	if name, level, ok := strings.Cut(strings.TrimPrefix(path, "/logging?"), "="); ok {
		c.levels[name] = level
	}
	out := "active loggers:\n"
	for _, n := range []string{"connection", "http", "upstream"} {
		out += "  " + n + ": " + c.levels[n] + "\n"
	}
	return []byte(out), nil
}

func (c *liveish) level(n string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.levels[n]
}

type recorder struct {
	mu   sync.Mutex
	list []pactions.Record
}

func (r *recorder) record(a pactions.Record) {
	r.mu.Lock()
	r.list = append(r.list, a)
	r.mu.Unlock()
}

var now = time.Date(2025, 12, 2, 3, 0, 0, 0, time.UTC)

func newPanel(ctx context.Context, c cluster.Cluster, rec *recorder) *Model {
	cm := common.New(ctx, func() time.Time { return now }, true)
	cm.SetSize(80, 24)
	// A recorded scenario's source has no Runner; the live one's does.
	runner, _ := c.(pactions.Runner)
	m := New(cm, Deps{Cluster: c, Runner: runner, Target: cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &webPod}, Record: rec.record})
	m.SetSize(80, 24)
	return m
}

func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func enter(m *Model) tea.Cmd { return m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}) }

func TestTestRequestAsksThenSendsAndShows(t *testing.T) {
	rec := &recorder{}
	m := newPanel(context.Background(), newLiveish(), rec)
	m.Open(TestRequest)
	typeText(m, "healthz")
	golden.RequireEqual(t, ansi.Strip(m.View()))
	if len(rec.list) != 0 {
		t.Fatal("the request ran before it was confirmed")
	}
	cmd := enter(m)
	if cmd == nil {
		t.Fatal("enter did not run the request")
	}
	m.Update(cmd())
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "HTTP 503 UH from the sidecar (local reply): no healthy upstream") || !strings.Contains(v, "server: envoy") {
		t.Errorf("result:\n%s", v)
	}
	if len(rec.list) != 1 || rec.list[0].Name != "test-request" || !strings.Contains(rec.list[0].Target, "http://orders.shop.svc.cluster.local:8080/healthz") {
		t.Errorf("recorded %+v", rec.list)
	}
	if cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEscape}); cmd == nil || m.IsOpen() {
		t.Error("esc does not close the result")
	}
}

func TestActionsNeedALiveCluster(t *testing.T) {
	m := newPanel(context.Background(), readOnly{}, &recorder{})
	m.Open(DebugLogging)
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "cannot run here: this action needs a live cluster") {
		t.Errorf("view:\n%s", v)
	}
	if cmd := enter(m); cmd != nil {
		t.Error("enter ran an action that cannot run")
	}
}

// runUntilDone runs the commands an update returned until debugDoneMsg
// arrives, as the program would.
func runUntilDone(t *testing.T, m *Model, cmd tea.Cmd) {
	t.Helper()
	msgs := make(chan tea.Msg, 16)
	var launch func(tea.Cmd)
	launch = func(c tea.Cmd) {
		if c == nil {
			return
		}
		go func() {
			msg := c()
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, c := range b {
					launch(c)
				}
				return
			}
			msgs <- msg
		}()
	}
	launch(cmd)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case msg := <-msgs:
			_, done := msg.(debugDoneMsg)
			launch(m.Update(msg))
			if done {
				return
			}
		case <-deadline:
			t.Fatal("debug logging never ended")
		}
	}
}

func TestDebugLoggingWindowEndsWithARevert(t *testing.T) {
	c := newLiveish()
	rec := &recorder{}
	m := newPanel(context.Background(), c, rec)
	m.SetSize(140, 30) // wide enough for an Envoy debug line
	m.Open(DebugLogging)
	m.input.SetValue("50ms")
	cmd := enter(m)
	started := cmd()
	next := m.Update(started)
	if !m.DebugActive() || c.level("connection") != "debug" {
		t.Fatalf("debug not on: %v", c.levels)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "Envoy debug logging is ON") || !strings.Contains(v, "connection, http, upstream set to debug") {
		t.Errorf("running view:\n%s", v)
	}
	runUntilDone(t, m, next)
	if c.level("connection") != "info" || m.DebugActive() {
		t.Errorf("not reverted: %v", c.levels)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "reverted after") || !strings.Contains(v, "delayed connect error: 111") {
		t.Errorf("result:\n%s", v)
	}
	if len(rec.list) != 2 || !rec.list[1].Reverted || !strings.Contains(rec.list[1].Output, "delayed connect error") {
		t.Errorf("recorded %+v", rec.list)
	}
}

func TestDebugLoggingRevertsOnEscCloseAndSessionEnd(t *testing.T) {
	start := func(ctx context.Context) (*Model, *liveish, tea.Cmd) {
		c := newLiveish()
		m := newPanel(ctx, c, &recorder{})
		m.Open(DebugLogging)
		m.input.SetValue("10m")
		next := m.Update(enter(m)())
		if c.level("upstream") != "debug" {
			t.Fatal("debug not on")
		}
		return m, c, next
	}

	m, c, _ := start(context.Background())
	runUntilDone(t, m, m.Update(tea.KeyPressMsg{Code: tea.KeyEscape}))
	if c.level("upstream") != "info" {
		t.Error("esc did not revert")
	}

	m, c, _ = start(context.Background())
	m.Close() // quit
	if c.level("upstream") != "info" || m.IsOpen() {
		t.Error("Close did not revert before returning")
	}

	ctx, cancel := context.WithCancel(context.Background())
	m, c, next := start(ctx)
	cancel() // the session ended
	runUntilDone(t, m, next)
	if c.level("upstream") != "info" {
		t.Error("the end of the session's context did not revert")
	}
}

func TestDebugLoggingRefusesABadWindow(t *testing.T) {
	m := newPanel(context.Background(), newLiveish(), &recorder{})
	m.Open(DebugLogging)
	m.input.SetValue("2h")
	if cmd := enter(m); cmd != nil {
		t.Error("a two-hour window was accepted")
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "at most 10m0s") {
		t.Errorf("view:\n%s", v)
	}
}
