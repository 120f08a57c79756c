package recorded

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"sigs.k8s.io/yaml"
)

// The capture's redaction is the incident log's (a func(string) string the
// caller passes: this package knows no rules), applied so that what it
// writes still parses. Text redaction of a YAML document would turn
// `value: secret` into `value: [REDACTED]`, which YAML reads as a list, and
// an Envoy DataSource's inline_bytes into something that is not base64: the
// recording would then not replay. So structured files are redacted value
// by value, each value seen with its key (and an environment variable's
// value with its name), and put back where it was.

// redactedMarker is what replaces a credential, as the incident log writes it.
const redactedMarker = "[REDACTED]"

// redactJSON redacts a JSON document structurally; a document that does
// not parse is redacted as text.
func redactJSON(data []byte, redact func(string) string) []byte {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return []byte(redact(string(data)))
	}
	out, err := json.MarshalIndent(redactValue(v, redact), "", " ")
	if err != nil {
		return []byte(redact(string(data)))
	}
	return append(out, '\n')
}

// redactYAML redacts YAML (one document) structurally.
func redactYAML(data []byte, redact func(string) string) ([]byte, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return yaml.Marshal(redactValue(v, redact))
}

func redactValue(v any, redact func(string) string) any {
	switch x := v.(type) {
	case string:
		return redact(x)
	case []any:
		for i := range x {
			x[i] = redactValue(x[i], redact)
		}
		return x
	case map[string]any:
		redactEnvVar(x, redact)
		for k, val := range x {
			switch val.(type) {
			case map[string]any, []any:
				x[k] = redactValue(val, redact)
			default:
				x[k] = redactEntry(k, val, redact)
			}
		}
		return x
	}
	return v
}

// redactEntry redacts a scalar: its text, then the text with its key, so
// that a value the key names a credential ("token", "authorization",
// "inline_bytes") is redacted whatever it looks like.
func redactEntry(key string, val any, redact func(string) string) any {
	s, isString := val.(string)
	if isString {
		s = redact(s)
	} else {
		b, err := json.Marshal(val)
		if err != nil {
			return redactedMarker
		}
		s = string(b)
	}
	probe := entryJSON(key, s)
	red := redact(probe)
	if red == probe {
		if isString {
			return s
		}
		return val
	}
	out := redactedMarker
	var parsed map[string]any
	if err := json.Unmarshal([]byte("{"+red+"}"), &parsed); err == nil {
		if got, ok := parsed[key].(string); ok {
			out = got
		}
	}
	if isBytesField(key) {
		// protobuf bytes must stay base64 for the dump to parse.
		return base64.StdEncoding.EncodeToString([]byte(out))
	}
	return out
}

// redactEnvVar redacts an environment variable's value when its name says
// it is a secret (AWS_SECRET_ACCESS_KEY, DB_PASSWORD).
func redactEnvVar(m map[string]any, redact func(string) string) {
	name, okName := m["name"].(string)
	value, okValue := m["value"].(string)
	if !okName || !okValue || value == "" {
		return
	}
	b, _ := json.Marshal(map[string]string{"name": name, "value": value})
	probe := strings.Replace(string(b), `","value":"`, `", "value": "`, 1)
	probe = strings.Replace(probe, `{"name":"`, `{"name": "`, 1)
	if red := redact(probe); red != probe {
		m["value"] = redactedMarker
		var parsed map[string]string
		if err := json.Unmarshal([]byte(red), &parsed); err == nil && parsed["name"] == name {
			m["value"] = parsed["value"]
		}
	}
}

func entryJSON(key, value string) string {
	k, _ := json.Marshal(key)
	v, _ := json.Marshal(value)
	return string(k) + ": " + string(v)
}

// isBytesField names the Envoy DataSource fields that hold base64 bytes.
func isBytesField(key string) bool {
	k := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(key))
	return k == "inlinebytes"
}
