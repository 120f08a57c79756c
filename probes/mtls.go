package probes

import "context"

// MTLSProbe works out the effective mTLS mode of the upstream port from
// PeerAuthentication (mesh-wide, namespace, workload, portLevelMtls) and what
// the client sends (DestinationRule tls, auto mTLS, sidecars on both sides).
// A PERMISSIVE upstream accepts ISTIO_MUTUAL: that pair is not a mismatch.
type MTLSProbe struct{}

func (MTLSProbe) Meta() Meta {
	return Meta{
		ID:    "mtls",
		Title: "mTLS: what the client sends vs what the upstream accepts",
		Reads: []string{"peerauthentications", "destinationrules", "configmaps (mesh config)", "pods", "services"},
		Facts: []FactSpec{
			{"mtls_upstream_mode", FactString, "effective PeerAuthentication mode for the upstream port: STRICT, PERMISSIVE, DISABLE"},
			{"mtls_upstream_mode_source", FactString, "which policy decided it: mesh, namespace, workload, port, default"},
			{"mtls_client_tls_mode", FactString, "DestinationRule tls mode that applies to the client (DISABLE, SIMPLE, MUTUAL, ISTIO_MUTUAL) or none"},
			{"mtls_auto", FactBool, "mesh config enableAutoMtls (default true)"},
			{"mtls_client_sends", FactString, "what the client sidecar originates: mtls, plaintext, tls (SIMPLE/MUTUAL origination)"},
			{"mtls_upstream_sidecar", FactBool, "every selected upstream pod has a sidecar"},
			{"mtls_source_sidecar", FactBool, "the client has a sidecar (true when no source pod is named)"},
			{"mtls_mismatch", FactString, "none, plaintext-to-strict, mtls-to-no-sidecar, double-tls"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p MTLSProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "mtls: not implemented yet"}
}
