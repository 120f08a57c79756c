package envoy

import (
	"bytes"
	"strconv"

	"github.com/meshtriage/meshtriage/probes/parse/clustername"
)

// Stats are the integer counters and gauges of Envoy's /stats text output
// ("name: value" lines). Histogram lines ("P0(...) P25(...)") are skipped.
// Cluster stat names are kept without the alt_stat_name delimiter Istio
// 1.23+ prints ("cluster.NAME;.STAT" is stored as "cluster.NAME.STAT"), so
// one lookup finds a counter whichever release wrote it.
type Stats map[string]uint64

// ParseStats reads /stats. keep, when not nil, selects the stat names to
// retain (it sees them normalised): a sidecar reports tens of thousands and
// a probe needs a handful.
func ParseStats(data []byte, keep func(name string) bool) Stats {
	out := Stats{}
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		// Cluster names hold ':' only in IPv6 literals, never followed by a
		// space, so the last ": " separates name and value.
		i := bytes.LastIndex(line, []byte(": "))
		if i <= 0 {
			continue
		}
		value := bytes.TrimSpace(line[i+2:])
		n, err := strconv.ParseUint(string(value), 10, 64)
		if err != nil {
			continue
		}
		name := clustername.StatName(string(bytes.TrimSpace(line[:i])))
		if keep == nil || keep(name) {
			out[name] = n
		}
	}
	return out
}

// ClusterStat is the value of cluster.<cluster>.<stat>, with whether Envoy
// reports it at all: Istio's default stats inclusion list leaves out the
// upstream stats of service clusters, and absent is not zero.
func (s Stats) ClusterStat(cluster, stat string) (uint64, bool) {
	v, ok := s["cluster."+cluster+"."+stat]
	return v, ok
}

// HasCluster reports whether any stat of cluster is present.
func (s Stats) HasCluster(cluster string) bool {
	prefix := "cluster." + cluster + "."
	for name := range s {
		if len(name) > len(prefix) && name[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}
