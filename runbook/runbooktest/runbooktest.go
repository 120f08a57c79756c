// Package runbooktest supplies recorded probe results to runbook sessions in
// tests: a healthy service's facts to start from, a Runner that serves them
// without a cluster, a deterministic clock and an in-memory sink. The TUI and
// report tests use it as well as the engine's own.
package runbooktest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

// Healthy is a service in good shape as every probe would report it: three
// meshed pods behind a PERMISSIVE upstream, default classic sidecars (which
// are "at risk" at shutdown but show no rollout), a clean access log.
func Healthy() map[string]probes.Facts {
	return map[string]probes.Facts{
		"target": {
			"target_service_found": true, "target_selector_empty": false,
			"target_pods_selected": 3, "target_endpoints": 3, "target_pods_with_sidecar": 3, "target_pods_without_sidecar": 0,
			"target_namespace_injection": "enabled", "target_ports": []string{"80/8080/TCP"}, "target_port_found": true,
			"target_source_named": true, "target_source_found": true, "target_source_has_sidecar": true,
			"target_source_gateway": false,
			// Cluster 2 (the multicluster facts below) holds orders-b.
			"target_remotes_given": true, "target_remote_endpoints": 1,
		},
		"endpoints": {
			"endpoints_ready": 3, "endpoints_not_ready": 0, "endpoints_terminating": 0,
			"endpoints_not_ready_pods": []string{}, "endpoints_port_mismatch": false,
			"endpoints_mismatched_ports": []string{}, "endpoints_source": "EndpointSlice", "endpoints_total": 3, "endpoints_external_name": false,
		},
		"envoy-clusters": {
			"envoy_cluster_present": true, "envoy_clusters": []string{"outbound|80||web.shop.svc.cluster.local"},
			"envoy_hosts_total": 3, "envoy_hosts_healthy": 3, "envoy_hosts_outlier_ejected": 0,
			"envoy_hosts_active_hc_failed": 0, "envoy_hosts_eds_unhealthy": 0, "envoy_empty_clusters": []string{},
			"envoy_clusters_all_ejected": []string{},
			"envoy_rq_pending_overflow":  0, "envoy_rq_active_overflow": 0, "envoy_rq_overflow": 0, "envoy_cx_overflow": 0, "envoy_ejections_active": 0, "envoy_cx_connect_fail": 0,
			"envoy_xds_rejected": 0,
		},
		"envoy-listeners": {"listener_found": true, "listener_names": []string{"0.0.0.0_80"}},
		"envoy-config": {
			"config_cluster_found": true, "config_tls": "auto", "config_outlier_consecutive_5xx": 0,
			"config_outlier_consecutive_gateway_failure": 0, "config_outlier_max_ejection_percent": 0, "config_max_connections": 0,
			"config_max_pending_requests": 0, "config_idle_timeout_s": 0, "config_pool_tiny": false,
		},
		"access-log": {
			"log_lines": 200, "log_unparsed": 0, "log_5xx": 0, "log_503": 0, "log_2xx": 200,
			"log_flag_uh": 0, "log_flag_uf": 0, "log_flag_uo": 0, "log_flag_nr": 0, "log_flag_nc": 0,
			"log_flag_urx": 0, "log_flag_uc": 0, "log_flag_ut": 0, "log_flag_dc": 0, "log_flag_lr": 0, "log_flag_ur": 0,
			"log_details": []string{}, "log_transport_failures": []string{}, "log_blackhole": 0,
			"log_blackhole_hosts": []string{}, "log_connection_refused": 0, "log_tunnel_failed_ips": []string{},
			"log_tunnel_resets": 0, "log_tunnel_reset_ips": []string{}, "log_tunnel_reset_reused_ips": []string{}, "log_tunnel_reset_times_known": false, "log_hbone_idle_timeout": "1h0m0s", "log_xds_rejected": 0, "log_xds_rejected_reason": "",
			"log_http10_rejected": 0, "log_http10_hops": []string{}, "log_http10_accepted_by": []string{},
			"log_nc500": 0, "log_nc500_routes": []string{},
		},
		"proxy-status": {
			"xds_proxy_known": true, "xds_stale_types": []string{}, "xds_cds": "SYNCED", "xds_eds": "SYNCED",
			"xds_lds": "SYNCED", "xds_rds": "SYNCED", "xds_istiod_version": "1.24.2-5f8a1e3c-Clean", "xds_istiod_replicas": 1, "xds_istiod_asked": 1,
			"xds_rejected_types": []string{}, "xds_last_error": "", "xds_proxy_version": "1.24.2", "xds_version_skew": 0, "xds_skew_supported": true,
			"xds_edsz_endpoints": 3,
		},
		"mtls": {
			"mtls_upstream_mode": "PERMISSIVE", "mtls_upstream_mode_source": "default", "mtls_client_tls_mode": "none",
			"mtls_auto": true, "mtls_client_sends": "mtls", "mtls_upstream_sidecar": true,
			"mtls_source_sidecar": true, "mtls_mismatch": "none", "mtls_client_config": "visible", "mtls_undecided": 0,
			"mtls_source_bypass": "none", "mtls_source_bypass_why": []string{},
		},
		"destination-rules": {
			"dr_found": false, "dr_names": []string{}, "dr_subsets_without_pods": []string{}, "dr_subsets_without_pods_routed": []string{}, "dr_subsets_undecided": []string{}, "vs_routed_hidden_services": []string{}, "vs_routed_missing_hosts": []string{}, "dr_rules_partial": "", "dr_routes_unknown": "", "vs_found": false,
			"vs_undefined_subsets": []string{}, "dr_outlier_consecutive_5xx": 0, "dr_outlier_max_ejection_percent": 0,
			"dr_outlier_aggressive": false, "dr_pool_tiny": false, "dr_pool_limits": []string{}, "dr_idle_timeout_s": 0,
			"dr_outlier_consecutive_gateway_errors": 0, "dr_subset_no_pods_percent": 0, "vs_undefined_subset_percent": 0,
			"visibility_visible": true, "visibility_hidden_by": "", "visibility_fallback": "",
			"mesh_route_backend_not_found": []string{}, "mesh_route_backend_port_missing": []string{}, "mesh_route_broken_percent": 0,
		},
		"service-entry":  {"se_registry_only": false, "se_rules_partial": "", "se_unregistered_hosts": []string{}, "se_hidden_hosts": []string{}, "se_in_cluster_hosts": []string{}},
		"port-exclusion": {"exclusion_outbound_ports": []string{}, "exclusion_inbound_ports": []string{}, "exclusion_target_port_bypassed": false},
		// Sidecars only: the ambient steps are not walked (AmbientHealthy).
		"dataplane": {
			"dataplane_ambient": false, "dataplane_source": "sidecar", "dataplane_source_not_enrolled": false,
			"dataplane_target": "sidecar", "dataplane_target_ambient": 0, "dataplane_target_not_enrolled": 0,
			"dataplane_not_enrolled_pods": []string{}, "waypoint_named": false, "waypoint_name": "", "waypoint_state": "none",
			"waypoint_bound_condition": "", "waypoint_traversed": false,
		},
		"ambient-policy": {},
		"ztunnel":        {},
		"waypoint":       {},
		"startup-order": {
			"startup_native_sidecar": false, "startup_hold_application": false, "startup_app_before_proxy": 1,
			"startup_early_restarts": 0, "startup_restart_reasons": []string{}, "startup_connection_refused": 0,
		},
		"shutdown-order": {
			"shutdown_classic_sidecar": true, "shutdown_drain_configured": false, "shutdown_app_prestop": false,
			"shutdown_pods_terminating": 0, "shutdown_at_risk": true, "shutdown_ambient_pods": 0, "shutdown_ambient_app_prestop": false,
			"shutdown_terminating_ips": []string{}, "shutdown_pod_ips": []string{"10.0.1.11", "10.0.1.12", "10.0.1.13"},
		},
		"metrics": {
			"metrics_reporter": "source", "metrics_requests": 5000, "metrics_503": 0,
			"metrics_request_rate": 20.0, "metrics_503_rate": 0.0, "metrics_5xx_rate": 0.0,
			"metrics_window_s": 5.0, "metrics_503_by_flag": []string{}, "metrics_cx_connect_fail": 0,
		},
		// Run in every triage, walked only when the caller is a gateway
		// (target_source_gateway): nothing to report for a sidecar.
		"gateway-routes": {},
		"versions": {
			"versions_kubernetes": "v1.30.4", "versions_native_sidecar_supported": true,
			"versions_istiod": "1.24.2", "versions_native_sidecars_enabled": false,
		},
		// Issue 29, the sidecar and the app's side: probes rewritten to
		// pilot-agent.
		"health-probes": {
			"healthprobe_pods": 3, "healthprobe_blocked_by_strict": []string{}, "healthprobe_blocked_kinds": []string{},
			"healthprobe_rewrite_off": "", "healthprobe_tcp_unproven": []string{}, "healthprobe_prober_missing": []string{},
			"healthprobe_host_set": []string{}, "healthprobe_kubelet_resets": 0,
		},
		// Issue 29: the app listens where the sidecar dials it.
		"app-listen": {
			"applisten_pods": 3, "applisten_loopback": []string{}, "applisten_loopback_from_spec": []string{},
			"applisten_inbound_refused": 0, "applisten_sidecar_loopback": []string{}, "applisten_sidecars_read": true,
		},
		// Issue 29: the port is what its server speaks.
		"port-protocol": {
			"portproto_ports": []string{"8080 http: HTTP by name"}, "portproto_server_first": []string{}, "portproto_server_first_ports": []string{},
			"portproto_client_errors": 0, "portproto_caller_logs_read": true,
		},
		// Two clusters on two networks, each with its east-west gateway:
		// the remote pods reached through cluster 2's gateway.
		"multicluster": {
			"mc_remotes_given": true, "mc_remotes_read": 1, "mc_remotes_unread": []string{},
			"mc_endpoints":     []string{"c1: 10.1.0.5 (pod orders-a) network network1: direct", "c2: 10.2.0.5 (pod orders-b) network network2: via gateway 172.18.2.10:15443"},
			"mc_remote_direct": []string{}, "mc_via_gateway": 1, "mc_dropped": []string{}, "mc_undecided": []string{},
			"mc_label_missing": []string{}, "mc_label_disagrees": []string{}, "mc_gateway_hostname": []string{}, "mc_gateway_unusable": []string{}, "mc_gateway_port_missing": []string{},
			// istiod (clusterz, networkz) reads cluster 2, synced, and
			// lists its gateway.
			"mc_istiod_asked":          "istiod-5f9c7d8b6-x2x9p, the replica the caller shop/client-1 is connected to (its syncz lists it)",
			"mc_istiod_clusters":       []string{"Kubernetes (config cluster): synced", "cluster2 (secret istio-system/istio-remote-secret-cluster2): synced"},
			"mc_remote_secret_missing": []string{}, "mc_remote_secret_stale": []string{}, "mc_cluster_id_collision": []string{}, "mc_istiod_clusters_not_given": []string{},
			"mc_networkz_read": true, "mc_istiod_gateways": []string{"network2: 172.18.2.10:15443 (cluster cluster2)"}, "mc_gateway_kept": []string{},
			// Its endpoint index holds cluster 2's endpoints as they are.
			"mc_istiod_shard_behind": []string{}, "mc_istiod_shard_lacks": []string{},
		},
		// Cluster 2's east-west gateway has the AUTO_PASSTHROUGH server.
		"eastwest-passthrough": {
			"ewpt_gateways_checked": 1, "ewpt_not_passthrough": []string{}, "ewpt_unknown": []string{},
		},
		// Both clusters share a plugged-in root and the trust domain.
		"multicluster-trust": {
			"mctrust_clusters_compared": 1, "mctrust_roots_disjoint": []string{}, "mctrust_domain_differs": []string{}, "mctrust_unknown": []string{},
		},
		// The Service is global in both clusters and names the same
		// waypoint in each.
		"multicluster-waypoint": {
			"mcwp_clusters_compared": 1, "mcwp_label_differs": []string{}, "mcwp_gateway_missing": []string{}, "mcwp_unknown": []string{},
			"mcwp_istiod_multinetwork": true,
		},
		// istiod lists cluster 2's classic gateway (15443), and the
		// caller holds it there.
		"multicluster-hbone": {
			"mchbone_networkz_read": true, "mchbone_gateways": []string{}, "mchbone_clusters_read": true, "mchbone_caller_endpoints": []string{}, "mchbone_unknown": []string{},
		},
		// The caller's cluster holds an istio-remote Gateway for network2
		// with an HBONE listener and an address: ztunnel's gateway there.
		"multicluster-ambient-gateway": {
			"mcamb_caller_network": "network1", "mcamb_remote_endpoints": []string{"c2: 10.2.0.5 (pod orders-b) network network2"}, "mcamb_gateways_read": true,
			"mcamb_gateways": []string{"c1: istio-system/network2 (class istio-remote, network network2): 172.18.2.20:15008"}, "mcamb_networks_without_gateway": []string{}, "mcamb_unknown": []string{},
			// istiod runs with ambient multi-network.
			"mcamb_istiod_multinetwork": true,
		},
	}
}

// With returns base with the facts of over replaced, probe by probe.
func With(base map[string]probes.Facts, over map[string]probes.Facts) map[string]probes.Facts {
	for probe, facts := range over {
		for k, v := range facts {
			base[probe][k] = v
		}
	}
	return base
}

// Recorded serves recorded results instead of running probes: the facts
// given, completed with the zero value of any fact a probe declares that the
// fixture does not set (a probe added a fact after this test was written),
// status pass unless statuses says otherwise. Each call counts per probe.
type Recorded struct {
	mu       sync.Mutex
	facts    map[string]probes.Facts
	statuses map[string]probes.Status
	summary  map[string]string
	commands map[string][]string
	calls    map[string]int
	// Exact serves only the facts given; otherwise a fact a probe declares
	// and the fixture does not set comes as its zero value. Golden files
	// use Exact so a probe declaring a new fact does not change them.
	Exact bool
	// Next, when set, replaces a probe's facts for its runs after the
	// first (a re-run after a fix sees fresh data).
	Next map[string]probes.Facts
}

// NewRecorded serves facts, by probe ID.
func NewRecorded(facts map[string]probes.Facts) *Recorded {
	return &Recorded{facts: facts, statuses: map[string]probes.Status{}, summary: map[string]string{}, commands: map[string][]string{}, calls: map[string]int{}}
}

// Fail makes probe's runs end with status and summary (its facts are still
// served: the engine must not trust them).
func (r *Recorded) Fail(probe string, status probes.Status, summary string) *Recorded {
	r.statuses[probe] = status
	r.summary[probe] = summary
	return r
}

// Commands sets the commands probe's results give.
func (r *Recorded) Commands(probe string, cmds ...string) *Recorded {
	r.commands[probe] = cmds
	return r
}

// Summarize sets the summary of probe's runs.
func (r *Recorded) Summarize(probe, summary string) *Recorded {
	r.summary[probe] = summary
	return r
}

// Calls is how many times probe ran.
func (r *Recorded) Calls(probe string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[probe]
}

// Run is a runbook.Runner.
func (r *Recorded) Run(_ context.Context, p probes.Probe, _ cluster.Cluster, _ cluster.Target) probes.Result {
	m := p.Meta()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[m.ID]++
	src := r.facts[m.ID]
	if r.calls[m.ID] > 1 && r.Next != nil && r.Next[m.ID] != nil {
		src = r.Next[m.ID]
	}
	facts := probes.Facts{}
	for _, f := range m.Facts {
		if v, ok := src[f.Name]; ok {
			facts[f.Name] = v
		} else if !r.Exact {
			facts[f.Name] = f.Type.Zero()
		}
	}
	status := probes.StatusPass
	if s, ok := r.statuses[m.ID]; ok {
		status = s
	}
	summary := r.summary[m.ID]
	if summary == "" {
		summary = fmt.Sprintf("%s: recorded", m.ID)
	}
	return probes.Result{
		Probe: m.ID, Status: status, Summary: summary, Facts: facts,
		Evidence: probes.Evidence{Columns: []string{"probe"}, Rows: [][]string{{m.ID}}},
		Commands: r.commands[m.ID],
		Duration: 12 * time.Millisecond,
	}
}

// Clock ticks one second per reading from a fixed start.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at 2025-03-14T02:00:00Z.
func NewClock() *Clock {
	return &Clock{t: time.Date(2025, 3, 14, 2, 0, 0, 0, time.UTC)}
}

// Now is a Config.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// Sink keeps events in memory.
type Sink struct {
	mu     sync.Mutex
	events []runbook.Event
}

// Events is what the sink received.
func (m *Sink) Events() []runbook.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]runbook.Event(nil), m.events...)
}

func (m *Sink) Write(ev runbook.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, ev)
	return nil
}

// Target is the target of the recorded runs.
var Target = cluster.Target{Namespace: "shop", Service: "web", Port: 80, Source: &cluster.PodRef{Namespace: "shop", Name: "client-1"}}

// CauseIDs lists the findings' cause IDs in order.
func CauseIDs(fs []runbook.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Cause)
	}
	return out
}

// AmbientHealthy is Healthy with the caller and the Service's pods in
// ambient, the Service bound to a ready waypoint the caller goes through,
// and ztunnel and the waypoint reporting clean connections.
func AmbientHealthy() map[string]probes.Facts {
	return With(Healthy(), map[string]probes.Facts{
		// The other cluster holds no endpoint of the Service.
		"target": {"target_pods_with_sidecar": 0, "target_pods_without_sidecar": 3, "target_source_has_sidecar": false,
			"target_namespace_injection": "none", "target_remote_endpoints": 0},
		"dataplane": {"dataplane_ambient": true, "dataplane_source": "ambient", "dataplane_target": "ambient", "dataplane_target_ambient": 3,
			"waypoint_named": true, "waypoint_name": "shop/web-waypoint", "waypoint_state": "bound", "waypoint_ready_pods": 1,
			"waypoint_bound_condition": "True", "waypoint_traversed": true, "cilium_socket_lb": "not-cilium",
			"eks_sg_strict_unready": []string{}},
		"ambient-policy": {"hbone_netpol_blocked": false, "hbone_netpol_policies": []string{}, "hbone_blocked_hops": []string{},
			"authz_denied": false, "authz_denied_by": "", "authz_reason": "", "authz_waypoint_admitted": true,
			"authz_policies": []string{"ALLOW shop/web-via-waypoint"}, "authz_waypoint_policies": []string{}},
		"ztunnel": {"ztunnel_pods": 2, "ztunnel_nodes_without": []string{}, "ztunnel_entries": 180, "ztunnel_completed": 180,
			"ztunnel_hbone_timeouts": 0, "ztunnel_rejections": 0, "ztunnel_strict_rejections": 0, "ztunnel_sidecar_rejections": 0, "ztunnel_unauthorized": 0,
			"ztunnel_denied_by": []string{}, "ztunnel_rejected_sources": []string{}, "ztunnel_refused": 0, "ztunnel_failures": []string{},
			"ztunnel_refused_tunnel_ips": []string{}, "ztunnel_drained": 0, "ztunnel_started_before_ready": []string{}, "ztunnel_started_before_ready_restarted": []string{},
			"ztunnel_config_read": true, "ztunnel_service_waypoint": "shop/web-waypoint.shop.svc.cluster.local", "ztunnel_target_plaintext": 0},
		"waypoint": {"waypoint_pods_read": 1, "waypoint_cluster_present": true, "waypoint_hosts_total": 3, "waypoint_hosts_healthy": 3,
			"waypoint_log_entries": 180, "waypoint_log_503": 0, "waypoint_log_flags": []string{}, "waypoint_rbac_denied": 0,
			"waypoint_rbac_policies": []string{}},
		"mtls": {"mtls_source_sidecar": false, "mtls_upstream_sidecar": false, "mtls_client_config": "no-sidecar"},
		"shutdown-order": {"shutdown_classic_sidecar": false, "shutdown_drain_configured": false, "shutdown_app_prestop": false,
			"shutdown_at_risk": false, "shutdown_ambient_pods": 3},
		// Every endpoint on the caller's network.
		"multicluster-ambient-gateway": {"mcamb_remote_endpoints": []string{}, "mcamb_gateways": []string{}},
	})
}

// BumpGeneration is what the API server does to an object a patch
// changes (before and after as JSON): a spec change moves
// metadata.generation up by one where the object keeps one, so the
// status istiod wrote before reads as stale. Tests that apply fixes
// outside the product apply them as the API server would.
func BumpGeneration(t testing.TB, before, after []byte) []byte {
	t.Helper()
	var b, a map[string]any
	if err := json.Unmarshal(before, &b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &a); err != nil {
		t.Fatal(err)
	}
	meta, _ := a["metadata"].(map[string]any)
	g, _ := meta["generation"].(float64)
	if g == 0 || reflect.DeepEqual(b["spec"], a["spec"]) {
		return after
	}
	meta["generation"] = g + 1
	out, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
