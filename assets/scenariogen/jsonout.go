package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The Envoy admin output and syncz are written the way Python's json.dumps
// wrote them (and Envoy writes them): ", " between items, ": " after keys,
// ASCII only, and the given indent.

// indentedJSON is json.dumps(v, indent=indent) followed by a newline.
func indentedJSON(v any, indent int) string {
	var b strings.Builder
	writeJSON(&b, v, strings.Repeat(" ", indent), 0)
	b.WriteByte('\n')
	return b.String()
}

// compactJSON is json.dumps(v, separators=(",", ":")), the form the
// sidecar injector puts into annotations and env values.
func compactJSON(v any) string {
	var b strings.Builder
	writeJSON(&b, v, "", -1)
	return b.String()
}

// writeJSON writes v; depth -1 means compact.
func writeJSON(b *strings.Builder, v any, indent string, depth int) {
	newline := func(d int) {
		if depth >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(indent, d))
		}
	}
	next := depth + 1
	if depth < 0 {
		next = -1
	}
	colon := ": "
	if depth < 0 {
		colon = ":"
	}
	switch v := v.(type) {
	case Object:
		if len(v) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, f := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(depth + 1)
			writeJSONString(b, f.Key)
			b.WriteString(colon)
			writeJSON(b, f.Value, indent, next)
		}
		newline(depth)
		b.WriteByte('}')
	case []any:
		if len(v) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, item := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(depth + 1)
			writeJSON(b, item, indent, next)
		}
		newline(depth)
		b.WriteByte(']')
	case []Object:
		writeJSON(b, anySlice(v), indent, depth)
	case []string:
		writeJSON(b, anySlice(v), indent, depth)
	case []int:
		writeJSON(b, anySlice(v), indent, depth)
	case string:
		writeJSONString(b, v)
	case Literal:
		writeJSONString(b, string(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	default:
		panic(fmt.Sprintf("writeJSON: unsupported %T", v))
	}
}

func anySlice[T any](items []T) []any {
	out := make([]any, len(items))
	for i, item := range items {
		out[i] = item
	}
	return out
}

func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (r > 0x7e && r <= 0xffff):
			fmt.Fprintf(b, `\u%04x`, r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
