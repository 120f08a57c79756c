// Package detail is the pane beside the checklist: for the selected step,
// the probe's summary, its evidence table, the raw output and the commands
// the on-call would type to see the same by hand.
package detail

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// Model is the detail pane: a scrollable viewport with a title line.
type Model struct {
	common  *common.Common
	vp      viewport.Model
	title   string
	key     string
	content string
	// wide: a line is wider than the pane (a command's long word), which
	// left and right scroll to.
	wide   bool
	width  int
	height int
}

// New returns an empty pane.
func New(c *common.Common) *Model {
	vp := viewport.New()
	// Content is wrapped once per change (layout), not by the viewport's
	// SoftWrap, which re-measures every line on every View: 20+ ms at 5,000
	// evidence rows (BENCHMARKS.md, TUI View).
	vp.SoftWrap = false
	// The checklist owns the arrow keys; the pane scrolls with the page keys.
	vp.KeyMap = viewport.KeyMap{
		PageDown:     c.Keys.PageDown,
		PageUp:       c.Keys.PageUp,
		HalfPageDown: key.NewBinding(key.WithDisabled()),
		HalfPageUp:   key.NewBinding(key.WithDisabled()),
		Up:           key.NewBinding(key.WithDisabled()),
		Down:         key.NewBinding(key.WithDisabled()),
		Left:         c.Keys.Left,
		Right:        c.Keys.Right,
	}
	return &Model{common: c, vp: vp}
}

// Show replaces the pane's content. itemKey names what is shown: the scroll
// position survives a refresh of the same item and resets for a new one.
func (m *Model) Show(itemKey, title, content string) {
	if itemKey != m.key {
		m.vp.GotoTop()
		m.vp.SetXOffset(0)
	}
	m.key, m.title, m.content = itemKey, title, content
	m.layout()
}

// layout hands the content to the viewport as it is: the Render functions
// lay it out for InnerWidth, breaking text between words and a command
// between shell words only. A hard wrap here would cut the one thing that
// may be wider than the pane, a command's word (a quoted grep pattern), in
// two; it stands whole on its line instead, left and right scroll to its
// end, and y copies it.
func (m *Model) layout() {
	m.vp.SetContent(m.content)
	m.wide = false
	for _, l := range strings.Split(m.content, "\n") {
		if ansi.StringWidth(l) > m.vp.Width() {
			m.wide = true
			break
		}
	}
}

// Content is what the pane shows, unstyled lines included.
func (m *Model) Content() string { return m.content }

// SetSize sets the outer size, border included.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.vp.SetWidth(max(0, width-4))
	m.vp.SetHeight(max(0, height-3))
	m.layout()
}

// InnerWidth is the width content is laid out for.
func (m *Model) InnerWidth() int { return max(10, m.width-4) }

// Update scrolls.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	m.vp, cmd = m.vp.Update(msg)
	return cmd
}

// View renders the pane.
func (m *Model) View() string {
	if m.width < 4 || m.height < 3 {
		return ""
	}
	s := m.common.Styles
	inner := m.width - 4
	title := m.title
	if pct := m.vp.ScrollPercent(); m.vp.TotalLineCount() > m.vp.Height() {
		title = fmt.Sprintf("%s  %3.0f%%", title, pct*100)
	}
	if m.wide {
		// Some words go on past the pane's edge: ← and → reach them.
		title += "  ←→ wide lines"
	}
	body := s.PaneTitle.Render(common.Truncate(title, inner)) + "\n" + m.vp.View()
	return s.Pane.Width(m.width).Height(m.height).Render(common.FitLines(body, inner, m.height-2))
}

func (m *Model) ShortHelp() []key.Binding {
	return []key.Binding{m.common.Keys.PageUp, m.common.Keys.PageDown, m.common.Keys.Left, m.common.Keys.Right}
}

func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// StepState is what the UI knows about a step beyond its last result.
type StepState struct {
	Ran       bool
	Running   bool
	Cancelled bool
	Proposed  bool
	Reason    string
	// Undecided are this step's rules that could not decide.
	Undecided []string
}

// RenderStep lays out a step and its last result for a pane width wide.
func RenderStep(s *common.Styles, width int, step engine.Step, res probes.Result, st StepState) string {
	var b strings.Builder
	section := func(name string) {
		b.WriteString("\n" + s.Heading.Render(name) + "\n")
	}
	meta := "probe " + step.Probe
	if st.Ran {
		meta += " · " + s.StatusStyle(res.Status).Render(string(res.Status))
		if d := common.FormatDuration(res.Duration); d != "" {
			meta += " · " + d
		}
	}
	b.WriteString(s.Title.Render(common.Wrap(step.Title, width)) + "\n" + s.Label.Render(common.Wrap(meta, width)) + "\n")
	if st.Proposed && st.Reason != "" {
		b.WriteString(s.Reason.Render(common.Wrap(common.IconProposed+" proposed next: "+st.Reason, width)) + "\n")
	}
	if step.Tell != "" {
		b.WriteString("\n" + common.Wrap(step.Tell, width) + "\n")
	}
	switch {
	case st.Running:
		b.WriteString("\n" + s.Running.Render("Running… esc cancels.") + "\n")
	case st.Cancelled && !st.Ran:
		b.WriteString("\n" + s.Cancelled.Render("Cancelled before it reported. enter or r runs it again.") + "\n")
	case !st.Ran:
		b.WriteString("\n" + s.Muted.Render("Not run yet: enter runs it.") + "\n")
	}
	if st.Ran {
		section("Summary")
		b.WriteString(common.Indent(common.Wrap(res.Summary, width-2), "  ") + "\n")
		if len(res.Evidence.Rows) > 0 || len(res.Evidence.Columns) > 0 {
			section("Evidence")
			b.WriteString(common.Indent(common.Table(s, res.Evidence.Columns, res.Evidence.Rows, width-2), "  ") + "\n")
		}
		if raw := strings.TrimRight(res.Evidence.Raw, "\n"); raw != "" {
			section("Raw")
			b.WriteString(s.Muted.Render(common.Indent(common.Wrap(raw, width-2), "  ")) + "\n")
		}
	}
	if len(res.Commands) > 0 {
		b.WriteString("\n" + s.Heading.Render("By hand") + s.Muted.Render("  (y copies)") + "\n")
		for _, c := range res.Commands {
			b.WriteString(RenderCommand(s, c, width, "$ ") + "\n")
		}
	}
	if len(st.Undecided) > 0 {
		section("Undecided rules")
		for _, u := range st.Undecided {
			b.WriteString(s.WarningText.Render(common.Indent(common.Wrap(u, width-2), "  ")) + "\n")
		}
	}
	if st.Ran && len(res.Facts) > 0 {
		section("Facts")
		b.WriteString(renderFacts(s, res.Facts, width))
	}
	if len(step.Warnings) > 0 {
		section("Warnings")
		for _, w := range step.Warnings {
			b.WriteString(s.WarningText.Render(common.Hang(w.Title, width, common.IconWarn+" ")) + "\n")
			if w.Text != "" {
				b.WriteString(common.Indent(common.Wrap(w.Text, width-2), "  ") + "\n")
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func renderFacts(s *common.Styles, f probes.Facts, width int) string {
	names := make([]string, 0, len(f))
	for k := range f {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(ansi.Hardwrap("  "+s.Label.Render(n+" = ")+FactValue(f[n]), width, true) + "\n")
	}
	return b.String()
}

// RenderCommand lays a command out as the on-call reads and copies it:
// after first ("$ "), broken between shell words only, the lines it
// continues indented under it.
func RenderCommand(s *common.Styles, cmd string, width int, first string) string {
	rest := strings.Repeat(" ", ansi.StringWidth(first)+2)
	// Line by line: a style renders a block as wide as its widest line,
	// which would pad every line to the long word's width.
	lines := strings.Split(common.WrapCommand(cmd, width, first, rest), "\n")
	for i, l := range lines {
		lines[i] = s.Command.Render(l)
	}
	return strings.Join(lines, "\n")
}

// FactValue renders a fact's value as the runbook conditions read it.
func FactValue(v any) string {
	switch v := v.(type) {
	case []string:
		if len(v) == 0 {
			return "[]"
		}
		return "[" + strings.Join(v, ", ") + "]"
	case string:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprint(v)
}

// RenderCause is the pane's summary of a cause row; the cause screen has the
// rest.
func RenderCause(s *common.Styles, width int, c engine.Cause, f *engine.Finding, v engine.Verdict) string {
	var b strings.Builder
	if f != nil {
		b.WriteString(s.Cause.Render(common.Hang(c.Title, width, common.IconCause+" ")) + "\n")
	} else {
		b.WriteString(s.Title.Render(common.Hang(c.Title, width, common.IconCauseOther+" ")) + "\n")
	}
	b.WriteString(s.Label.Render(common.Wrap(c.ID, width)) + "\n")
	if f == nil {
		b.WriteString(s.Label.Render(common.Wrap("not supported by the facts so far", width)) + "\n")
	}
	if f != nil && f.Confidence != "" {
		b.WriteString(s.Label.Render(common.Wrap("confidence "+f.Confidence, width)) + "\n")
	}
	if v != "" {
		b.WriteString(s.Label.Render(common.Wrap("hypothesis "+strings.ReplaceAll(string(v), "_", " "), width)) + "\n")
	}
	if c.Summary != "" {
		b.WriteString("\n" + common.Wrap(c.Summary, width) + "\n")
	}
	if f != nil && f.Summary != "" && f.Summary != c.Summary {
		b.WriteString("\n" + common.Wrap(f.Summary, width) + "\n")
	}
	if f != nil && len(f.Evidence) > 0 {
		b.WriteString("\n" + s.Heading.Render("Evidence") + "\n")
		b.WriteString(RenderEvidence(s, width, f.Evidence) + "\n")
	}
	b.WriteString("\n" + s.Muted.Render(common.Wrap(fmt.Sprintf("enter opens the fix directions (%d) and verification (%d).", len(c.Fixes), len(c.Verify)), width)))
	return b.String()
}

// RenderUndecided shows an open hypothesis: a cause the rules could
// neither confirm nor rule out because what they read could not be read,
// and the commands that would settle it.
func RenderUndecided(s *common.Styles, width int, c engine.Cause, u engine.Undecided, v engine.Verdict) string {
	var b strings.Builder
	b.WriteString(s.Title.Render(common.Hang(c.Title, width, common.IconUndecided+" ")) + "\n")
	b.WriteString(s.Label.Render(common.Wrap(c.ID, width)) + "\n")
	b.WriteString(s.Label.Render(common.Wrap("undecided: neither confirmed nor ruled out (strongest rule: "+u.Confidence+")", width)) + "\n")
	if v != "" {
		b.WriteString(s.Label.Render(common.Wrap("hypothesis "+strings.ReplaceAll(string(v), "_", " "), width)) + "\n")
	}
	if c.Summary != "" {
		b.WriteString("\n" + common.Wrap(c.Summary, width) + "\n")
	}
	b.WriteString("\n" + s.Heading.Render("What would settle it") + "\n")
	if len(u.Unknown) > 0 {
		b.WriteString(s.Label.Render(common.Hang(strings.Join(u.Unknown, ", "), width, "unknown ")) + "\n")
	}
	if u.Why != "" {
		b.WriteString(common.Wrap(u.Why, width) + "\n")
	}
	for _, cmd := range u.Settle {
		b.WriteString(RenderCommand(s, cmd, width, "  $ ") + "\n")
	}
	more := "c confirms it, x rules it out once you have read the evidence; enter opens its fix directions."
	if len(u.Settle) > 0 {
		more = "y copies these commands; " + more
	}
	b.WriteString("\n" + s.Muted.Render(common.Wrap(more, width)))
	return b.String()
}

// RenderEvidence lays out why a cause's rules fired: per rule, the reason,
// the condition, the facts it read, the probe results behind them and the
// probe's evidence table.
func RenderEvidence(s *common.Styles, width int, evs []engine.Evidence) string {
	var b strings.Builder
	for i, ev := range evs {
		if i > 0 {
			b.WriteString("\n")
		}
		head := ev.Step
		if ev.Reason != "" {
			head += ": " + ev.Reason
		}
		b.WriteString(common.Hang(head, width, "  • ") + "\n")
		if ev.When != "" {
			b.WriteString(s.Label.Render(common.Hang(ev.When, width, "    when ")) + "\n")
		}
		if len(ev.Facts) > 0 {
			b.WriteString(s.Label.Render(common.Hang(strings.Join(ev.Facts, ", "), width, "    facts ")) + "\n")
		}
		for _, p := range ev.Probes {
			b.WriteString(common.Hang(p, width, "    ") + "\n")
		}
		if t := ev.Table; t != nil && len(t.Rows) > 0 {
			b.WriteString(common.Indent(common.Table(s, t.Columns, t.Rows, width-4), "    ") + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
