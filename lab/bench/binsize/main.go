// Command binsize measures the size of meshtriage's release binary next to
// istioctl's and kubectl's, the three built alike: linux/amd64,
// CGO_ENABLED=0, -trimpath, -ldflags "-s -w", as
// .goreleaser.yaml builds meshtriage and as Istio and
// Kubernetes build their release binaries. It then breaks meshtriage's
// binary down by module: the size of each symbol the linker placed in the
// file, by the module of the package that defines it.
//
//	go run ./lab/bench/binsize
//
// istioctl and kubectl are built from lab/tools/istioctl and
// lab/tools/kubectl once (many minutes on a small machine) and cached next
// to the lab's other binaries ($MESHLAB_CACHE); meshtriage is built from the
// working tree on every run. BENCHMARKS.md ("Binary size") holds a run.
package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/lab"
	"github.com/meshtriage/meshtriage/lab/bench"
)

// releaseLDFlags are the -ldflags of every binary compared.
const releaseLDFlags = "-s -w"

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "binsize:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	root, err := lab.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	cache, err := lab.CacheDir(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "binsize-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	meshtriage := filepath.Join(tmp, "meshtriage")
	if err := build(ctx, root, "./cmd/meshtriage", meshtriage, releaseLDFlags); err != nil {
		return err
	}
	istioctl := filepath.Join(cache, "istioctl-"+shortVersion(bench.IstioctlVersion)+"-release")
	if err := buildOnce(ctx, filepath.Join(root, "lab", "tools", "istioctl"), istioctl, releaseLDFlags); err != nil {
		return err
	}
	kubectl := filepath.Join(cache, "kubectl-"+lab.KubeVersion+"-release")
	if err := buildOnce(ctx, filepath.Join(root, "lab", "tools", "kubectl"), kubectl, releaseLDFlags+" "+kubeVersionLDFlags()); err != nil {
		return err
	}

	fmt.Println("| binary (linux/amd64, CGO_ENABLED=0, -trimpath -s -w) | bytes | MiB |")
	fmt.Println("|---|---:|---:|")
	for _, b := range []struct{ name, path string }{
		{"meshtriage (this tree)", meshtriage},
		{"istioctl " + bench.IstioctlVersion, istioctl},
		{"kubectl " + lab.KubeVersion, kubectl},
	} {
		st, err := os.Stat(b.path)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %d | %.1f |\n", b.name, st.Size(), float64(st.Size())/(1<<20))
	}

	// The breakdown needs the symbol table -s drops; -w still drops DWARF,
	// which no symbol accounts for.
	symbols := filepath.Join(tmp, "meshtriage-symbols")
	if err := build(ctx, root, "./cmd/meshtriage", symbols, "-w"); err != nil {
		return err
	}
	return breakdown(symbols)
}

func shortVersion(v string) string { return v[strings.LastIndex(v, "-")+1:] }

// kubeVersionLDFlags stamp kubectl's version as Kubernetes' release does,
// so that the binary compared is the release's, version string and all.
func kubeVersionLDFlags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(lab.KubeVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	pkg := "k8s.io/component-base/version"
	return fmt.Sprintf("-X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s -X %[1]s.gitTreeState=clean",
		pkg, lab.KubeVersion, major, minor)
}

// build runs go build as the release does, for linux/amd64.
func build(ctx context.Context, dir, pkg, out, ldflags string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s in %s: %w\n%s", pkg, dir, err, log.String())
	}
	return nil
}

// buildOnce builds a tools module's binary unless the cache has it.
func buildOnce(ctx context.Context, dir, out, ldflags string) error {
	if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() {
		return nil
	}
	fmt.Fprintf(os.Stderr, "binsize: building %s (minutes, once)\n", filepath.Base(out))
	if err := build(ctx, dir, ".", out+".tmp", ldflags); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}

// breakdown prints the bytes of the file's sections and of the symbols in
// them by module, the largest first.
func breakdown(path string) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	modules := []string{info.Main.Path}
	for _, d := range info.Deps {
		modules = append(modules, d.Path)
	}
	// Longest first, so a nested module (go-control-plane/envoy) wins over
	// its parent's path.
	sort.Slice(modules, func(i, j int) bool { return len(modules[i]) > len(modules[j]) })

	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Println()
	fmt.Println("| section of meshtriage (-w, symbols kept) | bytes |")
	fmt.Println("|---|---:|")
	inFile := map[int]bool{}
	for i, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || s.Size < 1<<16 {
			continue
		}
		inFile[i] = true
		fmt.Printf("| %s | %d |\n", s.Name, s.Size)
	}
	syms, err := f.Symbols()
	if err != nil {
		return err
	}
	byModule := map[string]uint64{}
	var total uint64
	for _, s := range syms {
		if !inFile[int(s.Section)] || s.Size == 0 {
			continue
		}
		m := moduleOf(packageOf(s.Name), modules)
		byModule[m] += s.Size
		total += s.Size
	}
	names := make([]string, 0, len(byModule))
	for m := range byModule {
		names = append(names, m)
	}
	sort.Slice(names, func(i, j int) bool { return byModule[names[i]] > byModule[names[j]] })
	fmt.Println()
	fmt.Printf("| module (symbols in the file: %.1f MiB; the rest is the pc-line tables and headers) | MiB | share |\n", float64(total)/(1<<20))
	fmt.Println("|---|---:|---:|")
	var other uint64
	for i, m := range names {
		if i >= 25 {
			other += byModule[m]
			continue
		}
		fmt.Printf("| %s | %.2f | %.1f%% |\n", m, float64(byModule[m])/(1<<20), 100*float64(byModule[m])/float64(total))
	}
	fmt.Printf("| %d other modules | %.2f | %.1f%% |\n", len(names)-min(len(names), 25), float64(other)/(1<<20), 100*float64(other)/float64(total))
	return nil
}

// packageOf is the import path of the package a Go symbol belongs to:
// "k8s.io/api/core/v1.(*Pod).Marshal" → "k8s.io/api/core/v1",
// "type:*k8s.io/api/core/v1.Pod" → "k8s.io/api/core/v1". The linker's own
// tables ("go:..." strings, func data, itabs) belong to no package.
func packageOf(sym string) string {
	if strings.HasPrefix(sym, "go:") {
		return ""
	}
	if rest, ok := strings.CutPrefix(sym, "type:"); ok {
		sym = strings.TrimPrefix(strings.TrimLeft(rest, "*[]"), ".eq.")
	}
	if i := strings.IndexAny(sym, "(["); i >= 0 {
		sym = sym[:i]
	}
	slash := strings.LastIndex(sym, "/")
	dot := strings.Index(sym[slash+1:], ".")
	if dot < 0 {
		return ""
	}
	return sym[:slash+1+dot]
}

// moduleOf is the module providing pkg: the standard library for a path
// whose first element has no dot, else the longest module path it is in.
func moduleOf(pkg string, modules []string) string {
	switch {
	case pkg == "":
		return "(linker tables: strings, func data, itabs)"
	case !strings.Contains(strings.SplitN(pkg, "/", 2)[0], "."):
		return "Go standard library and runtime"
	}
	for _, m := range modules {
		if pkg == m || strings.HasPrefix(pkg, m+"/") {
			return m
		}
	}
	return "(other: " + pkg + ")"
}
