// Package actions holds the few things meshtriage does that are not reads:
// a test request sent through the source sidecar, and Envoy debug logging
// turned on for a while and then reverted. Each runs only when the on-call
// asks for it (a confirmation in the TUI, a flag of `check`), and each is
// recorded in the incident log with what was done and how it was undone.
//
// probes.Cluster stays read-only; the write side is Runner, which only a
// live cluster implements (probes/cluster/live). A recorded scenario has no pods to
// exec into, so RunnerOf tells the caller the action needs a live cluster.
package actions

import (
	"context"
	"errors"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

// Runner is what an action needs of a cluster beyond probes.Cluster.
type Runner interface {
	// Exec runs command in a container of pod and returns what it wrote.
	// A non-zero exit is an error; stdout and stderr are still returned.
	Exec(ctx context.Context, pod cluster.PodRef, container string, command []string) (stdout, stderr []byte, err error)
	// EnvoyAdminPost POSTs path (with its query) to pod's Envoy admin API:
	// Envoy refuses a GET for anything that changes state.
	EnvoyAdminPost(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error)
}

// ErrNeedsLive says an action was asked of a cluster that cannot run it (a
// recorded scenario, --manifests).
var ErrNeedsLive = errors.New("this action needs a live cluster: a recorded scenario or manifests have no pods to exec into")

// RunnerOf returns c's Runner, looking through wrappers that expose
// Unwrap() probes.Cluster (the read cache).
func RunnerOf(c cluster.Cluster) (Runner, error) {
	for c != nil {
		if r, ok := c.(Runner); ok {
			return r, nil
		}
		u, ok := c.(interface{ Unwrap() cluster.Cluster })
		if !ok {
			break
		}
		c = u.Unwrap()
	}
	return nil, ErrNeedsLive
}

// Recorder receives each action record as it happens; the session's
// RecordAction is one, and nil records nothing.
type Recorder func(runbook.Action)

func (r Recorder) record(a runbook.Action) {
	if r != nil {
		r(a)
	}
}
