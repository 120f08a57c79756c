package probes

import "context"

// ServiceEntryProbe checks external hosts the source reaches under
// outboundTrafficPolicy REGISTRY_ONLY: without a ServiceEntry visible to the
// source namespace, Envoy sends them to BlackHoleCluster.
type ServiceEntryProbe struct{}

func (ServiceEntryProbe) Meta() Meta {
	return Meta{
		ID:    "service-entry",
		Title: "ServiceEntry for external hosts (REGISTRY_ONLY)",
		Reads: []string{"serviceentries", "configmaps (mesh config)", "pods/log (istio-proxy)"},
		Facts: []FactSpec{
			{"se_registry_only", FactBool, "mesh outboundTrafficPolicy is REGISTRY_ONLY"},
			{"se_unregistered_hosts", FactList, "external hosts sent to BlackHoleCluster with no ServiceEntry"},
			{"se_hidden_hosts", FactList, "hosts whose ServiceEntry exportTo hides it from the source namespace"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p ServiceEntryProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "service-entry: not implemented yet"}
}
