package recorded

import (
	"bytes"
	"regexp"
	"time"
)

// jsonTimeValue is a JSON string value shaped as an RFC 3339 time.
var jsonTimeValue = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"`)

// lineTime reads the timestamp a log line starts with: RFC 3339 as Envoy,
// pilot-agent and most apps write it (bracketed in access-log lines), or Go's
// default log prefix "2006/01/02 15:04:05" (read as UTC). A JSON line (an
// access log with accessLogEncoding: JSON) is stamped by its start_time, or,
// under the mesh's own keys (meshConfig.accessLogFormat), by the first
// string value that is an RFC 3339 time.
func lineTime(line []byte) (time.Time, bool) {
	line = bytes.TrimLeft(line, " ")
	if len(line) > 0 && line[0] == '{' {
		const key = `"start_time":"`
		if i := bytes.Index(line, []byte(key)); i >= 0 {
			line = line[i+len(key):]
			if end := bytes.IndexByte(line, '"'); end >= 0 {
				line = line[:end]
			}
		} else if m := jsonTimeValue.Find(line); m != nil {
			line = m[1 : len(m)-1]
		} else {
			return time.Time{}, false
		}
	}
	if len(line) > 0 && line[0] == '[' {
		line = line[1:]
	}
	end := bytes.IndexAny(line, " \t]")
	if end < 0 {
		end = len(line)
	}
	if t, err := time.Parse(time.RFC3339Nano, string(line[:end])); err == nil {
		return t, true
	}
	const goLog = "2006/01/02 15:04:05"
	if len(line) >= len(goLog) {
		if t, err := time.Parse(goLog, string(line[:len(goLog)])); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func newestTimestamp(logs map[LogKey][]byte) time.Time {
	var newest time.Time
	for _, data := range logs {
		for i := 0; i < len(data); {
			end := lineEnd(data, i)
			if t, ok := lineTime(data[i:end]); ok && t.After(newest) {
				newest = t
			}
			i = end
		}
	}
	return newest
}

// since keeps the lines stamped at or after from; an unstamped line follows
// the fate of the stamped line before it (a stack trace, a wrapped message),
// and unstamped lines at the top are kept only when nothing before from is
// known to precede them.
func since(data []byte, from time.Time) []byte {
	var out []byte
	keep := true
	for i := 0; i < len(data); {
		end := lineEnd(data, i)
		if t, ok := lineTime(data[i:end]); ok {
			keep = !t.Before(from)
		}
		if keep {
			out = append(out, data[i:end]...)
		}
		i = end
	}
	return out
}
