// Command scenariogen writes the recorded demo scenarios meshtriage embeds
// (assets/scenarios): for each one the Kubernetes manifests, the Envoy
// admin output of the sidecars triage reads, container logs and istiod's
// syncz, all built from one description so every cross-reference holds
// (no EndpointSlice address without its pod, no Envoy host the story does
// not explain).
//
//	go run ./assets/scenariogen -out assets/scenarios [NAME...]
//
// or `go generate ./assets`. Output is deterministic: regenerating
// without changing a scenario leaves the committed files untouched, and
// the package's test fails when they differ.
//
// To add a scenario, copy the closest story_*.go, give it a new Name and
// story, name its objects as the incident had them and build its world with
// the Shop helpers (shop.go, storyparts.go); list it in registry.go, run
// `go generate ./assets` and commit the new folder with the code.
//
// Traffic, durations and jitter are drawn from math/rand/v2 with a fixed
// seed mixed with the scenario's name (ids.go). Each scenario draws in the
// order its code runs: adding or moving a draw reshuffles that scenario's
// traffic (and only that scenario's), so regenerate and check that it
// still diagnoses the same (probes/cluster/recorded's tests pin each
// scenario's causes).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

func main() {
	out := flag.String("out", "", "folder to write the scenarios into (one subfolder each)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: scenariogen -out DIR [NAME...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := generate(*out, flag.Args(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scenariogen:", err)
		os.Exit(1)
	}
}

// generate writes the named scenarios (all when names is empty) under
// root, replacing each scenario's folder, and reports each to progress.
func generate(root string, names []string, progress io.Writer) error {
	wanted := map[string]bool{}
	for _, n := range names {
		wanted[n] = true
	}
	seen := map[string]bool{}
	for _, sc := range scenarios {
		if seen[sc.Name] {
			return fmt.Errorf("two scenarios are named %q", sc.Name)
		}
		seen[sc.Name] = true
		if len(names) > 0 && !wanted[sc.Name] {
			continue
		}
		delete(wanted, sc.Name)
		if err := writeFiles(filepath.Join(root, sc.Name), sc.render()); err != nil {
			return err
		}
		fmt.Fprintln(progress, "wrote", sc.Name)
	}
	if unknown := sortedKeys(wanted); len(unknown) > 0 {
		return fmt.Errorf("no scenario %q", unknown[0])
	}
	return nil
}

// writeFiles replaces dir with files, so a file the generator no longer
// writes does not linger.
func writeFiles(dir string, files map[string]string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			return err
		}
	}
	return nil
}
