// Package common holds what every screen of the terminal UI shares: the
// window size, the one KeyMap, the one set of Styles, the session's context
// and clock. Components live in sibling packages (picker, checklist, detail,
// cause, statusbar, notes, helpscreen) and the root model in package tui
// routes messages to them; this package keeps them free of import cycles.
package common

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Common is handed to every component. The root model owns it and updates
// the size and styles in place, so components always read current values.
type Common struct {
	Ctx    context.Context
	Width  int
	Height int
	Styles *Styles
	Keys   *KeyMap
	// Now is the clock the status bar and the notes read; tests pin it.
	Now func() time.Time
}

// New returns a Common with the default keymap and dark styles; the root
// model switches styles when the terminal reports its background.
func New(ctx context.Context, now func() time.Time, noColor bool) *Common {
	if now == nil {
		now = time.Now
	}
	return &Common{
		Ctx:    ctx,
		Styles: NewStyles(true, noColor),
		Keys:   DefaultKeyMap(),
		Now:    now,
	}
}

// SetSize records the terminal size.
func (c *Common) SetSize(width, height int) {
	c.Width, c.Height = width, height
}

// Component is one screen or pane: it updates itself in place, renders to a
// string of exactly the size it was given, and says which keys it answers.
type Component interface {
	help.KeyMap
	SetSize(width, height int)
	Update(msg tea.Msg) tea.Cmd
	View() string
}

// FitLines cuts or pads s to exactly height lines of at most width cells, so
// a pane never pushes the layout around whatever its content.
func FitLines(s string, width, height int) string {
	if width <= 0 || height <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for i, l := range lines {
		lines[i] = Truncate(l, width)
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// Truncate cuts a (possibly styled) line to width cells, marking the cut.
func Truncate(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// TruncateMiddle keeps both ends of a plain string (a file path: the
// directory and the file name both matter).
func TruncateMiddle(s string, width int) string {
	r := []rune(s)
	if width <= 0 {
		return ""
	}
	if len(r) <= width {
		return s
	}
	if width <= 1 {
		return "…"
	}
	head := (width - 1) / 2
	tail := width - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// Wrap word-wraps plain or styled text to width cells.
func Wrap(s string, width int) string {
	if width <= 0 {
		return s
	}
	return ansi.Wrap(s, width, "")
}

// Hang wraps s to width with first before its first line and the same
// width of spaces before the others, so a bullet's text lines up.
func Hang(s string, width int, first string) string {
	pad := strings.Repeat(" ", ansi.StringWidth(first))
	lines := strings.Split(Wrap(s, max(1, width-ansi.StringWidth(first))), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = first + lines[i]
		} else {
			lines[i] = pad + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// Indent prefixes every line of s.
func Indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// FormatDuration renders a probe duration the way the checklist shows it.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// FormatClock renders an elapsed session time as HH:MM:SS.
func FormatClock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d / time.Second)
	return fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60)
}
