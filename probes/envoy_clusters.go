package probes

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// EnvoyClustersProbe reads the source sidecar's /clusters?format=json and
// /stats for the target's outbound|PORT|SUBSET|HOST clusters: what Envoy
// thinks of each upstream host, and whether it overflowed its limits.
type EnvoyClustersProbe struct{}

func (EnvoyClustersProbe) Meta() Meta {
	return Meta{
		ID:    "envoy-clusters",
		Title: "Envoy upstream hosts and health (source sidecar)",
		Reads: []string{"pods", "pods/portforward (Envoy admin /clusters, /stats)", "pods/exec (pilot-agent fallback)"},
		Facts: []FactSpec{
			{"envoy_cluster_present", FactBool, "the source proxy has an outbound cluster for the target host and port"},
			{"envoy_clusters", FactList, "the outbound cluster names found for the target"},
			{"envoy_hosts_total", FactInt, "upstream hosts across those clusters"},
			{"envoy_hosts_healthy", FactInt, "hosts with no failure or degraded health flag: Envoy sends them their share of requests"},
			{"envoy_hosts_degraded", FactInt, "hosts degraded (degraded_active_hc, EDS DEGRADED, degraded by outlier detection): Envoy sends them requests only when too few hosts are healthy"},
			{"envoy_hosts_outlier_ejected", FactInt, "hosts flagged failed_outlier_check"},
			{"envoy_hosts_active_hc_failed", FactInt, "hosts out of load balancing by active health checking: failed_active_hc, active_hc_timeout, excluded_via_immediate_hc_fail, or pending_active_hc (not checked yet)"},
			{"envoy_hosts_eds_unhealthy", FactInt, "hosts whose eds_health_status is not HEALTHY"},
			{"envoy_clusters_all_ejected", FactList, "target clusters with hosts, every one of them flagged failed_outlier_check (a subset can be all ejected while the default cluster still has healthy hosts)"},
			{"envoy_empty_clusters", FactList, "target clusters with zero hosts (a subset selecting no pods shows here)"},
			{"envoy_rq_pending_overflow", FactInt, "upstream_rq_pending_overflow summed over the target clusters (0 when /stats does not report them: see envoy_cluster_stats_present)"},
			{"envoy_rq_active_overflow", FactInt, "upstream_rq_active_overflow summed over the target clusters: requests refused by the max-requests limit, which Envoy 1.38+ counts only there (0 when /stats does not report them)"},
			{"envoy_rq_overflow", FactInt, "requests the connection pool limits refused: upstream_rq_pending_overflow + upstream_rq_active_overflow over the target clusters (0 when /stats does not report them)"},
			{"envoy_cx_overflow", FactInt, "upstream_cx_overflow summed over the target clusters (0 when /stats does not report them)"},
			{"envoy_ejections_active", FactInt, "outlier_detection.ejections_active summed over the target clusters (hosts flagged failed_outlier_check when /stats does not report it)"},
			{"envoy_cx_connect_fail", FactInt, "upstream_cx_connect_fail summed over the target clusters (the hosts' cx_connect_fail when /stats does not report it)"},
			{"envoy_rq_total", FactInt, "upstream_rq_total summed over the target clusters (the hosts' rq_total when /stats does not report it)"},
			{"envoy_rq_timeout", FactInt, "upstream_rq_timeout summed over the target clusters (the hosts' rq_timeout when /stats does not report it)"},
			{"envoy_rq_error", FactInt, "rq_error of the target clusters' hosts in /clusters: requests that got a 5xx or a connect failure; always read from the hosts, /stats has no such counter"},
			{"envoy_cluster_stats_present", FactBool, "/stats reports the target clusters' upstream stats; Istio's default stats inclusion list leaves them out, so their overflow counters are unknown, not zero"},
			{"envoy_counters_from", FactString, "where the counters came from: stats (/stats has the target clusters) or hosts (the per-host counters of /clusters stand in, overflow unknown)"},
		},
	}
}

type envoyClustersInput struct {
	// Skip says why there is no Envoy to read ("" when there is).
	Skip string
	// Clusters are every cluster of /clusters; evaluate picks the target's.
	Clusters []envoy.Cluster
	// Stats holds the target clusters' stats from /stats.
	Stats envoy.Stats
	// StatsProblem says why /stats could not be read ("" when it was).
	StatsProblem string
}

func (p EnvoyClustersProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchEnvoyClusters(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = envoyClustersCommands(t, nil)
		return r
	}
	return evaluateEnvoyClusters(t, in)
}

func fetchEnvoyClusters(ctx context.Context, c cluster.Cluster, t cluster.Target) (in envoyClustersInput, what string, err error) {
	if in.Skip, what, err = envoyadmin.CheckSource(ctx, c, t); err != nil || in.Skip != "" {
		return in, what, err
	}
	src := *t.Source
	body, err := c.EnvoyAdmin(ctx, src, envoyadmin.ClustersPath)
	if err != nil {
		return in, fmt.Sprintf("read Envoy %s of %s", envoyadmin.ClustersPath, src), err
	}
	if in.Clusters, err = envoy.ParseClusters(body); err != nil {
		return in, fmt.Sprintf("parse Envoy %s of %s", envoyadmin.ClustersPath, src), err
	}
	stats, err := c.EnvoyAdmin(ctx, src, envoyadmin.StatsPath)
	if err != nil {
		// Host health alone answers most of the question; the counters are
		// then unknown, as they are when Istio does not record them.
		in.StatsProblem = cluster.AccessProblem(fmt.Sprintf("read Envoy %s of %s", envoyadmin.StatsPath, src), err)
		return in, "", nil
	}
	in.Stats = envoy.ParseStats(stats, targetStats(t))
	return in, "", nil
}

// targetStats keeps every stat of the target's clusters (any port, any
// subset); the host is followed by the stat name, so "|HOST." cannot match
// another host that merely starts or ends like it. ParseStats hands it
// names without Istio 1.23's ";".
func targetStats(t cluster.Target) func(name string) bool {
	marker := "|" + t.Host() + "."
	return func(name string) bool {
		return strings.HasPrefix(name, "cluster.outbound|") && strings.Contains(name, marker)
	}
}

// clusterFigures are the host counts and counters over the target clusters.
type clusterFigures struct {
	names, empty, allEjected               []string
	total, healthy, outlier, activeHC, eds int
	degraded, routable                     int
	pendingOverflow, activeOverflow        int
	cxOverflow                             int
	ejections, connectFail                 int
	rqTotal, rqTimeout, rqError            int
	// The same counters from the hosts of /clusters, which every Envoy
	// reports whatever its stats inclusion list.
	hostConnectFail, hostRqTotal, hostRqTimeout int
	statsPresent                                bool
	rows                                        [][]string
	raw, statsLines                             []string
}

func evaluateEnvoyClusters(t cluster.Target, in envoyClustersInput) Result {
	if in.Skip != "" {
		return skippedResult(in.Skip, envoyClustersCommands(t, nil))
	}
	var f clusterFigures
	var targets []envoy.Cluster
	for _, c := range in.Clusters {
		if envoy.IsTargetCluster(c.Name, t.Host(), t.Port) {
			targets = append(targets, c)
		}
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Name < targets[j].Name })
	for _, c := range targets {
		f.names = append(f.names, c.Name)
		if len(c.Hosts) == 0 {
			f.empty = append(f.empty, c.Name)
			f.rows = append(f.rows, []string{c.Name, "(no hosts)", "-", "-", "-", "-", "-"})
		}
		ejectedHere := 0
		for _, h := range c.Hosts {
			f.total++
			var flags []string
			if h.FailedOutlierCheck {
				f.outlier++
				ejectedHere++
				flags = append(flags, "failed_outlier_check")
			}
			if h.FailedActiveHealthCheck || h.ActiveHCTimeout || h.ExcludedViaImmediateHCFail || h.PendingActiveHC {
				f.activeHC++
			}
			for _, hc := range []struct {
				on   bool
				name string
			}{{h.FailedActiveHealthCheck, "failed_active_hc"}, {h.ActiveHCTimeout, "active_hc_timeout"}, {h.ExcludedViaImmediateHCFail, "excluded_via_immediate_hc_fail"},
				{h.PendingActiveHC, "pending_active_hc"}, {h.DegradedActiveHC, "degraded_active_hc"}, {h.DegradedOutlier, "degraded_outlier_detection"}} {
				if hc.on {
					flags = append(flags, hc.name)
				}
			}
			if h.EDSUnhealthy() {
				f.eds++
				flags = append(flags, "eds_health_status="+h.EDSHealth)
			}
			if h.PendingRemoval {
				flags = append(flags, "pending_dynamic_removal")
			}
			health := "healthy"
			switch {
			case h.Healthy():
				f.healthy++
			case h.Degraded():
				f.degraded++
				health = "degraded"
			default:
				health = "unhealthy"
			}
			if h.Routable() {
				f.routable++
			}
			f.hostConnectFail += int(h.Stats["cx_connect_fail"])
			f.hostRqTotal += int(h.Stats["rq_total"])
			f.hostRqTimeout += int(h.Stats["rq_timeout"])
			f.rqError += int(h.Stats["rq_error"])
			f.rows = append(f.rows, []string{c.Name, h.Address, health, wording.Dash(strings.Join(flags, ",")),
				strconv.FormatUint(h.Stats["cx_connect_fail"], 10), strconv.FormatUint(h.Stats["rq_error"], 10), strconv.FormatUint(h.Stats["rq_total"], 10)})
			f.raw = append(f.raw, fmt.Sprintf("%s::%s::health_flags::%s", c.Name, h.Address, healthFlagsText(h)))
		}
		if len(c.Hosts) > 0 && ejectedHere == len(c.Hosts) {
			f.allEjected = append(f.allEjected, c.Name)
		}
		if in.Stats.HasCluster(c.Name) {
			f.statsPresent = true
		}
	}
	if f.statsPresent {
		for _, c := range targets {
			f.pendingOverflow += clusterStat(in.Stats, c.Name, "upstream_rq_pending_overflow")
			f.activeOverflow += clusterStat(in.Stats, c.Name, "upstream_rq_active_overflow")
			f.cxOverflow += clusterStat(in.Stats, c.Name, "upstream_cx_overflow")
			f.ejections += clusterStat(in.Stats, c.Name, "outlier_detection.ejections_active")
			f.connectFail += clusterStat(in.Stats, c.Name, "upstream_cx_connect_fail")
			f.rqTotal += clusterStat(in.Stats, c.Name, "upstream_rq_total")
			f.rqTimeout += clusterStat(in.Stats, c.Name, "upstream_rq_timeout")
		}
		names := make([]string, 0, len(in.Stats))
		for n, v := range in.Stats {
			if v != 0 && slices.ContainsFunc(f.names, func(c string) bool { return strings.HasPrefix(n, "cluster."+c+".") }) {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			f.statsLines = append(f.statsLines, fmt.Sprintf("%s: %d", n, in.Stats[n]))
		}
	} else {
		// Istio's default stats inclusion leaves the service clusters out
		// of /stats: the hosts' own counters in /clusters stand in.
		f.ejections = f.outlier
		f.connectFail = f.hostConnectFail
		f.rqTotal = f.hostRqTotal
		f.rqTimeout = f.hostRqTimeout
	}
	countersFrom := "hosts"
	if f.statsPresent {
		countersFrom = "stats"
	}

	facts := Facts{
		"envoy_cluster_present":        len(targets) > 0,
		"envoy_clusters":               nonNil(f.names),
		"envoy_hosts_total":            f.total,
		"envoy_hosts_healthy":          f.healthy,
		"envoy_hosts_outlier_ejected":  f.outlier,
		"envoy_hosts_active_hc_failed": f.activeHC,
		"envoy_hosts_eds_unhealthy":    f.eds,
		"envoy_empty_clusters":         nonNil(f.empty),
		"envoy_clusters_all_ejected":   nonNil(f.allEjected),
		"envoy_rq_pending_overflow":    f.pendingOverflow,
		"envoy_rq_active_overflow":     f.activeOverflow,
		"envoy_rq_overflow":            f.pendingOverflow + f.activeOverflow,
		"envoy_hosts_degraded":         f.degraded,
		"envoy_cx_overflow":            f.cxOverflow,
		"envoy_ejections_active":       f.ejections,
		"envoy_cx_connect_fail":        f.connectFail,
		"envoy_rq_total":               f.rqTotal,
		"envoy_rq_timeout":             f.rqTimeout,
		"envoy_rq_error":               f.rqError,
		"envoy_cluster_stats_present":  f.statsPresent,
		"envoy_counters_from":          countersFrom,
	}

	status, summary := StatusPass, ""
	switch {
	case len(targets) == 0:
		status = StatusFail
		summary = fmt.Sprintf("the source proxy has no outbound cluster for %s%s: requests get 503 NC/NR (Sidecar egress scope, exportTo, or a stale proxy)", t.Host(), wording.PortSuffix(t.Port))
	case f.total == 0:
		status = StatusFail
		summary = fmt.Sprintf("%s: 0 upstream hosts in the source proxy: requests get 503 UH", strings.Join(f.names, ", "))
	default:
		summary = fmt.Sprintf("%d/%d hosts healthy in %s", f.healthy, f.total, clusterList(f.names))
		var why []string
		if f.outlier > 0 {
			why = append(why, fmt.Sprintf("%d outlier-ejected", f.outlier))
		}
		if f.activeHC > 0 {
			why = append(why, fmt.Sprintf("%d out by active health checks", f.activeHC))
		}
		if f.degraded > 0 {
			why = append(why, fmt.Sprintf("%d degraded, sent requests only when too few are healthy", f.degraded))
		}
		if f.eds > 0 {
			why = append(why, fmt.Sprintf("%d not HEALTHY in EDS", f.eds))
		}
		if len(why) > 0 {
			summary += " (" + strings.Join(why, ", ") + ")"
		}
		if f.routable == 0 {
			status = StatusFail
		} else if f.healthy < f.total {
			status = StatusWarn
		}
		if len(f.allEjected) > 0 && f.healthy > 0 {
			summary += "; every host ejected in " + strings.Join(f.allEjected, ", ")
			status = worse(status, StatusFail)
		}
		if len(f.empty) > 0 {
			summary += "; no hosts in " + strings.Join(f.empty, ", ")
			status = worse(status, StatusWarn)
		}
	}
	if f.pendingOverflow > 0 || f.activeOverflow > 0 || f.cxOverflow > 0 {
		summary += fmt.Sprintf("; circuit breakers overflowed (upstream_rq_pending_overflow %d, upstream_rq_active_overflow %d, upstream_cx_overflow %d)", f.pendingOverflow, f.activeOverflow, f.cxOverflow)
		status = worse(status, StatusWarn)
	}
	if len(targets) > 0 && !f.statsPresent {
		if in.StatsProblem != "" {
			summary += "; overflow counters unknown: " + in.StatsProblem
		} else {
			summary += "; /stats has no upstream stats for these clusters (Istio's default stats inclusion), overflow counters unknown"
		}
		if f.rqError > 0 || f.connectFail > 0 {
			summary += fmt.Sprintf("; the hosts count %d errors and %d failed connects in %d requests", f.rqError, f.connectFail, f.rqTotal)
		}
	}

	raw := strings.Join(f.raw, "\n")
	if len(f.statsLines) > 0 {
		raw += "\n\n" + strings.Join(f.statsLines, "\n")
	}
	return Result{
		Status:  status,
		Summary: summary,
		Evidence: Evidence{
			Columns: []string{"cluster", "host", "health", "flags", "cx_connect_fail", "rq_error", "rq_total"},
			Rows:    f.rows,
			Raw:     strings.TrimSpace(raw),
		},
		Facts:    facts,
		Commands: envoyClustersCommands(t, f.names),
	}
}

func clusterStat(s envoy.Stats, cluster, stat string) int {
	v, _ := s.ClusterStat(cluster, stat)
	return int(v)
}

// healthFlagsText renders a host's flags as Envoy's text /clusters does.
func healthFlagsText(h envoy.Host) string {
	var flags []string
	if h.FailedActiveHealthCheck {
		flags = append(flags, "/failed_active_hc")
	}
	if h.DegradedActiveHC {
		flags = append(flags, "/degraded_active_hc")
	}
	if h.FailedOutlierCheck {
		flags = append(flags, "/failed_outlier_check")
	}
	if h.EDSUnhealthy() {
		flags = append(flags, "/failed_eds_health")
	}
	if h.EDSHealth == "DEGRADED" {
		flags = append(flags, "/degraded_eds_health")
	}
	if h.PendingRemoval {
		flags = append(flags, "/pending_dynamic_removal")
	}
	if h.PendingActiveHC {
		flags = append(flags, "/pending_active_hc")
	}
	if h.ExcludedViaImmediateHCFail {
		flags = append(flags, "/excluded_via_immediate_hc_fail")
	}
	if h.ActiveHCTimeout {
		flags = append(flags, "/active_hc_timeout")
	}
	if len(flags) == 0 {
		return "healthy"
	}
	return strings.Join(flags, "")
}

func envoyClustersCommands(t cluster.Target, clusters []string) []string {
	if t.Source == nil {
		return nil
	}
	src := *t.Source
	cmds := []string{
		envoyadmin.PilotAgentRequest(src, "clusters?format=json"),
		envoyadmin.PilotAgentRequest(src, "stats") + " | grep -F '" + t.Host() + "' | grep -E 'overflow|ejections_active|cx_connect_fail'",
		fmt.Sprintf("istioctl proxy-config cluster %s.%s --fqdn %s", src.Name, src.Namespace, t.Host()),
	}
	for _, c := range clusters {
		cmds = append(cmds, fmt.Sprintf("istioctl proxy-config endpoint %s.%s --cluster '%s'", src.Name, src.Namespace, c))
	}
	return cmds
}

func clusterList(names []string) string {
	if len(names) <= 2 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more clusters", names[0], len(names)-1)
}
