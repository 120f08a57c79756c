package ztunnel

import (
	"regexp"
	"strings"
)

// ErrorKind is one variant of ztunnel's proxy error (src/proxy.rs, enum
// Error), with the text its Display prints ({0} where a value goes).
type ErrorKind struct {
	Name string // the Rust variant, e.g. "MaybeHBONENetworkPolicyError"
	Text string // e.g. "connection timed out, maybe a NetworkPolicy is blocking HBONE port 15008: {0}"
	// Wraps: {0} is another Error (ShutdownError, ReceiveError,
	// SendError), whose kind says more than the wrapper.
	Wraps bool
}

// ErrorKinds is the closed set: every variant of ztunnel's Error (47, as of
// istio/ztunnel 1.31, src/proxy.rs), in its order. The vocabulary
// (probes/vocabulary) must give each a meaning on both sides.
// "unknown waypoint" and the other messages are ztunnel's own; where two
// variants print their value alone (Generic, Anyhow) text cannot tell them
// apart, and the reader calls such text Generic.
var ErrorKinds = []ErrorKind{
	{Name: "Bind", Text: "failed to bind to address {0}: {1}"},
	{Name: "Io", Text: "io error: {0}"},
	{Name: "ShutdownError", Text: "while closing connection: {0}", Wraps: true},
	{Name: "MaybeHBONENetworkPolicyError", Text: "connection timed out, maybe a NetworkPolicy is blocking HBONE port 15008: {0}"},
	{Name: "BackendDisconnected", Text: "destination disconnected before all data was written"},
	{Name: "ReceiveError", Text: "receive: {0}", Wraps: true},
	{Name: "ClientDisconnected", Text: "client disconnected before all data was written"},
	{Name: "SendError", Text: "send: {0}", Wraps: true},
	{Name: "ConnectionFailed", Text: "connection failed: {0}"},
	{Name: "ConnectionTrackingFailed", Text: "connection tracking failed"},
	{Name: "AuthorizationPolicyLateRejection", Text: "connection closed due to policy change"},
	{Name: "CertificateRevoked", Text: "connection closed: peer certificate revoked by CRL"},
	{Name: "AuthorizationPolicyRejection", Text: "connection closed due to policy rejection: {0}"},
	{Name: "WorkloadHBONEPoolDraining", Text: "pool draining"},
	{Name: "Generic", Text: "{0}"},
	{Name: "Anyhow", Text: "{0}"},
	{Name: "Http2Handshake", Text: "http2 handshake failed: {0}"},
	{Name: "H2", Text: "h2 failed: {0}"},
	{Name: "HttpStatus", Text: "http status: {0}"},
	{Name: "NonConnectMethod", Text: "expected method CONNECT, got {0}"},
	{Name: "ConnectAddress", Text: "invalid CONNECT address {0}"},
	{Name: "Tls", Text: "tls error: {0}"},
	{Name: "Identity", Text: "identity error: {0}"},
	{Name: "UnknownSourceWorkload", Text: "failed to fetch information about local workload: {0}"},
	{Name: "UnknownWaypoint", Text: "unknown waypoint: {0}"},
	{Name: "UnknownNetworkGateway", Text: "unknown network gateway: {0}"},
	{Name: "NoHostname", Text: "no service or workload for hostname: {0}"},
	{Name: "NoWorkloadEndpoints", Text: "no endpoints for workload: {0}"},
	{Name: "NoValidAuthority", Text: "no valid authority pseudo header: {0}"},
	{Name: "NoValidServicePort", Text: "no valid service port in authority header: {0}"},
	{Name: "NoValidTargetPort", Text: "no valid target port for workload: {0}"},
	{Name: "NoValidDestination", Text: "no valid routing destination for workload: {0}"},
	{Name: "NoHealthyUpstream", Text: "no healthy upstream: {0}"},
	{Name: "NoResolvedAddresses", Text: "no ip addresses were resolved for workload: {0}"},
	{Name: "NoPortForServices", Text: "requested service {0}:{1} found, but cannot resolve port"},
	{Name: "NoIPForService", Text: "requested service {0} found, but has no IP addresses"},
	{Name: "NoService", Text: "no service for target address: {0}"},
	{Name: "EmptyResolvedAddresses", Text: "ip addresses were resolved for workload {0}, but valid dns response had no A/AAAA records"},
	{Name: "SelfCall", Text: "attempted recursive call to ourselves"},
	{Name: "NoGatewayAddress", Text: "no gateway address: {0}"},
	{Name: "UnsupportedFeature", Text: "unsupported feature: {0}"},
	{Name: "IPMismatch", Text: "ip mismatch: {0} != {1}"},
	{Name: "DrainTimeOut", Text: "connection failed to drain within the timeout"},
	{Name: "ClosedFromDrain", Text: "connection closed due to connection drain"},
	{Name: "Dns", Text: "dns: {0}"},
	{Name: "DnsLookup", Text: "dns lookup: {0}"},
	{Name: "DnsEmpty", Text: "dns response had no valid IP addresses"},
}

// errorMatchers are ErrorKinds' texts as anchored patterns, the most
// literal text first so that "{0}" alone (Generic) comes last.
var errorMatchers = func() []struct {
	kind *ErrorKind
	re   *regexp.Regexp
	lit  int
} {
	var out []struct {
		kind *ErrorKind
		re   *regexp.Regexp
		lit  int
	}
	for i := range ErrorKinds {
		k := &ErrorKinds[i]
		if k.Name == "Anyhow" {
			continue // prints as Generic does
		}
		var b strings.Builder
		b.WriteString(`(?s)^`)
		rest := k.Text
		lit := 0
		for rest != "" {
			open := strings.Index(rest, "{")
			if open < 0 {
				b.WriteString(regexp.QuoteMeta(rest))
				lit += len(rest)
				break
			}
			b.WriteString(regexp.QuoteMeta(rest[:open]))
			lit += open
			end := strings.Index(rest[open:], "}")
			b.WriteString(`(.*)`)
			rest = rest[open+end+1:]
		}
		b.WriteString(`$`)
		out = append(out, struct {
			kind *ErrorKind
			re   *regexp.Regexp
			lit  int
		}{k, regexp.MustCompile(b.String()), lit})
	}
	// Longest literal text first: "connection failed to drain within the
	// timeout" before "connection failed: {0}".
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].lit > out[j-1].lit; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}()

// ClassifiedError is an error text read as ztunnel's Error: its variant,
// the variants it wraps (outermost first), and the innermost value.
type ClassifiedError struct {
	Kind string // the innermost variant that is not a wrapper
	// Chain is every variant, outermost first ("SendError", "Io").
	Chain []string
	// Detail is the innermost value ({0}), e.g. "deadline has elapsed".
	Detail string
}

// ClassifyError reads an error text as ztunnel's Error. Text of no known
// shape is Generic, which prints its value alone.
func ClassifyError(text string) ClassifiedError {
	var c ClassifiedError
	for depth := 0; depth < 8; depth++ {
		kind, value := matchError(text)
		c.Chain = append(c.Chain, kind.Name)
		c.Kind, c.Detail = kind.Name, value
		if !kind.Wraps || value == "" {
			return c
		}
		text = value
	}
	return c
}

func matchError(text string) (*ErrorKind, string) {
	for _, m := range errorMatchers {
		if m.kind.Name == "Generic" {
			continue
		}
		if sub := m.re.FindStringSubmatch(text); sub != nil {
			v := ""
			if len(sub) > 1 {
				v = sub[1]
			}
			return m.kind, v
		}
	}
	for i := range ErrorKinds {
		if ErrorKinds[i].Name == "Generic" {
			return &ErrorKinds[i], text
		}
	}
	panic("ztunnel: Generic is not in ErrorKinds")
}
