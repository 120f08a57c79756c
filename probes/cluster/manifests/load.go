package manifests

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Stdin is the path that names standard input, as for `kubectl apply -f -`.
const Stdin = "-"

// Options say how Load reads a user's files.
type Options struct {
	// Namespace is given to objects of namespaced kinds that name none, as
	// `kubectl apply -n NS -f` does with a repository of manifests.
	Namespace string
	// Stdin is read for the path "-".
	Stdin io.Reader
}

// Set is what was read.
type Set struct {
	Objects []runtime.Object
	// Skipped are the documents not read, in the order met.
	Skipped []Skipped
	// Files counts the files read (stdin counts as one).
	Files int
	// ImpliedNamespaces are namespaces that objects are in but that no
	// Namespace object was read for: they exist, but their labels (so
	// their injection setting) are unknown.
	ImpliedNamespaces []string
}

// Load reads objects as `kubectl apply -f` takes them: each path is a file
// (whatever its extension), a directory (every .yaml, .yml and .json file
// under it, recursively, hidden folders left out) or "-" for stdin. Files
// hold multi-document YAML, JSON, and `kind: List`. A document of unknown
// kind, or one that does not parse, is skipped and listed in Set.Skipped;
// only an unreadable path, or nothing to read at all, is an error.
func Load(paths []string, opts Options) (*Set, error) {
	if len(paths) == 0 {
		return nil, errors.New("manifests: no file, directory or - given")
	}
	r := NewReader(opts.Namespace)
	for _, p := range paths {
		if p == Stdin {
			if opts.Stdin == nil {
				return nil, errors.New("manifests: - names stdin, but there is no stdin to read")
			}
			data, err := io.ReadAll(opts.Stdin)
			if err != nil {
				return nil, fmt.Errorf("manifests: read stdin: %w", err)
			}
			r.Add("stdin", data)
			continue
		}
		files, err := Files(p)
		if err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("manifests: %w", err)
			}
			r.Add(f, data)
		}
	}
	set := r.Set()
	if len(set.Objects) == 0 {
		what := fmt.Sprintf("no Kubernetes or Istio object in %s", strings.Join(paths, ", "))
		if n := len(set.Skipped); n > 0 {
			what += fmt.Sprintf(" (%d document(s) skipped)", n)
		}
		return set, errors.New("manifests: " + what)
	}
	return set, nil
}

// Files is path itself, or the manifest files under it (.yaml, .yml,
// .json; hidden folders left out), sorted.
func Files(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .yaml, .yml or .json files in %s", path)
	}
	sort.Strings(files)
	return files, nil
}

// Reader gathers the objects of many files as Load does: documents decoded
// leniently, the namespace given to namespaced objects that name none, and
// the second copy of an object (same kind, namespace and name) skipped, so
// that overlapping dumps do not refuse the whole input.
type Reader struct {
	namespace string
	set       Set
	seen      map[objectKey]string
}

type objectKey struct {
	kind            schema.GroupKind
	namespace, name string
}

// NewReader reads into a new Set; namespace is given to namespaced objects
// that name none ("" leaves them without).
func NewReader(namespace string) *Reader {
	return &Reader{namespace: namespace, seen: map[objectKey]string{}}
}

// Add reads the documents of one file; name says where they came from in
// Skipped entries.
func (r *Reader) Add(name string, data []byte) {
	r.set.Files++
	d := &decoder{lenient: true}
	if err := d.file(name, data); err != nil {
		d.skipped = append(d.skipped, Skipped{Where: name, Reason: err.Error()})
	}
	r.set.Skipped = append(r.set.Skipped, d.skipped...)
	for i, obj := range d.objects {
		r.addObject(d.where[i], obj)
	}
}

func (r *Reader) addObject(where string, obj runtime.Object) {
	m, err := meta.Accessor(obj)
	gvks, _, kindErr := Scheme.ObjectKinds(obj)
	if err != nil || kindErr != nil || len(gvks) == 0 {
		r.set.Skipped = append(r.set.Skipped, Skipped{Where: where, Reason: "not an object with metadata"})
		return
	}
	gk := gvks[0].GroupKind()
	kind := gvks[0].GroupVersion().String() + " " + gk.Kind
	if !Read(gvks[0]) {
		r.set.Skipped = append(r.set.Skipped, Skipped{Where: where, Kind: kind, Reason: ReasonNotRead})
		return
	}
	if m.GetName() == "" {
		r.set.Skipped = append(r.set.Skipped, Skipped{Where: where, Kind: kind, Reason: "no metadata.name"})
		return
	}
	if clusterScoped[gk] {
		m.SetNamespace("")
	} else if m.GetNamespace() == "" {
		m.SetNamespace(r.namespace)
	}
	key := objectKey{gk, m.GetNamespace(), m.GetName()}
	if first, dup := r.seen[key]; dup {
		r.set.Skipped = append(r.set.Skipped, Skipped{Where: where, Kind: kind,
			Reason: fmt.Sprintf("%s %s is already read from %s", gk.Kind, objectName(m.GetNamespace(), m.GetName()), first)})
		return
	}
	r.seen[key] = where
	r.set.Objects = append(r.set.Objects, obj)
}

// Set is everything read so far. Documents skipped for their kind are
// named once a kind (where the first few are), so that a dump with forty
// HTTPRoutes says so in one line.
func (r *Reader) Set() *Set {
	set := r.set
	set.Objects = append([]runtime.Object(nil), r.set.Objects...)
	set.Skipped = byKind(r.set.Skipped)
	set.ImpliedNamespaces = ImpliedNamespaces(set.Objects)
	return &set
}

// byKind folds the entries skipped for their kind (unknown, or not read)
// into one entry a kind, at the place of its first document; other entries
// stay as they are.
func byKind(skipped []Skipped) []Skipped {
	const named = 3 // documents named in a folded entry; the rest counted
	var out []Skipped
	first := map[string]int{}   // kind+reason → index in out
	where := map[int][]string{} // index in out → the documents folded in
	for _, s := range skipped {
		if s.Kind == "" || s.Reason != ReasonUnknownKind && s.Reason != ReasonNotRead {
			out = append(out, s)
			continue
		}
		key := s.Kind + "\x00" + s.Reason
		i, seen := first[key]
		if !seen {
			i = len(out)
			first[key] = i
			out = append(out, s)
		}
		where[i] = append(where[i], s.Where)
	}
	for i, docs := range where {
		if len(docs) == 1 {
			continue
		}
		shown := docs
		if len(shown) > named {
			shown = shown[:named]
		}
		w := fmt.Sprintf("%d documents: %s", len(docs), strings.Join(shown, ", "))
		if len(docs) > named {
			w += fmt.Sprintf(" and %d more", len(docs)-named)
		}
		out[i].Where, out[i].Documents = w, len(docs)
	}
	return out
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// ImpliedNamespaces are the namespaces objects are in without a Namespace
// object among them.
func ImpliedNamespaces(objs []runtime.Object) []string {
	have := map[string]bool{}
	used := map[string]bool{}
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		if _, isNS := obj.(*corev1.Namespace); isNS {
			have[m.GetName()] = true
		} else if ns := m.GetNamespace(); ns != "" {
			used[ns] = true
		}
	}
	var implied []string
	for ns := range used {
		if !have[ns] {
			implied = append(implied, ns)
		}
	}
	sort.Strings(implied)
	return implied
}

// clusterScoped are the kinds of the schemes Load reads that live outside
// any namespace; every other kind it knows is namespaced (all of Istio's
// are). Without a discovery client to ask, the list is the API's own.
var clusterScoped = func() map[schema.GroupKind]bool {
	byGroup := map[string][]string{
		"":                             {"Namespace", "Node", "PersistentVolume", "ComponentStatus"},
		"rbac.authorization.k8s.io":    {"ClusterRole", "ClusterRoleBinding"},
		"storage.k8s.io":               {"StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass"},
		"scheduling.k8s.io":            {"PriorityClass"},
		"node.k8s.io":                  {"RuntimeClass"},
		"admissionregistration.k8s.io": {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"},
		"certificates.k8s.io":          {"CertificateSigningRequest", "ClusterTrustBundle"},
		"networking.k8s.io":            {"IngressClass", "IPAddress", "ServiceCIDR"},
		"flowcontrol.apiserver.k8s.io": {"FlowSchema", "PriorityLevelConfiguration"},
		"resource.k8s.io":              {"DeviceClass", "ResourceSlice"},
		"authentication.k8s.io":        {"TokenReview", "SelfSubjectReview"},
		"authorization.k8s.io":         {"SubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview"},
		"storagemigration.k8s.io":      {"StorageVersionMigration"},
		"internal.apiserver.k8s.io":    {"StorageVersion"},
		"apiextensions.k8s.io":         {"CustomResourceDefinition"},
		"apiregistration.k8s.io":       {"APIService"},
		"gateway.networking.k8s.io":    {"GatewayClass"},
	}
	out := map[schema.GroupKind]bool{}
	for group, kinds := range byGroup {
		for _, k := range kinds {
			out[schema.GroupKind{Group: group, Kind: k}] = true
		}
	}
	return out
}()
