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
