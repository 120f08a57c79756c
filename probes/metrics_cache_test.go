package probes

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// movingCounters answers /stats/prometheus with a counter that moves on at
// every read, as a live sidecar's does.
type movingCounters struct {
	*fakeCluster
	mu    sync.Mutex
	reads int
}

func (m *movingCounters) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	if path != prometheusPath {
		return m.fakeCluster.EnvoyAdmin(ctx, pod, path)
	}
	m.mu.Lock()
	m.reads++
	n := m.reads
	m.mu.Unlock()
	return []byte(fmt.Sprintf("istio_requests_total{reporter=\"source\",destination_service=\"orders.shop.svc.cluster.local\",response_code=\"503\",response_flags=\"UF\"} %d\n", n*10)), nil
}

func TestMetricsSamplesTwiceThroughTheCache(t *testing.T) {
	live := &movingCounters{fakeCluster: newFakeCluster(t, metricsPod("web", "web-1", true, nil))}
	cache := cluster.NewCache(live)
	src := cluster.PodRef{Namespace: "web", Name: "web-1"}
	target := cluster.Target{Namespace: "shop", Service: "orders", Source: &src}
	res := Run(context.Background(), MetricsProbe{Interval: time.Millisecond}, cache, target)
	if res.Status != StatusFail || res.Facts["metrics_503"] != 20 || live.reads != 2 {
		t.Errorf("the second sample must reach the cluster: %s %q %v after %d reads", res.Status, res.Summary, res.Facts, live.reads)
	}
	if cluster.Uncached(cache) != cluster.Cluster(live) || cluster.Uncached(live) != cluster.Cluster(live) {
		t.Error("Uncached does not strip the cache")
	}
}
