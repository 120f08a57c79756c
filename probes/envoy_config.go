package probes

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// EnvoyConfigProbe reads the source sidecar's /config_dump for the target's
// clusters: the TLS Envoy will originate, and the outlier detection and
// connection pool settings as Envoy has them (not as the YAML intended).
type EnvoyConfigProbe struct{}

func (EnvoyConfigProbe) Meta() Meta {
	return Meta{
		ID:    "envoy-config",
		Title: "Envoy cluster config (source sidecar config_dump)",
		Reads: []string{"pods", "pods/portforward (Envoy admin /config_dump)", "pods/exec (pilot-agent fallback)"},
		Facts: []FactSpec{
			{"config_cluster_found", FactBool, "config_dump has a dynamic active cluster for the target"},
			{"config_tls", FactString, "what the target's main cluster (no subset, lowest port) originates: istio-mtls (explicit ISTIO_MUTUAL), tls (SIMPLE/MUTUAL), auto (tlsMode match), none, or unknown (a transport socket this build cannot read)"},
			{"config_tls_modes", FactList, "the distinct TLS modes across all active target clusters (subsets may differ from the main one)"},
			{"config_outlier_consecutive_5xx", FactInt, "consecutive 5xx after which Envoy ejects a host: outlier_detection.consecutive_5xx (Envoy's default 5 when unset), 0 when not enforced or outlier detection is off"},
			{"config_outlier_consecutive_gateway_failure", FactInt, "consecutive 502/503/504 and connect failures after which Envoy ejects a host: consecutive_gateway_failure, set by a DestinationRule's consecutiveGatewayErrors or the old consecutiveErrors; 0 when not enforced"},
			{"config_outlier_max_ejection_percent", FactInt, "outlier_detection.max_ejection_percent (0 when unset)"},
			{"config_max_connections", FactInt, "circuit_breakers max_connections (0 when unset; Istio writes 4294967295 for no limit)"},
			{"config_max_pending_requests", FactInt, "circuit_breakers max_pending_requests (0 when unset; Istio writes 4294967295 for no limit)"},
			{"config_pool_tiny", FactBool, "the main cluster's max_connections or max_pending_requests is set below TinyPoolLimit (10): ordinary load overflows it"},
			{"config_idle_timeout_s", FactInt, "upstream HTTP idle_timeout in seconds (0 when unset)"},
		},
	}
}

type envoyConfigInput struct {
	// Skip says why there is no Envoy to read ("" when there is).
	Skip string
	Dump envoy.ConfigDump
	Size int // bytes of the config dump
}

func (p EnvoyConfigProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchEnvoyConfig(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = envoyConfigCommands(t)
		return r
	}
	return evaluateEnvoyConfig(t, in)
}

func fetchEnvoyConfig(ctx context.Context, c cluster.Cluster, t cluster.Target) (in envoyConfigInput, what string, err error) {
	if in.Skip, what, err = envoyadmin.CheckSource(ctx, c, t); err != nil || in.Skip != "" {
		return in, what, err
	}
	src := *t.Source
	body, err := c.EnvoyAdmin(ctx, src, envoyadmin.ConfigDumpPath)
	if err != nil {
		return in, fmt.Sprintf("read Envoy %s of %s", envoyadmin.ConfigDumpPath, src), err
	}
	in.Size = len(body)
	// The streaming decoder: a big mesh's dump is 100 MB, and unknown
	// extensions must not fail the read (see probes/parse/envoy). Decoding one
	// takes a second or more, so it stops when the probe's deadline does.
	r := envoyadmin.ContextReader(ctx, bytes.NewReader(body))
	if in.Dump, err = envoy.StreamConfigDump(r, envoy.TargetMatcher(t.Host(), t.Port)); err != nil {
		return in, fmt.Sprintf("parse Envoy %s of %s", envoyadmin.ConfigDumpPath, src), err
	}
	return in, "", nil
}

// mainCluster is the one the scalar facts describe: the subset-less cluster
// of the lowest port, which is where traffic goes unless a VirtualService
// picks a subset.
func mainCluster(active []envoy.ClusterConfig) envoy.ClusterConfig {
	sort.SliceStable(active, func(i, j int) bool {
		a, _ := envoy.ParseClusterName(active[i].Name)
		b, _ := envoy.ParseClusterName(active[j].Name)
		if (a.Subset == "") != (b.Subset == "") {
			return a.Subset == ""
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return active[i].Name < active[j].Name
	})
	return active[0]
}

func evaluateEnvoyConfig(t cluster.Target, in envoyConfigInput) Result {
	if in.Skip != "" {
		return skippedResult(in.Skip, envoyConfigCommands(t))
	}
	var active, warming []envoy.ClusterConfig
	for _, c := range in.Dump.Clusters {
		if c.Warming {
			warming = append(warming, c)
		} else {
			active = append(active, c)
		}
	}
	var rows [][]string
	var raw []string
	modes := map[string]bool{}
	for _, c := range in.Dump.Clusters {
		state := "active"
		if c.Warming {
			state = "warming"
		} else {
			modes[c.TLS] = true
		}
		outlier := "-"
		if c.OutlierDetection {
			outlier = fmt.Sprintf("consecutive_5xx %d, consecutive_gateway_failure %d, max_ejection %d%%, base %s",
				c.Consecutive5xx, c.ConsecutiveGatewayFailure, c.MaxEjectionPercent, c.BaseEjectionTime)
		}
		rows = append(rows, []string{c.Name, state, c.TLS, wording.Dash(c.SNI), outlier, limit(c.MaxConnections), limit(c.MaxPendingRequests), secondsOrUnset(c.IdleTimeout.Seconds())})
		raw = append(raw, fmt.Sprintf("%s: %s", c.Name, c.TLSDetail))
	}
	if types := in.Dump.FallbackTypes(); len(types) > 0 {
		raw = append(raw, "extensions not known to this build (skipped, not fatal): "+strings.Join(types, ", "))
	}
	raw = append(raw, fmt.Sprintf("config_dump: %d bytes, %d dynamic clusters, CDS version %s", in.Size, in.Dump.DynamicClusters, wording.Dash(in.Dump.ClustersVersion)))

	facts := Facts{
		"config_cluster_found":                       len(active) > 0,
		"config_tls":                                 envoy.TLSUnknown,
		"config_tls_modes":                           nonNil(slices.Sorted(maps.Keys(modes))),
		"config_outlier_consecutive_5xx":             0,
		"config_outlier_consecutive_gateway_failure": 0,
		"config_outlier_max_ejection_percent":        0,
		"config_max_connections":                     0,
		"config_max_pending_requests":                0,
		"config_pool_tiny":                           false,
		"config_idle_timeout_s":                      0,
	}
	result := Result{
		Evidence: Evidence{
			Columns: []string{"cluster", "state", "tls", "sni", "outlier detection", "max_connections", "max_pending_requests", "idle_timeout_s"},
			Rows:    rows,
			Raw:     strings.Join(raw, "\n"),
		},
		Facts:    facts,
		Commands: envoyConfigCommands(t),
	}
	if len(active) == 0 {
		result.Status = StatusFail
		result.Summary = fmt.Sprintf("config_dump has no active cluster for %s%s (503 NC)", t.Host(), wording.PortSuffix(t.Port))
		if len(warming) > 0 {
			result.Summary += fmt.Sprintf("; %d warming, waiting for endpoints: %s", len(warming), warming[0].Name)
		}
		return result
	}

	m := mainCluster(active)
	facts["config_tls"] = m.TLS
	facts["config_outlier_consecutive_5xx"] = m.Consecutive5xx
	facts["config_outlier_consecutive_gateway_failure"] = m.ConsecutiveGatewayFailure
	facts["config_outlier_max_ejection_percent"] = m.MaxEjectionPercent
	facts["config_max_connections"] = int(m.MaxConnections)
	facts["config_max_pending_requests"] = int(m.MaxPendingRequests)
	facts["config_pool_tiny"] = poolTiny(m.MaxPendingRequests) || poolTiny(m.MaxConnections)
	facts["config_idle_timeout_s"] = int(m.IdleTimeout.Seconds())

	var notes []string
	status := StatusPass
	if len(modes) > 1 {
		notes = append(notes, "subsets differ: TLS "+strings.Join(slices.Sorted(maps.Keys(modes)), "/"))
	}
	for _, c := range active {
		if c.TLS == envoy.TLSOrigination {
			notes = append(notes, c.Name+" originates its own TLS (DestinationRule SIMPLE/MUTUAL)")
			status = worse(status, StatusWarn)
		}
		if c.OutlierDetection && c.Consecutive5xx == 1 {
			notes = append(notes, c.Name+" ejects a host after one 5xx")
			status = worse(status, StatusWarn)
		}
		if c.OutlierDetection && c.ConsecutiveGatewayFailure == 1 {
			notes = append(notes, c.Name+" ejects a host after one gateway error (502/503/504 or a failed connect)")
			status = worse(status, StatusWarn)
		}
		if poolTiny(c.MaxPendingRequests) || poolTiny(c.MaxConnections) {
			notes = append(notes, fmt.Sprintf("%s limits max_connections %s, max_pending_requests %s", c.Name, limit(c.MaxConnections), limit(c.MaxPendingRequests)))
			status = worse(status, StatusWarn)
		}
	}
	if len(warming) > 0 {
		notes = append(notes, fmt.Sprintf("%d cluster(s) still warming", len(warming)))
	}
	result.Status = status
	result.Summary = fmt.Sprintf("%s: TLS %s, outlier %s, max_connections %s, max_pending_requests %s, idle_timeout %s",
		m.Name, m.TLS, outlierText(m), limit(m.MaxConnections), limit(m.MaxPendingRequests), secondsOrUnset(m.IdleTimeout.Seconds()))
	if len(notes) > 0 {
		result.Summary += "; " + strings.Join(notes, "; ")
	}
	return result
}

func outlierText(c envoy.ClusterConfig) string {
	if !c.OutlierDetection {
		return "off"
	}
	if c.ConsecutiveGatewayFailure > 0 {
		return fmt.Sprintf("consecutive_5xx %d, consecutive_gateway_failure %d/max %d%%", c.Consecutive5xx, c.ConsecutiveGatewayFailure, c.MaxEjectionPercent)
	}
	return fmt.Sprintf("consecutive_5xx %d/max %d%%", c.Consecutive5xx, c.MaxEjectionPercent)
}

// limit renders a circuit-breaker threshold; Istio's "no limit" reads as such.
func limit(v int64) string {
	switch v {
	case 0:
		return "unset"
	case envoy.Unlimited:
		return "unlimited"
	}
	return strconv.FormatInt(v, 10)
}

func secondsOrUnset(seconds float64) string {
	if seconds == 0 {
		return "unset"
	}
	return strconv.FormatFloat(seconds, 'f', -1, 64) + "s"
}

func envoyConfigCommands(t cluster.Target) []string {
	if t.Source == nil {
		return nil
	}
	src := *t.Source
	return []string{
		fmt.Sprintf("istioctl proxy-config cluster %s.%s --fqdn %s -o json", src.Name, src.Namespace, t.Host()),
		envoyadmin.PilotAgentRequest(src, "config_dump") + fmt.Sprintf(" > %s.config_dump.json", src.Name),
	}
}
