// Package patch is a change to one Kubernetes object as `kubectl patch`
// sends it (an RFC 7386 merge patch, an RFC 6902 JSON patch, a strategic
// merge patch) or a whole new object, with the kubectl command that applies
// it. Patches are made and applied with the libraries kubectl and the API
// server use (gopkg.in/evanphx/json-patch.v4,
// k8s.io/apimachinery/pkg/util/strategicpatch), never by assembling JSON
// text. Nothing here reads or writes a cluster.
package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// Types: how a patch is applied, as `kubectl patch --type` takes it, or a
// whole new object.
const (
	// Merge is an RFC 7386 JSON merge patch: maps merge, a null removes a
	// field, a list is replaced whole. Used where only maps change.
	Merge = "merge"
	// JSON is an RFC 6902 JSON patch: operations on paths, with "test"
	// operations on what it relies on, so that it fails on an object that
	// changed since the triage read it. Used where a list element changes.
	JSON = "json"
	// Strategic is Kubernetes' strategic merge patch, for built-in kinds
	// whose lists merge by key (a Deployment's containers by name).
	Strategic = "strategic"
	// Create is a whole new object (kubectl apply -f -).
	Create = "create"
)

// Patch is one change to one object.
type Patch struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is empty for a cluster-scoped object (a Namespace).
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Context is the kubeconfig context of the cluster the object is in
	// when it is not the current one (a --remote-contexts cluster): the
	// command carries --context, so it patches the object read there.
	Context string `json:"context,omitempty"`
	Type    string `json:"type"`
	// Patch is the merge patch, the JSON patch's operations, or the whole
	// object to create, as JSON.
	Patch json.RawMessage `json:"patch"`
}

// Object is "Kind namespace/name".
func (p Patch) Object() string {
	in := ""
	if p.Context != "" {
		in = " (context " + p.Context + ")"
	}
	if p.Namespace == "" {
		return p.Kind + " " + p.Name + in
	}
	return p.Kind + " " + p.Namespace + "/" + p.Name + in
}

// Group is the API group of the patch's kind ("" for the core group).
func (p Patch) Group() string {
	if group, _, ok := strings.Cut(p.APIVersion, "/"); ok {
		return group
	}
	return ""
}

// Resource is the kubectl resource name of the patch's kind: its lower
// case kind, qualified by its API group so that two kinds of one name
// (Istio's Gateway and the Gateway API's) cannot be confused.
func (p Patch) Resource() string {
	kind := strings.ToLower(p.Kind)
	if g := p.Group(); g != "" {
		return kind + "." + g
	}
	return kind
}

// Command is the kubectl command that applies the patch: `kubectl patch`
// with its type, or `kubectl apply -f -` with the object for a create.
func (p Patch) Command() string {
	ns := ""
	if p.Context != "" {
		ns = " --context " + p.Context
	}
	if p.Namespace != "" {
		ns += " -n " + p.Namespace
	}
	if p.Type == Create {
		doc, err := yaml.JSONToYAML(p.Patch)
		if err != nil {
			doc = p.Patch
		}
		return "kubectl apply" + ns + " -f - <<'EOF'\n" + strings.TrimRight(string(doc), "\n") + "\nEOF"
	}
	body := []byte(p.Patch)
	var compact bytes.Buffer
	if json.Compact(&compact, body) == nil {
		body = compact.Bytes()
	}
	return fmt.Sprintf("kubectl patch %s %s%s --type=%s -p '%s'", p.Resource(), p.Name, ns, p.Type,
		strings.ReplaceAll(string(body), "'", `'\''`))
}

// Apply applies p to doc, the object as JSON, and returns the patched
// object. dataStruct is the Go type of the object, for a strategic merge
// patch (nil otherwise). A create is not applied to an object: it is one.
func Apply(doc []byte, p Patch, dataStruct any) ([]byte, error) {
	switch p.Type {
	case Merge:
		return jsonpatch.MergePatch(doc, p.Patch)
	case JSON:
		ops, err := jsonpatch.DecodePatch(p.Patch)
		if err != nil {
			return nil, fmt.Errorf("decode the JSON patch of %s: %w", p.Object(), err)
		}
		return ops.Apply(doc)
	case Strategic:
		if dataStruct == nil {
			return nil, fmt.Errorf("a strategic merge patch of %s needs the object's Go type", p.Object())
		}
		return strategicpatch.StrategicMergePatch(doc, p.Patch, dataStruct)
	case Create:
		return nil, fmt.Errorf("%s is created, not patched", p.Object())
	}
	return nil, fmt.Errorf("patch of %s has unknown type %q", p.Object(), p.Type)
}

// Op is one RFC 6902 operation.
type Op struct {
	Op    string
	Path  string
	Value any
}

// MarshalJSON writes the operation with its value, except for a remove,
// which has none (a value of 0 or false is a value).
func (o Op) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// Test is an operation that fails the patch unless path holds value.
func Test(path string, value any) Op { return Op{Op: "test", Path: path, Value: value} }

// Replace sets path, which must exist, to value.
func Replace(path string, value any) Op { return Op{Op: "replace", Path: path, Value: value} }

// Add sets path to value, inserting into a list at an index or at "-".
func Add(path string, value any) Op { return Op{Op: "add", Path: path, Value: value} }

// Remove removes path.
func Remove(path string) Op { return Op{Op: "remove", Path: path} }

// Pointer is the JSON pointer of a path's parts, escaped ("~1" for "/").
func Pointer(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		s := fmt.Sprint(p)
		s = strings.ReplaceAll(s, "~", "~0")
		s = strings.ReplaceAll(s, "/", "~1")
		b.WriteString("/" + s)
	}
	return b.String()
}

// Object names the object a patch changes.
type Object struct {
	APIVersion, Kind, Namespace, Name string
}

// JSONPatch makes a JSON patch of ops for obj, checking that it applies to
// doc, the object as read: a patch that does not apply is an error here,
// not at 3 a.m.
func JSONPatch(obj Object, doc []byte, ops ...Op) (Patch, []byte, error) {
	body, err := json.Marshal(ops)
	if err != nil {
		return Patch{}, nil, err
	}
	p := Patch{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, Type: JSON, Patch: body}
	out, err := Apply(doc, p, nil)
	if err != nil {
		return Patch{}, nil, fmt.Errorf("the JSON patch of %s does not apply to it: %w", p.Object(), err)
	}
	return p, out, nil
}

// MergePatch makes the merge patch that turns original into modified (both
// the object as JSON), as kubectl computes one. It fails when that would
// replace a list: a list element changes with a JSON patch, which says
// which element it expects.
func MergePatch(obj Object, original, modified []byte) (Patch, error) {
	body, err := jsonpatch.CreateMergePatch(original, modified)
	if err != nil {
		return Patch{}, err
	}
	var tree any
	if err := json.Unmarshal(body, &tree); err != nil {
		return Patch{}, err
	}
	if hasList(tree) {
		return Patch{}, errors.New("the change replaces a list: use a JSON patch")
	}
	if string(body) == "{}" {
		return Patch{}, errors.New("the change changes nothing")
	}
	return Patch{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, Type: Merge, Patch: body}, nil
}

func hasList(v any) bool {
	switch x := v.(type) {
	case []any:
		return true
	case map[string]any:
		for _, e := range x {
			if hasList(e) {
				return true
			}
		}
	}
	return false
}

// CreateObject is the create of obj, a whole object with apiVersion and
// kind, as JSON.
func CreateObject(obj Object, body any) (Patch, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return Patch{}, err
	}
	return Patch{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, Type: Create, Patch: b}, nil
}
