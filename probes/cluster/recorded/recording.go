package recorded

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
)

// MaxArchiveBytes bounds what an archive may unpack to in memory: a
// recording of one triage is megabytes; a file claiming gigabytes is not
// one, and is refused with an error rather than exhausting memory.
const MaxArchiveBytes = 2 << 30

// HeaderFile is a recording's (optional) description.
const HeaderFile = "scenario.yaml"

// Recording is a recording as read: the scenario it serves and the
// documents of its manifests that were skipped.
type Recording struct {
	*Scenario
	Skipped []manifests.Skipped
	// HasTarget says scenario.yaml named a target.
	HasTarget bool
}

// OpenRecording reads the recording at p: a folder in the scenarios'
// layout, or a .tar.gz of one (its files at the top or under one folder,
// as `meshtriage capture` writes them). namespace is given to objects that
// name none.
func OpenRecording(p, namespace string) (*Recording, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	if st.IsDir() {
		return LoadRecording(os.DirFS(p), "recording "+p, namespace)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	defer f.Close()
	files, _, err := ReadArchive(f, nil)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", p, err)
	}
	root, err := recordingRoot(files)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", p, err)
	}
	return LoadRecording(root, "recording "+p, namespace)
}

// recordingRoot is the folder of an archive that holds the recording: its
// top, or the one folder at its top.
func recordingRoot(files Files) (fs.FS, error) {
	if looksLikeRecording(files) {
		return files, nil
	}
	entries, err := files.ReadDir(".")
	if err != nil {
		return nil, err
	}
	if len(entries) == 1 && entries[0].IsDir() {
		sub, err := fs.Sub(files, entries[0].Name())
		if err != nil {
			return nil, err
		}
		if looksLikeRecording(sub) {
			return sub, nil
		}
	}
	return nil, errors.New("not a recording: no scenario.yaml, manifests/, envoy/, logs/ or istiod/ at its top or in its one folder")
}

func looksLikeRecording(fsys fs.FS) bool {
	for _, name := range []string{HeaderFile, "manifests", "envoy", "logs", "istiod"} {
		if _, err := fs.Stat(fsys, name); err == nil {
			return true
		}
	}
	return false
}

// LoadRecording reads a recording from fsys. Unlike a scenario, its
// scenario.yaml is optional (a recording assembled by hand from kubectl and
// pilot-agent output needs none: the target is then the caller's), its
// manifests may be YAML or JSON, in subfolders too, and are read as Load
// reads a user's files: documents it cannot read are skipped and listed.
func LoadRecording(fsys fs.FS, source, namespace string) (*Recording, error) {
	return loadRecording(fsys, source, namespace, true)
}

// loadRecording is LoadRecording; a remote cluster's recording may hold
// no object (every read of it refused, or none made), so needObjects is
// false for one.
func loadRecording(fsys fs.FS, source, namespace string, needObjects bool) (*Recording, error) {
	var h header
	raw, err := fs.ReadFile(fsys, HeaderFile)
	switch {
	case err == nil:
		if err := yaml.UnmarshalStrict(raw, &h); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", source, HeaderFile, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	s, err := fromHeader(h, source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if s.Name == "" {
		s.Name = path.Base(strings.TrimPrefix(source, "recording "))
	}
	if s.Title == "" {
		s.Title = source
	}
	// A recording is of a real cluster: a counter sample that was not
	// taken is not taken for an unchanged one.
	s.StrictSamples = true
	reader := manifests.NewReader(namespace)
	err = fs.WalkDir(fsys, "manifests", func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == "manifests" {
			return fs.SkipDir
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(path.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		reader.Add(p, data)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	set := reader.Set()
	s.Objects, s.ImpliedNamespaces = set.Objects, set.ImpliedNamespaces
	if err := loadRecorded(fsys, s); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if s.Remotes, err = loadRemotes(fsys, h.Clusters, source, namespace); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(s.Objects) == 0 && needObjects {
		what := "no Kubernetes or Istio object under manifests/"
		if n := len(set.Skipped); n > 0 {
			what += fmt.Sprintf(" (%d document(s) skipped)", n)
		}
		return nil, fmt.Errorf("%s: %s", source, what)
	}
	return &Recording{Scenario: s, Skipped: set.Skipped, HasTarget: h.Target.Service != ""}, nil
}

// ReadArchive unpacks a .tar.gz into memory: regular files only, each path
// cleaned and kept inside the archive; keep, when not nil, chooses the
// files worth holding (an istioctl bug report carries much a triage does
// not read). It returns each file's modification time too.
func ReadArchive(r io.Reader, keep func(name string) bool) (Files, map[string]time.Time, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, nil, fmt.Errorf("not a .tar.gz: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	files := Files{}
	times := map[string]time.Time{}
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(strings.TrimPrefix(strings.ReplaceAll(hdr.Name, `\`, "/"), "/"))
		if !fs.ValidPath(name) || name == "." {
			return nil, nil, fmt.Errorf("archive entry %q leaves the archive", hdr.Name)
		}
		if keep != nil && !keep(name) {
			continue
		}
		total += hdr.Size
		if hdr.Size < 0 || total > MaxArchiveBytes {
			return nil, nil, fmt.Errorf("archive unpacks to more than %d MiB; this is not a recording of one triage", MaxArchiveBytes>>20)
		}
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", name, err)
		}
		if _, dup := files[name]; dup {
			return nil, nil, fmt.Errorf("archive holds %s twice", name)
		}
		files[name] = data
		times[name] = hdr.ModTime
	}
	return files, times, nil
}

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
