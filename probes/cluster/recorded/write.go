package recorded

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
)

// envoyFileOf is the file an admin path is recorded in: the path's own,
// else the one of the same path before '?'.
func envoyFileOf(adminPath string) (string, bool) {
	if f, ok := envoyFiles[adminPath]; ok {
		return f, true
	}
	base := basePath(adminPath)
	for p, f := range envoyFiles {
		if basePath(p) == base {
			return f, true
		}
	}
	return "", false
}

// Files lays the scenario out as a recording (the layout in the package
// documentation), every file passed through redact: the objects one
// `kind: List` a namespace under manifests/, the Envoy admin responses,
// logs and istiod answers in their files, and scenario.yaml with the
// target, the causes the triage found, when it was captured and the reads
// that failed.
func (s *Scenario) Files(redact func(string) string) (Files, error) {
	if redact == nil {
		return nil, errors.New("a recording is written redacted: no redaction given")
	}
	out := Files{}
	putText := func(name string, data []byte) { out[name] = []byte(redact(string(data))) }
	putJSON := func(name string, data []byte) { out[name] = redactJSON(data, redact) }
	// putYAML writes v as YAML, redacted value by value (see redact.go).
	putYAML := func(name string, v any) error {
		j, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		y, err := redactYAML(j, redact)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out[name] = y
		return nil
	}

	h := header{
		Name: s.Name, Title: s.Title, Summary: s.Summary, Description: s.Description,
		Context: s.Context, ServerVersion: s.ServerVersion, ControlPlane: s.ControlPlaneNamespace,
		Expect: s.Expect,
	}
	if h.Expect == nil {
		h.Expect = []string{}
	}
	h.Target.Namespace, h.Target.Service, h.Target.Port = s.Target.Namespace, s.Target.Service, s.Target.Port
	if src := s.Target.Source; src != nil {
		h.Target.Source = &struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		}{src.Namespace, src.Name}
	}
	if !s.CapturedAt.IsZero() {
		h.CapturedAt = s.CapturedAt.UTC().Format(time.RFC3339Nano)
	}
	if s.SamplesApart > 0 {
		h.SamplesApart = s.SamplesApart.Round(time.Millisecond).String()
	}
	for _, k := range sortedKeys(s.Failures) {
		h.Failures = append(h.Failures, s.Failures[k])
	}
	var err error
	if h.Clusters, err = s.remotesFiles(out, redact); err != nil {
		return nil, err
	}
	if err := putYAML(HeaderFile, h); err != nil {
		return nil, err
	}

	byNamespace := map[string][]any{}
	for _, obj := range s.Objects {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", describe(obj), err)
		}
		byNamespace[m.GetNamespace()] = append(byNamespace[m.GetNamespace()], obj)
	}
	for _, ns := range sortedKeys(byNamespace) {
		name := ns
		if name == "" {
			name = "cluster-scoped"
		}
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": byNamespace[ns]}
		if err := putYAML(path.Join("manifests", name+".yaml"), list); err != nil {
			return nil, err
		}
	}

	for pod, byPath := range s.Envoy {
		for adminPath, body := range byPath {
			p, n := adminPath, 1
			if i := strings.Index(adminPath, readSuffix); i >= 0 {
				p = adminPath[:i]
				var err error
				if n, err = strconv.Atoi(adminPath[i+len(readSuffix):]); err != nil {
					return nil, fmt.Errorf("envoy %s: read %q", pod, adminPath)
				}
			}
			file, ok := envoyFileOf(p)
			if !ok {
				continue // Recorder.Unrecorded names it
			}
			if n >= 2 {
				ext := path.Ext(file)
				file = strings.TrimSuffix(file, ext) + "." + strconv.Itoa(n) + ext
			}
			if strings.HasSuffix(file, ".json") {
				putJSON(path.Join("envoy", pod.Namespace, pod.Name, file), body)
			} else {
				putText(path.Join("envoy", pod.Namespace, pod.Name, file), body)
			}
		}
	}
	for k, data := range s.Logs {
		file := k.Container + ".log"
		if k.Previous {
			file = k.Container + ".previous.log"
		}
		putText(path.Join("logs", k.Pod.Namespace, k.Pod.Name, file), data)
	}
	putIstiod := func(dir, p string, body []byte) {
		file, ok := istiodFile(p)
		switch {
		case !ok:
		case strings.HasSuffix(file, ".json"):
			putJSON(path.Join(dir, file), body)
		default:
			putText(path.Join(dir, file), body)
		}
	}
	for p, body := range s.Istiod {
		putIstiod("istiod", p, body)
	}
	for replica, byPath := range s.IstiodReplicas {
		for p, body := range byPath {
			putIstiod(path.Join("istiod", replica), p, body)
		}
	}
	return out, nil
}

// WriteArchive writes files as a .tar.gz under the folder top, so that
// unpacking it makes one folder, as istioctl bug-report's archives do.
func WriteArchive(w io.Writer, top string, files Files, modTime time.Time) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	names := sortedKeys(files)
	dirs := map[string]bool{}
	for _, name := range names {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	dirNames := sortedKeys(dirs)
	hdr := func(h *tar.Header) error {
		h.ModTime, h.Uname, h.Gname = modTime, "", ""
		return tw.WriteHeader(h)
	}
	if err := hdr(&tar.Header{Name: top + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		return err
	}
	for _, d := range dirNames {
		if err := hdr(&tar.Header{Name: path.Join(top, d) + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return err
		}
	}
	for _, name := range names {
		data := files[name]
		if err := hdr(&tar.Header{Name: path.Join(top, name), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// WriteDir writes files under dir, which must not exist yet or be empty:
// a recording is never mixed with another.
func WriteDir(dir string, files Files) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	for _, name := range sortedKeys(files) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o600); err != nil {
			return err
		}
	}
	return nil
}
