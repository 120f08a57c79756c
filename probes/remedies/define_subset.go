package remedies

import (
	"context"
	"fmt"
	"sort"
	"strings"

	networkingv1alpha3 "istio.io/api/networking/v1alpha3"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// DefineSubset adds each subset a route uses and no DestinationRule
// defines to the rule that applies (or to a new rule for the host when none
// does), with the labels the Service's pods really carry: a label key the
// rule's other subsets select on (else any label of the pods) whose value
// is the subset's name. It never invents labels: a subset no pod carries
// a label for is said so, and the route should move off it instead.
type DefineSubset struct{}

func (DefineSubset) Meta() Meta {
	return Meta{
		ID:     "define-subset",
		Causes: []string{"vs.subset-undefined"},
		Does:   "adds the undefined subset to the DestinationRule, with the labels its pods carry (JSON patch), or creates the rule",
	}
}

func (DefineSubset) Compute(ctx context.Context, in *Input) Output {
	cfg, _, views, err := in.Model(ctx)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	_, sd, err := in.ServiceData(ctx)
	if err != nil {
		return unpatchable("%v", err)
	}
	var subsets []string
	var rule *mesh.AppliedRule
	var endpoints []mesh.Endpoint
	for _, v := range views {
		for _, b := range v.Breaks() {
			if b.Reason == mesh.BreakSubsetUndefined && b.Destination.Host == in.Target.Host() && !contains(subsets, b.Destination.Subset) {
				subsets = append(subsets, b.Destination.Subset)
				rule = v.Rule
				endpoints = cfg.Endpoints(sd, v.Port)
			}
		}
	}
	if len(subsets) == 0 {
		return unpatchable("no route sends requests to an undefined subset of %s", in.Target.Host())
	}
	var existing []*networkingv1alpha3.Subset
	if rule != nil {
		existing = rule.Subsets
	}
	var add []any
	var notes []string
	for _, name := range subsets {
		labels, why := subsetLabels(name, existing, endpoints, sd.Service.Spec.Selector)
		if why != "" {
			return unpatchable("subset %s: %s", name, why)
		}
		add = append(add, map[string]any{"name": name, "labels": labels})
		notes = append(notes, fmt.Sprintf("subset %s with labels %s (%s)", name, selectorString(labels), countSelected(labels, endpoints)))
	}
	if rule == nil || len(rule.Rules) == 0 {
		obj, body := newRule(cfg, sd.Service.Namespace, sd.Service.Name, in.Target.Host(), add)
		p, err := patch.CreateObject(obj, body)
		if err != nil {
			return unpatchable("%v", err)
		}
		return Output{Patches: []patch.Patch{p}, Note: "No DestinationRule applies to " + in.Target.Host() + ": the patch creates " + obj.Namespace + "/" + obj.Name + " with " + strings.Join(notes, ", ") + ". Apply it before any route change."}
	}
	dr := rule.Rules[0]
	var ops []patch.Op
	if len(dr.Spec.GetSubsets()) == 0 {
		ops = append(ops, patch.Add("/spec/subsets", add))
	} else {
		for _, s := range add {
			ops = append(ops, patch.Add("/spec/subsets/-", s))
		}
	}
	p, err := drPatch(dr, ops)
	if err != nil {
		return unpatchable("the change of DestinationRule %s/%s does not apply: %v", dr.Namespace, dr.Name, err)
	}
	return Output{Patches: []patch.Patch{p}, Note: "The patch adds to DestinationRule " + dr.Namespace + "/" + dr.Name + " " + strings.Join(notes, ", ") + "; its other subsets stay. Apply it before any route change."}
}

// subsetLabels are the labels a subset named name selects its pods by:
// name as the value of a label key the other subsets select on, else of
// another label the Service's pods carry.
func subsetLabels(name string, existing []*networkingv1alpha3.Subset, endpoints []mesh.Endpoint, selector map[string]string) (map[string]string, string) {
	var keys []string
	for _, s := range existing {
		for _, k := range sortedKeys(s.GetLabels()) {
			if !contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	subsetKeys := append([]string(nil), keys...)
	var podKeys []string
	for _, e := range endpoints {
		for k := range e.Labels {
			if !contains(keys, k) && !contains(podKeys, k) && !generatedLabel(k) && selector[k] == "" {
				podKeys = append(podKeys, k)
			}
		}
	}
	sort.Strings(podKeys)
	keys = append(keys, podKeys...)
	for _, k := range keys {
		for _, e := range endpoints {
			if e.Labels[k] == name {
				return map[string]string{k: name}, ""
			}
		}
	}
	if len(subsetKeys) == 0 {
		return nil, fmt.Sprintf("no pod of the Service carries a label with the value %q: the pods it is meant for are not deployed, or are labelled otherwise", name)
	}
	return nil, fmt.Sprintf("no pod of the Service carries %s=%s (the label the other subsets select on): the pods it is meant for are not deployed, or are labelled otherwise", strings.Join(subsetKeys, "/"), name)
}

// countSelected says how many of the Service's endpoints the labels select.
func countSelected(labels map[string]string, endpoints []mesh.Endpoint) string {
	n, serving := 0, 0
	for _, e := range endpoints {
		if mesh.LabelsMatch(labels, e.Labels) {
			n++
			if e.Serving() {
				serving++
			}
		}
	}
	return fmt.Sprintf("%d of the Service's %d endpoints carry them, %d serving", n, len(endpoints), serving)
}

// newRule is a DestinationRule for host with subsets, named for the
// Service unless a rule of that name exists.
func newRule(cfg *mesh.Config, ns, service, host string, subsets []any) (patch.Object, map[string]any) {
	name := service
	for _, dr := range cfg.DestinationRules {
		if dr.Namespace == ns && dr.Name == name {
			name = service + "-subsets"
		}
	}
	obj := patch.Object{APIVersion: istioNetworking, Kind: "DestinationRule", Namespace: ns, Name: name}
	return obj, newObject(obj, map[string]any{"host": host, "subsets": subsets})
}
