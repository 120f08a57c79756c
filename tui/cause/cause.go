// Package cause is the screen of a root cause: the evidence that supports
// it, the fix directions (text, the patch with what its simulation found,
// YAML and commands, each block copyable; copying a patch chooses its fix), the
// trade-offs and security notes, the warnings, and the verification steps,
// which run from here.
package cause

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/detail"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// Messages the screen sends to the root model, which does the work.
type (
	// BackMsg leaves the screen.
	BackMsg struct{}
	// CopyMsg asks to copy a block to the clipboard.
	CopyMsg struct {
		What string
		Text string
	}
	// ChooseFixMsg records the fix direction the on-call picked.
	ChooseFixMsg struct{ Cause, Fix string }
	// VerifyMsg asks to run the cause's verification.
	VerifyMsg struct{ Cause string }
	// NoticeMsg is a hint for the message line.
	NoticeMsg string
)

// Block is a copyable piece of a fix direction: its patch (the kubectl
// commands that apply it), one YAML snippet, or the fix's commands
// together.
type Block struct {
	Fix   string
	What  string // BlockPatch, "YAML", "commands"
	Text  string
	line  int
	lines int
}

// BlockPatch is the What of a fix's patch: `kubectl patch ... --type=...
// -p '...'` (or `kubectl apply -f -` with the object), computed from the
// evidence and proven on the configuration before it is shown.
const BlockPatch = "patch"

// Model is the cause screen.
type Model struct {
	common    *common.Common
	vp        viewport.Model
	cause     engine.Cause
	finding   *engine.Finding
	verdict   engine.Verdict
	chosenFix string
	verify    []engine.VerifyResult
	verifying bool
	spinner   string
	blocks    []Block
	sel       int
	width     int
	height    int
}

// New returns an empty screen.
func New(c *common.Common) *Model {
	vp := viewport.New()
	vp.KeyMap = viewport.KeyMap{
		PageDown:     c.Keys.PageDown,
		PageUp:       c.Keys.PageUp,
		HalfPageDown: key.NewBinding(key.WithDisabled()),
		HalfPageUp:   key.NewBinding(key.WithDisabled()),
		Up:           key.NewBinding(key.WithDisabled()),
		Down:         key.NewBinding(key.WithDisabled()),
		Left:         key.NewBinding(key.WithDisabled()),
		Right:        key.NewBinding(key.WithDisabled()),
	}
	return &Model{common: c, vp: vp}
}

// Open shows a cause, resetting the selection when it is another cause.
func (m *Model) Open(c engine.Cause, f *engine.Finding, v engine.Verdict) {
	if c.ID != m.cause.ID {
		// No block is selected until the on-call tabs to one: the screen
		// opens on the evidence.
		m.sel, m.chosenFix, m.verify, m.verifying = -1, "", nil, false
		m.vp.GotoTop()
	}
	// A finding's directions are expanded for the target; prefer them.
	if f != nil {
		if len(f.Fixes) > 0 {
			c.Fixes = f.Fixes
		}
		if len(f.Verify) > 0 {
			c.Verify = f.Verify
		}
		if f.ChosenFix != "" {
			m.chosenFix = f.ChosenFix
		}
	}
	m.cause, m.finding, m.verdict = c, f, v
	m.render()
}

// CauseID is the cause on screen.
func (m *Model) CauseID() string { return m.cause.ID }

// SetVerdict shows the hypothesis verdict.
func (m *Model) SetVerdict(v engine.Verdict) { m.verdict = v; m.render() }

// SetChosenFix marks the fix the on-call picked.
func (m *Model) SetChosenFix(id string) { m.chosenFix = id; m.render() }

// SetVerifying shows the verification as running.
func (m *Model) SetVerifying(on bool) { m.verifying = on; m.render() }

// SetVerifyResults shows what the verification found.
func (m *Model) SetVerifyResults(r []engine.VerifyResult) {
	m.verify, m.verifying = r, false
	m.render()
}

// SetSpinner is the frame drawn while verification runs.
func (m *Model) SetSpinner(frame string) {
	if m.verifying && frame != m.spinner {
		m.spinner = frame
		m.render()
	}
}

// Blocks are the copyable blocks in screen order.
func (m *Model) Blocks() []Block { return m.blocks }

// Selected is the block under the cursor.
func (m *Model) Selected() (Block, bool) {
	if m.sel < 0 || m.sel >= len(m.blocks) {
		return Block{}, false
	}
	return m.blocks[m.sel], true
}

// SetSize sets the screen's outer size.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.vp.SetWidth(max(0, width-4))
	m.vp.SetHeight(max(0, height-3))
	m.render()
}

// Update handles the screen's keys.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		var cmd tea.Cmd
		m.vp, cmd = m.vp.Update(msg)
		return cmd
	}
	keys := m.common.Keys
	switch {
	case key.Matches(k, keys.Back):
		return send(BackMsg{})
	case key.Matches(k, keys.NextBlock):
		m.selectBlock(m.sel + 1)
	case key.Matches(k, keys.PrevBlock):
		m.selectBlock(m.sel - 1)
	case key.Matches(k, keys.Copy):
		if b, ok := m.Selected(); ok {
			copyMsg := send(CopyMsg{What: b.Fix + " " + b.What, Text: b.Text})
			if b.What == BlockPatch {
				// Copying a fix's patch is choosing that fix: the incident
				// log records it.
				return tea.Sequence(copyMsg, send(ChooseFixMsg{Cause: m.cause.ID, Fix: b.Fix}))
			}
			return copyMsg
		}
		return send(NoticeMsg(keys.NextBlock.Help().Key + " selects a block to copy"))
	case key.Matches(k, keys.ChooseFix):
		if b, ok := m.Selected(); ok {
			return send(ChooseFixMsg{Cause: m.cause.ID, Fix: b.Fix})
		}
		return send(NoticeMsg(keys.NextBlock.Help().Key + " selects a fix direction first"))
	case key.Matches(k, keys.Verify):
		if !m.verifying {
			return send(VerifyMsg{Cause: m.cause.ID})
		}
	case key.Matches(k, keys.Top):
		m.vp.GotoTop()
	case key.Matches(k, keys.Bottom):
		m.vp.GotoBottom()
	default:
		var cmd tea.Cmd
		m.vp, cmd = m.vp.Update(msg)
		return cmd
	}
	return nil
}

func send(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }

func (m *Model) selectBlock(i int) {
	if len(m.blocks) == 0 {
		return
	}
	m.sel = max(0, min(i, len(m.blocks)-1))
	m.render()
	if m.sel < 0 {
		return
	}
	b := m.blocks[m.sel]
	// Bring the whole block into view, its heading line included.
	top := max(0, b.line-1)
	if top < m.vp.YOffset() || b.line+b.lines > m.vp.YOffset()+m.vp.Height() {
		m.vp.SetYOffset(top)
	}
}

// View renders the screen.
func (m *Model) View() string {
	if m.width < 4 || m.height < 3 {
		return ""
	}
	s := m.common.Styles
	inner := m.width - 4
	title := common.IconCause + " " + m.cause.ID
	if m.vp.TotalLineCount() > m.vp.Height() {
		title += fmt.Sprintf("  %3.0f%%", m.vp.ScrollPercent()*100)
	}
	body := s.PaneTitle.Render(common.Truncate(title, inner)) + "\n" + m.vp.View()
	return s.PaneFocused.Width(m.width).Height(m.height).Render(common.FitLines(body, inner, m.height-2))
}

// render lays the cause out and records where each block starts, so the
// selection can scroll to it.
func (m *Model) render() {
	s := m.common.Styles
	width := max(20, m.width-4)
	var lines []string
	add := func(text string) {
		lines = append(lines, strings.Split(text, "\n")...)
	}
	section := func(name string) {
		add("")
		add(s.Heading.Render(name))
	}
	c := m.cause
	add(s.Cause.Render(common.Wrap(c.Title, width)))
	meta := c.ID
	if c.Warning {
		meta += " · warning (not a root cause by itself)"
	}
	if m.finding != nil && m.finding.Confidence != "" {
		meta += " · confidence " + m.finding.Confidence
	}
	switch m.verdict {
	case engine.Confirmed:
		meta += " · " + common.IconConfirmed + " confirmed"
	case engine.RuledOut:
		meta += " · " + common.IconRuledOut + " ruled out"
	}
	add(s.Label.Render(meta))
	if n := len(c.Fixes); n > 0 || len(c.Verify) > 0 {
		add(s.Muted.Render(fmt.Sprintf("%s · %s below · %s jumps to the fixes",
			plural(n, "fix direction"), plural(len(c.Verify), "verification step"), m.common.Keys.NextBlock.Help().Key)))
	}
	if c.Summary != "" {
		add("")
		add(common.Wrap(c.Summary, width))
	}
	if f := m.finding; f != nil && (f.Summary != "" || len(f.Evidence) > 0) {
		section("Evidence")
		if f.Summary != "" && f.Summary != c.Summary {
			add(common.Indent(common.Wrap(f.Summary, width-2), "  "))
		}
		if len(f.Evidence) > 0 {
			add(detail.RenderEvidence(s, width, f.Evidence))
		}
	}

	m.blocks = nil
	if len(c.Fixes) > 0 {
		section("Fix directions  (tab selects a block, y copies, enter chooses the fix)")
	}
	for i, fix := range c.Fixes {
		add("")
		mark := "  "
		if fix.ID == m.chosenFix {
			mark = common.IconConfirmed + " "
		}
		add(s.Title.Render(mark + strconv.Itoa(i+1) + ". " + fix.Title))
		if fix.Text != "" {
			add(common.Indent(common.Wrap(fix.Text, width-4), "    "))
		}
		if len(fix.Patches) > 0 {
			if fix.Simulation != "" {
				add(s.Label.Render(common.Indent(common.Wrap(fix.Simulation, width-4), "    ")))
			}
			m.addBlock(&lines, Block{Fix: fix.ID, What: BlockPatch, Text: strings.Join(fix.Patches, "\n")}, width)
		}
		if fix.Unpatchable != "" {
			add(s.Muted.Render(common.Indent(common.Wrap("no patch: "+fix.Unpatchable, width-4), "    ")))
		}
		for _, y := range fix.YAML {
			m.addBlock(&lines, Block{Fix: fix.ID, What: "YAML", Text: strings.TrimRight(y, "\n")}, width)
		}
		if len(fix.Commands) > 0 {
			m.addBlock(&lines, Block{Fix: fix.ID, What: "commands", Text: strings.Join(fix.Commands, "\n")}, width)
		}
		for _, t := range fix.Tradeoffs {
			add(common.Indent(common.Wrap("trade-off: "+t, width-4), "    "))
		}
		for _, t := range fix.Security {
			add(s.WarningText.Render(common.Indent(common.Wrap("security: "+t, width-4), "    ")))
		}
	}
	if len(c.Warnings) > 0 {
		section("Makes it worse")
		for _, w := range c.Warnings {
			add(s.WarningText.Render(common.Hang(w.Title, width, "  "+common.IconWarn+" ")))
			if w.Text != "" {
				add(common.Indent(common.Wrap(w.Text, width-4), "    "))
			}
		}
	}
	if len(c.Verify) > 0 {
		head := "Verification  (v runs it)"
		if m.verifying {
			head = "Verification  " + m.spinner + " running… esc cancels"
		}
		section(head)
		for i, v := range c.Verify {
			add(m.verifyLine(i, v, width))
		}
	}
	m.vp.SetContentLines(lines)
	if m.sel >= len(m.blocks) {
		m.sel = len(m.blocks) - 1
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func (m *Model) addBlock(lines *[]string, b Block, width int) {
	s := m.common.Styles
	selected := len(m.blocks) == m.sel
	label := "    " + b.What
	if selected {
		label = "  " + common.IconCursor + " " + b.What + "  (y copies)"
	}
	*lines = append(*lines, s.Label.Render(label))
	b.line = len(*lines)
	style := s.Code
	if selected {
		style = s.CodeSelected
	}
	// Long lines wrap rather than truncate: the on-call must be able to
	// read what they paste (y copies the exact text).
	var body []string
	for _, l := range strings.Split(b.Text, "\n") {
		first := ""
		switch {
		case b.What == "commands", b.What == BlockPatch && strings.HasPrefix(l, "kubectl "):
			first = "$ "
		case b.What == BlockPatch:
			first = "  " // the object a `kubectl apply -f -` reads
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		wrapped := strings.Split(common.Wrap(l, max(10, width-8-len(first))), "\n")
		for i, w := range wrapped {
			if i == 0 {
				body = append(body, first+w)
				continue
			}
			body = append(body, strings.Repeat(" ", len(first)+indent+2)+strings.TrimLeft(w, " "))
		}
	}
	rendered := strings.Split(style.Render(strings.Join(body, "\n")), "\n")
	for _, r := range rendered {
		*lines = append(*lines, "    "+r)
	}
	b.lines = len(rendered)
	m.blocks = append(m.blocks, b)
}

func (m *Model) verifyLine(i int, v engine.VerifyStep, width int) string {
	s := m.common.Styles
	// Results come back in the order of the cause's verification steps.
	var res *engine.VerifyResult
	if i < len(m.verify) {
		res = &m.verify[i]
	}
	icon, style := common.IconNotRun, s.NotRun
	detail := ""
	switch {
	case res == nil:
	case res.Manual:
		icon, style = "$", s.Command
	case res.Passed:
		icon, style = common.IconPass, s.Pass
		detail = res.Result.Summary
	default:
		icon, style = common.IconFail, s.Fail
		detail = res.Result.Summary
		if res.Result.Status == probes.StatusError {
			icon, style = common.IconError, s.Error
		}
	}
	if res != nil && res.Detail != "" {
		detail = res.Detail
	}
	text := v.Describe
	if v.Probe != "" {
		text += "  [" + v.Probe
		if v.Expect != "" {
			text += ": " + v.Expect
		}
		text += "]"
	}
	wrapped := strings.Split(common.Wrap(text, width-4), "\n")
	for j := 1; j < len(wrapped); j++ {
		wrapped[j] = "    " + wrapped[j]
	}
	out := "  " + style.Render(icon) + " " + strings.Join(wrapped, "\n")
	if v.Command != "" {
		out += "\n" + s.Command.Render(common.Indent(common.Wrap("$ "+v.Command, width-6), "      "))
	}
	if detail != "" {
		out += "\n" + s.Label.Render(common.Indent(common.Wrap(detail, width-6), "      "))
	}
	return out
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.common.Keys
	return []key.Binding{k.NextBlock, k.Copy, k.ChooseFix, k.Verify, k.Confirm, k.RuleOut, k.Back}
}

func (m *Model) FullHelp() [][]key.Binding {
	k := m.common.Keys
	return [][]key.Binding{
		{k.NextBlock, k.PrevBlock, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Copy, k.ChooseFix, k.Verify},
		{k.Confirm, k.RuleOut, k.Note, k.Back, k.Help, k.Quit},
	}
}
