package remedies

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// SizePool raises, in place, each connectionPool limit set below
// probes.TinyPoolLimit (the threshold at which the probes call a pool
// tiny) to ten times that threshold. It is a floor that ordinary load does
// not overflow, not a size computed from the callers' concurrency, which
// the triage does not measure; the note says so.
type SizePool struct{}

var poolLimits = [][]string{
	{"tcp", "maxConnections"},
	{"http", "http1MaxPendingRequests"},
	{"http", "http2MaxRequests"},
}

// poolFloor is what a tiny limit is raised to.
const poolFloor = 10 * probes.TinyPoolLimit

func (SizePool) Meta() Meta {
	return Meta{
		ID:     "size-pool",
		Causes: []string{"circuit-breaker.overflow"},
		Does:   fmt.Sprintf("raises each connectionPool limit below %d to %d where the DestinationRule sets it", probes.TinyPoolLimit, poolFloor),
	}
}

func (SizePool) Compute(ctx context.Context, in *Input) Output {
	rules, ports, _, err := applyingRules(ctx, in)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	var out Output
	var notes []string
	for _, dr := range rules {
		tps, err := trafficPolicies(dr, ports)
		if err != nil {
			return unpatchable("read DestinationRule %s/%s: %v", dr.Namespace, dr.Name, err)
		}
		var ops []patch.Op
		for _, tp := range tps {
			for _, l := range poolLimits {
				v, ok := number(tp.Policy, "connectionPool", l[0], l[1])
				if !ok || v <= 0 || v >= probes.TinyPoolLimit {
					continue
				}
				path := tp.Path + patch.Pointer("connectionPool", l[0], l[1])
				ops = append(ops, patch.Test(path, int(v)), patch.Replace(path, poolFloor))
				notes = append(notes, fmt.Sprintf("%s %s.%s %d → %d", tp.Where, l[0], l[1], int(v), poolFloor))
			}
		}
		if len(ops) == 0 {
			continue
		}
		p, err := drPatch(dr, ops)
		if err != nil {
			return unpatchable("the change of DestinationRule %s/%s does not apply: %v", dr.Namespace, dr.Name, err)
		}
		out.Patches = append(out.Patches, p)
	}
	if len(out.Patches) == 0 {
		return unpatchable("no DestinationRule that applies (%s) sets a connectionPool limit below %d: the limits are sized, the upstream is saturated (next direction)", ruleNames(rules), probes.TinyPoolLimit)
	}
	out.Note = fmt.Sprintf("The patch raises %s. %d is a floor for ordinary load, not a size computed from this Service's concurrency, which the triage does not measure: size the limits from peak requests per second times latency, per caller pod.",
		strings.Join(notes, ", "), poolFloor)
	return out
}
