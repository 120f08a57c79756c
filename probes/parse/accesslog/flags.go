package accesslog

import "strings"

// Flag is one of Envoy's response flags (%RESPONSE_FLAGS%): the short name
// access logs print by default, the long name %RESPONSE_FLAGS_LONG% prints,
// and the field of envoy.data.accesslog.v3.ResponseFlags that gRPC access
// logs (and their JSON renderings) set instead.
type Flag struct {
	Short string // "UH"
	Long  string // "NoHealthyUpstream"
	// Field is the ResponseFlags field ("no_healthy_upstream"); empty for
	// the flags that message has no field for.
	Field string
	// Meaning is Envoy's own description (access_log/usage.rst).
	Meaning string
}

// Flags is the closed set of response flags: every flag Envoy can log
// (source/common/stream_info/utility.h ALL_RESPONSE_STRINGS_FLAGS, and
// docs/root/configuration/observability/access_log/usage.rst, which adds DR
// and UDO of newer releases), in Envoy's order. The vocabulary
// (probes/vocabulary) must give each a meaning on every hop.
var Flags = []Flag{
	{"LH", "FailedLocalHealthCheck", "failed_local_healthcheck", "Local service failed health check request in addition to 503 response code."},
	{"UH", "NoHealthyUpstream", "no_healthy_upstream", "No healthy upstream hosts in upstream cluster in addition to 503 response code."},
	{"UT", "UpstreamRequestTimeout", "upstream_request_timeout", "Upstream request timeout in addition to 504 response code."},
	{"LR", "LocalReset", "local_reset", "Connection local reset in addition to 503 response code."},
	{"UR", "UpstreamRemoteReset", "upstream_remote_reset", "Upstream remote reset in addition to 503 response code."},
	{"UF", "UpstreamConnectionFailure", "upstream_connection_failure", "Upstream connection failure in addition to 503 response code."},
	{"UC", "UpstreamConnectionTermination", "upstream_connection_termination", "Upstream connection termination in addition to 503 response code."},
	{"UO", "UpstreamOverflow", "upstream_overflow", "Upstream overflow (circuit breaking) in addition to 503 response code."},
	{"NR", "NoRouteFound", "no_route_found", "No route configured for a given request in addition to 404 response code, or no matching filter chain for a downstream connection."},
	{"DI", "DelayInjected", "delay_injected", "The request processing was delayed for a period specified via fault injection."},
	{"FI", "FaultInjected", "fault_injected", "The request was aborted with a response code specified via fault injection."},
	{"RL", "RateLimited", "rate_limited", "The request was rate-limited locally by the HTTP rate limit filter in addition to 429 response code."},
	{"UAEX", "UnauthorizedExternalService", "unauthorized_details", "The request was denied by the external authorization service."},
	{"RLSE", "RateLimitServiceError", "rate_limit_service_error", "The request was rejected because there was an error in rate limit service."},
	{"DC", "DownstreamConnectionTermination", "downstream_connection_termination", "Downstream connection termination."},
	{"URX", "UpstreamRetryLimitExceeded", "upstream_retry_limit_exceeded", "The request was rejected because the upstream retry limit (HTTP) or maximum connect attempts (TCP) was reached."},
	{"SI", "StreamIdleTimeout", "stream_idle_timeout", "Stream idle timeout in addition to 408 or 504 response code."},
	{"IH", "InvalidEnvoyRequestHeaders", "invalid_envoy_request_headers", "The request was rejected because it set an invalid value for a strictly-checked header in addition to 400 response code."},
	{"DPE", "DownstreamProtocolError", "downstream_protocol_error", "The downstream request had an HTTP protocol error."},
	{"UMSDR", "UpstreamMaxStreamDurationReached", "upstream_max_stream_duration_reached", "The upstream request reached max stream duration."},
	{"RFCF", "ResponseFromCacheFilter", "response_from_cache_filter", "The response was served from an Envoy cache filter."},
	{"NFCF", "NoFilterConfigFound", "no_filter_config_found", "The request is terminated because filter configuration was not received within the permitted warming deadline."},
	{"DT", "DurationTimeout", "duration_timeout", "When a request or connection exceeded max_connection_duration or max_downstream_connection_duration."},
	{"UPE", "UpstreamProtocolError", "upstream_protocol_error", "The upstream response had an HTTP protocol error."},
	{"NC", "NoClusterFound", "no_cluster_found", "Upstream cluster not found."},
	{"OM", "OverloadManagerTerminated", "overload_manager", "Overload Manager terminated the request."},
	{"DF", "DnsResolutionFailed", "dns_resolution_failure", "The request was terminated due to DNS resolution failure."},
	{"DO", "DropOverload", "", "The request was terminated in addition to 503 response code due to drop_overloads."},
	{"DR", "DownstreamRemoteReset", "downstream_remote_reset", "The response details are http2.remote_reset or http2.remote_refuse."},
	{"UDO", "UnconditionalDropOverload", "", "The request was terminated in addition to 503 response code due to drop_overloads set to 100%."},
}

// flagNames maps every spelling of a flag (short, long, field) to it.
var flagNames = func() map[string]*Flag {
	m := map[string]*Flag{}
	for i := range Flags {
		f := &Flags[i]
		m[f.Short] = f
		m[f.Long] = f
		if f.Field != "" {
			m[f.Field] = f
		}
	}
	return m
}()

// LookupFlag finds a flag by any of its names.
func LookupFlag(name string) (Flag, bool) {
	f, ok := flagNames[name]
	if !ok {
		return Flag{}, false
	}
	return *f, true
}

// normalizeFlags rewrites a %RESPONSE_FLAGS% value to short names: long
// names (%RESPONSE_FLAGS_LONG%) and ResponseFlags fields become the short
// ones, spaces around commas go, "-" is none. A name Envoy does not know (a
// custom flag) is kept as written. The common case, short names already,
// returns flags itself.
func normalizeFlags(flags string) string {
	if flags == "" || flags == "-" {
		return ""
	}
	if shortOnly(flags) {
		return flags
	}
	var b strings.Builder
	for _, part := range strings.Split(flags, ",") {
		part = strings.TrimSpace(part)
		if part == "" || part == "-" {
			continue
		}
		if f, ok := flagNames[part]; ok {
			part = f.Short
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(part)
	}
	return b.String()
}

// shortOnly: upper-case letters and commas, every name a short flag name.
func shortOnly(s string) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != ',' {
			if c := s[i]; c < 'A' || c > 'Z' {
				return false
			}
			continue
		}
		if f, ok := flagNames[s[start:i]]; !ok || f.Short != s[start:i] {
			return false
		}
		start = i + 1
	}
	return true
}
