package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The command reads the checksums file goreleaser writes and prints the
// filled manifest; run from the repository root as `make krew-manifest` does.
func TestFillsTheManifestFromAChecksumsFile(t *testing.T) {
	var sums strings.Builder
	for i, p := range []string{"linux_amd64.tar.gz", "linux_arm64.tar.gz", "darwin_amd64.tar.gz",
		"darwin_arm64.tar.gz", "windows_amd64.zip", "windows_arm64.zip"} {
		fmt.Fprintf(&sums, "%064x  meshtriage_v0.3.0_%s\n", i+1, p)
	}
	fmt.Fprintf(&sums, "%064x  meshtriage_v0.3.0_linux_amd64.tar.gz.sbom.json\n", 9)
	file := filepath.Join(t.TempDir(), "checksums.txt")
	if err := os.WriteFile(file, []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run([]string{"-template", "../meshtriage.krew.yaml", "-tag", "v0.3.0", "-checksums", file}, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := "uri: https://github.com/meshtriage/meshtriage/releases/download/v0.3.0/meshtriage_v0.3.0_darwin_arm64.tar.gz\n" +
		fmt.Sprintf("    sha256: %064x\n", 4)
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "version: v0.3.0\n") {
		t.Errorf("manifest lacks %q or the version:\n%s", want, out.String())
	}

	if err := run([]string{"-template", "../meshtriage.krew.yaml", "-tag", "0.3.0", "-checksums", file}, &out); err == nil {
		t.Error("a tag without its v was taken")
	}
}
