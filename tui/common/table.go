package common

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Table lays out evidence rows in columns that fit width: columns keep their
// natural width while they fit, and the widest give way first, except the
// first: the key column (a pod, a host, a subset) is what a row is about,
// and cut it can make rows look alike (three pods of one ReplicaSet). When
// the others cannot give enough, the rows become records, each led by its
// whole key.
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
	natural := append([]int(nil), widths...)
	for total(widths) > avail {
		widest := -1
		for i := 1; i < n; i++ {
			if widest < 0 || widths[i] > widths[widest] {
				widest = i
			}
		}
		// A column cut below ten cells (a pod name, an IP) no longer says
		// anything, nor does a key cut at all: lay the rows out as records.
		if widest < 0 || widths[widest] <= min(natural[widest], 10) {
			return records(s, columns, rows, width)
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

// records lays each row out as its first cell followed by the other cells
// labelled with their column, for tables too wide for the pane.
func records(s *Styles, columns []string, rows [][]string, width int) string {
	var out []string
	for _, r := range rows {
		if len(r) == 0 {
			continue
		}
		// Wider than the pane, a key keeps both ends: pods of one
		// ReplicaSet differ in their last characters.
		out = append(out, s.Title.Render(TruncateMiddle(strings.ReplaceAll(r[0], "\n", " "), width)))
		var parts []string
		for i := 1; i < len(r); i++ {
			label := ""
			if i < len(columns) && columns[i] != "" {
				label = columns[i] + " "
			}
			parts = append(parts, label+strings.ReplaceAll(r[i], "\n", " "))
		}
		if len(parts) > 0 {
			out = append(out, Indent(Wrap(strings.Join(parts, " · "), width-2), "  "))
		}
	}
	return strings.Join(out, "\n")
}
