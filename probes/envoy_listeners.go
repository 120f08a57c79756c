package probes

import "context"

// EnvoyListenersProbe reads the source sidecar's /listeners for a listener
// that captures the target port.
type EnvoyListenersProbe struct{}

func (EnvoyListenersProbe) Meta() Meta {
	return Meta{
		ID:    "envoy-listeners",
		Title: "Envoy listener for the port (source sidecar)",
		Reads: []string{"pods/portforward (Envoy admin /listeners)", "pods/exec (pilot-agent fallback)"},
		Facts: []FactSpec{
			{"listener_found", FactBool, "a listener (0.0.0.0_PORT, VIP_PORT or the virtual outbound) covers the target port"},
			{"listener_names", FactList, "listeners matching the target port"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p EnvoyListenersProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "envoy-listeners: not implemented yet"}
}
