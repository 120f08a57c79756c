// Package release reads the release configuration: the GoReleaser
// configuration at the repository root (GoreleaserFile, where goreleaser
// looks for it) and the krew plugin manifest template kept beside this
// package (meshtriage.krew.yaml). It says which archive a release holds for
// each platform and fills the krew manifest from the release's checksums;
// its tests hold the two files to each other, to the code and to the
// license, because goreleaser itself does not run in this repository's
// tests.
package release

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// GoreleaserFile is the GoReleaser configuration's path from the repository
// root: goreleaser's default, so no command needs --config.
const GoreleaserFile = ".goreleaser.yaml"

// Goreleaser is the part of GoReleaser's v2 configuration meshtriage uses.
// LoadGoreleaser reads it strictly: a key this model does not know, such as
// a misspelled one goreleaser would reject or ignore, is an error.
type Goreleaser struct {
	Version     int       `json:"version"`
	ProjectName string    `json:"project_name"`
	Dist        string    `json:"dist"`
	Builds      []Build   `json:"builds"`
	Archives    []Archive `json:"archives"`
	Checksum    struct {
		NameTemplate string `json:"name_template"`
		Algorithm    string `json:"algorithm"`
	} `json:"checksum"`
	SBOMs []struct {
		ID        string `json:"id"`
		Artifacts string `json:"artifacts"`
	} `json:"sboms"`
	Snapshot struct {
		VersionTemplate string `json:"version_template"`
	} `json:"snapshot"`
	Changelog struct {
		Sort string `json:"sort"`
	} `json:"changelog"`
	Release struct {
		GitHub struct {
			Owner string `json:"owner"`
			Name  string `json:"name"`
		} `json:"github"`
		Prerelease string `json:"prerelease"`
	} `json:"release"`
}

// Build is one entry of goreleaser's builds.
type Build struct {
	ID           string   `json:"id"`
	Main         string   `json:"main"`
	Binary       string   `json:"binary"`
	Env          []string `json:"env"`
	GOOS         []string `json:"goos"`
	GOARCH       []string `json:"goarch"`
	Flags        []string `json:"flags"`
	LDFlags      []string `json:"ldflags"`
	ModTimestamp string   `json:"mod_timestamp"`
}

// Archive is one entry of goreleaser's archives.
type Archive struct {
	ID              string   `json:"id"`
	IDs             []string `json:"ids"`
	Formats         []string `json:"formats"`
	FormatOverrides []struct {
		GOOS    string   `json:"goos"`
		Formats []string `json:"formats"`
	} `json:"format_overrides"`
	NameTemplate    string   `json:"name_template"`
	WrapInDirectory bool     `json:"wrap_in_directory"`
	Files           []string `json:"files"`
}

// LoadGoreleaser reads a goreleaser configuration file.
func LoadGoreleaser(file string) (*Goreleaser, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var g Goreleaser
	if err := yaml.UnmarshalStrict(raw, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(g.Builds) != 1 || len(g.Archives) != 1 {
		return nil, fmt.Errorf("%s: want one build and one archive, have %d and %d", file, len(g.Builds), len(g.Archives))
	}
	return &g, nil
}

// Artifact is what a release holds for one platform.
type Artifact struct {
	OS, Arch string
	// Archive is the archive's file name, as uploaded to the release.
	Archive string
	// Binary is the executable's path inside the archive.
	Binary string
}

// templateFields are the goreleaser template fields an archive name may
// use: for tag v1.2.3, .Version is 1.2.3 and .Tag v1.2.3, as goreleaser
// sets them.
func templateFields(projectName, tag string) map[string]string {
	return map[string]string{
		"ProjectName": projectName,
		"Tag":         tag,
		"Version":     strings.TrimPrefix(tag, "v"),
	}
}

// render executes one of goreleaser's templates over fields; a field it does
// not know is an error rather than an empty string.
func render(name, text string, fields map[string]string) (string, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, fields); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Artifacts lists the archive goreleaser makes for each platform of a
// release tagged tag, in goreleaser's goos × goarch order.
func (g *Goreleaser) Artifacts(tag string) ([]Artifact, error) {
	b, a := g.Builds[0], g.Archives[0]
	var out []Artifact
	for _, goos := range b.GOOS {
		for _, goarch := range b.GOARCH {
			fields := templateFields(g.ProjectName, tag)
			fields["Os"], fields["Arch"], fields["Binary"] = goos, goarch, b.Binary
			name, err := render("archives.name_template", a.NameTemplate, fields)
			if err != nil {
				return nil, err
			}
			formats := a.Formats
			for _, o := range a.FormatOverrides {
				if o.GOOS == goos {
					formats = o.Formats
				}
			}
			if len(formats) != 1 {
				return nil, fmt.Errorf("%s/%s: want one archive format, have %v", goos, goarch, formats)
			}
			bin := b.Binary
			if goos == "windows" {
				bin += ".exe"
			}
			if a.WrapInDirectory {
				bin = name + "/" + bin
			}
			out = append(out, Artifact{OS: goos, Arch: goarch, Archive: name + "." + formats[0], Binary: bin})
		}
	}
	return out, nil
}

// LDFlags are the build's -ldflags for a release tagged tag.
func (g *Goreleaser) LDFlags(tag string) (string, error) {
	return render("builds.ldflags", strings.Join(g.Builds[0].LDFlags, " "), templateFields(g.ProjectName, tag))
}

// ChecksumsFile is the name of a release's checksums file.
func (g *Goreleaser) ChecksumsFile(tag string) (string, error) {
	return render("checksum.name_template", g.Checksum.NameTemplate, templateFields(g.ProjectName, tag))
}

// DownloadURL is where GitHub serves a release asset.
func (g *Goreleaser) DownloadURL(tag, asset string) string {
	return fmt.Sprintf("https://github.com/%s/%s/releases/download/%s/%s", g.Release.GitHub.Owner, g.Release.GitHub.Name, tag, asset)
}

// ParseChecksums reads a checksums file as goreleaser and sha256sum write
// it, "<hex digest>  <file name>" a line, into digests by file name.
func ParseChecksums(r io.Reader) (map[string]string, error) {
	sums := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !sha256Hex.MatchString(fields[0]) {
			return nil, fmt.Errorf("checksums line %d: want \"<sha256>  <file>\", have %q", n, line)
		}
		sums[strings.TrimPrefix(fields[1], "*")] = fields[0]
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(sums) == 0 {
		return nil, errors.New("checksums file is empty")
	}
	return sums, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FillKrewManifest executes the krew manifest template for a release tagged
// tag. The template speaks krew-release-bot's language, so either can fill
// it: .TagName is the tag, and addURIAndSha URL TAG renders URL (itself a
// template over .TagName and .Version) into the platform's uri and sha256
// lines, the digest read from sums by the URL's file name. An archive sums
// does not list is an error: a manifest must never point at a file the
// release does not have.
func FillKrewManifest(tmpl []byte, tag string, sums map[string]string) ([]byte, error) {
	funcs := template.FuncMap{
		"addURIAndSha": func(url, tag string) (string, error) {
			fields := map[string]string{"TagName": tag, "Version": strings.TrimPrefix(tag, "v")}
			uri, err := render("uri", url, fields)
			if err != nil {
				return "", err
			}
			sum, ok := sums[path.Base(uri)]
			if !ok {
				return "", fmt.Errorf("no checksum for %s: the release has no such archive", path.Base(uri))
			}
			// The indentation of the platform's keys, as krew-release-bot
			// writes them.
			return fmt.Sprintf("uri: %s\n    sha256: %s", uri, sum), nil
		},
	}
	t, err := template.New("krew").Funcs(funcs).Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := t.Execute(&out, map[string]string{"TagName": tag}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
