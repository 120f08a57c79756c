package mesh

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ShardSettle is how long an endpoint must have been Ready in its cluster
// before its absence from istiod's index counts. istiod adds an endpoint
// to its index as its informer delivers the EndpointSlice (milliseconds;
// the push debounce comes after the index), so a minute covers the gap
// between the triage's two reads and any clock skew with the API server.
const ShardSettle = time.Minute

// StaleShard is a remote cluster whose endpoints of the target istiod's
// endpoint index (/debug/endpointShardz, the shard of that cluster's ID)
// holds differently from the cluster's own EndpointSlices: istiod pushes
// from its index, so the caller gets what the index holds.
type StaleShard struct {
	Context, ClusterID string
	// Missing are Ready endpoints of the cluster, Ready for over
	// ShardSettle, that the shard lacks.
	Missing []ClusterEndpoint
	// Gone are the shard's addresses the cluster's slices no longer list.
	Gone []string
}

// StaleShards compares, for each remote cluster read whose cluster ID
// istiod reads (held holds a key for every such ID: its shard's addresses,
// none when istiod holds no endpoint of the target there), the cluster's
// endpoints with istiod's. A cluster is stale only when a Ready endpoint
// known to be older than ShardSettle at now is missing: a gone address
// alone may be a pod removed between the two reads. unknown says where
// that could not be told (an endpoint's Ready time or its pod not read).
func StaleShards(clusters []ClusterRead, held map[string][]string, now time.Time) (stale []StaleShard, unknown []string) {
	for _, c := range clusters {
		if c.Local || c.SlicesUnknown != "" || c.ClusterID == "" {
			continue
		}
		addrs, ok := held[c.ClusterID]
		if !ok {
			continue
		}
		inShard := map[string]bool{}
		for _, a := range addrs {
			inShard[a] = true
		}
		s := StaleShard{Context: c.Context, ClusterID: c.ClusterID}
		listed := map[string]bool{}
		undated := 0
		for _, e := range clusterAddresses(c) {
			listed[e.Address] = true
			if !e.Ready || inShard[e.Address] {
				continue
			}
			since, ok := readySince(c.Pods[e.Pod])
			switch {
			case !ok:
				undated++
			case now.Sub(since) > ShardSettle:
				s.Missing = append(s.Missing, e)
			}
		}
		for _, a := range addrs {
			if !listed[a] {
				s.Gone = append(s.Gone, a)
			}
		}
		sort.Strings(s.Gone)
		if undated > 0 {
			unknown = append(unknown, c.Context+": whether istiod's index is behind the cluster is not known for endpoints whose pod or Ready time was not read")
		}
		if len(s.Missing) > 0 {
			stale = append(stale, s)
		}
	}
	return stale, unknown
}

// readySince is when pod last became Ready, as its Ready condition says.
func readySince(pod *corev1.Pod) (time.Time, bool) {
	if pod == nil {
		return time.Time{}, false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
