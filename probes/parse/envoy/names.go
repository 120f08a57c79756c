// Package envoy parses what a sidecar's Envoy admin API and istiod's debug
// endpoint return: /clusters?format=json, /stats, /listeners?format=json,
// /config_dump and /debug/syncz. Every parser is pure (bytes in, values out)
// and tolerant: fields and types it does not know are skipped, never fatal,
// because live sidecars carry Istio extensions go-control-plane has never
// heard of.
package envoy

import (
	"strings"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// ClusterName is an Istio cluster name split into its parts:
// DIRECTION|PORT|SUBSET|HOST, e.g. outbound|8080|v2|orders.shop.svc.cluster.local.
type ClusterName struct {
	Direction string // outbound, inbound, inbound-vip, outbound_.8080_ ...
	Port      int32
	Subset    string
	Host      string
}

// ParseClusterName splits name; ok is false for names without the four
// '|'-separated parts (BlackHoleCluster, PassthroughCluster, xds-grpc, ...).
// The alt_stat_name form (NAME;) is read as NAME.
// A waypoint's inbound-vip|PORT|http/SUBSET|HOST reads as Subset SUBSET
// (package clustername).
func ParseClusterName(name string) (ClusterName, bool) {
	p, ok := clustername.Split(name)
	if !ok {
		return ClusterName{}, false
	}
	return ClusterName{Direction: p.Direction, Port: p.Port, Subset: p.Subset, Host: p.Host}, true
}

// IsTargetCluster reports an outbound cluster for host and port (any port
// when port is 0), any subset, whether name is printed as NAME or NAME;.
func IsTargetCluster(name, host string, port int32) bool {
	name = clustername.Name(name)
	if !strings.HasPrefix(name, "outbound|") || !strings.HasSuffix(name, "|"+host) {
		return false
	}
	n, ok := ParseClusterName(name)
	return ok && n.Direction == "outbound" && n.Host == host && (port == 0 || n.Port == port)
}

// TargetMatcher returns IsTargetCluster bound to host and port, the shape the
// decoders take to pick clusters.
func TargetMatcher(host string, port int32) func(string) bool {
	return func(name string) bool { return IsTargetCluster(name, host, port) }
}

// IsWaypointCluster reports a waypoint's cluster for host and port (any
// port when port is 0), any protocol and subset:
// inbound-vip|PORT|http[/SUBSET]|HOST.
func IsWaypointCluster(name, host string, port int32) bool {
	p, ok := clustername.Split(name)
	return ok && p.Direction == clustername.InboundVIP && p.Host == host && (port == 0 || p.Port == port)
}

// WaypointMatcher returns IsWaypointCluster bound to host and port.
func WaypointMatcher(host string, port int32) func(string) bool {
	return func(name string) bool { return IsWaypointCluster(name, host, port) }
}
