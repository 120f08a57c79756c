package lab

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/meshtriage/meshtriage/"

// layers is ARCHITECTURE.md's code map as ranks: a package may import only
// packages of a lower rank (its longest matching folder decides), so imports
// point downward, cmd → tui → runbook → probes → cluster access, parsers and
// the mesh model. The terminal UI's components import each other (Go keeps
// that tree acyclic); lab may import anything.
var layers = map[string]int{
	"assets": 0,
	// The generator of assets/scenarios: a tool beside the data it writes,
	// importing nothing of ours (see TestToolsStayOutOfTheProduct).
	"assets/scenariogen":       0,
	"probes/mesh":              1,
	"probes/mesh/meshtest":     4, // the model's cases, read from YAML (test support)
	"probes/parse":             1,
	"probes/parse/clustername": 0,
	"probes/patch":             0, // a change to one object and its kubectl command
	"probes/cluster":           2,
	"probes/vocabulary":        2, // the data plane's vocabulary: assets and the parsers' closed sets
	"probes/cluster/podconn":   3,
	"probes/cluster/clientset": 3,
	"probes/cluster/manifests": 3,
	"probes/cluster/live":      4,
	"probes/cluster/recorded":  4,
	"probes/cluster/bugreport": 5,
	"probes/cluster/patched":   3, // a cluster with patches applied in memory, for the fixes' simulation
	// What the probes share, each helper named for what it is, ranked
	// below probes: a helper never imports a probe.
	"probes/readgroup":    0, // reads at once
	"probes/wording":      0, // counts, plurals, dashes of summaries and evidence
	"probes/podfacts":     3, // a pod's ports and readiness
	"probes/podstartup":   3, // how a pod started: the startup-order probe's and the watch's judgement
	"probes/istioconfig":  3, // the mesh config and the rules, read as istiod reads them
	"probes/envoyadmin":   3, // a proxy's Envoy admin: paths, the caller's Envoy, pilot-agent
	"probes/prometheus":   3, // the Prometheus HTTP API client
	"probes/proxylog":     3, // the proxies' logs: newest lines, inbound entries, BlackHoleCluster, the vocabulary's reading
	"probes/callerview":   4, // the caller's view: the config model's answer and its reads
	"probes/ambientpath":  4, // what the ambient probes read in common
	"probes/callersearch": 5, // whose sidecar sees the 503s, when no caller is named
	"probes":              6,
	"probes/actions":      5,
	"probes/watch":        7,
	"probes/remedies":     7, // fixes computed from the evidence, one remedy a file
	"runbook":             8,
	"runbook/incidentlog": 9,
	"runbook/report":      9,
	"runbook/runbooktest": 9,
	"runbook/triage":      10,
	"tui":                 11,
	"cmd":                 12,
	// The release configuration reads no product package; only its own
	// command (krewmanifest) reads it.
	"cmd/meshtriage/release":              0,
	"cmd/meshtriage/release/krewmanifest": 1,
}

// notFromProbes are the cluster implementations the probes must not know:
// a probe reads through cluster.Cluster, whatever serves it.
var notFromProbes = []string{"probes/cluster/live", "probes/cluster/recorded", "probes/cluster/podconn", "probes/cluster/clientset", "probes/cluster/manifests", "probes/cluster/bugreport"}

// probeHelpers are the packages the probes share (see layers): they read
// through cluster.Cluster as the probes do.
var probeHelpers = []string{"probes/readgroup", "probes/wording", "probes/podfacts", "probes/istioconfig", "probes/envoyadmin", "probes/prometheus", "probes/proxylog", "probes/callerview", "probes/ambientpath", "probes/callersearch", "probes/podstartup"}

// readsThroughCluster: pkg is a probe, a helper of theirs, the watch or a
// remedy, none of which may know a cluster implementation.
func readsThroughCluster(pkg string) bool {
	return pkg == "probes" || slices.Contains(probeHelpers, pkg) || strings.HasPrefix(pkg, "probes/watch") || strings.HasPrefix(pkg, "probes/remedies")
}

func rank(pkg string) (int, bool) {
	best, r := "", 0
	for prefix, n := range layers {
		if (pkg == prefix || strings.HasPrefix(pkg, prefix+"/")) && len(prefix) > len(best) {
			best, r = prefix, n
		}
	}
	return r, best != ""
}

// productImports maps each product package (folder) to the project packages
// its non-test files import.
func productImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "lab" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module) {
				out[pkg] = append(out[pkg], strings.TrimPrefix(p, module))
			}
		}
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportsPointDownward(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "ARCHITECTURE.md")); err != nil {
		t.Fatalf("no ARCHITECTURE.md at the module root: %v", err)
	}
	imports := productImports(t, root)
	pkgs := make([]string, 0, len(imports))
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	if len(pkgs) < 20 {
		t.Fatalf("found only %d product packages under %s", len(pkgs), root)
	}
	for _, pkg := range pkgs {
		from, ok := rank(pkg)
		if !ok {
			t.Errorf("%s is in no layer of ARCHITECTURE.md's code map: add it there and here", pkg)
			continue
		}
		for _, dep := range imports[pkg] {
			to, ok := rank(dep)
			switch {
			case !ok:
				t.Errorf("%s imports %s, which is in no layer", pkg, dep)
			case strings.HasPrefix(pkg, "tui") && strings.HasPrefix(dep, "tui"):
			case to >= from:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must point downward", pkg, from, dep, to)
			}
			if readsThroughCluster(pkg) {
				for _, impl := range notFromProbes {
					if dep == impl {
						t.Errorf("%s imports %s: probes read through cluster.Cluster, never an implementation", pkg, dep)
					}
				}
			}
		}
	}
}

// toolFolders are where commands other than meshtriage live: the CLI's own
// commands, the generator of the embedded scenarios beside them, and the lab.
var toolFolders = []string{"cmd", "assets/scenariogen", "lab"}

// The product's packages carry no tools: a package main under probes/,
// runbook/ or tui/ (a test-data factory inside the cluster access, say) would
// be built and read as part of what it serves.
func TestToolsStayOutOfTheProduct(t *testing.T) {
	root, _ := filepath.Abs("..")
	commands := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			for _, tools := range toolFolders {
				if rel == tools || strings.HasPrefix(rel, tools+"/") {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			commands[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range slices.Sorted(maps.Keys(commands)) {
		t.Errorf("%s is a command inside the product; tools live in %v", pkg, toolFolders)
	}
}

// The engine knows nothing about Istio: the runbook package reads no Istio
// API and no mesh model; the knowledge is in the YAML and the probes' facts.
func TestEngineKnowsNoIstio(t *testing.T) {
	root, _ := filepath.Abs("..")
	files, err := filepath.Glob(filepath.Join(root, "runbook", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no runbook sources: %v", err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, "istio.io/") || strings.Contains(p, "envoyproxy") || p == module+"probes/mesh" {
				t.Errorf("%s imports %s", filepath.Base(path), p)
			}
		}
	}
}

// probeCore are the files of package probes that are no probe: the
// contract (Result, Status, Facts, Meta), the registry, and the verdict
// rule that builds results. Everything else probes share lives in helper
// packages under probes/, which never import probes.
var probeCore = []string{"probe.go", "registry.go", "verdict.go"}

// Probes stand alone, as Istio's analyzers do: every other file of
// package probes is one probe (a type with Meta), listed in registry.go's
// All(), and a probe file uses no name another probe file declares.
// Changing one probe then means reading its file and the helpers it
// imports, never five other probes.
func TestProbesStandAlone(t *testing.T) {
	root, _ := filepath.Abs("..")
	dir := filepath.Join(root, "probes")
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	declaredIn := map[string]string{} // package-level name -> file
	probeTypes := map[string]string{} // type with a Meta method -> file
	for _, path := range paths {
		name := filepath.Base(path)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declaredIn[d.Name.Name] = name
				} else if d.Name.Name == "Meta" {
					probeTypes[receiverType(d)] = name
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declaredIn[s.Name.Name] = name
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declaredIn[n.Name] = name
						}
					}
				}
			}
		}
	}
	if len(files) < 10 {
		t.Fatalf("found only %d files in %s", len(files), dir)
	}
	probeFiles := map[string][]string{} // file -> the probe types it declares
	for typ, file := range probeTypes {
		probeFiles[file] = append(probeFiles[file], typ)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		switch {
		case slices.Contains(probeCore, name):
		case len(probeFiles[name]) == 0:
			t.Errorf("probes/%s is neither a probe (a type with Meta) nor one of %v: what probes share goes in a helper package under probes/", name, probeCore)
		case len(probeFiles[name]) > 1:
			t.Errorf("probes/%s declares %d probes (%s): one probe a file", name, len(probeFiles[name]), strings.Join(slices.Sorted(slices.Values(probeFiles[name])), ", "))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(probeFiles)) {
		used := map[string]bool{}
		for _, id := range files[name].Unresolved {
			from, ok := declaredIn[id.Name]
			if ok && from != name && len(probeFiles[from]) > 0 && !used[id.Name] {
				used[id.Name] = true
				t.Errorf("probes/%s uses %s, declared by the probe file %s: a probe depends on helpers, never on another probe", name, id.Name, from)
			}
		}
	}

	// registry.go's All() lists every probe type, and only those.
	registry := files["registry.go"]
	if registry == nil {
		t.Fatal("no probes/registry.go")
	}
	listed := map[string]bool{}
	ast.Inspect(registry, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "All" || fn.Recv != nil {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if lit, ok := n.(*ast.CompositeLit); ok {
				if id, ok := lit.Type.(*ast.Ident); ok {
					listed[id.Name] = true
				}
			}
			return true
		})
		return false
	})
	if len(listed) == 0 {
		t.Fatal("registry.go's All() lists no probe")
	}
	for _, typ := range slices.Sorted(maps.Keys(probeTypes)) {
		if !listed[typ] {
			t.Errorf("%s (probes/%s) is not in registry.go's All(): the registry is the one list of probes", typ, probeTypes[typ])
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(listed)) {
		if _, ok := probeTypes[typ]; !ok {
			t.Errorf("registry.go's All() lists %s, which no probe file of probes/ declares with a Meta", typ)
		}
	}
}

// receiverType is the name of a method's receiver type.
func receiverType(fn *ast.FuncDecl) string {
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
