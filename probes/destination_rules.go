package probes

import "context"

// DestinationRulesProbe reads the DestinationRules and VirtualServices that
// apply to the target host: subsets that select no pods, routes to subsets no
// rule defines, and traffic policies set so tight that they cause 503s.
type DestinationRulesProbe struct{}

func (DestinationRulesProbe) Meta() Meta {
	return Meta{
		ID:    "destination-rules",
		Title: "DestinationRules and VirtualServices for the host",
		Reads: []string{"destinationrules", "virtualservices", "pods"},
		Facts: []FactSpec{
			{"dr_found", FactBool, "a DestinationRule applies to the target host"},
			{"dr_names", FactList, "namespace/name of the DestinationRules that apply"},
			{"dr_subsets_without_pods", FactList, "subsets whose labels select no pod of the service"},
			{"vs_found", FactBool, "a VirtualService routes to the target host"},
			{"vs_undefined_subsets", FactList, "subsets routed to by a VirtualService that no DestinationRule defines"},
			{"dr_outlier_consecutive_5xx", FactInt, "outlierDetection consecutive5xxErrors (0 when unset)"},
			{"dr_outlier_max_ejection_percent", FactInt, "outlierDetection maxEjectionPercent (0 when unset)"},
			{"dr_outlier_aggressive", FactBool, "consecutive5xxErrors 1 or maxEjectionPercent 100"},
			{"dr_pool_tiny", FactBool, "connectionPool limits (maxConnections, http1MaxPendingRequests, maxRequestsPerConnection) below 10"},
			{"dr_pool_limits", FactList, "connectionPool settings as name=value"},
			{"dr_idle_timeout_s", FactInt, "connectionPool.http.idleTimeout in seconds (0 when unset)"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p DestinationRulesProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "destination-rules: not implemented yet"}
}
