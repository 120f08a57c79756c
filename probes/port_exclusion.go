package probes

import "context"

// PortExclusionProbe reports traffic.sidecar.istio.io exclude annotations on
// the target and source pods: that traffic bypasses the sidecar and mTLS.
type PortExclusionProbe struct{}

func (PortExclusionProbe) Meta() Meta {
	return Meta{
		ID:    "port-exclusion",
		Title: "Ports excluded from interception",
		Reads: []string{"pods"},
		Facts: []FactSpec{
			{"exclusion_outbound_ports", FactList, "excludeOutboundPorts on the source (or target) pods"},
			{"exclusion_inbound_ports", FactList, "excludeInboundPorts on the target pods"},
			{"exclusion_target_port_bypassed", FactBool, "the target's port is among the excluded ports"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p PortExclusionProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "port-exclusion: not implemented yet"}
}
