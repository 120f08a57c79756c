package envoy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Envoy's own counters of the xDS updates it rejected: pilot-agent's
// readiness reads these two (istio/istio pkg/istio-agent/status/util
// stats.go), and Istio's bootstrap always includes them in /stats
// (cluster_manager and listener_manager are in its default inclusion
// prefixes). They count since the proxy started: a rejection followed by
// an accepted update still shows.
const (
	StatCDSUpdateRejected = "cluster_manager.cds.update_rejected"
	StatLDSUpdateRejected = "listener_manager.lds.update_rejected"
)

// XDSRejection is one update an Envoy said it rejected, in its own log.
type XDSRejection struct {
	Time time.Time // zero when the line has no readable timestamp
	// Type is CDS, LDS, RDS, EDS (or the resource type's name for
	// another); Reason is Envoy's error, its first line.
	Type, Reason string
	// Line is the line as logged.
	Line string
}

var (
	// grpc_subscription_impl.cc (state of the world) and
	// delta_subscription_state.cc (delta xDS):
	//   gRPC config for type.googleapis.com/envoy.config.listener.v3.Listener rejected: Error adding/updating ...
	//   delta config for type.googleapis.com/envoy.config.listener.v3.Listener rejected: ...
	configRejected = regexp.MustCompile(`(?:gRPC|delta) config for (type\.googleapis\.com/[\w.]+) rejected: (.*)`)
	// pilot-agent's readiness before the first config was accepted
	// (status/ready/probe.go):
	//   Envoy proxy is NOT ready: config received from XDS server, but was rejected: cds updates: 57 successful, 0 rejected; lds updates: 0 successful, 57 rejected
	agentRejected = regexp.MustCompile(`config received from XDS server, but was rejected: (.*)`)
	agentCounts   = regexp.MustCompile(`(cds|lds) updates: \d+ successful, (\d+) rejected`)
	lineTime      = regexp.MustCompile(`^\[?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)`)
)

// ParseXDSRejections reads an istio-proxy container's log (Istio's text
// or JSON lines, Envoy's and pilot-agent's mixed) for the xDS updates
// Envoy rejected, oldest first.
func ParseXDSRejections(log []byte) []XDSRejection {
	var out []XDSRejection
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.Contains(line, "rejected") {
			continue
		}
		text, ts := logMessage(line)
		if m := configRejected.FindStringSubmatch(text); m != nil {
			out = append(out, XDSRejection{Time: ts, Type: ShortType(m[1]), Reason: firstLine(m[2]), Line: line})
			continue
		}
		if m := agentRejected.FindStringSubmatch(text); m != nil {
			for _, c := range agentCounts.FindAllStringSubmatch(m[1], -1) {
				if n, _ := strconv.Atoi(c[2]); n > 0 {
					out = append(out, XDSRejection{Time: ts, Type: strings.ToUpper(c[1]), Reason: "pilot-agent: " + firstLine(m[1]), Line: line})
				}
			}
		}
	}
	return out
}

// logMessage is the message of a JSON line (with its time), or the text
// line itself with the timestamp it starts with.
func logMessage(line string) (string, time.Time) {
	if strings.HasPrefix(line, "{") {
		var j struct {
			Time string `json:"time"`
			Msg  string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &j) == nil && j.Msg != "" {
			t, _ := time.Parse(time.RFC3339Nano, j.Time)
			return j.Msg, t
		}
	}
	var t time.Time
	if m := lineTime.FindStringSubmatch(line); m != nil {
		t, _ = time.Parse(time.RFC3339Nano, m[1])
	}
	return line, t
}

// firstLine is an error's first line, without the fields Istio's text
// layout puts after the message (a tab, then thread=N).
func firstLine(s string) string {
	s = strings.ReplaceAll(s, `\n`, "\n")
	if i := strings.IndexAny(s, "\n\t"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// ShortType names an xDS type URL as istioctl does: CDS, LDS, RDS, EDS,
// else the type's message name.
func ShortType(typeURL string) string {
	switch typeURL {
	case ClusterTypeURL:
		return "CDS"
	case ListenerTypeURL:
		return "LDS"
	case RouteTypeURL:
		return "RDS"
	case EndpointTypeURL:
		return "EDS"
	}
	return shortType(typeURL)
}
