package main

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// committedScenarios is assets/scenarios, what meshtriage embeds.
const committedScenarios = "../scenarios"

// The committed scenarios must be exactly what the generator writes: a
// hand edit would be lost at the next regeneration, and a generator change
// must come with its regenerated files.
func TestGeneratedScenariosMatchCommitted(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		got := readTree(t, filepath.Join(dir, sc.Name))
		want := readTree(t, filepath.Join(committedScenarios, sc.Name))
		for _, f := range unionOfKeys(got, want) {
			name := "assets/scenarios/" + sc.Name + "/" + f
			g, generated := got[f]
			w, committed := want[f]
			switch {
			case !generated:
				t.Errorf("%s is committed but the generator does not write it: run `go generate ./assets`", name)
			case !committed:
				t.Errorf("%s is written by the generator but not committed: run `go generate ./assets`", name)
			case !bytes.Equal(g, w):
				t.Errorf("%s differs from what the generator writes (%s): run `go generate ./assets`%s",
					name, differenceKind(f, g, w), firstDifferentLine(g, w))
			}
		}
	}
}

// Regenerating must not churn files: no map order, clock or randomness may
// reach the output.
func TestGeneratorIsDeterministic(t *testing.T) {
	for _, sc := range scenarios {
		first, second := sc.render(), sc.render()
		if !reflect.DeepEqual(first, second) {
			t.Errorf("%s: two renders differ", sc.Name)
		}
	}
}

func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

func unionOfKeys(a, b map[string][]byte) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	return sortedKeys(seen)
}

// differenceKind tells a formatting-only difference (same YAML or JSON
// values) from a change of content, to help judge a failing diff.
func differenceKind(name string, got, want []byte) string {
	var g, w any
	var errG, errW error
	switch {
	case strings.HasSuffix(name, ".yaml"):
		g, errG = parseYAMLDocuments(got)
		w, errW = parseYAMLDocuments(want)
	case strings.HasSuffix(name, ".json"):
		errG, errW = json.Unmarshal(got, &g), json.Unmarshal(want, &w)
	default:
		return "content differs"
	}
	switch {
	case errW != nil:
		return "the committed file does not parse: " + errW.Error()
	case errG != nil:
		return "the generated file does not parse: " + errG.Error()
	case reflect.DeepEqual(g, w):
		return "same values, different formatting"
	}
	return "values differ"
}

func parseYAMLDocuments(b []byte) ([]any, error) {
	var out []any
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func firstDifferentLine(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "\n  line " + strconv.Itoa(i+1) + " generated: " + gl + "\n  line " + strconv.Itoa(i+1) + " committed: " + wl
		}
	}
	return ""
}
