// Package notes is the text box the on-call types into: a free note for the
// incident log, or the reason a cause hypothesis is confirmed or ruled out
// (the "what we ruled out" list of the postmortem).
package notes

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// Purpose says what the text is for.
type Purpose struct {
	// Verdict is empty for a free note.
	Verdict engine.Verdict
	Cause   string
	Step    string
}

// SubmitMsg carries the text when the on-call saves it.
type SubmitMsg struct {
	Purpose Purpose
	Text    string
}

// DiscardMsg says the box was closed without saving.
type DiscardMsg struct{}

// Model is the note box.
type Model struct {
	common  *common.Common
	ta      textarea.Model
	purpose Purpose
	title   string
	open    bool
	width   int
	height  int
}

// New returns a closed box.
func New(c *common.Common) *Model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = "│ "
	ta.CharLimit = 4000
	km := textarea.DefaultKeyMap()
	// enter saves: most notes are one line, and a stray newline is cheaper
	// to add than a lost note is to retype.
	km.InsertNewline = c.Keys.Newline
	ta.KeyMap = km
	return &Model{common: c, ta: ta}
}

// Open shows the box for p with a title; it returns the cursor blink.
func (m *Model) Open(p Purpose, title, placeholder string) tea.Cmd {
	m.purpose, m.title, m.open = p, title, true
	m.ta.Reset()
	m.ta.Placeholder = placeholder
	m.ta.SetStyles(m.common.Styles.TextArea)
	return m.ta.Focus()
}

// IsOpen reports whether the box takes the keys.
func (m *Model) IsOpen() bool { return m.open }

// Purpose is what the open box is for.
func (m *Model) Purpose() Purpose { return m.purpose }

// SetSize sets the screen size; the box takes most of the width.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	w := m.boxWidth() - 4
	m.ta.SetWidth(max(10, w))
	m.ta.SetHeight(max(1, min(5, height-8)))
}

func (m *Model) boxWidth() int { return max(20, min(72, m.width-4)) }

// Update edits the text, or saves or discards it.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	if !m.open {
		return nil
	}
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, m.common.Keys.Save):
			m.open = false
			m.ta.Blur()
			msg := SubmitMsg{Purpose: m.purpose, Text: strings.TrimSpace(m.ta.Value())}
			return func() tea.Msg { return msg }
		case key.Matches(k, m.common.Keys.Discard):
			m.open = false
			m.ta.Blur()
			return func() tea.Msg { return DiscardMsg{} }
		}
	}
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(msg)
	return cmd
}

// View renders the box; the root model lays it over the screen.
func (m *Model) View() string {
	if !m.open {
		return ""
	}
	s := m.common.Styles
	k := m.common.Keys
	hint := s.Label.Render(k.Save.Help().Key + " saves · " + k.Newline.Help().Key + " new line · " + k.Discard.Help().Key + " discards")
	body := s.DialogTitle.Render(common.Truncate(m.title, m.boxWidth()-4)) + "\n" + m.ta.View() + "\n" + hint
	return s.Dialog.Width(m.boxWidth()).Render(body)
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.common.Keys
	return []key.Binding{k.Save, k.Newline, k.Discard}
}

func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }
