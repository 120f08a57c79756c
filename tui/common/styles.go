package common

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/list"
	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"

	"github.com/meshtriage/meshtriage/probes"
)

// Glyphs of the checklist. They carry the meaning on their own, so a
// NO_COLOR terminal or a colour-blind reader loses nothing.
const (
	IconPass       = "✓"
	IconWarn       = "!"
	IconFail       = "✗"
	IconError      = "⚠"
	IconSkipped    = "-"
	IconNotRun     = "·"
	IconCancelled  = "⊘"
	IconCause      = "◆"
	IconCauseOther = "◇"
	IconCursor     = "›"
	IconProposed   = "→"
	IconConfirmed  = "✔"
	IconRuledOut   = "✘"
	IconUndecided  = "?"
)

// Styles is every style of the UI. Nothing outside this file picks a colour.
type Styles struct {
	IsDark  bool
	NoColor bool

	Pane        lipgloss.Style
	PaneFocused lipgloss.Style
	PaneTitle   lipgloss.Style

	StatusBar   lipgloss.Style
	StatusLabel lipgloss.Style
	StatusValue lipgloss.Style
	StatusLog   lipgloss.Style

	Row      lipgloss.Style
	RowDim   lipgloss.Style
	Selected lipgloss.Style
	Section  lipgloss.Style
	Proposed lipgloss.Style
	Reason   lipgloss.Style

	Pass      lipgloss.Style
	Warn      lipgloss.Style
	Fail      lipgloss.Style
	Error     lipgloss.Style
	Skipped   lipgloss.Style
	NotRun    lipgloss.Style
	Running   lipgloss.Style
	Cancelled lipgloss.Style
	Cause     lipgloss.Style

	Title        lipgloss.Style
	Heading      lipgloss.Style
	Label        lipgloss.Style
	Muted        lipgloss.Style
	Text         lipgloss.Style
	TableHeader  lipgloss.Style
	Code         lipgloss.Style
	CodeSelected lipgloss.Style
	Command      lipgloss.Style
	WarningText  lipgloss.Style
	ErrorText    lipgloss.Style
	SuccessText  lipgloss.Style

	Dialog      lipgloss.Style
	DialogTitle lipgloss.Style
	Message     lipgloss.Style

	Help          help.Styles
	List          list.Styles
	ListItem      list.DefaultItemStyles
	TextArea      textarea.Styles
	TextInput     textinput.Styles
	ProgressFull  color.Color
	ProgressEmpty color.Color
}

// DefaultStyles are the colour styles for a dark or light background.
func DefaultStyles(isDark bool) *Styles { return NewStyles(isDark, false) }

// NewStyles builds the styles for a background; noColor (NO_COLOR set)
// keeps only bold, faint and reverse, which still mark selection and status.
func NewStyles(isDark, noColor bool) *Styles {
	ld := lipgloss.LightDark(isDark)
	c := func(light, dark string) color.Color {
		if noColor {
			return lipgloss.NoColor{}
		}
		return ld(lipgloss.Color(light), lipgloss.Color(dark))
	}
	var (
		accent   = c("#5A4FCF", "#A49BFF")
		green    = c("#1A7F37", "#3FB950")
		amber    = c("#9A6700", "#D29922")
		red      = c("#CF222E", "#F85149")
		magenta  = c("#8250DF", "#DB61A2")
		muted    = c("#6E7781", "#8B949E")
		text     = c("#1F2328", "#E6EDF3")
		border   = c("#D0D7DE", "#3D444D")
		selectBg = c("#DDF4FF", "#233047")
		barBg    = c("#EAEAF2", "#262637")
		codeBg   = c("#F6F8FA", "#161B22")
	)
	base := lipgloss.NewStyle()
	s := &Styles{IsDark: isDark, NoColor: noColor}

	// Panes pad one column each side; components lay out width-4 cells.
	s.Pane = base.Border(lipgloss.RoundedBorder()).BorderForeground(border).Padding(0, 1)
	s.PaneFocused = base.Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1)
	s.PaneTitle = base.Bold(true).Foreground(accent)

	s.StatusBar = base.Background(barBg).Foreground(text)
	s.StatusLabel = base.Background(barBg).Foreground(muted)
	s.StatusValue = base.Background(barBg).Foreground(text).Bold(true)
	s.StatusLog = base.Background(barBg).Foreground(accent)

	s.Row = base.Foreground(text)
	s.RowDim = base.Foreground(muted)
	s.Selected = base.Background(selectBg).Bold(true)
	if noColor {
		s.Selected = base.Reverse(true)
	}
	s.Section = base.Foreground(muted).Bold(true)
	s.Proposed = base.Foreground(accent).Bold(true)
	s.Reason = base.Foreground(accent).Italic(true)

	s.Pass = base.Foreground(green)
	s.Warn = base.Foreground(amber).Bold(true)
	s.Fail = base.Foreground(red).Bold(true)
	s.Error = base.Foreground(magenta).Bold(true)
	s.Skipped = base.Foreground(muted)
	s.NotRun = base.Foreground(muted)
	s.Running = base.Foreground(accent)
	s.Cancelled = base.Foreground(amber)
	s.Cause = base.Foreground(red).Bold(true)

	s.Title = base.Bold(true).Foreground(text)
	s.Heading = base.Bold(true).Foreground(accent)
	s.Label = base.Foreground(muted)
	s.Muted = base.Foreground(muted).Faint(noColor)
	s.Text = base.Foreground(text)
	s.TableHeader = base.Bold(true).Foreground(muted).Underline(noColor)
	s.Code = base.Foreground(text).Background(codeBg).
		Border(lipgloss.NormalBorder(), false, false, false, true).BorderForeground(border).PaddingLeft(1)
	s.CodeSelected = s.Code.BorderForeground(accent).Border(lipgloss.ThickBorder(), false, false, false, true)
	s.Command = base.Foreground(green)
	s.WarningText = base.Foreground(amber)
	s.ErrorText = base.Foreground(red).Bold(true)
	s.SuccessText = base.Foreground(green).Bold(true)

	s.Dialog = base.Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1)
	s.DialogTitle = base.Bold(true).Foreground(accent)
	s.Message = base.Foreground(amber)

	s.Help = help.DefaultStyles(isDark)
	if noColor {
		plain := base
		s.Help = help.Styles{
			Ellipsis: plain, ShortKey: plain.Bold(true), ShortDesc: plain, ShortSeparator: plain.Faint(true),
			FullKey: plain.Bold(true), FullDesc: plain, FullSeparator: plain.Faint(true),
		}
	}
	s.List = list.DefaultStyles(isDark)
	s.List.Title = base.Bold(true).Foreground(accent)
	s.List.TitleBar = base.Padding(0, 0, 1, 1)
	s.List.StatusBar = base.Foreground(muted).Padding(0, 0, 1, 1)
	s.ListItem = list.NewDefaultItemStyles(isDark)
	s.ListItem.SelectedTitle = s.ListItem.SelectedTitle.Foreground(accent).BorderForeground(accent).Bold(true)
	s.ListItem.SelectedDesc = s.ListItem.SelectedDesc.Foreground(accent).BorderForeground(accent)
	if noColor {
		s.List = plainList(s.List)
		s.ListItem = list.DefaultItemStyles{
			NormalTitle:   base.PaddingLeft(2),
			NormalDesc:    base.PaddingLeft(2).Faint(true),
			SelectedTitle: base.Border(lipgloss.NormalBorder(), false, false, false, true).PaddingLeft(1).Bold(true),
			SelectedDesc:  base.Border(lipgloss.NormalBorder(), false, false, false, true).PaddingLeft(1),
			DimmedTitle:   base.PaddingLeft(2).Faint(true),
			DimmedDesc:    base.PaddingLeft(2).Faint(true),
			FilterMatch:   base.Underline(true),
		}
	}
	s.TextArea = textarea.DefaultStyles(isDark)
	s.TextArea.Focused.Prompt = base.Foreground(accent)
	s.TextArea.Focused.CursorLine = base
	s.TextInput = textinput.DefaultStyles(isDark)
	s.TextInput.Focused.Prompt = base.Foreground(accent)
	if noColor {
		plainState := textarea.StyleState{Base: base, Text: base, Prompt: base, Placeholder: base.Faint(true),
			CursorLine: base, EndOfBuffer: base, LineNumber: base, CursorLineNumber: base, Selection: base.Reverse(true)}
		s.TextArea.Focused, s.TextArea.Blurred = plainState, plainState
		s.TextArea.Cursor.Color = lipgloss.NoColor{}
		plainInput := textinput.StyleState{Text: base, Placeholder: base.Faint(true), Suggestion: base.Faint(true), Prompt: base}
		s.TextInput.Focused, s.TextInput.Blurred = plainInput, plainInput
		s.TextInput.Cursor.Color = lipgloss.NoColor{}
	}
	s.ProgressFull = accent
	s.ProgressEmpty = border
	return s
}

// plainList drops the list's colours, keeping its layout.
func plainList(l list.Styles) list.Styles {
	strip := func(st lipgloss.Style) lipgloss.Style {
		return st.UnsetForeground().UnsetBackground().UnsetBorderForeground()
	}
	l.TitleBar, l.Title, l.Spinner = strip(l.TitleBar), strip(l.Title).Bold(true), strip(l.Spinner)
	l.StatusBar, l.StatusEmpty = strip(l.StatusBar), strip(l.StatusEmpty)
	l.StatusBarActiveFilter, l.StatusBarFilterCount = strip(l.StatusBarActiveFilter), strip(l.StatusBarFilterCount)
	l.NoItems, l.ArabicPagination = strip(l.NoItems), strip(l.ArabicPagination)
	l.ActivePaginationDot, l.InactivePaginationDot = strip(l.ActivePaginationDot), strip(l.InactivePaginationDot).Faint(true)
	l.DividerDot = strip(l.DividerDot)
	l.Filter.Focused.Prompt, l.Filter.Blurred.Prompt = strip(l.Filter.Focused.Prompt), strip(l.Filter.Blurred.Prompt)
	return l
}

// StatusStyle and StatusIcon render a probe status in the checklist.
func (s *Styles) StatusStyle(st probes.Status) lipgloss.Style {
	switch st {
	case probes.StatusPass:
		return s.Pass
	case probes.StatusWarn:
		return s.Warn
	case probes.StatusFail:
		return s.Fail
	case probes.StatusError:
		return s.Error
	case probes.StatusSkipped:
		return s.Skipped
	}
	return s.NotRun
}

// StatusIcon is the glyph for a status; the empty status is "not run".
func StatusIcon(st probes.Status) string {
	switch st {
	case probes.StatusPass:
		return IconPass
	case probes.StatusWarn:
		return IconWarn
	case probes.StatusFail:
		return IconFail
	case probes.StatusError:
		return IconError
	case probes.StatusSkipped:
		return IconSkipped
	}
	return IconNotRun
}
