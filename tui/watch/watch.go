// Package watch is the rollout screen: it follows a Deployment's rollout
// (probes/watch does the work) and shows each new pod's start, restarts and
// verdict, and the 503 rate before against during the rollout, as the
// reports arrive. It runs inside the triage UI or on its own (Run, for
// `meshtriage watch` on a terminal).
package watch

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	pwatch "github.com/meshtriage/meshtriage/probes/watch"
	"github.com/meshtriage/meshtriage/tui/common"
)

// ReportMsg carries one report of a running watch.
type ReportMsg struct {
	id     int
	Report pwatch.Report
}

// DoneMsg says the watch ended, with its final report.
type DoneMsg struct {
	id     int
	Report pwatch.Report
	Err    error
}

// ClosedMsg says the on-call left the screen.
type ClosedMsg struct{}

// Model is the rollout screen.
type Model struct {
	common  *common.Common
	width   int
	height  int
	id      int
	cancel  context.CancelFunc
	feed    *feed
	report  pwatch.Report
	running bool
	done    bool
	err     error
}

// feed hands the watch's reports to the UI: only the latest report
// matters, so a slow UI skips reports rather than blocking the watch.
type feed struct {
	mu     sync.Mutex
	latest pwatch.Report
	notify chan struct{}
	done   chan DoneMsg
}

func (f *feed) publish(r pwatch.Report) {
	f.mu.Lock()
	f.latest = r
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// New returns an idle screen.
func New(c *common.Common) *Model { return &Model{common: c} }

// Start begins watching with cfg; reports arrive as ReportMsg, the end as
// DoneMsg. A watch already running is stopped first.
func (m *Model) Start(cfg pwatch.Config) tea.Cmd {
	m.Stop()
	m.id++
	ctx, cancel := context.WithCancel(m.common.Ctx)
	m.cancel, m.running, m.done, m.err = cancel, true, false, nil
	m.report = pwatch.Report{Namespace: cfg.Namespace, Deployment: cfg.Deployment, Rollout: pwatch.Rollout{Message: "reading the deployment"}}
	f := &feed{notify: make(chan struct{}, 1), done: make(chan DoneMsg, 1)}
	m.feed = f
	id := m.id
	cfg.OnReport = f.publish
	go func() {
		rep, err := pwatch.Watch(ctx, cfg)
		cancel()
		f.done <- DoneMsg{id: id, Report: rep, Err: err}
	}()
	return m.next()
}

// next waits for the next report or the end, re-issued after each report.
func (m *Model) next() tea.Cmd {
	f, id := m.feed, m.id
	return func() tea.Msg {
		select {
		case <-f.notify:
			f.mu.Lock()
			defer f.mu.Unlock()
			return ReportMsg{id: id, Report: f.latest}
		case d := <-f.done:
			return d
		}
	}
}

// Stop ends a running watch; its DoneMsg still arrives.
func (m *Model) Stop() {
	if m.cancel != nil {
		m.cancel()
	}
}

// Running reports whether a watch is in progress.
func (m *Model) Running() bool { return m.running }

// Report is the latest report; Err the watch's error once done.
func (m *Model) Report() pwatch.Report { return m.report }
func (m *Model) Err() error            { return m.err }

func (m *Model) SetSize(width, height int) { m.width, m.height = width, height }

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case ReportMsg:
		if msg.id != m.id {
			return nil
		}
		m.report = msg.Report
		return m.next()
	case DoneMsg:
		if msg.id != m.id {
			return nil
		}
		m.report, m.err, m.running, m.done = msg.Report, msg.Err, false, true
		return nil
	case tea.KeyPressMsg:
		k := m.common.Keys
		switch {
		case key.Matches(msg, k.Cancel) && m.running:
			m.Stop()
		case key.Matches(msg, k.Back) && !m.running:
			return func() tea.Msg { return ClosedMsg{} }
		}
	}
	return nil
}

// View renders the screen at exactly its size.
func (m *Model) View() string {
	if m.width < 20 || m.height < 5 {
		return ""
	}
	s := m.common.Styles
	inner := m.width - 4
	r := m.report
	var b strings.Builder
	title := fmt.Sprintf("Rollout of deploy/%s in %s", r.Deployment, r.Namespace)
	b.WriteString(s.PaneTitle.Render(common.Truncate(title, inner)) + "\n")
	state := r.Rollout.Message
	if r.Elapsed != "" {
		state += " · watched " + r.Elapsed
	}
	b.WriteString(s.Muted.Render(common.Truncate(state, inner)) + "\n\n")

	if len(r.Pods) == 0 {
		b.WriteString(s.Muted.Render("no new pod yet") + "\n")
	} else {
		cols := []string{"", "new pod", "start order", "restarts", "conn refused"}
		var rows [][]string
		for _, p := range r.Pods {
			name := p.Name
			if p.Gone {
				name += " (gone)"
			}
			restarts := fmt.Sprint(p.Restarts)
			if p.EarlyRestart {
				restarts += " (<60s)"
			}
			rows = append(rows, []string{m.verdictIcon(p.Verdict), name, p.StartOrder, restarts, yesNo(p.ConnectionRefused)})
		}
		b.WriteString(common.Table(s, cols, rows, inner) + "\n")
	}
	b.WriteString("\n")
	b.WriteString(common.Wrap(s.Label.Render("503 rate before ")+r.Before.String(), inner) + "\n")
	b.WriteString(common.Wrap(s.Label.Render("503 rate during ")+r.During.String(), inner) + "\n")
	if r.RateProblem != "" {
		b.WriteString(s.WarningText.Render(common.Wrap(r.RateProblem, inner)) + "\n")
	}
	for _, w := range r.Warnings {
		b.WriteString(s.WarningText.Render(common.Wrap(common.IconWarn+" "+w, inner)) + "\n")
	}
	for _, line := range r.Regressions {
		b.WriteString(s.ErrorText.Render(common.Wrap(common.IconFail+" "+line, inner)) + "\n")
	}
	b.WriteString("\n" + m.verdict() + "\n")

	body := common.FitLines(strings.TrimRight(b.String(), "\n"), inner, m.height-2)
	return s.PaneFocused.Width(m.width).Height(m.height).Render(body)
}

func (m *Model) verdict() string {
	s := m.common.Styles
	r := m.report
	switch {
	case r.Regressed():
		return s.Fail.Render(common.IconFail + " REGRESSED: the gate fails")
	case m.running:
		return s.Running.Render("watching… ") + s.Muted.Render(m.common.Keys.Cancel.Help().Key+" stops")
	case m.err != nil:
		return s.Warn.Render(common.IconWarn + " " + common.Truncate(m.err.Error(), m.width-8))
	case r.Settled:
		return s.Pass.Render(common.IconPass + " PASS: no regression")
	}
	return s.Muted.Render("not started")
}

func (m *Model) verdictIcon(v string) string {
	s := m.common.Styles
	switch v {
	case pwatch.VerdictOK:
		return s.Pass.Render(common.IconPass)
	case pwatch.VerdictWarn:
		return s.Warn.Render(common.IconWarn)
	case pwatch.VerdictRegressed:
		return s.Fail.Render(common.IconFail)
	}
	return s.NotRun.Render(common.IconNotRun)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.common.Keys
	if m.running {
		return []key.Binding{k.Cancel, k.Quit}
	}
	return []key.Binding{k.Back, k.Quit}
}

func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }
