package probes

import "context"

// EnvoyClustersProbe reads the source sidecar's /clusters?format=json and
// /stats for the target's outbound|PORT|SUBSET|HOST clusters: what Envoy
// thinks of each upstream host, and whether it overflowed its limits.
type EnvoyClustersProbe struct{}

func (EnvoyClustersProbe) Meta() Meta {
	return Meta{
		ID:    "envoy-clusters",
		Title: "Envoy upstream hosts and health (source sidecar)",
		Reads: []string{"pods/portforward (Envoy admin /clusters, /stats)", "pods/exec (pilot-agent fallback)"},
		Facts: []FactSpec{
			{"envoy_cluster_present", FactBool, "the source proxy has an outbound cluster for the target host and port"},
			{"envoy_clusters", FactList, "the outbound cluster names found for the target"},
			{"envoy_hosts_total", FactInt, "upstream hosts across those clusters"},
			{"envoy_hosts_healthy", FactInt, "hosts with no failure health flag"},
			{"envoy_hosts_outlier_ejected", FactInt, "hosts flagged failed_outlier_check"},
			{"envoy_hosts_active_hc_failed", FactInt, "hosts flagged failed_active_hc"},
			{"envoy_hosts_eds_unhealthy", FactInt, "hosts whose eds_health_status is not HEALTHY"},
			{"envoy_empty_clusters", FactList, "target clusters with zero hosts (a subset selecting no pods shows here)"},
			{"envoy_rq_pending_overflow", FactInt, "upstream_rq_pending_overflow summed over the target clusters"},
			{"envoy_cx_overflow", FactInt, "upstream_cx_overflow summed over the target clusters"},
			{"envoy_ejections_active", FactInt, "outlier_detection.ejections_active summed over the target clusters"},
			{"envoy_cx_connect_fail", FactInt, "upstream_cx_connect_fail summed over the target clusters"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p EnvoyClustersProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "envoy-clusters: not implemented yet"}
}
