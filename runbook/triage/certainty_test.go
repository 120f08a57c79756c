package triage_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// Not read is not absent. A dump that leaves something out (a field the
// user's kubectl did not print, objects they did not export) holds less
// than the cluster did, and the triage must not be more certain of a cause
// on it than on the whole: every finding a thinner input gives at high
// confidence, the whole input gives at high confidence too. The thinning
// below is what real dumps do; none of it changes what istiod would do on
// the cluster the dump came from.

// thinning removes from a dump what real dumps leave out.
type thinning struct {
	name string
	// apply returns the documents without what the dump leaves out; nil
	// when the scenario holds nothing this thinning removes.
	apply func(docs []map[string]any) []map[string]any
}

var thinnings = []thinning{
	// Endpoints exported by hand, or by an EndpointSlice mirror, carry no
	// targetRef: istiod then finds the pod by IP.
	{"EndpointSlices without targetRef", func(docs []map[string]any) []map[string]any {
		return editKind(docs, "EndpointSlice", func(d map[string]any) bool {
			eps, _ := d["endpoints"].([]any)
			changed := false
			for _, e := range eps {
				if m, ok := e.(map[string]any); ok {
					if _, ok := m["targetRef"]; ok {
						delete(m, "targetRef")
						changed = true
					}
				}
			}
			return changed
		})
	}},
	// `kubectl get deploy,svc,pods` leaves the EndpointSlices out.
	{"no EndpointSlices", func(docs []map[string]any) []map[string]any {
		return dropWhere(docs, func(d map[string]any) bool { return kindOf(d) == "EndpointSlice" || kindOf(d) == "Endpoints" })
	}},
	// A dump of the workloads' specs only (kubectl get -o yaml of a
	// manifest's objects, or a GitOps repository) has no pod status.
	{"pods without status", func(docs []map[string]any) []map[string]any {
		return editKind(docs, "Pod", func(d map[string]any) bool {
			if _, ok := d["status"]; !ok {
				return false
			}
			delete(d, "status")
			return true
		})
	}},
	// The Service's pods left out of the dump (the user exported the
	// caller's namespace, or only the Services and rules).
	{"the target's pods left out", func(docs []map[string]any) []map[string]any {
		return nil // filled per scenario by thinTargetPods
	}},
	// A dump of the application's namespaces only: istiod's namespace
	// (its pods, the mesh config, ztunnel's DaemonSet pods) left out.
	{"the control plane's namespace left out", func(docs []map[string]any) []map[string]any {
		return nil // filled per scenario by thinControlPlane: the caller stays
	}},
	// No Nodes: the read-only user may not list them, and most dumps
	// leave them out.
	{"no Nodes", func(docs []map[string]any) []map[string]any {
		return dropWhere(docs, func(d map[string]any) bool { return kindOf(d) == "Node" })
	}},
}

func kindOf(d map[string]any) string { s, _ := d["kind"].(string); return s }

func metaOf(d map[string]any) (ns, name string) {
	m, _ := d["metadata"].(map[string]any)
	ns, _ = m["namespace"].(string)
	name, _ = m["name"].(string)
	return ns, name
}

func dropWhere(docs []map[string]any, drop func(map[string]any) bool) []map[string]any {
	var out []map[string]any
	for _, d := range docs {
		if !drop(d) {
			out = append(out, d)
		}
	}
	if len(out) == len(docs) {
		return nil
	}
	return out
}

func editKind(docs []map[string]any, kind string, edit func(map[string]any) bool) []map[string]any {
	changed := false
	for _, d := range docs {
		if kindOf(d) == kind && edit(d) {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return docs
}

func decodeDocs(t *testing.T, raw [][]byte) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func encodeDocs(t *testing.T, docs []map[string]any) [][]byte {
	t.Helper()
	out := make([][]byte, len(docs))
	for i, d := range docs {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// highCauses are the causes found at high confidence.
func highCauses(run manifestRun) []string {
	var out []string
	for c, conf := range run.causes {
		if conf == runbook.ConfidenceHigh {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

func TestLessInputIsNeverMoreCertain(t *testing.T) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		names = names[:4]
	}
	thinned := 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			src, err := triage.Scenario(name)
			if err != nil {
				t.Fatal(err)
			}
			target := *src.Target
			raw := scenarioDocs(t, name)
			whole := checkManifests(t, raw, target)
			for _, th := range thinnings {
				docs := decodeDocs(t, raw)
				var thin []map[string]any
				switch th.name {
				case "the target's pods left out":
					thin = thinTargetPods(docs, target.Namespace, target.Source)
				case "the control plane's namespace left out":
					thin = thinControlPlane(docs, target.Source)
				default:
					thin = th.apply(docs)
				}
				if thin == nil {
					continue
				}
				thinned++
				run := checkManifests(t, encodeDocs(t, thin), target)
				for c, conf := range run.causes {
					if c == "unexplained" {
						continue
					}
					was, found := whole.causes[c]
					if conf == runbook.ConfidenceHigh && (!found || was != runbook.ConfidenceHigh) {
						t.Errorf("%s: %s is found at high confidence, the whole input gives %s\n  the whole input's high causes: %v",
							th.name, c, describe(was, found), highCauses(whole))
					}
				}
			}
		})
	}
	if thinned == 0 {
		t.Fatal("no scenario had anything to thin")
	}
}

func describe(c runbook.Confidence, found bool) string {
	if !found {
		return "no such finding"
	}
	return fmt.Sprintf("it at %s", c)
}

// thinTargetPods drops the pods of the target's namespace other than the
// caller (the Service's pods), as a dump of the caller's side has them.
func thinTargetPods(docs []map[string]any, ns string, source *cluster.PodRef) []map[string]any {
	return dropWhere(docs, func(d map[string]any) bool {
		if kindOf(d) != "Pod" {
			return false
		}
		pns, pname := metaOf(d)
		if pns != ns {
			return false
		}
		return source == nil || !(source.Namespace == pns && strings.EqualFold(source.Name, pname))
	})
}

// thinControlPlane drops istiod's namespace from the dump but for the
// caller (a gateway in istio-system is the user's own pod).
func thinControlPlane(docs []map[string]any, source *cluster.PodRef) []map[string]any {
	return dropWhere(docs, func(d map[string]any) bool {
		ns, name := metaOf(d)
		if source != nil && source.Namespace == "istio-system" && (ns == "istio-system" && kindOf(d) == "Pod" && name == source.Name || kindOf(d) == "Namespace" && name == "istio-system") {
			return false
		}
		return ns == "istio-system" || (kindOf(d) == "Namespace" && name == "istio-system")
	})
}
