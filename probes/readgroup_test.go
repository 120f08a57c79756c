package probes

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

func TestReadGroupRunsEveryReadAndWaits(t *testing.T) {
	var g readGroup
	var done atomic.Int32
	release := make(chan struct{})
	for range 5 {
		g.Go(func() {
			<-release // all five must be running at once to get past this
			done.Add(1)
		})
	}
	close(release)
	g.Wait()
	if done.Load() != 5 {
		t.Errorf("Wait returned after %d of 5 reads", done.Load())
	}
}

// panicsInRead is a probe whose concurrent read panics.
type panicsInRead struct{ TargetProbe }

func (panicsInRead) Run(context.Context, cluster.Cluster, cluster.Target) Result {
	var g readGroup
	g.Go(func() { panic("boom in a read") })
	g.Wait()
	return Result{Status: StatusPass}
}

// A panic in a concurrent read reaches probes.Run's recover instead of
// taking the process down.
func TestAPanicInAConcurrentReadIsTheProbesError(t *testing.T) {
	res := Run(context.Background(), panicsInRead{}, nil, cluster.Target{Namespace: "shop", Service: "orders"})
	if res.Status != StatusError || !strings.Contains(res.Summary, "boom in a read") {
		t.Errorf("result = %s %q, want the panic as the probe's error", res.Status, res.Summary)
	}
}
