package probes

import (
	"bytes"
	"context"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// logLineAllowance is the bytes a line a tail's byte limit allows for,
// well over the usual length of an Envoy or ztunnel access line.
const logLineAllowance = 1 << 10

// newestLog reads the newest opts.TailLines lines of a pod's log. The API
// server applies LimitBytes from the OLDEST line of the tail, so a tail
// whose bytes pass the limit loses its newest lines, the incident's: the
// read gets a limit of logLineAllowance bytes a line, and lines longer
// than that on average, which fill it before the tail's end, make the read
// again with a shorter tail. What is left out is the oldest lines, never
// the newest. An access-log read is then up to 10 MB (10,000 lines), about
// 4 MB of typical entries.
func newestLog(ctx context.Context, c cluster.Cluster, pod cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	opts.LimitBytes = opts.TailLines * logLineAllowance
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

// proxyLogOptions read istio-proxy's access lines of the last window.
func proxyLogOptions(window time.Duration, tail int64) cluster.LogOptions {
	return cluster.LogOptions{Container: mesh.ProxyContainer, Since: window, TailLines: tail}
}

// newestProxyLog reads the newest tail lines of pod's istio-proxy log in
// the access-log window.
func newestProxyLog(ctx context.Context, c cluster.Cluster, pod cluster.PodRef, tail int64) ([]byte, error) {
	return newestLog(ctx, c, pod, proxyLogOptions(accessLogWindow, tail))
}
