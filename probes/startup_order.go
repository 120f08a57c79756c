package probes

import "context"

// StartupOrderProbe compares, per target pod, when the app started with when
// Envoy became ready, and looks for restarts soon after creation: the app that
// dials its database before the sidecar is up gets connection refused.
type StartupOrderProbe struct{}

func (StartupOrderProbe) Meta() Meta {
	return Meta{
		ID:    "startup-order",
		Title: "Container start order: app vs sidecar",
		Reads: []string{"pods", "pods/log (istio-proxy, app)", "configmaps (mesh config)"},
		Facts: []FactSpec{
			{"startup_native_sidecar", FactBool, "the sidecar is a native sidecar (init container with restartPolicy Always)"},
			{"startup_hold_application", FactBool, "holdApplicationUntilProxyStarts is in effect (pod annotation or mesh defaultConfig)"},
			{"startup_app_before_proxy", FactInt, "pods whose app container started before Envoy was ready"},
			{"startup_early_restarts", FactInt, "pods restarted within 60 s of creation"},
			{"startup_restart_reasons", FactList, "lastState termination reason and exit code of those restarts"},
			{"startup_connection_refused", FactInt, "pods whose app log shows connection refused in its first seconds"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p StartupOrderProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "startup-order: not implemented yet"}
}
