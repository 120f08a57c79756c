// Package helpscreen is the full key reference that `?` opens over the
// current screen.
package helpscreen

import (
	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/lipgloss/v2"

	"github.com/meshtriage/meshtriage/tui/common"
)

// Model renders the full help of whichever screen is active.
type Model struct {
	common *common.Common
	help   help.Model
	width  int
	height int
}

// New returns the help screen.
func New(c *common.Common) *Model {
	h := help.New()
	return &Model{common: c, help: h}
}

// SetSize sets the area the help fills.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.help.SetWidth(max(10, width-4))
}

// View renders the full help of km, titled, in a pane of the set size.
func (m *Model) View(title string, km help.KeyMap) string {
	if m.width < 4 || m.height < 3 {
		return ""
	}
	s := m.common.Styles
	m.help.Styles = s.Help
	inner := m.width - 4
	body := s.PaneTitle.Render(common.Truncate("Keys · "+title, inner)) + "\n\n" +
		m.help.FullHelpView(km.FullHelp()) + "\n\n" +
		s.Label.Render(common.Wrap(Legend, inner)) + "\n\n" +
		s.Muted.Render("? or esc closes this help")
	return s.PaneFocused.Width(m.width).Height(m.height).Render(common.FitLines(lipgloss.NewStyle().Render(body), inner, m.height-2))
}

// Legend explains the checklist's glyphs.
const Legend = common.IconPass + " pass  " + common.IconWarn + " warn  " + common.IconFail + " fail  " +
	common.IconError + " error  " + common.IconNotRun + " not run  " + common.IconProposed + " proposed next  " +
	common.IconCancelled + " cancelled  " + common.IconCause + " cause reached  " +
	common.IconConfirmed + " confirmed  " + common.IconRuledOut + " ruled out"

// ShortHelp is the help screen's own keys.
func (m *Model) ShortHelp() []key.Binding {
	return []key.Binding{m.common.Keys.Help, m.common.Keys.Back}
}

func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }
