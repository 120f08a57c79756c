// Package statusbar is the top line of every screen: which cluster, which
// target, how long the session has run, and where the incident log goes.
package statusbar

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/tui/common"
)

// Model is the status bar.
type Model struct {
	common  *common.Common
	Context string
	LogPath string
	Started time.Time
	target  string
	width   int
}

// New returns a status bar whose clock starts now.
func New(c *common.Common) *Model {
	return &Model{common: c, Started: c.Now()}
}

// SetTarget shows t compactly: service.namespace:port ← source pod.
func (m *Model) SetTarget(t cluster.Target) {
	s := t.Service + "." + t.Namespace
	if t.Port != 0 {
		s += fmt.Sprintf(":%d", t.Port)
	}
	if t.Source != nil {
		src := t.Source.Name
		if t.Source.Namespace != t.Namespace {
			src = t.Source.String()
		}
		s += " ← " + src
	}
	m.target = s
}

// Target is the target as shown.
func (m *Model) Target() string { return m.target }

// SetSize sets the width; the bar is one line high.
func (m *Model) SetSize(width, _ int) { m.width = width }

// Elapsed is the session time shown.
func (m *Model) Elapsed() time.Duration { return m.common.Now().Sub(m.Started) }

const logLabel = "log "

type part struct{ label, value string }

// View renders the bar: context, target, session clock and, when it fits,
// the incident log path (otherwise the footer shows it).
func (m *Model) View() string {
	if m.width <= 0 {
		return ""
	}
	s := m.common.Styles
	var b strings.Builder
	b.WriteString(s.StatusBar.Render(" "))
	for i, p := range m.parts() {
		if i > 0 {
			b.WriteString(s.StatusLabel.Render(" │ "))
		}
		if p.label != "" {
			b.WriteString(s.StatusLabel.Render(p.label))
		}
		style := s.StatusValue
		if p.label == logLabel {
			style = s.StatusLog
		}
		b.WriteString(style.Render(p.value))
	}
	line := common.Truncate(b.String(), m.width)
	if pad := m.width - ansi.StringWidth(line); pad > 0 {
		line += s.StatusBar.Render(strings.Repeat(" ", pad))
	}
	return line
}

// LogShown reports whether the bar has room for the log path; when it has
// not, the root model shows the path in the footer.
func (m *Model) LogShown() bool {
	ps := m.parts()
	return len(ps) > 0 && ps[len(ps)-1].label == logLabel
}

// parts is what fits: the program name goes first, then the log path (to
// the footer), then the middle of the context (a GKE context's project and
// zone), and the target last: what is triaged must stay in view.
func (m *Model) parts() []part {
	ctx := m.Context
	if ctx == "" {
		ctx = "(no context)"
	}
	clock := "⏱ " + common.FormatClock(m.Elapsed())
	build := func(brand, log bool, target string) []part {
		return m.build(brand, log, ctx, target, clock)
	}
	parts := build(true, true, m.target)
	if width(parts) > m.width {
		parts = build(false, true, m.target)
	}
	if width(parts) > m.width {
		parts = build(false, false, m.target)
	}
	if over := width(parts) - m.width; over > 0 {
		short := common.TruncateMiddle(ctx, max(minContext, ansi.StringWidth(ctx)-over))
		parts = m.build(false, false, short, m.target, clock)
	}
	if over := width(parts) - m.width; over > 0 && m.target != "" {
		short := common.TruncateMiddle(ctx, minContext)
		parts = m.build(false, false, short, common.Truncate(m.target, max(1, ansi.StringWidth(m.target)-over)), clock)
	}
	return parts
}

// minContext is as short as the context gets before the target gives way.
const minContext = 9

func width(ps []part) int {
	w := 1
	for i, p := range ps {
		if i > 0 {
			w += 3
		}
		w += ansi.StringWidth(p.label + p.value)
	}
	return w
}

func (m *Model) build(brand, log bool, ctx, target, clock string) []part {
	var ps []part
	if brand {
		ps = append(ps, part{"", "meshtriage"})
	}
	ps = append(ps, part{"ctx ", ctx})
	if target != "" {
		ps = append(ps, part{"", target})
	}
	ps = append(ps, part{"", clock})
	if log && m.LogPath != "" {
		ps = append(ps, part{logLabel, m.LogPath})
	}
	return ps
}
