package runbook_test

import (
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/runbooktest"
)

type F = probes.Facts

// causeCases: for each catalogue cause, the facts of an incident of that
// cause, which must lead the engine to it and to no other cause.
var causeCases = []struct {
	cause string
	over  map[string]probes.Facts
	conf  runbook.Confidence
}{
	// No pod here, and none in the other cluster given either.
	{"service.no-selector-match", map[string]probes.Facts{
		"target":         {"target_pods_selected": 0, "target_endpoints": 0, "target_pods_with_sidecar": 0, "target_remote_endpoints": 0},
		"endpoints":      {"endpoints_ready": 0},
		"envoy-clusters": {"envoy_hosts_total": 0, "envoy_hosts_healthy": 0},
		"access-log":     {"log_503": 50, "log_5xx": 50, "log_flag_uh": 50, "log_2xx": 0},
		"startup-order":  {"startup_app_before_proxy": 0},
	}, runbook.ConfidenceHigh},
	{"service.port-mismatch", map[string]probes.Facts{
		"endpoints": {"endpoints_port_mismatch": true, "endpoints_mismatched_ports": []string{"80->8081"}},
		"access-log": {"log_503": 40, "log_5xx": 40, "log_flag_uf": 40, "log_connection_refused": 40,
			"log_transport_failures": []string{"delayed connect error: 111"}},
	}, runbook.ConfidenceHigh},
	{"endpoints.none-ready", map[string]probes.Facts{
		"endpoints": {"endpoints_ready": 0, "endpoints_not_ready": 3,
			"endpoints_not_ready_pods": []string{"web-1 ContainersNotReady", "web-2 ContainersNotReady", "web-3 ContainersNotReady"}},
		"envoy-clusters": {"envoy_hosts_total": 0, "envoy_hosts_healthy": 0},
		"access-log":     {"log_503": 30, "log_5xx": 30, "log_flag_uh": 30},
	}, runbook.ConfidenceHigh},
	{"sidecar.missing-upstream", map[string]probes.Facts{
		"target": {"target_pods_with_sidecar": 0, "target_pods_without_sidecar": 3},
		"mtls": {"mtls_mismatch": "mtls-to-no-sidecar", "mtls_client_tls_mode": "ISTIO_MUTUAL",
			"mtls_upstream_sidecar": false},
		"envoy-config": {"config_tls": "istio-mtls"},
		"access-log":   {"log_503": 20, "log_5xx": 20, "log_flag_uf": 20, "log_transport_failures": []string{"connection reset by peer"}},
	}, runbook.ConfidenceHigh},
	{"mtls.plaintext-to-strict", map[string]probes.Facts{
		"mtls": {"mtls_mismatch": "plaintext-to-strict", "mtls_upstream_mode": "STRICT", "mtls_upstream_mode_source": "namespace",
			"mtls_client_tls_mode": "DISABLE", "mtls_client_sends": "plaintext"},
		"envoy-config": {"config_tls": "none"},
		"access-log":   {"log_503": 20, "log_5xx": 20, "log_flag_uc": 0, "log_flag_uf": 20},
	}, runbook.ConfidenceHigh},
	{"mtls.origination-conflict", map[string]probes.Facts{
		"mtls":         {"mtls_mismatch": "double-tls", "mtls_client_tls_mode": "SIMPLE", "mtls_client_sends": "tls"},
		"envoy-config": {"config_tls": "tls"},
		"access-log": {"log_503": 20, "log_5xx": 20, "log_flag_uf": 20,
			"log_transport_failures": []string{"TLS_error:|268435703:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER"}},
	}, runbook.ConfidenceHigh},
	{"dr.subset-no-pods", map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "dr_names": []string{"shop/web"}, "dr_subsets_without_pods": []string{"v2"}, "dr_subsets_without_pods_routed": []string{"v2"}, "vs_found": true,
			"dr_subset_no_pods_percent": 100},
		"envoy-clusters": {"envoy_empty_clusters": []string{"outbound|80|v2|web.shop.svc.cluster.local"}},
		"access-log":     {"log_503": 30, "log_5xx": 30, "log_flag_uh": 30},
	}, runbook.ConfidenceHigh},
	{"vs.subset-undefined", map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "vs_found": true, "vs_undefined_subsets": []string{"v3"}, "vs_undefined_subset_percent": 100},
		"access-log":        {"log_503": 20, "log_5xx": 20, "log_flag_nc": 20},
	}, runbook.ConfidenceHigh},
	{"outlier.all-ejected", map[string]probes.Facts{
		"envoy-clusters": {"envoy_hosts_healthy": 0, "envoy_hosts_outlier_ejected": 3, "envoy_ejections_active": 3},
		"envoy-config":   {"config_outlier_consecutive_5xx": 1, "config_outlier_max_ejection_percent": 100},
		"destination-rules": {"dr_found": true, "dr_outlier_consecutive_5xx": 1, "dr_outlier_max_ejection_percent": 100,
			"dr_outlier_aggressive": true},
		"access-log": {"log_503": 100, "log_5xx": 100, "log_flag_uh": 100},
	}, runbook.ConfidenceHigh},
	{"circuit-breaker.overflow", map[string]probes.Facts{
		"envoy-clusters":    {"envoy_rq_pending_overflow": 42, "envoy_rq_overflow": 42},
		"envoy-config":      {"config_max_connections": 1, "config_max_pending_requests": 1},
		"destination-rules": {"dr_found": true, "dr_pool_tiny": true, "dr_pool_limits": []string{"tcp.maxConnections=1", "http.http1MaxPendingRequests=1"}},
		"access-log":        {"log_503": 42, "log_5xx": 42, "log_flag_uo": 42},
	}, runbook.ConfidenceHigh},
	{"serviceentry.missing", map[string]probes.Facts{
		"service-entry": {"se_registry_only": true, "se_unregistered_hosts": []string{"api.stripe.com"}},
		"access-log": {"log_503": 12, "log_5xx": 12, "log_flag_nr": 12, "log_blackhole": 12,
			"log_blackhole_hosts": []string{"api.stripe.com"}},
	}, runbook.ConfidenceHigh},
	{"xds.stale", map[string]probes.Facts{
		"proxy-status": {"xds_stale_types": []string{"EDS"}, "xds_eds": "STALE"},
		"access-log":   {"log_503": 10, "log_5xx": 10, "log_flag_uh": 10},
	}, runbook.ConfidenceHigh},
	{"startup.app-before-proxy", map[string]probes.Facts{
		"startup-order": {"startup_app_before_proxy": 3, "startup_early_restarts": 2, "startup_connection_refused": 2,
			"startup_restart_reasons": []string{"Error exit 1", "Error exit 1"}},
	}, runbook.ConfidenceHigh},
	{"shutdown.proxy-exits-first", map[string]probes.Facts{
		"shutdown-order": {"shutdown_pods_terminating": 1},
		"endpoints":      {"endpoints_terminating": 1},
		"access-log":     {"log_503": 5, "log_5xx": 5, "log_flag_uc": 3, "log_flag_dc": 2},
	}, runbook.ConfidenceHigh},
	{"upstream.idle-reset", map[string]probes.Facts{
		"access-log": {"log_503": 7, "log_5xx": 7, "log_flag_uc": 7,
			"log_details": []string{"upstream_reset_before_response_started{connection_termination}"}},
	}, runbook.ConfidenceHigh},
	{"security.port-excluded", map[string]probes.Facts{
		"port-exclusion": {"exclusion_outbound_ports": []string{"80"}, "exclusion_target_port_bypassed": true},
	}, runbook.ConfidenceLow},
	// The Service hidden by exportTo: the plaintext the caller then sends
	// through PassthroughCluster into a STRICT upstream is evidence of it,
	// not a second finding (no mtls.plaintext-to-strict).
	{"config.not-visible", map[string]probes.Facts{
		"destination-rules": {"visibility_visible": false, "visibility_fallback": "PassthroughCluster",
			"visibility_hidden_by": "Service shop/orders is exported to its own namespace shop only (exportTo .), not to web"},
		"mtls": {"mtls_mismatch": "plaintext-to-strict", "mtls_client_config": "passthrough", "mtls_client_sends": "plaintext",
			"mtls_upstream_mode": "STRICT", "mtls_upstream_mode_source": "namespace shop/default"},
		"envoy-clusters": {"envoy_cluster_present": false},
		"access-log":     {"log_503": 20, "log_5xx": 20, "log_flag_uc": 0},
	}, runbook.ConfidenceHigh},
	// A route to a Service exportTo hides from the caller: istiod builds
	// no cluster for it (503 NC), however visible the target itself is.
	{"config.not-visible", map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "vs_found": true, "vs_routed_hidden_services": []string{"orders-v2.shop.svc.cluster.local"}},
		"access-log":        {"log_503": 10, "log_5xx": 10, "log_flag_nc": 10},
	}, runbook.ConfidenceHigh},
	// A route to a host no visible Service or ServiceEntry declares.
	{"serviceentry.missing", map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "vs_found": true, "vs_routed_missing_hosts": []string{"payments.example.com"}},
		"access-log":        {"log_503": 10, "log_5xx": 10, "log_flag_nc": 10},
	}, runbook.ConfidenceHigh},
	// The same with the rules of some namespaces unread: a ServiceEntry
	// there may declare it.
	{"serviceentry.missing", map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "vs_found": true, "vs_routed_missing_hosts": []string{"payments.example.com"},
			"dr_rules_partial": "the Istio rules of namespaces other than shop were not read"},
		"access-log": {"log_503": 10, "log_5xx": 10, "log_flag_nc": 10},
	}, runbook.ConfidenceMedium},
	// A gateway caller: the VirtualService that routes to the target is
	// bound to the mesh only, so the gateway answers 404 NR.
	{"gateway.vs-not-bound", map[string]probes.Facts{
		"target": {"target_source_gateway": true},
		"gateway-routes": {"gateway_selecting": []string{"istio-system/public"}, "gateway_route_to_target": false,
			"gateway_vs_to_target": []string{"shop/orders-public"}, "gateway_vs_unbound": []string{"shop/orders-public"},
			"gateway_unbound_why": "shop/orders-public: binds sidecars only (no gateways)", "gateway_envoy_route_to_target": false,
			"gateway_log_nr": 40, "gateway_nr_hosts": []string{"shop.example.com"}, "gateway_nr_hosts_unrouted": []string{"shop.example.com"}},
		"envoy-clusters": {"envoy_cluster_present": true},
	}, runbook.ConfidenceHigh},
	{"gateway.host-mismatch", map[string]probes.Facts{
		"target": {"target_source_gateway": true},
		"gateway-routes": {"gateway_selecting": []string{"istio-system/public"}, "gateway_route_to_target": false,
			"gateway_vs_to_target": []string{"shop/orders-public"}, "gateway_vs_host_mismatch": []string{"shop/orders-public"},
			"gateway_unbound_why":           "shop/orders-public: none of its hosts (shop.example.com) is a host of the HTTP servers of istio-system/public (www.shop.example.com)",
			"gateway_envoy_route_to_target": false, "gateway_log_nr": 40, "gateway_nr_hosts": []string{"shop.example.com"},
			"gateway_nr_hosts_unrouted": []string{"shop.example.com"}},
	}, runbook.ConfidenceHigh},
	// The Gateway API: a Gateway API gateway's pod as the caller; its
	// verdicts from istiod's status or the model (partial reads lower them).
	{"gateway.route-not-attached", gatewayAPICase(probes.Facts{
		"gateway_route_to_target": false, "gateway_envoy_route_to_target": false, "gateway_api_unattached": []string{"HTTPRoute web/orders -> Gateway shop/public: NotAllowedByListeners"},
		"gateway_api_unattached_why":    `hostnames matched parent hostname "shop.example.com", but namespace "web" is not allowed by the parent`,
		"gateway_api_unattached_source": "status", "gateway_log_nr": 30, "gateway_nr_hosts": []string{"shop.example.com"}}), runbook.ConfidenceHigh},
	{"gateway.route-not-attached", gatewayAPICase(probes.Facts{
		"gateway_route_to_target": false, "gateway_envoy_route_to_target": false, "gateway_api_unattached": []string{"HTTPRoute web/orders -> Gateway shop/public: NotAllowedByListeners"},
		"gateway_api_unattached_why": "m", "gateway_api_unattached_source": "model",
		"gateway_api_partial": "the HTTPRoutes of namespace web were not read (listing them across namespaces is refused)"}), runbook.ConfidenceMedium},
	{"gateway.route-not-attached", gatewayAPICase(probes.Facts{
		"gateway_route_to_target": false, "gateway_envoy_route_to_target": false, "gateway_api_unattached": []string{"HTTPRoute web/orders -> Gateway shop/public: NotAllowedByListeners"},
		"gateway_api_unattached_why": "m", "gateway_api_unattached_source": "stale"}), runbook.ConfidenceMedium},
	{"gateway.backend-not-found", gatewayAPICase(probes.Facts{
		"gateway_api_backend_not_found": []string{"HTTPRoute shop/orders rule 0: Service shop/orders-canary:8080"},
		"gateway_api_backend_source":    "status", "gateway_api_broken_share": 10, "gateway_log_nc500": 12, "gateway_log_nc500_routes": []string{"shop.orders.0"}}), runbook.ConfidenceHigh},
	{"gateway.backend-not-found", map[string]probes.Facts{
		"destination-rules": {"dr_found": false, "vs_found": true, "mesh_route_backend_not_found": []string{"HTTPRoute shop/orders-canary shop.orders-canary.0: orders-canary.shop.svc.cluster.local:8080"},
			"mesh_route_broken_percent": 10},
		"access-log": {"log_5xx": 10, "log_flag_nc": 10, "log_nc500": 10},
	}, runbook.ConfidenceHigh},
	{"gateway.backend-port-missing", gatewayAPICase(probes.Facts{
		"gateway_api_backend_port_missing": []string{"HTTPRoute shop/orders rule 0: Service shop/orders:80"},
		"gateway_api_backend_source":       "status", "gateway_api_broken_share": 100, "gateway_log_nc500": 40}), runbook.ConfidenceHigh},
	{"gateway.backend-port-missing", map[string]probes.Facts{
		"destination-rules": {"vs_found": true, "mesh_route_backend_port_missing": []string{"HTTPRoute shop/orders shop.orders.0: orders.shop.svc.cluster.local:80"},
			"mesh_route_broken_percent": 100},
		"access-log": {"log_5xx": 30, "log_flag_nc": 30, "log_nc500": 30},
	}, runbook.ConfidenceHigh},
	{"gateway.ref-not-permitted", gatewayAPICase(probes.Facts{
		"gateway_api_ref_not_permitted": []string{"HTTPRoute web/orders rule 0: Service shop/orders:8080"},
		"gateway_api_backend_source":    "model", "gateway_api_broken_share": 100, "gateway_route_to_target": false}), runbook.ConfidenceHigh},
	{"gateway.tls-credential-missing", gatewayAPICase(probes.Facts{
		"gateway_tls_credential_missing": []string{"shop/public listener https (port 443 HTTPS): invalid certificate reference /Secret/shop-cert., secret shop/shop-cert not found"},
		"gateway_tls_credential_source":  "status", "gateway_tls_credential_secrets": []string{"shop/shop-cert"}}), runbook.ConfidenceHigh},
	// An Istio Gateway's credentialName: the gateway's Envoy holds its SDS
	// secret warming; no Secret is read, so never more than medium.
	{"gateway.tls-credential-missing", gatewayAPICase(probes.Facts{
		"gateway_api_gateway":            "",
		"gateway_tls_credential_missing": []string{"istio-system/shop-gateway servers[1] (port 443 HTTPS): SDS secret kubernetes://shop-cert is warming in the gateway's Envoy"},
		"gateway_tls_credential_source":  "envoy", "gateway_tls_credential_secrets": []string{"istio-system/shop-cert"},
		"gateway_envoy_secrets_warming": []string{"kubernetes://shop-cert"}}), runbook.ConfidenceMedium},
	{"gateway.listener-unreachable", gatewayAPICase(probes.Facts{
		"gateway_api_gateway":          "",
		"gateway_listener_unreachable": []string{"istio-system/public servers[0] (port 9080 HTTP): no port of the gateway's Service istio-system/istio-ingressgateway is 9080 or targets it"}}), runbook.ConfidenceHigh},
	{"service.no-endpoints", map[string]probes.Facts{
		"target":         {"target_selector_empty": true, "target_pods_selected": 0, "target_pods_with_sidecar": 0},
		"endpoints":      {"endpoints_ready": 0, "endpoints_total": 0, "endpoints_source": "none"},
		"envoy-clusters": {"envoy_hosts_total": 0, "envoy_hosts_healthy": 0},
		"access-log":     {"log_503": 50, "log_5xx": 50, "log_flag_uh": 50, "log_2xx": 0},
	}, runbook.ConfidenceHigh},
	// Ambient: the caller and the Service's pods in ambient (ztunnel), no
	// waypoint unless the case names one.
	{"ambient.hbone-blocked", ambientCase(map[string]probes.Facts{
		"ambient-policy": {"hbone_netpol_blocked": true, "hbone_blocked_hops": []string{"shop/web-1 -> shop/orders-1 TCP 15008"},
			"hbone_netpol_policies": []string{"shop/orders-from-web"}},
		"ztunnel": {"ztunnel_entries": 40, "ztunnel_hbone_timeouts": 40, "ztunnel_failures": []string{"hbone-timeout=40"}},
	}), runbook.ConfidenceHigh},
	{"ambient.authz-rejected", ambientCase(map[string]probes.Facts{
		"ambient-policy": {"authz_denied": true, "authz_reason": "allow policies exist, but none allowed",
			"authz_policies": []string{"ALLOW shop/orders-from-checkout"}},
		"ztunnel": {"ztunnel_entries": 25, "ztunnel_rejections": 25, "ztunnel_failures": []string{"policy-rejection=25"}},
	}), runbook.ConfidenceHigh},
	{"ambient.waypoint-missing", ambientCase(map[string]probes.Facts{
		"dataplane": {"waypoint_named": true, "waypoint_name": "shop/orders-waypoint", "waypoint_state": "missing",
			"waypoint_bound_condition": "False: WaypointIsNotReady"},
		"ambient-policy": {"authz_denied": true, "authz_waypoint_admitted": true, "authz_reason": "allow policies exist, but none allowed"},
		"ztunnel":        {"ztunnel_entries": 30, "ztunnel_rejections": 30},
	}), runbook.ConfidenceHigh},
	{"ambient.waypoint-not-ready", ambientCase(map[string]probes.Facts{
		"dataplane": {"waypoint_named": true, "waypoint_name": "shop/orders-waypoint", "waypoint_state": "bound",
			"waypoint_ready_pods": 0, "waypoint_traversed": true},
		"ztunnel": {"ztunnel_entries": 30, "ztunnel_failures": []string{"other=30"}},
	}), runbook.ConfidenceHigh},
	{"ambient.waypoint-not-bound", ambientCase(map[string]probes.Facts{
		"dataplane": {"waypoint_named": true, "waypoint_name": "shop/orders-waypoint", "waypoint_state": "not-service",
			"waypoint_ready_pods": 1, "waypoint_bound_condition": "False: UnsupportedTrafficType"},
		"ambient-policy": {"authz_denied": true, "authz_waypoint_admitted": true, "authz_reason": "allow policies exist, but none allowed"},
	}), runbook.ConfidenceHigh},
	// The Gateway API routes a waypoint applies for the Service: an
	// ambient caller's requests take them there.
	{"gateway.backend-not-found", ambientCase(map[string]probes.Facts{
		"dataplane": {"waypoint_named": true, "waypoint_name": "shop/orders-waypoint", "waypoint_state": "bound",
			"waypoint_ready_pods": 1, "waypoint_traversed": true},
		"waypoint": {"waypoint_pods_read": 1, "waypoint_rbac_denied": 0, "waypoint_api_routes": []string{"HTTPRoute shop/orders-canary"},
			"waypoint_api_backend_not_found":    []string{"HTTPRoute shop/orders-canary rule 0: Service shop/orders-canary:8080"},
			"waypoint_api_backend_port_missing": []string{}, "waypoint_api_backend_source": "status", "waypoint_api_broken_share": 20,
			"waypoint_api_partial": "", "waypoint_log_nc500": 98, "waypoint_log_nc500_routes": []string{"shop.orders-canary.0"}},
	}), runbook.ConfidenceHigh},
	{"gateway.backend-port-missing", ambientCase(map[string]probes.Facts{
		"dataplane": {"waypoint_named": true, "waypoint_name": "shop/orders-waypoint", "waypoint_state": "bound",
			"waypoint_ready_pods": 1, "waypoint_traversed": true},
		"waypoint": {"waypoint_pods_read": 1, "waypoint_rbac_denied": 0, "waypoint_api_routes": []string{"HTTPRoute shop/orders"},
			"waypoint_api_backend_not_found": []string{}, "waypoint_api_backend_port_missing": []string{"HTTPRoute shop/orders rule 0: Service shop/orders:80"},
			"waypoint_api_backend_source": "model", "waypoint_api_broken_share": 100,
			"waypoint_api_partial": "the GRPCRoutes of namespace shop were not read", "waypoint_log_nc500": 40}},
	), runbook.ConfidenceMedium},
	{"ambient.pod-not-enrolled", ambientCase(map[string]probes.Facts{
		"dataplane": {"dataplane_source": "none", "dataplane_source_not_enrolled": true,
			"dataplane_not_enrolled_pods": []string{"shop/web-1 (caller): ambient, NOT enrolled"}},
	}), runbook.ConfidenceHigh},
	{"ambient.sidecar-bypasses-waypoint", ambientCase(map[string]probes.Facts{
		"dataplane": {"dataplane_source": "sidecar", "waypoint_named": true, "waypoint_name": "shop/orders-waypoint", "waypoint_state": "bound",
			"waypoint_ready_pods": 1, "waypoint_traversed": false},
		"target":         {"target_source_has_sidecar": true},
		"ambient-policy": {"authz_denied": true, "authz_waypoint_admitted": true, "authz_reason": "allow policies exist, but none allowed"},
		"ztunnel":        {"ztunnel_entries": 12, "ztunnel_rejections": 12, "ztunnel_sidecar_rejections": 12},
	}), runbook.ConfidenceHigh},
	{"ambient.ztunnel-unavailable", ambientCase(map[string]probes.Facts{
		"ztunnel": {"ztunnel_pods": 1, "ztunnel_nodes_without": []string{"worker-b"}},
	}), runbook.ConfidenceHigh},
	// issue 29, control plane. istiod's record of the caller's NACK: the
	// CDS type it leaves STALE is the rejection, not a slow push (no
	// xds.stale), and the route to the cluster never pushed is a 503 NC.
	{"xds.config-rejected", map[string]probes.Facts{
		"proxy-status": {"xds_stale_types": []string{"CDS"}, "xds_cds": "STALE", "xds_rejected_types": []string{"CDS"},
			"xds_last_error":    "CDS: Error adding/updating cluster(s) outbound|8080|v2|orders.shop.svc.cluster.local: 'istio.hashable_string' does not have an object factory",
			"xds_proxy_version": "1.28.3", "xds_istiod_version": "1.30.1-7c2e91d4-Clean", "xds_version_skew": 2, "xds_skew_supported": false},
		"access-log": {"log_503": 20, "log_5xx": 20, "log_flag_nc": 20, "log_xds_rejected": 4,
			"log_xds_rejected_reason": "CDS: Error adding/updating cluster(s) outbound|8080|v2|orders.shop.svc.cluster.local: 'istio.hashable_string' does not have an object factory"},
		"envoy-clusters": {"envoy_xds_rejected": 4},
	}, runbook.ConfidenceHigh},
	// Without istiod's record, Envoy's own log line in the window.
	{"xds.config-rejected", map[string]probes.Facts{
		"access-log": {"log_503": 20, "log_5xx": 20, "log_flag_nc": 20, "log_xds_rejected": 2,
			"log_xds_rejected_reason": "LDS: Error adding/updating listener(s) virtualInbound: Didn't find a registered implementation for name: 'istio_authn'"},
	}, runbook.ConfidenceMedium},
	{"xds.version-skew", map[string]probes.Facts{
		"proxy-status": {"xds_proxy_version": "1.26.4", "xds_istiod_version": "1.29.0", "xds_version_skew": 3, "xds_skew_supported": false},
	}, runbook.ConfidenceLow},
	// SYNCED, no endpoint in Envoy, ready ones in the slices, and istiod
	// itself would send none.
	{"eds.synced-but-empty", map[string]probes.Facts{
		"envoy-clusters": {"envoy_hosts_total": 0, "envoy_hosts_healthy": 0, "envoy_empty_clusters": []string{"outbound|80||web.shop.svc.cluster.local"}},
		"proxy-status":   {"xds_edsz_endpoints": 0},
		"access-log":     {"log_503": 30, "log_5xx": 30, "log_flag_uh": 30},
	}, runbook.ConfidenceHigh},
	{"eds.synced-but-empty", map[string]probes.Facts{
		"envoy-clusters": {"envoy_hosts_total": 0, "envoy_hosts_healthy": 0, "envoy_empty_clusters": []string{"outbound|80||web.shop.svc.cluster.local"}},
		"access-log":     {"log_503": 30, "log_5xx": 30, "log_flag_uh": 30},
	}, runbook.ConfidenceMedium},

	// Issue 29, the sidecar and the app's side.
	// The caller's app runs as UID 1337 and the upstream is PERMISSIVE:
	// its requests go around its sidecar and are served, in plaintext.
	// Into STRICT it fails (TestAppAsProxyUIDIntoStrictIsTheRootCause).
	{"sidecar.app-runs-as-proxy-uid", map[string]probes.Facts{
		"mtls": {"mtls_source_sidecar": false, "mtls_source_bypass": "all", "mtls_client_config": "no-sidecar", "mtls_client_sends": "plaintext",
			"mtls_source_bypass_why": []string{"container web runs as UID 1337, the proxy's"}},
	}, runbook.ConfidenceLow},
	// A liveness probe not rewritten, into STRICT: the kubelet restarts
	// pods whose app is fine (a readiness probe would also empty the
	// endpoints: TestBlockedReadinessLeavesEndpointsNoneReadyAConsequence).
	{"probe.blocked-by-strict", map[string]probes.Facts{
		"health-probes": {"healthprobe_pods": 3, "healthprobe_blocked_kinds": []string{"liveness"},
			"healthprobe_blocked_by_strict": []string{"orders liveness httpGet :8080/healthz on 3 pods: not rewritten (pod annotation sidecar.istio.io/rewriteAppHTTPProbers: \"false\"), port 8080 captured, STRICT (namespace shop/default)"},
			"healthprobe_rewrite_off":       "pod annotation sidecar.istio.io/rewriteAppHTTPProbers: \"false\"", "healthprobe_kubelet_resets": 120},
	}, runbook.ConfidenceHigh},
	{"probe.rewrite-mismatch", map[string]probes.Facts{
		"health-probes": {"healthprobe_pods": 3,
			"healthprobe_prober_missing": []string{"orders liveness httpGet :15020/app-health/orders/livez on 3 pods: istio-proxy's ISTIO_KUBE_APP_PROBERS has no /app-health/orders/livez"}},
	}, runbook.ConfidenceHigh},
	{"probe.rewrite-mismatch", map[string]probes.Facts{
		"health-probes": {"healthprobe_pods": 3,
			"healthprobe_host_set": []string{"orders liveness httpGet :15020/app-health/orders/livez on 3 pods: httpGet.host localhost: the kubelet sends it to localhost:15020"}},
	}, runbook.ConfidenceMedium},
	// nginx's default proxy_pass speaks HTTP/1.0: the caller's sidecar
	// answers 426 low_version itself.
	{"http.1.0-rejected", map[string]probes.Facts{
		"access-log": {"log_http10_rejected": 40, "log_http10_hops": []string{"sidecar-outbound"}, "log_details": []string{"low_version"}, "log_2xx": 0},
	}, runbook.ConfidenceHigh},
	// uvicorn says it runs on 127.0.0.1: the inbound's dial of the pod's
	// IP is refused. The app's word is certain, the spec's likely.
	{"app.localhost-bound", map[string]probes.Facts{
		"app-listen": {"applisten_loopback": []string{"orders-1 orders: INFO:     Uvicorn running on http://127.0.0.1:8080 (Press CTRL+C to quit)"},
			"applisten_inbound_refused": 40},
	}, runbook.ConfidenceHigh},
	{"app.localhost-bound", map[string]probes.Facts{
		"app-listen": {"applisten_loopback": []string{"orders-1 orders: --host 127.0.0.1"}, "applisten_loopback_from_spec": []string{"orders-1 orders: --host 127.0.0.1"}},
	}, runbook.ConfidenceMedium},
	{"app.localhost-bound", map[string]probes.Facts{
		"app-listen": {"applisten_loopback": []string{"orders-1 orders: Running on http://127.0.0.1:8080"}, "applisten_sidecars_read": false},
	}, runbook.ConfidenceMedium},
	// The proxy now accepts HTTP/1.0: the 426s are older than that.
	{"http.1.0-rejected", map[string]probes.Facts{
		"access-log": {"log_http10_rejected": 40, "log_http10_hops": []string{"sidecar-outbound"}, "log_details": []string{"low_version"},
			"log_http10_accepted_by": []string{"shop/frontend-1: istio-proxy env ISTIO_META_HTTP10=1"}},
	}, runbook.ConfidenceLow},
	// MySQL behind a port named http-mysql, and the caller says the
	// handshake never came.
	{"protocol.server-first", map[string]probes.Facts{
		"port-protocol": {"portproto_server_first": []string{"3306 http-mysql: HTTP by name; port 3306 is MySQL's"}, "portproto_server_first_ports": []string{"3306"},
			"portproto_client_errors": 12, "portproto_caller_logs_read": true},
	}, runbook.ConfidenceMedium},
	// Cilium's socket LB in the pods' namespaces with a Service bound to a
	// waypoint: the waypoint is skipped.
	{"ambient.platform-cilium-socket-lb", ambientCase(map[string]probes.Facts{
		"dataplane": {"cilium_socket_lb": "pod-namespaces", "waypoint_state": "bound", "waypoint_name": "shop/orders-waypoint", "waypoint_ready_pods": 1, "waypoint_traversed": true},
	}), runbook.ConfidenceMedium},
	// Without a waypoint, only the prerequisite is unmet.
	{"ambient.platform-cilium-socket-lb", ambientCase(map[string]probes.Facts{
		"dataplane": {"cilium_socket_lb": "pod-namespaces"},
	}), runbook.ConfidenceLow},
	// Branch-ENI ambient pods unready under the VPC CNI's strict mode.
	{"ambient.platform-eks-sg-strict", ambientCase(map[string]probes.Facts{
		"dataplane": {"eks_sg_strict_unready": []string{"shop/orders-1", "shop/orders-2"}},
	}), runbook.ConfidenceMedium},
	// An ambient rollout: the callers' ztunnels refused on 15008 of a
	// terminating pod, whose app has no preStop.
	{"ambient.drain-before-removal", ambientCase(map[string]probes.Facts{
		"shutdown-order": {"shutdown_classic_sidecar": false, "shutdown_at_risk": false, "shutdown_ambient_pods": 3, "shutdown_pods_terminating": 1,
			"shutdown_terminating_ips": []string{"10.0.1.11"}},
		"endpoints": {"endpoints_terminating": 1},
		"ztunnel": {"ztunnel_entries": 40, "ztunnel_completed": 36, "ztunnel_refused": 4, "ztunnel_refused_tunnel_ips": []string{"10.0.1.11"},
			"ztunnel_failures": []string{"connection-refused=4"}},
	}), runbook.ConfidenceMedium},
	// A gateway reset on pooled HBONE connections to IPs that new pods
	// have now, with no rollout in progress.
	{"ambient.hbone-pool-ip-reused", ambientCase(map[string]probes.Facts{
		"target": {"target_source_gateway": true}, "dataplane": {"dataplane_source": "gateway"},
		"access-log": {"log_503": 4, "log_5xx": 4, "log_flag_uc": 4, "log_details": []string{"upstream_reset_before_response_started{connection_termination}"},
			"log_tunnel_failed_ips": []string{"10.0.1.12"}, "log_tunnel_resets": 4, "log_tunnel_reset_ips": []string{"10.0.1.12"},
			"log_tunnel_reset_reused_ips": []string{"10.0.1.12"}, "log_tunnel_reset_times_known": true},
	}), runbook.ConfidenceMedium},
	// An ambient pod of the Service started before its node's ztunnel was
	// Ready and restarted since.
	{"ambient.pod-started-before-ztunnel", ambientCase(map[string]probes.Facts{
		"ztunnel": {"ztunnel_started_before_ready": []string{"shop/orders-1"}, "ztunnel_started_before_ready_restarted": []string{"shop/orders-1"}},
	}), runbook.ConfidenceMedium},
	// Issue 30: cluster c2's istio-system lost its network label; its
	// gateway Service says network2, and its pod goes to the caller as a
	// pod IP.
	{"multicluster.network-label-missing", map[string]probes.Facts{
		"multicluster": {"mc_label_missing": []string{"c2: istio-system=network2 (1 endpoint of the Service on no network go to the caller as pod IPs; Service istio-system/istio-eastwestgateway names network network2)"},
			"mc_remote_direct": []string{"c2: 10.2.0.5 (network -)"}, "mc_via_gateway": 0},
	}, runbook.ConfidenceMedium},
	{"multicluster.network-label-disagrees", map[string]probes.Facts{
		"multicluster": {"mc_label_disagrees": []string{"c2: 1 endpoint on network net2 (namespace istio-system label), gateway Service istio-system/istio-eastwestgateway on network2"},
			"mc_remote_direct": []string{"c2: 10.2.0.5 (network net2)"}, "mc_via_gateway": 0},
	}, runbook.ConfidenceMedium},
	{"multicluster.gateway-unusable", map[string]probes.Facts{
		"multicluster": {"mc_gateway_unusable": []string{"c2: istio-system/istio-eastwestgateway: no port 15443 (nor 15008), and 1 endpoint of network network2 go to the caller as pod IPs"},
			"mc_gateway_port_missing": []string{"c2 istio-system/istio-eastwestgateway"}, "mc_remote_direct": []string{"c2: 10.2.0.5 (network network2)"}, "mc_via_gateway": 0,
			"mc_networkz_read": false}, // the configuration alone
	}, runbook.ConfidenceMedium},
	// An ELB hostname: whether istiod's DNS resolved it is istiod's word.
	{"multicluster.gateway-hostname-unresolved", map[string]probes.Facts{
		"multicluster": {"mc_gateway_hostname": []string{"c2: Service istio-system/istio-eastwestgateway ew.elb.example (network network2)"},
			"mc_undecided": []string{"c2: 10.2.0.5 (pod orders-b): through gateway ew.elb.example:15443, a hostname istiod resolves with its own DNS"}, "mc_via_gateway": 0,
			"mc_networkz_read": false}, // networkz not read
	}, runbook.ConfidenceLow},
	// istiod's clusterz lists only its own cluster while c2's pods name
	// cluster2: istiod reads no secret for it.
	{"multicluster.remote-secret-missing", map[string]probes.Facts{
		"multicluster": {"mc_remote_secret_missing": []string{"c2: cluster ID cluster2 is not among the clusters istiod reads (clusterz), so it pushes none of its endpoints; create its remote secret: istioctl create-remote-secret --context=c2 --name=cluster2 | kubectl apply -f - --context=c1"},
			"mc_istiod_clusters": []string{"Kubernetes (config cluster): synced"}, "mc_remote_secret_stale": []string{}, "mc_cluster_id_collision": []string{}, "mc_via_gateway": 0},
	}, runbook.ConfidenceHigh},
	{"multicluster.remote-secret-stale", map[string]probes.Facts{
		"multicluster": {"mc_remote_secret_stale": []string{"c2: cluster ID cluster2 is timeout in istiod's clusterz (secret istio-system/istio-remote-secret-cluster2): istiod has not read its endpoints (the secret's credentials or address may be stale); recreate it: istioctl create-remote-secret --context=c2 --name=cluster2 | kubectl apply -f - --context=c1"},
			"mc_istiod_clusters": []string{"Kubernetes (config cluster): synced", "cluster2 (secret istio-system/istio-remote-secret-cluster2): timeout"}, "mc_remote_secret_missing": []string{}, "mc_cluster_id_collision": []string{}, "mc_via_gateway": 0},
	}, runbook.ConfidenceHigh},
	// c2's endpoint goes through its east-west gateway, and no Gateway
	// of the config cluster gives the gateway an AUTO_PASSTHROUGH server.
	{"multicluster.eastwest-not-passthrough", map[string]probes.Facts{
		"multicluster": {"mc_via_gateway": 1, "mc_remote_direct": []string{}},
		"eastwest-passthrough": {"ewpt_not_passthrough": []string{"c2: istio-system/istio-eastwestgateway port 15443→15443 (Gateways read in c1): no Gateway selecting the pods has a server on port 15443"},
			"ewpt_gateways_checked": 1},
	}, runbook.ConfidenceMedium},
	// Each cluster kept istiod's own self-signed root.
	{"multicluster.trust-mismatch", map[string]probes.Facts{
		"multicluster-trust": {"mctrust_roots_disjoint": []string{`c2: shop/istio-ca-root-cert roots ["O=cluster2" serial 2] share none with the caller's ["O=cluster1" serial 1]`}},
	}, runbook.ConfidenceHigh},
	// The port and the image alone.
	{"protocol.server-first", map[string]probes.Facts{
		"port-protocol": {"portproto_server_first": []string{"3306 http-mysql: HTTP by name; port 3306 is MySQL's"}, "portproto_server_first_ports": []string{"3306"},
			"portproto_caller_logs_read": false},
	}, runbook.ConfidenceLow},
	// A global Service whose waypoint was removed from c2's namespace
	// only (#60985): istiod compares nothing, the configuration's word.
	{"multicluster.waypoint-differs", map[string]probes.Facts{
		"multicluster-waypoint": {"mcwp_label_differs": []string{"c2: no istio.io/use-waypoint on the Service or its namespace, where c1: waypoint shop/waypoint (namespace label)"}},
	}, runbook.ConfidenceMedium},
	{"multicluster.waypoint-differs", map[string]probes.Facts{
		"multicluster-waypoint": {"mcwp_gateway_missing": []string{"c2: waypoint shop/waypoint (Gateway in c1, none in c2)"}},
	}, runbook.ConfidenceMedium},
	// The sidecar holds the istio-east-west gateway at 15008: istiod
	// pushed it (networkz lists it with Port = HBONEPort, #61618).
	{"multicluster.double-hbone", map[string]probes.Facts{
		"multicluster-hbone": {"mchbone_gateways": []string{"network2: 172.18.2.10:15008 (cluster cluster2)"},
			"mchbone_caller_endpoints": []string{"outbound|8080||orders.shop.svc.cluster.local: 172.18.2.10:15008 (network network2)"}},
	}, runbook.ConfidenceHigh},
	// networkz alone, the caller's Envoy not read.
	{"multicluster.double-hbone", map[string]probes.Facts{
		"multicluster-hbone": {"mchbone_gateways": []string{"network2: 172.18.2.10:15008 (cluster cluster2)"}, "mchbone_clusters_read": false},
	}, runbook.ConfidenceMedium},
	// An ambient caller, the Service's endpoints on network2, and no
	// istio-remote Gateway for network2: ztunnel gets no network_gateway.
	// The caller is ambient: the walk reaches the step from endpoints.
	{"multicluster.ambient-gateway-missing", runbooktest.With(runbooktest.AmbientHealthy(), map[string]probes.Facts{
		"target": {"target_remote_endpoints": 1},
		"multicluster-ambient-gateway": {"mcamb_gateways_read": true, "mcamb_remote_endpoints": []string{"ctx2: 10.2.0.5 (pod orders-b) network network2"},
			"mcamb_networks_without_gateway": []string{"network2: ctx2: 10.2.0.5 (pod orders-b)"}},
	}), runbook.ConfidenceMedium},
	// The same caller with the Service's pods only in ctx2, and istiod
	// without AMBIENT_ENABLE_MULTI_NETWORK: ztunnel is given no endpoint.
	// The probe leaves mcamb_networks_without_gateway unset then.
	// The other cluster on the caller's own network: no gateway is
	// missing, and still none of its endpoints reaches ztunnel.
	{"multicluster.ambient-multinetwork-off", runbooktest.With(runbooktest.AmbientHealthy(), map[string]probes.Facts{
		"target":    {"target_pods_selected": 0, "target_endpoints": 0, "target_pods_with_sidecar": 0, "target_remote_endpoints": 1},
		"endpoints": {"endpoints_ready": 0, "endpoints_total": 0},
		"multicluster-ambient-gateway": {"mcamb_istiod_multinetwork": false, "mcamb_remote_endpoints": []string{}, "mcamb_gateways": []string{},
			"mcamb_gateways_read": true},
	}), runbook.ConfidenceMedium},
	{"multicluster.ambient-multinetwork-off", runbooktest.With(runbooktest.AmbientHealthy(), map[string]probes.Facts{
		"target":    {"target_pods_selected": 0, "target_endpoints": 0, "target_pods_with_sidecar": 0, "target_remote_endpoints": 1},
		"endpoints": {"endpoints_ready": 0, "endpoints_total": 0},
		"multicluster-ambient-gateway": {"mcamb_istiod_multinetwork": false, "mcamb_remote_endpoints": []string{"ctx2: 10.2.0.5 (pod orders-b) network network2"},
			"mcamb_gateways_read": true},
	}), runbook.ConfidenceMedium},
}

// gatewayAPICase is over on top of a healthy Gateway API gateway caller
// (the gateway step's facts of a gateway whose route reaches the target).
func gatewayAPICase(over probes.Facts) map[string]probes.Facts {
	gw := probes.Facts{}
	for k, v := range gatewayAPIHealthy["gateway-routes"] {
		gw[k] = v
	}
	for k, v := range over {
		gw[k] = v
	}
	return map[string]probes.Facts{"target": {"target_source_gateway": true}, "gateway-routes": gw}
}

// ambientCase is over on top of an ambient caller and Service without a
// waypoint (TestEachCauseAloneFromItsFacts starts from Healthy).
func ambientCase(over map[string]probes.Facts) map[string]probes.Facts {
	base := map[string]probes.Facts{
		"target":    {"target_pods_with_sidecar": 0, "target_pods_without_sidecar": 3, "target_source_has_sidecar": false},
		"dataplane": {"dataplane_ambient": true, "dataplane_source": "ambient", "dataplane_target": "ambient", "dataplane_target_ambient": 3},
		"mtls":      {"mtls_source_sidecar": false, "mtls_upstream_sidecar": false, "mtls_client_config": "no-sidecar"},
	}
	for probe, facts := range over {
		if base[probe] == nil {
			base[probe] = probes.Facts{}
		}
		for k, v := range facts {
			base[probe][k] = v
		}
	}
	return base
}

func TestEveryCatalogueCauseHasACase(t *testing.T) {
	have := map[string]bool{}
	for _, c := range causeCases {
		have[c.cause] = true
	}
	for _, id := range assets.Causes {
		if !have[id] {
			t.Errorf("no engine case for cause %s", id)
		}
	}
}

// The fixtures must speak the probes' contract, or the cases prove nothing.
func TestFixtureFactsAreDeclared(t *testing.T) {
	byID := probes.ByID()
	check := func(name string, facts map[string]probes.Facts) {
		for probe, f := range facts {
			p, ok := byID[probe]
			if !ok {
				t.Errorf("%s: no probe %q", name, probe)
				continue
			}
			if err := probes.CheckFacts(p.Meta(), probes.Result{Facts: f}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	check("healthy", healthy())
	for _, c := range causeCases {
		check(c.cause, c.over)
	}
}

func TestEachCauseAloneFromItsFacts(t *testing.T) {
	g := load503(t)
	for _, c := range causeCases {
		t.Run(c.cause, func(t *testing.T) {
			s := newSession(t, g, newRecorded(with(healthy(), c.over)), runbook.ModeAuto)
			findings, err := s.Auto(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := causeIDs(findings); !reflect.DeepEqual(got, []string{c.cause}) {
				t.Fatalf("findings = %v, want only %s\nskipped: %+v", got, c.cause, s.Skipped())
			}
			f := findings[0]
			if f.Confidence != c.conf {
				t.Errorf("confidence = %s, want %s", f.Confidence, c.conf)
			}
			if len(f.Evidence) == 0 || len(f.Evidence[0].Facts) == 0 || len(f.Evidence[0].Probes) == 0 {
				t.Errorf("finding without evidence: %+v", f.Evidence)
			}
			if len(f.Fixes) == 0 || len(f.Verify) == 0 {
				t.Errorf("finding without fix or verify")
			}
			for _, fix := range f.Fixes {
				for _, cmd := range append(append([]string{fix.Text}, fix.Commands...), fix.YAML...) {
					if strings.Contains(cmd, "${") {
						t.Errorf("placeholder left in %q", cmd)
					}
				}
			}
			if len(s.Skipped()) != 0 {
				t.Errorf("complete facts, yet rules skipped: %+v", s.Skipped())
			}
		})
	}
}

func TestHealthyServiceHasNoFinding(t *testing.T) {
	g := load503(t)
	s := newSession(t, g, newRecorded(healthy()), runbook.ModeAuto)
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Fatalf("healthy service: findings %v", causeIDs(findings))
	}
	// The walk visits every step of the runbook from the three symptoms,
	// except versions, which only matters once startup restarts show,
	// gateway-routes, which only a gateway caller takes, and
	// multicluster-ambient-gateway, which only an ambient caller with
	// endpoints in other clusters takes
	// (TestAmbientCallerRemoteNetworkWalksAmbientGateway).
	walked := map[string]bool{}
	for _, ev := range s.Events() {
		if ev.Kind == runbook.EventBranchTaken {
			walked[ev.Branch.To] = true
			if ev.Branch.ChosenBy != runbook.ChosenByEngine {
				t.Errorf("auto move chosen by %q", ev.Branch.ChosenBy)
			}
		}
	}
	for _, st := range g.Steps {
		if ambientSteps[st.ID] {
			continue // walked when ztunnel or a waypoint is on the path: TestHealthyAmbientServiceHasNoFinding
		}
		if !walked[st.ID] && st.ID != "versions" && st.ID != "gateway-routes" && st.ID != "multicluster-ambient-gateway" {
			t.Errorf("healthy walk never reached step %s", st.ID)
		}
	}
	if walked["versions"] {
		t.Errorf("healthy walk went to versions without startup restarts")
	}
}

// autoFindings walks the 503 runbook in auto mode over a healthy service's
// facts with over laid on top.
func autoFindings(t *testing.T, over map[string]probes.Facts) []runbook.Finding {
	t.Helper()
	s := newSession(t, load503(t), newRecorded(with(healthy(), over)), runbook.ModeAuto)
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return findings
}

// A subset without pods that no route sends traffic to (the canary declared
// at weight 0) is not the cause of UH 503s that another cause produces.
func TestUnroutedEmptySubsetIsNotTheCauseOfUH(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"destination-rules": {"dr_found": true, "dr_names": []string{"shop/web"}, "dr_subsets_without_pods": []string{"web/v2"},
			"dr_subsets_without_pods_routed": []string{}, "vs_found": true},
		"envoy-clusters": {"envoy_hosts_total": 3, "envoy_hosts_healthy": 0, "envoy_hosts_outlier_ejected": 3,
			"envoy_empty_clusters": []string{"outbound|80|v2|web.shop.svc.cluster.local"}},
		"access-log": {"log_503": 40, "log_5xx": 40, "log_flag_uh": 40, "log_2xx": 0},
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"outlier.all-ejected"}) {
		t.Fatalf("findings = %v, want only outlier.all-ejected", got)
	}
}

// A VirtualService sending everything to subset v1: its cluster is all
// ejected while the default cluster, which no route uses, still counts its
// hosts healthy. The host totals over both clusters hide it; the per-cluster
// fact does not.
func TestSubsetAllEjectedBehindHealthyDefaultCluster(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"envoy-clusters": {"envoy_clusters": []string{"outbound|80||web.shop.svc.cluster.local", "outbound|80|v1|web.shop.svc.cluster.local"},
			"envoy_hosts_total": 5, "envoy_hosts_healthy": 3, "envoy_hosts_outlier_ejected": 2, "envoy_ejections_active": 2,
			"envoy_clusters_all_ejected": []string{"outbound|80|v1|web.shop.svc.cluster.local"}},
		"access-log": {"log_503": 60, "log_5xx": 60, "log_flag_uh": 60, "log_2xx": 0},
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"outlier.all-ejected"}) {
		t.Fatalf("findings = %v, want only outlier.all-ejected", got)
	}
	if why := findings[0].Evidence[0].Reason; !strings.Contains(why, "outbound|80|v1|web.shop.svc.cluster.local") {
		t.Errorf("reason %q does not name the ejected subset cluster", why)
	}
}

// containerPort is informational: a targetPort the pods do not declare,
// with no refusals in the proxy log, is a lead at medium confidence, not a
// high-confidence diagnosis.
func TestUndeclaredTargetPortWithoutRefusalsIsMediumConfidence(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"endpoints": {"endpoints_port_mismatch": true, "endpoints_mismatched_ports": []string{"80->8081"}},
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"service.port-mismatch"}) {
		t.Fatalf("findings = %v, want only service.port-mismatch", got)
	}
	if findings[0].Confidence != runbook.ConfidenceMedium {
		t.Errorf("confidence = %s, want medium without UF or connection refused in the log", findings[0].Confidence)
	}
}

// A PERMISSIVE upstream accepts ISTIO_MUTUAL: a DestinationRule that says
// ISTIO_MUTUAL toward it is not an mTLS problem.
func TestPermissiveUpstreamWithIstioMutualIsNotAMismatch(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"mtls":              {"mtls_upstream_mode": "PERMISSIVE", "mtls_client_tls_mode": "ISTIO_MUTUAL", "mtls_client_sends": "mtls", "mtls_mismatch": "none"},
		"envoy-config":      {"config_tls": "istio-mtls"},
		"destination-rules": {"dr_found": true, "dr_names": []string{"shop/web"}},
	})
	if len(findings) != 0 {
		t.Fatalf("PERMISSIVE + ISTIO_MUTUAL reported as %v", causeIDs(findings))
	}
}

// Default classic sidecars without drain settings are not a finding until
// a rollout shows the gap.
func TestShutdownRiskWithoutRolloutIsNoFinding(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"access-log": {"log_503": 2, "log_5xx": 2, "log_flag_uf": 2},
	})
	if len(findings) != 0 {
		t.Fatalf("findings %v without a rollout", causeIDs(findings))
	}
}

// UC during a rollout is the shutdown gap, not an idle timeout.
func TestUCDuringRolloutIsNotIdleReset(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"shutdown-order": {"shutdown_pods_terminating": 2},
		"access-log": {"log_503": 7, "log_5xx": 7, "log_flag_uc": 7,
			"log_details": []string{"upstream_reset_before_response_started{connection_termination}"}},
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"shutdown.proxy-exits-first"}) {
		t.Fatalf("findings = %v", got)
	}
}

// A sidecar sending plaintext to a STRICT upstream is reset by it: the caller
// logs 503 UC connection_termination, the same line an idle keep-alive reset
// gives. With an mTLS mismatch in the facts, that UC is the mismatch's.
func TestUCFromPlaintextToStrictIsNotIdleReset(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"mtls": {"mtls_mismatch": "plaintext-to-strict", "mtls_upstream_mode": "STRICT", "mtls_upstream_mode_source": "namespace",
			"mtls_client_tls_mode": "DISABLE", "mtls_client_sends": "plaintext"},
		"access-log": {"log_503": 12, "log_5xx": 12, "log_flag_uc": 12,
			"log_details": []string{"upstream_reset_before_response_started{connection_termination}"}},
		"metrics": {"metrics_503_by_flag": []string{"UC=12"}},
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"mtls.plaintext-to-strict"}) {
		t.Fatalf("findings = %v", got)
	}
}

// Several rules of one cause give one finding: highest confidence, all the
// evidence.
func TestFindingsDedupeByCause(t *testing.T) {
	var over map[string]probes.Facts
	for _, c := range causeCases {
		if c.cause == "outlier.all-ejected" {
			over = c.over
		}
	}
	findings := autoFindings(t, over)
	if len(findings) != 1 {
		t.Fatalf("findings = %v", causeIDs(findings))
	}
	var steps []string
	for _, e := range findings[0].Evidence {
		steps = append(steps, e.Step)
	}
	if want := []string{"envoy-clusters", "envoy-config", "destination-rules"}; !reflect.DeepEqual(steps, want) {
		t.Errorf("evidence from steps %v, want %v", steps, want)
	}
	if findings[0].Confidence != runbook.ConfidenceHigh {
		t.Errorf("confidence %s, want the highest (high)", findings[0].Confidence)
	}
	ev := findings[0].Evidence[0]
	if ev.Facts["envoy_hosts_outlier_ejected"] != 3 || ev.Facts["envoy_hosts_total"] != 3 {
		t.Errorf("evidence facts = %v", ev.Facts)
	}
	if !strings.Contains(ev.Reason, "3/3 hosts ejected") {
		t.Errorf("reason not interpolated: %q", ev.Reason)
	}
}

// A wrong port fails every request, and outlier detection then ejects every
// host: both are real, but the port is the root cause and comes first.
func TestConsequenceComesAfterItsCause(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"endpoints":      {"endpoints_port_mismatch": true, "endpoints_mismatched_ports": []string{"80->8081"}},
		"envoy-clusters": {"envoy_hosts_healthy": 0, "envoy_hosts_outlier_ejected": 3, "envoy_ejections_active": 3},
		"access-log":     {"log_503": 40, "log_5xx": 40, "log_flag_uf": 20, "log_flag_uh": 20},
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"service.port-mismatch", "outlier.all-ejected"}) {
		t.Fatalf("findings = %v", got)
	}
	if len(findings[0].ConsequenceOf) != 0 || !reflect.DeepEqual(findings[1].ConsequenceOf, []string{"service.port-mismatch"}) {
		t.Errorf("consequence_of = %v / %v", findings[0].ConsequenceOf, findings[1].ConsequenceOf)
	}
}

// With access logging off (the default profile), the sidecar's metrics still
// show overflow.
func TestOverflowFromMetricsWithoutAccessLog(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"access-log": {"log_lines": 0, "log_2xx": 0},
		"metrics":    {"metrics_503": 120, "metrics_503_rate": 24.0, "metrics_503_by_flag": []string{"UO=120"}},
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"circuit-breaker.overflow"}) {
		t.Fatalf("findings = %v", got)
	}
	if !strings.Contains(findings[0].Evidence[0].Reason, "UO=120") {
		t.Errorf("reason = %q", findings[0].Evidence[0].Reason)
	}
}

// A caller without a sidecar is unknown to istiod; that is not a stale proxy.
func TestSourceWithoutSidecarIsNotStale(t *testing.T) {
	facts := map[string]probes.Facts{
		"target":       {"target_source_has_sidecar": false},
		"proxy-status": {"xds_proxy_known": false, "xds_cds": "UNKNOWN", "xds_eds": "UNKNOWN", "xds_lds": "UNKNOWN", "xds_rds": "UNKNOWN"},
	}
	findings := autoFindings(t, facts)
	if len(findings) != 0 {
		t.Fatalf("findings = %v", causeIDs(findings))
	}
	facts["target"]["target_source_has_sidecar"] = true
	findings = autoFindings(t, facts)
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"xds.stale"}) {
		t.Fatalf("meshed source unknown to istiod: findings = %v", got)
	}
	// syncz lists only the replica's own proxies: with two istiod replicas
	// of which one answered, the proxy missing from it says nothing.
	facts["proxy-status"]["xds_istiod_replicas"] = 2
	facts["proxy-status"]["xds_istiod_asked"] = 1
	findings = autoFindings(t, facts)
	if len(findings) != 0 {
		t.Fatalf("two istiod replicas, proxy unknown to the one that answered: findings = %v", causeIDs(findings))
	}
	// Both answered and neither lists it: the proxy is not connected.
	facts["proxy-status"]["xds_istiod_asked"] = 2
	findings = autoFindings(t, facts)
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"xds.stale"}) {
		t.Fatalf("two istiod replicas asked, neither lists the proxy: findings = %v", got)
	}
}

// An app running as the proxy's UID sends plaintext around its sidecar
// into a STRICT upstream: the UID is the cause, found with certainty (it is
// istio-iptables' own rule); the plaintext into STRICT is its consequence,
// reported after it, not a second root cause whose fixes (a sidecar the
// caller has, PERMISSIVE) miss the point.
func TestAppAsProxyUIDIntoStrictIsTheRootCause(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"mtls": {"mtls_source_sidecar": false, "mtls_source_bypass": "all", "mtls_client_config": "no-sidecar", "mtls_client_sends": "plaintext",
			"mtls_source_bypass_why": []string{"container web runs as UID 1337, the proxy's"},
			"mtls_mismatch":          "plaintext-to-strict", "mtls_upstream_mode": "STRICT", "mtls_upstream_mode_source": "namespace shop/default"},
		"access-log": {"log_tcp": 12, "log_tcp_flag_nr": 12, "log_details": []string{"filter_chain_not_found"}},
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"sidecar.app-runs-as-proxy-uid", "mtls.plaintext-to-strict"}) {
		t.Fatalf("findings = %v, want the UID first, then the plaintext it causes", got)
	}
	root, consequence := findings[0], findings[1]
	if root.Confidence != runbook.ConfidenceHigh || len(root.ConsequenceOf) != 0 {
		t.Errorf("root finding %s at %s, consequence of %v", root.Cause, root.Confidence, root.ConsequenceOf)
	}
	if !reflect.DeepEqual(consequence.ConsequenceOf, []string{"sidecar.app-runs-as-proxy-uid"}) {
		t.Errorf("mtls.plaintext-to-strict consequence of %v, want the UID", consequence.ConsequenceOf)
	}
	if why := consequence.Evidence[0].Reason; !strings.Contains(why, "goes around its sidecar") {
		t.Errorf("the plaintext's reason %q does not say the app goes around its sidecar", why)
	}
}

// A readiness probe STRICT resets keeps every endpoint unready: the
// probe is the cause, the empty endpoints its consequence (fix the probe,
// not the app or the readiness check).
func TestBlockedReadinessLeavesEndpointsNoneReadyAConsequence(t *testing.T) {
	findings := autoFindings(t, map[string]probes.Facts{
		"health-probes": {"healthprobe_pods": 3, "healthprobe_blocked_kinds": []string{"readiness"},
			"healthprobe_blocked_by_strict": []string{"orders readiness httpGet :8080/healthz/ready on 3 pods: not rewritten, port 8080 captured, STRICT (namespace shop/default)"},
			"healthprobe_kubelet_resets":    500},
		"endpoints": {"endpoints_ready": 0, "endpoints_not_ready": 3,
			"endpoints_not_ready_pods": []string{"orders-1 ContainersNotReady", "orders-2 ContainersNotReady", "orders-3 ContainersNotReady"}},
		"envoy-clusters": {"envoy_hosts_total": 0, "envoy_hosts_healthy": 0},
		"access-log":     {"log_503": 30, "log_5xx": 30, "log_flag_uh": 30},
	})
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"probe.blocked-by-strict", "endpoints.none-ready"}) {
		t.Fatalf("findings = %v, want the probe, then the endpoints it leaves unready", got)
	}
	if !reflect.DeepEqual(findings[1].ConsequenceOf, []string{"probe.blocked-by-strict"}) {
		t.Errorf("endpoints.none-ready consequence of %v", findings[1].ConsequenceOf)
	}
	if findings[0].Confidence != runbook.ConfidenceHigh {
		t.Errorf("probe.blocked-by-strict at %s, want high: istiod builds no plaintext chain under STRICT", findings[0].Confidence)
	}
}

// The ambient drain race is a finding only where failures went to pods that
// had ended, during a rollout, with no app preStop: the configuration
// alone, failures to running pods, or an app that has its preStop are not.
func TestAmbientDrainNeedsFailuresToEndingPods(t *testing.T) {
	rollout := probes.Facts{"shutdown_classic_sidecar": false, "shutdown_at_risk": false, "shutdown_ambient_pods": 3,
		"shutdown_pods_terminating": 1, "shutdown_terminating_ips": []string{"10.0.1.11"},
		"shutdown_pod_ips": []string{"10.0.1.11", "10.0.1.12", "10.0.1.13"}}
	refused := func(ips ...string) probes.Facts {
		return probes.Facts{"ztunnel_entries": 40, "ztunnel_completed": 40 - len(ips), "ztunnel_refused": len(ips),
			"ztunnel_refused_tunnel_ips": ips, "ztunnel_failures": []string{"connection-refused=1"}}
	}
	withPreStop := probes.Facts{}
	for k, v := range rollout {
		withPreStop[k] = v
	}
	withPreStop["shutdown_ambient_app_prestop"] = true
	gatewayRollout := probes.Facts{}
	for k, v := range rollout {
		gatewayRollout[k] = v
	}
	gatewayRollout["shutdown_terminating_ips"] = []string{}
	gatewayRollout["shutdown_pod_ips"] = []string{"10.0.1.12", "10.0.1.13", "10.0.1.14"}
	noRollout := probes.Facts{}
	for k, v := range gatewayRollout {
		noRollout[k] = v
	}
	noRollout["shutdown_pods_terminating"] = 0
	for _, c := range []struct {
		name string
		over map[string]probes.Facts
		want []string
	}{
		{"rollout without failures", map[string]probes.Facts{"shutdown-order": rollout, "ztunnel": refused()}, nil},
		{"refused by a running pod", map[string]probes.Facts{"shutdown-order": rollout, "ztunnel": refused("10.0.1.12")}, nil},
		{"refused by the terminating pod", map[string]probes.Facts{"shutdown-order": rollout, "ztunnel": refused("10.0.1.11")},
			[]string{"ambient.drain-before-removal"}},
		{"the app has a preStop", map[string]probes.Facts{"shutdown-order": withPreStop, "ztunnel": refused("10.0.1.11")}, nil},
		// The gateway tunnelled to an IP no pod of the Service has any more,
		// while another old pod is still terminating.
		{"gateway 503 to a vanished pod", map[string]probes.Facts{"shutdown-order": gatewayRollout, "ztunnel": refused(),
			"target": {"target_source_gateway": true}, "dataplane": {"dataplane_source": "gateway"},
			"access-log": {"log_503": 6, "log_5xx": 6, "log_flag_uf": 6, "log_tunnel_failed_ips": []string{"10.0.1.11"}}},
			[]string{"ambient.drain-before-removal"}},
		{"gateway 503 to a running pod", map[string]probes.Facts{"shutdown-order": gatewayRollout, "ztunnel": refused(),
			"target": {"target_source_gateway": true}, "dataplane": {"dataplane_source": "gateway"},
			"access-log": {"log_503": 6, "log_5xx": 6, "log_flag_uf": 6, "log_tunnel_failed_ips": []string{"10.0.1.12"}}},
			nil},
		{"gateway 503 to a vanished pod, no rollout", map[string]probes.Facts{"shutdown-order": noRollout, "ztunnel": refused(),
			"target": {"target_source_gateway": true}, "dataplane": {"dataplane_source": "gateway"},
			"access-log": {"log_503": 6, "log_5xx": 6, "log_flag_uf": 6, "log_tunnel_failed_ips": []string{"10.0.1.11"}}},
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			findings := autoFindings(t, ambientCase(c.over))
			got := causeIDs(findings)
			for _, f := range findings {
				if f.Cause == "ambient.drain-before-removal" && f.Confidence != runbook.ConfidenceMedium {
					t.Errorf("confidence %s, want medium: the race is timing, not configuration", f.Confidence)
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("findings = %v, want %v", got, c.want)
			}
		})
	}
}

// A reset on a pooled HBONE connection is the reused IP's at medium only
// when every IP reset is now a pod younger than the caller's Envoy that
// started before the resets; low otherwise, never during a rollout (the
// drain race's), and the app's idle reset is no longer certain from UC
// that all went through tunnels.
func TestHBONEPoolIPReusedNeedsYoungPods(t *testing.T) {
	gateway := func(log probes.Facts) map[string]probes.Facts {
		base := probes.Facts{"log_503": 4, "log_5xx": 4, "log_flag_uc": 4,
			"log_details": []string{"upstream_reset_before_response_started{connection_termination}"}}
		for k, v := range log {
			base[k] = v
		}
		return map[string]probes.Facts{"target": {"target_source_gateway": true}, "dataplane": {"dataplane_source": "gateway"}, "access-log": base}
	}
	resets := func(known bool, reused ...string) probes.Facts {
		return probes.Facts{"log_tunnel_failed_ips": []string{"10.0.1.12", "10.0.1.13"}, "log_tunnel_resets": 4,
			"log_tunnel_reset_ips": []string{"10.0.1.12", "10.0.1.13"}, "log_tunnel_reset_reused_ips": append([]string{}, reused...),
			"log_tunnel_reset_times_known": known}
	}
	for _, c := range []struct {
		name          string
		over          map[string]probes.Facts
		want          runbook.Confidence // of ambient.hbone-pool-ip-reused, "" for none
		idleResetHigh bool
	}{
		{"every IP a young pod", gateway(resets(true, "10.0.1.12", "10.0.1.13")), runbook.ConfidenceMedium, false},
		{"one IP an older pod", gateway(resets(true, "10.0.1.12")), runbook.ConfidenceLow, false},
		{"times not read", gateway(resets(false, "10.0.1.12", "10.0.1.13")), runbook.ConfidenceLow, false},
		{"UC without tunnels", gateway(probes.Facts{}), "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got runbook.Confidence
			idleHigh := false
			for _, f := range autoFindings(t, ambientCase(c.over)) {
				switch f.Cause {
				case "ambient.hbone-pool-ip-reused":
					got = f.Confidence
				case "upstream.idle-reset":
					idleHigh = f.Confidence == runbook.ConfidenceHigh
				}
			}
			if got != c.want {
				t.Errorf("ambient.hbone-pool-ip-reused at %q, want %q", got, c.want)
			}
			if idleHigh != c.idleResetHigh {
				t.Errorf("upstream.idle-reset high %v, want %v", idleHigh, c.idleResetHigh)
			}
		})
	}
	// A rollout: the resets to the ending pod are the drain race's.
	rollout := gateway(resets(true, "10.0.1.12", "10.0.1.13"))
	rollout["shutdown-order"] = probes.Facts{"shutdown_classic_sidecar": false, "shutdown_at_risk": false, "shutdown_ambient_pods": 3,
		"shutdown_pods_terminating": 1, "shutdown_terminating_ips": []string{"10.0.1.12"}, "shutdown_pod_ips": []string{"10.0.1.12", "10.0.1.13", "10.0.1.14"}}
	rollout["endpoints"] = probes.Facts{"endpoints_terminating": 1}
	got := causeIDs(autoFindings(t, ambientCase(rollout)))
	if !slices.Contains(got, "ambient.drain-before-removal") || slices.Contains(got, "ambient.hbone-pool-ip-reused") {
		t.Errorf("during a rollout: findings %v, want the drain race and not the reused IP", got)
	}
}

// A pod that started before its node's ztunnel was Ready is medium with
// restarts since, low with failed connections alone, and no finding
// without either: the start is past, and the pods' times are its only
// evidence.
func TestPodStartedBeforeZtunnelNeedsRestartsOrFailures(t *testing.T) {
	for _, c := range []struct {
		name string
		over probes.Facts
		want runbook.Confidence
	}{
		{"restarted", probes.Facts{"ztunnel_started_before_ready": []string{"shop/orders-1"}, "ztunnel_started_before_ready_restarted": []string{"shop/orders-1"}}, runbook.ConfidenceMedium},
		{"failures, no restart", probes.Facts{"ztunnel_started_before_ready": []string{"shop/orders-1"}, "ztunnel_entries": 180, "ztunnel_completed": 170,
			"ztunnel_failures": []string{"connection-failed=10"}}, runbook.ConfidenceLow},
		{"neither", probes.Facts{"ztunnel_started_before_ready": []string{"shop/orders-1"}}, ""},
		{"no such pod", probes.Facts{"ztunnel_entries": 180, "ztunnel_completed": 170, "ztunnel_failures": []string{"connection-failed=10"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got runbook.Confidence
			for _, f := range autoFindings(t, ambientCase(map[string]probes.Facts{"ztunnel": c.over})) {
				if f.Cause == "ambient.pod-started-before-ztunnel" {
					got = f.Confidence
				}
			}
			if got != c.want {
				t.Errorf("ambient.pod-started-before-ztunnel at %q, want %q", got, c.want)
			}
		})
	}
}

// The cause tables of README.md ("What it diagnoses": what alerting may key
// on) and ARCHITECTURE.md (the catalogue) are the causes' documentation: a
// cause added to the runbook and not to them went undocumented for eleven
// causes of issue 29 before this test.
func TestDocumentedCauseTablesNameEveryCause(t *testing.T) {
	for _, doc := range []string{"../README.md", "../ARCHITECTURE.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "| `") {
				rows[strings.Trim(strings.SplitN(line, "|", 3)[1], " `")] = true
			}
		}
		for _, id := range assets.Causes {
			if !rows[id] {
				t.Errorf("%s: no row in the cause table for %s", doc, id)
			}
		}
	}
}

// With istiod's /debug/networkz read (it lists no gateway for the
// network), the gateway causes stand on istiod's own list: high. A
// collision of cluster IDs is medium (two contexts may be one cluster).
func TestMultiClusterCausesOnIstiodsWord(t *testing.T) {
	g := load503(t)
	caseOf := func(cause string) map[string]probes.Facts {
		for _, c := range causeCases {
			if c.cause == cause {
				return c.over
			}
		}
		t.Fatalf("no case for %s", cause)
		return nil
	}
	withFacts := func(over map[string]probes.Facts, add probes.Facts) map[string]probes.Facts {
		out := map[string]probes.Facts{}
		for probe, facts := range over {
			out[probe] = probes.Facts{}
			for k, v := range facts {
				out[probe][k] = v
			}
		}
		for k, v := range add {
			out["multicluster"][k] = v
		}
		return out
	}
	networkz := probes.Facts{"mc_networkz_read": true, "mc_istiod_gateways": []string{}, "mc_gateway_kept": []string{}}
	for _, c := range []struct {
		cause string
		over  map[string]probes.Facts
		conf  runbook.Confidence
	}{
		{"multicluster.gateway-unusable", withFacts(caseOf("multicluster.gateway-unusable"), networkz), runbook.ConfidenceHigh},
		{"multicluster.gateway-hostname-unresolved", withFacts(caseOf("multicluster.gateway-hostname-unresolved"), networkz), runbook.ConfidenceHigh},
		{"multicluster.remote-secret-missing", map[string]probes.Facts{"multicluster": {
			"mc_cluster_id_collision":  []string{"c2, c3: their pods all name cluster ID west: istiod reads one cluster per ID"},
			"mc_remote_secret_missing": []string{}, "mc_remote_secret_stale": []string{}, "mc_istiod_clusters": []string{"Kubernetes (config cluster): synced", "west (secret istio-system/istio-remote-secret-west): synced"}}},
			runbook.ConfidenceMedium},
	} {
		t.Run(c.cause, func(t *testing.T) {
			s := newSession(t, g, newRecorded(with(healthy(), c.over)), runbook.ModeAuto)
			findings, err := s.Auto(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := causeIDs(findings); !reflect.DeepEqual(got, []string{c.cause}) {
				t.Fatalf("findings = %v, want only %s", got, c.cause)
			}
			if findings[0].Confidence != c.conf {
				t.Errorf("confidence = %s, want %s", findings[0].Confidence, c.conf)
			}
		})
	}
}

// Different trust domains without an alias, the roots shared: the same
// cause as disjoint roots, at medium (it works while the SANs istiod
// builds match the certificates).
func TestTrustDomainAloneIsMedium(t *testing.T) {
	g := load503(t)
	over := map[string]probes.Facts{"multicluster-trust": {"mctrust_domain_differs": []string{"c2: td2 (the caller's td1, aliases -)"}}}
	s := newSession(t, g, newRecorded(with(healthy(), over)), runbook.ModeAuto)
	findings, err := s.Auto(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := causeIDs(findings); !reflect.DeepEqual(got, []string{"multicluster.trust-mismatch"}) || findings[0].Confidence != runbook.ConfidenceMedium {
		t.Fatalf("findings = %v", got)
	}
}

// In a triage given other clusters, a selector that matches no pod here
// is service.no-selector-match only when the other clusters hold no
// endpoint of the Service either: istiod merges theirs into it. Their
// endpoints not read leaves it undecided, never high.
func TestNoSelectorMatchAcrossClusters(t *testing.T) {
	g := load503(t)
	for name, tc := range map[string]struct {
		remote any // target_remote_endpoints; nil: not read
		want   []string
	}{
		"the other cluster holds the pods": {1, nil},
		"none anywhere":                    {0, []string{"service.no-selector-match"}},
		"the other cluster not read":       {nil, nil},
	} {
		facts := with(healthy(), map[string]probes.Facts{
			"target":    {"target_pods_selected": 0, "target_endpoints": 0, "target_pods_with_sidecar": 0, "target_remote_endpoints": tc.remote},
			"endpoints": {"endpoints_ready": 0},
		})
		rec := newRecorded(facts)
		if tc.remote == nil {
			// Exact: the fact not read stays absent.
			delete(facts["target"], "target_remote_endpoints")
			rec.Exact = true
		}
		s := newSession(t, g, rec, runbook.ModeAuto)
		findings, err := s.Auto(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := causeIDs(findings)
		if !reflect.DeepEqual(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
			t.Errorf("%s: findings %v, want %v", name, got, tc.want)
		}
	}
}
