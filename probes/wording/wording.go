// Package wording holds the small helpers the probes write their
// summaries, evidence tables and list facts with: a count with its noun,
// a plural, a dash for an empty cell, a sorted list without repeats,
// counts as KEY=N most frequent first.
package wording

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// YesNo renders a boolean cell.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Dash renders an empty cell as "-".
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// CountNoun renders "1 pod", "3 pods".
func CountNoun(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// PortSuffix renders " port 8080", or "" for no port (every port).
func PortSuffix(port int32) string {
	if port == 0 {
		return ""
	}
	return fmt.Sprintf(" port %d", port)
}

// UniqueNonEmpty is values sorted, without repeats and empty strings (nil
// when none is left).
func UniqueNonEmpty(values ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range values {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// AppendUnique appends s to list unless list holds it already.
func AppendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// ByCount lists m's keys, most frequent first, then by key.
func ByCount(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// Counts renders counts as KEY=N, most frequent first, then by key.
func Counts(m map[string]int) []string {
	keys := ByCount(m)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return out
}

// Rate renders a rate per second, keeping small ones readable: 0.0033/s
// matters when it is a 503.
func Rate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 0.1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}
