package probes

import (
	"context"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// panicsInRead is a probe whose concurrent read panics.
type panicsInRead struct{ TargetProbe }

func (panicsInRead) Run(context.Context, cluster.Cluster, cluster.Target) Result {
	var g readgroup.Group
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
