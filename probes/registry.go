package probes

import "sort"

// All returns every probe, in the order the "first ten minutes" runbook
// introduces them. The runbook validates its steps and conditions against
// these metas.
func All() []Probe {
	return []Probe{
		TargetProbe{},
		DataPlaneProbe{},
		AmbientPolicyProbe{},
		ZtunnelProbe{},
		WaypointProbe{},
		GatewayRoutesProbe{},
		EndpointsProbe{},
		EnvoyClustersProbe{},
		EnvoyListenersProbe{},
		EnvoyConfigProbe{},
		AccessLogProbe{},
		ProxyStatusProbe{},
		MTLSProbe{},
		DestinationRulesProbe{},
		ServiceEntryProbe{},
		StartupOrderProbe{},
		ShutdownOrderProbe{},
		PortExclusionProbe{},
		VersionsProbe{},
		MetricsProbe{},
		PrometheusProbe{}, // skipped unless check/watch --prometheus replaces it with a URL
		// Issue 29, the sidecar and the app's side.
		HealthProbesProbe{},
		AppListenProbe{},
		PortProtocolProbe{},
		// Issue 30, multi-cluster meshes.
		MultiClusterProbe{},
		EastWestPassthroughProbe{},
		MultiClusterTrustProbe{},
		MultiClusterWaypointProbe{},
		MultiClusterHBONEProbe{},
		MultiClusterAmbientGatewayProbe{},
	}
}

// ByID indexes All by probe ID.
func ByID() map[string]Probe {
	m := map[string]Probe{}
	for _, p := range All() {
		m[p.Meta().ID] = p
	}
	return m
}

// FactCatalogue is every declared fact by name.
func FactCatalogue() map[string]FactSpec {
	m := map[string]FactSpec{}
	for _, p := range All() {
		for _, f := range p.Meta().Facts {
			m[f.Name] = f
		}
	}
	return m
}

// FactNames lists the catalogue's names, sorted.
func FactNames() []string {
	var names []string
	for n := range FactCatalogue() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
