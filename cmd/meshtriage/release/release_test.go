package release

import (
	"crypto/sha256"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The repository root, from this package's folder.
const root = "../../.."

const tag = "v1.2.3"

func loadConfig(t *testing.T) *Goreleaser {
	t.Helper()
	g, err := LoadGoreleaser(filepath.Join(root, GoreleaserFile))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The platforms a release ships: every kubectl user's machine.
var platforms = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

func TestGoreleaserBuildsEveryPlatformStaticTrimmedAndStripped(t *testing.T) {
	g := loadConfig(t)
	if g.Version != 2 || g.ProjectName != "meshtriage" {
		t.Errorf("version %d, project %q: want a v2 configuration of project meshtriage", g.Version, g.ProjectName)
	}
	b := g.Builds[0]
	if b.Main != "./cmd/meshtriage" || b.Binary != "meshtriage" {
		t.Errorf("builds %q into %q, want ./cmd/meshtriage into meshtriage", b.Main, b.Binary)
	}
	if _, err := os.Stat(filepath.Join(root, b.Main, "main.go")); err != nil {
		t.Errorf("main package %s: %v", b.Main, err)
	}
	var got []string
	for _, goos := range b.GOOS {
		for _, goarch := range b.GOARCH {
			got = append(got, goos+"/"+goarch)
		}
	}
	if !slices.Equal(got, platforms) {
		t.Errorf("platforms %v, want %v", got, platforms)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("env %v: without CGO_ENABLED=0 the linux binaries need the build machine's libc", b.Env)
	}
	if !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("flags %v lack -trimpath", b.Flags)
	}
	ld, err := g.LDFlags(tag)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(ld)
	for _, f := range []string{"-s", "-w"} {
		if !slices.Contains(fields, f) {
			t.Errorf("ldflags %q lack %s", ld, f)
		}
	}
	if i := slices.Index(fields, "-X"); i < 0 || i+1 >= len(fields) || fields[i+1] != "main.version="+tag {
		t.Errorf("ldflags %q do not set main.version to the tag %s", ld, tag)
	}
}

// -X main.version only takes effect on a package-level string variable
// that no initializer computes; anything else is silently ignored and the
// release would report the build information's version instead.
func TestVersionVariableTakesTheLDFlag(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), filepath.Join(root, "cmd", "meshtriage"), func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range pkgs["main"].Files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name != "version" {
						continue
					}
					found = true
					typ, _ := vs.Type.(*ast.Ident)
					if typ == nil || typ.Name != "string" {
						t.Errorf("main.version is not declared a string")
					}
					if i < len(vs.Values) {
						if _, lit := vs.Values[i].(*ast.BasicLit); !lit {
							t.Errorf("main.version is initialized by an expression; -X would not take effect")
						}
					}
				}
			}
		}
	}
	if !found {
		t.Fatal("package main of cmd/meshtriage declares no variable version for -X main.version")
	}
}

func TestArchivesChecksumsAndSBOM(t *testing.T) {
	g := loadConfig(t)
	a := g.Archives[0]
	if len(a.IDs) > 0 && !slices.Contains(a.IDs, g.Builds[0].ID) {
		t.Errorf("archive takes builds %v, not %q", a.IDs, g.Builds[0].ID)
	}
	for _, f := range a.Files {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("archive file %s: %v", f, err)
		}
	}
	arts, err := g.Artifacts(tag)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, art := range arts {
		names = append(names, art.Archive+" ("+art.Binary+")")
	}
	want := []string{
		"meshtriage_v1.2.3_linux_amd64.tar.gz (meshtriage)",
		"meshtriage_v1.2.3_linux_arm64.tar.gz (meshtriage)",
		"meshtriage_v1.2.3_darwin_amd64.tar.gz (meshtriage)",
		"meshtriage_v1.2.3_darwin_arm64.tar.gz (meshtriage)",
		"meshtriage_v1.2.3_windows_amd64.zip (meshtriage.exe)",
		"meshtriage_v1.2.3_windows_arm64.zip (meshtriage.exe)",
	}
	if !slices.Equal(names, want) {
		t.Errorf("archives:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	// goreleaser writes the release under dist; the repository ignores bin/.
	if !strings.HasPrefix(g.Dist, "bin/") {
		t.Errorf("dist %q: goreleaser's output belongs under the ignored bin/", g.Dist)
	}
	if alg := g.Checksum.Algorithm; alg != "" && alg != "sha256" {
		t.Errorf("checksum algorithm %s: krew verifies sha256", alg)
	}
	if name, err := g.ChecksumsFile(tag); err != nil || name != "meshtriage_v1.2.3_checksums.txt" {
		t.Errorf("checksums file %q (%v)", name, err)
	}
	sbom := false
	for _, s := range g.SBOMs {
		sbom = sbom || s.Artifacts == "" || s.Artifacts == "archive"
	}
	if !sbom {
		t.Errorf("sboms %+v: no SBOM of the archives", g.SBOMs)
	}
}

// krewPlugin is the part of krew's plugin manifest (krew.googlecontainertools.github.com/v1alpha2)
// that decides what `kubectl krew install meshtriage` downloads and runs.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
			Bin string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// fakeChecksums gives each archive a distinct digest.
func fakeChecksums(arts []Artifact) map[string]string {
	sums := map[string]string{}
	for _, a := range arts {
		sums[a.Archive] = fmt.Sprintf("%x", sha256.Sum256([]byte(a.Archive)))
	}
	return sums
}

func TestKrewManifestPointsAtTheArchivesGoreleaserMakes(t *testing.T) {
	g := loadConfig(t)
	arts, err := g.Artifacts(tag)
	if err != nil {
		t.Fatal(err)
	}
	sums := fakeChecksums(arts)
	tmpl, err := os.ReadFile("meshtriage.krew.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := FillKrewManifest(tmpl, tag, sums)
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(out, &p); err != nil {
		t.Fatalf("filled manifest: %v\n%s", err, out)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		t.Errorf("apiVersion %q kind %q", p.APIVersion, p.Kind)
	}
	// kubectl runs plugin NAME as kubectl-NAME; krew-index files it as NAME.yaml.
	if p.Metadata.Name != "meshtriage" || p.Spec.Version != tag {
		t.Errorf("plugin %q version %q, want meshtriage %s", p.Metadata.Name, p.Spec.Version, tag)
	}
	if p.Spec.ShortDescription == "" || strings.ContainsAny(p.Spec.ShortDescription, "\r\n") {
		t.Errorf("short description %q: krew wants one line", p.Spec.ShortDescription)
	}
	if len(p.Spec.Platforms) != len(arts) {
		t.Fatalf("%d platforms in the manifest, %d archives in the release", len(p.Spec.Platforms), len(arts))
	}
	byPlatform := map[string]Artifact{}
	for _, a := range arts {
		byPlatform[a.OS+"/"+a.Arch] = a
	}
	for _, pl := range p.Spec.Platforms {
		labels := pl.Selector.MatchLabels
		key := labels["os"] + "/" + labels["arch"]
		a, ok := byPlatform[key]
		if !ok || len(labels) != 2 {
			t.Errorf("selector %v matches no archive, or more than os and arch", labels)
			continue
		}
		delete(byPlatform, key) // a platform listed twice is caught by the count above
		if want := g.DownloadURL(tag, a.Archive); pl.URI != want {
			t.Errorf("%s: uri %s, want %s", key, pl.URI, want)
		}
		if pl.Sha256 != sums[a.Archive] {
			t.Errorf("%s: sha256 %s, want the archive's %s", key, pl.Sha256, sums[a.Archive])
		}
		bin := "kubectl-meshtriage"
		if a.OS == "windows" {
			bin += ".exe"
		}
		if pl.Bin != bin {
			t.Errorf("%s: bin %q, want %q", key, pl.Bin, bin)
		}
		// The binary moved to its plugin name, and the license beside it
		// (krew-index takes no plugin that does not install one).
		if len(pl.Files) != 2 || pl.Files[0].From != a.Binary || pl.Files[0].To != bin ||
			pl.Files[1].From != "LICENSE" || pl.Files[1].To != "." {
			t.Errorf("%s: files %+v, want the archive's %s moved to %s and LICENSE to .", key, pl.Files, a.Binary, bin)
		}
	}
	if len(byPlatform) > 0 {
		t.Errorf("archives with no platform in the manifest: %v", byPlatform)
	}
}

func TestKrewManifestRefusesAnArchiveTheReleaseLacks(t *testing.T) {
	g := loadConfig(t)
	arts, err := g.Artifacts(tag)
	if err != nil {
		t.Fatal(err)
	}
	sums := fakeChecksums(arts)
	delete(sums, "meshtriage_v1.2.3_darwin_arm64.tar.gz")
	tmpl, _ := os.ReadFile("meshtriage.krew.yaml")
	_, err = FillKrewManifest(tmpl, tag, sums)
	if err == nil || !strings.Contains(err.Error(), "no checksum for meshtriage_v1.2.3_darwin_arm64.tar.gz") {
		t.Errorf("error %v, want one naming the missing archive", err)
	}
}

func TestParseChecksums(t *testing.T) {
	a := strings.Repeat("a", 64)
	b := strings.Repeat("0123456789abcdef", 4)
	sums, err := ParseChecksums(strings.NewReader(a + "  meshtriage_v1.2.3_linux_amd64.tar.gz\n" + b + " *meshtriage_v1.2.3_windows_amd64.zip\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sums["meshtriage_v1.2.3_linux_amd64.tar.gz"] != a || sums["meshtriage_v1.2.3_windows_amd64.zip"] != b || len(sums) != 2 {
		t.Errorf("sums %v", sums)
	}
	for _, bad := range []string{"", "abc  file\n", a + "\n", strings.ToUpper(a) + "  file\n"} {
		if _, err := ParseChecksums(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseChecksums(%q) took it", bad)
		}
	}
}

func TestLoadGoreleaserRejectsAnUnknownKey(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, GoreleaserFile))
	if err != nil {
		t.Fatal(err)
	}
	misspelt := strings.Replace(string(raw), "    ldflags:", "    ldflag:", 1)
	if misspelt == string(raw) {
		t.Fatal(GoreleaserFile + " has no builds ldflags line to misspell")
	}
	file := filepath.Join(t.TempDir(), GoreleaserFile)
	if err := os.WriteFile(file, []byte(misspelt), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadGoreleaser(file); err == nil || !strings.Contains(err.Error(), "ldflag") {
		t.Errorf("error %v, want one naming the unknown key", err)
	}
}

// goreleaser finds its configuration by itself when it is one of these at
// the repository root (goreleaser's internal/static's default names).
var goreleaserDefaults = []string{".goreleaser.yml", ".goreleaser.yaml", "goreleaser.yml", "goreleaser.yaml"}

// The configuration is where goreleaser looks: `goreleaser release` at the
// root needs no --config, no second configuration lies elsewhere to drift,
// and the Makefile names none.
func TestGoreleaserConfigurationIsWhereGoreleaserLooks(t *testing.T) {
	if !slices.Contains(goreleaserDefaults, GoreleaserFile) || strings.Contains(GoreleaserFile, "/") {
		t.Errorf("%s is not a name goreleaser reads by default from the root (%v)", GoreleaserFile, goreleaserDefaults)
	}
	if _, err := os.Stat(filepath.Join(root, GoreleaserFile)); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		if !d.IsDir() && slices.Contains(goreleaserDefaults, d.Name()) && rel != GoreleaserFile {
			t.Errorf("%s: a second goreleaser configuration; the release reads %s", rel, GoreleaserFile)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(makefile), "\n") {
		if strings.Contains(line, "$(GORELEASER)") && strings.Contains(line, "--config") {
			t.Errorf("Makefile:%d: %q names a configuration; goreleaser finds %s itself", i+1, strings.TrimSpace(line), GoreleaserFile)
		}
	}
}

// The SHA-256 of the Apache License 2.0 as the Apache Software Foundation
// publishes it (https://www.apache.org/licenses/LICENSE-2.0.txt), appendix
// included, the text Kubernetes and Istio ship.
const apache2SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// One license, said the same everywhere: LICENSE is the full Apache-2.0
// text, the README says so, and a release installs it (the archives carry
// it, the krew manifest extracts it on every platform).
func TestLicenseIsApache2AndShipsWithTheRelease(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256(text)); sum != apache2SHA256 {
		t.Errorf("LICENSE (sha256 %s) is not the standard Apache License 2.0 text", sum)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## License\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok || !strings.Contains(section, "Apache-2.0") || !strings.Contains(section, "`LICENSE`") {
		t.Errorf("README.md has no License section naming Apache-2.0 and LICENSE: %q", section)
	}
	g := loadConfig(t)
	if !slices.Contains(g.Archives[0].Files, "LICENSE") {
		t.Errorf("archive files %v: the archives do not carry LICENSE", g.Archives[0].Files)
	}
	tmpl, err := os.ReadFile("meshtriage.krew.yaml")
	if err != nil {
		t.Fatal(err)
	}
	arts, err := g.Artifacts(tag)
	if err != nil {
		t.Fatal(err)
	}
	out, err := FillKrewManifest(tmpl, tag, fakeChecksums(arts))
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(out, &p); err != nil {
		t.Fatal(err)
	}
	for _, pl := range p.Spec.Platforms {
		installs := false
		for _, f := range pl.Files {
			installs = installs || f.From == "LICENSE"
		}
		if !installs {
			t.Errorf("%v: the krew plugin does not install LICENSE", pl.Selector.MatchLabels)
		}
	}
}
