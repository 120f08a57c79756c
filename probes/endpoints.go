package probes

import "context"

// EndpointsProbe reads the Service's EndpointSlices (core Endpoints as a
// fallback) and checks targetPort against the selected pods' containerPorts.
type EndpointsProbe struct{}

func (EndpointsProbe) Meta() Meta {
	return Meta{
		ID:    "endpoints",
		Title: "Kubernetes endpoints and targetPort",
		Reads: []string{"endpointslices", "endpoints", "services", "pods"},
		Facts: []FactSpec{
			{"endpoints_ready", FactInt, "ready endpoint addresses"},
			{"endpoints_not_ready", FactInt, "endpoint addresses not ready (and not terminating)"},
			{"endpoints_terminating", FactInt, "endpoint addresses that are terminating"},
			{"endpoints_not_ready_pods", FactList, "not-ready pods with their readiness condition reason"},
			{"endpoints_port_mismatch", FactBool, "a service targetPort (number or name) matches no containerPort of a selected pod"},
			{"endpoints_mismatched_ports", FactList, "service ports whose targetPort matches no containerPort, as port->targetPort"},
			{"endpoints_source", FactString, "EndpointSlice or Endpoints: which API the counts came from"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p EndpointsProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "endpoints: not implemented yet"}
}
