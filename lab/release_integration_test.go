//go:build integration

package lab

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/cmd/meshtriage/release"
)

// TestKrewInstallsTheReleaseManifest gives the krew manifest a release would
// publish to krew itself: for every platform, an archive named and laid out
// as .goreleaser.yaml makes it, the manifest filled from their checksums, and
// `krew install --manifest --archive` as krew's own developer guide tests a
// plugin. krew parses and validates the manifest, picks the platform
// (KREW_OS, KREW_ARCH), checks the sha256, moves the binary and links
// kubectl-meshtriage. This platform's archive holds the real binary, which
// must then run as `kubectl meshtriage`.
func TestKrewInstallsTheReleaseManifest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	krew, err := KrewBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	releaseDir := filepath.Join(root, "cmd", "meshtriage", "release")
	g, err := release.LoadGoreleaser(filepath.Join(root, release.GoreleaserFile))
	if err != nil {
		t.Fatal(err)
	}
	const tag = "v0.9.1"
	arts, err := g.Artifacts(tag)
	if err != nil {
		t.Fatal(err)
	}
	real, err := os.ReadFile(meshtriageBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	// The files the configuration puts beside the binary (README, LICENSE).
	extra := map[string][]byte{}
	for _, f := range g.Archives[0].Files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		extra[f] = data
	}

	dist := t.TempDir()
	sums := map[string]string{}
	host := ""
	for _, a := range arts {
		bin := []byte("#!/bin/sh\necho stand-in for " + a.OS + "/" + a.Arch + "\n")
		if a.OS == runtime.GOOS && a.Arch == runtime.GOARCH {
			bin, host = real, a.Archive
		}
		files := map[string][]byte{a.Binary: bin}
		for name, data := range extra {
			files[name] = data
		}
		data := archive(t, a.Archive, files)
		if err := os.WriteFile(filepath.Join(dist, a.Archive), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sums[a.Archive] = fmt.Sprintf("%x", sha256.Sum256(data))
	}
	if host == "" {
		t.Fatalf("the release has no archive for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	tmpl, err := os.ReadFile(filepath.Join(releaseDir, "meshtriage.krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := release.FillKrewManifest(tmpl, tag, sums)
	if err != nil {
		t.Fatal(err)
	}
	// krew wants the manifest named after the plugin.
	manifestPath := filepath.Join(dist, "meshtriage.yaml")
	if err := os.WriteFile(manifestPath, manifest, 0o644); err != nil {
		t.Fatal(err)
	}

	install := func(osName, arch, archive string) (string, string, error) {
		krewRoot := t.TempDir()
		cmd := exec.CommandContext(ctx, krew, "install", "--manifest="+manifestPath, "--archive="+filepath.Join(dist, archive))
		cmd.Env = append(os.Environ(), "KREW_ROOT="+krewRoot, "HOME="+t.TempDir(),
			"KREW_OS="+osName, "KREW_ARCH="+arch, "KREW_NO_UPGRADE_CHECK=1")
		out, err := cmd.CombinedOutput()
		return krewRoot, string(out), err
	}
	for _, a := range arts {
		krewRoot, out, err := install(a.OS, a.Arch, a.Archive)
		if err != nil {
			t.Errorf("krew install on %s/%s: %v\n%s", a.OS, a.Arch, err, out)
			continue
		}
		link := filepath.Join(krewRoot, "bin", "kubectl-meshtriage")
		if a.OS == "windows" {
			link += ".exe"
		}
		target, err := filepath.EvalSymlinks(link)
		if err != nil {
			t.Errorf("%s/%s: krew linked no %s: %v", a.OS, a.Arch, filepath.Base(link), err)
			continue
		}
		if got := filepath.Base(target); got != filepath.Base(link) {
			t.Errorf("%s/%s: %s points at %s, not at the moved binary", a.OS, a.Arch, link, got)
		}
		// krew-index takes no plugin that does not install its license.
		if _, err := os.Stat(filepath.Join(filepath.Dir(target), "LICENSE")); err != nil {
			t.Errorf("%s/%s: krew installed no LICENSE beside the binary: %v", a.OS, a.Arch, err)
		}
		if a.Archive != host {
			continue
		}
		// The real binary, run as kubectl runs a plugin.
		version, err := exec.CommandContext(ctx, link, "--version").Output()
		if err != nil || !strings.HasPrefix(string(version), "meshtriage ") {
			t.Errorf("kubectl-meshtriage --version: %q, %v", version, err)
		}
		help, err := exec.CommandContext(ctx, link, "--help").Output()
		if err != nil || !strings.Contains(string(help), "kubectl meshtriage check") {
			t.Errorf("kubectl-meshtriage --help does not speak as kubectl meshtriage (%v):\n%s", err, help)
		}
	}

	// The checksums bind each platform to its archive: another platform's
	// archive is refused.
	other := arts[0].Archive
	if other == host {
		other = arts[1].Archive
	}
	if _, out, err := install(runtime.GOOS, runtime.GOARCH, other); err == nil || !strings.Contains(strings.ToLower(out), "checksum") {
		t.Errorf("krew installed %s as the %s/%s archive (%v):\n%s", other, runtime.GOOS, runtime.GOARCH, err, out)
	}
}

// archive packs files as goreleaser would for the archive's extension: at
// the root, executable.
func archive(t *testing.T, name string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch {
	case strings.HasSuffix(name, ".zip"):
		zw := zip.NewWriter(&buf)
		for n, data := range files {
			h := &zip.FileHeader{Name: n, Method: zip.Deflate}
			h.SetMode(0o755)
			w, err := zw.CreateHeader(h)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(data)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	case strings.HasSuffix(name, ".tar.gz"):
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for n, data := range files {
			if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			tw.Write(data)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("archive %s: no format for its extension", name)
	}
	return buf.Bytes()
}
