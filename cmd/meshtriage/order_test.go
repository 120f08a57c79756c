package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// A fix's directions are shown in the order to apply them:
// make-before-break, as the runbook's dr-without-vs warning says (define a
// subset before routing to it, shift the weight off a subset before
// removing it). Proven outside the product: the patches of every
// direction, in the order shown, applied one at a time to the manifests
// (plain merge and JSON patch), with check --manifests after each.

// fixStep is one patch of a direction.
type fixStep struct {
	direction string
	patch     fixPatch
}

// stepsOf are the patches of f's directions that a simulation proved, in
// the order shown.
func stepsOf(f fixFinding) (steps []fixStep, directions int) {
	for _, d := range f.Fix.Directions {
		if len(d.Patches) == 0 || d.Simulation == nil || !d.Simulation.Simulated {
			continue
		}
		directions++
		for _, p := range d.Patches {
			steps = append(steps, fixStep{direction: d.ID, patch: p})
		}
	}
	return steps, directions
}

// breakOnTheWay applies steps to docs one at a time, running check
// --manifests for tg after each, and says what the first state that breaks
// something shows: a cause the start lacked, or one more certain than at
// the start ("" when none does). A direction whose patch no longer applies
// on top of those before (its JSON patch tests what an earlier direction
// changed) is an alternative to them: the rest of it is left out.
func breakOnTheWay(t *testing.T, docs [][]byte, tg cluster.Target, steps []fixStep) string {
	t.Helper()
	base := causesOf(checkJSON(t, append(targetArgs(tg), "--manifests", writeDocs(t, docs))...))
	dropped := map[string]bool{}
	var done []string
	for i, st := range steps {
		if dropped[st.direction] {
			continue
		}
		next, err := applyPatch(t, docs, st.patch)
		if err != nil {
			dropped[st.direction] = true
			continue
		}
		docs = next
		done = append(done, fmt.Sprintf("%s's %s %s/%s", st.direction, st.patch.Kind, st.patch.Namespace, st.patch.Name))
		now := causesOf(checkJSON(t, append(targetArgs(tg), "--manifests", writeDocs(t, docs))...))
		for c, conf := range now {
			if was, ok := base[c]; !ok || conf.Rank() > was.Rank() {
				return fmt.Sprintf("after patch %d (%s), check --manifests finds %s (%s)", i+1, strings.Join(done, ", then "), c, conf)
			}
		}
	}
	return ""
}

// fixCase is an input whose findings' directions are walked: its
// manifests and the target (with its caller) check triages.
type fixCase struct {
	name string
	docs [][]byte
	tg   cluster.Target
}

func fixCases(t *testing.T) []fixCase {
	t.Helper()
	var out []fixCase
	for _, name := range scenarioNames(t) {
		src, err := triage.Scenario(name)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join("..", "..", "assets", "scenarios", name, "manifests", "*.yaml"))
		out = append(out, fixCase{name: name, docs: docsOf(t, files...), tg: *src.Target})
	}
	for _, c := range handMadeCases(t) {
		out = append(out, fixCase{name: c.name, docs: c.docs, tg: c.target})
	}
	return out
}

// Every finding with several directions: applied in the order shown, one
// patch at a time, no state on the way has a cause the start lacked or
// one more certain.
func TestDirectionsInTheirOrderBreakNothingOnTheWay(t *testing.T) {
	walked := 0
	for _, c := range fixCases(t) {
		t.Run(c.name, func(t *testing.T) {
			rep := checkJSON(t, append(targetArgs(c.tg), "--manifests", writeDocs(t, c.docs))...)
			for _, f := range rep.Findings {
				steps, n := stepsOf(f)
				if n < 2 {
					continue
				}
				walked++
				t.Logf("%s: %d directions, %d patches walked in order", f.Cause, n, len(steps))
				if broke := breakOnTheWay(t, c.docs, c.tg, steps); broke != "" {
					t.Errorf("%s: its directions in the order shown break on the way: %s", f.Cause, broke)
				}
			}
		})
	}
	if walked < 2 && !t.Failed() {
		t.Errorf("%d findings with several proven directions: the order of none was walked", walked)
	}
}

// The walk above tells make-before-break from break-before-make, on the
// two orders the runbook's dr-without-vs warning names, with the patches
// the product computes for vs-undefined-subset and subset-no-pods.
func TestBreakOnTheWayTellsTheOrders(t *testing.T) {
	scenario := func(name string) ([][]byte, cluster.Target) {
		src, err := triage.Scenario(name)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join("..", "..", "assets", "scenarios", name, "manifests", "*.yaml"))
		return docsOf(t, files...), *src.Target
	}
	direction := func(docs [][]byte, tg cluster.Target, cause, id string) fixDirection {
		rep := checkJSON(t, append(targetArgs(tg), "--manifests", writeDocs(t, docs))...)
		for _, f := range rep.Findings {
			for _, d := range f.Fix.Directions {
				if f.Cause == cause && d.ID == id && len(d.Patches) > 0 {
					return d
				}
			}
		}
		t.Fatalf("no patch of %s %s in %+v", cause, id, rep.Findings)
		return fixDirection{}
	}

	t.Run("define a subset before routing to it", func(t *testing.T) {
		docs, tg := scenario("vs-undefined-subset")
		define := direction(docs, tg, "vs.subset-undefined", "define-subset")
		routeAway := direction(docs, tg, "vs.subset-undefined", "route-to-defined")
		// From routes that use only defined subsets (the canary route
		// taken off), the canary route comes back: as the change that
		// routes to it, it must follow the one that defines it.
		vs := docOfKind(t, docs, "VirtualService", "orders")
		routeToCanary := fixPatch{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Namespace: tg.Namespace, Name: "orders", Type: "merge",
			Patch: mustJSON(t, map[string]any{"spec": map[string]any{"http": vs["spec"].(map[string]any)["http"]}})}
		start := applyPatches(t, docs, routeAway.Patches)
		good := []fixStep{{"define-subset", define.Patches[0]}, {"route", routeToCanary}}
		bad := []fixStep{{"route", routeToCanary}, {"define-subset", define.Patches[0]}}
		if broke := breakOnTheWay(t, start, tg, good); broke != "" {
			t.Errorf("define, then route: %s", broke)
		}
		if broke := breakOnTheWay(t, start, tg, bad); !strings.Contains(broke, "vs.subset-undefined") {
			t.Errorf("route, then define: %q, want the route to the undefined subset caught", broke)
		}
	})

	t.Run("shift the weight off a subset before removing it", func(t *testing.T) {
		docs, tg := scenario("subset-no-pods")
		shift := direction(docs, tg, "dr.subset-no-pods", "route-away-first")
		removeV2 := fixPatch{APIVersion: "networking.istio.io/v1", Kind: "DestinationRule", Namespace: tg.Namespace, Name: "orders", Type: "json",
			Patch: json.RawMessage(`[{"op":"test","path":"/spec/subsets/1/name","value":"v2"},{"op":"remove","path":"/spec/subsets/1"}]`)}
		good := []fixStep{{"shift", shift.Patches[0]}, {"remove", removeV2}}
		bad := []fixStep{{"remove", removeV2}, {"shift", shift.Patches[0]}}
		if broke := breakOnTheWay(t, docs, tg, good); broke != "" {
			t.Errorf("shift, then remove: %s", broke)
		}
		if broke := breakOnTheWay(t, docs, tg, bad); !strings.Contains(broke, "vs.subset-undefined") {
			t.Errorf("remove, then shift: %q, want the route to the removed subset caught", broke)
		}
	})
}

// docOfKind is the manifest document of kind and name, decoded.
func docOfKind(t *testing.T, docs [][]byte, kind, name string) map[string]any {
	t.Helper()
	for _, d := range docs {
		var m map[string]any
		if err := json.Unmarshal(d, &m); err != nil {
			t.Fatal(err)
		}
		if md, _ := m["metadata"].(map[string]any); m["kind"] == kind && md["name"] == name {
			return m
		}
	}
	t.Fatalf("no %s %s in the manifests", kind, name)
	return nil
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
