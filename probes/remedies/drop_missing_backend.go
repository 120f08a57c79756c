package remedies

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// DropMissingBackend removes, from the rules of the routes the triage
// judged, each backendRef to a Service that does not exist, where the rule
// keeps another backend: its share of requests then goes to the others
// instead of getting 500 NC. A rule whose every backend is missing has
// nothing to keep: which Service it is meant for is the team's to say.
type DropMissingBackend struct{}

func (DropMissingBackend) Meta() Meta {
	return Meta{
		ID:     "drop-missing-backend",
		Causes: []string{"gateway.backend-not-found"},
		Does:   "removes the backendRefs to Services that do not exist from route rules that keep another backend (JSON patch)",
	}
}

func (DropMissingBackend) Compute(ctx context.Context, in *Input) Output {
	cfg, api, routes, forMesh, why := apiRoutesFor(ctx, in)
	if why != "" {
		return unpatchable("%s", why)
	}
	var out Output
	var notes, stuck []string
	for _, rv := range routesWithBrokenBackendsOf(in, api, routes) {
		missing := map[int][]mesh.BackendVerdict{}
		for _, b := range rv.InvalidBackends(forMesh) {
			if b.Invalid == mesh.BackendNotFound {
				missing[b.Rule] = append(missing[b.Rule], b)
			}
		}
		if len(missing) == 0 {
			continue
		}
		obj, ref, ok := routeObject(cfg, rv.Route)
		if !ok {
			continue
		}
		var ops []patch.Op
		for _, rule := range sortedKeysInt(missing) {
			bs := missing[rule]
			if len(bs) >= backendsOfRule(rv, rule, forMesh) {
				stuck = append(stuck, fmt.Sprintf("%s rule %d (every backendRef names a Service that does not exist: %s)", rv.Route, rule, backendNames(bs)))
				continue
			}
			// Highest index first, so that each remove's index still holds.
			sort.Slice(bs, func(i, j int) bool { return bs[i].Ref > bs[j].Ref })
			for _, b := range bs {
				ops = append(ops, patch.Test(backendRefPath(rule, b.Ref, "name"), b.Name), patch.Remove(backendRefPath(rule, b.Ref)))
				notes = append(notes, fmt.Sprintf("removes backendRef %s/%s:%d (%d%% of the rule's requests) from %s rule %d", b.Namespace, b.Name, b.Port, b.Percent, rv.Route, rule))
			}
		}
		if len(ops) == 0 {
			continue
		}
		p, err := change(ref, obj, ops...)
		if err != nil {
			return unpatchable("the change of %s does not apply: %v", rv.Route, err)
		}
		out.Patches = append(out.Patches, p)
	}
	if len(out.Patches) == 0 {
		if len(stuck) > 0 {
			return unpatchable("%s: deploy the Service, or point the rule at the one meant; no other backend of the rule can take its requests", strings.Join(stuck, "; "))
		}
		return unpatchable("no route the triage judged has a backendRef to a Service that does not exist")
	}
	out.Note = "The patch " + strings.Join(notes, "; ") + ": the rule's other backends take those requests (their weights keep their ratio); add the backendRef back once its Service exists."
	if len(stuck) > 0 {
		out.Note += " Left as they are: " + strings.Join(stuck, "; ") + "."
	}
	return out
}

// backendsOfRule counts the backendRefs (mirrors aside) of a rule that
// carry requests.
func backendsOfRule(rv mesh.RouteVerdict, rule int, forMesh bool) int {
	n := 0
	for _, b := range rv.Backends {
		if b.Rule == rule && b.Mesh == forMesh && !b.Mirror {
			n++
		}
	}
	return n
}

func backendNames(bs []mesh.BackendVerdict) string {
	var out []string
	for _, b := range bs {
		out = append(out, fmt.Sprintf("%s/%s:%d", b.Namespace, b.Name, b.Port))
	}
	return strings.Join(out, ", ")
}

func sortedKeysInt[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
