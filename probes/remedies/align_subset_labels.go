package remedies

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// AlignSubsetLabels changes the label of a routed subset that selects no
// pod to the value the Service's pods carry, when the evidence points at
// one: the subset selects on one label, and the Service's serving pods
// that no other subset selects all carry one other value of it (a renamed
// version label). Otherwise the pods the subset is meant for are not
// deployed, and it says so: deploying them, or moving the route off the
// subset (the direction before), is the fix.
type AlignSubsetLabels struct{}

func (AlignSubsetLabels) Meta() Meta {
	return Meta{
		ID:     "align-subset-labels",
		Causes: []string{"dr.subset-no-pods"},
		Does:   "sets an empty subset's label to the value the Service's unselected pods carry, when they agree on one",
	}
}

func (AlignSubsetLabels) Compute(ctx context.Context, in *Input) Output {
	cfg, _, views, err := in.Model(ctx)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	_, sd, err := in.ServiceData(ctx)
	if err != nil {
		return unpatchable("%v", err)
	}
	var out Output
	var notes []string
	done := map[string]bool{}
	for _, v := range views {
		if v.Rule == nil {
			continue
		}
		endpoints := cfg.Endpoints(sd, v.Port)
		for _, b := range v.Breaks() {
			name := b.Destination.Subset
			if b.Reason != mesh.BreakSubsetEmpty || done[name] {
				continue
			}
			done[name] = true
			ops, note, why := relabel(v.Rule, name, endpoints)
			if why != "" {
				return unpatchable("subset %s: %s", name, why)
			}
			dr, _ := subsetRule(v.Rule, name)
			p, err := drPatch(dr, ops)
			if err != nil {
				return unpatchable("the change of DestinationRule %s/%s does not apply: %v", dr.Namespace, dr.Name, err)
			}
			out.Patches = append(out.Patches, p)
			notes = append(notes, note)
		}
	}
	if len(out.Patches) == 0 {
		return unpatchable("no routed subset of %s is empty", in.Target.Host())
	}
	out.Note = "The patch " + strings.Join(notes, "; ") + "."
	return out
}

// relabel: the JSON patch operations that set subset name's one label to
// the value the pods no other subset selects agree on.
func relabel(rule *mesh.AppliedRule, name string, endpoints []mesh.Endpoint) ([]patch.Op, string, string) {
	dr, idx := subsetRule(rule, name)
	if dr == nil {
		return nil, "", "no rule that applies defines it"
	}
	labels := dr.Spec.GetSubsets()[idx].GetLabels()
	if len(labels) != 1 {
		return nil, "", fmt.Sprintf("it selects on %d labels (%s): which of them is wrong is not in the cluster", len(labels), selectorString(labels))
	}
	key := sortedKeys(labels)[0]
	values := map[string]int{}
	unselected := 0
	for _, e := range endpoints {
		if !e.Serving() {
			continue
		}
		taken := false
		for _, s := range rule.Subsets {
			if s.GetName() != name && len(s.GetLabels()) > 0 && mesh.LabelsMatch(s.GetLabels(), e.Labels) {
				taken = true
			}
		}
		if taken {
			continue
		}
		unselected++
		if v, ok := e.Labels[key]; ok {
			values[v]++
		}
	}
	switch {
	case unselected == 0:
		return nil, "", fmt.Sprintf("every serving pod of the Service is selected by another subset, and none carries %s=%s: the pods of subset %s are not deployed", key, labels[key], name)
	case len(values) != 1:
		return nil, "", fmt.Sprintf("the %d serving pods no other subset selects carry %d values of %s: which one the subset is for is the team's call", unselected, len(values), key)
	}
	value := sortedKeys(values)[0]
	path := patch.Pointer("spec", "subsets", idx, "labels", key)
	ops := []patch.Op{
		patch.Test(patch.Pointer("spec", "subsets", idx, "name"), name),
		patch.Test(path, labels[key]),
		patch.Replace(path, value),
	}
	return ops, fmt.Sprintf("sets subset %s of %s/%s to select %s=%s (was %s, which no pod carries): %d serving pods no other subset selects carry it", name, dr.Namespace, dr.Name, key, value, labels[key], values[value]), ""
}
