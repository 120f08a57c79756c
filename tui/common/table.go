package common

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Table lays out evidence rows in columns that fit width: columns keep their
// natural width while they fit, and the widest give way first.
func Table(s *Styles, columns []string, rows [][]string, width int) string {
	n := len(columns)
	for _, r := range rows {
		n = max(n, len(r))
	}
	if n == 0 || width <= 0 {
		return ""
	}
	widths := make([]int, n)
	measure := func(cells []string) {
		for i, c := range cells {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	measure(columns)
	for _, r := range rows {
		measure(r)
	}
	const gap = 2
	avail := width - gap*(n-1)
	for total(widths) > avail {
		widest := 0
		for i, w := range widths {
			if w > widths[widest] {
				widest = i
			}
		}
		if widths[widest] <= 3 {
			break
		}
		widths[widest]--
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			cell := ""
			if i < len(cells) {
				cell = strings.ReplaceAll(cells[i], "\n", " ")
			}
			cell = Truncate(cell, widths[i])
			b.WriteString(cell)
			if i < n-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(cell)+gap))
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	var out []string
	if len(columns) > 0 {
		out = append(out, s.TableHeader.Render(line(columns)))
	}
	for _, r := range rows {
		out = append(out, line(r))
	}
	return strings.Join(out, "\n")
}

func total(ws []int) int {
	t := 0
	for _, w := range ws {
		t += w
	}
	return t
}
