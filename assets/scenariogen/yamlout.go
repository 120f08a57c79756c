package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The YAML files are printed the way PyYAML printed them for the Python
// generator (and close to how kubectl prints objects): block style, two
// spaces, sequences not indented under their key, empty collections as {}
// and [], and a string quoted only when it would otherwise read back as
// something else. A hand-written emitter keeps regeneration byte-stable;
// a YAML library would reformat every committed file.

// yamlStyle says how one kind of file is printed.
type yamlStyle struct {
	sortKeys bool
	// quote is the character around strings that cannot be plain: '"'
	// for manifests (kubectl), '\'' for scenario.yaml (PyYAML's default).
	quote byte
}

var (
	manifestStyle = yamlStyle{sortKeys: true, quote: '"'}
	headerStyle   = yamlStyle{sortKeys: false, quote: '\''}
)

// yamlDocuments prints each document and joins them with "---".
func yamlDocuments(style yamlStyle, docs ...Object) string {
	out := make([]string, len(docs))
	for i, d := range docs {
		var b strings.Builder
		style.mapping(&b, d, 0, false)
		out[i] = b.String()
	}
	return strings.Join(out, "---\n")
}

func (st yamlStyle) fields(o Object) []Field {
	if !st.sortKeys {
		return o
	}
	sorted := append([]Field(nil), o...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	return sorted
}

// mapping writes o's keys at indent; inline means the first key follows a
// sequence's "- " on the current line.
func (st yamlStyle) mapping(b *strings.Builder, o Object, indent int, inline bool) {
	for i, f := range st.fields(o) {
		if i > 0 || !inline {
			b.WriteString(strings.Repeat(" ", indent))
		}
		b.WriteString(st.scalar(f.Key, true))
		b.WriteByte(':')
		st.value(b, f.Value, indent)
	}
}

// value writes what follows "key:" of a mapping at indent.
func (st yamlStyle) value(b *strings.Builder, v any, indent int) {
	switch v := normalizeYAML(v).(type) {
	case Object:
		if len(v) == 0 {
			b.WriteString(" {}\n")
			return
		}
		b.WriteByte('\n')
		st.mapping(b, v, indent+2, false)
	case []any:
		if len(v) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteByte('\n')
		st.sequence(b, v, indent, false)
	case Literal:
		if text, ok := st.literal(string(v), indent+2); ok {
			b.WriteString(" " + text)
			return
		}
		b.WriteString(" " + doubleQuoted(string(v)) + "\n")
	default:
		b.WriteString(" " + st.scalar(v, false) + "\n")
	}
}

// sequence writes items with their "-" at indent.
func (st yamlStyle) sequence(b *strings.Builder, items []any, indent int, inline bool) {
	for i, item := range items {
		if i > 0 || !inline {
			b.WriteString(strings.Repeat(" ", indent))
		}
		b.WriteByte('-')
		switch item := normalizeYAML(item).(type) {
		case Object:
			if len(item) == 0 {
				b.WriteString(" {}\n")
				continue
			}
			b.WriteByte(' ')
			st.mapping(b, item, indent+2, true)
		case []any:
			if len(item) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteByte(' ')
			st.sequence(b, item, indent+2, true)
		case Literal:
			if text, ok := st.literal(string(item), indent+2); ok {
				b.WriteString(" " + text)
				continue
			}
			b.WriteString(" " + doubleQuoted(string(item)) + "\n")
		default:
			b.WriteString(" " + st.scalar(item, false) + "\n")
		}
	}
}

func normalizeYAML(v any) any {
	switch v := v.(type) {
	case []Object:
		return anySlice(v)
	case []string:
		return anySlice(v)
	case []int:
		return anySlice(v)
	}
	return v
}

// scalar prints a non-collection value.
func (st yamlStyle) scalar(v any, key bool) string {
	switch v := v.(type) {
	case string:
		return st.str(v, key)
	case int:
		return strconv.Itoa(v)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	default:
		panic(fmt.Sprintf("yaml: unsupported %T", v))
	}
}

func (st yamlStyle) str(s string, key bool) string {
	a := analyzeScalar(s)
	if !readsAsNonString(s) && a.blockPlain && !(key && (s == "" || a.multiline)) {
		return s
	}
	if st.quote == '\'' && a.singleQuoted && !a.multiline {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	// Multi-line strings in single quotes fold their line breaks in ways
	// that are easy to get wrong; double quotes say the same thing.
	return doubleQuoted(s)
}

// literal prints s as a "|" block whose lines are indented by indent, or
// reports that s cannot be a literal block (trailing spaces, tabs...), in
// which case PyYAML fell back to double quotes.
func (st yamlStyle) literal(s string, indent int) (string, bool) {
	a := analyzeScalar(s)
	if !a.block {
		return "", false
	}
	header := "|"
	if s != "" {
		if s[0] == ' ' || s[0] == '\n' {
			header += "2"
		}
		switch {
		case s[len(s)-1] != '\n':
			header += "-"
		case len(s) == 1 || s[len(s)-2] == '\n':
			header += "+"
		}
	}
	var b strings.Builder
	b.WriteString(header + "\n")
	body := strings.TrimSuffix(s, "\n")
	for _, line := range strings.Split(body, "\n") {
		if line != "" {
			b.WriteString(strings.Repeat(" ", indent) + line)
		}
		b.WriteByte('\n')
	}
	return b.String(), true
}

// scalarAnalysis is PyYAML's verdict on which styles can carry a string.
type scalarAnalysis struct {
	multiline, blockPlain, singleQuoted, block bool
}

// analyzeScalar follows PyYAML's Emitter.analyze_scalar for ASCII text.
func analyzeScalar(s string) scalarAnalysis {
	if s == "" {
		return scalarAnalysis{blockPlain: true, singleQuoted: true}
	}
	isSpace := func(c byte) bool { return c == 0 || c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	var blockIndicators, lineBreaks, special bool
	var leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		blockIndicators = true
	}
	precededByWhitespace := true
	followedByWhitespace := len(s) == 1 || isSpace(s[1])
	previousSpace, previousBreak := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 0 {
			if strings.IndexByte("#,[]{}&*!|>'\"%@`", c) >= 0 {
				blockIndicators = true
			}
			if (c == '?' || c == ':' || c == '-') && followedByWhitespace {
				blockIndicators = true
			}
		} else {
			if c == ':' && followedByWhitespace {
				blockIndicators = true
			}
			if c == '#' && precededByWhitespace {
				blockIndicators = true
			}
		}
		if c == '\n' {
			lineBreaks = true
		}
		if c != '\n' && (c < 0x20 || c > 0x7e) {
			special = true
		}
		switch c {
		case ' ':
			leadingSpace = leadingSpace || i == 0
			trailingSpace = trailingSpace || i == len(s)-1
			breakSpace = breakSpace || previousBreak
			previousSpace, previousBreak = true, false
		case '\n':
			leadingBreak = leadingBreak || i == 0
			trailingBreak = trailingBreak || i == len(s)-1
			spaceBreak = spaceBreak || previousSpace
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = isSpace(c)
		followedByWhitespace = i+2 >= len(s) || isSpace(s[i+2])
	}
	a := scalarAnalysis{multiline: lineBreaks, blockPlain: true, singleQuoted: true, block: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak {
		a.blockPlain = false
	}
	if trailingSpace {
		a.block = false
	}
	if breakSpace {
		a.blockPlain, a.singleQuoted = false, false
	}
	if spaceBreak || special {
		a.blockPlain, a.singleQuoted, a.block = false, false, false
	}
	if lineBreaks || blockIndicators {
		a.blockPlain = false
	}
	return a
}

// YAML 1.1's implicit types, as PyYAML resolves plain scalars: a string
// matching one of them must be quoted to stay a string.
var implicitTypes = []struct {
	first   string
	pattern *regexp.Regexp
}{
	{"yYnNtTfFoO", regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)\n?$`)},
	{"-+0123456789.", regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\n?$`)},
	{"-+0123456789", regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)\n?$`)},
	{"<", regexp.MustCompile(`^(?:<<)\n?$`)},
	{"~nN", regexp.MustCompile(`^(?:~|null|Null|NULL)\n?$`)},
	{"0123456789", regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)\n?$`)},
	{"=", regexp.MustCompile(`^(?:=)\n?$`)},
}

func readsAsNonString(s string) bool {
	if s == "" {
		return true // null
	}
	for _, t := range implicitTypes {
		if strings.IndexByte(t.first, s[0]) >= 0 && t.pattern.MatchString(s) {
			return true
		}
	}
	return false
}

func doubleQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r >= 0x20 && r <= 0x7e:
			b.WriteRune(r)
		default:
			if esc, ok := yamlEscapes[r]; ok {
				b.WriteString(`\` + esc)
			} else if r <= 0xff {
				fmt.Fprintf(&b, `\x%02X`, r)
			} else if r <= 0xffff {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				fmt.Fprintf(&b, `\U%08X`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

var yamlEscapes = map[rune]string{
	0: "0", 0x07: "a", 0x08: "b", 0x09: "t", 0x0a: "n", 0x0b: "v", 0x0c: "f", 0x0d: "r", 0x1b: "e",
	0x85: "N", 0xa0: "_", 0x2028: "L", 0x2029: "P",
}

func anySlice[T any](items []T) []any {
	out := make([]any, len(items))
	for i, item := range items {
		out[i] = item
	}
	return out
}
