package accesslog

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// jsonEntry holds the keys of Istio's JSON access-log format (meshConfig
// accessLogEncoding: JSON). Envoy writes typed values (response_code is a
// number, unset values are null), but custom formats often quote numbers, so
// every field accepts either.
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
	// Envoy may print a number as 2.0 in JSON.
	if x, err := strconv.ParseFloat(f.v, 64); err == nil && x >= 0 {
		return int64(x)
	}
	return 0
}

// parseJSON decodes one JSON line. A JSON line without response_code is
// Envoy's or pilot-agent's own JSON log output, not an access-log entry.
func parseJSON(line string) (Entry, bool) {
	var j jsonEntry
	if err := json.Unmarshal([]byte(line), &j); err != nil || !j.ResponseCode.present {
		return Entry{}, false
	}
	if j.ResponseCode.v != "" {
		if _, ok := atoi(j.ResponseCode.v); !ok {
			return Entry{}, false
		}
	}
	e := Entry{
		JSON:                         true,
		StartTime:                    j.StartTime.v,
		Method:                       j.Method.v,
		Path:                         j.Path.v,
		Protocol:                     j.Protocol.v,
		ResponseCode:                 int(j.ResponseCode.int()),
		Flags:                        j.ResponseFlags.v,
		ResponseCodeDetails:          j.ResponseCodeDetails.v,
		ConnectionTerminationDetails: j.ConnectionTerminationDetails.v,
		UpstreamTransportFailure:     j.UpstreamTransportFailureReason.v,
		BytesReceived:                j.BytesReceived.int(),
		BytesSent:                    j.BytesSent.int(),
		DurationMs:                   j.Duration.int(),
		UpstreamServiceTime:          j.UpstreamServiceTime.v,
		ForwardedFor:                 j.ForwardedFor.v,
		UserAgent:                    j.UserAgent.v,
		RequestID:                    j.RequestID.v,
		Authority:                    j.Authority.v,
		UpstreamHost:                 j.UpstreamHost.v,
		UpstreamCluster:              j.UpstreamCluster.v,
		UpstreamLocalAddress:         j.UpstreamLocalAddress.v,
		DownstreamLocalAddress:       j.DownstreamLocalAddress.v,
		DownstreamRemoteAddress:      j.DownstreamRemoteAddress.v,
		RequestedServerName:          j.RequestedServerName.v,
		RouteName:                    j.RouteName.v,
	}
	e.TCP = e.Method == "" && e.Protocol == "" && e.ResponseCode == 0
	return e, true
}
