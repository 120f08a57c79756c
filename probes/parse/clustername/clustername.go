// Package clustername is the one place an Envoy cluster name or cluster stat
// name is normalised, whichever output it was read from: /clusters (JSON and
// text), /stats, /stats/prometheus labels and access-log upstream_cluster.
//
// Since Istio 1.23 every cluster istiod sends carries alt_stat_name: its name
// followed by ";" (pilot's DelimitedStatsPrefix), so that the stats tag
// extractor can find where a cluster name with dots ends. Envoy then prints
// that name wherever it prints the cluster's observability name:
//
//	cluster.outbound|80||echo-server.default.svc.cluster.local;.upstream_rq_pending_overflow: 139
//	"upstream_cluster":"outbound|8080||orders.shop.svc.cluster.local;"
//	"upstream_cluster":"BlackHoleCluster;"
//
// A reader that compares names as printed finds none of them: the overflow
// passes as unknown, the 503s match no target, BlackHoleCluster; is no black
// hole. Every parser here runs what it reads through Name or StatName
// first.
package clustername

import "strings"

// AltStatDelimiter ends an alt_stat_name.
const AltStatDelimiter = ";"

// Name returns the cluster name without the alt_stat_name delimiter Istio
// 1.23+ appends, e.g. "BlackHoleCluster;" -> "BlackHoleCluster". Names
// without it are returned unchanged.
func Name(name string) string {
	return strings.TrimSuffix(name, AltStatDelimiter)
}

// StatName returns a stat name with the cluster part normalised:
// "cluster.NAME;.STAT" -> "cluster.NAME.STAT". Stat names without an
// alt_stat_name are returned unchanged. Envoy's stat names hold no ";", so
// the delimiter is the last ";." (a name of another Envoy may hold one).
func StatName(stat string) string {
	i := strings.LastIndex(stat, AltStatDelimiter+".")
	if i < 0 {
		return stat
	}
	return stat[:i] + stat[i+len(AltStatDelimiter):]
}

// Parts is an Istio cluster name split: DIRECTION|PORT|SUBSET|HOST, e.g.
// outbound|8080|v2|orders.shop.svc.cluster.local. A waypoint's clusters for
// the services bound to it are inbound-vip|PORT|PROTOCOL[/SUBSET]|HOST
// (istiod's cluster_waypoint.go): inbound-vip|8080|http|orders.shop.svc.cluster.local,
// inbound-vip|8080|http/v2|..., inbound-vip|5432|tcp|...; there the third
// part is the protocol the waypoint speaks, then the subset.
type Parts struct {
	Direction string // outbound, inbound, inbound-vip, ...
	Port      int32
	Subset    string
	// Protocol is inbound-vip's "http" or "tcp", "" for other directions.
	Protocol string
	Host     string
}

// InboundVIP is the direction of a waypoint's clusters for the services
// it serves.
const InboundVIP = "inbound-vip"

// Split splits name (printed as NAME or NAME;); ok is false for names
// without the four '|'-separated parts (BlackHoleCluster, main_internal,
// connect_originate, xds-grpc, ...).
func Split(name string) (Parts, bool) {
	parts := strings.Split(Name(name), "|")
	if len(parts) != 4 {
		return Parts{}, false
	}
	port, ok := atoi32(parts[1])
	if !ok {
		return Parts{}, false
	}
	p := Parts{Direction: parts[0], Port: port, Subset: parts[2], Host: parts[3]}
	if p.Direction == InboundVIP {
		p.Protocol, p.Subset, _ = strings.Cut(parts[2], "/")
	}
	return p, true
}

func atoi32(s string) (int32, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}

// ConnectOriginate is the internal listener an Istio proxy (a waypoint,
// a sidecar or a gateway sending HBONE) tunnels through: its upstream
// hosts are envoy://connect_originate/IP:PORT.
const ConnectOriginate = "connect_originate"

// TunnelTarget reads an upstream host address as Envoy prints an internal
// address, envoy://LISTENER/ENDPOINT (access-log %UPSTREAM_HOST%, /clusters
// text): for envoy://connect_originate/10.244.1.7:8080 it returns
// "10.244.1.7:8080", the pod the tunnel goes to, and true. Any other
// address is returned unchanged, with false.
func TunnelTarget(addr string) (string, bool) {
	rest, ok := strings.CutPrefix(addr, "envoy://")
	if !ok {
		return addr, false
	}
	listener, endpoint, found := strings.Cut(rest, "/")
	if !found || listener != ConnectOriginate || endpoint == "" {
		return addr, false
	}
	return endpoint, true
}
