package worldgen

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// YAML writes objects as a multi-document manifest, in order, without what
// Kubernetes' types marshal when empty (null creation times, the status of
// kinds whose status no one reads here): the form of a model case's file
// (probes/mesh/testdata/model).
func YAML(objects []runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("object %d (%T): %w", i, o, err)
		}
		if m["kind"] != "Pod" {
			delete(m, "status")
		}
		if md, ok := m["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
			delete(md, "creationTimestamp")
		}
		data, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("object %d (%T): %w", i, o, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// YAML is the world's manifest.
func (w *World) YAML() ([]byte, error) { return YAML(w.Objects) }
