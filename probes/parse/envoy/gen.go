package envoy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// GenerateConfigDump builds a config_dump of about size bytes for
// benchmarks: the cluster shapes of the real fixtures in fixtureDir
// (config_dump_sidecar.json, config_dump.json) repeated under clusters
// distinct names svc-I.ns-(I%97).svc.cluster.local, then listeners and
// routes until the document reaches size, so that most of it is what a
// decoder must skip over. Cluster I is exactly what BenchmarkConfigDumpStream
// matches, so benchmarks elsewhere (lab/bench/dumpcmp) measure the same
// document.
func GenerateConfigDump(fixtureDir string, clusters, size int) ([]byte, error) {
	var shapes []json.RawMessage
	var listener, route json.RawMessage
	var skeleton map[string]any
	for _, f := range []string{"config_dump_sidecar.json", "config_dump.json"} {
		b, err := os.ReadFile(filepath.Join(fixtureDir, f))
		if err != nil {
			return nil, err
		}
		var doc struct {
			Configs []map[string]json.RawMessage `json:"configs"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, cfg := range doc.Configs {
			var list []json.RawMessage
			if raw, ok := cfg["dynamic_active_clusters"]; ok {
				_ = json.Unmarshal(raw, &list)
				for _, c := range list {
					// Only shapes with a host to rename, so every name is unique.
					if bytes.Contains(c, []byte("orders.shop.svc.cluster.local")) || bytes.Contains(c, []byte("httpbin.default.svc.cluster.local")) || bytes.Contains(c, []byte("api.stripe.com")) {
						shapes = append(shapes, c)
					}
				}
			}
			if raw, ok := cfg["dynamic_listeners"]; ok && listener == nil {
				_ = json.Unmarshal(raw, &list)
				if len(list) > 0 {
					listener = list[0]
				}
			}
			if raw, ok := cfg["dynamic_route_configs"]; ok && route == nil {
				_ = json.Unmarshal(raw, &list)
				if len(list) > 0 {
					route = list[0]
				}
			}
		}
		if skeleton == nil {
			_ = json.Unmarshal(b, &skeleton)
		}
	}
	configs, _ := skeleton["configs"].([]any)
	if len(shapes) == 0 || listener == nil || route == nil || len(configs) == 0 {
		return nil, fmt.Errorf("%s: fixtures lack cluster shapes, a listener, a route or a bootstrap", fixtureDir)
	}
	var buf bytes.Buffer
	buf.Grow(size + size/8)
	buf.WriteString("{\n \"configs\": [\n  ")
	boot, err := json.MarshalIndent(configs[0], "  ", " ")
	if err != nil {
		return nil, err
	}
	buf.Write(boot)
	buf.WriteString(",\n  {\n   \"@type\": \"type.googleapis.com/envoy.admin.v3.ClustersConfigDump\",\n   \"version_info\": \"2026-12-02T02:58:10Z/41\",\n   \"dynamic_active_clusters\": [\n")
	for i := range clusters {
		host := fmt.Sprintf("svc-%d.ns-%d.svc.cluster.local", i, i%97)
		c := bytes.ReplaceAll(shapes[i%len(shapes)], []byte("orders.shop.svc.cluster.local"), []byte(host))
		c = bytes.ReplaceAll(c, []byte("httpbin.default.svc.cluster.local"), []byte(host))
		c = bytes.ReplaceAll(c, []byte("api.stripe.com"), []byte(host))
		if i > 0 {
			buf.WriteString(",\n")
		}
		if err := indentRaw(&buf, c, "    "); err != nil {
			return nil, err
		}
	}
	buf.WriteString("\n   ]\n  },\n  {\n   \"@type\": \"type.googleapis.com/envoy.admin.v3.ListenersConfigDump\",\n   \"dynamic_listeners\": [\n")
	// Fill up to size with listeners and routes, half each.
	for i := 0; buf.Len() < size*3/4; i++ {
		if i > 0 {
			buf.WriteString(",\n")
		}
		l := bytes.ReplaceAll(listener, []byte("0.0.0.0_8080"), fmt.Appendf(nil, "10.96.%d.%d_8080", i/250%250, i%250))
		if err := indentRaw(&buf, l, "    "); err != nil {
			return nil, err
		}
	}
	buf.WriteString("\n   ]\n  },\n  {\n   \"@type\": \"type.googleapis.com/envoy.admin.v3.RoutesConfigDump\",\n   \"dynamic_route_configs\": [\n")
	for i := 0; buf.Len() < size; i++ {
		if i > 0 {
			buf.WriteString(",\n")
		}
		if err := indentRaw(&buf, route, "    "); err != nil {
			return nil, err
		}
	}
	buf.WriteString("\n   ]\n  }\n ]\n}\n")
	return buf.Bytes(), nil
}

func indentRaw(buf *bytes.Buffer, raw []byte, prefix string) error {
	buf.WriteString(prefix)
	return json.Indent(buf, raw, prefix, " ")
}
