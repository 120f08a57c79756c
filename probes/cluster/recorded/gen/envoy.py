"""Envoy admin output of a sidecar, in the shapes Envoy prints.

/clusters?format=json and /config_dump are proto3 JSON with proto field
names (snake_case) and fields in field-number order, pretty-printed with a
one-space indent; /stats is "name: value" lines sorted by name with
histograms last; /listeners?format=json lists listener_statuses.
"""

import json
from datetime import timedelta

from world import DOMAIN, ISTIO_VERSION, NODES, REGION, ms, uid

MAX = 4294967295


def envoy_json(obj):
    return json.dumps(obj, indent=1) + "\n"


class Host:
    def __init__(self, ip, port=0, node=None, pipe=None, eds="HEALTHY", outlier=False, cx_total=0, cx_connect_fail=0, rq_success=0,
                 rq_error=0, rq_timeout=0, cx_active=0, rq_active=0, tls_istio=True):
        self.ip, self.port, self.node, self.pipe = ip, port, node, pipe
        self.eds, self.outlier = eds, outlier
        self.cx_total, self.cx_connect_fail = cx_total, cx_connect_fail
        self.rq_success, self.rq_error, self.rq_timeout = rq_success, rq_error, rq_timeout
        self.cx_active, self.rq_active = cx_active, rq_active
        self.tls_istio = tls_istio

    def status(self):
        def counter(name, v):
            return {"value": str(v), "name": name} if v else {"name": name}

        def gauge(name, v):
            return {"type": "GAUGE", "value": str(v), "name": name} if v else {"type": "GAUGE", "name": name}

        hs = {}
        if self.outlier:
            hs["failed_outlier_check"] = True
        hs["eds_health_status"] = self.eds
        addr = {"pipe": {"path": self.pipe}} if self.pipe else {"socket_address": {"address": self.ip, "port_value": self.port}}
        out = {
            "address": addr,
            "stats": [
                counter("cx_connect_fail", self.cx_connect_fail),
                counter("cx_total", self.cx_total),
                counter("rq_error", self.rq_error),
                counter("rq_success", self.rq_success),
                counter("rq_timeout", self.rq_timeout),
                counter("rq_total", self.rq_success + self.rq_error),
                gauge("cx_active", self.cx_active),
                gauge("rq_active", self.rq_active),
            ],
            "health_status": hs,
            "weight": 1,
        }
        if self.node:
            out["locality"] = {"region": REGION, "zone": NODES[self.node]["zone"]}
        else:
            out["locality"] = {}
        return out


class Cluster:
    """One Envoy cluster: what /clusters shows (hosts, thresholds), what
    /stats counts, and what /config_dump holds (the xDS config istiod sent).

    tls: "auto" (transport_socket_matches on tlsMode=istio), "istio"
    (explicit ISTIO_MUTUAL), "simple" (DR tls SIMPLE), "none".
    """

    def __init__(self, name, hosts=(), kind="EDS", tls="auto", sa=None, outlier=None, cb=None, idle_timeout=None,
                 max_requests_per_connection=None, stats=None, service=None, port=None, config=True):
        self.name, self.hosts, self.kind, self.tls = name, list(hosts), kind, tls
        self.sa, self.outlier, self.cb = sa, outlier, cb or {}
        self.idle_timeout, self.max_rpc = idle_timeout, max_requests_per_connection
        self.stats = stats or {}
        self.service, self.port = service, port
        self.config = config

    @property
    def eds(self):
        return self.kind == "EDS"

    def status(self):
        d = {"max_connections": self.cb.get("max_connections", MAX), "max_pending_requests": self.cb.get("max_pending_requests", MAX),
             "max_requests": self.cb.get("max_requests", MAX), "max_retries": self.cb.get("max_retries", MAX)}
        if self.kind not in ("EDS", "STRICT_DNS_BOOT"):
            d = {"max_connections": 1024, "max_pending_requests": 1024, "max_requests": 1024, "max_retries": 3}
        out = {"name": self.name, "added_via_api": self.kind != "STATIC_BOOT"}
        if self.kind == "STRICT_DNS_BOOT":
            d = {"max_connections": MAX, "max_pending_requests": MAX, "max_requests": MAX, "max_retries": MAX}
        if self.kind == "STATIC_BOOT":
            del out["added_via_api"]
        out["host_statuses"] = [h.status() for h in self.hosts]
        if not out["host_statuses"]:
            del out["host_statuses"]
        out["circuit_breakers"] = {"thresholds": [d, {"priority": "HIGH", "max_connections": 1024, "max_pending_requests": 1024, "max_requests": 1024, "max_retries": 3}]}
        out["observability_name"] = self.name
        if self.eds:
            out["eds_service_name"] = self.name
        return out

    def stat_lines(self):
        """Counters and gauges of an outbound cluster, as Envoy names them."""
        hosts = len(self.hosts)
        healthy = len([h for h in self.hosts if h.eds == "HEALTHY" and not h.outlier])
        s = self.stats
        rq2 = s.get("rq_2xx", sum(h.rq_success for h in self.hosts))
        rq5 = s.get("rq_503", 0) + s.get("rq_500", 0) + s.get("rq_502", 0)
        cx_total = s.get("cx_total", sum(h.cx_total for h in self.hosts))
        base = {
            "assignment_stale": 0, "assignment_timeout_received": 0, "bind_errors": 0,
            "circuit_breakers.default.cx_open": s.get("cb_cx_open", 0), "circuit_breakers.default.cx_pool_open": 0,
            "circuit_breakers.default.rq_open": 0, "circuit_breakers.default.rq_pending_open": s.get("cb_rq_pending_open", 0),
            "circuit_breakers.default.rq_retry_open": 0,
            "circuit_breakers.high.cx_open": 0, "circuit_breakers.high.cx_pool_open": 0, "circuit_breakers.high.rq_open": 0,
            "circuit_breakers.high.rq_pending_open": 0, "circuit_breakers.high.rq_retry_open": 0,
            "default.total_match_count": s.get("matches", rq2 + rq5 + 3),
            "lb_healthy_panic": s.get("lb_healthy_panic", 0), "lb_local_cluster_not_ok": 0, "lb_recalculate_zone_structures": 0,
            "lb_subsets_active": 0, "lb_subsets_created": 0, "lb_subsets_fallback": 0, "lb_subsets_removed": 0, "lb_subsets_selected": 0,
            "lb_zone_cluster_too_small": 0, "lb_zone_no_capacity_left": 0, "lb_zone_number_differs": 0,
            "lb_zone_routing_all_directly": 0, "lb_zone_routing_cross_zone": 0, "lb_zone_routing_sampled": 0,
            "max_host_weight": 1 if hosts else 0,
            "membership_change": s.get("membership_change", hosts + 1), "membership_degraded": 0, "membership_excluded": 0,
            "membership_healthy": healthy, "membership_total": hosts,
            "original_dst_host_invalid": 0,
            "retry_or_shadow_abandoned": 0,
            "update_attempt": s.get("update_attempt", 41), "update_empty": s.get("update_empty", 0), "update_failure": 0,
            "update_no_rebuild": s.get("update_no_rebuild", 37), "update_success": s.get("update_success", 41),
            "upstream_cx_active": sum(h.cx_active for h in self.hosts),
            "upstream_cx_close_notify": 0, "upstream_cx_connect_attempts_exceeded": 0,
            "upstream_cx_connect_fail": s.get("cx_connect_fail", sum(h.cx_connect_fail for h in self.hosts)),
            "upstream_cx_connect_timeout": s.get("cx_connect_timeout", 0),
            "upstream_cx_connect_with_0_rtt": 0,
            "upstream_cx_destroy": s.get("cx_destroy", max(cx_total - sum(h.cx_active for h in self.hosts), 0)),
            "upstream_cx_destroy_local": s.get("cx_destroy_local", 0),
            "upstream_cx_destroy_local_with_active_rq": s.get("cx_destroy_local_with_active_rq", 0),
            "upstream_cx_destroy_remote": s.get("cx_destroy_remote", max(cx_total - sum(h.cx_active for h in self.hosts), 0)),
            "upstream_cx_destroy_remote_with_active_rq": s.get("cx_destroy_remote_with_active_rq", 0),
            "upstream_cx_destroy_with_active_rq": s.get("cx_destroy_local_with_active_rq", 0) + s.get("cx_destroy_remote_with_active_rq", 0),
            "upstream_cx_http1_total": cx_total, "upstream_cx_http2_total": 0, "upstream_cx_http3_total": 0,
            "upstream_cx_idle_timeout": s.get("cx_idle_timeout", 0), "upstream_cx_max_duration_reached": 0,
            "upstream_cx_max_requests": s.get("cx_max_requests", 0),
            "upstream_cx_none_healthy": s.get("cx_none_healthy", 0),
            "upstream_cx_overflow": s.get("cx_overflow", 0), "upstream_cx_pool_overflow": 0, "upstream_cx_protocol_error": 0,
            "upstream_cx_rx_bytes_buffered": 0, "upstream_cx_rx_bytes_total": s.get("rx_bytes", rq2 * 611),
            "upstream_cx_total": cx_total, "upstream_cx_tx_bytes_buffered": 0, "upstream_cx_tx_bytes_total": s.get("tx_bytes", rq2 * 893),
            "upstream_flow_control_backed_up_total": 0, "upstream_flow_control_drained_total": 0,
            "upstream_flow_control_paused_reading_total": 0, "upstream_flow_control_resumed_reading_total": 0,
            "upstream_internal_redirect_failed_total": 0, "upstream_internal_redirect_succeeded_total": 0,
            "upstream_rq_active": sum(h.rq_active for h in self.hosts),
            "upstream_rq_cancelled": s.get("rq_cancelled", 0),
            "upstream_rq_completed": rq2 + rq5,
            "upstream_rq_maintenance_mode": 0, "upstream_rq_max_duration_reached": 0,
            "upstream_rq_pending_active": 0,
            "upstream_rq_pending_failure_eject": s.get("rq_pending_failure_eject", 0),
            "upstream_rq_pending_overflow": s.get("rq_pending_overflow", 0),
            "upstream_rq_pending_total": s.get("rq_pending_total", cx_total),
            "upstream_rq_per_try_idle_timeout": 0, "upstream_rq_per_try_timeout": 0,
            "upstream_rq_retry": s.get("rq_retry", 0), "upstream_rq_retry_backoff_exponential": s.get("rq_retry", 0),
            "upstream_rq_retry_backoff_ratelimited": 0, "upstream_rq_retry_limit_exceeded": s.get("rq_retry_limit_exceeded", 0),
            "upstream_rq_retry_overflow": 0, "upstream_rq_retry_success": s.get("rq_retry_success", 0),
            "upstream_rq_rx_reset": s.get("rq_rx_reset", 0), "upstream_rq_timeout": s.get("rq_timeout", 0),
            "upstream_rq_total": rq2 + rq5, "upstream_rq_tx_reset": 0,
            "version": 0,
        }
        if self.outlier is not None:
            o = s.get("outlier", {})
            for k in ["ejections_active", "ejections_consecutive_5xx", "ejections_detected_consecutive_5xx", "ejections_detected_consecutive_gateway_failure",
                      "ejections_detected_consecutive_local_origin_failure", "ejections_detected_failure_percentage", "ejections_detected_local_origin_failure_percentage",
                      "ejections_detected_local_origin_success_rate", "ejections_detected_success_rate", "ejections_enforced_consecutive_5xx",
                      "ejections_enforced_consecutive_gateway_failure", "ejections_enforced_consecutive_local_origin_failure", "ejections_enforced_failure_percentage",
                      "ejections_enforced_local_origin_failure_percentage", "ejections_enforced_local_origin_success_rate", "ejections_enforced_success_rate",
                      "ejections_enforced_total", "ejections_overflow", "ejections_success_rate", "ejections_total"]:
                base["outlier_detection." + k] = o.get(k, 0)
        codes = {}
        if rq2:
            codes["200"] = rq2
        for code in ("500", "502", "503"):
            if s.get("rq_" + code):
                codes[code] = s["rq_" + code]
        for code, n in codes.items():
            base["upstream_rq_" + code] = n
            base["external.upstream_rq_" + code] = n
        if rq2:
            base["upstream_rq_2xx"] = rq2
            base["external.upstream_rq_2xx"] = rq2
        if rq5:
            base["upstream_rq_5xx"] = rq5
            base["external.upstream_rq_5xx"] = rq5
        if s.get("retry_503"):
            base["retry.upstream_rq_503"] = s["retry_503"]
            base["retry.upstream_rq_5xx"] = s["retry_503"]
        if self.tls in ("auto", "istio"):
            base["ssl.connection_error"] = s.get("ssl_connection_error", 0)
            base["ssl.handshake"] = s.get("ssl_handshake", cx_total if self.tls == "auto" else 0)
            base["ssl.no_certificate"] = 0
            base["ssl.session_reused"] = 0
        lines = {"cluster.%s.%s" % (self.name, k): v for k, v in base.items()}
        hist = {}
        if rq2 + rq5:
            hist["cluster.%s.upstream_cx_connect_ms" % self.name] = "P0(nan,0) P25(nan,0) P50(nan,0) P75(nan,1.0166666666666666) P90(nan,1.0733333333333333) P95(nan,1.1) P99(nan,2.05) P99.5(nan,2.0750000000000002) P99.9(nan,2.095) P100(nan,2.1)"
            hist["cluster.%s.upstream_rq_time" % self.name] = "P0(nan,1.0) P25(nan,2.0500000000000003) P50(nan,3.0333333333333332) P75(nan,4.0625) P90(nan,7.0399999999999991) P95(nan,9.0500000000000007) P99(nan,25.399999999999977) P99.5(nan,44.099999999999909) P99.9(nan,110.27999999999997) P100(nan,140.0)"
        return lines, hist

    def config_dump(self, version, updated):
        c = {"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": self.name}
        if self.kind == "EDS":
            c["type"] = "EDS"
            c["eds_cluster_config"] = {"eds_config": {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}, "service_name": self.name}
        elif self.kind == "STATIC":
            c["type"] = "STATIC"
        elif self.kind == "ORIGINAL_DST":
            c["type"] = "ORIGINAL_DST"
        c["connect_timeout"] = "10s"
        if self.kind == "ORIGINAL_DST":
            c["lb_policy"] = "CLUSTER_PROVIDED"
        elif self.kind == "EDS":
            c["lb_policy"] = "LEAST_REQUEST"
        if self.kind == "EDS":
            th = {"max_connections": self.cb.get("max_connections", MAX), "max_pending_requests": self.cb.get("max_pending_requests", MAX),
                  "max_requests": self.cb.get("max_requests", MAX), "max_retries": self.cb.get("max_retries", MAX), "track_remaining": True}
            c["circuit_breakers"] = {"thresholds": [th]}
        if self.outlier is not None:
            o = {}
            if "consecutive_5xx" in self.outlier:
                o["consecutive_5xx"] = self.outlier["consecutive_5xx"]
            if "interval" in self.outlier:
                o["interval"] = self.outlier["interval"]
            if "base_ejection_time" in self.outlier:
                o["base_ejection_time"] = self.outlier["base_ejection_time"]
            if "max_ejection_percent" in self.outlier:
                o["max_ejection_percent"] = self.outlier["max_ejection_percent"]
            if "consecutive_5xx" in self.outlier:
                o["enforcing_consecutive_5xx"] = 100 if self.outlier["consecutive_5xx"] else 0
            o["enforcing_success_rate"] = 0
            c["outlier_detection"] = o
            c["common_lb_config"] = {"healthy_panic_threshold": {}, "locality_weighted_lb_config": {}}
        elif self.kind == "EDS":
            c["common_lb_config"] = {}
        if self.kind == "EDS" and self.service:
            ns, name = self.service
            c["metadata"] = {"filter_metadata": {"istio": {"services": [{"host": "%s.%s.svc.%s" % (name, ns, DOMAIN), "name": name, "namespace": ns}],
                                                           "default_original_port": self.port}}}
        if self.kind == "EDS":
            c["filters"] = [{"name": "istio.metadata_exchange", "typed_config": {"@type": "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange",
                                                                                 "protocol": "istio-peer-exchange", "enable_discovery": True}}]
        if self.kind == "EDS" and self.tls == "auto":
            c["transport_socket_matches"] = [
                {"name": "tlsMode-istio", "match": {"tlsMode": "istio"}, "transport_socket": istio_tls(self)},
                {"name": "tlsMode-disabled", "match": {}, "transport_socket": {"name": "envoy.transport_sockets.raw_buffer",
                                                                                 "typed_config": {"@type": "type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer"}}},
            ]
        elif self.tls == "istio":
            c["transport_socket"] = istio_tls(self)
        elif self.tls == "simple":
            c["transport_socket"] = {"name": "envoy.transport_sockets.tls", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                "common_tls_context": {"validation_context": {"trusted_ca": {"filename": "/etc/ssl/certs/ca-certificates.crt"}}},
                "sni": self.name.split("|")[-1]}}
        if self.idle_timeout or self.max_rpc:
            chpo = {}
            if self.idle_timeout:
                chpo["idle_timeout"] = self.idle_timeout
            if self.max_rpc:
                chpo["max_requests_per_connection"] = self.max_rpc
            c["typed_extension_protocol_options"] = {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "common_http_protocol_options": chpo, "explicit_http_config": {"http_protocol_options": {}}}}
        if self.kind == "STATIC" and self.name == "BlackHoleCluster":
            pass
        if self.kind == "ORIGINAL_DST":
            c["upstream_bind_config"] = {"source_address": {"address": "127.0.0.6", "port_value": 0}} if "Inbound" in self.name else None
            if c["upstream_bind_config"] is None:
                del c["upstream_bind_config"]
            c["filters"] = [{"name": "istio.metadata_exchange", "typed_config": {"@type": "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange",
                                                                                 "protocol": "istio-peer-exchange", "enable_discovery": True}}]
        return {"version_info": version, "cluster": c, "last_updated": updated}


def sds(name):
    return {"name": name, "sds_config": {"api_config_source": {"api_type": "GRPC", "grpc_services": [{"envoy_grpc": {"cluster_name": "sds-grpc"}}],
                                                               "set_node_on_first_message_only": True, "transport_api_version": "V3"},
                                         "initial_fetch_timeout": "0s", "resource_api_version": "V3"}}


def istio_tls(cl):
    ns, name = cl.service
    return {"name": "envoy.transport_sockets.tls", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
        "common_tls_context": {
            "tls_params": {"tls_minimum_protocol_version": "TLSv1_2", "tls_maximum_protocol_version": "TLSv1_3"},
            "alpn_protocols": ["istio-peer-exchange", "istio"],
            "tls_certificate_sds_secret_configs": [sds("default")],
            "combined_validation_context": {
                "default_validation_context": {"match_typed_subject_alt_names": [{"san_type": "URI", "matcher": {"exact": "spiffe://%s/ns/%s/sa/%s" % (DOMAIN, ns, cl.sa or name)}}]},
                "validation_context_sds_secret_config": sds("ROOTCA")}},
        "sni": "outbound_.%d_.%s_.%s" % (cl.port, cl.name.split("|")[2] or "", cl.name.split("|")[3])}}


class Listener:
    def __init__(self, name, address, port):
        self.name, self.address, self.port = name, address, port

    def status(self):
        return {"name": self.name, "local_address": {"socket_address": {"address": self.address, "port_value": self.port}}}


class Sidecar:
    """The Envoy admin view of one pod's sidecar."""

    def __init__(self, pod, now, version, clusters, listeners, routes=None, server_stats=None):
        self.pod, self.now, self.version = pod, now, version
        self.clusters, self.listeners, self.routes = clusters, listeners, routes or []
        self.server_stats = server_stats or {}

    def files(self):
        return {
            "clusters.json": envoy_json({"cluster_statuses": [c.status() for c in self.clusters]}),
            "listeners.json": envoy_json({"listener_statuses": [l.status() for l in self.listeners]}),
            "stats.txt": self.stats(),
            "config_dump.json": envoy_json(self.config_dump()),
        }

    def stats(self):
        lines, hist = {}, {}
        uptime = int((self.now - self.pod.proxy_started).total_seconds())
        lines.update({
            "cluster.xds-grpc.upstream_cx_active": 1, "cluster.xds-grpc.upstream_cx_connect_fail": 0, "cluster.xds-grpc.upstream_cx_total": 1,
            "cluster.xds-grpc.upstream_rq_active": 1, "cluster.xds-grpc.upstream_rq_total": 1,
            "cluster_manager.active_clusters": len(self.clusters), "cluster_manager.cds.update_attempt": 44, "cluster_manager.cds.update_rejected": self.server_stats.get("cds_rejected", 0),
            "cluster_manager.cds.update_success": 42, "cluster_manager.cds.version": 4735628893014573000 + len(self.clusters),
            "cluster_manager.cluster_added": len(self.clusters), "cluster_manager.cluster_modified": 3, "cluster_manager.cluster_removed": 0,
            "cluster_manager.cluster_updated": 18, "cluster_manager.update_out_of_merge_window": 0, "cluster_manager.warming_clusters": 0,
            "listener_manager.lds.update_attempt": 29, "listener_manager.lds.update_rejected": 0, "listener_manager.lds.update_success": 28,
            "listener_manager.listener_added": len(self.listeners), "listener_manager.listener_create_success": len(self.listeners) * 2,
            "listener_manager.total_listeners_active": len(self.listeners), "listener_manager.total_listeners_draining": 0, "listener_manager.total_listeners_warming": 0,
            "server.concurrency": 2, "server.days_until_first_cert_expiring": 0, "server.dynamic_unknown_fields": 0, "server.hot_restart_epoch": 0,
            "server.live": 1, "server.memory_allocated": 9843216, "server.memory_heap_size": 16777216, "server.memory_physical_size": 18874368,
            "server.parent_connections": 0, "server.seconds_until_first_ocsp_response_expiring": 0, "server.state": 0, "server.static_unknown_fields": 0,
            "server.total_connections": 4, "server.uptime": uptime, "server.version": 16777215,
            "server.worker_0.watchdog_mega_miss": 0, "server.worker_0.watchdog_miss": 0, "server.worker_1.watchdog_mega_miss": 0, "server.worker_1.watchdog_miss": 0,
        })
        for c in self.clusters:
            if c.name.startswith("outbound|") and c.kind == "EDS" and c.config:
                l, h = c.stat_lines()
                lines.update(l)
                hist.update(h)
        hist["cluster_manager.cds.update_duration"] = "P0(nan,1.0) P25(nan,1.03) P50(nan,1.06) P75(nan,2.05) P90(nan,3.06) P95(nan,3.08) P99(nan,5.0) P99.5(nan,5.0) P99.9(nan,5.0) P100(nan,5.0)"
        hist["server.initialization_time_ms"] = "P0(nan,570.0) P25(nan,572.5) P50(nan,575.0) P75(nan,577.5) P90(nan,579.0) P95(nan,579.5) P99(nan,579.9) P99.5(nan,579.95) P99.9(nan,579.99) P100(nan,580.0)"
        out = ["%s: %s" % (k, lines[k]) for k in sorted(lines)]
        out += ["%s: %s" % (k, hist[k]) for k in sorted(hist)]
        return "\n".join(out) + "\n"

    def config_dump(self):
        p = self.pod
        started = p.proxy_started + timedelta(milliseconds=612)
        node = {
            "id": "sidecar~%s~%s~%s.svc.%s" % (p.ip, p.proxy_id, p.ns, DOMAIN),
            "cluster": "%s.%s" % (p.app, p.ns),
            "metadata": {
                "ANNOTATIONS": {"istio.io/rev": "default", "kubectl.kubernetes.io/default-container": p.container, "sidecar.istio.io/status": "{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"revision\":\"default\"}"},
                "APP_CONTAINERS": p.container,
                "CLUSTER_ID": "Kubernetes",
                "ENVOY_PROMETHEUS_PORT": 15090,
                "ENVOY_STATUS_PORT": 15021,
                "INSTANCE_IPS": p.ip,
                "INTERCEPTION_MODE": "REDIRECT",
                "ISTIO_PROXY_SHA": "f4ed5a1d8fe1f3f2d1c9d5d8b6c58a1f0cfbf33c",
                "ISTIO_VERSION": ISTIO_VERSION,
                "LABELS": {k: v for k, v in p.labels.items() if k in ("app", "version", "security.istio.io/tlsMode", "service.istio.io/canonical-name", "service.istio.io/canonical-revision")},
                "MESH_ID": DOMAIN,
                "NAME": p.name,
                "NAMESPACE": p.ns,
                "NODE_NAME": p.node,
                "OWNER": "kubernetes://apis/apps/v1/namespaces/%s/deployments/%s" % (p.ns, p.app),
                "PILOT_SAN": ["istiod.istio-system.svc"],
                "POD_PORTS": "[]",
                "PROXY_CONFIG": {"binaryPath": "/usr/local/bin/envoy", "configPath": "./etc/istio/proxy", "controlPlaneAuthPolicy": "MUTUAL_TLS",
                                 "discoveryAddress": "istiod.istio-system.svc:15012", "drainDuration": "45s", "proxyAdminPort": 15000,
                                 "serviceCluster": "istio-proxy", "statNameLength": 189, "statusPort": 15020, "terminationDrainDuration": "5s"},
                "SERVICE_ACCOUNT": p.app,
                "WORKLOAD_NAME": p.app,
            },
            "locality": {"region": REGION, "zone": NODES[p.node]["zone"]},
            "user_agent_name": "envoy",
            "user_agent_build_version": {"version": {"major_number": 1, "minor_number": 32, "patch": 3}, "metadata": {"build.type": "RELEASE", "revision.sha": "f4ed5a1d8fe1f3f2d1c9d5d8b6c58a1f0cfbf33c", "revision.status": "Clean", "ssl.version": "BoringSSL"}},
        }
        boot = {"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump",
                "bootstrap": {"node": node, "stats_config": {"stats_tags": [{"tag_name": "cluster_name", "regex": "^cluster\\.((.+?(\\..+?\\.svc\\.cluster\\.local)?)\\.)"}],
                                                             "use_all_default_tags": False}},
                "last_updated": ms(p.proxy_started + timedelta(milliseconds=431))}
        statics, dynamics = [], []
        for c in self.clusters:
            if not c.config:
                continue
            d = c.config_dump(self.version, ms(started))
            if c.kind == "STATIC_BOOT":
                statics.append({"cluster": d["cluster"], "last_updated": d["last_updated"]})
            else:
                dynamics.append(d)
        clusters = {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump", "version_info": self.version,
                    "static_clusters": statics, "dynamic_active_clusters": dynamics}
        configs = [boot, clusters]
        if self.routes:
            configs.append({"@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
                            "dynamic_route_configs": [{"version_info": self.version, "route_config": r, "last_updated": ms(started)} for r in self.routes]})
        configs.append({"@type": "type.googleapis.com/envoy.admin.v3.SecretsConfigDump", "dynamic_active_secrets": [
            {"name": "default", "version_info": "0", "last_updated": ms(p.proxy_started + timedelta(milliseconds=540)),
             "secret": {"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", "name": "default",
                        "tls_certificate": {"certificate_chain": {"inline_bytes": CERT_CHAIN}, "private_key": {"inline_bytes": "W3JlZGFjdGVkXQ=="}}}},
            {"name": "ROOTCA", "version_info": "0", "last_updated": ms(p.proxy_started + timedelta(milliseconds=541)),
             "secret": {"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", "name": "ROOTCA",
                        "validation_context": {"trusted_ca": {"inline_bytes": ROOT_CA}}}}]})
        return {"configs": configs}


# Envoy prints secrets with the private key redacted; the chains are
# base64 PEM. These are short stand-ins of that shape, not real keys.
CERT_CHAIN = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURFakNDQWZxZ0F3SUJBZ0lRYjNKa1pYSnpMWE5oYm1Sb2IzZz0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
ROOT_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM1ekNDQWMrZ0F3SUJBZ0lSQUtYdnJvb3RjYT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="


def route_config(name, vhosts):
    return {"@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", "name": name,
            "virtual_hosts": vhosts, "validate_clusters": False, "max_direct_response_body_size_bytes": 1048576, "ignore_port_in_host_matching": True}


DEFAULT_RETRY = {"retry_on": "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes", "num_retries": 2,
                 "retry_host_predicate": [{"name": "envoy.retry_host_predicates.previous_hosts",
                                           "typed_config": {"@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"}}],
                 "host_selection_retry_max_attempts": "5", "retriable_status_codes": [503]}


def vhost(svc_ns, svc, ip, port, route):
    host = "%s.%s.svc.%s" % (svc, svc_ns, DOMAIN)
    return {"name": "%s:%d" % (host, port),
            "domains": [host, svc, "%s.%s.svc" % (svc, svc_ns), "%s.%s" % (svc, svc_ns), ip],
            "routes": [route], "include_request_attempt_count": True}
