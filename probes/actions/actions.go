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
)

// Runner is what an action needs of a cluster beyond cluster.Cluster.
type Runner interface {
	// Exec runs command in a container of pod and returns what it wrote.
	// A non-zero exit is an error; stdout and stderr are still returned.
	Exec(ctx context.Context, pod cluster.PodRef, container string, command []string) (stdout, stderr []byte, err error)
	// EnvoyAdminPost POSTs path (with its query) to pod's Envoy admin API:
	// Envoy refuses a GET for anything that changes state.
	EnvoyAdminPost(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error)
}

// ErrNeedsLive says an action was asked of a source that cannot run it (a
// recorded scenario, --manifests).
var ErrNeedsLive = errors.New("this action needs a live cluster: a recorded scenario or manifests have no pods to exec into")

// Record is what one action did, for the incident log: what was changed
// and how it was undone, or what it showed.
type Record struct {
	Name     string `json:"name"`
	Target   string `json:"target"`
	Done     string `json:"done"`
	Undo     string `json:"undo,omitempty"`
	Reverted bool   `json:"reverted,omitempty"`
	Error    string `json:"error,omitempty"`
	// Output is what the action showed: the test request's transcript, the
	// Envoy debug log lines captured while debug logging was on.
	Output string `json:"output,omitempty"`
}

// Recorder receives each action record as it happens; a triage's Record is
// one, and nil records nothing.
type Recorder func(Record)

func (r Recorder) record(a Record) {
	if r != nil {
		r(a)
	}
}
