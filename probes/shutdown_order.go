package probes

import "context"

// ShutdownOrderProbe checks whether a classic sidecar can exit before the app
// has drained: no terminationDrainDuration or EXIT_ON_ZERO_ACTIVE_CONNECTIONS,
// and no preStop on the app container.
type ShutdownOrderProbe struct{}

func (ShutdownOrderProbe) Meta() Meta {
	return Meta{
		ID:    "shutdown-order",
		Title: "Shutdown order: proxy drain vs app",
		Reads: []string{"pods", "configmaps (mesh config)"},
		Facts: []FactSpec{
			{"shutdown_classic_sidecar", FactBool, "the target pods use a classic (container) sidecar"},
			{"shutdown_drain_configured", FactBool, "terminationDrainDuration or EXIT_ON_ZERO_ACTIVE_CONNECTIONS is set"},
			{"shutdown_app_prestop", FactBool, "the app container has a preStop hook"},
			{"shutdown_pods_terminating", FactInt, "target pods being deleted now (a rollout in progress)"},
			{"shutdown_at_risk", FactBool, "classic sidecar with neither drain settings nor an app preStop"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p ShutdownOrderProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "shutdown-order: not implemented yet"}
}
