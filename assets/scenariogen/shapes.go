package main

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// Shapes pick output formats other than the ones the first scenarios were
// written in (Istio's default TEXT access log, cluster stats without
// alt_stat_name), so that the demo and the lab exercise what newer and
// older proxies print. The zero value changes nothing.
type Shapes struct {
	// AltStatNames is Istio 1.23+: every cluster istiod sends carries
	// alt_stat_name, its name and ";". /stats then prints
	// cluster.NAME;.STAT, the access log's upstream_cluster is NAME;,
	// /clusters' observability_name and config_dump's alt_stat_name too.
	AltStatNames bool
	// AccessLog is the access-log format the mesh config asks for.
	AccessLog AccessLogFormat
}

// AccessLogFormat is how a scenario's sidecars write their access log.
type AccessLogFormat int

const (
	// AccessLogText is Istio's default TEXT format (1.9 and later).
	AccessLogText AccessLogFormat = iota
	// AccessLogJSON is meshConfig accessLogEncoding: JSON: Istio's default
	// JSON format with typed values (numbers, null), keys sorted.
	AccessLogJSON
	// AccessLogIstio10 is meshConfig accessLogFormat set to Istio 1.0's
	// format, which some meshes kept for their log pipelines: Envoy's
	// default format plus cluster and addresses, without
	// response_code_details, the transport failure reason, SNI or route.
	AccessLogIstio10
)

// istio10Format is Istio 1.0's access-log format string.
const istio10Format = `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS% ` +
	`%BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" ` +
	`"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%" %UPSTREAM_CLUSTER% %UPSTREAM_LOCAL_ADDRESS% ` +
	`%DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS%`

// meshConfig is the mesh config lines the access-log format needs.
func (f AccessLogFormat) meshConfig() string {
	switch f {
	case AccessLogJSON:
		return "accessLogEncoding: JSON\n"
	case AccessLogIstio10:
		return "accessLogFormat: |\n  " + istio10Format + "\n"
	}
	return ""
}

// accessLine renders e as the scenario's sidecars log it.
func (s *Shop) accessLine(e AccessEntry) string {
	if s.shapes.AltStatNames && e.Cluster != "" && e.Cluster != "-" {
		e.Cluster += ";"
	}
	switch s.shapes.AccessLog {
	case AccessLogJSON:
		return e.JSON()
	case AccessLogIstio10:
		return e.Istio10Line()
	}
	return e.Line()
}

// fields are the entry's values as Envoy computes them for either format;
// "" is unset ("-" in TEXT, null in JSON).
func (e AccessEntry) fields() (request [3]string, upstreamTime, userAgent, requestID, authority string) {
	upstreamTime = e.UpstreamTime
	flags := firstNonEmpty(e.Flags, "-")
	if upstreamTime == "" {
		if (e.Code == 0 || e.Code == 503 || e.Code == 502) && flags != "-" {
			upstreamTime = "-"
		} else {
			upstreamTime = strconv.Itoa(max(e.DurationMs-1, 1))
		}
	}
	requestID = e.RequestID
	if requestID == "" {
		requestID = stableUID("rid", accessLogTime(e.Start), e.Path, e.UpstreamHost, e.DownstreamRemote)
	}
	request = [3]string{e.Method, e.Path, firstNonEmpty(e.Protocol, "HTTP/1.1")}
	userAgent, authority = firstNonEmpty(e.UserAgent, "Go-http-client/1.1"), e.Authority
	if e.Method == "-" {
		request, userAgent, requestID, authority = [3]string{"-", "-", "-"}, "-", "-", "-"
	}
	return request, upstreamTime, userAgent, requestID, authority
}

// Istio10Line renders the entry in Istio 1.0's format (istio10Format).
func (e AccessEntry) Istio10Line() string {
	dash := func(s string) string { return firstNonEmpty(s, "-") }
	quote := func(s string) string { return `"` + s + `"` }
	request, upstreamTime, userAgent, requestID, authority := e.fields()
	return strings.Join([]string{
		"[" + accessLogTime(e.Start) + "]", quote(strings.Join(request[:], " ")), strconv.Itoa(e.Code), dash(e.Flags),
		strconv.Itoa(e.RxBytes), strconv.Itoa(e.TxBytes), strconv.Itoa(e.DurationMs), upstreamTime,
		quote(dash(e.ForwardedFor)), quote(userAgent), quote(requestID), quote(authority), quote(dash(e.UpstreamHost)),
		dash(e.Cluster), dash(e.UpstreamLocal), e.DownstreamLocal, e.DownstreamRemote,
	}, " ")
}

// JSON renders the entry in Istio's default JSON access-log format as
// Envoy writes it: typed values (numbers, null for unset), keys sorted.
func (e AccessEntry) JSON() string {
	request, upstreamTime, userAgent, requestID, authority := e.fields()
	str := func(s string) any {
		if s == "" || s == "-" {
			return nil
		}
		return s
	}
	m := map[string]any{
		"start_time": accessLogTime(e.Start), "route_name": str(firstNonEmpty(e.Route, "default")),
		"method": str(request[0]), "path": str(request[1]), "protocol": str(request[2]),
		"response_code": e.Code, "response_flags": firstNonEmpty(e.Flags, "-"), "response_code_details": str(e.Details),
		"connection_termination_details": str(e.Termination), "upstream_transport_failure_reason": str(e.TransportFailure),
		"bytes_received": e.RxBytes, "bytes_sent": e.TxBytes, "duration": e.DurationMs, "upstream_service_time": str(upstreamTime),
		"x_forwarded_for": str(e.ForwardedFor), "user_agent": str(userAgent), "request_id": str(requestID), "authority": str(authority),
		"upstream_host": str(e.UpstreamHost), "upstream_cluster": str(e.Cluster), "upstream_local_address": str(e.UpstreamLocal),
		"downstream_local_address": str(e.DownstreamLocal), "downstream_remote_address": str(e.DownstreamRemote),
		"requested_server_name": str(e.SNI),
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(m[k])
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.String()
}
