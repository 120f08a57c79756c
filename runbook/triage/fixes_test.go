package triage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/report"
	"github.com/meshtriage/meshtriage/runbook/runbooktest"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// The fixes are proven here outside the product: a finding's patches are
// applied to the manifest documents with plain RFC 7386 merge and RFC 6902
// JSON patch (gopkg.in/evanphx/json-patch, as the API server applies them,
// not the product's code), `check -f` runs again on the result, and the
// cause must be gone with no new cause.

// checkScenario is `meshtriage check --scenario NAME -o json`.
func checkScenario(t *testing.T, name string, withSource bool) report.Report {
	t.Helper()
	src, err := triage.Scenario(name)
	if err != nil {
		t.Fatal(err)
	}
	target := *src.Target
	if !withSource {
		target.Source = nil
	}
	return check(t, src, target, !withSource)
}

func check(t *testing.T, src triage.Source, target cluster.Target, searchCallers bool) report.Report {
	t.Helper()
	ctx := context.Background()
	// check's registry, with a short window between the counters' samples
	// (a scenario's second sample is recorded).
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: 10 * time.Millisecond}
	tr, err := triage.Open(ctx, src, target, triage.Options{Mode: runbook.ModeAuto, User: "test", Probes: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if searchCallers {
		if _, err := tr.SearchCallers(ctx, callersearch.Options{Max: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Auto(ctx); err != nil {
		t.Fatal(err)
	}
	return tr.Report()
}

// manifestRun is `meshtriage check -f DIR` on docs: its findings by cause
// and the facts its steps reported.
type manifestRun struct {
	causes map[string]runbook.Confidence
	facts  probes.Facts
	report report.Report
}

func checkManifests(t *testing.T, docs [][]byte, target cluster.Target) manifestRun {
	t.Helper()
	dir := t.TempDir()
	var all bytes.Buffer
	for _, d := range docs {
		y, err := yaml.JSONToYAML(d)
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString("---\n")
		all.Write(y)
	}
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), all.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := triage.Manifests([]string{dir}, manifests.Options{}, cluster.ClusterInfo{Context: "manifests"})
	if err != nil {
		t.Fatal(err)
	}
	rep := check(t, src, target, false)
	run := manifestRun{causes: map[string]runbook.Confidence{}, facts: probes.Facts{}, report: rep}
	for _, f := range rep.Findings {
		run.causes[f.Cause] = f.Confidence
	}
	for _, st := range rep.Steps {
		if st.Status == probes.StatusError || st.Status == probes.StatusSkipped {
			continue
		}
		for k, v := range st.Facts {
			run.facts[k] = v
		}
	}
	return run
}

// scenarioDocs are the scenario's manifest documents as JSON.
func scenarioDocs(t *testing.T, name string) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "assets", "scenarios", name, "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests for %s: %v", name, err)
	}
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, j)
		}
	}
	return out
}

type meta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func group(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// applyOutside applies patches to docs as the API server would: merge and
// JSON patches with evanphx/json-patch, a create as a new document.
func applyOutside(t *testing.T, docs [][]byte, patches []runbook.Patch) [][]byte {
	t.Helper()
	out := append([][]byte(nil), docs...)
	for _, p := range patches {
		if p.Type == runbook.PatchCreate {
			out = append(out, []byte(p.Patch))
			continue
		}
		found := false
		for i, d := range out {
			var m meta
			if err := json.Unmarshal(d, &m); err != nil {
				t.Fatal(err)
			}
			if m.Kind != p.Kind || group(m.APIVersion) != group(p.APIVersion) || m.Metadata.Name != p.Name || m.Metadata.Namespace != p.Namespace {
				continue
			}
			found = true
			var err error
			switch p.Type {
			case runbook.PatchMerge:
				out[i], err = jsonpatch.MergePatch(d, p.Patch)
			case runbook.PatchJSON:
				var ops jsonpatch.Patch
				if ops, err = jsonpatch.DecodePatch(p.Patch); err == nil {
					out[i], err = ops.Apply(d)
				}
			default:
				t.Fatalf("%s: a %s patch of a manifest document", p.Object(), p.Type)
			}
			if err != nil {
				t.Fatalf("%s does not apply to the manifest: %v\n%s", p.Object(), err, p.Patch)
			}
			out[i] = runbooktest.BumpGeneration(t, d, out[i])
		}
		if !found {
			t.Fatalf("%s patches an object the manifests do not hold", p.Object())
		}
	}
	return out
}

// proveOutside applies each patched direction of rep outside the product
// and checks what it claims: its cause gone, no new cause, and for a cause
// that only runtime evidence shows, the configuration checks its
// simulation reported. It returns how many directions it proved.
func proveOutside(t *testing.T, rep report.Report, docs [][]byte, target cluster.Target) int {
	t.Helper()
	base := checkManifests(t, docs, target)
	proved := 0
	for _, f := range rep.Findings {
		for _, d := range f.Fix.Directions {
			if len(d.Patches) == 0 {
				continue
			}
			if d.Simulation == nil {
				t.Errorf("%s %s: patches without a simulation", f.Cause, d.ID)
				continue
			}
			if !d.Simulation.Simulated {
				if d.Simulation.Why == "" || !strings.HasPrefix(d.Simulation.Summary, "cannot be simulated: ") {
					t.Errorf("%s %s: not simulated, and not labelled so: %+v", f.Cause, d.ID, d.Simulation)
				}
				continue
			}
			after := checkManifests(t, applyOutside(t, docs, d.Patches), target)
			if _, ok := after.causes[f.Cause]; ok {
				if len(d.Simulation.Remains) == 0 {
					t.Errorf("%s %s: the cause is still found once the patches are applied (%s), and the simulation said %q",
						f.Cause, d.ID, after.causes[f.Cause], d.Simulation.Summary)
				}
			} else if len(d.Simulation.Remains) > 0 {
				t.Errorf("%s %s: the simulation says the cause remains, the re-run says it is gone", f.Cause, d.ID)
			}
			expected := map[string]bool{}
			for _, e := range d.Simulation.Expected {
				expected[e.Cause] = true
			}
			for c, conf := range after.causes {
				if was, ok := base.causes[c]; (!ok || conf.Rank() > was.Rank()) && c != f.Cause && !expected[c] {
					t.Errorf("%s %s: applied, the patches cause %s (%s)", f.Cause, d.ID, c, conf)
				}
			}
			if _, ok := base.causes[f.Cause]; !ok {
				checkClaims(t, f.Cause, d, after)
			}
			proved++
		}
	}
	return proved
}

// checkClaims: the verification checks the simulation judged on the
// patched configuration are what the re-run's facts say.
func checkClaims(t *testing.T, cause string, d runbook.Fix, after manifestRun) {
	t.Helper()
	g, err := triage.Runbook()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := g.Cause(cause)
	facts := coerce(after.facts)
	for _, claim := range d.Simulation.Checks {
		for _, v := range c.Verify {
			if v.Expect != claim.Expect {
				continue
			}
			passed, known := v.Holds(facts)
			if !known || passed != claim.Passed {
				t.Errorf("%s %s: the simulation says `%s` is %v on the patched configuration; the re-run says %v (known %v)",
					cause, d.ID, claim.Expect, claim.Passed, passed, known)
			}
		}
	}
}

// coerce restores fact types decoded from the report's JSON.
func coerce(f probes.Facts) probes.Facts {
	cat := probes.FactCatalogue()
	out := probes.Facts{}
	for k, v := range f {
		switch cat[k].Type {
		case probes.FactInt:
			if x, ok := v.(float64); ok {
				v = int(x)
			}
		case probes.FactList:
			if l, ok := v.([]any); ok {
				s := make([]string, len(l))
				for i, e := range l {
					s[i] = fmt.Sprint(e)
				}
				v = s
			}
		}
		out[k] = v
	}
	return out
}

func TestEveryScenariosPatchesClearItsCauseOutsideTheProduct(t *testing.T) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	proved := map[string]int{}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			src, _ := triage.Scenario(name)
			rep := checkScenario(t, name, true)
			proved[name] = proveOutside(t, rep, scenarioDocs(t, name), *src.Target)
		})
	}
	// Every scenario whose cause a change to the objects read fixes has a
	// patch proven on its manifests.
	for _, name := range []string{"subset-no-pods", "gateway-subset-no-pods", "vs-undefined-subset", "outlier-all-ejected",
		"outlier-gateway-errors", "circuit-breaker-overflow", "port-mismatch", "gateway-vs-not-bound", "gateway-host-mismatch",
		"mtls-to-pod-without-sidecar", "mtls-plaintext-to-strict", "ambient-hbone-networkpolicy", "ambient-sidecar-bypasses-waypoint",
		"missing-serviceentry", "idle-timeout-uc",
		"gatewayapi-backend-port-missing", "gatewayapi-route-not-attached", "gatewayapi-ref-not-permitted", "gateway-listener-unreachable",
		"mesh-route-backend-not-found", "waypoint-route-backend-not-found"} {
		if proved[name] == 0 && !t.Failed() {
			t.Errorf("%s: no patch proven outside the product", name)
		}
	}
}

// A value the tool read is filled in; one it cannot know is said in words.
var placeholders = []*regexp.Regexp{
	regexp.MustCompile(`\$\{[A-Z_]+\}`),
	regexp.MustCompile(`<[A-Za-z][A-Za-z0-9_-]*>`),
	regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+\b`),
	regexp.MustCompile(`\b(?:[A-Z]+_)*(?:NAME|NAMESPACE|URL|POD|SERVICE_ACCOUNT|TRUST_DOMAIN|REVISION|DEPLOYMENT|WAYPOINT|GATEWAY|NS)\b`),
}

func leftover(s string) []string {
	var out []string
	for _, re := range placeholders {
		for _, loc := range re.FindAllStringIndex(s, -1) {
			if loc[1] < len(s) && s[loc[1]] == ':' && re == placeholders[3] {
				continue // kubectl custom-columns=NAME:.metadata.name
			}
			out = append(out, s[loc[0]:loc[1]])
		}
	}
	return out
}

func assertNoPlaceholders(t *testing.T, rep report.Report) {
	t.Helper()
	for _, f := range rep.Findings {
		texts := []string{f.Summary, f.Fix.Unpatchable}
		for _, d := range f.Fix.Directions {
			texts = append(texts, d.Title, d.Text, d.Unpatchable)
			texts = append(texts, d.Commands...)
			texts = append(texts, d.YAML...)
			texts = append(texts, d.Tradeoffs...)
			texts = append(texts, d.Security...)
			texts = append(texts, runbook.Commands(d.Patches)...)
		}
		for _, v := range f.Verify {
			texts = append(texts, v.Describe, v.Command)
		}
		for _, s := range texts {
			if l := leftover(s); len(l) > 0 {
				t.Errorf("%s: placeholder %q left in %q", f.Cause, l, s)
			}
		}
	}
}

func TestNoPlaceholderIsLeftInAnyFinding(t *testing.T) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			assertNoPlaceholders(t, checkScenario(t, name, true))
			// Without --from: the service side and the callers found.
			assertNoPlaceholders(t, checkScenario(t, name, false))
		})
	}
}

func TestLeftoverFindsThePlaceholdersTheIssueNamed(t *testing.T) {
	for _, s := range []string{"kubectl get gateway GATEWAY-NAME", "istioctl waypoint apply --name WAYPOINT-NAME", "kubectl rollout restart deployment/<caller-deployment>",
		"kubectl describe pod <pod>", "kubectl logs -c <app-container>", "curl -sv URL", "principals: [cluster.local/ns/shop/sa/CALLER_SERVICE_ACCOUNT]", "${WAYPOINT}"} {
		if len(leftover(s)) == 0 {
			t.Errorf("leftover misses the placeholder in %q", s)
		}
	}
	for _, s := range []string{"kubectl get serviceentry -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name", "tls.mode: ISTIO_MUTUAL", "EXIT_ON_ZERO_ACTIVE_CONNECTIONS", "HBONE on 15008", "503 UH"} {
		if l := leftover(s); len(l) > 0 {
			t.Errorf("leftover takes %q in %q for a placeholder", l, s)
		}
	}
}

// direction is the finding's direction id with its patches.
func direction(t *testing.T, rep report.Report, cause, id string) runbook.Fix {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Cause != cause {
			continue
		}
		for _, d := range f.Fix.Directions {
			if d.ID == id {
				return d
			}
		}
	}
	t.Fatalf("no direction %s of %s in %+v", id, cause, rep.Findings)
	return runbook.Fix{}
}

func docOf(t *testing.T, docs [][]byte, kind, ns, name string) map[string]any {
	t.Helper()
	for _, d := range docs {
		var m meta
		_ = json.Unmarshal(d, &m)
		if m.Kind == kind && m.Metadata.Namespace == ns && m.Metadata.Name == name {
			var out map[string]any
			_ = json.Unmarshal(d, &out)
			return out
		}
	}
	t.Fatalf("no %s %s/%s", kind, ns, name)
	return nil
}

// routes are a VirtualService's http[0] destinations as "subset=weight".
func routes(t *testing.T, vs map[string]any) []string {
	t.Helper()
	spec := vs["spec"].(map[string]any)
	var out []string
	for _, r := range spec["http"].([]any)[0].(map[string]any)["route"].([]any) {
		rm := r.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v", rm["destination"].(map[string]any)["subset"], rm["weight"]))
	}
	sort.Strings(out)
	return out
}

// The bugs of issue 25, each one failing with the template fixes (which
// had no patch at all, and whose YAML made things worse).
func TestSubsetNoPodsPatchDoesNotTakeTenPercentToAHundred(t *testing.T) {
	for _, c := range []struct{ scenario, vs, empty, serving string }{
		{"subset-no-pods", "orders", "v2", "v1"},
		{"gateway-subset-no-pods", "orders-public", "canary", "stable"},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			src, _ := triage.Scenario(c.scenario)
			d := direction(t, checkScenario(t, c.scenario, true), "dr.subset-no-pods", "route-away-first")
			if len(d.Patches) != 1 || d.Patches[0].Kind != "VirtualService" || d.Patches[0].Name != c.vs {
				t.Fatalf("patches %+v", d.Patches)
			}
			if !strings.Contains(string(d.Patches[0].Patch), `"value":"`+c.empty+`"`) {
				t.Errorf("the patch does not name the empty subset %s: %s", c.empty, d.Patches[0].Patch)
			}
			docs := applyOutside(t, scenarioDocs(t, c.scenario), d.Patches)
			if got := routes(t, docOf(t, docs, "VirtualService", "shop", c.vs)); len(got) != 1 || got[0] != c.serving+"=100" {
				t.Errorf("routes after the patch = %v, want %s=100", got, c.serving)
			}
			after := checkManifests(t, docs, *src.Target)
			if fmt.Sprint(after.facts["dr_subset_no_pods_percent"]) != "0" || fmt.Sprint(after.facts["vs_undefined_subset_percent"]) != "0" {
				t.Errorf("after the patch: %v%% of a route to an empty subset, %v%% to an undefined one",
					after.facts["dr_subset_no_pods_percent"], after.facts["vs_undefined_subset_percent"])
			}
		})
	}
}

func TestVSUndefinedSubsetPatchDefinesTheSubsetTheRoutesUse(t *testing.T) {
	src, _ := triage.Scenario("vs-undefined-subset")
	d := direction(t, checkScenario(t, "vs-undefined-subset", true), "vs.subset-undefined", "define-subset")
	docs := applyOutside(t, scenarioDocs(t, "vs-undefined-subset"), d.Patches)
	subsets := map[string]any{}
	for _, s := range docOf(t, docs, "DestinationRule", "shop", "orders")["spec"].(map[string]any)["subsets"].([]any) {
		sm := s.(map[string]any)
		subsets[sm["name"].(string)] = sm["labels"]
	}
	if fmt.Sprint(subsets["stable"]) != "map[version:v1]" || fmt.Sprint(subsets["canary"]) != "map[version:canary]" || len(subsets) != 2 {
		t.Errorf("subsets after the patch = %v: want stable kept and canary with the labels its pod carries", subsets)
	}
	if after := checkManifests(t, docs, *src.Target); fmt.Sprint(after.facts["vs_undefined_subset_percent"]) != "0" {
		t.Errorf("after the patch %v%% of a route still goes to an undefined subset", after.facts["vs_undefined_subset_percent"])
	}
}

func TestTuneOutlierChangesTheOffendingFieldsInPlace(t *testing.T) {
	for _, c := range []struct{ scenario, field string }{
		{"outlier-all-ejected", "consecutive5xxErrors"},
		{"outlier-gateway-errors", "consecutiveGatewayErrors"},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			src, _ := triage.Scenario(c.scenario)
			d := direction(t, checkScenario(t, c.scenario, true), "outlier.all-ejected", "tune-outlier")
			docs := applyOutside(t, scenarioDocs(t, c.scenario), d.Patches)
			od := docOf(t, docs, "DestinationRule", "shop", "orders")["spec"].(map[string]any)["trafficPolicy"].(map[string]any)["outlierDetection"].(map[string]any)
			if od[c.field] == float64(1) || od["maxEjectionPercent"] == float64(100) {
				t.Errorf("outlierDetection after the patch still ejects on one error or every host: %v", od)
			}
			other := map[string]string{"consecutive5xxErrors": "consecutiveGatewayErrors", "consecutiveGatewayErrors": "consecutive5xxErrors"}[c.field]
			if _, added := od[other]; added {
				t.Errorf("the patch added %s beside %s: %v", other, c.field, od)
			}
			if od["interval"] == nil || od["baseEjectionTime"] == nil {
				t.Errorf("the patch dropped fields it had no reason to touch: %v", od)
			}
			if after := checkManifests(t, docs, *src.Target); after.facts["dr_outlier_aggressive"] != false {
				t.Errorf("after the patch dr_outlier_aggressive = %v", after.facts["dr_outlier_aggressive"])
			}
		})
	}
}

// The JSON contract: a patched direction carries its patches with every
// field, and its simulation; a cause with no patch says why.
func TestCheckJSONCarriesPatchesAndUnpatchable(t *testing.T) {
	var b bytes.Buffer
	if err := report.JSON(&b, checkScenario(t, "subset-no-pods", true)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Findings []struct {
			Fix struct {
				Directions []struct {
					ID, Text, Title string
					Commands        []string
					Patches         []map[string]json.RawMessage
					Simulation      *struct {
						Simulated bool
						Clears    []string
						Summary   string
					}
					Unpatchable string
				}
				Unpatchable string
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Findings[0].Fix.Directions[0]
	if d.ID != "route-away-first" || d.Title == "" || d.Text == "" || len(d.Commands) == 0 || len(d.Patches) != 1 {
		t.Fatalf("direction %+v", d)
	}
	for _, k := range []string{"apiVersion", "kind", "namespace", "name", "type", "patch"} {
		if _, ok := d.Patches[0][k]; !ok {
			t.Errorf("patch lacks %s: %v", k, d.Patches[0])
		}
	}
	if d.Simulation == nil || !d.Simulation.Simulated || d.Simulation.Summary != "simulated: clears dr.subset-no-pods, no new finding" {
		t.Errorf("simulation %+v", d.Simulation)
	}
	b.Reset()
	if err := report.JSON(&b, checkScenario(t, "stale-xds", true)); err != nil {
		t.Fatal(err)
	}
	doc.Findings = nil
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Findings) == 0 || !strings.Contains(doc.Findings[0].Fix.Unpatchable, "istiod") {
		t.Errorf("xds.stale says no reason it is unpatchable: %+v", doc.Findings)
	}
}

// Cases the team does not see: hand-written worlds (other names, subsets,
// weights, a DestinationRule in the root namespace, a gateway in its own
// namespace) under testdata/fixes. check -f finds the cause; its patches,
// applied outside the product, clear it with no new cause.
func TestFixesOnHandWrittenCases(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "fixes", "*"))
	if err != nil || len(dirs) < 5 {
		t.Fatalf("cases: %v %v", dirs, err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var c struct {
				Namespace, Service, From, Cause string
				Port                            int32
			}
			data, err := os.ReadFile(filepath.Join(dir, "target.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &c); err != nil {
				t.Fatal(err)
			}
			ns, pod, _ := strings.Cut(c.From, "/")
			target := cluster.Target{Namespace: c.Namespace, Service: c.Service, Port: c.Port, Source: &cluster.PodRef{Namespace: ns, Name: pod}}
			var docs [][]byte
			raw, err := os.ReadFile(filepath.Join(dir, "manifests.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
				if j, err := yaml.YAMLToJSON([]byte(doc)); err == nil && string(j) != "null" {
					docs = append(docs, j)
				}
			}
			run := checkManifests(t, docs, target)
			if _, ok := run.causes[c.Cause]; !ok {
				t.Fatalf("check -f finds %v, not %s", run.causes, c.Cause)
			}
			assertNoPlaceholders(t, run.report)
			if n := proveOutside(t, run.report, docs, target); n == 0 {
				t.Errorf("no patch of %s proven", c.Cause)
			}
			for _, f := range run.report.Findings {
				for _, d := range f.Fix.Directions {
					if len(d.Patches) > 0 {
						assertWeightsSum(t, applyOutside(t, docs, d.Patches))
					}
				}
			}
		})
	}
}

// assertWeightsSum: every route of every VirtualService splits 100%.
func assertWeightsSum(t *testing.T, docs [][]byte) {
	t.Helper()
	for _, d := range docs {
		var vs struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct {
				HTTP []struct {
					Route []struct{ Weight int }
				}
			}
		}
		if json.Unmarshal(d, &vs) != nil || vs.Kind != "VirtualService" {
			continue
		}
		for i, h := range vs.Spec.HTTP {
			sum := 0
			for _, r := range h.Route {
				sum += r.Weight
			}
			if sum != 0 && sum != 100 || sum == 0 && len(h.Route) > 1 {
				t.Errorf("VirtualService %s http[%d] splits %d%%: %+v", vs.Metadata.Name, i, sum, h.Route)
			}
		}
	}
}
