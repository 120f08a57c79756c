package probes

import (
	"context"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
)

// Reads of the evidence for probes/remedies, which compute fixes from what
// the probes saw: each is the probe's own read, so the session's read cache
// answers it with what the probe judged.

// BlackholedHost is an external host the caller's sidecar sent to
// BlackHoleCluster (or answered from block_all), with the original
// destination ports and whether it came as TLS (SNI on a TCP entry).
type BlackholedHost struct {
	Host  string
	Ports []int
	TLS   bool
	Count int
}

// BlackholedHosts reads the caller's istio-proxy log as the service-entry
// probe does and lists the hosts it refused to route.
func BlackholedHosts(ctx context.Context, c cluster.Cluster, src cluster.PodRef) ([]BlackholedHost, error) {
	log, err := newestLog(ctx, c, src, proxyLogOptions(seLogWindow, AccessLogTailLines))
	if err != nil {
		return nil, err
	}
	hosts, _ := blackholedHosts(log)
	out := make([]BlackholedHost, 0, len(hosts))
	for _, h := range hosts {
		e, _ := accesslog.ParseLine(h.Sample)
		out = append(out, BlackholedHost{Host: h.Host, Ports: h.Ports, TLS: e.TCP && e.RequestedServerName != "", Count: h.Count})
	}
	return out, nil
}
