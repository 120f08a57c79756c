package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/runbooktest"
	"github.com/meshtriage/meshtriage/runbook/triage"
	"github.com/meshtriage/meshtriage/tui/cause"
	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// The fixes as the on-call meets them: in check's JSON, Markdown and text
// reports (the CLI's own code path) and in the TUI's cause screen, whose
// `y` copies a patch block. Every embedded scenario, every direction.

// fixPatch is a patch as check -o json writes it.
type fixPatch struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Namespace  string          `json:"namespace"`
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Patch      json.RawMessage `json:"patch"`
}

type fixDirection struct {
	ID, Title, Text, Unpatchable string
	Commands, YAML               []string
	Tradeoffs, Security          []string
	Patches                      []fixPatch
	Simulation                   *struct {
		Simulated bool
		Why       string
		Clears    []string
		Remains   []struct{ Cause, Confidence string }
		New       []struct{ Cause string }
		Expected  []struct{ Cause string }
		Summary   string
	}
}

type fixFinding struct {
	Cause, Summary, Confidence string
	Fix                        struct {
		Directions  []fixDirection
		Unpatchable string
	}
	Verify []struct{ Describe, Command string }
}

type fixReport struct {
	Findings []fixFinding
}

// checkOut runs check with args and the output format; a short metrics
// window (a scenario's second sample is recorded).
func checkOut(t *testing.T, format string, args ...string) string {
	t.Helper()
	r := runCheck(t, append(args, "--metrics-window", "10ms", "-o", format)...)
	if r.code != exitOK && r.code != exitFindings {
		t.Fatalf("check %v -o %s: exit %d\n%s", args, format, r.code, r.stderr)
	}
	return r.stdout
}

func checkJSON(t *testing.T, args ...string) fixReport {
	t.Helper()
	var rep fixReport
	if err := json.Unmarshal([]byte(checkOut(t, "json", args...)), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// A value the tool read is filled in; one it cannot know is said in words.
var placeholderRes = []*regexp.Regexp{
	regexp.MustCompile(`\$\{[A-Z_]+\}`),
	// Any <...> on one line: <pod>, <caller-deployment>, <app container>.
	regexp.MustCompile(`<[A-Za-z][^<>\n]{0,40}>`),
	// ALL-CAPS-NAME: GATEWAY-NAME, WAYPOINT-NAME, TRUST-DOMAIN.
	regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+\b`),
	// A word standing for a value: URL, POD, CALLER_SERVICE_ACCOUNT.
	regexp.MustCompile(`\b(?:[A-Z]+_)*(?:NAME|NAMESPACE|URL|POD|SERVICE_ACCOUNT|TRUST_DOMAIN|REVISION|DEPLOYMENT|WAYPOINT|GATEWAY|CONTAINER|NS|SA)\b`),
}

func placeholdersIn(s string) []string {
	var out []string
	for i, re := range placeholderRes {
		for _, loc := range re.FindAllStringIndex(s, -1) {
			if i == 3 && loc[1] < len(s) && s[loc[1]] == ':' {
				continue // kubectl custom-columns=NAME:.metadata.name
			}
			out = append(out, s[loc[0]:loc[1]])
		}
	}
	return out
}

func TestPlaceholdersFindsWhatTheIssueNamed(t *testing.T) {
	for _, s := range []string{"kubectl get gateway GATEWAY-NAME", "istioctl waypoint apply --name WAYPOINT-NAME",
		"kubectl rollout restart deployment/<caller-deployment>", "kubectl describe pod <pod>", "kubectl logs -c <app-container>",
		"kubectl logs -c <app container>", "curl -sv URL", "cluster.local/ns/NS/sa/SA", "principals: [TRUST-DOMAIN/ns/shop/sa/web]", "${WAYPOINT}"} {
		if len(placeholdersIn(s)) == 0 {
			t.Errorf("placeholdersIn misses the placeholder in %q", s)
		}
	}
	for _, s := range []string{"kubectl get serviceentry -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name", "tls.mode: ISTIO_MUTUAL",
		"EXIT_ON_ZERO_ACTIVE_CONNECTIONS", "HBONE on 15008", "503 UH", "kubectl apply -n shop -f - <<'EOF'\nkind: x\nEOF", "a -> b"} {
		if l := placeholdersIn(s); len(l) > 0 {
			t.Errorf("placeholdersIn takes %q in %q for a placeholder", l, s)
		}
	}
}

// fixSections are the parts of a rendered report that carry the fixes:
// from each finding's fix directions to its next finding or the report's
// next part.
func fixSections(out, start string, ends ...string) []string {
	var secs []string
	for {
		i := strings.Index(out, start)
		if i < 0 {
			return secs
		}
		out = out[i:]
		end := len(out)
		for _, e := range ends {
			if j := strings.Index(out[len(start):], e); j >= 0 && j+len(start) < end {
				end = j + len(start)
			}
		}
		secs = append(secs, out[:end])
		out = out[end:]
	}
}

// scenarioTUI opens the scenario as the TUI does and walks it, and returns
// the cause screen's blocks and text of every finding, by cause.
func scenarioTUI(t *testing.T, name string) map[string]tuiFinding {
	t.Helper()
	ctx := context.Background()
	src, err := triage.Scenario(name)
	if err != nil {
		t.Fatal(err)
	}
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: 10 * time.Millisecond}
	tr, err := triage.Open(ctx, src, *src.Target, triage.Options{Mode: runbook.ModeAuto, User: "test", Probes: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Auto(ctx); err != nil {
		t.Fatal(err)
	}
	eng := engine.FromTriage(tr)
	causes := map[string]engine.Cause{}
	for _, c := range eng.Causes() {
		causes[c.ID] = c
	}
	out := map[string]tuiFinding{}
	for _, f := range eng.Findings() {
		m := cause.New(common.New(ctx, time.Now, true))
		m.SetSize(100, 400)
		f := f
		m.Open(causes[f.Cause], &f, "")
		out[f.Cause] = tuiFinding{finding: f, blocks: m.Blocks()}
	}
	return out
}

type tuiFinding struct {
	finding engine.Finding
	blocks  []cause.Block
}

func scenarioNames(t *testing.T) []string {
	t.Helper()
	names, err := recorded.Names(assets.FS)
	if err != nil || len(names) < 20 {
		t.Fatalf("scenarios: %v %v", names, err)
	}
	return names
}

// Every kubectl command a patch gives is the same in the JSON's patches,
// the Markdown and text reports and the TUI's copy, applies that patch
// (its arguments, shell-unquoted, carry the patch's JSON exactly), and no
// fix anywhere keeps a placeholder.
func TestFixesAreTheSameCommandsEverywhereAndFilledIn(t *testing.T) {
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			args := []string{"--scenario", name}
			rep := checkJSON(t, args...)
			md := checkOut(t, "md", args...)
			text := checkOut(t, "text", args...)
			tui := scenarioTUI(t, name)
			var texts []string
			for _, f := range rep.Findings {
				texts = append(texts, f.Summary, f.Fix.Unpatchable)
				for _, v := range f.Verify {
					texts = append(texts, v.Describe, v.Command)
				}
				tf, inTUI := tui[f.Cause]
				if !inTUI && f.Cause != runbook.Unexplained {
					t.Errorf("%s: found by check, not on the TUI's findings", f.Cause)
				}
				for _, d := range f.Fix.Directions {
					texts = append(texts, d.Title, d.Text, d.Unpatchable)
					texts = append(texts, d.Commands...)
					texts = append(texts, d.YAML...)
					texts = append(texts, d.Tradeoffs...)
					texts = append(texts, d.Security...)
					if len(d.Patches) == 0 {
						continue
					}
					var cmds []string
					for _, p := range d.Patches {
						checkPatchShape(t, f.Cause+" "+d.ID, p)
						c := commandOf(t, p)
						cmds = append(cmds, c)
						texts = append(texts, c)
					}
					joined := strings.Join(cmds, "\n")
					if !strings.Contains(md, "```sh\n"+joined+"\n```") {
						t.Errorf("%s %s: the Markdown report does not show the patch as\n%s", f.Cause, d.ID, joined)
					}
					for _, c := range cmds {
						if !strings.Contains(text, "$ "+strings.ReplaceAll(c, "\n", "\n        ")) {
							t.Errorf("%s %s: the text report does not show\n%s", f.Cause, d.ID, c)
						}
					}
					if inTUI {
						copied := ""
						for _, b := range tf.blocks {
							if b.Fix == d.ID && b.What == cause.BlockPatch {
								copied = b.Text
							}
						}
						if copied != joined {
							t.Errorf("%s %s: the TUI's y copies\n%s\nthe report shows\n%s", f.Cause, d.ID, copied, joined)
						}
					}
				}
			}
			for _, tf := range tui {
				for _, fx := range tf.finding.Fixes {
					texts = append(texts, fx.Title, fx.Text, fx.Unpatchable, fx.Simulation)
					texts = append(texts, fx.Patches...)
					texts = append(texts, fx.Commands...)
					texts = append(texts, fx.YAML...)
					texts = append(texts, fx.Tradeoffs...)
					texts = append(texts, fx.Security...)
				}
				for _, b := range tf.blocks {
					texts = append(texts, b.Text)
				}
			}
			mdFixes := fixSections(md, "### Fix directions", "\n## ", "\n### Things that make it worse")
			textFixes := fixSections(text, "  fix directions:", "\nFINDING", "\nHYPOTHESES", "  things that make it worse:")
			if len(mdFixes) != len(rep.Findings) || len(textFixes) != len(rep.Findings) {
				t.Errorf("%d findings, %d fix sections in Markdown, %d in text", len(rep.Findings), len(mdFixes), len(textFixes))
			}
			texts = append(texts, mdFixes...)
			texts = append(texts, textFixes...)
			seen := map[string]bool{}
			for _, s := range texts {
				for _, l := range placeholdersIn(s) {
					if !seen[l] {
						seen[l] = true
						t.Errorf("placeholder %q left in %q", l, s)
					}
				}
			}
		})
	}
}

// checkPatchShape: the contract's fields, a type of merge, json or create,
// and a body valid for its type (RFC 7386 an object, RFC 6902 operations,
// a create the object it names).
func checkPatchShape(t *testing.T, where string, p fixPatch) {
	t.Helper()
	if p.APIVersion == "" || p.Kind == "" || p.Name == "" || p.Namespace == "" && p.Kind != "Namespace" {
		t.Errorf("%s: patch lacks a field: %+v", where, p)
	}
	switch p.Type {
	case "merge":
		var obj map[string]any
		if err := json.Unmarshal(p.Patch, &obj); err != nil || len(obj) == 0 {
			t.Errorf("%s: a merge patch that is no RFC 7386 object: %s", where, p.Patch)
		}
	case "json":
		ops, err := jsonpatch.DecodePatch(p.Patch)
		if err != nil || len(ops) == 0 {
			t.Errorf("%s: no RFC 6902 patch (%v): %s", where, err, p.Patch)
		}
		var raw []map[string]any
		_ = json.Unmarshal(p.Patch, &raw)
		for _, op := range raw {
			kind, _ := op["op"].(string)
			path, _ := op["path"].(string)
			if !map[string]bool{"add": true, "remove": true, "replace": true, "move": true, "copy": true, "test": true}[kind] || !strings.HasPrefix(path, "/") {
				t.Errorf("%s: an RFC 6902 operation that is none: %v", where, op)
			}
			if _, has := op["value"]; has != (kind == "add" || kind == "replace" || kind == "test") {
				t.Errorf("%s: operation %s with value %v", where, kind, has)
			}
		}
	case "create":
		var obj struct {
			APIVersion, Kind string
			Metadata         struct{ Name, Namespace string }
		}
		if err := json.Unmarshal(p.Patch, &obj); err != nil || obj.APIVersion != p.APIVersion || obj.Kind != p.Kind ||
			obj.Metadata.Name != p.Name || obj.Metadata.Namespace != p.Namespace {
			t.Errorf("%s: the created object is not the one the patch names: %+v vs %s", where, p, p.Patch)
		}
	default:
		t.Errorf("%s: patch type %q, not merge, json or create", where, p.Type)
	}
}

// commandOf is the kubectl command of p as the product makes it, checked
// here against p: its arguments, as a shell splits them, apply exactly p.
func commandOf(t *testing.T, p fixPatch) string {
	t.Helper()
	c := runbook.Patch{APIVersion: p.APIVersion, Kind: p.Kind, Namespace: p.Namespace, Name: p.Name, Type: p.Type, Patch: p.Patch}.Command()
	resource := strings.ToLower(p.Kind)
	if g, _, ok := strings.Cut(p.APIVersion, "/"); ok {
		resource += "." + g
	}
	if p.Type == "create" {
		head, body, ok := strings.Cut(c, " <<'EOF'\n")
		if !ok || head != "kubectl apply -n "+p.Namespace+" -f -" || !strings.HasSuffix(body, "\nEOF") {
			t.Errorf("create command %q", c)
			return c
		}
		got, err := yaml.YAMLToJSON([]byte(strings.TrimSuffix(body, "\nEOF")))
		if err != nil || !jsonEqual(got, p.Patch) {
			t.Errorf("the heredoc of %q is not the object %s (%v)", c, p.Patch, err)
		}
		return c
	}
	args, err := shellWords(c)
	if err != nil {
		t.Fatalf("%q: %v", c, err)
	}
	want := []string{"kubectl", "patch", resource, p.Name, "-n", p.Namespace, "--type=" + p.Type, "-p"}
	if p.Namespace == "" {
		want = []string{"kubectl", "patch", resource, p.Name, "--type=" + p.Type, "-p"}
	}
	if len(args) != len(want)+1 || !reflect.DeepEqual(args[:len(want)], want) {
		t.Errorf("command %q: arguments %q, want %q PATCH", c, args, want)
		return c
	}
	if !jsonEqual([]byte(args[len(want)]), p.Patch) {
		t.Errorf("command %q sends %s, the patch is %s", c, args[len(want)], p.Patch)
	}
	return c
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// shellWords splits a command as a POSIX shell does, for the quoting a
// patch command uses: single quotes, and '\” inside them.
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted:
			if c == '\'' {
				quoted = false
			} else {
				cur.WriteByte(c)
			}
		case c == '\'':
			quoted, in = true, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case strings.IndexByte("\"$`;&|<>()", c) >= 0:
			return nil, fmt.Errorf("unquoted %q at %d", c, i)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote")
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

func TestShellWordsUnquotesAsAShellDoes(t *testing.T) {
	got, err := shellWords(`kubectl patch x y -p '{"a":"it'\''s"}'`)
	if err != nil || !reflect.DeepEqual(got, []string{"kubectl", "patch", "x", "y", "-p", `{"a":"it's"}`}) {
		t.Errorf("%q %v", got, err)
	}
	if _, err := shellWords(`kubectl patch x -p {"a":1}`); err == nil {
		t.Error("an unquoted JSON body splits without error")
	}
}

// The outside proof: a finding's patches applied to the manifests with
// plain RFC 7386 merge and RFC 6902 JSON patch (evanphx/json-patch, not
// the product's code), written to a folder, and `check --manifests` (the
// CLI) run again on it: the cause is gone, and no cause is new.

// docsOf are the YAML documents of files as JSON.
func docsOf(t *testing.T, files ...string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if string(j) != "null" {
				out = append(out, j)
			}
		}
	}
	return out
}

// writeDocs writes docs as one YAML file in a new folder.
func writeDocs(t *testing.T, docs [][]byte) string {
	t.Helper()
	var all bytes.Buffer
	for _, d := range docs {
		y, err := yaml.JSONToYAML(d)
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString("---\n")
		all.Write(y)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), all.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// applyPatches applies patches to docs as the API server would.
func applyPatches(t *testing.T, docs [][]byte, patches []fixPatch) [][]byte {
	t.Helper()
	out := docs
	for _, p := range patches {
		var err error
		if out, err = applyPatch(t, out, p); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// applyPatch applies one patch to docs as the API server would: an error
// when no document is its object or the patch does not apply (a JSON
// patch's test that fails).
// applyPatch applies one patch to docs; a patched spec moves the object's
// generation, as the API server does, so a status istiod wrote before is
// stale after it.
func applyPatch(t testing.TB, docs [][]byte, p fixPatch) ([][]byte, error) {
	out := append([][]byte(nil), docs...)
	if p.Type == "create" {
		return append(out, []byte(p.Patch)), nil
	}
	group := func(apiVersion string) string { g, _, _ := strings.Cut(apiVersion, "/"); return g }
	found := false
	for i, d := range out {
		var m struct {
			APIVersion, Kind string
			Metadata         struct{ Name, Namespace string }
		}
		if err := json.Unmarshal(d, &m); err != nil {
			return nil, err
		}
		if m.Kind != p.Kind || group(m.APIVersion) != group(p.APIVersion) || m.Metadata.Name != p.Name || m.Metadata.Namespace != p.Namespace {
			continue
		}
		found = true
		var err error
		switch p.Type {
		case "merge":
			out[i], err = jsonpatch.MergePatch(d, p.Patch)
		case "json":
			var ops jsonpatch.Patch
			if ops, err = jsonpatch.DecodePatch(p.Patch); err == nil {
				out[i], err = ops.Apply(d)
			}
		default:
			return nil, fmt.Errorf("%s %s/%s: a %s patch", p.Kind, p.Namespace, p.Name, p.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s does not apply to the manifest: %v\n%s", p.Kind, p.Namespace, p.Name, err, p.Patch)
		}
		out[i] = runbooktest.BumpGeneration(t, d, out[i])
	}
	if !found {
		return nil, fmt.Errorf("%s %s/%s: no manifest holds it", p.Kind, p.Namespace, p.Name)
	}
	return out, nil
}

func targetArgs(tg cluster.Target) []string {
	args := []string{"-n", tg.Namespace, "svc/" + tg.Service}
	if tg.Port != 0 {
		args = append(args, "--port", fmt.Sprint(tg.Port))
	}
	if tg.Source != nil {
		args = append(args, "--from", tg.Source.Namespace+"/pod/"+tg.Source.Name)
	}
	return args
}

func causesOf(rep fixReport) map[string]runbook.Confidence {
	out := map[string]runbook.Confidence{}
	for _, f := range rep.Findings {
		out[f.Cause] = runbook.Confidence(f.Confidence)
	}
	return out
}

// proveWithCheck applies each simulated direction of rep to docs and runs
// check --manifests on the result; it returns how many it proved.
func proveWithCheck(t *testing.T, rep fixReport, docs [][]byte, tg cluster.Target) int {
	t.Helper()
	base := causesOf(checkJSON(t, append(targetArgs(tg), "--manifests", writeDocs(t, docs))...))
	proved := 0
	for _, f := range rep.Findings {
		for _, d := range f.Fix.Directions {
			if len(d.Patches) == 0 {
				continue
			}
			if d.Simulation == nil || !d.Simulation.Simulated {
				continue // labelled "cannot be simulated" (TestFixesAreProvenBeforeShown)
			}
			// Make before break: applied one by one, in their order, no
			// patch breaks anything before the next.
			for n := 1; n < len(d.Patches); n++ {
				part := causesOf(checkJSON(t, append(targetArgs(tg), "--manifests", writeDocs(t, applyPatches(t, docs, d.Patches[:n])))...))
				for c, conf := range part {
					if was, ok := base[c]; !ok || conf.Rank() > was.Rank() {
						t.Errorf("%s %s: after its first %d patches, check --manifests finds %s (%s)", f.Cause, d.ID, n, c, conf)
					}
				}
			}
			after := causesOf(checkJSON(t, append(targetArgs(tg), "--manifests", writeDocs(t, applyPatches(t, docs, d.Patches)))...))
			if was, ok := base[f.Cause]; ok {
				if now, still := after[f.Cause]; still && (len(d.Simulation.Remains) == 0 || now.Rank() >= was.Rank()) {
					t.Errorf("%s %s: applied, check --manifests still finds it (%s; simulation: %s)", f.Cause, d.ID, now, d.Simulation.Summary)
				}
			}
			for _, c := range d.Simulation.Clears {
				if _, still := after[c]; still {
					t.Errorf("%s %s: the simulation says it clears %s; check --manifests still finds it", f.Cause, d.ID, c)
				}
			}
			expected := map[string]bool{f.Cause: true}
			for _, e := range d.Simulation.Expected {
				expected[e.Cause] = true
			}
			for c, conf := range after {
				if was, ok := base[c]; (!ok || conf.Rank() > was.Rank()) && !expected[c] {
					t.Errorf("%s %s: applied, the patches cause %s (%s)", f.Cause, d.ID, c, conf)
				}
			}
			proved++
		}
	}
	return proved
}

func TestScenarioPatchesClearTheirCauseOnCheckManifests(t *testing.T) {
	proved := map[string]int{}
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			rep := checkJSON(t, "--scenario", name)
			src, err := triage.Scenario(name)
			if err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join("..", "..", "assets", "scenarios", name, "manifests", "*.yaml"))
			proved[name] = proveWithCheck(t, rep, docsOf(t, files...), *src.Target)
		})
	}
	// Every scenario whose cause a change to the objects read fixes.
	for _, name := range []string{"subset-no-pods", "gateway-subset-no-pods", "vs-undefined-subset", "outlier-all-ejected",
		"outlier-gateway-errors", "circuit-breaker-overflow", "port-mismatch", "gateway-vs-not-bound", "gateway-host-mismatch",
		"mtls-to-pod-without-sidecar", "mtls-plaintext-to-strict", "ambient-hbone-networkpolicy",
		"missing-serviceentry", "idle-timeout-uc",
		"gatewayapi-backend-port-missing", "gatewayapi-route-not-attached", "gatewayapi-ref-not-permitted", "gateway-listener-unreachable",
		"mesh-route-backend-not-found", "waypoint-route-backend-not-found"} {
		if proved[name] == 0 && !t.Failed() {
			t.Errorf("%s: no patch proven on check --manifests", name)
		}
	}
}

// handMadeCase is a case the team does not see: its manifests, the target
// (with its caller) and the cause check must find.
type handMadeCase struct {
	name, manifests, cause string
	target                 cluster.Target
	docs                   [][]byte
}

// handMadeCases are testdata/fixes here and runbook/triage's.
func handMadeCases(t *testing.T) []handMadeCase {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("testdata", "fixes", "*"))
	if len(dirs) < 3 {
		t.Fatalf("hand-made cases: %v", dirs)
	}
	more, _ := filepath.Glob(filepath.Join("..", "..", "runbook", "triage", "testdata", "fixes", "*"))
	var out []handMadeCase
	for _, dir := range append(dirs, more...) {
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
		tg := cluster.Target{Namespace: c.Namespace, Service: c.Service, Port: c.Port}
		if ns, pod, ok := strings.Cut(c.From, "/"); ok {
			tg.Source = &cluster.PodRef{Namespace: ns, Name: pod}
		}
		manifests := filepath.Join(dir, "manifests.yaml")
		out = append(out, handMadeCase{name: filepath.Base(dir), manifests: manifests, cause: c.Cause, target: tg, docs: docsOf(t, manifests)})
	}
	return out
}

// Cases the team does not see (testdata/fixes here and runbook/triage's):
// other names, subsets, ports and namespaces. check --manifests finds the
// cause; its patches, applied outside, clear it with no new cause.
func TestHandMadeCasesPatchesClearTheirCauseOnCheckManifests(t *testing.T) {
	for _, c := range handMadeCases(t) {
		t.Run(c.name, func(t *testing.T) {
			tg, docs := c.target, c.docs
			rep := checkJSON(t, append(targetArgs(tg), "--manifests", c.manifests)...)
			if _, ok := causesOf(rep)[c.cause]; !ok {
				t.Fatalf("check --manifests finds %v, not %s", causesOf(rep), c.cause)
			}
			if n := proveWithCheck(t, rep, docs, tg); n == 0 {
				t.Errorf("no patch of %s proven", c.cause)
			}
			for _, f := range rep.Findings {
				for _, d := range f.Fix.Directions {
					for _, p := range d.Patches {
						checkPatchShape(t, f.Cause+" "+d.ID, p)
						_ = commandOf(t, p)
					}
					for _, s := range append([]string{d.Title, d.Text, d.Unpatchable}, d.Commands...) {
						if l := placeholdersIn(s); len(l) > 0 {
							t.Errorf("%s %s: placeholder %q left in %q", f.Cause, d.ID, l, s)
						}
					}
				}
			}
		})
	}
}

// Proven before shown, on every scenario: a direction's patches come with
// their simulation; a simulated one adds no finding and leaves its cause
// no longer as certain; one that cannot be simulated says so and why, in
// the reports too; a direction with a remedy and no patch says why; and a
// cause no patch fixes says why in fix.unpatchable, naming the object and
// the command that shows the problem.
func TestFixesAreProvenBeforeShown(t *testing.T) {
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			src, err := triage.Scenario(name)
			if err != nil {
				t.Fatal(err)
			}
			rep := checkJSON(t, "--scenario", name)
			md := checkOut(t, "md", "--scenario", name)
			for _, f := range rep.Findings {
				patched := false
				for _, d := range f.Fix.Directions {
					if len(d.Patches) == 0 {
						if d.Unpatchable == "" && f.Cause != runbook.Unexplained {
							t.Errorf("%s %s: neither a patch nor why there is none", f.Cause, d.ID)
						}
						continue
					}
					patched = true
					sim := d.Simulation
					switch {
					case sim == nil:
						t.Errorf("%s %s: patches shown without a simulation", f.Cause, d.ID)
					case sim.Simulated:
						if len(sim.New) > 0 || !strings.HasPrefix(sim.Summary, "simulated: ") || !strings.Contains(sim.Summary, "no new finding") {
							t.Errorf("%s %s: offered with %s", f.Cause, d.ID, sim.Summary)
						}
						for _, r := range sim.Remains {
							if r.Cause == f.Cause && !strings.Contains(sim.Summary, "lowers "+f.Cause) {
								t.Errorf("%s %s: offered though it does not clear its cause: %s", f.Cause, d.ID, sim.Summary)
							}
						}
					default:
						if sim.Why == "" || sim.Summary != "cannot be simulated: "+sim.Why {
							t.Errorf("%s %s: not simulated, and not labelled so: %+v", f.Cause, d.ID, sim)
						}
					}
					if sim != nil && !strings.Contains(md, "Patch, in this order ("+sim.Summary+")") {
						t.Errorf("%s %s: the Markdown report does not say %q", f.Cause, d.ID, sim.Summary)
					}
				}
				if patched || f.Cause == runbook.Unexplained {
					if f.Fix.Unpatchable != "" {
						t.Errorf("%s: fix.unpatchable %q beside a patch", f.Cause, f.Fix.Unpatchable)
					}
					continue
				}
				u := f.Fix.Unpatchable
				if u == "" || !strings.Contains(u, " "+src.Target.Namespace) ||
					!regexp.MustCompile("It shows in `(kubectl|istioctl) [^`]+`").MatchString(u) {
					t.Errorf("%s: fix.unpatchable does not say why with the object and the command that shows it: %q", f.Cause, u)
				}
			}
		})
	}
}

// The bad fixes issue 25 named, each pinned to the one right change: the
// patch, applied outside the product, changes exactly what it must and
// leaves every other field of the object, and every other object, as it
// was.
func TestTheNamedBadFixesAreTheSmallestRightChange(t *testing.T) {
	type obj = map[string]any
	for _, c := range []struct {
		scenario, cause, direction string
		kind, name                 string
		// check judges the object before and after; it clears in both
		// what it judged, and the rest must then be equal.
		check func(t *testing.T, before, after obj, docs [][]byte)
	}{
		{"subset-no-pods", "dr.subset-no-pods", "route-away-first", "VirtualService", "orders", routeOnlyTo("v1")},
		{"gateway-subset-no-pods", "dr.subset-no-pods", "route-away-first", "VirtualService", "orders-public", routeOnlyTo("stable")},
		{"vs-undefined-subset", "vs.subset-undefined", "define-subset", "DestinationRule", "orders", func(t *testing.T, before, after obj, docs [][]byte) {
			b, a := at(before, "spec", "subsets").([]any), at(after, "spec", "subsets").([]any)
			if len(a) != len(b)+1 || !reflect.DeepEqual(a[:len(b)], b) {
				t.Fatalf("subsets %v -> %v: want the existing ones kept and one added", b, a)
			}
			added := a[len(b)].(obj)
			if added["name"] != "canary" {
				t.Errorf("added subset %v, the routes use canary", added)
			}
			// The labels are those the canary pods carry, and select them.
			labels := added["labels"].(obj)
			if !podWithLabels(docs, "shop", labels) || len(labels) == 0 {
				t.Errorf("subset canary selects %v: no pod of shop carries them", labels)
			}
			delete(before["spec"].(obj), "subsets")
			delete(after["spec"].(obj), "subsets")
		}},
		{"outlier-all-ejected", "outlier.all-ejected", "tune-outlier", "DestinationRule", "orders", outlierTuned("consecutive5xxErrors")},
		{"outlier-gateway-errors", "outlier.all-ejected", "tune-outlier", "DestinationRule", "orders", outlierTuned("consecutiveGatewayErrors")},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			rep := checkJSON(t, "--scenario", c.scenario)
			var d *fixDirection
			for _, f := range rep.Findings {
				for i := range f.Fix.Directions {
					if f.Cause == c.cause && f.Fix.Directions[i].ID == c.direction {
						d = &f.Fix.Directions[i]
					}
				}
			}
			if d == nil || len(d.Patches) != 1 || d.Patches[0].Kind != c.kind || d.Patches[0].Name != c.name {
				t.Fatalf("%s %s: want one patch of %s %s, got %+v", c.cause, c.direction, c.kind, c.name, d)
			}
			files, _ := filepath.Glob(filepath.Join("..", "..", "assets", "scenarios", c.scenario, "manifests", "*.yaml"))
			docs := docsOf(t, files...)
			patched := applyPatches(t, docs, d.Patches)
			for i := range docs {
				var before, after obj
				_ = json.Unmarshal(docs[i], &before)
				_ = json.Unmarshal(patched[i], &after)
				md := before["metadata"].(obj)
				if before["kind"] == c.kind && md["name"] == c.name && md["namespace"] == "shop" {
					c.check(t, before, after, docs)
				}
				// The API server moves the generation with the spec.
				delete(md, "generation")
				delete(after["metadata"].(obj), "generation")
				if !reflect.DeepEqual(before, after) {
					t.Errorf("%s %s/%s: the patch changes more than it must:\nbefore %v\nafter  %v", before["kind"], md["namespace"], md["name"], before, after)
				}
			}
		})
	}
}

// at is the value at path in a JSON object (nil when absent).
func at(v any, path ...any) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p.(string)]
		case []any:
			i := p.(int)
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// routeOnlyTo: the VirtualService's first route sends 100% to the serving
// subset and no longer to the empty one; its other routes, matches,
// timeouts and gateways are as they were.
func routeOnlyTo(serving string) func(t *testing.T, before, after map[string]any, docs [][]byte) {
	return func(t *testing.T, before, after map[string]any, _ [][]byte) {
		route := at(after, "spec", "http", 0, "route").([]any)
		if len(route) != 1 || at(route[0], "destination", "subset") != serving || at(route[0], "weight") != float64(100) {
			t.Errorf("route after the patch %v: want all of it to subset %s", route, serving)
		}
		if at(route[0], "destination", "host") != at(before, "spec", "http", 0, "route", 0, "destination", "host") {
			t.Errorf("the route's host changed: %v", route)
		}
		delete(at(before, "spec", "http", 0).(map[string]any), "route")
		delete(at(after, "spec", "http", 0).(map[string]any), "route")
	}
}

// outlierTuned: the offending consecutive-errors field is raised in place
// (or removed), the other one not added, maxEjectionPercent below 100.
func outlierTuned(field string) func(t *testing.T, before, after map[string]any, docs [][]byte) {
	other := map[string]string{"consecutive5xxErrors": "consecutiveGatewayErrors", "consecutiveGatewayErrors": "consecutive5xxErrors"}[field]
	return func(t *testing.T, before, after map[string]any, _ [][]byte) {
		b := at(before, "spec", "trafficPolicy", "outlierDetection").(map[string]any)
		a := at(after, "spec", "trafficPolicy", "outlierDetection").(map[string]any)
		if b[field] != float64(1) {
			t.Fatalf("the scenario's %s is %v, not 1", field, b[field])
		}
		if n, ok := a[field].(float64); ok && n <= 1 {
			t.Errorf("%s after the patch = %v: one error still ejects", field, a[field])
		}
		if _, added := a[other]; added && b[other] == nil {
			t.Errorf("the patch adds %s beside %s: %v", other, field, a)
		}
		if n, _ := a["maxEjectionPercent"].(float64); a["maxEjectionPercent"] == nil || n >= 100 {
			t.Errorf("maxEjectionPercent after the patch = %v: every host can still be ejected", a["maxEjectionPercent"])
		}
		for _, m := range []map[string]any{a, b} {
			delete(m, field)
			delete(m, "maxEjectionPercent")
		}
	}
}

// podWithLabels: a pod of ns carries every label of labels.
func podWithLabels(docs [][]byte, ns string, labels map[string]any) bool {
	for _, d := range docs {
		var p struct {
			Kind     string
			Metadata struct {
				Namespace string
				Labels    map[string]string
			}
		}
		if json.Unmarshal(d, &p) != nil || p.Kind != "Pod" || p.Metadata.Namespace != ns {
			continue
		}
		all := true
		for k, v := range labels {
			if p.Metadata.Labels[k] != v {
				all = false
			}
		}
		if all {
			return true
		}
	}
	return false
}
