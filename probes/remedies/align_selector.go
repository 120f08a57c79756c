package remedies

import (
	"context"
	"fmt"

	"github.com/meshtriage/meshtriage/probes/patch"
)

// AlignSelector corrects a Service selector that matches no pod when one
// label of it is what stands between it and the pods: leaving that label
// out matches pods of one workload, and they all carry one other value of
// it (a renamed version) or none (a label the pods never had). The
// selector then takes that value, or drops the label. Any other mismatch
// is the team's intent, not the cluster's, and it says so.
type AlignSelector struct{}

func (AlignSelector) Meta() Meta {
	return Meta{
		ID:     "align-selector",
		Causes: []string{"service.no-selector-match"},
		Does:   "changes or drops the one selector label that no pod matches, when the pods it would then select are one workload's",
		Reads:  []string{"pods (by the selector without one label, in the Service's namespace)"},
	}
}

func (AlignSelector) Compute(ctx context.Context, in *Input) Output {
	svc, err := in.Cluster.GetService(ctx, in.Target.Namespace, in.Target.Service)
	if err != nil {
		return unpatchable("the Service could not be read: %v", err)
	}
	sel := svc.Spec.Selector
	if len(sel) < 2 {
		return unpatchable("the selector %s has one label and no pod carries it: which pods the Service should select is not in the cluster", selectorString(sel))
	}
	type candidate struct {
		key, value string // value "" drops the key
		pods       int
		workload   workload
	}
	var found []candidate
	for _, key := range sortedKeys(sel) {
		rest := map[string]string{}
		for k, v := range sel {
			if k != key {
				rest[k] = v
			}
		}
		pods, err := in.Cluster.ListPods(ctx, svc.Namespace, rest)
		if err != nil || len(pods) == 0 {
			continue
		}
		values := map[string]bool{}
		ws := map[workload]bool{}
		var w workload
		for i := range pods {
			values[pods[i].Labels[key]] = true
			w = workloadOf(&pods[i])
			ws[w] = true
		}
		if len(values) != 1 || len(ws) != 1 {
			continue
		}
		found = append(found, candidate{key: key, value: sortedKeys(values)[0], pods: len(pods), workload: w})
	}
	if len(found) != 1 {
		return unpatchable("no single label of the selector %s stands between it and one workload's pods: which pods the Service should select is the team's call", selectorString(sel))
	}
	c := found[0]
	var note string
	path := patch.Pointer("spec", "selector", c.key)
	var ops []patch.Op
	if c.value == "" {
		ops = []patch.Op{patch.Test(path, sel[c.key]), patch.Remove(path)}
		note = fmt.Sprintf("The patch drops %s=%s from the selector: the %d pods of %s match the rest and carry no %s label.", c.key, sel[c.key], c.pods, c.workload, c.key)
	} else {
		ops = []patch.Op{patch.Test(path, sel[c.key]), patch.Replace(path, c.value)}
		note = fmt.Sprintf("The patch sets the selector's %s from %s to %s, which the %d pods of %s carry.", c.key, sel[c.key], c.value, c.pods, c.workload)
	}
	p, err := change(objectOf(coreV1, "Service", svc), svc, ops...)
	if err != nil {
		return unpatchable("the change of Service %s/%s does not apply: %v", svc.Namespace, svc.Name, err)
	}
	return Output{Patches: []patch.Patch{p}, Note: note}
}
