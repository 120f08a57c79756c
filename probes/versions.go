package probes

import "context"

// VersionsProbe reads the Kubernetes server version and the istiod version,
// which decide what fixes are available (native sidecars need 1.29+).
type VersionsProbe struct{}

func (VersionsProbe) Meta() Meta {
	return Meta{
		ID:    "versions",
		Title: "Kubernetes and Istio versions",
		Reads: []string{"version", "pods (istiod)"},
		Facts: []FactSpec{
			{"versions_kubernetes", FactString, "Kubernetes server version"},
			{"versions_native_sidecar_supported", FactBool, "Kubernetes is 1.29 or newer"},
			{"versions_istiod", FactString, "istiod image tag"},
			{"versions_native_sidecars_enabled", FactBool, "istiod runs with ENABLE_NATIVE_SIDECARS=true"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p VersionsProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "versions: not implemented yet"}
}
