// Package proxylog reads what the proxies log: the newest lines of a pod's
// istio-proxy (or ztunnel) log in the window of the incident, the tails
// each read keeps, which Envoy entries are a pod's inbound side, the hosts
// a caller's sidecar sent to BlackHoleCluster, and what the data plane's
// vocabulary makes of the failures logged (Reading).
package proxylog

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
)

// Window bounds every access-log read: the last 30 minutes.
const Window = 30 * time.Minute

// AccessLogTailLines bounds an access-log read: the newest 10,000 entries,
// about 4 MB of typical Istio TEXT entries (~400 bytes each), at most
// 10 MB (NewestLog's 1 KiB a line), the newest kept when they are longer.
const AccessLogTailLines = 10000

// The node proxies' log reads (NewestProxyLog keeps their newest lines).
const (
	// ZtunnelTailLines bounds one ztunnel's log read: it logs every
	// connection of its node, not only the Service's, 520-650 bytes a line.
	ZtunnelTailLines = 5000
	// WaypointTailLines bounds one waypoint pod's: Envoy access lines of
	// every Service bound to it, 400-600 bytes each.
	WaypointTailLines = AccessLogTailLines
)

// MaxUpstreamLogs caps how many upstream pods' logs are read.
const MaxUpstreamLogs = 5

// LineAllowance is the bytes a line a tail's byte limit allows for,
// well over the usual length of an Envoy or ztunnel access line.
const LineAllowance = 1 << 10

// NewestLog reads the newest opts.TailLines lines of a pod's log. The API
// server applies LimitBytes from the OLDEST line of the tail, so a tail
// whose bytes pass the limit loses its newest lines, the incident's: the
// read gets a limit of LineAllowance bytes a line, and lines longer
// than that on average, which fill it before the tail's end, make the read
// again with a shorter tail. What is left out is the oldest lines, never
// the newest. An access-log read is then up to 10 MB (10,000 lines), about
// 4 MB of typical entries.
func NewestLog(ctx context.Context, c cluster.Cluster, pod cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	opts.LimitBytes = opts.TailLines * LineAllowance
	for {
		data, err := c.Logs(ctx, pod, opts)
		if err != nil || int64(len(data)) < opts.LimitBytes {
			return data, err
		}
		// The n lines the limit held are the oldest of the tail: the next
		// tail leaves them and the one cut out, or, when they were most of
		// it, keeps three quarters of their count.
		n := int64(bytes.Count(data, []byte{'\n'}))
		shorter := max(n*3/4, opts.TailLines-n-1)
		if shorter <= 0 || shorter >= opts.TailLines {
			return data, nil // lines longer than the limit: nothing shorter to ask for
		}
		opts.TailLines = shorter // the same limit: the shorter tail fits it
	}
}

// ProxyOptions read istio-proxy's access lines of the last window.
func ProxyOptions(window time.Duration, tail int64) cluster.LogOptions {
	return cluster.LogOptions{Container: mesh.ProxyContainer, Since: window, TailLines: tail}
}

// NewestProxyLog reads the newest tail lines of pod's istio-proxy log in
// the access-log window.
func NewestProxyLog(ctx context.Context, c cluster.Cluster, pod cluster.PodRef, tail int64) ([]byte, error) {
	return NewestLog(ctx, c, pod, ProxyOptions(Window, tail))
}

// UpstreamLogPods are the pods worth reading, most recently started first
// (they log the present), sidecar-less pods left out.
func UpstreamLogPods(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if mesh.PodSidecar(&p) != mesh.SidecarNone {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Status.StartTime, out[j].Status.StartTime
		if a == nil || b == nil || a.Equal(b) {
			return out[i].Name < out[j].Name
		}
		return b.Before(a)
	})
	return out
}

// InboundEntry selects an upstream proxy's inbound entries (inbound|PORT||,
// InboundPassthroughCluster, and connections its inbound listener took no
// filter chain for); its outbound entries are its own calls. An outbound
// connection no listener matches goes to PassthroughCluster or
// BlackHoleCluster instead, so filter_chain_not_found is always inbound.
func InboundEntry(e *accesslog.Entry) bool {
	return strings.HasPrefix(e.UpstreamCluster, "inbound|") || strings.HasPrefix(e.UpstreamCluster, "InboundPassthroughCluster") ||
		e.UpstreamCluster == "" && e.ResponseCodeDetails == "filter_chain_not_found"
}
