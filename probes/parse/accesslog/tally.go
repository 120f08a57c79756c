package accesslog

import (
	"bufio"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// Bounds that keep a tally's memory independent of the log's size.
const (
	// MaxDistinct caps each Counter; values beyond it are counted in Other.
	MaxDistinct = 64
	// MaxSamples caps the verbatim lines kept as evidence.
	MaxSamples = 8
	// MaxLine is the longest line read whole; longer lines (far beyond any
	// access-log entry Envoy's 60 KiB header limit allows) are unparsed.
	MaxLine = 256 << 10
)

// Counter counts distinct string values, keeping at most MaxDistinct of them.
type Counter struct {
	Counts map[string]int `json:"counts,omitempty"`
	// Other counts occurrences of values beyond the first MaxDistinct.
	Other int `json:"other,omitempty"`

	// keys maps each kept value to the copy Counts is keyed by. Go replaces
	// a string key on every assignment to its entry, so counting with v
	// itself would re-key the entry with bytes of the reader's buffer,
	// which the next lines overwrite.
	keys map[string]string
}

// Add counts v once. v is copied when it is kept, so it may alias a buffer.
func (c *Counter) Add(v string) {
	if k, ok := c.keys[v]; ok {
		c.Counts[k]++
		return
	}
	n, ok := c.Counts[v] // a Counter built or merged without keys
	if !ok && len(c.Counts) >= MaxDistinct {
		c.Other++
		return
	}
	if c.Counts == nil {
		c.Counts = map[string]int{}
	}
	if c.keys == nil {
		c.keys = map[string]string{}
	}
	k := strings.Clone(v)
	c.keys[k] = k
	c.Counts[k] = n + 1
}

// Keys lists the values, most frequent first (ties by name).
func (c Counter) Keys() []string {
	keys := make([]string, 0, len(c.Counts))
	for k := range c.Counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c.Counts[keys[i]] != c.Counts[keys[j]] {
			return c.Counts[keys[i]] > c.Counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// Total is the number of values counted.
func (c Counter) Total() int {
	n := c.Other
	for _, v := range c.Counts {
		n += v
	}
	return n
}

// Summary is the tally of one log stream.
type Summary struct {
	Lines     int `json:"lines"`    // non-empty lines read
	Unparsed  int `json:"unparsed"` // lines that are not access-log entries
	Entries   int `json:"entries"`
	TCP       int `json:"tcp"` // TCP proxy entries (no HTTP status)
	Status2xx int `json:"status_2xx"`
	Status4xx int `json:"status_4xx"`
	Status5xx int `json:"status_5xx"`
	Status503 int `json:"status_503"`

	// Flags counts the response flags of HTTP entries whatever their
	// response code ("UF,URX" counts both): NR comes with 404, DC with 0,
	// UT with 504, and all of them are 503-triage evidence.
	Flags Counter `json:"flags"`
	// FlagCodes counts each flag of an HTTP entry with the response code it
	// came with, as "FLAG CODE" ("NR 404", "DC 0", "UO 503").
	FlagCodes Counter `json:"flag_codes"`
	// TCPFlags counts the response flags of TCP entries, which have no status
	// but fail with the same flags (UF, URX, UH, NR filter_chain_not_found).
	TCPFlags Counter `json:"tcp_flags"`
	// Details counts response_code_details of failed entries: 5xx, or
	// carrying a response flag (route_not_found, downstream_remote_disconnect,
	// filter_chain_not_found), or a 4xx Envoy answered itself (low_version,
	// rbac_access_denied_matched_policy).
	Details Counter `json:"details"`
	// TransportFailures counts upstream_transport_failure_reason of all entries.
	TransportFailures Counter `json:"transport_failures"`
	// Clusters5xx counts the upstream cluster of 5xx entries.
	Clusters5xx Counter `json:"clusters_5xx"`
	// TunnelFailed counts the pod IPs of 5xx entries whose upstream host is
	// an HBONE tunnel (envoy://connect_originate/IP:PORT, how a gateway,
	// waypoint or sidecar in an ambient mesh reaches a pod through its
	// ztunnel): which pods the failures went to.
	TunnelFailed Counter `json:"tunnel_failed"`
	// TunnelReset counts the pod IPs of UC entries whose upstream host is
	// an HBONE tunnel: a pooled connection to the pod's 15008 reset under
	// the request (istio/ztunnel#1662). TunnelResetFirst is the earliest
	// START_TIME of them by IP, as logged ("" when no line had one).
	TunnelReset      Counter           `json:"tunnel_reset"`
	TunnelResetFirst map[string]string `json:"tunnel_reset_first,omitempty"`
	// Peers counts the downstream remote address's host of every entry, and
	// PeersFailed that of failed ones (a 5xx, or a TCP connection that ended
	// with a response flag, such as plaintext refused by a STRICT inbound:
	// NR filter_chain_not_found). On an inbound entry that is the calling
	// pod's IP: how a triage without --from finds its callers.
	Peers       Counter `json:"peers"`
	PeersFailed Counter `json:"peers_failed"`

	// Failures counts the failed entries by what tells their failure apart
	// (FailureKey: flags, response code, details, transport failure
	// reason): every entry with a flag, every 5xx, and the 4xx Envoy
	// answered itself (details other than via_upstream). The vocabulary
	// reads each one.
	Failures Counter `json:"failures"`

	BlackHole int `json:"blackhole"`
	// BlackHoleHosts counts the destinations (authority, SNI or address) of
	// BlackHoleCluster entries.
	BlackHoleHosts    Counter `json:"blackhole_hosts"`
	Passthrough       int     `json:"passthrough"`
	ConnectionRefused int     `json:"connection_refused"`
	// HTTP10Rejected counts Envoy's own 426 to HTTP/1.0 requests
	// (Entry.HTTP10Rejected).
	HTTP10Rejected int `json:"http10_rejected"`

	// First and Last are the earliest and latest START_TIME seen (zero when
	// no entry had a readable one).
	First time.Time `json:"first,omitzero"`
	Last  time.Time `json:"last,omitzero"`

	// Samples are the first MaxSamples 5xx, flagged, BlackHoleCluster or
	// connection-refused lines, verbatim.
	Samples []string `json:"samples,omitempty"`

	minTS, maxTS []byte
	// flagCode and key are scratch space for FlagCodes' and Failures' keys.
	flagCode, key []byte
}

// Tally reads r to its end, line by line, and tallies every line. Only a read
// error from r is returned; unparseable lines are counted in Unparsed.
func Tally(r io.Reader) (Summary, error) {
	var s Summary
	err := s.AddFrom(r)
	return s, err
}

// AddFrom tallies every line of r into s.
func (s *Summary) AddFrom(r io.Reader) error {
	var p parser
	return eachLine(r, func(line string) {
		s.addLine(&p, line)
	}, s.skipped, s.Finish)
}

// Split tallies r into the entries match selects and the rest: a caller
// triaging one service reads a proxy log that also records the pod's calls
// to every other service. Lines that are not entries count in matched
// (Lines, Unparsed); rest counts only entries.
func Split(r io.Reader, match func(*Entry) bool) (matched, rest Summary, err error) {
	return split(r, parser{}, match)
}

func split(r io.Reader, p parser, match func(*Entry) bool) (matched, rest Summary, err error) {
	err = eachLine(r, func(line string) {
		line = trimEOL(line)
		if blank(line) {
			return
		}
		e, ok := p.parse(line)
		switch {
		case !ok:
			matched.Lines++
			matched.Unparsed++
		case match(e):
			matched.Lines++
			matched.AddEntry(e, line)
		default:
			rest.Lines++
			rest.AddEntry(e, line)
		}
	}, matched.skipped, func() { matched.Finish(); rest.Finish() })
	return matched, rest, err
}

func (s *Summary) skipped() {
	s.Lines++
	s.Unparsed++
}

// eachLine calls line for every line of r (aliasing the reader's buffer),
// tooLong for lines beyond MaxLine, and done at the end.
func eachLine(r io.Reader, line func(string), tooLong, done func()) error {
	defer done()
	br := bufio.NewReaderSize(r, MaxLine)
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			tooLong()
			if err = skipLine(br); err == nil {
				continue
			}
			b = nil
		}
		if len(b) > 0 {
			line(bytesString(b))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// bytesString views b as a string without copying. Safe here because the
// tally copies every string it keeps (Counter.Add, samples, timestamps)
// before the reader's buffer is reused.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// AddLine tallies one line; it may alias a reused buffer. Call Finish after
// the last one.
func (s *Summary) AddLine(line string) {
	var p parser
	s.addLine(&p, line)
}

func (s *Summary) addLine(p *parser, line string) {
	line = trimEOL(line)
	if blank(line) {
		return
	}
	s.Lines++
	e, ok := p.parse(line)
	if !ok {
		s.Unparsed++
		return
	}
	s.AddEntry(e, line)
}

// AddEntry tallies a parsed entry; raw is kept as a sample when notable.
func (s *Summary) AddEntry(e *Entry, raw string) {
	s.Entries++
	tcp := e.TCP && e.ResponseCode == 0
	flagged := e.Flags != ""
	switch {
	case tcp:
		s.TCP++
		eachFlag(e.Flags, s.TCPFlags.Add)
	default:
		eachFlag(e.Flags, func(flag string) {
			s.Flags.Add(flag)
			s.flagCode = strconv.AppendInt(append(append(s.flagCode[:0], flag...), ' '), int64(e.ResponseCode), 10)
			s.FlagCodes.Add(bytesString(s.flagCode))
		})
	}
	switch {
	case e.ResponseCode >= 200 && e.ResponseCode < 300:
		s.Status2xx++
	case e.ResponseCode >= 400 && e.ResponseCode < 500:
		s.Status4xx++
	case e.Is5xx():
		s.Status5xx++
		if e.ResponseCode == 503 {
			s.Status503++
		}
		if e.UpstreamCluster != "" {
			s.Clusters5xx.Add(e.UpstreamCluster)
		}
		if ip := e.TunnelPodIP(); ip != "" {
			s.TunnelFailed.Add(ip)
			if e.HasFlag("UC") {
				s.TunnelReset.Add(ip)
				s.firstReset(ip, e.StartTime)
			}
		}
	}
	if peer := addressHost(e.DownstreamRemoteAddress); peer != "" {
		s.Peers.Add(peer)
		if e.Is5xx() || tcp && flagged {
			s.PeersFailed.Add(peer)
		}
	}
	// A 4xx Envoy answered itself (its details are not via_upstream) is a
	// failure of the proxy's, as much as a 5xx: a 426 low_version (no
	// flag) is the whole of an HTTP/1.0 client's outage.
	localReply4xx := e.ResponseCode >= 400 && e.ResponseCode < 500 && e.ResponseCodeDetails != "" && e.ResponseCodeDetails != ViaUpstream
	notable := e.Is5xx() || flagged || localReply4xx
	if e.HTTP10Rejected() {
		s.HTTP10Rejected++
		notable = true
	}
	if notable && e.ResponseCodeDetails != "" {
		s.Details.Add(e.ResponseCodeDetails)
	}
	if e.UpstreamTransportFailure != "" {
		s.TransportFailures.Add(e.UpstreamTransportFailure)
	}
	if flagged || e.Is5xx() || e.ResponseCode >= 400 && e.ResponseCodeDetails != "" && e.ResponseCodeDetails != ViaUpstream {
		s.key = FailureKey{Flags: e.Flags, Code: e.ResponseCode, Details: e.ResponseCodeDetails, Transport: e.UpstreamTransportFailure, TCP: tcp}.append(s.key[:0])
		s.Failures.Add(bytesString(s.key))
	}
	if e.BlackHole() {
		s.BlackHole++
		if d := e.Destination(); d != "" {
			s.BlackHoleHosts.Add(d)
		}
		notable = true
	}
	if e.UpstreamCluster == PassthroughCluster {
		s.Passthrough++
	}
	if e.ConnectionRefused() {
		s.ConnectionRefused++
		notable = true
	}
	if notable && len(s.Samples) < MaxSamples {
		s.Samples = append(s.Samples, strings.Clone(raw))
	}
	s.seen(e.StartTime)
}

// addressHost is the host of an address as Envoy logs it: "10.0.0.1:8080",
// "[fd00::1]:8080"; without a port, the address itself. It may alias addr.
func addressHost(addr string) string {
	if addr == "" {
		return ""
	}
	if addr[0] == '[' {
		if i := strings.IndexByte(addr, ']'); i > 0 {
			return addr[1:i]
		}
		return ""
	}
	if i := strings.LastIndexByte(addr, ':'); i >= 0 && strings.IndexByte(addr[:i], ':') < 0 {
		return addr[:i]
	}
	return addr
}

func eachFlag(flags string, f func(string)) {
	for flags != "" {
		var flag string
		flag, flags, _ = strings.Cut(flags, ",")
		if flag = strings.TrimSpace(flag); flag != "" && flag != "-" {
			f(flag)
		}
	}
}

// seen keeps the earliest and latest timestamps. Envoy logs an entry when it
// completes, so START_TIME is not monotonic in the file; Istio's
// %START_TIME% is fixed-width UTC, which orders as text, so the comparison
// parses nothing per line.
func (s *Summary) seen(ts string) {
	if len(ts) < len("2006-01-02T15:04:05Z") || !isDigit(ts[0]) {
		return
	}
	if s.minTS == nil || tsBefore(ts, string(s.minTS)) {
		s.minTS = append(s.minTS[:0], ts...)
	}
	if s.maxTS == nil || tsBefore(string(s.maxTS), ts) {
		s.maxTS = append(s.maxTS[:0], ts...)
	}
}

// firstReset keeps the earliest START_TIME of the tunnel resets to ip.
func (s *Summary) firstReset(ip, ts string) {
	if len(ts) < len("2006-01-02T15:04:05Z") || !isDigit(ts[0]) {
		return
	}
	if s.TunnelResetFirst == nil {
		s.TunnelResetFirst = map[string]string{}
	}
	old, ok := s.TunnelResetFirst[ip]
	if !ok && len(s.TunnelResetFirst) >= MaxDistinct {
		return
	}
	if !ok || tsBefore(ts, old) {
		s.TunnelResetFirst[strings.Clone(ip)] = strings.Clone(ts)
	}
}

func tsBefore(a, b string) bool {
	if len(a) == len(b) && a[len(a)-1] == 'Z' && b[len(b)-1] == 'Z' {
		return a < b
	}
	ta, erra := parseTime(a)
	tb, errb := parseTime(b)
	if erra != nil || errb != nil {
		return a < b
	}
	return ta.Before(tb)
}

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// Finish sets First and Last; AddFrom calls it, callers of AddLine and
// AddEntry call it when done.
func (s *Summary) Finish() {
	if t, err := parseTime(string(s.minTS)); err == nil {
		s.First = t
	}
	if t, err := parseTime(string(s.maxTS)); err == nil {
		s.Last = t
	}
}

// Merge adds o's counts into s (for one figure over several pods).
func (s *Summary) Merge(o Summary) {
	s.Lines += o.Lines
	s.Unparsed += o.Unparsed
	s.Entries += o.Entries
	s.TCP += o.TCP
	s.Status2xx += o.Status2xx
	s.Status4xx += o.Status4xx
	s.Status5xx += o.Status5xx
	s.Status503 += o.Status503
	s.BlackHole += o.BlackHole
	s.Passthrough += o.Passthrough
	s.ConnectionRefused += o.ConnectionRefused
	s.HTTP10Rejected += o.HTTP10Rejected
	for _, p := range []struct{ dst, src *Counter }{
		{&s.Flags, &o.Flags}, {&s.FlagCodes, &o.FlagCodes}, {&s.TCPFlags, &o.TCPFlags}, {&s.Details, &o.Details},
		{&s.TransportFailures, &o.TransportFailures}, {&s.Clusters5xx, &o.Clusters5xx}, {&s.TunnelFailed, &o.TunnelFailed}, {&s.TunnelReset, &o.TunnelReset}, {&s.Failures, &o.Failures},
		{&s.BlackHoleHosts, &o.BlackHoleHosts}, {&s.Peers, &o.Peers}, {&s.PeersFailed, &o.PeersFailed},
	} {
		p.dst.merge(*p.src)
	}
	for ip, ts := range o.TunnelResetFirst {
		s.firstReset(ip, ts)
	}
	for _, l := range o.Samples {
		if len(s.Samples) >= MaxSamples {
			break
		}
		s.Samples = append(s.Samples, l)
	}
	if !o.First.IsZero() && (s.First.IsZero() || o.First.Before(s.First)) {
		s.First = o.First
	}
	if o.Last.After(s.Last) {
		s.Last = o.Last
	}
}

func (c *Counter) merge(o Counter) {
	for _, k := range o.Keys() {
		n := o.Counts[k]
		if _, ok := c.Counts[k]; !ok && len(c.Counts) >= MaxDistinct {
			c.Other += n
			continue
		}
		if c.Counts == nil {
			c.Counts = map[string]int{}
		}
		c.Counts[k] += n
	}
	c.Other += o.Other
}

// ViaUpstream is the response_code_details of a response the upstream
// sent: Envoy only passed it on.
const ViaUpstream = "via_upstream"

// FailureKey is what tells one failed entry's failure from another's:
// Summary.Failures counts entries by it.
type FailureKey struct {
	Flags     string // short names, comma-separated; "" for none
	Code      int    // 0 for TCP entries and for requests that got no response
	Details   string // response_code_details
	Transport string // upstream_transport_failure_reason
	TCP       bool
}

func (k FailureKey) append(b []byte) []byte {
	b = append(b, k.Flags...)
	b = append(b, '\t')
	b = strconv.AppendInt(b, int64(k.Code), 10)
	b = append(b, '\t')
	b = append(b, k.Details...)
	b = append(b, '\t')
	b = append(b, k.Transport...)
	if k.TCP {
		b = append(b, "\ttcp"...)
	}
	return b
}

// String is the key as Failures counts it: tab-separated fields.
func (k FailureKey) String() string { return string(k.append(nil)) }

// ParseFailureKey reads a key of Summary.Failures.
func ParseFailureKey(s string) FailureKey {
	parts := strings.SplitN(s, "\t", 5)
	for len(parts) < 4 {
		parts = append(parts, "")
	}
	code, _ := strconv.Atoi(parts[1])
	return FailureKey{Flags: parts[0], Code: code, Details: parts[2], Transport: parts[3], TCP: len(parts) == 5 && parts[4] == "tcp"}
}

// EachFlag calls f with each flag of k, or once with "-" when it has none.
func (k FailureKey) EachFlag(f func(flag string)) {
	if k.Flags == "" {
		f("-")
		return
	}
	eachFlag(k.Flags, f)
}
