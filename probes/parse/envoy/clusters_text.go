package envoy

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// ParseClustersText reads Envoy's plain-text /clusters, one
// "CLUSTER::FIELD...::VALUE" line per value, as `pilot-agent request GET
// clusters` prints it:
//
//	outbound|9000||gw.ns.svc.cluster.local::default_priority::max_connections::1024
//	outbound|9000||gw.ns.svc.cluster.local::added_via_api::true
//	outbound|9000||gw.ns.svc.cluster.local::10.244.25.4:9000::cx_connect_fail::0
//	outbound|9000||gw.ns.svc.cluster.local::10.244.25.4:9000::health_flags::/failed_outlier_check
//
// Host lines are told from cluster lines by their second field, an address
// (IPv6 addresses hold "::" themselves, so they are read by their
// brackets). Lines of neither shape are skipped; text with no line of
// either is an error, since an error page is not an empty cluster list.
func ParseClustersText(data []byte) ([]Cluster, error) {
	var out []Cluster
	index := map[string]int{}
	hostIndex := map[[2]string]int{}
	cluster := func(name string) *Cluster {
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, Cluster{Name: name})
		}
		return &out[i]
	}
	read := 0
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		name, rest, ok := strings.Cut(strings.TrimRight(string(line), " \r"), "::")
		if !ok || name == "" {
			continue
		}
		name = clustername.Name(name)
		if key, value, ok := strings.Cut(rest, "::"); ok && clusterTextKeys[key] {
			read++
			c := cluster(name)
			if key == "added_via_api" {
				c.AddedViaAPI = value == "true"
			}
			continue
		}
		addr, stat, value, ok := splitHostLine(rest)
		if !ok {
			continue
		}
		read++
		c := cluster(name)
		hi, ok := hostIndex[[2]string{name, addr}]
		if !ok {
			hi = len(c.Hosts)
			hostIndex[[2]string{name, addr}] = hi
			c.Hosts = append(c.Hosts, Host{Address: addr, Stats: map[string]uint64{}})
		}
		h := &c.Hosts[hi]
		switch stat {
		case "health_flags":
			setHealthFlags(h, value)
		case "weight":
			if w, err := strconv.ParseUint(value, 10, 32); err == nil {
				h.Weight = uint32(w)
			}
		default:
			if n, err := strconv.ParseUint(value, 10, 64); err == nil {
				h.Stats[stat] = n
			}
		}
	}
	if read == 0 {
		return nil, fmt.Errorf("clusters: not Envoy's /clusters output (no CLUSTER::... line)")
	}
	return out, nil
}

// clusterTextKeys are the second fields of cluster-level lines.
var clusterTextKeys = map[string]bool{
	"default_priority": true, "high_priority": true, "added_via_api": true, "outlier": true,
	"observability_name": true, "eds_service_name": true, "version_info": true,
}

// splitHostLine splits "ADDRESS::STAT::VALUE". ADDRESS is ip:port,
// [ipv6]:port, or a pipe path (/sock/mixer.socket, ./etc/istio/proxy/XDS).
func splitHostLine(rest string) (addr, stat, value string, ok bool) {
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]:")
		if end < 0 {
			return "", "", "", false
		}
		port, after, found := strings.Cut(rest[end+2:], "::")
		if !found || port == "" {
			return "", "", "", false
		}
		addr, rest = rest[:end+2]+port, after
	} else {
		var found bool
		addr, rest, found = strings.Cut(rest, "::")
		if !found || addr == "" || !(strings.Contains(addr, ":") || strings.HasPrefix(addr, "/") || strings.HasPrefix(addr, ".")) {
			return "", "", "", false
		}
	}
	stat, value, ok = strings.Cut(rest, "::")
	return addr, stat, value, ok && stat != ""
}

// setHealthFlags reads health_flags: "healthy", or "/"-joined flags such as
// "/failed_outlier_check/failed_eds_health" (Envoy's HostUtility
// healthFlagsToString, which prints every flag of Host::HealthFlag:
// failed_active_hc, failed_outlier_check, failed_eds_health,
// degraded_active_hc, degraded_eds_health, pending_dynamic_removal,
// pending_active_hc, excluded_via_immediate_hc_fail, active_hc_timeout;
// newer releases add eds_status_draining).
func setHealthFlags(h *Host, flags string) {
	h.EDSHealth = corev3.HealthStatus_HEALTHY.String()
	for _, f := range strings.Split(flags, "/") {
		switch f {
		case "failed_outlier_check":
			h.FailedOutlierCheck = true
		case "failed_active_hc":
			h.FailedActiveHealthCheck = true
		case "failed_eds_health":
			h.EDSHealth = corev3.HealthStatus_UNHEALTHY.String()
		case "degraded_eds_health":
			h.EDSHealth = corev3.HealthStatus_DEGRADED.String()
		case "eds_status_draining":
			h.EDSHealth = corev3.HealthStatus_DRAINING.String()
		case "pending_dynamic_removal":
			h.PendingRemoval = true
		case "pending_active_hc":
			h.PendingActiveHC = true
		case "excluded_via_immediate_hc_fail":
			h.ExcludedViaImmediateHCFail = true
		case "active_hc_timeout":
			h.ActiveHCTimeout = true
		case "degraded_active_hc":
			h.DegradedActiveHC = true
		}
	}
}
