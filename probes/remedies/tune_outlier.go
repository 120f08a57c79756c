package remedies

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/patch"
)

// TuneOutlier changes, in place, the outlierDetection values that let
// outlier detection eject every host: a consecutive error count of 1 is
// raised to Envoy's default of 5, a maxEjectionPercent of 100 is lowered
// to 50. Nothing is added beside them and every other field stays.
type TuneOutlier struct{}

// Envoy's default consecutive_5xx, and the ejection cap that always leaves
// half the hosts.
const (
	outlierConsecutive = 5
	outlierMaxEjectPct = 50
	outlierAggressive  = 1
	outlierEjectEvery  = 100
)

func (TuneOutlier) Meta() Meta {
	return Meta{
		ID:     "tune-outlier",
		Causes: []string{"outlier.all-ejected"},
		Does:   "raises consecutive5xxErrors/consecutiveGatewayErrors 1 to 5 and lowers maxEjectionPercent 100 to 50 where the DestinationRule sets them",
	}
}

func (TuneOutlier) Compute(ctx context.Context, in *Input) Output {
	rules, ports, _, err := applyingRules(ctx, in)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	if len(rules) == 0 {
		return unpatchable("no DestinationRule applies to %s: its hosts were ejected by outlier detection set elsewhere (a rule in a namespace not read)", in.Target.Host())
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
			od, ok := tp.Policy["outlierDetection"].(map[string]any)
			if !ok {
				continue
			}
			base := tp.Path + "/outlierDetection"
			for _, field := range []string{"consecutive5xxErrors", "consecutiveGatewayErrors", "consecutiveErrors"} {
				if v, ok := number(od, field); ok && v == outlierAggressive {
					ops = append(ops, patch.Test(base+"/"+field, outlierAggressive), patch.Replace(base+"/"+field, outlierConsecutive))
					notes = append(notes, fmt.Sprintf("%s %s 1 → %d", tp.Where, field, outlierConsecutive))
				}
			}
			if v, ok := number(od, "maxEjectionPercent"); ok && v == outlierEjectEvery {
				ops = append(ops, patch.Test(base+"/maxEjectionPercent", outlierEjectEvery), patch.Replace(base+"/maxEjectionPercent", outlierMaxEjectPct))
				notes = append(notes, fmt.Sprintf("%s maxEjectionPercent 100 → %d", tp.Where, outlierMaxEjectPct))
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
		return unpatchable("the DestinationRules that apply (%s) set no consecutive error count of 1 and no maxEjectionPercent of 100: the hosts were ejected for the errors themselves (next direction)", ruleNames(rules))
	}
	out.Note = "The patch changes " + strings.Join(notes, ", ") + "; the rest of outlierDetection stays as it is."
	return out
}
