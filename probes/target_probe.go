package probes

import "context"

// TargetProbe resolves the Service and the pods it selects, and whether those
// pods carry a sidecar: every other probe's reading depends on these.
type TargetProbe struct{}

func (TargetProbe) Meta() Meta {
	return Meta{
		ID:    "target",
		Title: "Service, selector and selected pods",
		Reads: []string{"services", "pods", "namespaces"},
		Facts: []FactSpec{
			{"target_service_found", FactBool, "the Service exists"},
			{"target_selector_empty", FactBool, "the Service has no selector (endpoints managed by hand)"},
			{"target_pods_selected", FactInt, "pods matched by the Service selector"},
			{"target_pods_with_sidecar", FactInt, "selected pods with an istio-proxy (classic container or native sidecar init container)"},
			{"target_pods_without_sidecar", FactInt, "selected pods without an istio-proxy"},
			{"target_namespace_injection", FactString, "namespace injection setting: enabled, disabled, revision=<rev> or none"},
			{"target_ports", FactList, "service ports as port/targetPort/protocol"},
			{"target_source_found", FactBool, "the source pod named with --from exists"},
			{"target_source_has_sidecar", FactBool, "the source pod carries an istio-proxy"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p TargetProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "target: not implemented yet"}
}
