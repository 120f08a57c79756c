package probes

import "context"

// AccessLogProbe tallies the source (and upstream) istio-proxy access logs:
// 5xx by response flag, response code details and transport failure reasons,
// which are the primary evidence for most 503 causes.
type AccessLogProbe struct{}

func (AccessLogProbe) Meta() Meta {
	return Meta{
		ID:    "access-log",
		Title: "istio-proxy access log: 503s by response flag",
		Reads: []string{"pods/log (istio-proxy)"},
		Facts: []FactSpec{
			{"log_lines", FactInt, "access-log lines read"},
			{"log_unparsed", FactInt, "lines that are not access-log entries"},
			{"log_5xx", FactInt, "entries with a 5xx response code"},
			{"log_503", FactInt, "entries with response code 503"},
			{"log_2xx", FactInt, "entries with a 2xx response code"},
			{"log_flag_uh", FactInt, "5xx entries flagged UH (no healthy upstream)"},
			{"log_flag_uf", FactInt, "5xx entries flagged UF (upstream connection failure)"},
			{"log_flag_uo", FactInt, "5xx entries flagged UO (upstream overflow: circuit breaking)"},
			{"log_flag_nr", FactInt, "5xx entries flagged NR (no route)"},
			{"log_flag_nc", FactInt, "5xx entries flagged NC (no cluster)"},
			{"log_flag_urx", FactInt, "5xx entries flagged URX (retry/connect attempts exhausted)"},
			{"log_flag_uc", FactInt, "5xx entries flagged UC (upstream connection termination)"},
			{"log_flag_ut", FactInt, "5xx entries flagged UT (upstream request timeout)"},
			{"log_flag_dc", FactInt, "5xx entries flagged DC (downstream connection termination)"},
			{"log_flag_lr", FactInt, "5xx entries flagged LR (connection local reset)"},
			{"log_flag_ur", FactInt, "5xx entries flagged UR (upstream remote reset)"},
			{"log_details", FactList, "distinct response_code_details of 5xx entries"},
			{"log_transport_failures", FactList, "distinct upstream_transport_failure_reason values"},
			{"log_blackhole", FactInt, "entries routed to BlackHoleCluster"},
			{"log_blackhole_hosts", FactList, "authorities of entries routed to BlackHoleCluster"},
			{"log_connection_refused", FactInt, "entries whose failure reason says connection refused (delayed connect error: 111)"},
		},
	}
}

// Run is filled in by the probe's implementation.
func (p AccessLogProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	return Result{Status: StatusSkipped, Summary: "access-log: not implemented yet"}
}
