// Package envoyadmin is what the probes that read a proxy's Envoy admin
// API share: the paths they read (recorded scenarios are keyed by them),
// whether the target's caller has an Envoy to read, the pilot-agent
// command that makes the same read by hand, and a reader that stops at a
// probe's deadline.
package envoyadmin

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Envoy admin paths the probes read; recorded scenarios are keyed by them.
const (
	ClustersPath   = "/clusters?format=json"
	StatsPath      = "/stats"
	ListenersPath  = "/listeners?format=json"
	ConfigDumpPath = "/config_dump"
)

// NoSourceSummary is what the source-sidecar probes say without --from.
const NoSourceSummary = "no source pod: name the calling pod with --from pod/NAME"

// CheckSource says why a probe that reads the source's Envoy has
// nothing to read: no source named, or a source without a sidecar (skip is
// then the one-line reason). A pod that cannot be read for another reason
// (RBAC on pods) is no reason to stop: the admin API may still answer.
func CheckSource(ctx context.Context, c cluster.Cluster, t cluster.Target) (skip, what string, err error) {
	if t.Source == nil {
		return NoSourceSummary, "", nil
	}
	pod, err := c.GetPod(ctx, t.Source.Namespace, t.Source.Name)
	switch {
	case err == nil && mesh.PodSidecar(pod) == mesh.SidecarNone:
		return fmt.Sprintf("source pod %s has no %s: there is no Envoy to read, its calls leave without mTLS", t.Source, mesh.ProxyContainer), "", nil
	case apierrors.IsNotFound(err):
		return "", "get source pod " + t.Source.String(), err
	}
	return "", "", nil
}

// PilotAgentRequest is the by-hand way to GET an Envoy admin path, the same
// fallback the live Cluster uses when port-forward is refused.
func PilotAgentRequest(pod cluster.PodRef, path string) string {
	return fmt.Sprintf("kubectl exec -n %s %s -c %s -- pilot-agent request GET '%s'", pod.Namespace, pod.Name, mesh.ProxyContainer, path)
}

// ContextReader reads r until ctx is done: decoding a big config dump
// takes a second or more, and stops when the probe's deadline does.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	return ctxReader{ctx: ctx, r: r}
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
