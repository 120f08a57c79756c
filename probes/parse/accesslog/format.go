package accesslog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// Format is an access-log format a mesh declares: meshConfig.accessLogFormat
// with accessLogEncoding TEXT or JSON, or the logFormat of an
// envoyFileAccessLog extension provider (text, or labels for JSON). Its
// %COMMAND%s say which part of a line (TEXT) or which key (JSON) holds
// which field, so a line the built-in layouts cannot read (a custom TEXT
// order, JSON under the mesh's own keys) is read by the names its mesh
// gave. Commands the triage does not use are matched and skipped.
type Format struct {
	// Name says where the format came from, for evidence.
	Name string
	json bool
	// text: the whole line, anchored, one group per command.
	text       *regexp.Regexp
	textFields []field
	// keys: a JSON key path ("a.b" for nested objects) to its field, or
	// to a value pattern when the value mixes text and commands.
	keys map[string]jsonKey
	// codeKey and flagsKey are the keys of %RESPONSE_CODE% and
	// %RESPONSE_FLAGS%, which make a JSON line an entry of this format.
	codeKey, flagsKey string
}

type jsonKey struct {
	field   field
	pattern *regexp.Regexp // nil when the value is the command alone
	fields  []field        // the pattern's groups
}

// field is an Entry field a command fills.
type field int

const (
	fNone field = iota
	fStartTime
	fMethod
	fPath
	fProtocol
	fCode
	fFlags
	fDetails
	fTermination
	fTransport
	fBytesReceived
	fBytesSent
	fDuration
	fServiceTime
	fForwardedFor
	fUserAgent
	fRequestID
	fAuthority
	fUpstreamHost
	fUpstreamCluster
	fUpstreamLocal
	fDownstreamLocal
	fDownstreamRemote
	fSNI
	fRoute
)

// commandField maps a command (with its argument, upper-cased, without
// the :LENGTH suffix) to the Entry field it fills.
func commandField(name, arg string) field {
	switch name {
	case "START_TIME":
		return fStartTime
	case "PROTOCOL":
		return fProtocol
	case "RESPONSE_CODE":
		return fCode
	case "RESPONSE_FLAGS", "RESPONSE_FLAGS_LONG":
		return fFlags
	case "RESPONSE_CODE_DETAILS":
		return fDetails
	case "CONNECTION_TERMINATION_DETAILS":
		return fTermination
	case "UPSTREAM_TRANSPORT_FAILURE_REASON":
		return fTransport
	case "BYTES_RECEIVED":
		return fBytesReceived
	case "BYTES_SENT":
		return fBytesSent
	case "DURATION":
		return fDuration
	case "UPSTREAM_HOST", "UPSTREAM_REMOTE_ADDRESS":
		return fUpstreamHost
	case "UPSTREAM_CLUSTER", "UPSTREAM_CLUSTER_RAW":
		return fUpstreamCluster
	case "UPSTREAM_LOCAL_ADDRESS":
		return fUpstreamLocal
	case "DOWNSTREAM_LOCAL_ADDRESS":
		return fDownstreamLocal
	case "DOWNSTREAM_REMOTE_ADDRESS", "DOWNSTREAM_PEER_ADDRESS":
		return fDownstreamRemote
	case "REQUESTED_SERVER_NAME":
		return fSNI
	case "ROUTE_NAME":
		return fRoute
	case "REQ", "REQUEST_HEADER":
		// REQ(X?Y): the first header present; either name decides.
		for _, h := range strings.Split(arg, "?") {
			switch h {
			case ":METHOD":
				return fMethod
			case ":PATH", "X-ENVOY-ORIGINAL-PATH":
				return fPath
			case ":AUTHORITY", "HOST":
				return fAuthority
			case "X-FORWARDED-FOR":
				return fForwardedFor
			case "USER-AGENT":
				return fUserAgent
			case "X-REQUEST-ID":
				return fRequestID
			}
		}
	case "RESP", "RESPONSE_HEADER":
		if arg == "X-ENVOY-UPSTREAM-SERVICE-TIME" {
			return fServiceTime
		}
	}
	return fNone
}

// groupPattern is what a command's value looks like in a TEXT line: the
// numbers and the flags are tight, so that the free-text fields around
// them cannot swallow them.
func groupPattern(f field) string {
	switch f {
	case fCode, fBytesReceived, fBytesSent, fDuration:
		return `(-|\d+)`
	case fFlags:
		return `(-|[A-Za-z_]+(?:,[A-Za-z_]+)*)`
	}
	return `(.*?)`
}

// piece is a literal run or a command of a format string.
type piece struct {
	literal string
	command bool
	field   field
}

// splitFormat cuts a format string into literals and %COMMAND(ARG):LEN%
// commands. A "%" that opens no command is literal text.
func splitFormat(s string) []piece {
	var out []piece
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			lit.WriteByte(s[i])
			continue
		}
		end := strings.IndexByte(s[i+1:], '%')
		if end < 0 {
			lit.WriteString(s[i:])
			break
		}
		cmd := s[i+1 : i+1+end]
		name, arg, ok := parseCommand(cmd)
		if !ok {
			lit.WriteByte('%')
			continue
		}
		if lit.Len() > 0 {
			out = append(out, piece{literal: lit.String()})
			lit.Reset()
		}
		out = append(out, piece{command: true, field: commandField(name, arg)})
		i += end + 1
	}
	if lit.Len() > 0 {
		out = append(out, piece{literal: lit.String()})
	}
	return out
}

// parseCommand reads NAME, NAME(ARG) and NAME(ARG):LEN; a name is upper
// case letters, digits and '_'.
func parseCommand(cmd string) (name, arg string, ok bool) {
	if cmd == "" {
		return "", "", false
	}
	rest := cmd
	if i := strings.IndexByte(cmd, '('); i >= 0 {
		j := strings.LastIndexByte(cmd, ')')
		if j < i {
			return "", "", false
		}
		name, arg, rest = cmd[:i], strings.ToUpper(cmd[i+1:j]), cmd[j+1:]
	} else {
		name, rest, _ = strings.Cut(cmd, ":")
		if rest != "" {
			rest = ":" + rest
		}
	}
	if rest != "" {
		if rest[0] != ':' {
			return "", "", false
		}
		if _, err := strconv.Atoi(rest[1:]); err != nil {
			return "", "", false
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return "", "", false
		}
	}
	return name, arg, name != ""
}

// compilePattern turns pieces into an anchored pattern and its fields.
func compilePattern(ps []piece) (*regexp.Regexp, []field, error) {
	var b strings.Builder
	b.WriteString(`^`)
	var fields []field
	for _, p := range ps {
		if !p.command {
			b.WriteString(regexp.QuoteMeta(p.literal))
			continue
		}
		b.WriteString(groupPattern(p.field))
		fields = append(fields, p.field)
	}
	b.WriteString(`$`)
	re, err := regexp.Compile(b.String())
	return re, fields, err
}

// ParseFormat compiles a mesh's access-log format: encoding "TEXT" (or
// empty) or "JSON", as meshConfig.accessLogEncoding names it. A TEXT
// format that names neither %RESPONSE_CODE% nor %RESPONSE_FLAGS% reads
// nothing a triage needs, and is an error.
func ParseFormat(name, encoding, format string) (*Format, error) {
	if strings.EqualFold(encoding, "JSON") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(format), &obj); err != nil {
			return nil, fmt.Errorf("%s: a JSON access-log format must be a JSON object: %w", name, err)
		}
		return jsonFormat(name, obj)
	}
	format = strings.TrimRight(format, "\r\n")
	ps := splitFormat(format)
	has := map[field]bool{}
	for _, p := range ps {
		has[p.field] = has[p.field] || p.command
	}
	if !has[fCode] && !has[fFlags] {
		return nil, fmt.Errorf("%s: the TEXT format names neither %%RESPONSE_CODE%% nor %%RESPONSE_FLAGS%%", name)
	}
	re, fields, err := compilePattern(ps)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Format{Name: name, text: re, textFields: fields}, nil
}

// JSONFormat compiles the labels of an envoyFileAccessLog provider's JSON
// logFormat: each key's value is a format string.
func JSONFormat(name string, labels map[string]any) (*Format, error) { return jsonFormat(name, labels) }

func jsonFormat(name string, obj map[string]any) (*Format, error) {
	f := &Format{Name: name, json: true, keys: map[string]jsonKey{}}
	var walk func(prefix string, m map[string]any) error
	walk = func(prefix string, m map[string]any) error {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			path := k
			if prefix != "" {
				path = prefix + "." + k
			}
			switch v := m[k].(type) {
			case map[string]any:
				if err := walk(path, v); err != nil {
					return err
				}
			case string:
				ps := splitFormat(v)
				var cmds []piece
				for _, p := range ps {
					if p.command {
						cmds = append(cmds, p)
					}
				}
				switch {
				case len(cmds) == 0:
				case len(ps) == 1:
					f.keys[path] = jsonKey{field: cmds[0].field}
				default:
					re, fields, err := compilePattern(ps)
					if err != nil {
						return fmt.Errorf("%s: key %q: %w", name, path, err)
					}
					f.keys[path] = jsonKey{pattern: re, fields: fields}
				}
				if len(ps) == 1 && len(cmds) == 1 {
					switch cmds[0].field {
					case fCode:
						f.codeKey = path
					case fFlags:
						f.flagsKey = path
					}
				}
			}
		}
		return nil
	}
	if err := walk("", obj); err != nil {
		return nil, err
	}
	if f.codeKey == "" && f.flagsKey == "" {
		return nil, fmt.Errorf("%s: no key of the JSON format holds %%RESPONSE_CODE%% or %%RESPONSE_FLAGS%% alone", name)
	}
	return f, nil
}

// IstioDefaultText is Istio's default TEXT accessLogFormat (1.9 and later;
// pilot/pkg/model/telemetry_logging.go), which the built-in reader reads
// positionally, faster than a pattern.
const IstioDefaultText = "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" " +
	"%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% " +
	"\"%UPSTREAM_TRANSPORT_FAILURE_REASON%\" %BYTES_RECEIVED% %BYTES_SENT% %DURATION% " +
	"%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" " +
	"\"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" \"%UPSTREAM_HOST%\" %UPSTREAM_CLUSTER_RAW% " +
	"%UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% " +
	"%REQUESTED_SERVER_NAME% %ROUTE_NAME%\n"

// Formats are the formats a mesh declares, tried in order before the
// built-in layouts (Istio's default TEXT of every release, Envoy's, and
// Istio's JSON keys), which read the lines none of them takes: a proxy
// started before the format changed still writes the old one.
type Formats []*Format

// ParseLine parses one line by fs, then by the built-in layouts.
func (fs Formats) ParseLine(line string) (Entry, bool) {
	p := parser{formats: fs}
	e, ok := p.parse(line)
	return *e, ok
}

// Tally reads r to its end and tallies every line, read by fs.
func (fs Formats) Tally(r io.Reader) (Summary, error) {
	var s Summary
	p := parser{formats: fs}
	err := eachLine(r, func(line string) { s.addLine(&p, line) }, s.skipped, s.Finish)
	return s, err
}

// Split is the package's Split, reading lines by fs.
func (fs Formats) Split(r io.Reader, match func(*Entry) bool) (matched, rest Summary, err error) {
	return split(r, parser{formats: fs}, match)
}

// parseText reads a TEXT line by f.
func (f *Format) parseText(line string, e *Entry) bool {
	m := f.text.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	*e = Entry{}
	for i, fl := range f.textFields {
		e.set(fl, unset(m[i+1]))
	}
	return e.finishCustom()
}

// parseJSON reads a JSON line by f: ok is false when the line has
// neither of f's response code and flags keys.
func (f *Format) parseJSON(doc map[string]any, e *Entry) bool {
	*e = Entry{JSON: true}
	seen := false
	for path, k := range f.keys {
		v, ok := lookupPath(doc, path)
		if !ok {
			continue
		}
		if path == f.codeKey || path == f.flagsKey {
			seen = true
		}
		s := jsonValue(v, k.field == fFlags)
		if k.pattern == nil {
			e.set(k.field, s)
			continue
		}
		if m := k.pattern.FindStringSubmatch(s); m != nil {
			for i, fl := range k.fields {
				e.set(fl, unset(m[i+1]))
			}
		}
	}
	if !seen {
		return false
	}
	return e.finishCustom()
}

// lookupPath finds "a.b" in nested objects, or as a key holding dots.
func lookupPath(doc map[string]any, path string) (any, bool) {
	if v, ok := doc[path]; ok {
		return v, true
	}
	head, rest, ok := strings.Cut(path, ".")
	if !ok {
		return nil, false
	}
	sub, isObj := doc[head].(map[string]any)
	if !isObj {
		return nil, false
	}
	return lookupPath(sub, rest)
}

// jsonValue renders a decoded JSON value as the string the TEXT format
// would print; a ResponseFlags object ({"no_healthy_upstream": true}) as
// its flags.
func jsonValue(v any, flags bool) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return unset(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		if flags {
			return flagsObject(x)
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// flagsObject reads an envoy.data.accesslog.v3.ResponseFlags object: each
// field set (true, or an object such as unauthorized_details) is a flag.
func flagsObject(m map[string]any) string {
	var names []string
	for k, v := range m {
		if v == nil || v == false {
			continue
		}
		if f, ok := flagNames[k]; ok {
			names = append(names, f.Short)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// set stores a command's value; "-" has been made empty.
func (e *Entry) set(f field, v string) {
	switch f {
	case fStartTime:
		e.StartTime = v
	case fMethod:
		e.Method = v
	case fPath:
		e.Path = v
	case fProtocol:
		e.Protocol = v
	case fCode:
		if n, ok := atoi(v); ok {
			e.ResponseCode = int(n)
		} else if x, err := strconv.ParseFloat(v, 64); err == nil && x >= 0 && x < 1000 {
			e.ResponseCode = int(x)
		}
	case fFlags:
		e.Flags = normalizeFlags(v)
	case fDetails:
		e.ResponseCodeDetails = v
	case fTermination:
		e.ConnectionTerminationDetails = v
	case fTransport:
		e.UpstreamTransportFailure = v
	case fBytesReceived:
		e.BytesReceived, _ = atoi(v)
	case fBytesSent:
		e.BytesSent, _ = atoi(v)
	case fDuration:
		e.DurationMs, _ = atoi(v)
	case fServiceTime:
		e.UpstreamServiceTime = v
	case fForwardedFor:
		e.ForwardedFor = v
	case fUserAgent:
		e.UserAgent = v
	case fRequestID:
		e.RequestID = v
	case fAuthority:
		e.Authority = v
	case fUpstreamHost:
		e.UpstreamHost = v
	case fUpstreamCluster:
		e.UpstreamCluster = clustername.Name(v)
	case fUpstreamLocal:
		e.UpstreamLocalAddress = v
	case fDownstreamLocal:
		e.DownstreamLocalAddress = v
	case fDownstreamRemote:
		e.DownstreamRemoteAddress = v
	case fSNI:
		e.RequestedServerName = v
	case fRoute:
		e.RouteName = v
	}
}

// finishCustom derives what the built-in readers derive: a TCP entry has
// no method, protocol or response code.
func (e *Entry) finishCustom() bool {
	e.TCP = e.Method == "" && e.Protocol == "" && e.ResponseCode == 0
	return true
}

// decodeObject decodes a JSON line into a generic object, numbers kept as
// float64; ok is false for anything but an object.
func decodeObject(line string) (map[string]any, bool) {
	var doc map[string]any
	d := json.NewDecoder(bytes.NewReader([]byte(line)))
	if err := d.Decode(&doc); err != nil || doc == nil {
		return nil, false
	}
	return doc, true
}
