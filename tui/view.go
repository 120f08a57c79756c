package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/meshtriage/meshtriage/tui/common"
)

// layout hands every component its size.
func (m *Model) layout() {
	w, h := m.common.Width, m.common.Height
	body := max(0, h-1-m.footerHeight())
	m.status.SetSize(w, 1)
	m.picker.SetSize(w, body)
	if m.symptom != nil {
		m.symptom.SetSize(w, body)
	}
	left := min(46, max(24, w*2/5))
	if w < 60 {
		left = w / 2
	}
	m.checklist.SetSize(left, body)
	m.detail.SetSize(w-left, body)
	m.cause.SetSize(w, body)
	m.notes.SetSize(w, h)
	if m.actions != nil {
		m.actions.SetSize(w, h)
	}
	m.helpView.SetSize(w, body)
	m.help.SetWidth(w)
	m.progress.SetWidth(max(10, w/3))
	m.showSelected()
}

func (m *Model) footerHeight() int {
	if m.screen == screenMain || m.screen == screenCause {
		return 3
	}
	return 2
}

// View renders the screen. It reads the model only.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "meshtriage"
	if m.status.Target() != "" {
		v.WindowTitle += " · " + m.status.Target()
	}
	return v
}

func (m *Model) render() string {
	w, h := m.common.Width, m.common.Height
	if w == 0 || h == 0 {
		return ""
	}
	s := m.common.Styles
	if w < minWidth || h < minHeight {
		return common.FitLines(common.Wrap(fmt.Sprintf("meshtriage needs at least %dx%d; this terminal is %dx%d.", minWidth, minHeight, w, h), w), w, h)
	}
	bodyH := max(0, h-1-m.footerHeight())
	var body string
	switch {
	case m.showHelp:
		body = m.helpView.View(m.screenName(), m.helpKeys())
	case m.fatal != "":
		body = s.PaneFocused.Width(w).Height(bodyH).Render(common.FitLines(
			s.ErrorText.Render(common.Wrap(m.fatal, w-4))+"\n\n"+s.Muted.Render("q quits"), w-4, bodyH-2))
	case m.screen == screenPicker:
		body = m.picker.View()
	case m.screen == screenSymptom:
		body = m.symptom.View()
	case m.screen == screenMain:
		body = lipgloss.JoinHorizontal(lipgloss.Top, m.checklist.View(), m.detail.View())
	case m.screen == screenCause:
		body = m.cause.View()
	default:
		body = s.Pane.Width(w).Height(bodyH).Render(common.FitLines(s.Muted.Render("starting the session…"), w-4, bodyH-2))
	}
	var lines []string
	lines = append(lines, m.status.View(), body)
	if m.screen == screenMain || m.screen == screenCause {
		lines = append(lines, m.proposalLine(w))
	}
	lines = append(lines, m.messageLine(w), m.helpLine())
	screen := common.FitLines(strings.Join(lines, "\n"), w, h)
	switch {
	case m.quitAsked:
		return overlay(screen, m.quitDialog(), w, h)
	case m.notes.IsOpen():
		return overlay(screen, m.notes.View(), w, h)
	case m.actions != nil && m.actions.IsOpen():
		return overlay(screen, m.actions.View(), w, h)
	}
	return screen
}

func (m *Model) screenName() string {
	switch m.screen {
	case screenPicker:
		return "target picker"
	case screenSymptom:
		return "symptom"
	case screenCause:
		return "cause"
	}
	return "checklist"
}

// helpKeys is the keymap of the active screen for the footer and `?`.
func (m *Model) helpKeys() help.KeyMap {
	if m.notes.IsOpen() {
		return m.notes
	}
	if m.actions != nil && m.actions.IsOpen() {
		return m.actions
	}
	switch m.screen {
	case screenPicker:
		return m.picker
	case screenSymptom:
		if m.symptom != nil {
			return m.symptom
		}
	case screenCause:
		return m.cause
	case screenMain:
		return m.checklist
	}
	return m.helpView
}

func (m *Model) helpLine() string {
	if m.showHelp {
		return m.fitHelp(m.helpView.ShortHelp())
	}
	return m.fitHelp(m.helpKeys().ShortHelp())
}

// fitHelp is the footer's keys that fit the width, whole: the keys before
// "? help" and "q quit" give way from the right, and those two stay, since
// ? shows every other key.
func (m *Model) fitHelp(keys []key.Binding) string {
	k := m.common.Keys
	h := m.help
	h.SetWidth(0) // measure untruncated
	shown := append([]key.Binding(nil), keys...)
	for {
		line := h.ShortHelpView(shown)
		if lipgloss.Width(line) <= m.common.Width {
			return line
		}
		drop := -1
		for i := len(shown) - 1; i >= 0; i-- {
			if name := shown[i].Help().Key; name != k.Help.Help().Key && name != k.Quit.Help().Key {
				drop = i
				break
			}
		}
		if drop < 0 {
			return line
		}
		shown = append(shown[:drop], shown[drop+1:]...)
	}
}

// proposalLine is the engine's suggestion, always in view.
func (m *Model) proposalLine(w int) string {
	s := m.common.Styles
	p := m.snap.proposal
	found := m.foundCauses()
	var line string
	switch {
	case m.eng == nil:
	case p.Abort != "":
		line = s.ErrorText.Render(common.IconFail+" cannot go on: "+p.Abort) + s.Muted.Render(" · m lists every step")
	case p.IsCause:
		line = s.Cause.Render(common.IconCause+" cause reached: "+p.Next) + s.Reason.Render(" · "+p.Reason) + s.Muted.Render(" · enter opens it")
	case p.Next == "" && len(found) == 0:
		line = s.Muted.Render("runbook finished without a cause: m lists every step, n adds a note")
	case p.Next == "":
		line = s.Cause.Render(common.IconCause+" found: "+strings.Join(found, ", ")) + s.Muted.Render(" · runbook finished · o opens it")
	default:
		title := p.Next
		if st, ok := m.stepByID[p.Next]; ok {
			title = st.Title
		}
		// A cause already found stays in view while the runbook goes on.
		if len(found) > 0 {
			line = s.Cause.Render(common.IconCause+" "+strings.Join(found, ", ")) + s.Muted.Render(" (o) │ ")
		}
		line += s.Proposed.Render(common.IconProposed+" next: "+title) + s.Reason.Render(" · "+p.Reason) + s.Muted.Render(" · enter")
	}
	return common.Truncate(line, w)
}

// foundCauses are the cause IDs reached so far: the proposal's and the
// findings', in that order, once each.
//
// A cause of the catalogue comes before an unexplained/ finding (a flag or
// error the vocabulary names no cause for): o opens the root cause the
// runbook reached, not the log line it could not explain, whichever probe
// reported first.
func (m *Model) foundCauses() []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range m.snap.proposal.Causes {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, f := range m.snap.findings {
		if !seen[f.Cause] {
			seen[f.Cause] = true
			out = append(out, f.Cause)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		return cmp.Compare(unexplained(a), unexplained(b))
	})
	return out
}

// unexplained is 1 for a finding the vocabulary names no cause for.
func unexplained(id string) int {
	if strings.HasPrefix(id, "unexplained/") {
		return 1
	}
	return 0
}

func (m *Model) messageLine(w int) string {
	s := m.common.Styles
	if b := m.batch; b != nil {
		pct := 0.0
		if b.total > 0 {
			pct = float64(b.done) / float64(b.total)
		}
		label := fmt.Sprintf(" %d/%d steps · esc cancels", b.done, b.total)
		return common.Truncate(m.progress.ViewAs(pct)+s.Label.Render(label), w)
	}
	if m.snap.logErr != nil && m.message == "" {
		return common.Truncate(s.ErrorText.Render("incident log NOT written: "+m.snap.logErr.Error()), w)
	}
	if n := len(m.runs); n > 0 && m.message == "" {
		return common.Truncate(s.Running.Render(fmt.Sprintf("%s running %d probe(s) · esc cancels", m.spinner.View(), n)), w)
	}
	if m.message == "" && m.opts.LogPath != "" && m.eng != nil && !m.status.LogShown() {
		return s.Label.Render("incident log ") + s.StatusLog.Render(common.TruncateMiddle(m.opts.LogPath, max(8, w-13)))
	}
	return common.Truncate(s.Message.Render(m.message), w)
}

func (m *Model) quitDialog() string {
	s := m.common.Styles
	k := m.common.Keys
	var where string
	switch {
	case m.eng == nil || !m.started:
		where = "No session has started; nothing was recorded."
	case m.opts.LogPath == "":
		where = "This session is not being recorded."
	default:
		where = "The incident log is written to\n" + m.opts.LogPath
	}
	width := min(64, m.common.Width-4)
	body := s.DialogTitle.Render("Quit meshtriage?") + "\n\n" + common.Wrap(where, width-4) + "\n\n" +
		s.Label.Render(k.Yes.Help().Key+" quits · "+k.No.Help().Key+" stays")
	return s.Dialog.Width(width).Render(body)
}

// overlay centres box over screen.
func overlay(screen, box string, w, h int) string {
	bw, bh := lipgloss.Width(box), lipgloss.Height(box)
	x, y := max(0, (w-bw)/2), max(0, (h-bh)/2)
	return lipgloss.NewCompositor(
		lipgloss.NewLayer(screen),
		lipgloss.NewLayer(box).X(x).Y(y).Z(1),
	).Render()
}

func envSet(env []string, name string) bool {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name && v != "" {
			return true
		}
	}
	return false
}

// osc52Likely guesses whether the terminal honours OSC 52 writes: VTE-based
// terminals (GNOME Terminal, Tilix), Apple's Terminal and the Linux console
// drop them. The guess only changes the message; the block is printed on
// exit either way.
func osc52Likely(env []string) bool {
	get := func(name string) string {
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v
			}
		}
		return ""
	}
	switch {
	case get("VTE_VERSION") != "", get("TERM_PROGRAM") == "Apple_Terminal", get("TERM") == "linux":
		return false
	}
	return true
}
