// Package symptom asks the runbook's start question: what is the on-call
// seeing? The answer picks the runbook's first step.
package symptom

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// ChosenMsg carries the symptom picked.
type ChosenMsg struct{ ID string }

// Model is the question screen.
type Model struct {
	common   *common.Common
	question string
	options  []engine.Symptom
	cursor   int
	width    int
	height   int
}

// New asks question with options.
func New(c *common.Common, question string, options []engine.Symptom) *Model {
	if question == "" {
		question = "What are you seeing?"
	}
	return &Model{common: c, question: question, options: options}
}

func (m *Model) SetSize(width, height int) { m.width, m.height = width, height }

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok || len(m.options) == 0 {
		return nil
	}
	keys := m.common.Keys
	switch {
	case key.Matches(k, keys.Up):
		m.cursor = max(0, m.cursor-1)
	case key.Matches(k, keys.Down):
		m.cursor = min(len(m.options)-1, m.cursor+1)
	case key.Matches(k, keys.Select):
		id := m.options[m.cursor].ID
		return func() tea.Msg { return ChosenMsg{ID: id} }
	}
	return nil
}

func (m *Model) View() string {
	if m.width < 4 || m.height < 3 {
		return ""
	}
	s := m.common.Styles
	inner := m.width - 4
	var b strings.Builder
	b.WriteString(s.PaneTitle.Render(common.Wrap(m.question, inner)) + "\n\n")
	for i, o := range m.options {
		line := "  " + o.Title
		if i == m.cursor {
			line = s.Selected.Render(common.Truncate(common.IconCursor+" "+o.Title, inner))
		} else {
			line = s.Row.Render(common.Truncate(line, inner))
		}
		b.WriteString(line + "\n")
	}
	return s.PaneFocused.Width(m.width).Height(m.height).Render(common.FitLines(b.String(), inner, m.height-2))
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.common.Keys
	return []key.Binding{k.Up, k.Down, k.Select, k.Quit}
}

func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }
