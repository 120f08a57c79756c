// Package actions is the panel for the two things meshtriage does beyond
// reading: a test request through the source sidecar, and temporary Envoy
// debug logging. Each opens on a confirmation that says exactly what will
// happen; nothing runs until the on-call presses enter. Debug logging is
// reverted when its window ends, on esc, and by Close (the root model calls
// it when the session ends); the session context ending reverts it too.
package actions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	pactions "github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/tui/common"
)

// Kind is which action the panel runs.
type Kind int

const (
	TestRequest Kind = iota
	DebugLogging
)

func (k Kind) String() string {
	if k == DebugLogging {
		return "Envoy debug logging"
	}
	return "test request"
}

// Deps is what the actions need from the session.
type Deps struct {
	// Cluster is the session's cluster, for the reads an action makes.
	Cluster cluster.Cluster
	// Runner changes things in pods; nil when the session's source cannot
	// (a recorded scenario), which the panel says.
	Runner pactions.Runner
	Target cluster.Target
	// Record writes each action to the incident log (the triage's Record).
	Record pactions.Recorder
}

// runner is the Runner, or why there is none.
func (d Deps) runner() (pactions.Runner, error) {
	if d.Runner == nil {
		return nil, pactions.ErrNeedsLive
	}
	return d.Runner, nil
}

// ClosedMsg says the panel was closed.
type ClosedMsg struct{}

// DefaultDebugWindow is what the duration field offers.
const DefaultDebugWindow = 30 * time.Second

type state int

const (
	stateClosed state = iota
	stateConfirm
	stateRunning
	stateResult
)

// Model is the actions panel.
type Model struct {
	common *common.Common
	deps   Deps
	width  int
	height int

	state   state
	kind    Kind
	input   textinput.Model
	problem string
	id      int
	cancel  context.CancelFunc

	debug     *pactions.DebugSession
	debugEnds time.Time
	debugFor  time.Duration

	title   string
	summary string
	lines   []string
	failed  bool
	scroll  int
}

type testRequestDoneMsg struct {
	id   int
	resp pactions.TestResponse
	err  error
}

type debugStartedMsg struct {
	id   int
	sess *pactions.DebugSession
	err  error
}

type debugTickMsg struct{ id int }

type debugDoneMsg struct {
	id      int
	capture pactions.DebugCapture
	err     error
	undo    string
}

// New returns a closed panel.
func New(c *common.Common, deps Deps) *Model {
	in := textinput.New()
	in.Prompt = "› "
	in.CharLimit = 512
	return &Model{common: c, deps: deps, input: in}
}

// IsOpen reports whether the panel takes the keys.
func (m *Model) IsOpen() bool { return m.state != stateClosed }

// DebugActive reports whether debug logging is on right now.
func (m *Model) DebugActive() bool { return m.debug != nil }

// Open shows the confirmation of an action, or why it cannot run here.
func (m *Model) Open(k Kind) tea.Cmd {
	if m.state == stateRunning {
		return nil
	}
	m.kind, m.state, m.problem, m.scroll = k, stateConfirm, "", 0
	m.title, m.summary, m.lines, m.failed = "", "", nil, false
	switch {
	case m.deps.Target.Source == nil:
		m.problem = "needs the calling pod (--from pod/NAME): the action runs in its sidecar"
	default:
		if _, err := m.deps.runner(); err != nil {
			m.problem = err.Error()
		}
	}
	if k == TestRequest {
		m.input.Placeholder = "/"
		m.input.SetValue("/")
	} else {
		m.input.Placeholder = DefaultDebugWindow.String()
		m.input.SetValue(DefaultDebugWindow.String())
	}
	m.input.CursorEnd()
	m.input.SetStyles(textinput.DefaultStyles(m.common.Styles.IsDark))
	if m.problem != "" {
		m.input.Blur()
		return nil
	}
	return m.input.Focus()
}

// Close reverts debug logging if it is on and closes the panel. It blocks
// until the revert is done (at most pactions.RevertTimeout): the root model
// calls it on quit, before the program exits.
func (m *Model) Close() {
	if m.debug != nil {
		_, _ = m.debug.Stop(context.Background())
		m.debug = nil
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.state = stateClosed
	m.input.Blur()
}

func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.input.SetWidth(max(10, m.boxWidth()-8))
}

func (m *Model) boxWidth() int { return max(30, min(96, m.width-4)) }

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case testRequestDoneMsg:
		if msg.id != m.id {
			return nil
		}
		m.state = stateResult
		m.title = "Test request"
		if msg.err != nil {
			m.failed, m.summary, m.lines = true, msg.err.Error(), nil
			return nil
		}
		m.summary = incidentlog.Redact(msg.resp.Summary())
		m.lines = strings.Split(strings.TrimRight(incidentlog.Redact(msg.resp.Transcript()), "\n"), "\n")
		return nil
	case debugStartedMsg:
		if msg.id != m.id {
			if msg.sess != nil {
				_, _ = msg.sess.Stop(context.Background())
			}
			return nil
		}
		if msg.err != nil {
			m.state, m.title, m.failed, m.summary = stateResult, "Envoy debug logging", true, msg.err.Error()
			return nil
		}
		m.debug = msg.sess
		m.debugEnds = m.common.Now().Add(m.debugFor)
		return tea.Batch(m.tick(), m.stopAfter(msg.sess, m.debugFor))
	case debugTickMsg:
		if msg.id != m.id || m.debug == nil {
			return nil
		}
		return m.tick()
	case debugDoneMsg:
		if msg.id != m.id {
			return nil
		}
		m.debug = nil
		m.state, m.title = stateResult, "Envoy debug logging"
		c := msg.capture
		// Envoy's http logger prints request headers at debug: the screen
		// gets the incident log's redaction.
		m.lines = make([]string, len(c.Lines))
		for i, l := range c.Lines {
			m.lines[i] = incidentlog.Redact(l)
		}
		if msg.err != nil {
			m.failed = true
			m.summary = "the revert failed: " + msg.err.Error() + "; undo by hand: " + msg.undo
			return nil
		}
		m.summary = fmt.Sprintf("reverted after %s: %d log lines, %d at debug", c.Duration, len(c.Lines), c.DebugLines)
		if c.LogProblem != "" {
			m.summary += "; " + c.LogProblem
		}
		return nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	if m.state == stateConfirm && m.problem == "" {
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return cmd
	}
	return nil
}

func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	switch m.state {
	case stateConfirm:
		switch {
		case key.Matches(k, keys.Discard):
			m.state = stateClosed
			m.input.Blur()
			return closed
		case key.Matches(k, keys.Save) && m.problem == "":
			return m.start()
		}
		if m.problem == "" {
			var cmd tea.Cmd
			m.input, cmd = m.input.Update(k)
			return cmd
		}
	case stateRunning:
		if key.Matches(k, keys.Cancel) {
			if m.debug != nil {
				// Revert now; the result arrives as debugDoneMsg.
				return m.stopAfter(m.debug, 0)
			}
			if m.cancel != nil {
				m.cancel()
			}
		}
	case stateResult:
		switch {
		case key.Matches(k, keys.Back):
			m.state = stateClosed
			return closed
		case key.Matches(k, keys.Up):
			m.scroll = max(0, m.scroll-1)
		case key.Matches(k, keys.Down):
			m.scroll = min(max(0, len(m.lines)-1), m.scroll+1)
		case key.Matches(k, keys.Bottom):
			m.scroll = max(0, len(m.lines)-m.visibleLines())
		case key.Matches(k, keys.Top):
			m.scroll = 0
		}
	}
	return nil
}

func closed() tea.Msg { return ClosedMsg{} }

// start runs the confirmed action in a command.
func (m *Model) start() tea.Cmd {
	value := strings.TrimSpace(m.input.Value())
	runner, err := m.deps.runner()
	if err != nil {
		m.problem = err.Error()
		return nil
	}
	var window time.Duration
	if m.kind == DebugLogging {
		if window, err = time.ParseDuration(value); err != nil || window <= 0 || window > pactions.MaxDebugDuration {
			m.problem = ""
			m.summary = fmt.Sprintf("duration %q: want e.g. 30s, at most %s", value, pactions.MaxDebugDuration)
			return nil
		}
	}
	m.id++
	id := m.id
	m.state, m.summary = stateRunning, ""
	m.input.Blur()
	ctx, cancel := context.WithCancel(m.common.Ctx)
	m.cancel = cancel
	deps := m.deps
	// Reads that must see the cluster as it is now (the pod, the log of
	// the debug window) bypass the session's read cache.
	reads := cluster.Uncached(deps.Cluster)
	if m.kind == TestRequest {
		return func() tea.Msg {
			defer cancel()
			url, err := pactions.TestURL(ctx, deps.Cluster, deps.Target, value)
			if err != nil {
				return testRequestDoneMsg{id: id, err: err}
			}
			resp, err := pactions.SendTestRequest(ctx, reads, runner, pactions.TestRequest{Source: *deps.Target.Source, URL: url}, deps.Record)
			return testRequestDoneMsg{id: id, resp: resp, err: err}
		}
	}
	m.debugFor = window
	return func() tea.Msg {
		// ctx outlives this command: debug logging is reverted when it ends.
		sess, err := pactions.StartDebugLogging(ctx, reads, runner, pactions.DebugLogging{Pod: *deps.Target.Source}, deps.Record)
		return debugStartedMsg{id: id, sess: sess, err: err}
	}
}

func (m *Model) tick() tea.Cmd {
	id := m.id
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return debugTickMsg{id: id} })
}

// stopAfter reverts debug logging after d (0: now).
func (m *Model) stopAfter(sess *pactions.DebugSession, d time.Duration) tea.Cmd {
	id := m.id
	return func() tea.Msg {
		if d > 0 {
			select {
			case <-time.After(d):
			case <-sess.Done(): // reverted already: esc, Close, the session ended
			}
		}
		capture, err := sess.Stop(context.Background())
		return debugDoneMsg{id: id, capture: capture, err: err, undo: sess.Undo()}
	}
}

func (m *Model) visibleLines() int { return max(1, m.height-12) }

// View renders the panel as a dialog; the root model lays it over the
// screen.
func (m *Model) View() string {
	if m.state == stateClosed {
		return ""
	}
	s := m.common.Styles
	k := m.common.Keys
	w := m.boxWidth() - 4
	var b strings.Builder
	src := "<no calling pod>"
	if m.deps.Target.Source != nil {
		src = m.deps.Target.Source.String()
	}
	switch m.state {
	case stateConfirm:
		if m.kind == TestRequest {
			b.WriteString(s.DialogTitle.Render("Send a test request?") + "\n\n")
			b.WriteString(common.Wrap(fmt.Sprintf("Sends one GET to %s from %s (its app container, through its sidecar), and records the answer in the incident log. Path:", m.hostPort(), src), w) + "\n")
		} else {
			b.WriteString(s.DialogTitle.Render("Turn on Envoy debug logging?") + "\n\n")
			b.WriteString(common.Wrap(fmt.Sprintf("Sets the connection, upstream and http loggers of %s's sidecar to debug, captures what they log, and reverts to the previous levels when the window ends, on esc and on quit. Debug logging costs the proxy CPU. Window:", src), w) + "\n")
		}
		if m.problem != "" {
			b.WriteString("\n" + s.ErrorText.Render(common.Wrap(common.IconError+" cannot run here: "+m.problem, w)) + "\n\n")
			b.WriteString(s.Label.Render(k.Discard.Help().Key + " closes"))
			break
		}
		b.WriteString(m.input.View() + "\n")
		if m.summary != "" {
			b.WriteString(s.ErrorText.Render(common.Wrap(m.summary, w)) + "\n")
		}
		b.WriteString("\n" + s.Label.Render(k.Save.Help().Key+" runs it · "+k.Discard.Help().Key+" cancels"))
	case stateRunning:
		if m.debug != nil {
			left := max(0, m.debugEnds.Sub(m.common.Now()).Round(time.Second))
			b.WriteString(s.DialogTitle.Render("Envoy debug logging is ON") + "\n\n")
			b.WriteString(common.Wrap(fmt.Sprintf("%s: %s set to debug; reverting in %s.", src, strings.Join(m.debug.Changed(), ", "), left), w) + "\n\n")
			b.WriteString(s.Label.Render(k.Cancel.Help().Key + " reverts now"))
		} else {
			b.WriteString(s.DialogTitle.Render("Running the "+m.kind.String()+"…") + "\n\n")
			b.WriteString(s.Label.Render(k.Cancel.Help().Key + " cancels"))
		}
	case stateResult:
		b.WriteString(s.DialogTitle.Render(m.title) + "\n\n")
		st := s.SuccessText
		if m.failed {
			st = s.ErrorText
		}
		b.WriteString(st.Render(common.Wrap(m.summary, w)) + "\n")
		if len(m.lines) > 0 {
			n := m.visibleLines()
			from := min(m.scroll, max(0, len(m.lines)-1))
			to := min(len(m.lines), from+n)
			b.WriteString("\n")
			for _, l := range m.lines[from:to] {
				// Envoy separates its log fields with tabs, which the
				// dialog would expand past its width.
				b.WriteString(s.Muted.Render(common.Truncate(strings.ReplaceAll(l, "\t", " "), w)) + "\n")
			}
			if len(m.lines) > n {
				b.WriteString(s.Label.Render(fmt.Sprintf("lines %d-%d of %d · ↑/↓ scroll", from+1, to, len(m.lines))) + "\n")
			}
		}
		b.WriteString("\n" + s.Label.Render("kept in the incident log · "+k.Back.Help().Key+" closes"))
	}
	return s.Dialog.Width(m.boxWidth()).Render(b.String())
}

func (m *Model) hostPort() string {
	t := m.deps.Target
	if t.Port != 0 {
		return fmt.Sprintf("%s:%d", t.Host(), t.Port)
	}
	return t.Host()
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.common.Keys
	switch m.state {
	case stateConfirm:
		return []key.Binding{k.Save, k.Discard}
	case stateRunning:
		return []key.Binding{k.Cancel}
	}
	return []key.Binding{k.Up, k.Down, k.Back}
}

func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }
