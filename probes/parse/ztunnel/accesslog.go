// Package ztunnel parses what ambient mode's node proxy writes and serves:
// its access log ("access" scope lines, TEXT or JSON) and its admin
// /config_dump (workloads, services, policies). Every parser is pure and
// tolerant: lines that are not access entries are counted, fields it does
// not know are skipped, and nothing it reads panics.
//
// A ztunnel access line, as ztunnel's tracing writes it (TEXT, tab
// separated; users' pastes often turn the tabs into spaces):
//
//	2026-12-02T05:11:20.118523Z	error	access	connection complete	src.addr=10.244.0.21:51734 src.workload="web-7d9c4b-x2x" src.namespace="shop" src.identity="spiffe://cluster.local/ns/shop/sa/web" dst.addr=10.244.1.7:15008 dst.hbone_addr=10.244.1.7:8080 dst.service="orders.shop.svc.cluster.local" direction="outbound" bytes_sent=0 bytes_recv=0 duration="10002ms" error="connection timed out, maybe a NetworkPolicy is blocking HBONE port 15008: deadline has elapsed"
//
// and as JSON (--log_as_json): {"level":"error","time":"...","scope":"access","message":"connection complete","src.addr":"...",...}.
package ztunnel

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
)

// Entry is one access-log entry: a connection ztunnel proxied (or failed
// to), from the side that logged it.
type Entry struct {
	Time    string // as logged, e.g. 2026-12-02T05:11:20.118523Z
	Level   string // info, warn, error
	Message string // "connection complete", "connection failed", ...

	SrcAddr, SrcWorkload, SrcNamespace, SrcIdentity string
	// DstAddr is where ztunnel connected: a pod's IP on 15008 for HBONE,
	// the target port for plaintext; DstHBONEAddr is the address the
	// tunnel asked for (pod IP and the app's port).
	DstAddr, DstHBONEAddr                              string
	DstService, DstWorkload, DstNamespace, DstIdentity string
	// Direction is "outbound" (the caller's ztunnel) or "inbound" (the
	// destination's).
	Direction            string
	BytesSent, BytesRecv int64
	Duration             string
	// Error is ztunnel's error text, "" for a connection that completed.
	Error string
	JSON  bool
}

// Kinds of failure, from ztunnel's error texts (proxy.rs Error).
const (
	// FailureHBONETimeout: "connection timed out, maybe a NetworkPolicy is
	// blocking HBONE port 15008": the TCP connect to a pod's 15008 got no
	// answer.
	FailureHBONETimeout = "hbone-timeout"
	// FailurePolicyRejected: the destination's ztunnel refused the
	// connection by AuthorizationPolicy (inbound side): "connection closed
	// due to policy rejection: ...".
	FailurePolicyRejected = "policy-rejection"
	// FailurePolicyChange: an open connection closed by a policy change.
	FailurePolicyChange = "policy-change"
	// FailureUnauthorized: the caller's ztunnel got 401 to its CONNECT,
	// which is how a rejection at the destination looks from the source.
	FailureUnauthorized = "http-401"
	// FailureUpstream503: the destination's ztunnel answered 503: it could
	// not connect to the app.
	FailureUpstream503 = "http-503"
	// FailureRefused: the app's port refused the connection.
	FailureRefused = "connection-refused"
	// FailureTimeout: a connect timed out without the NetworkPolicy hint
	// (older ztunnels, plaintext destinations).
	FailureTimeout    = "timeout"
	FailureNoUpstream = "no-healthy-upstream"
	FailureWaypoint   = "unknown-waypoint"
	FailureTLS        = "tls"
	FailureOther      = "other"
)

// HBONEPort is the port ztunnel tunnels to (HBONE: HTTP/2 CONNECT in mTLS).
const HBONEPort = 15008

// Opened reports ztunnel's debug-level "connection opened" line, written
// when a connection starts: the same connection logs "connection complete"
// (or "connection failed") when it ends, so an opened line is no outcome.
func (e *Entry) Opened() bool { return e.Message == "connection opened" }

// Failure classifies Error; "" when the connection completed.
func (e *Entry) Failure() string {
	s := e.Error
	switch {
	case s == "":
		return ""
	case strings.Contains(s, "maybe a NetworkPolicy is blocking HBONE"):
		return FailureHBONETimeout
	// Before 1.24 (istio/ztunnel#1229) the same connect timeout to a
	// pod's 15008 was a bare io error: "io error: deadline has elapsed".
	case e.DstPort() == HBONEPort && timedOut(s):
		return FailureHBONETimeout
	case strings.Contains(s, "due to policy rejection"):
		return FailurePolicyRejected
	case strings.Contains(s, "due to policy change"):
		return FailurePolicyChange
	case strings.Contains(s, "http status: 401") || strings.Contains(s, "401 Unauthorized"):
		return FailureUnauthorized
	case strings.HasPrefix(s, "http status: 503") || strings.Contains(s, "503 Service Unavailable"):
		return FailureUpstream503
	case strings.Contains(s, "onnection refused") || strings.Contains(s, "os error 111"):
		return FailureRefused
	case strings.Contains(s, "no healthy upstream"):
		return FailureNoUpstream
	case strings.Contains(s, "unknown waypoint"):
		return FailureWaypoint
	case strings.Contains(s, "timed out") || strings.Contains(s, "deadline has elapsed"):
		return FailureTimeout
	case strings.HasPrefix(s, "tls error") || strings.Contains(s, "identity error") || strings.Contains(s, "certificate"):
		return FailureTLS
	}
	return FailureOther
}

// timedOut: the text of a connect that got no answer in time.
func timedOut(s string) bool {
	return strings.Contains(s, "deadline has elapsed") || strings.Contains(s, "timed out") || strings.Contains(s, "os error 110")
}

// Hop is the side that logged the entry: "source" for the caller's
// ztunnel (direction outbound), "destination" for the destination's
// (inbound), "" when the line does not say.
func (e *Entry) Hop() string {
	switch e.Direction {
	case "outbound":
		return "source"
	case "inbound":
		return "destination"
	}
	return ""
}

// DeniedBy is the policy a rejection names ("NS/NAME" of "explicitly
// denied by: NS/NAME"), "" otherwise.
func (e *Entry) DeniedBy() string {
	_, after, ok := strings.Cut(e.Error, "explicitly denied by: ")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(after, " \";,"); i >= 0 {
		after = after[:i]
	}
	return after
}

// Rejection is the reason of a policy rejection ("allow policies exist,
// but none allowed", "explicitly denied by: NS/NAME"), "" otherwise.
func (e *Entry) Rejection() string {
	_, after, ok := strings.Cut(e.Error, "due to policy rejection")
	if !ok {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(after, ":"))
}

// SrcIP and DstIP are the hosts of the addresses; DstPort the port
// ztunnel connected to (15008 for HBONE); TargetIP the pod the tunnel was
// for (dst.hbone_addr, else dst.addr).
func (e *Entry) SrcIP() string { return host(e.SrcAddr) }
func (e *Entry) DstIP() string { return host(e.DstAddr) }
func (e *Entry) DstPort() int {
	_, p, err := net.SplitHostPort(e.DstAddr)
	if err != nil {
		return 0
	}
	// A port is 0-65535: anything else (a sign, a garbled line) is none.
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0
	}
	return int(n)
}
func (e *Entry) TargetIP() string {
	if e.DstHBONEAddr != "" {
		if h := host(e.DstHBONEAddr); h != "" {
			return h
		}
	}
	return e.DstIP()
}

func host(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return ""
}

// ParseLine parses one line; ok is false for lines that are not access
// entries (ztunnel's other scopes, startup, anything else).
func ParseLine(line string) (Entry, bool) {
	line = strings.TrimRight(line, "\r\n")
	trimmed := strings.TrimSpace(line)
	if strings.HasPrefix(trimmed, "{") {
		return parseJSON(trimmed)
	}
	return parseText(trimmed)
}

func parseText(line string) (Entry, bool) {
	var e Entry
	rest := line
	var tok string
	tok, rest = nextToken(rest)
	if !looksLikeTime(tok) {
		return e, false
	}
	e.Time = tok
	e.Level, rest = nextToken(rest)
	var scope string
	scope, rest = nextToken(rest)
	if scope != "access" {
		return e, false
	}
	// The message runs to the first key=value field.
	msgEnd := len(rest)
	for i := 0; i < len(rest); i++ {
		if (i == 0 || rest[i-1] == ' ' || rest[i-1] == '\t') && fieldAt(rest, i) {
			msgEnd = i
			break
		}
	}
	e.Message = strings.TrimSpace(rest[:msgEnd])
	rest = rest[msgEnd:]
	for {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			break
		}
		key := rest[:eq]
		rest = rest[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			var end int
			val, end = unquote(rest)
			rest = rest[end:]
		} else {
			end := strings.IndexAny(rest, " \t")
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
		}
		e.set(key, val)
	}
	return e, true
}

// fieldAt reports a key=value field starting at s[i]: a key of lower-case
// letters, digits, '_' and '.', then '='.
func fieldAt(s string, i int) bool {
	j := i
	for j < len(s) {
		c := s[j]
		if c == '=' {
			return j > i
		}
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
		j++
	}
	return false
}

// unquote reads a Rust Debug string starting at s[0] == '"': backslash
// escapes \" \\ \n \t; it returns the value and where it ended. An
// unterminated string runs to the end.
func unquote(s string) (string, int) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), i + 1
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), len(s)
}

func nextToken(s string) (tok, rest string) {
	s = strings.TrimLeft(s, " \t")
	end := strings.IndexAny(s, " \t")
	if end < 0 {
		return s, ""
	}
	return s[:end], s[end:]
}

func looksLikeTime(s string) bool {
	return len(s) >= 20 && s[0] >= '0' && s[0] <= '9' && s[4] == '-' && strings.IndexByte(s, 'T') == 10
}

func (e *Entry) set(key, val string) {
	switch key {
	case "src.addr":
		e.SrcAddr = val
	case "src.workload":
		e.SrcWorkload = val
	case "src.namespace":
		e.SrcNamespace = val
	case "src.identity":
		e.SrcIdentity = val
	case "dst.addr":
		e.DstAddr = val
	case "dst.hbone_addr":
		e.DstHBONEAddr = val
	case "dst.service":
		e.DstService = val
	case "dst.workload":
		e.DstWorkload = val
	case "dst.namespace":
		e.DstNamespace = val
	case "dst.identity":
		e.DstIdentity = val
	case "direction":
		e.Direction = val
	case "bytes_sent":
		e.BytesSent = nonNegative(val)
	case "bytes_recv":
		e.BytesRecv = nonNegative(val)
	case "duration":
		e.Duration = val
	case "error":
		e.Error = val
	}
}

func nonNegative(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func parseJSON(line string) (Entry, bool) {
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return Entry{}, false
	}
	flat := map[string]any{}
	flatten("", m, flat)
	if str(flat["scope"]) != "access" && str(flat["target"]) != "access" {
		return Entry{}, false
	}
	e := Entry{JSON: true, Level: strings.ToLower(str(flat["level"]))}
	e.Time = str(flat["time"])
	if e.Time == "" {
		e.Time = str(flat["timestamp"])
	}
	e.Message = str(flat["message"])
	if e.Message == "" {
		e.Message = str(flat["msg"])
	}
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e.set(strings.TrimPrefix(k, "fields."), str(flat[k]))
	}
	return e, true
}

// flatten turns {"src":{"addr":...}} into "src.addr", as the TEXT format
// names fields; keys that already hold dots are kept.
func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(key, sub, out)
			continue
		}
		out[key] = v
	}
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// Summary is the tally of the entries a triage keeps from a log.
type Summary struct {
	Lines    int `json:"lines"`    // non-empty lines read
	Unparsed int `json:"unparsed"` // lines that are not access entries
	Entries  int `json:"entries"`  // access entries kept
	// Completed counts kept entries without an error.
	Completed int `json:"completed"`
	// Failures counts kept entries by Failure kind.
	Failures map[string]int `json:"failures,omitempty"`
	// DeniedBy counts the policies rejections name; Rejections the
	// rejection reasons.
	DeniedBy   map[string]int `json:"denied_by,omitempty"`
	Rejections map[string]int `json:"rejections,omitempty"`
	// FailedSources counts the source workloads (else addresses) of
	// failed entries.
	FailedSources map[string]int `json:"failed_sources,omitempty"`
	// RejectedPods counts the source pods (NAMESPACE/NAME, from
	// src.namespace and src.workload) of policy rejections.
	RejectedPods map[string]int `json:"rejected_pods,omitempty"`
	// Errors counts failed entries by ErrorKey: the side that logged it,
	// ztunnel's error variant and its text (at most MaxErrorKeys distinct;
	// the rest in ErrorsOther).
	Errors      map[string]int `json:"errors,omitempty"`
	ErrorsOther int            `json:"errors_other,omitempty"`
	// RefusedTunnels counts, by the pod IP the tunnel was for, the
	// caller's connects to a pod's HBONE port 15008 that were refused
	// (connection refused, os error 111): nothing listens on the pod's
	// 15008 any more, as when the pod ended before istiod's removal of it
	// reached the caller (istio/istio#58514).
	RefusedTunnels map[string]int `json:"refused_tunnels,omitempty"`
	// Drained counts the connections ztunnel closed by a drain
	// (ClosedFromDrain, DrainTimeOut): the pod or ztunnel shutting down.
	Drained int `json:"drained,omitempty"`
	// Opened counts the debug-level "connection opened" lines of kept
	// entries: not outcomes, so neither Entries nor Completed.
	Opened int `json:"opened,omitempty"`
	// Samples are the first MaxSamples failed lines, verbatim.
	Samples []string `json:"samples,omitempty"`
}

// MaxErrorKeys caps Summary.Errors.
const MaxErrorKeys = 64

// ErrorKey is what the vocabulary reads of one failed entry.
type ErrorKey struct {
	Hop   string // Entry.Hop
	Kind  string // ClassifyError's Kind
	HBONE bool   // ztunnel connected to a pod's 15008
	Error string // the error text (its first 300 bytes)
}

func (k ErrorKey) String() string {
	h := ""
	if k.HBONE {
		h = "hbone"
	}
	return k.Hop + "\t" + k.Kind + "\t" + h + "\t" + k.Error
}

// ParseErrorKey reads a key of Summary.Errors.
func ParseErrorKey(s string) ErrorKey {
	p := strings.SplitN(s, "\t", 4)
	for len(p) < 4 {
		p = append(p, "")
	}
	return ErrorKey{Hop: p[0], Kind: p[1], HBONE: p[2] == "hbone", Error: p[3]}
}

// Key is e's ErrorKey.
func (e *Entry) Key() ErrorKey {
	text := e.Error
	if len(text) > 300 {
		text = text[:300]
	}
	return ErrorKey{Hop: e.Hop(), Kind: ClassifyError(e.Error).Kind, HBONE: e.DstPort() == HBONEPort, Error: text}
}

// MaxSamples caps Summary.Samples.
const MaxSamples = 5

// Tally reads r to its end and tallies the access entries keep accepts
// (nil keeps all). Only a read error is returned.
func Tally(r io.Reader, keep func(*Entry) bool) (Summary, error) {
	s := Summary{}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if strings.TrimSpace(line) != "" {
			s.Add(line, keep)
		}
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return s, err
		}
	}
}

// Add tallies one line.
func (s *Summary) Add(line string, keep func(*Entry) bool) {
	s.Lines++
	e, ok := ParseLine(line)
	if !ok {
		s.Unparsed++
		return
	}
	if keep != nil && !keep(&e) {
		return
	}
	if e.Opened() {
		s.Opened++
		return
	}
	s.Entries++
	f := e.Failure()
	if f == "" {
		s.Completed++
		return
	}
	inc(&s.Failures, f)
	if f == FailureRefused && e.Hop() == "source" && e.DstPort() == HBONEPort {
		if ip := e.TargetIP(); ip != "" {
			inc(&s.RefusedTunnels, ip)
		}
	}
	key := e.Key()
	if key.Kind == "ClosedFromDrain" || key.Kind == "DrainTimeOut" {
		s.Drained++
	}
	if k := key.String(); s.Errors[k] > 0 || len(s.Errors) < MaxErrorKeys {
		inc(&s.Errors, k)
	} else {
		s.ErrorsOther++
	}
	if by := e.DeniedBy(); by != "" {
		inc(&s.DeniedBy, by)
	}
	if r := e.Rejection(); r != "" {
		inc(&s.Rejections, r)
		if e.SrcNamespace != "" && e.SrcWorkload != "" {
			inc(&s.RejectedPods, e.SrcNamespace+"/"+e.SrcWorkload)
		}
	}
	src := e.SrcWorkload
	if src == "" {
		src = e.SrcIP()
	}
	if src != "" {
		inc(&s.FailedSources, src)
	}
	if len(s.Samples) < MaxSamples {
		s.Samples = append(s.Samples, strings.TrimRight(line, "\r\n"))
	}
}

// Merge adds o's counts to s.
func (s *Summary) Merge(o Summary) {
	s.Lines += o.Lines
	s.Unparsed += o.Unparsed
	s.Entries += o.Entries
	s.Completed += o.Completed
	s.Opened += o.Opened
	s.Drained += o.Drained
	s.ErrorsOther += o.ErrorsOther
	for k, v := range o.Errors {
		if s.Errors[k] > 0 || len(s.Errors) < MaxErrorKeys {
			if s.Errors == nil {
				s.Errors = map[string]int{}
			}
			s.Errors[k] += v
		} else {
			s.ErrorsOther += v
		}
	}
	for _, p := range []struct{ dst, src *map[string]int }{
		{&s.Failures, &o.Failures}, {&s.DeniedBy, &o.DeniedBy}, {&s.Rejections, &o.Rejections}, {&s.FailedSources, &o.FailedSources},
		{&s.RejectedPods, &o.RejectedPods}, {&s.RefusedTunnels, &o.RefusedTunnels},
	} {
		for k, v := range *p.src {
			if *p.dst == nil {
				*p.dst = map[string]int{}
			}
			(*p.dst)[k] += v
		}
	}
	for _, l := range o.Samples {
		if len(s.Samples) < MaxSamples {
			s.Samples = append(s.Samples, l)
		}
	}
}

func inc(m *map[string]int, k string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

// Keys lists a count map's keys, most frequent first, then by name, as
// "KEY=N".
func Keys(m map[string]int) []string {
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
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + strconv.Itoa(m[k])
	}
	return out
}
