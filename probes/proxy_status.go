package probes

import "context"

// ProxyStatusProbe asks istiod (/debug/syncz) whether the source proxy is
// SYNCED for each xDS type, as istioctl proxy-status does.
type ProxyStatusProbe struct{}

func (ProxyStatusProbe) Meta() Meta {
	return Meta{
		ID:    "proxy-status",
		Title: "istiod sync status of the source proxy",
		Reads: []string{"pods (istiod)", "pods/portforward (istiod :15014 /debug/syncz)"},
		Facts: []FactSpec{
			{"xds_proxy_known", FactBool, "istiod lists the source proxy"},
			{"xds_stale_types", FactList, "xDS types (CDS EDS LDS RDS) that are STALE or NOT SENT"},
			{"xds_cds", FactString, "SYNCED, STALE or NOT SENT"},
			{"xds_eds", FactString, "SYNCED, STALE or NOT SENT"},
			{"xds_lds", FactString, "SYNCED, STALE or NOT SENT"},
			{"xds_rds", FactString, "SYNCED, STALE or NOT SENT"},
			{"xds_istiod_version", FactString, "istiod version that serves the proxy"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p ProxyStatusProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "proxy-status: not implemented yet"}
}
