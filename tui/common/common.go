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

// WrapCommand lays a shell command out for a pane width cells wide: first
// before its first line, rest before the others, and lines broken only
// between shell words (a quoted string, an escaped space and a trailing
// comment are one word each), so no line ends inside a pod name, a host or
// a container such as istio-proxy. A word wider than the pane stands alone
// on its line, whole: the pane shows it cut at its edge, and the copy key
// copies it entire. Every line a break ends carries " \", so lines
// selected from the screen are still one command. A command of several
// lines (a heredoc) keeps them; only a line too wide is broken, without
// the continuation, which would change a heredoc's body.
func WrapCommand(cmd string, width int, first, rest string) string {
	var out []string
	multi := strings.Contains(cmd, "\n")
	for i, line := range strings.Split(cmd, "\n") {
		prefix := rest
		if i == 0 {
			prefix = first
		}
		out = append(out, wrapShellLine(line, width, prefix, rest, !multi)...)
	}
	return strings.Join(out, "\n")
}

// wrapShellLine breaks one line of a command between its words.
func wrapShellLine(line string, width int, first, rest string, continued bool) []string {
	words := ShellWords(line)
	if len(words) == 0 {
		return []string{first + line}
	}
	mark := ""
	if continued {
		mark = " \\"
	}
	var lines []string
	cur, curWidth, prefix := "", 0, first
	for _, w := range words {
		text := w.Text
		if cur == "" {
			cur, curWidth = prefix+text, ansi.StringWidth(prefix+text)
			continue
		}
		gap := w.Space
		if curWidth+ansi.StringWidth(gap+text)+ansi.StringWidth(mark) <= width {
			cur += gap + text
			curWidth += ansi.StringWidth(gap + text)
			continue
		}
		lines = append(lines, cur+mark)
		prefix = rest
		cur, curWidth = prefix+text, ansi.StringWidth(prefix+text)
	}
	return append(lines, cur)
}

// Word is one shell word of a command line and the blanks before it.
type Word struct {
	Space string
	Text  string
}

// ShellWords splits a command line into its shell words as sh reads them:
// blanks separate words outside quotes, '...' and "..." and a backslash
// escape keep blanks inside a word, and an unquoted # at a word's start
// makes the rest of the line one word (a comment).
func ShellWords(line string) []Word {
	var words []Word
	var space, word strings.Builder
	inWord := false
	var quote rune
	escaped := false
	flush := func() {
		if inWord {
			words = append(words, Word{Space: space.String(), Text: word.String()})
			space.Reset()
			word.Reset()
			inWord = false
		}
	}
	runes := []rune(line)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case escaped:
			escaped = false
			word.WriteRune(r)
		case quote != 0:
			word.WriteRune(r)
			if r == '\\' && quote == '"' {
				escaped = true
			} else if r == quote {
				quote = 0
			}
		case r == ' ' || r == '\t':
			flush()
			space.WriteRune(r)
		case r == '#' && !inWord:
			inWord = true
			word.WriteString(string(runes[i:]))
			i = len(runes)
		default:
			inWord = true
			word.WriteRune(r)
			switch r {
			case '\\':
				escaped = true
			case '\'', '"':
				quote = r
			}
		}
	}
	flush()
	return words
}
