package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Envoy admin output of a sidecar, in the shapes Envoy prints.
// /clusters?format=json and /config_dump are proto3 JSON with proto field
// names (snake_case) in field-number order, pretty-printed with a
// one-space indent; /stats is "name: value" lines sorted by name with
// histograms last; /listeners?format=json lists listener_statuses.

// envoyUnlimited is the circuit-breaker threshold Envoy reports when
// istiod sets none.
const envoyUnlimited = 4294967295

// Host is one upstream host of a cluster, with its /clusters counters.
type Host struct {
	IP   string
	Port int
	// Node is the worker the host runs on ("" for hosts outside the
	// cluster): it sets the locality.
	Node string
	// Pipe is a Unix socket path instead of IP:Port.
	Pipe string
	// EDSHealth is what istiod said; "" means HEALTHY.
	EDSHealth string
	// Ejected is set when outlier detection ejected the host.
	Ejected                                    bool
	CxTotal, CxConnectFail, RqSuccess, RqError int
	RqTimeout, CxActive, RqActive              int
}

func (h *Host) edsHealth() string { return firstNonEmpty(h.EDSHealth, "HEALTHY") }

func (h *Host) status() Object {
	counter := func(name string, v int) Object {
		if v != 0 {
			return Object{{"value", strconv.Itoa(v)}, {"name", name}}
		}
		return Object{{"name", name}}
	}
	gauge := func(name string, v int) Object {
		if v != 0 {
			return Object{{"type", "GAUGE"}, {"value", strconv.Itoa(v)}, {"name", name}}
		}
		return Object{{"type", "GAUGE"}, {"name", name}}
	}
	health := Object{}
	if h.Ejected {
		health.Set("failed_outlier_check", true)
	}
	health.Set("eds_health_status", h.edsHealth())
	address := Object{{"socket_address", Object{{"address", h.IP}, {"port_value", h.Port}}}}
	if h.Pipe != "" {
		address = Object{{"pipe", Object{{"path", h.Pipe}}}}
	}
	locality := Object{}
	if h.Node != "" {
		locality = Object{{"region", region}, {"zone", nodeOf(h.Node).zone}}
	}
	return Object{
		{"address", address},
		{"stats", []Object{
			counter("cx_connect_fail", h.CxConnectFail),
			counter("cx_total", h.CxTotal),
			counter("rq_error", h.RqError),
			counter("rq_success", h.RqSuccess),
			counter("rq_timeout", h.RqTimeout),
			counter("rq_total", h.RqSuccess+h.RqError),
			gauge("cx_active", h.CxActive),
			gauge("rq_active", h.RqActive),
		}},
		{"health_status", health},
		{"weight", 1},
		{"locality", locality},
	}
}

// ClusterKind is how a cluster came to be.
type ClusterKind string

const (
	// EDSCluster is a service cluster istiod sends endpoints for.
	EDSCluster ClusterKind = "EDS"
	// StaticCluster has fixed hosts (BlackHoleCluster: none).
	StaticCluster ClusterKind = "STATIC"
	// OriginalDstCluster forwards to the original destination.
	OriginalDstCluster ClusterKind = "ORIGINAL_DST"
	// BootstrapCluster is in Envoy's bootstrap (agent, sds-grpc, ...).
	BootstrapCluster ClusterKind = "STATIC_BOOT"
	// BootstrapDNSCluster is a DNS-resolved cluster outside istiod's
	// config dump (a ServiceEntry host).
	BootstrapDNSCluster ClusterKind = "STRICT_DNS_BOOT"
)

// UpstreamTLS is what the cluster's transport socket does.
type UpstreamTLS string

const (
	// AutoMTLS is transport_socket_matches on tlsMode=istio.
	AutoMTLS UpstreamTLS = "auto"
	// IstioMutual is an explicit ISTIO_MUTUAL from a DestinationRule.
	IstioMutual UpstreamTLS = "istio"
	// SimpleTLS is a DestinationRule's tls mode SIMPLE.
	SimpleTLS UpstreamTLS = "simple"
	// Plaintext is no transport socket.
	Plaintext UpstreamTLS = "none"
)

// OutlierDetection is a DestinationRule's outlierDetection as Envoy holds it.
type OutlierDetection struct {
	Consecutive5xx int
	// ConsecutiveGatewayErrors is consecutiveGatewayErrors: Envoy's
	// consecutive_gateway_failure, enforced at 100%.
	ConsecutiveGatewayErrors   int
	Interval, BaseEjectionTime string
	MaxEjectionPercent         int
}

// Thresholds are a cluster's default-priority circuit breakers; zero
// fields are Envoy's unlimited default.
type Thresholds struct {
	MaxConnections, MaxPendingRequests, MaxRequests, MaxRetries int
}

func (t Thresholds) orUnlimited(v int) int {
	if v == 0 {
		return envoyUnlimited
	}
	return v
}

// Cluster is one Envoy cluster: what /clusters shows (hosts, thresholds),
// what /stats counts, and what /config_dump holds (the xDS config istiod
// sent).
type Cluster struct {
	Name  string
	Hosts []*Host
	Kind  ClusterKind
	TLS   UpstreamTLS
	// ServiceAccount is the SAN expected of the upstream; defaults to the
	// service's name.
	ServiceAccount string
	Outlier        *OutlierDetection
	Thresholds     Thresholds
	// IdleTimeout and MaxRequestsPerConnection are a DestinationRule's
	// connectionPool.http settings ("" / 0: unset).
	IdleTimeout              string
	MaxRequestsPerConnection int
	// Stats override the counters /stats would derive from the hosts;
	// see clusterStatNames for the keys.
	Stats map[string]int
	// OutlierStats are outlier_detection.* counters.
	OutlierStats map[string]int
	// ServiceNamespace and ServiceName are the Kubernetes service behind
	// an outbound cluster; Port its service port.
	ServiceNamespace, ServiceName string
	Port                          int
	// NotInConfigDump leaves the cluster out of /config_dump and /stats
	// (they are not what triage reads).
	NotInConfigDump bool
}

// clusterStatNames are the keys Cluster.Stats may set.
var clusterStatNames = map[string]bool{
	"cb_cx_open": true, "cb_rq_pending_open": true, "matches": true, "lb_healthy_panic": true, "membership_change": true,
	"update_attempt": true, "update_empty": true, "update_no_rebuild": true, "update_success": true,
	"cx_connect_fail": true, "cx_connect_timeout": true, "cx_destroy": true, "cx_destroy_local": true,
	"cx_destroy_local_with_active_rq": true, "cx_destroy_remote": true, "cx_destroy_remote_with_active_rq": true,
	"cx_idle_timeout": true, "cx_max_requests": true, "cx_none_healthy": true, "cx_overflow": true, "cx_total": true,
	"rx_bytes": true, "tx_bytes": true, "rq_cancelled": true, "rq_pending_failure_eject": true, "rq_pending_overflow": true,
	"rq_pending_total": true, "rq_retry": true, "rq_retry_limit_exceeded": true, "rq_retry_success": true,
	"rq_rx_reset": true, "rq_timeout": true, "rq_2xx": true, "rq_500": true, "rq_502": true, "rq_503": true,
	"retry_503": true, "ssl_connection_error": true, "ssl_handshake": true,
}

// stat is Stats[key], or fallback when the scenario did not set it.
func (c *Cluster) stat(key string, fallback int) int {
	if !clusterStatNames[key] {
		panic("unknown cluster stat " + key)
	}
	if v, ok := c.Stats[key]; ok {
		return v
	}
	return fallback
}

func (c *Cluster) isOutboundEDS() bool {
	return strings.HasPrefix(c.Name, "outbound|") && c.Kind == EDSCluster
}

func (c *Cluster) hostSum(field func(*Host) int) int {
	n := 0
	for _, h := range c.Hosts {
		n += field(h)
	}
	return n
}

func (c *Cluster) status(altStatNames bool) Object {
	limits := Object{
		{"max_connections", c.Thresholds.orUnlimited(c.Thresholds.MaxConnections)},
		{"max_pending_requests", c.Thresholds.orUnlimited(c.Thresholds.MaxPendingRequests)},
		{"max_requests", c.Thresholds.orUnlimited(c.Thresholds.MaxRequests)},
		{"max_retries", c.Thresholds.orUnlimited(c.Thresholds.MaxRetries)},
	}
	switch c.Kind {
	case EDSCluster:
	case BootstrapDNSCluster:
		limits = Object{{"max_connections", envoyUnlimited}, {"max_pending_requests", envoyUnlimited},
			{"max_requests", envoyUnlimited}, {"max_retries", envoyUnlimited}}
	default:
		limits = Object{{"max_connections", 1024}, {"max_pending_requests", 1024}, {"max_requests", 1024}, {"max_retries", 3}}
	}
	out := Object{{"name", c.Name}}
	if c.Kind != BootstrapCluster {
		out.Set("added_via_api", true)
	}
	if len(c.Hosts) > 0 {
		var hosts []Object
		for _, h := range c.Hosts {
			hosts = append(hosts, h.status())
		}
		out.Set("host_statuses", hosts)
	}
	out.Set("circuit_breakers", Object{{"thresholds", []Object{limits,
		{{"priority", "HIGH"}, {"max_connections", 1024}, {"max_pending_requests", 1024}, {"max_requests", 1024}, {"max_retries", 3}}}}})
	out.Set("observability_name", c.statName(altStatNames))
	if c.Kind == EDSCluster {
		out.Set("eds_service_name", c.Name)
	}
	return out
}

var outlierStatNames = []string{
	"ejections_active", "ejections_consecutive_5xx", "ejections_detected_consecutive_5xx", "ejections_detected_consecutive_gateway_failure",
	"ejections_detected_consecutive_local_origin_failure", "ejections_detected_failure_percentage", "ejections_detected_local_origin_failure_percentage",
	"ejections_detected_local_origin_success_rate", "ejections_detected_success_rate", "ejections_enforced_consecutive_5xx",
	"ejections_enforced_consecutive_gateway_failure", "ejections_enforced_consecutive_local_origin_failure", "ejections_enforced_failure_percentage",
	"ejections_enforced_local_origin_failure_percentage", "ejections_enforced_local_origin_success_rate", "ejections_enforced_success_rate",
	"ejections_enforced_total", "ejections_overflow", "ejections_success_rate", "ejections_total",
}

const (
	connectHistogram = "P0(nan,0) P25(nan,0) P50(nan,0) P75(nan,1.0166666666666666) P90(nan,1.0733333333333333) P95(nan,1.1) P99(nan,2.05) P99.5(nan,2.0750000000000002) P99.9(nan,2.095) P100(nan,2.1)"
	requestHistogram = "P0(nan,1.0) P25(nan,2.0500000000000003) P50(nan,3.0333333333333332) P75(nan,4.0625) P90(nan,7.0399999999999991) P95(nan,9.0500000000000007) P99(nan,25.399999999999977) P99.5(nan,44.099999999999909) P99.9(nan,110.27999999999997) P100(nan,140.0)"
)

// statLines adds the counters and gauges of an outbound cluster, as
// Envoy names them, to counters, and its histograms to histograms.
func (c *Cluster) statLines(counters map[string]int, histograms map[string]string, altStatNames bool) {
	hosts := len(c.Hosts)
	healthy := 0
	for _, h := range c.Hosts {
		if h.edsHealth() == "HEALTHY" && !h.Ejected {
			healthy++
		}
	}
	rq2xx := c.stat("rq_2xx", c.hostSum(func(h *Host) int { return h.RqSuccess }))
	rq5xx := c.stat("rq_503", 0) + c.stat("rq_500", 0) + c.stat("rq_502", 0)
	cxTotal := c.stat("cx_total", c.hostSum(func(h *Host) int { return h.CxTotal }))
	cxActive := c.hostSum(func(h *Host) int { return h.CxActive })
	maxHostWeight := 0
	if hosts > 0 {
		maxHostWeight = 1
	}
	prefix := "cluster." + c.statName(altStatNames) + "."
	set := func(name string, v int) { counters[prefix+name] = v }
	for _, s := range []struct {
		name  string
		value int
	}{
		{"assignment_stale", 0}, {"assignment_timeout_received", 0}, {"bind_errors", 0},
		{"circuit_breakers.default.cx_open", c.stat("cb_cx_open", 0)}, {"circuit_breakers.default.cx_pool_open", 0},
		{"circuit_breakers.default.rq_open", 0}, {"circuit_breakers.default.rq_pending_open", c.stat("cb_rq_pending_open", 0)},
		{"circuit_breakers.default.rq_retry_open", 0},
		{"circuit_breakers.high.cx_open", 0}, {"circuit_breakers.high.cx_pool_open", 0}, {"circuit_breakers.high.rq_open", 0},
		{"circuit_breakers.high.rq_pending_open", 0}, {"circuit_breakers.high.rq_retry_open", 0},
		{"default.total_match_count", c.stat("matches", rq2xx+rq5xx+3)},
		{"lb_healthy_panic", c.stat("lb_healthy_panic", 0)}, {"lb_local_cluster_not_ok", 0}, {"lb_recalculate_zone_structures", 0},
		{"lb_subsets_active", 0}, {"lb_subsets_created", 0}, {"lb_subsets_fallback", 0}, {"lb_subsets_removed", 0}, {"lb_subsets_selected", 0},
		{"lb_zone_cluster_too_small", 0}, {"lb_zone_no_capacity_left", 0}, {"lb_zone_number_differs", 0},
		{"lb_zone_routing_all_directly", 0}, {"lb_zone_routing_cross_zone", 0}, {"lb_zone_routing_sampled", 0},
		{"max_host_weight", maxHostWeight},
		{"membership_change", c.stat("membership_change", hosts+1)}, {"membership_degraded", 0}, {"membership_excluded", 0},
		{"membership_healthy", healthy}, {"membership_total", hosts},
		{"original_dst_host_invalid", 0},
		{"retry_or_shadow_abandoned", 0},
		{"update_attempt", c.stat("update_attempt", 41)}, {"update_empty", c.stat("update_empty", 0)}, {"update_failure", 0},
		{"update_no_rebuild", c.stat("update_no_rebuild", 37)}, {"update_success", c.stat("update_success", 41)},
		{"upstream_cx_active", cxActive},
		{"upstream_cx_close_notify", 0}, {"upstream_cx_connect_attempts_exceeded", 0},
		{"upstream_cx_connect_fail", c.stat("cx_connect_fail", c.hostSum(func(h *Host) int { return h.CxConnectFail }))},
		{"upstream_cx_connect_timeout", c.stat("cx_connect_timeout", 0)},
		{"upstream_cx_connect_with_0_rtt", 0},
		{"upstream_cx_destroy", c.stat("cx_destroy", max(cxTotal-cxActive, 0))},
		{"upstream_cx_destroy_local", c.stat("cx_destroy_local", 0)},
		{"upstream_cx_destroy_local_with_active_rq", c.stat("cx_destroy_local_with_active_rq", 0)},
		{"upstream_cx_destroy_remote", c.stat("cx_destroy_remote", max(cxTotal-cxActive, 0))},
		{"upstream_cx_destroy_remote_with_active_rq", c.stat("cx_destroy_remote_with_active_rq", 0)},
		{"upstream_cx_destroy_with_active_rq", c.stat("cx_destroy_local_with_active_rq", 0) + c.stat("cx_destroy_remote_with_active_rq", 0)},
		{"upstream_cx_http1_total", cxTotal}, {"upstream_cx_http2_total", 0}, {"upstream_cx_http3_total", 0},
		{"upstream_cx_idle_timeout", c.stat("cx_idle_timeout", 0)}, {"upstream_cx_max_duration_reached", 0},
		{"upstream_cx_max_requests", c.stat("cx_max_requests", 0)},
		{"upstream_cx_none_healthy", c.stat("cx_none_healthy", 0)},
		{"upstream_cx_overflow", c.stat("cx_overflow", 0)}, {"upstream_cx_pool_overflow", 0}, {"upstream_cx_protocol_error", 0},
		{"upstream_cx_rx_bytes_buffered", 0}, {"upstream_cx_rx_bytes_total", c.stat("rx_bytes", rq2xx*611)},
		{"upstream_cx_total", cxTotal}, {"upstream_cx_tx_bytes_buffered", 0}, {"upstream_cx_tx_bytes_total", c.stat("tx_bytes", rq2xx*893)},
		{"upstream_flow_control_backed_up_total", 0}, {"upstream_flow_control_drained_total", 0},
		{"upstream_flow_control_paused_reading_total", 0}, {"upstream_flow_control_resumed_reading_total", 0},
		{"upstream_internal_redirect_failed_total", 0}, {"upstream_internal_redirect_succeeded_total", 0},
		{"upstream_rq_active", c.hostSum(func(h *Host) int { return h.RqActive })},
		{"upstream_rq_cancelled", c.stat("rq_cancelled", 0)},
		{"upstream_rq_completed", rq2xx + rq5xx},
		{"upstream_rq_maintenance_mode", 0}, {"upstream_rq_max_duration_reached", 0},
		{"upstream_rq_pending_active", 0},
		{"upstream_rq_pending_failure_eject", c.stat("rq_pending_failure_eject", 0)},
		{"upstream_rq_pending_overflow", c.stat("rq_pending_overflow", 0)},
		{"upstream_rq_pending_total", c.stat("rq_pending_total", cxTotal)},
		{"upstream_rq_per_try_idle_timeout", 0}, {"upstream_rq_per_try_timeout", 0},
		{"upstream_rq_retry", c.stat("rq_retry", 0)}, {"upstream_rq_retry_backoff_exponential", c.stat("rq_retry", 0)},
		{"upstream_rq_retry_backoff_ratelimited", 0}, {"upstream_rq_retry_limit_exceeded", c.stat("rq_retry_limit_exceeded", 0)},
		{"upstream_rq_retry_overflow", 0}, {"upstream_rq_retry_success", c.stat("rq_retry_success", 0)},
		{"upstream_rq_rx_reset", c.stat("rq_rx_reset", 0)}, {"upstream_rq_timeout", c.stat("rq_timeout", 0)},
		{"upstream_rq_total", rq2xx + rq5xx}, {"upstream_rq_tx_reset", 0},
		{"version", 0},
	} {
		set(s.name, s.value)
	}
	if c.Outlier != nil {
		for _, name := range outlierStatNames {
			set("outlier_detection."+name, c.OutlierStats[name])
		}
	}
	for _, code := range []string{"200", "500", "502", "503"} {
		n := rq2xx
		if code != "200" {
			n = c.stat("rq_"+code, 0)
		}
		if n != 0 {
			set("upstream_rq_"+code, n)
			set("external.upstream_rq_"+code, n)
		}
	}
	if rq2xx != 0 {
		set("upstream_rq_2xx", rq2xx)
		set("external.upstream_rq_2xx", rq2xx)
	}
	if rq5xx != 0 {
		set("upstream_rq_5xx", rq5xx)
		set("external.upstream_rq_5xx", rq5xx)
	}
	if n := c.stat("retry_503", 0); n != 0 {
		set("retry.upstream_rq_503", n)
		set("retry.upstream_rq_5xx", n)
	}
	if c.TLS == AutoMTLS || c.TLS == IstioMutual {
		handshakes := 0
		if c.TLS == AutoMTLS {
			handshakes = cxTotal
		}
		set("ssl.connection_error", c.stat("ssl_connection_error", 0))
		set("ssl.handshake", c.stat("ssl_handshake", handshakes))
		set("ssl.no_certificate", 0)
		set("ssl.session_reused", 0)
	}
	if rq2xx+rq5xx != 0 {
		histograms[prefix+"upstream_cx_connect_ms"] = connectHistogram
		histograms[prefix+"upstream_rq_time"] = requestHistogram
	}
}

var metadataExchangeFilter = []Object{{{"name", "istio.metadata_exchange"}, {"typed_config", Object{
	{"@type", "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange"},
	{"protocol", "istio-peer-exchange"}, {"enable_discovery", true}}}}}

// configDump is the cluster's entry in ClustersConfigDump.
func (c *Cluster) configDump(version, updated string, altStatNames bool) Object {
	cl := Object{{"@type", "type.googleapis.com/envoy.config.cluster.v3.Cluster"}, {"name", c.Name}}
	switch c.Kind {
	case EDSCluster:
		cl.Set("type", "EDS")
		cl.Set("eds_cluster_config", Object{{"eds_config", Object{{"ads", Object{}}, {"initial_fetch_timeout", "0s"}, {"resource_api_version", "V3"}}},
			{"service_name", c.Name}})
	case StaticCluster, OriginalDstCluster:
		cl.Set("type", string(c.Kind))
	}
	cl.Set("connect_timeout", "10s")
	switch c.Kind {
	case OriginalDstCluster:
		cl.Set("lb_policy", "CLUSTER_PROVIDED")
	case EDSCluster:
		cl.Set("lb_policy", "LEAST_REQUEST")
		t := c.Thresholds
		cl.Set("circuit_breakers", Object{{"thresholds", []Object{{
			{"max_connections", t.orUnlimited(t.MaxConnections)}, {"max_pending_requests", t.orUnlimited(t.MaxPendingRequests)},
			{"max_requests", t.orUnlimited(t.MaxRequests)}, {"max_retries", t.orUnlimited(t.MaxRetries)}, {"track_remaining", true},
		}}}})
	}
	if o := c.Outlier; o != nil {
		enforcing := 0
		if o.Consecutive5xx != 0 {
			enforcing = 100
		}
		od := Object{
			{"consecutive_5xx", o.Consecutive5xx}, {"interval", o.Interval}, {"base_ejection_time", o.BaseEjectionTime},
			{"max_ejection_percent", o.MaxEjectionPercent}, {"enforcing_consecutive_5xx", enforcing}, {"enforcing_success_rate", 0},
		}
		if o.Consecutive5xx == 0 && o.ConsecutiveGatewayErrors != 0 {
			// A DestinationRule with only consecutiveGatewayErrors: Istio
			// leaves consecutive_5xx and its enforcement unset (Envoy's
			// defaults, 5 at 100%, apply).
			od = Object{{"interval", o.Interval}, {"base_ejection_time", o.BaseEjectionTime},
				{"max_ejection_percent", o.MaxEjectionPercent}, {"enforcing_success_rate", 0}}
		}
		if o.ConsecutiveGatewayErrors != 0 {
			od.Set("consecutive_gateway_failure", o.ConsecutiveGatewayErrors)
			od.Set("enforcing_consecutive_gateway_failure", 100)
		}
		cl.Set("outlier_detection", od)
		cl.Set("common_lb_config", Object{{"healthy_panic_threshold", Object{}}, {"locality_weighted_lb_config", Object{}}})
	} else if c.Kind == EDSCluster {
		cl.Set("common_lb_config", Object{})
	}
	if altStatNames && c.Kind != BootstrapCluster {
		cl.Set("alt_stat_name", c.statName(true))
	}
	if c.Kind == EDSCluster && c.ServiceName != "" {
		cl.Set("metadata", Object{{"filter_metadata", Object{{"istio", Object{
			{"services", []Object{{{"host", c.ServiceName + "." + c.ServiceNamespace + ".svc." + meshDomain}, {"name", c.ServiceName}, {"namespace", c.ServiceNamespace}}}},
			{"default_original_port", c.Port},
		}}}}})
	}
	if c.Kind == EDSCluster {
		cl.Set("filters", metadataExchangeFilter)
	}
	switch {
	case c.Kind == EDSCluster && c.TLS == AutoMTLS:
		cl.Set("transport_socket_matches", []Object{
			{{"name", "tlsMode-istio"}, {"match", Object{{"tlsMode", "istio"}}}, {"transport_socket", c.istioTLS()}},
			{{"name", "tlsMode-disabled"}, {"match", Object{}}, {"transport_socket", Object{{"name", "envoy.transport_sockets.raw_buffer"},
				{"typed_config", Object{{"@type", "type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer"}}}}}},
		})
	case c.TLS == IstioMutual:
		cl.Set("transport_socket", c.istioTLS())
	case c.TLS == SimpleTLS:
		cl.Set("transport_socket", Object{{"name", "envoy.transport_sockets.tls"}, {"typed_config", Object{
			{"@type", "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"},
			{"common_tls_context", Object{{"validation_context", Object{{"trusted_ca", Object{{"filename", "/etc/ssl/certs/ca-certificates.crt"}}}}}}},
			{"sni", c.nameParts()[3]},
		}}})
	}
	if c.IdleTimeout != "" || c.MaxRequestsPerConnection != 0 {
		options := Object{}
		if c.IdleTimeout != "" {
			options.Set("idle_timeout", c.IdleTimeout)
		}
		if c.MaxRequestsPerConnection != 0 {
			options.Set("max_requests_per_connection", c.MaxRequestsPerConnection)
		}
		cl.Set("typed_extension_protocol_options", Object{{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions", Object{
			{"@type", "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"},
			{"common_http_protocol_options", options}, {"explicit_http_config", Object{{"http_protocol_options", Object{}}}},
		}}})
	}
	if c.Kind == OriginalDstCluster {
		if strings.Contains(c.Name, "Inbound") {
			cl.Set("upstream_bind_config", Object{{"source_address", Object{{"address", "127.0.0.6"}, {"port_value", 0}}}})
		}
		cl.Set("filters", metadataExchangeFilter)
	}
	return Object{{"version_info", version}, {"cluster", cl}, {"last_updated", updated}}
}

// statName is the name Envoy prints the cluster's stats and access-log
// entries under: its alt_stat_name (NAME;) when istiod sets one.
func (c *Cluster) statName(altStatNames bool) string {
	if altStatNames && c.Kind != BootstrapCluster {
		return c.Name + ";"
	}
	return c.Name
}

// nameParts splits "outbound|PORT|SUBSET|HOST", padded so a name without
// bars still has a host part.
func (c *Cluster) nameParts() []string {
	parts := strings.Split(c.Name, "|")
	for len(parts) < 4 {
		parts = append(parts, parts[len(parts)-1])
	}
	return parts
}

func sdsSecret(name string) Object {
	return Object{{"name", name}, {"sds_config", Object{
		{"api_config_source", Object{{"api_type", "GRPC"}, {"grpc_services", []Object{{{"envoy_grpc", Object{{"cluster_name", "sds-grpc"}}}}}},
			{"set_node_on_first_message_only", true}, {"transport_api_version", "V3"}}},
		{"initial_fetch_timeout", "0s"}, {"resource_api_version", "V3"},
	}}}
}

func (c *Cluster) istioTLS() Object {
	sa := firstNonEmpty(c.ServiceAccount, c.ServiceName)
	parts := c.nameParts()
	return Object{{"name", "envoy.transport_sockets.tls"}, {"typed_config", Object{
		{"@type", "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"},
		{"common_tls_context", Object{
			{"tls_params", Object{{"tls_minimum_protocol_version", "TLSv1_2"}, {"tls_maximum_protocol_version", "TLSv1_3"}}},
			{"alpn_protocols", []string{"istio-peer-exchange", "istio"}},
			{"tls_certificate_sds_secret_configs", []Object{sdsSecret("default")}},
			{"combined_validation_context", Object{
				{"default_validation_context", Object{{"match_typed_subject_alt_names", []Object{{{"san_type", "URI"}, {"matcher", Object{
					{"exact", fmt.Sprintf("spiffe://%s/ns/%s/sa/%s", meshDomain, c.ServiceNamespace, sa)}}}}}}}},
				{"validation_context_sds_secret_config", sdsSecret("ROOTCA")},
			}},
		}},
		{"sni", fmt.Sprintf("outbound_.%d_.%s_.%s", c.Port, parts[2], parts[3])},
	}}}
}

// Listener is one entry of /listeners.
type Listener struct {
	Name, Address string
	Port          int
}

func (l Listener) status() Object {
	return Object{{"name", l.Name}, {"local_address", Object{{"socket_address", Object{{"address", l.Address}, {"port_value", l.Port}}}}}}
}

// Sidecar is the Envoy admin view of one pod's sidecar.
type Sidecar struct {
	Pod       *Pod
	Now       time.Time
	Version   string
	Clusters  []*Cluster
	Listeners []Listener
	// Routes are RouteConfigurations for /config_dump.
	Routes []Object
	// AltStatNames: the clusters carry Istio 1.23's alt_stat_name.
	AltStatNames bool
	// NodeType is pilot-agent's proxy type in the node id: "" for a
	// sidecar, "router" for a gateway.
	NodeType string
	// CDSRejected counts the CDS updates it rejected.
	CDSRejected int
	// WarmingSecrets are SDS secrets it asked for and was never sent.
	WarmingSecrets []string
}

// files are the admin endpoints' outputs by file name.
func (s *Sidecar) files() map[string]string {
	var clusters, listeners []Object
	for _, c := range s.Clusters {
		clusters = append(clusters, c.status(s.AltStatNames))
	}
	for _, l := range s.Listeners {
		listeners = append(listeners, l.status())
	}
	return map[string]string{
		"clusters.json":    indentedJSON(Object{{"cluster_statuses", clusters}}, 1),
		"listeners.json":   indentedJSON(Object{{"listener_statuses", listeners}}, 1),
		"stats.txt":        s.stats(),
		"config_dump.json": indentedJSON(s.configDump(), 1),
	}
}

func (s *Sidecar) stats() string {
	nClusters, nListeners := len(s.Clusters), len(s.Listeners)
	counters := map[string]int{
		"cluster.xds-grpc.upstream_cx_active": 1, "cluster.xds-grpc.upstream_cx_connect_fail": 0, "cluster.xds-grpc.upstream_cx_total": 1,
		"cluster.xds-grpc.upstream_rq_active": 1, "cluster.xds-grpc.upstream_rq_total": 1,
		"cluster_manager.active_clusters": nClusters, "cluster_manager.cds.update_attempt": 44 + s.CDSRejected, "cluster_manager.cds.update_rejected": s.CDSRejected,
		"cluster_manager.cds.update_success": 42, "cluster_manager.cds.version": 4735628893014573000 + nClusters,
		"cluster_manager.cluster_added": nClusters, "cluster_manager.cluster_modified": 3, "cluster_manager.cluster_removed": 0,
		"cluster_manager.cluster_updated": 18, "cluster_manager.update_out_of_merge_window": 0, "cluster_manager.warming_clusters": 0,
		"listener_manager.lds.update_attempt": 29, "listener_manager.lds.update_rejected": 0, "listener_manager.lds.update_success": 28,
		"listener_manager.listener_added": nListeners, "listener_manager.listener_create_success": nListeners * 2,
		"listener_manager.total_listeners_active": nListeners, "listener_manager.total_listeners_draining": 0, "listener_manager.total_listeners_warming": 0,
		"server.concurrency": 2, "server.days_until_first_cert_expiring": 0, "server.dynamic_unknown_fields": 0, "server.hot_restart_epoch": 0,
		"server.live": 1, "server.memory_allocated": 9843216, "server.memory_heap_size": 16777216, "server.memory_physical_size": 18874368,
		"server.parent_connections": 0, "server.seconds_until_first_ocsp_response_expiring": 0, "server.state": 0, "server.static_unknown_fields": 0,
		"server.total_connections": 4, "server.uptime": int(s.Now.Sub(s.Pod.ProxyStarted).Seconds()), "server.version": 16777215,
		"server.worker_0.watchdog_mega_miss": 0, "server.worker_0.watchdog_miss": 0, "server.worker_1.watchdog_mega_miss": 0, "server.worker_1.watchdog_miss": 0,
	}
	histograms := map[string]string{}
	for _, c := range s.Clusters {
		if c.isOutboundEDS() && !c.NotInConfigDump {
			c.statLines(counters, histograms, s.AltStatNames)
		}
	}
	histograms["cluster_manager.cds.update_duration"] = "P0(nan,1.0) P25(nan,1.03) P50(nan,1.06) P75(nan,2.05) P90(nan,3.06) P95(nan,3.08) P99(nan,5.0) P99.5(nan,5.0) P99.9(nan,5.0) P100(nan,5.0)"
	histograms["server.initialization_time_ms"] = "P0(nan,570.0) P25(nan,572.5) P50(nan,575.0) P75(nan,577.5) P90(nan,579.0) P95(nan,579.5) P99(nan,579.9) P99.5(nan,579.95) P99.9(nan,579.99) P100(nan,580.0)"
	var out []string
	for _, name := range sortedKeys(counters) {
		out = append(out, fmt.Sprintf("%s: %d", name, counters[name]))
	}
	for _, name := range sortedKeys(histograms) {
		out = append(out, name+": "+histograms[name])
	}
	return strings.Join(out, "\n") + "\n"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Envoy prints secrets with the private key redacted; the chains are
// base64 PEM. These are short stand-ins of that shape, not real keys.
const (
	certChain = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURFakNDQWZxZ0F3SUJBZ0lRYjNKa1pYSnpMWE5oYm1Sb2IzZz0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
	rootCA    = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM1ekNDQWMrZ0F3SUJBZ0lSQUtYdnJvb3RjYT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
	proxySHA  = "f4ed5a1d8fe1f3f2d1c9d5d8b6c58a1f0cfbf33c"
)

// configLabels are the pod labels istiod copies into the node metadata.
var configLabels = map[string]bool{
	"app": true, "version": true, "security.istio.io/tlsMode": true, "service.istio.io/canonical-name": true, "service.istio.io/canonical-revision": true,
}

func (s *Sidecar) configDump() Object {
	p := s.Pod
	started := accessLogTime(p.ProxyStarted.Add(612 * time.Millisecond))
	var labels Object
	for _, f := range p.Labels {
		if configLabels[f.Key] {
			labels = append(labels, f)
		}
	}
	node := Object{
		{"id", fmt.Sprintf("%s~%s~%s~%s.svc.%s", firstNonEmpty(s.NodeType, "sidecar"), p.IP, p.ProxyID(), p.Namespace, meshDomain)},
		{"cluster", p.App + "." + p.Namespace},
		{"metadata", Object{
			{"ANNOTATIONS", Object{{"istio.io/rev", "default"}, {"kubectl.kubernetes.io/default-container", p.Container},
				{"sidecar.istio.io/status", `{"initContainers":["istio-init"],"containers":["istio-proxy"],"revision":"default"}`}}},
			{"APP_CONTAINERS", p.Container},
			{"CLUSTER_ID", "Kubernetes"},
			{"ENVOY_PROMETHEUS_PORT", 15090},
			{"ENVOY_STATUS_PORT", 15021},
			{"INSTANCE_IPS", p.IP},
			{"INTERCEPTION_MODE", "REDIRECT"},
			{"ISTIO_PROXY_SHA", proxySHA},
			{"ISTIO_VERSION", p.ProxyVersion},
			{"LABELS", labels},
			{"MESH_ID", meshDomain},
			{"NAME", p.Name},
			{"NAMESPACE", p.Namespace},
			{"NODE_NAME", p.Node},
			{"OWNER", fmt.Sprintf("kubernetes://apis/apps/v1/namespaces/%s/deployments/%s", p.Namespace, p.App)},
			{"PILOT_SAN", []string{"istiod.istio-system.svc"}},
			{"POD_PORTS", "[]"},
			{"PROXY_CONFIG", Object{{"binaryPath", "/usr/local/bin/envoy"}, {"configPath", "./etc/istio/proxy"}, {"controlPlaneAuthPolicy", "MUTUAL_TLS"},
				{"discoveryAddress", "istiod.istio-system.svc:15012"}, {"drainDuration", "45s"}, {"proxyAdminPort", 15000},
				{"serviceCluster", "istio-proxy"}, {"statNameLength", 189}, {"statusPort", 15020}, {"terminationDrainDuration", "5s"}}},
			{"SERVICE_ACCOUNT", p.App},
			{"WORKLOAD_NAME", p.App},
		}},
		{"locality", Object{{"region", region}, {"zone", nodeOf(p.Node).zone}}},
		{"user_agent_name", "envoy"},
		{"user_agent_build_version", Object{{"version", Object{{"major_number", 1}, {"minor_number", 32}, {"patch", 3}}},
			{"metadata", Object{{"build.type", "RELEASE"}, {"revision.sha", proxySHA}, {"revision.status", "Clean"}, {"ssl.version", "BoringSSL"}}}}},
	}
	bootstrap := Object{
		{"@type", "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump"},
		{"bootstrap", Object{{"node", node}, {"stats_config", Object{
			{"stats_tags", []Object{{{"tag_name", "cluster_name"}, {"regex", `^cluster\.((.+?(\..+?\.svc\.cluster\.local)?)\.)`}}}},
			{"use_all_default_tags", false}}}}},
		{"last_updated", accessLogTime(p.ProxyStarted.Add(431 * time.Millisecond))},
	}
	statics, dynamics := []Object{}, []Object{}
	for _, c := range s.Clusters {
		if c.NotInConfigDump {
			continue
		}
		d := c.configDump(s.Version, started, s.AltStatNames)
		if c.Kind == BootstrapCluster {
			cl, _ := d.Get("cluster")
			statics = append(statics, Object{{"cluster", cl}, {"last_updated", started}})
		} else {
			dynamics = append(dynamics, d)
		}
	}
	configs := []Object{bootstrap, {
		{"@type", "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"}, {"version_info", s.Version},
		{"static_clusters", statics}, {"dynamic_active_clusters", dynamics},
	}}
	if len(s.Routes) > 0 {
		var routes []Object
		for _, r := range s.Routes {
			routes = append(routes, Object{{"version_info", s.Version}, {"route_config", r}, {"last_updated", started}})
		}
		configs = append(configs, Object{{"@type", "type.googleapis.com/envoy.admin.v3.RoutesConfigDump"}, {"dynamic_route_configs", routes}})
	}
	secret := func(name string, afterMs int, body Field) Object {
		return Object{{"name", name}, {"version_info", "0"}, {"last_updated", accessLogTime(p.ProxyStarted.Add(time.Duration(afterMs) * time.Millisecond))},
			{"secret", Object{{"@type", "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"}, {"name", name}, body}}}
	}
	secrets := Object{{"@type", "type.googleapis.com/envoy.admin.v3.SecretsConfigDump"}, {"dynamic_active_secrets", []Object{
		secret("default", 540, Field{"tls_certificate", Object{{"certificate_chain", Object{{"inline_bytes", certChain}}},
			{"private_key", Object{{"inline_bytes", "W3JlZGFjdGVkXQ=="}}}}}),
		secret("ROOTCA", 541, Field{"validation_context", Object{{"trusted_ca", Object{{"inline_bytes", rootCA}}}}}),
	}}}
	if len(s.WarmingSecrets) > 0 {
		// A secret asked for and never sent: no version, the time of the
		// request, a Secret with its name alone.
		var warming []Object
		for _, name := range s.WarmingSecrets {
			warming = append(warming, Object{{"name", name}, {"version_info", "uninitialized"}, {"last_updated", started},
				{"secret", Object{{"@type", "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"}, {"name", name}}}})
		}
		secrets = append(secrets, Field{"dynamic_warming_secrets", warming})
	}
	configs = append(configs, secrets)
	return Object{{"configs", configs}}
}

// routeConfig is a RouteConfiguration as istiod sends it for an HTTP port.
func routeConfig(name string, virtualHosts []Object) Object {
	return Object{{"@type", "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"}, {"name", name},
		{"virtual_hosts", virtualHosts}, {"validate_clusters", false}, {"max_direct_response_body_size_bytes", 1048576},
		{"ignore_port_in_host_matching", true}}
}

// defaultRetry is istiod's default retry policy on every route.
func defaultRetry() Object {
	return Object{{"retry_on", "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"}, {"num_retries", 2},
		{"retry_host_predicate", []Object{{{"name", "envoy.retry_host_predicates.previous_hosts"},
			{"typed_config", Object{{"@type", "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"}}}}}},
		{"host_selection_retry_max_attempts", "5"}, {"retriable_status_codes", []int{503}}}
}

// virtualHost is the virtual host istiod builds for a Kubernetes service.
func virtualHost(namespace, service, clusterIP string, port int, route Object) Object {
	host := service + "." + namespace + ".svc." + meshDomain
	return Object{{"name", fmt.Sprintf("%s:%d", host, port)},
		{"domains", []string{host, service, service + "." + namespace + ".svc", service + "." + namespace, clusterIP}},
		{"routes", []Object{route}}, {"include_request_attempt_count", true}}
}
