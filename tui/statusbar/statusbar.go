// Package statusbar is the top line of every screen: which cluster, which
// target, how long the session has run, and where the incident log goes.
package statusbar

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/meshtriage/meshtriage/probes"
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
func (m *Model) SetTarget(t probes.Target) {
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

// View renders the bar. The context and the clock always show; the target
// and the log path share the rest, the path cut in the middle (its
// directory and its file name both matter). The full path is in the quit
// dialog and printed on exit.
func (m *Model) View() string {
	if m.width <= 0 {
		return ""
	}
	s := m.common.Styles
	sep := " │ "
	ctx := m.Context
	if ctx == "" {
		ctx = "(no context)"
	}
	clock := "⏱ " + common.FormatClock(m.Elapsed())
	brand := "meshtriage" + sep
	if m.width < 100 {
		brand = ""
	}
	logPath := m.LogPath
	if logPath == "" {
		logPath = "(not recorded)"
	}
	fixed := 1 + ansi.StringWidth(brand) + len("ctx ") + ansi.StringWidth(ctx) + len(sep) + ansi.StringWidth(clock)
	room := m.width - fixed
	target, logRoom := m.target, 0
	if target != "" {
		room -= len(sep)
	}
	room -= len(sep) + len("log ")
	if room > 0 {
		logRoom = min(ansi.StringWidth(logPath), max(room/2, room-ansi.StringWidth(target)))
		target = common.Truncate(target, room-logRoom)
	}
	var b strings.Builder
	b.WriteString(s.StatusBar.Render(" "))
	if brand != "" {
		b.WriteString(s.StatusValue.Render("meshtriage") + s.StatusLabel.Render(sep))
	}
	b.WriteString(s.StatusLabel.Render("ctx ") + s.StatusValue.Render(ctx))
	if target != "" && room > 0 {
		b.WriteString(s.StatusLabel.Render(sep) + s.StatusValue.Render(target))
	}
	b.WriteString(s.StatusLabel.Render(sep) + s.StatusValue.Render(clock))
	if logRoom >= 8 {
		b.WriteString(s.StatusLabel.Render(sep+"log ") + s.StatusLog.Render(common.TruncateMiddle(logPath, logRoom)))
	}
	line := common.Truncate(b.String(), m.width)
	if pad := m.width - ansi.StringWidth(line); pad > 0 {
		line += s.StatusBar.Render(strings.Repeat(" ", pad))
	}
	return line
}
