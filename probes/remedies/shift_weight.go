package remedies

import (
	"context"
	"fmt"
	"sort"
	"strings"

	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// ShiftWeight moves the weight of every route destination that fails all
// its requests (a subset that selects no pod, or one no DestinationRule
// defines) to the route's destinations that serve, in proportion to their
// weights; a route with no serving destination left goes to the one
// subset of the rule that serves, else to the Service's pods without a
// subset. The broken destinations are removed from the route, nothing
// else of the VirtualService changes: make-before-break, the subset can be
// fixed or removed afterwards.
type ShiftWeight struct{}

func (ShiftWeight) Meta() Meta {
	return Meta{
		ID:     "shift-weight",
		Causes: []string{"dr.subset-no-pods", "vs.subset-undefined"},
		Does:   "moves the weight of a route's failing destinations to its serving ones (JSON patch of the VirtualService)",
	}
}

func (ShiftWeight) Compute(ctx context.Context, in *Input) Output {
	reason := mesh.BreakSubsetEmpty
	if in.Cause == "vs.subset-undefined" {
		reason = mesh.BreakSubsetUndefined
	}
	cfg, caller, views, err := in.Model(ctx)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	var out Output
	var notes []string
	for _, v := range views {
		edits := routeEdits(v, reason)
		for _, vsRef := range sortedKeys(edits) {
			ns, name, _ := splitRef(vsRef)
			vs := findVS(cfg, ns, name)
			if vs == nil {
				return unpatchable("VirtualService %s is not among the objects read", vsRef)
			}
			ops, note, why := shiftOps(cfg, caller, v, vs, edits[vsRef])
			if why != "" {
				return unpatchable("%s", why)
			}
			p, err := change(objectOf(istioNetworking, "VirtualService", vs), vs, ops...)
			if err != nil {
				return unpatchable("the change of VirtualService %s does not apply: %v", vsRef, err)
			}
			out.Patches = append(out.Patches, p)
			notes = append(notes, note...)
		}
	}
	if len(out.Patches) == 0 {
		return unpatchable("no route of the caller's VirtualService sends requests to a failing subset")
	}
	out.Note = "The patch " + strings.Join(notes, "; ") + "."
	return out
}

// routeRef is one route of a VirtualService: its kind (http, tcp, tls)
// and index, as the model names it ("http[0] (match ...)").
type routeRef struct {
	kind  string
	index int
}

func parseRouteName(name string) (routeRef, bool) {
	for _, kind := range []string{"http", "tcp", "tls"} {
		var i int
		if n, _ := fmt.Sscanf(name, kind+"[%d]", &i); n == 1 && strings.HasPrefix(name, kind+"[") {
			return routeRef{kind: kind, index: i}, true
		}
	}
	return routeRef{}, false
}

// routeEdits are, per VirtualService, the routes whose destinations fail
// for reason, with those destinations' indexes.
func routeEdits(v *mesh.View, reason string) map[string]map[routeRef]map[int]bool {
	out := map[string]map[routeRef]map[int]bool{}
	for _, b := range v.Breaks() {
		if b.Reason != reason || b.Route.VirtualService == "" {
			continue
		}
		ref, ok := parseRouteName(b.Route.Name)
		if !ok {
			continue
		}
		for j, d := range b.Route.Destinations {
			if d == b.Destination {
				if out[b.Route.VirtualService] == nil {
					out[b.Route.VirtualService] = map[routeRef]map[int]bool{}
				}
				if out[b.Route.VirtualService][ref] == nil {
					out[b.Route.VirtualService][ref] = map[int]bool{}
				}
				out[b.Route.VirtualService][ref][j] = true
			}
		}
	}
	return out
}

func findVS(cfg *mesh.Config, ns, name string) *networkingv1.VirtualService {
	for _, vs := range cfg.VirtualServices {
		if vs.Namespace == ns && vs.Name == name {
			return vs
		}
	}
	return nil
}

// weighted is a route destination of any route kind.
type weighted interface {
	GetDestination() *networkingv1alpha3.Destination
	GetWeight() int32
}

func routeDestinations(vs *networkingv1.VirtualService, r routeRef) []weighted {
	var out []weighted
	switch r.kind {
	case "http":
		if r.index < len(vs.Spec.GetHttp()) {
			for _, d := range vs.Spec.GetHttp()[r.index].GetRoute() {
				out = append(out, d)
			}
		}
	case "tcp":
		if r.index < len(vs.Spec.GetTcp()) {
			for _, d := range vs.Spec.GetTcp()[r.index].GetRoute() {
				out = append(out, d)
			}
		}
	case "tls":
		if r.index < len(vs.Spec.GetTls()) {
			for _, d := range vs.Spec.GetTls()[r.index].GetRoute() {
				out = append(out, d)
			}
		}
	}
	return out
}

// shiftOps are the JSON patch operations on one VirtualService: for each
// route, test what is moved, set the weights of the destinations kept,
// remove the broken ones (last first, so that the indexes hold).
func shiftOps(cfg *mesh.Config, caller mesh.Caller, v *mesh.View, vs *networkingv1.VirtualService, routes map[routeRef]map[int]bool) ([]patch.Op, []string, string) {
	refs := make([]routeRef, 0, len(routes))
	for r := range routes {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].kind != refs[j].kind {
			return refs[i].kind < refs[j].kind
		}
		return refs[i].index < refs[j].index
	})
	var ops []patch.Op
	var notes []string
	for _, r := range refs {
		broken := routes[r]
		dests := routeDestinations(vs, r)
		base := patch.Pointer("spec", r.kind, r.index, "route")
		var keep []int
		movedPct, movedNames := 0, []string{}
		total := int32(0)
		for _, d := range dests {
			total += d.GetWeight()
		}
		for j, d := range dests {
			ops = append(ops, patch.Test(base+patch.Pointer(j, "destination", "host"), d.GetDestination().GetHost()))
			if s := d.GetDestination().GetSubset(); s != "" {
				ops = append(ops, patch.Test(base+patch.Pointer(j, "destination", "subset"), s))
			}
			if broken[j] {
				movedPct += share(d.GetWeight(), total, len(dests))
				movedNames = append(movedNames, destName(d))
				continue
			}
			if serves(v, d, vs.Namespace) {
				keep = append(keep, j)
			}
		}
		where := fmt.Sprintf("%s/%s %s[%d]", vs.Namespace, vs.Name, r.kind, r.index)
		if len(keep) == 0 {
			// No destination of the route serves: send it to the one
			// subset that serves, else to the Service's pods.
			first := -1
			for j := range dests {
				if broken[j] {
					first = j
					break
				}
			}
			target, why := servingSubset(cfg, caller, v)
			if why != "" {
				return nil, nil, fmt.Sprintf("route %s has no destination that serves and %s", where, why)
			}
			dp := base + patch.Pointer(first, "destination", "subset")
			if target == "" {
				ops = append(ops, patch.Remove(dp))
			} else {
				ops = append(ops, patch.Add(dp, target))
			}
			if len(dests) > 1 {
				ops = append(ops, patch.Add(base+patch.Pointer(first, "weight"), 100))
			}
			for j := len(dests) - 1; j >= 0; j-- {
				if broken[j] && j != first {
					ops = append(ops, patch.Remove(base+patch.Pointer(j)))
				}
			}
			to := "the Service's pods (no subset)"
			if target != "" {
				to = "subset " + target
			}
			notes = append(notes, fmt.Sprintf("sends %s's requests for %s to %s", where, strings.Join(movedNames, ", "), to))
			continue
		}
		weights := redistribute(dests, keep, broken, total)
		for _, j := range keep {
			if len(keep) == 1 && len(dests)-len(broken) == 1 {
				ops = append(ops, patch.Add(base+patch.Pointer(j, "weight"), 100))
				continue
			}
			ops = append(ops, patch.Add(base+patch.Pointer(j, "weight"), weights[j]))
		}
		for j := len(dests) - 1; j >= 0; j-- {
			if broken[j] {
				ops = append(ops, patch.Remove(base+patch.Pointer(j)))
			}
		}
		var kept []string
		for _, j := range keep {
			kept = append(kept, fmt.Sprintf("%s %d%%", destName(dests[j]), weights[j]))
		}
		notes = append(notes, fmt.Sprintf("moves the %d%% of %s sent to %s to %s, and removes %s from the route",
			movedPct, where, strings.Join(movedNames, ", "), strings.Join(kept, ", "), plural(len(movedNames), "that destination", "those destinations")))
	}
	return ops, notes, ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// share is a destination's percent of its route, as Envoy splits it.
func share(w, total int32, n int) int {
	switch {
	case n == 1:
		return 100
	case total > 0:
		return int(w * 100 / total)
	}
	return 0
}

func destName(d weighted) string {
	dd := d.GetDestination()
	if s := dd.GetSubset(); s != "" {
		return "subset " + s
	}
	return dd.GetHost()
}

// serves: the destination's cluster exists for the caller and has a
// serving endpoint (or is an external host, whose endpoints are not read).
func serves(v *mesh.View, d weighted, ns string) bool {
	port := v.Port
	if n := d.GetDestination().GetPort().GetNumber(); n != 0 {
		port = int32(n)
	}
	cl := v.Clusters[mesh.ClusterName(port, d.GetDestination().GetSubset(), mesh.ResolveHost(d.GetDestination().GetHost(), ns))]
	return cl != nil && cl.Exists && (cl.External || cl.Serving() > 0 || cl.Undecided > 0)
}

// redistribute gives the kept destinations the broken ones' weight in
// proportion to their own (evenly when they have none), summing to 100.
func redistribute(dests []weighted, keep []int, broken map[int]bool, total int32) map[int]int {
	out := map[int]int{}
	keptTotal := 0
	for _, j := range keep {
		keptTotal += share(dests[j].GetWeight(), total, len(dests))
	}
	sum := 0
	for _, j := range keep {
		w := 100 / len(keep)
		if keptTotal > 0 {
			w = share(dests[j].GetWeight(), total, len(dests)) * 100 / keptTotal
		}
		out[j] = w
		sum += w
	}
	// The rounding remainder goes to the heaviest destination kept.
	heaviest := keep[0]
	for _, j := range keep {
		if out[j] > out[heaviest] {
			heaviest = j
		}
	}
	out[heaviest] += 100 - sum
	return out
}

// servingSubset is the subset to send a route to when none of its
// destinations serves: the one subset of the applying rule whose cluster
// serves, or "" for the Service's pods when no subset serves but the
// Service does.
func servingSubset(cfg *mesh.Config, caller mesh.Caller, v *mesh.View) (string, string) {
	var serving []string
	if v.Rule != nil {
		for _, s := range v.Rule.Subsets {
			if cl := cfg.SubsetCluster(caller, v.Host, v.Port, s.GetName()); cl.Exists && cl.Serving() > 0 {
				serving = append(serving, s.GetName())
			}
		}
	}
	switch {
	case len(serving) == 1:
		return serving[0], ""
	case len(serving) > 1:
		return "", "several subsets serve (" + strings.Join(serving, ", ") + "): which one takes its requests is the team's choice"
	}
	if cl := cfg.SubsetCluster(caller, v.Host, v.Port, ""); cl.Exists && cl.Serving() > 0 {
		return "", ""
	}
	return "", "the Service has no serving endpoint either"
}
