package remedies

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// trafficPolicyAt is one trafficPolicy of a DestinationRule that applies
// to the Service's clusters: the rule's own, its portLevelSettings for a
// port judged, and each subset's (with their port levels), as JSON.
type trafficPolicyAt struct {
	Path   string // JSON pointer, e.g. /spec/subsets/1/trafficPolicy
	Where  string // for notes: "shop/orders", "shop/orders subset v2 port 8080"
	Policy map[string]any
}

// trafficPolicies lists dr's traffic policies that reach the clusters of
// ports (every port-level setting when ports is empty).
func trafficPolicies(dr *networkingv1.DestinationRule, ports []int32) ([]trafficPolicyAt, error) {
	b, err := json.Marshal(dr)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	spec, _ := doc["spec"].(map[string]any)
	ref := dr.Namespace + "/" + dr.Name
	var out []trafficPolicyAt
	add := func(path, where string, tp any) {
		m, ok := tp.(map[string]any)
		if !ok {
			return
		}
		out = append(out, trafficPolicyAt{Path: path, Where: where, Policy: m})
		levels, _ := m["portLevelSettings"].([]any)
		for i, l := range levels {
			lm, _ := l.(map[string]any)
			port, _ := lm["port"].(map[string]any)
			n, _ := port["number"].(float64)
			if len(ports) > 0 && !containsPort(ports, int32(n)) {
				continue
			}
			out = append(out, trafficPolicyAt{Path: fmt.Sprintf("%s/portLevelSettings/%d", path, i), Where: fmt.Sprintf("%s port %d", where, int(n)), Policy: lm})
		}
	}
	add("/spec/trafficPolicy", ref, spec["trafficPolicy"])
	subsets, _ := spec["subsets"].([]any)
	for i, s := range subsets {
		sm, _ := s.(map[string]any)
		name, _ := sm["name"].(string)
		add(fmt.Sprintf("/spec/subsets/%d/trafficPolicy", i), ref+" subset "+name, sm["trafficPolicy"])
	}
	return out, nil
}

func containsPort(ports []int32, p int32) bool {
	for _, x := range ports {
		if x == p {
			return true
		}
	}
	return false
}

// applyingRules are the DestinationRules the model applies to the target
// for the caller, and the ports judged.
func applyingRules(ctx context.Context, in *Input) ([]*networkingv1.DestinationRule, []int32, *mesh.Config, error) {
	cfg, _, views, err := in.Model(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	seen := map[string]bool{}
	var rules []*networkingv1.DestinationRule
	var ports []int32
	for _, v := range views {
		ports = append(ports, v.Port)
		if v.Rule == nil {
			continue
		}
		for _, dr := range v.Rule.Rules {
			if k := dr.Namespace + "/" + dr.Name; !seen[k] {
				seen[k] = true
				rules = append(rules, dr)
			}
		}
	}
	return rules, ports, cfg, nil
}

// number reads a JSON number field of m.
func number(m map[string]any, keys ...string) (float64, bool) {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		cur = mm[k]
	}
	f, ok := cur.(float64)
	return f, ok
}

// drPatch is the patch of ops on dr.
func drPatch(dr *networkingv1.DestinationRule, ops []patch.Op) (patch.Patch, error) {
	return change(objectOf(istioNetworking, "DestinationRule", dr), dr, ops...)
}

func ruleNames(rules []*networkingv1.DestinationRule) string {
	var names []string
	for _, r := range rules {
		names = append(names, r.Namespace+"/"+r.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// subsetRule is the applying rule that defines subset name, and its index
// in the rule's subsets.
func subsetRule(rule *mesh.AppliedRule, name string) (*networkingv1.DestinationRule, int) {
	if rule == nil {
		return nil, -1
	}
	for _, dr := range rule.Rules {
		for i, s := range dr.Spec.GetSubsets() {
			if s.GetName() == name {
				return dr, i
			}
		}
	}
	return nil, -1
}
