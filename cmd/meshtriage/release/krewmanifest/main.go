// Command krewmanifest fills the krew plugin manifest template of a release
// from the checksums goreleaser wrote, for the pull request to krew-index:
//
//	go run ./cmd/meshtriage/release/krewmanifest -tag v1.2.3 \
//	    -checksums bin/dist/meshtriage_v1.2.3_checksums.txt > bin/dist/meshtriage.yaml
//
// (`make krew-manifest TAG=v1.2.3` runs it.)
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/meshtriage/meshtriage/cmd/meshtriage/release"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "krewmanifest:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("krewmanifest", flag.ContinueOnError)
	tmplPath := fs.String("template", "cmd/meshtriage/release/meshtriage.krew.yaml", "krew manifest template")
	tag := fs.String("tag", "", "the release's tag, vX.Y.Z")
	checksums := fs.String("checksums", "", "the release's checksums file, as goreleaser wrote it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !strings.HasPrefix(*tag, "v") || *checksums == "" {
		return fmt.Errorf("give -tag vX.Y.Z and -checksums FILE")
	}
	tmpl, err := os.ReadFile(*tmplPath)
	if err != nil {
		return err
	}
	f, err := os.Open(*checksums)
	if err != nil {
		return err
	}
	defer f.Close()
	sums, err := release.ParseChecksums(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *checksums, err)
	}
	manifest, err := release.FillKrewManifest(tmpl, *tag, sums)
	if err != nil {
		return err
	}
	_, err = stdout.Write(manifest)
	return err
}
