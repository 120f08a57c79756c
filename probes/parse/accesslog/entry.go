// Package accesslog parses Envoy access-log lines as Istio writes them (the
// default TEXT format of every Istio release since 1.5, the shorter ones of
// Istio 1.0 to 1.4 and Envoy's own default format, and the JSON encoding with
// string or typed values) and tallies a log stream into the counts a 503
// triage branches on: response codes, response flags with the code they came
// with, response code details, transport failure reasons and
// BlackHoleCluster traffic.
//
// Parsing is position-based and allocation-free for TEXT lines so that a
// multi-megabyte istio-proxy log is tallied in well under a second; lines that
// are not access-log entries (Envoy's and pilot-agent's own log lines) are
// counted, never fatal.
package accesslog

import (
	"strings"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// Entry is one access-log entry. Fields Envoy printed as "-" (not set) are
// empty strings, and numeric fields that were "-" are 0.
type Entry struct {
	StartTime string // as logged, e.g. 2026-12-02T03:04:05.123Z
	Method    string // empty for TCP entries
	Path      string
	Protocol  string

	// ResponseCode is 0 for TCP entries and for HTTP requests that ended
	// before a response (downstream disconnect).
	ResponseCode int
	// Flags is Envoy's comma-separated %RESPONSE_FLAGS%, e.g. "UF,URX".
	Flags                        string
	ResponseCodeDetails          string
	ConnectionTerminationDetails string
	UpstreamTransportFailure     string

	BytesReceived       int64
	BytesSent           int64
	DurationMs          int64
	UpstreamServiceTime string

	ForwardedFor string
	UserAgent    string
	RequestID    string
	Authority    string
	UpstreamHost string
	// UpstreamCluster is e.g. outbound|8080||orders.shop.svc.cluster.local,
	// inbound|8080||, BlackHoleCluster or PassthroughCluster, without the
	// ";" Istio 1.23+ prints after it (see package clustername).
	UpstreamCluster         string
	UpstreamLocalAddress    string
	DownstreamLocalAddress  string
	DownstreamRemoteAddress string
	RequestedServerName     string
	RouteName               string
	TCP                     bool // a TCP proxy entry: the request field was "- - -"
	JSON                    bool // decoded from the JSON encoding
}

// Cluster names Istio gives the catch-all outbound clusters.
const (
	BlackHoleCluster   = "BlackHoleCluster"
	PassthroughCluster = "PassthroughCluster"
)

// HasFlag reports whether the entry carries response flag f (e.g. "UH").
func (e *Entry) HasFlag(f string) bool {
	rest := e.Flags
	for rest != "" {
		var flag string
		flag, rest, _ = strings.Cut(rest, ",")
		if flag == f {
			return true
		}
	}
	return false
}

// Is5xx reports a 5xx response code.
func (e *Entry) Is5xx() bool { return e.ResponseCode >= 500 && e.ResponseCode < 600 }

// BlockAllRoute is the route REGISTRY_ONLY puts on outbound HTTP ports: it
// answers 502 itself (direct_response), with no upstream cluster.
const BlockAllRoute = "block_all"

// BlackHole reports an entry Istio refused to route: TCP/TLS sent to
// BlackHoleCluster, or HTTP answered by the block_all route. The destination
// is not in the proxy's registry and the mesh is REGISTRY_ONLY (or a Sidecar
// restricts egress).
func (e *Entry) BlackHole() bool {
	return e.UpstreamCluster == BlackHoleCluster || e.RouteName == BlockAllRoute
}

// Destination names where the caller tried to go: the HTTP authority, or for
// TCP entries the SNI, or the original destination address.
func (e *Entry) Destination() string {
	switch {
	case e.Authority != "":
		return e.Authority
	case e.RequestedServerName != "":
		return e.RequestedServerName
	}
	return e.DownstreamLocalAddress
}

// ConnectOriginate is the prefix of the upstream host Envoy logs for a
// request it sent through an HBONE tunnel: the internal listener
// connect_originate that istiod builds on gateways, waypoints and sidecars
// of an ambient mesh, followed by the pod's IP:PORT
// ("envoy://connect_originate/10.0.1.7:8080", istio/ztunnel#1662).
const ConnectOriginate = "envoy://connect_originate/"

// TunnelPodIP is the pod IP of an upstream host that is an HBONE tunnel
// (ConnectOriginate), "" for any other upstream host.
func (e *Entry) TunnelPodIP() string {
	addr, ok := strings.CutPrefix(e.UpstreamHost, ConnectOriginate)
	if !ok {
		return ""
	}
	// IPv6 is bracketed: [fd00::7]:8080.
	if i := strings.LastIndexByte(addr, ':'); i > 0 {
		addr = addr[:i]
	}
	addr = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	if addr == "" || strings.ContainsAny(addr, "/ ") {
		return ""
	}
	return addr
}

// LowVersion is the response_code_details of Envoy's 426: its HTTP/1
// codec refuses an HTTP/1.0 (or 0.9) request unless the listener accepts
// HTTP/1.0 (codec_impl.cc checkProtocolVersion).
const LowVersion = "low_version"

// HTTP10Rejected reports Envoy's own 426 to an HTTP/1.0 request: details
// low_version, or (before Istio logged details, and in Envoy's default
// format) a 426 to a request logged as HTTP/1.0 or older. An app's own 426
// (via_upstream) is not one.
func (e *Entry) HTTP10Rejected() bool {
	if e.ResponseCode != 426 {
		return false
	}
	if e.ResponseCodeDetails != "" {
		return e.ResponseCodeDetails == LowVersion
	}
	return e.Protocol == "HTTP/1.0" || e.Protocol == "HTTP/0.9"
}

// ConnectionRefused reports a connect that the upstream refused: Envoy logs
// "delayed_connect_error:_111" (errno ECONNREFUSED; newer Envoy spells it
// "delayed_connect_error:_Connection_refused"), which is what an app that
// starts before its sidecar, or a closed target port, looks like. The
// transport failure reason keeps its spaces in some releases ("delayed
// connect error: 111"), and TCP entries have no details to fall back on.
func (e *Entry) ConnectionRefused() bool {
	return mentionsRefused(e.UpstreamTransportFailure) || mentionsRefused(e.ResponseCodeDetails)
}

func mentionsRefused(s string) bool {
	if len(s) < 3 {
		return false
	}
	if strings.Contains(s, "delayed_connect_error:_111") || strings.Contains(s, "delayed connect error: 111") {
		return true
	}
	i := strings.Index(s, "onnection")
	if i < 1 {
		return false
	}
	rest := s[i+len("onnection"):]
	if (s[i-1] != 'c' && s[i-1] != 'C') || len(rest) < len("_refused") {
		return false
	}
	return (rest[0] == ' ' || rest[0] == '_') && strings.EqualFold(rest[1:len("_refused")], "refused")
}

// ParseLine parses one access-log line, TEXT or JSON. ok is false for lines
// that are not access-log entries. The returned strings share memory with
// line.
func ParseLine(line string) (Entry, bool) {
	var p parser
	e, ok := p.parse(line)
	return *e, ok
}

// parser keeps the scratch space of one line's parse, so a tally reuses it
// instead of zeroing and copying a fresh Entry and token array per line.
type parser struct {
	e    Entry
	toks [maxTokens]token
	// formats are the mesh's own, tried before the built-in layouts.
	formats Formats
}

// parse parses line into p's Entry, valid until the next call.
func (p *parser) parse(line string) (*Entry, bool) {
	line = trimEOL(line)
	if len(line) > 0 && line[0] == '{' {
		if p.hasJSONFormat() {
			if doc, ok := decodeObject(line); ok {
				for _, f := range p.formats {
					if f.json && f.parseJSON(doc, &p.e) {
						return &p.e, true
					}
				}
			}
		}
		var ok bool
		p.e, ok = parseJSON(line)
		return &p.e, ok
	}
	for _, f := range p.formats {
		if !f.json && f.parseText(line, &p.e) {
			return &p.e, true
		}
	}
	p.e = Entry{}
	return &p.e, parseText(line, &p.e, &p.toks)
}

func (p *parser) hasJSONFormat() bool {
	for _, f := range p.formats {
		if f.json {
			return true
		}
	}
	return false
}

func trimEOL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// blank reports a line of nothing but spaces; it stops at the first other
// byte, which for an access-log entry is the first.
func blank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}

// maxTokens bounds the fields read from one TEXT line; Istio's default format
// has 21 after the timestamp.
const maxTokens = 32

type token struct {
	s      string
	quoted bool
}

// parseText reads Istio's default TEXT format positionally:
//
//	[START_TIME] "REQUEST" CODE FLAGS [DETAILS [TERMINATION]] ["MIXER"] "TRANSPORT"
//	RX TX DURATION SVC_TIME "XFF" "UA" "REQ_ID" "AUTHORITY" "UPSTREAM_HOST"
//	CLUSTER UP_LOCAL DOWN_LOCAL DOWN_REMOTE SNI ROUTE
//
// Releases differ only in the bare fields between FLAGS and TRANSPORT (none
// before 1.9, DETAILS and TERMINATION since) and the quoted mixer status of
// 1.5-1.8, so runs of bare and quoted fields are matched in turn rather than
// counted from one fixed layout. Envoy's own default format, which Istio 1.0
// and gateways of that time wrote, has no quoted field between FLAGS and the
// byte counts:
//
//	[START_TIME] "REQUEST" CODE FLAGS RX TX DURATION SVC_TIME "XFF" "UA" "REQ_ID" "AUTHORITY" "UPSTREAM_HOST"
//
// (Istio 1.0's sidecars add CLUSTER UP_LOCAL DOWN_LOCAL DOWN_REMOTE), and
// custom formats put %RESPONSE_CODE_DETAILS% right after FLAGS: a run after
// FLAGS that ends in the four numbers is read that way.
func parseText(line string, e *Entry, toks *[maxTokens]token) bool {
	start, rest, ok := startTime(line)
	if !ok {
		return false
	}
	e.StartTime = start

	n := tokenize(rest, toks)
	if n < 3 || !toks[0].quoted || toks[1].quoted || toks[2].quoted {
		return false
	}
	if !parseRequest(toks[0].s, e) {
		return false
	}
	code, ok := atoi(toks[1].s)
	if !ok {
		return false
	}
	e.ResponseCode = int(code)
	e.Flags = normalizeFlags(toks[2].s)

	i := 3
	bare := bareRun(toks[:n], i)
	numbersFirst := len(bare) >= 4 && len(bare) <= 6 && byteCounts(bare[len(bare)-4:])
	details := bare
	if numbersFirst {
		details = bare[:len(bare)-4]
	}
	switch len(details) {
	case 0:
	case 1:
		e.ResponseCodeDetails = unset(details[0].s)
	case 2:
		e.ResponseCodeDetails = unset(details[0].s)
		e.ConnectionTerminationDetails = unset(details[1].s)
	default:
		return false
	}
	i += len(details)
	if !numbersFirst {
		quoted := quotedRun(toks[:n], i)
		if len(quoted) > 0 {
			// With the 1.5-1.8 mixer status in front, the last quoted field is
			// still the transport failure reason.
			e.UpstreamTransportFailure = unset(quoted[len(quoted)-1].s)
		}
		i += len(quoted)
	}

	bare = bareRun(toks[:n], i)
	for j, t := range bare {
		switch j {
		case 0:
			e.BytesReceived, _ = atoi(t.s)
		case 1:
			e.BytesSent, _ = atoi(t.s)
		case 2:
			e.DurationMs, _ = atoi(t.s)
		case 3:
			e.UpstreamServiceTime = unset(t.s)
		}
	}
	i += len(bare)

	quoted := quotedRun(toks[:n], i)
	for j, t := range quoted {
		v := unset(t.s)
		switch j {
		case 0:
			e.ForwardedFor = v
		case 1:
			e.UserAgent = v
		case 2:
			e.RequestID = v
		case 3:
			e.Authority = v
		case 4:
			e.UpstreamHost = v
		}
	}
	i += len(quoted)

	bare = bareRun(toks[:n], i)
	for j, t := range bare {
		v := unset(t.s)
		switch j {
		case 0:
			e.UpstreamCluster = clustername.Name(v)
		case 1:
			e.UpstreamLocalAddress = v
		case 2:
			e.DownstreamLocalAddress = v
		case 3:
			e.DownstreamRemoteAddress = v
		case 4:
			e.RequestedServerName = v
		case 5:
			e.RouteName = v
		}
	}
	return true
}

// startTime finds the entry's [START_TIME] and returns it with the rest of
// the line from the quoted request on. Besides the plain form it accepts
// the line as `kubectl logs --timestamps` prints it (the kubelet's own
// RFC 3339 time and a space in front) and a START_TIME that lost its "["
// when pasted. Envoy's own log lines also open with "[time]" but continue
// with "[", so they are not taken.
func startTime(line string) (start, rest string, ok bool) {
	if len(line) > 0 && line[0] != '[' {
		if sp := strings.IndexByte(line, ' '); sp > 0 && sp+1 < len(line) && line[sp+1] == '[' && looksLikeTime(line[:sp]) {
			line = line[sp+1:] // kubectl logs --timestamps
		} else if end := strings.IndexByte(line, ']'); end > 0 && looksLikeTime(line[:end]) {
			line = "[" + line // the "[" was lost
		}
	}
	if len(line) < 4 || line[0] != '[' {
		return "", "", false
	}
	end := strings.IndexByte(line, ']')
	if end < 2 || end+2 >= len(line) || line[end+1] != ' ' || line[end+2] != '"' || !isDigit(line[1]) {
		return "", "", false
	}
	return line[1:end], line[end+2:], true
}

// looksLikeTime reports the shape of an RFC 3339 time, 2006-01-02T15:04:05...,
// without parsing it.
func looksLikeTime(s string) bool {
	return len(s) >= len("2006-01-02T15:04:05") && len(s) <= 40 && isDigit(s[0]) && isDigit(s[3]) &&
		s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':'
}

// byteCounts reports whether four bare fields read as RX TX DURATION
// SVC_TIME: three numbers and a number or "-".
func byteCounts(toks []token) bool {
	for j, t := range toks {
		if t.s == "-" && j == 3 {
			continue
		}
		if _, ok := atoi(t.s); !ok || t.s == "-" {
			return false
		}
	}
	return true
}

// tokenize splits s into bare (space-separated) and quoted fields. Envoy does
// not escape quotes inside %REQ(...)% values, so a quoted field ends at a
// quote followed by a space or the end of the line.
func tokenize(s string, toks *[maxTokens]token) int {
	n := 0
	i := 0
	for i < len(s) && n < maxTokens {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			break
		}
		if s[i] == '"' {
			start := i + 1
			j := start
			for {
				k := strings.IndexByte(s[j:], '"')
				if k < 0 {
					toks[n] = token{s: s[start:], quoted: true}
					return n + 1
				}
				p := j + k
				if p+1 == len(s) || s[p+1] == ' ' {
					toks[n] = token{s: s[start:p], quoted: true}
					i = p + 1
					break
				}
				j = p + 1
			}
		} else {
			k := strings.IndexByte(s[i:], ' ')
			if k < 0 {
				toks[n] = token{s: s[i:]}
				return n + 1
			}
			toks[n] = token{s: s[i : i+k]}
			i += k
		}
		n++
	}
	return n
}

func bareRun(toks []token, from int) []token {
	j := from
	for j < len(toks) && !toks[j].quoted {
		j++
	}
	if from > len(toks) {
		return nil
	}
	return toks[from:j]
}

func quotedRun(toks []token, from int) []token {
	j := from
	for j < len(toks) && toks[j].quoted {
		j++
	}
	if from > len(toks) {
		return nil
	}
	return toks[from:j]
}

// parseRequest splits "METHOD PATH PROTOCOL"; "- - -" is a TCP entry. A
// request whose path and protocol ran together ("GET /HTTP/1.1", as users
// paste Istio 1.0 lines) still names its method and protocol.
func parseRequest(s string, e *Entry) bool {
	method, rest, ok := strings.Cut(s, " ")
	if !ok {
		return false
	}
	var path, proto string
	if sp := strings.LastIndexByte(rest, ' '); sp >= 0 {
		path, proto = rest[:sp], rest[sp+1:]
	} else if i := strings.LastIndex(rest, "HTTP/"); i > 0 {
		path, proto = rest[:i], rest[i:]
	} else {
		return false
	}
	if method == "-" && path == "-" && proto == "-" {
		e.TCP = true
		return true
	}
	e.Method, e.Path, e.Protocol = unset(method), unset(path), unset(proto)
	return true
}

func unset(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// atoi parses a non-negative decimal; "-" (not set) is 0.
func atoi(s string) (int64, bool) {
	if s == "-" {
		return 0, true
	}
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
