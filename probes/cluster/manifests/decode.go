// Package manifests reads Kubernetes and Istio objects from YAML and JSON
// documents as users have them (`kubectl get -o yaml`, a repository of
// manifests): typed with client-go's and Istio's schemes, Istio's older API
// versions read as v1, the version the probes list.
package manifests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // the decoder Istio's types use
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/runtime/protoiface"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	networkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	securityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
	istioscheme "istio.io/client-go/pkg/clientset/versioned/scheme"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Scheme knows every Kubernetes kind client-go does plus every Istio kind.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := istioscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

var (
	lenientDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, Scheme, Scheme, kjson.SerializerOptions{Yaml: true})
	strictDecoder  = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, Scheme, Scheme, kjson.SerializerOptions{Yaml: true, Strict: true})
)

// UnknownKindError lists documents whose kind neither Kubernetes nor Istio
// defines, so a manifest set is never half-read without saying so.
type UnknownKindError struct {
	Documents []string // "file.yaml document 3: example.com/v1 Widget"
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("%d document(s) of unknown kind: %s", len(e.Documents), strings.Join(e.Documents, "; "))
}

// LoadDir reads every .yaml/.yml/.json file under dir (plain `kubectl get
// -o yaml` output, `kind: List` included). Istio v1alpha3/v1beta1 objects
// are read as v1 (same spec), the version the probes list.
func LoadDir(dir string) ([]runtime.Object, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
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
		return nil, fmt.Errorf("manifests: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("manifests: no .yaml, .yml or .json files in %s", dir)
	}
	sort.Strings(files)
	var objects []runtime.Object
	unknown := &UnknownKindError{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		rel, _ := filepath.Rel(dir, f)
		objs, err := Decode(rel, data, false)
		var uk *UnknownKindError
		if errors.As(err, &uk) {
			unknown.Documents = append(unknown.Documents, uk.Documents...)
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("manifests: %w", err)
		}
		objects = append(objects, objs...)
	}
	if len(unknown.Documents) > 0 {
		return nil, fmt.Errorf("manifests: %w", unknown)
	}
	if len(objects) == 0 {
		return nil, fmt.Errorf("manifests: no objects in %s", dir)
	}
	if missing := namespacesWithoutObject(objects); len(missing) > 0 {
		// Without it the target probe would report the namespace absent
		// and its injection setting unknown; guessing either is worse than
		// asking for one more file.
		var cmds []string
		for _, ns := range missing {
			cmds = append(cmds, "kubectl get namespace "+ns+" -o yaml")
		}
		return nil, fmt.Errorf("manifests: objects in namespace(s) %s but no Namespace object for them; add the output of: %s",
			strings.Join(missing, ", "), strings.Join(cmds, "; "))
	}
	return objects, nil
}

func namespacesWithoutObject(objs []runtime.Object) []string {
	have := map[string]bool{}
	used := map[string]bool{}
	for _, obj := range objs {
		m, ok := obj.(metav1.Object)
		if !ok {
			continue
		}
		if _, isNS := obj.(*corev1.Namespace); isNS {
			have[m.GetName()] = true
		} else if ns := m.GetNamespace(); ns != "" {
			used[ns] = true
		}
	}
	var missing []string
	for ns := range used {
		if !have[ns] {
			missing = append(missing, ns)
		}
	}
	sort.Strings(missing)
	return missing
}

// Decode decodes every document of one file; documents of unknown kind come
// back together as an *UnknownKindError after the rest decoded. strict
// refuses fields the schemes do not know (for data this project writes);
// real dumps from newer clusters need it off.
func Decode(file string, data []byte, strict bool) ([]runtime.Object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	unknown := &UnknownKindError{}
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s document %d: %w", file, doc, err)
		}
		if isBlank(raw) {
			doc--
			continue
		}
		where := fmt.Sprintf("%s document %d", file, doc)
		objs, err := decodeDocument(where, raw, strict, unknown)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	if len(unknown.Documents) > 0 {
		return out, unknown
	}
	return out, nil
}

func decodeDocument(where string, raw []byte, strict bool, unknown *UnknownKindError) ([]runtime.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return nil, fmt.Errorf("%s: no apiVersion/kind", where)
	}
	if tm.Kind == "List" {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := yaml.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		var out []runtime.Object
		for i, item := range list.Items {
			objs, err := decodeDocument(fmt.Sprintf("%s item %d", where, i+1), item, strict, unknown)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	dec := lenientDecoder
	if strict {
		dec = strictDecoder
	}
	obj, _, err := dec.Decode(raw, nil, nil)
	if runtime.IsNotRegisteredError(err) {
		unknown.Documents = append(unknown.Documents, fmt.Sprintf("%s: %s %s", where, tm.APIVersion, tm.Kind))
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s (%s %s): %w", where, tm.APIVersion, tm.Kind, err)
	}
	if strict {
		if err := checkIstioSpec(obj, raw); err != nil {
			return nil, fmt.Errorf("%s (%s %s): %w", where, tm.APIVersion, tm.Kind, err)
		}
	}
	return []runtime.Object{toServedVersion(obj)}, nil
}

func isBlank(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// checkIstioSpec re-reads an Istio spec with the JSON decoder the Istio
// types use (golang/protobuf jsonpb: it takes durations such as "3m", as
// kubectl apply and istiod do) but refusing unknown fields, which the types'
// own decoding drops: a misspelt "consecutive5xxError" in a recorded
// scenario would silently change what it demonstrates.
func checkIstioSpec(obj runtime.Object, raw []byte) error {
	var spec proto.Message
	switch o := obj.(type) {
	case *networkingv1.DestinationRule:
		spec = &o.Spec
	case *networkingv1.VirtualService:
		spec = &o.Spec
	case *networkingv1.ServiceEntry:
		spec = &o.Spec
	case *networkingv1.Sidecar:
		spec = &o.Spec
	case *securityv1.PeerAuthentication:
		spec = &o.Spec
	default:
		return nil
	}
	var doc struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return err
	}
	if len(doc.Spec) == 0 {
		return nil
	}
	fresh, ok := spec.ProtoReflect().New().Interface().(protoiface.MessageV1)
	if !ok {
		return fmt.Errorf("spec type %T is not a protobuf message", spec)
	}
	if err := (&jsonpb.Unmarshaler{}).Unmarshal(bytes.NewReader(doc.Spec), fresh); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	return nil
}

// toServedVersion converts older Istio API versions to the v1 the probes
// read; the specs are the same messages.
func toServedVersion(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *networkingv1beta1.DestinationRule:
		out := &networkingv1.DestinationRule{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("DestinationRule")
		return out
	case *networkingv1alpha3.DestinationRule:
		out := &networkingv1.DestinationRule{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("DestinationRule")
		return out
	case *networkingv1beta1.VirtualService:
		out := &networkingv1.VirtualService{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("VirtualService")
		return out
	case *networkingv1alpha3.VirtualService:
		out := &networkingv1.VirtualService{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("VirtualService")
		return out
	case *networkingv1beta1.ServiceEntry:
		out := &networkingv1.ServiceEntry{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("ServiceEntry")
		return out
	case *networkingv1alpha3.ServiceEntry:
		out := &networkingv1.ServiceEntry{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("ServiceEntry")
		return out
	case *networkingv1beta1.Sidecar:
		out := &networkingv1.Sidecar{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("Sidecar")
		return out
	case *networkingv1alpha3.Sidecar:
		out := &networkingv1.Sidecar{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = v1Type("Sidecar")
		return out
	case *securityv1beta1.PeerAuthentication:
		out := &securityv1.PeerAuthentication{ObjectMeta: o.ObjectMeta}
		o.Spec.DeepCopyInto(&out.Spec)
		out.TypeMeta = metav1.TypeMeta{APIVersion: securityv1.SchemeGroupVersion.String(), Kind: "PeerAuthentication"}
		return out
	}
	return obj
}

func v1Type(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: kind}
}
