// Package checklist is the runbook as a list of steps: a status icon per
// step (pass, warn, fail, error, running, not run), its duration, the step
// the engine proposes next, and the causes reached so far.
package checklist

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// Kind is what a row stands for.
type Kind int

const (
	KindStep Kind = iota
	KindCause
	// KindSection is a heading ("Causes reached"); the cursor skips it.
	KindSection
)

// Row is one line of the checklist.
type Row struct {
	Kind     Kind
	ID       string
	Title    string
	Status   probes.Status // empty: not run
	Duration time.Duration
	Running  bool
	// Cancelled: the on-call cancelled the last run before it reported.
	Cancelled bool
	Proposed  bool
	Verdict   engine.Verdict
	// Dim rows are off the engine's path (guided mode's "other steps").
	Dim bool
	// Reached marks a cause the facts support (free mode also lists the
	// others, to rule them out).
	Reached bool
	// Undecided marks a cause not reached whose rules could not decide:
	// its evidence could not be read.
	Undecided bool
}

// Model is the checklist pane.
type Model struct {
	common  *common.Common
	title   string
	rows    []Row
	cursor  int
	offset  int
	width   int
	height  int
	spinner string
	focused bool
}

// New returns an empty checklist.
func New(c *common.Common) *Model {
	return &Model{common: c, focused: true}
}

// SetTitle names the pane ("Runbook · guided").
func (m *Model) SetTitle(t string) { m.title = t }

// SetSpinner is the frame drawn for running steps.
func (m *Model) SetSpinner(frame string) { m.spinner = frame }

// SetFocused draws the pane as the one receiving keys.
func (m *Model) SetFocused(f bool) { m.focused = f }

// SetRows replaces the rows, keeping the cursor on the same item.
func (m *Model) SetRows(rows []Row) {
	var keep string
	if r, ok := m.Selected(); ok {
		keep = rowKey(r)
	}
	m.rows = rows
	m.cursor = -1
	if keep != "" {
		for i, r := range rows {
			if r.Kind != KindSection && rowKey(r) == keep {
				m.cursor = i
				break
			}
		}
	}
	if m.cursor < 0 {
		m.cursor = m.nextSelectable(0, 1)
	}
	m.clampOffset()
}

// Rows returns the current rows.
func (m *Model) Rows() []Row { return m.rows }

func rowKey(r Row) string { return fmt.Sprintf("%d/%s", r.Kind, r.ID) }

// Selected is the row under the cursor.
func (m *Model) Selected() (Row, bool) {
	if m.cursor < 0 || m.cursor >= len(m.rows) {
		return Row{}, false
	}
	return m.rows[m.cursor], true
}

// Select moves the cursor to the row with id, if there is one.
func (m *Model) Select(kind Kind, id string) bool {
	for i, r := range m.rows {
		if r.Kind == kind && r.ID == id {
			m.cursor = i
			m.clampOffset()
			return true
		}
	}
	return false
}

// SetSize sets the pane's outer size, border included.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.clampOffset()
}

// Update moves the cursor.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	keys := m.common.Keys
	switch {
	case key.Matches(k, keys.Up):
		m.move(-1)
	case key.Matches(k, keys.Down):
		m.move(1)
	case key.Matches(k, keys.Top):
		m.cursor = m.nextSelectable(0, 1)
	case key.Matches(k, keys.Bottom):
		m.cursor = m.nextSelectable(len(m.rows)-1, -1)
	}
	m.clampOffset()
	return nil
}

func (m *Model) move(dir int) {
	if next := m.nextSelectable(m.cursor+dir, dir); next >= 0 {
		m.cursor = next
	}
}

func (m *Model) nextSelectable(from, dir int) int {
	for i := from; i >= 0 && i < len(m.rows); i += dir {
		if m.rows[i].Kind != KindSection {
			return i
		}
	}
	return -1
}

func (m *Model) listHeight() int { return max(0, m.height-3) } // border and title

func (m *Model) clampOffset() {
	h := m.listHeight()
	if h <= 0 {
		m.offset = 0
		return
	}
	if m.cursor >= 0 {
		if m.cursor < m.offset {
			m.offset = m.cursor
		}
		if m.cursor >= m.offset+h {
			m.offset = m.cursor - h + 1
		}
	}
	// Show the section heading above the first item when there is room.
	if m.offset > 0 && m.offset == m.cursor && m.rows[m.offset-1].Kind == KindSection {
		m.offset--
	}
	m.offset = max(0, min(m.offset, len(m.rows)-h))
}

// View renders the pane at its size.
func (m *Model) View() string {
	if m.width < 4 || m.height < 3 {
		return ""
	}
	s := m.common.Styles
	inner := m.width - 4
	h := m.listHeight()
	lines := []string{s.PaneTitle.Render(common.Truncate(m.title, inner))}
	end := min(len(m.rows), m.offset+h)
	for i := m.offset; i < end; i++ {
		lines = append(lines, m.renderRow(m.rows[i], i == m.cursor, inner))
	}
	if len(m.rows) == 0 {
		lines = append(lines, s.Muted.Render("no steps"))
	}
	body := common.FitLines(strings.Join(lines, "\n"), inner, m.height-2)
	pane := s.Pane
	if m.focused {
		pane = s.PaneFocused
	}
	return pane.Width(m.width).Height(m.height).Render(body)
}

func (m *Model) renderRow(r Row, selected bool, width int) string {
	s := m.common.Styles
	if r.Kind == KindSection {
		return s.Section.Render(common.Truncate(r.Title, width))
	}
	cursor := " "
	if selected {
		cursor = common.IconCursor
	}
	icon, iconStyle, right := rowIcon(m, r)
	titleStyle := s.Row
	switch {
	case r.Proposed:
		titleStyle = s.Proposed
	case r.Dim:
		titleStyle = s.RowDim
	case r.Kind == KindCause && r.Reached:
		titleStyle = s.Cause
	}
	// cursor, icon, title, right-aligned label: "› ✓ Service and pods  0.1s"
	titleWidth := width - 4 - ansi.StringWidth(right)
	if right != "" {
		titleWidth--
	}
	title := common.Truncate(r.Title, max(1, titleWidth))
	pad := max(0, titleWidth-ansi.StringWidth(title))
	line := cursor + " " + iconStyle.Render(icon) + " " + titleStyle.Render(title) + strings.Repeat(" ", pad)
	if right != "" {
		line += " " + s.Label.Render(right)
	}
	if selected {
		return s.Selected.Render(ansi.Strip(line))
	}
	return line
}

func rowIcon(m *Model, r Row) (icon string, style lipgloss.Style, right string) {
	s := m.common.Styles
	if r.Kind == KindCause {
		switch r.Verdict {
		case engine.Confirmed:
			return common.IconConfirmed, s.SuccessText, "confirmed"
		case engine.RuledOut:
			return common.IconRuledOut, s.Muted, "ruled out"
		}
		if !r.Reached && r.Undecided {
			return common.IconUndecided, s.StatusStyle(probes.StatusWarn), "undecided"
		}
		if !r.Reached {
			return common.IconCauseOther, s.NotRun, ""
		}
		return common.IconCause, s.Cause, "found"
	}
	switch {
	case r.Running:
		frame := m.spinner
		if frame == "" {
			frame = "*"
		}
		return frame, s.Running, "running"
	case r.Cancelled:
		return common.IconCancelled, s.Cancelled, "cancelled"
	case r.Status == "" && r.Proposed:
		return common.IconProposed, s.Proposed, "next"
	case r.Status == "":
		return common.IconNotRun, s.NotRun, ""
	}
	right = common.FormatDuration(r.Duration)
	if r.Proposed {
		right = "next"
	}
	return common.StatusIcon(r.Status), s.StatusStyle(r.Status), right
}

// ShortHelp is the checklist's keys for the footer.
func (m *Model) ShortHelp() []key.Binding {
	k := m.common.Keys
	return []key.Binding{k.Accept, k.RunAll, k.Rerun, k.Note, k.ToggleMode, k.CopyByHand, k.Help, k.Quit}
}

// FullHelp groups every key the main screen answers.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.common.Keys
	return [][]key.Binding{
		{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.Left, k.Right},
		{k.Accept, k.Rerun, k.RunAll, k.Cancel, k.ToggleMode, k.OpenCause, k.CopyByHand, k.TestRequest, k.DebugLogging},
		{k.Note, k.Confirm, k.RuleOut, k.Help, k.Quit, k.ForceQuit},
	}
}
