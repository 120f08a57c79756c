package envoy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
)

// A config dump of a sidecar in a large mesh runs to 100 MB and more, and it
// carries typed extensions go-control-plane does not link in (Envoy's
// InternalUpstreamTransport, Istio's metadata exchange and stats plugins).
// Plain protojson into admin/v3 ConfigDump stops at the first of those. Two
// decoders share one result type:
//
//   - DecodeConfigDump: protojson of the whole document with TolerantResolver,
//     so unknown Any types decode as empty messages;
//   - StreamConfigDump: an encoding/json token walk that materialises only the
//     clusters (and endpoint assignments) a probe asks for, and decodes each
//     of those with the same tolerant protojson.
//
// The benchmarks in configdump_test.go compare them on a generated 100 MB
// dump; probes use StreamConfigDump.

// ConfigDump is what a probe takes from a config dump.
type ConfigDump struct {
	// ClustersVersion is the CDS version_info.
	ClustersVersion string
	// Clusters are the matching dynamic clusters, active then warming, in
	// document order.
	Clusters []ClusterConfig
	// Endpoints are the matching clusters' EDS assignments; only a dump
	// taken with ?include_eds has them.
	Endpoints []Endpoints
	// DynamicClusters counts every dynamic active cluster in the dump.
	DynamicClusters int
	// Fallbacks counts, by type name, the Any types decoded as empty
	// messages in the clusters that were decoded.
	Fallbacks map[string]int
	// ActiveSecrets and WarmingSecrets are the SDS secret names of the
	// SecretsConfigDump's dynamic_active_secrets and
	// dynamic_warming_secrets, in document order. A secret Envoy asked for
	// and was never sent stays warming: an Istio gateway's
	// kubernetes://NAME whose Secret istiod cannot find.
	ActiveSecrets, WarmingSecrets []string
}

// Active returns the named active cluster.
func (d ConfigDump) Active(name string) (ClusterConfig, bool) {
	for _, c := range d.Clusters {
		if c.Name == name && !c.Warming {
			return c, true
		}
	}
	return ClusterConfig{}, false
}

// FallbackTypes lists Fallbacks' keys, sorted.
func (d ConfigDump) FallbackTypes() []string {
	out := make([]string, 0, len(d.Fallbacks))
	for k := range d.Fallbacks {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var defaultUnmarshal = proto.UnmarshalOptions{DiscardUnknown: true}

var (
	clustersDumpURL  = typePrefix + string((&adminv3.ClustersConfigDump{}).ProtoReflect().Descriptor().FullName())
	endpointsDumpURL = typePrefix + string((&adminv3.EndpointsConfigDump{}).ProtoReflect().Descriptor().FullName())
	secretsDumpURL   = typePrefix + string((&adminv3.SecretsConfigDump{}).ProtoReflect().Descriptor().FullName())
)

// DecodeConfigDump decodes the whole document with protojson and
// TolerantResolver, then picks the clusters whose names match.
func DecodeConfigDump(data []byte, match func(name string) bool) (ConfigDump, error) {
	r := &TolerantResolver{Fallbacks: map[string]int{}}
	var cd adminv3.ConfigDump
	if err := tolerant(r).Unmarshal(data, &cd); err != nil {
		return ConfigDump{}, fmt.Errorf("config_dump: %w", err)
	}
	// The resolver saw the whole document; report only what the matching
	// clusters carried, as the streaming decoder does.
	out := ConfigDump{Fallbacks: map[string]int{}}
	for _, cfg := range cd.GetConfigs() {
		switch cfg.GetTypeUrl() {
		case clustersDumpURL:
			var ccd adminv3.ClustersConfigDump
			if err := cfg.UnmarshalTo(&ccd); err != nil {
				return ConfigDump{}, fmt.Errorf("config_dump clusters: %w", err)
			}
			out.ClustersVersion = ccd.GetVersionInfo()
			out.DynamicClusters += len(ccd.GetDynamicActiveClusters())
			for _, group := range []struct {
				list    []*adminv3.ClustersConfigDump_DynamicCluster
				warming bool
			}{{ccd.GetDynamicActiveClusters(), false}, {ccd.GetDynamicWarmingClusters(), true}} {
				for _, dc := range group.list {
					var c clusterv3.Cluster
					if err := dc.GetCluster().UnmarshalTo(&c); err != nil {
						return ConfigDump{}, fmt.Errorf("config_dump cluster: %w", err)
					}
					if !match(c.GetName()) {
						continue
					}
					cc := AnalyzeCluster(&c)
					cc.Warming = group.warming
					out.Clusters = append(out.Clusters, cc)
					countEmptyAnys(c.ProtoReflect(), out.Fallbacks)
				}
			}
		case secretsDumpURL:
			var scd adminv3.SecretsConfigDump
			if err := cfg.UnmarshalTo(&scd); err != nil {
				return ConfigDump{}, fmt.Errorf("config_dump secrets: %w", err)
			}
			for _, ds := range scd.GetDynamicActiveSecrets() {
				out.ActiveSecrets = append(out.ActiveSecrets, ds.GetName())
			}
			for _, ds := range scd.GetDynamicWarmingSecrets() {
				out.WarmingSecrets = append(out.WarmingSecrets, ds.GetName())
			}
		case endpointsDumpURL:
			var ecd adminv3.EndpointsConfigDump
			if err := cfg.UnmarshalTo(&ecd); err != nil {
				return ConfigDump{}, fmt.Errorf("config_dump endpoints: %w", err)
			}
			for _, ec := range ecd.GetDynamicEndpointConfigs() {
				var cla endpointv3.ClusterLoadAssignment
				if err := ec.GetEndpointConfig().UnmarshalTo(&cla); err != nil {
					return ConfigDump{}, fmt.Errorf("config_dump endpoint config: %w", err)
				}
				if match(cla.GetClusterName()) {
					out.Endpoints = append(out.Endpoints, AnalyzeEndpoints(&cla))
				}
			}
		}
	}
	return out, nil
}

// StreamConfigDump walks the document with encoding/json tokens. Only the
// dynamic clusters and endpoint assignments are looked at; of those only the
// matching ones are decoded (tolerantly, as DecodeConfigDump does). Memory
// stays at the largest single field of the document, not its size.
func StreamConfigDump(r io.Reader, match func(name string) bool) (ConfigDump, error) {
	s := &streamer{dec: json.NewDecoder(r), match: match, out: ConfigDump{Fallbacks: map[string]int{}}}
	if err := s.root(); err != nil {
		return ConfigDump{}, fmt.Errorf("config_dump: %w", err)
	}
	return s.out, nil
}

type streamer struct {
	dec   *json.Decoder
	match func(string) bool
	out   ConfigDump
	// raw is reused across values so that skipping a cluster costs no
	// allocation once it has grown.
	raw json.RawMessage
}

var errShape = errors.New("unexpected document shape")

func (s *streamer) delim(want json.Delim) error {
	tok, err := s.dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: got %v, want %v", errShape, tok, want)
	}
	return nil
}

func (s *streamer) key() (string, error) {
	tok, err := s.dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("%w: got %v, want an object key", errShape, tok)
	}
	return k, nil
}

// object calls f for each key of the object that comes next.
func (s *streamer) object(f func(key string) error) error {
	if err := s.delim('{'); err != nil {
		return err
	}
	for s.dec.More() {
		k, err := s.key()
		if err != nil {
			return err
		}
		if err := f(k); err != nil {
			return err
		}
	}
	return s.delim('}')
}

// array calls f for each element of the array that comes next.
func (s *streamer) array(f func() error) error {
	if err := s.delim('['); err != nil {
		return err
	}
	for s.dec.More() {
		if err := f(); err != nil {
			return err
		}
	}
	return s.delim(']')
}

// skip reads past the next value. Arrays and objects are read one element
// at a time so a large section (dynamic_listeners) never sits in memory
// whole.
func (s *streamer) skip() error {
	tok, err := s.dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '[':
		for s.dec.More() {
			if err := s.dec.Decode(&s.raw); err != nil {
				return err
			}
		}
		return s.delim(']')
	case '{':
		for s.dec.More() {
			if _, err := s.key(); err != nil {
				return err
			}
			if err := s.dec.Decode(&s.raw); err != nil {
				return err
			}
		}
		return s.delim('}')
	}
	return fmt.Errorf("%w: unexpected %v", errShape, d)
}

func (s *streamer) root() error {
	return s.object(func(k string) error {
		if k != "configs" {
			return s.skip()
		}
		return s.array(func() error {
			return s.object(func(k string) error {
				switch k {
				case "version_info":
					if err := s.dec.Decode(&s.raw); err != nil {
						return err
					}
					var v string
					if json.Unmarshal(s.raw, &v) == nil && s.out.ClustersVersion == "" {
						s.out.ClustersVersion = v
					}
					return nil
				case "dynamic_active_clusters", "dynamic_warming_clusters":
					warming := k == "dynamic_warming_clusters"
					return s.array(func() error { return s.dynamicCluster(warming) })
				case "dynamic_endpoint_configs":
					return s.array(s.dynamicEndpoints)
				case "dynamic_active_secrets":
					return s.array(func() error { return s.dynamicSecret(&s.out.ActiveSecrets) })
				case "dynamic_warming_secrets":
					return s.array(func() error { return s.dynamicSecret(&s.out.WarmingSecrets) })
				}
				return s.skip()
			})
		})
	})
}

// dynamicCluster reads {"version_info", "cluster": {...}, "last_updated"}.
func (s *streamer) dynamicCluster(warming bool) error {
	return s.object(func(k string) error {
		if k != "cluster" {
			return s.skip()
		}
		if !warming {
			s.out.DynamicClusters++
		}
		name, err := s.named("name")
		if err != nil || !s.match(name) {
			return err
		}
		r := &TolerantResolver{Fallbacks: s.out.Fallbacks}
		var c clusterv3.Cluster
		if err := tolerant(r).Unmarshal(s.raw, &c); err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		cc := AnalyzeCluster(&c)
		cc.Warming = warming
		s.out.Clusters = append(s.out.Clusters, cc)
		return nil
	})
}

// dynamicSecret reads a SecretsConfigDump.DynamicSecret ({"name",
// "version_info", "last_updated", "secret": {...}}) and adds its name to
// names; the secret itself (redacted key material) is not kept.
func (s *streamer) dynamicSecret(names *[]string) error {
	if err := s.dec.Decode(&s.raw); err != nil {
		return err
	}
	var ds adminv3.SecretsConfigDump_DynamicSecret
	if err := tolerant(nil).Unmarshal(s.raw, &ds); err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	*names = append(*names, ds.GetName())
	return nil
}

// dynamicEndpoints reads {"endpoint_config": {...}, ...}.
func (s *streamer) dynamicEndpoints() error {
	return s.object(func(k string) error {
		if k != "endpoint_config" {
			return s.skip()
		}
		name, err := s.named("cluster_name")
		if err != nil || !s.match(name) {
			return err
		}
		var cla endpointv3.ClusterLoadAssignment
		if err := tolerant(nil).Unmarshal(s.raw, &cla); err != nil {
			return fmt.Errorf("endpoints of %s: %w", name, err)
		}
		s.out.Endpoints = append(s.out.Endpoints, AnalyzeEndpoints(&cla))
		return nil
	})
}

// named reads the object that comes next into s.raw and returns the string
// value of its top-level key nameKey ("" when it has none). The name is not
// necessarily the first field (Envoy prints transport_socket_matches before
// it), so the whole object is read, but nothing of it is decoded unless
// the caller wants it.
func (s *streamer) named(nameKey string) (string, error) {
	if err := s.dec.Decode(&s.raw); err != nil {
		return "", err
	}
	if len(s.raw) == 0 || s.raw[0] != '{' {
		return "", fmt.Errorf("%w: want an object, got %.20s", errShape, s.raw)
	}
	return topLevelString(s.raw, nameKey), nil
}

// topLevelString finds key among the top-level keys of the JSON object obj
// (already validated by the decoder) and returns its value if it is a
// string. It only tracks nesting and string boundaries, which is all it
// takes to skip values without decoding them.
func topLevelString(obj []byte, key string) string {
	depth := 0
	for i := 0; i < len(obj); i++ {
		switch obj[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(obj, i)
			if depth == 1 && isKeyAt(obj, end+1) && string(obj[i+1:end]) == key {
				j := skipSpace(obj, skipSpace(obj, end+1)+1)
				if j < len(obj) && obj[j] == '"' {
					var v string
					if json.Unmarshal(obj[j:stringEnd(obj, j)+1], &v) == nil {
						return v
					}
				}
				return ""
			}
			i = end
		}
	}
	return ""
}

// stringEnd returns the index of the quote closing the string opened at i.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(b) - 1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// isKeyAt reports whether the string that ended just before i is an object
// key (followed by a colon).
func isKeyAt(b []byte, i int) bool {
	i = skipSpace(b, i)
	return i < len(b) && b[i] == ':'
}
