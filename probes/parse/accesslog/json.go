package accesslog

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// jsonEntry holds the keys of Istio's JSON access-log format (meshConfig
// accessLogEncoding: JSON). Envoy writes typed values since Istio 1.9
// (response_code is a number, unset values are null), Istio 1.3 to 1.8 wrote
// every value as a string ("0", "-"), and custom formats quote numbers as
// they like, so every field accepts either. Custom formats also rename keys:
// the camelCase spellings of the same fields, and Envoy Gateway's request
// header names (":authority", "user-agent", ...), are read as well.
type jsonEntry struct {
	StartTime                      flexString `json:"start_time"`
	Method                         flexString `json:"method"`
	Path                           flexString `json:"path"`
	Protocol                       flexString `json:"protocol"`
	ResponseCode                   flexString `json:"response_code"`
	ResponseFlags                  flexString `json:"response_flags"`
	ResponseCodeDetails            flexString `json:"response_code_details"`
	ConnectionTerminationDetails   flexString `json:"connection_termination_details"`
	UpstreamTransportFailureReason flexString `json:"upstream_transport_failure_reason"`
	BytesReceived                  flexString `json:"bytes_received"`
	BytesSent                      flexString `json:"bytes_sent"`
	Duration                       flexString `json:"duration"`
	UpstreamServiceTime            flexString `json:"upstream_service_time"`
	ForwardedFor                   flexString `json:"x_forwarded_for"`
	UserAgent                      flexString `json:"user_agent"`
	RequestID                      flexString `json:"request_id"`
	Authority                      flexString `json:"authority"`
	UpstreamHost                   flexString `json:"upstream_host"`
	UpstreamCluster                flexString `json:"upstream_cluster"`
	UpstreamLocalAddress           flexString `json:"upstream_local_address"`
	DownstreamLocalAddress         flexString `json:"downstream_local_address"`
	DownstreamRemoteAddress        flexString `json:"downstream_remote_address"`
	RequestedServerName            flexString `json:"requested_server_name"`
	RouteName                      flexString `json:"route_name"`

	// Other spellings of the same fields (custom formats, Envoy Gateway).
	StartTimeCamel           flexString `json:"startTime"`
	MethodCamel              flexString `json:"requestMethod"`
	PathCamel                flexString `json:"requestPath"`
	OriginalPath             flexString `json:"x-envoy-origin-path"`
	ResponseCodeCamel        flexString `json:"responseCode"`
	ResponseFlagsCamel       flexString `json:"responseFlags"`
	ResponseCodeDetailsCamel flexString `json:"responseCodeDetails"`
	TransportFailureCamel    flexString `json:"upstreamTransportFailureReason"`
	BytesReceivedCamel       flexString `json:"bytesReceived"`
	BytesSentCamel           flexString `json:"bytesSent"`
	UpstreamServiceTimeCamel flexString `json:"upstreamServiceTime"`
	UpstreamServiceTimeHdr   flexString `json:"x-envoy-upstream-service-time"`
	ForwardedForHdr          flexString `json:"x-forwarded-for"`
	UserAgentHdr             flexString `json:"user-agent"`
	RequestIDHdr             flexString `json:"x-request-id"`
	AuthorityHdr             flexString `json:":authority"`
	UpstreamHostCamel        flexString `json:"upstreamHost"`
	UpstreamClusterCamel     flexString `json:"upstreamCluster"`
}

// flexString is a JSON string, number or null, remembering whether the key
// was present at all.
type flexString struct {
	v       string
	present bool
}

func (f *flexString) UnmarshalJSON(b []byte) error {
	f.present = true
	switch {
	case bytes.Equal(b, []byte("null")):
		f.v = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		f.v = unset(s)
	default:
		f.v = string(b)
	}
	return nil
}

func (f flexString) int() int64 {
	if f.v == "" {
		return 0
	}
	if n, ok := atoi(f.v); ok {
		return n
	}
	// Envoy may print a number as 2.0 in JSON. One beyond int64 (5E32, Inf)
	// is no figure Envoy counts: converting it would wrap negative.
	if x, err := strconv.ParseFloat(f.v, 64); err == nil && x >= 0 && x < math.MaxInt64 {
		return int64(x)
	}
	return 0
}

// or returns the first of fs that was present in the line.
func or(fs ...flexString) flexString {
	for _, f := range fs {
		if f.present {
			return f
		}
	}
	return flexString{}
}

// parseJSON decodes one JSON line. A JSON line without a response code is
// Envoy's or pilot-agent's own JSON log output, not an access-log entry.
func parseJSON(line string) (Entry, bool) {
	var j jsonEntry
	if err := json.Unmarshal([]byte(line), &j); err != nil {
		return Entry{}, false
	}
	code := or(j.ResponseCode, j.ResponseCodeCamel)
	if !code.present {
		return Entry{}, false
	}
	if code.v != "" {
		if _, ok := atoi(code.v); !ok {
			return Entry{}, false
		}
	}
	e := Entry{
		JSON:                         true,
		StartTime:                    or(j.StartTime, j.StartTimeCamel).v,
		Method:                       or(j.Method, j.MethodCamel).v,
		Path:                         or(j.Path, j.PathCamel, j.OriginalPath).v,
		Protocol:                     j.Protocol.v,
		ResponseCode:                 int(code.int()),
		Flags:                        jsonFlags(or(j.ResponseFlags, j.ResponseFlagsCamel).v),
		ResponseCodeDetails:          or(j.ResponseCodeDetails, j.ResponseCodeDetailsCamel).v,
		ConnectionTerminationDetails: j.ConnectionTerminationDetails.v,
		UpstreamTransportFailure:     or(j.UpstreamTransportFailureReason, j.TransportFailureCamel).v,
		BytesReceived:                or(j.BytesReceived, j.BytesReceivedCamel).int(),
		BytesSent:                    or(j.BytesSent, j.BytesSentCamel).int(),
		DurationMs:                   j.Duration.int(),
		UpstreamServiceTime:          or(j.UpstreamServiceTime, j.UpstreamServiceTimeCamel, j.UpstreamServiceTimeHdr).v,
		ForwardedFor:                 or(j.ForwardedFor, j.ForwardedForHdr).v,
		UserAgent:                    or(j.UserAgent, j.UserAgentHdr).v,
		RequestID:                    or(j.RequestID, j.RequestIDHdr).v,
		Authority:                    or(j.Authority, j.AuthorityHdr).v,
		UpstreamHost:                 or(j.UpstreamHost, j.UpstreamHostCamel).v,
		UpstreamCluster:              clustername.Name(or(j.UpstreamCluster, j.UpstreamClusterCamel).v),
		UpstreamLocalAddress:         j.UpstreamLocalAddress.v,
		DownstreamLocalAddress:       j.DownstreamLocalAddress.v,
		DownstreamRemoteAddress:      j.DownstreamRemoteAddress.v,
		RequestedServerName:          j.RequestedServerName.v,
		RouteName:                    j.RouteName.v,
	}
	e.TCP = e.Method == "" && e.Protocol == "" && e.ResponseCode == 0
	return e, true
}

// jsonFlags reads response flags as JSON logs carry them: a string of
// short or long names, or a ResponseFlags object of gRPC access logs
// rendered as JSON ({"no_healthy_upstream": true}).
func jsonFlags(v string) string {
	if len(v) > 0 && v[0] == '{' {
		var m map[string]any
		if json.Unmarshal([]byte(v), &m) != nil {
			return ""
		}
		return flagsObject(m)
	}
	return normalizeFlags(v)
}
