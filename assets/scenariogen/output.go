package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// The files are written as the components write them: manifests as
// `kubectl get -o yaml` prints objects (sigs.k8s.io/yaml, keys sorted),
// Envoy's admin output and istiod's syncz as indented JSON in the order the
// proto fields or istiod give (an Object keeps its keys in order), the
// injector's values as compact JSON.

// yamlDocuments prints each document as kubectl does and joins them with
// "---".
func yamlDocuments(docs ...Object) string {
	out := make([]string, len(docs))
	for i, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			panic(err)
		}
		out[i] = string(b)
	}
	return strings.Join(out, "---\n")
}

// MarshalJSON writes o's keys in order. A nil list is [], as Envoy and
// istiod print an empty repeated field.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := marshalJSON(f.Key)
		if err != nil {
			return nil, err
		}
		value, err := marshalJSON(f.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Key, err)
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalJSON is json.Marshal without HTML escaping (Envoy and istiod do
// not escape <, > and &) and with nil lists as [].
func marshalJSON(v any) ([]byte, error) {
	switch l := v.(type) {
	case []Object:
		if l == nil {
			v = []Object{}
		}
	case []string:
		if l == nil {
			v = []string{}
		}
	case []int:
		if l == nil {
			v = []int{}
		}
	}
	return encodeJSON(v, "")
}

func encodeJSON(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// indentedJSON is v indented by indent spaces, with a final newline.
func indentedJSON(v any, indent int) string {
	b, err := encodeJSON(v, strings.Repeat(" ", indent))
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

// compactJSON is v on one line, the form the sidecar injector puts into
// annotations and env values.
func compactJSON(v any) string {
	b, err := encodeJSON(v, "")
	if err != nil {
		panic(err)
	}
	return string(b)
}
