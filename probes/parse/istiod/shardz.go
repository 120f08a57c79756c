package istiod

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// HealthStatus is an endpoint's health in istiod's index
// (pilot/pkg/model HealthStatus).
type HealthStatus int32

const (
	Healthy     HealthStatus = 1
	Unhealthy   HealthStatus = 2
	Draining    HealthStatus = 3 // shutting down, under persistent sessions only
	Terminating HealthStatus = 4
)

func (h HealthStatus) String() string {
	switch h {
	case Healthy:
		return "Healthy"
	case Unhealthy:
		return "Unhealthy"
	case Draining:
		return "Draining"
	case Terminating:
		return "Terminating"
	}
	return fmt.Sprintf("HealthStatus(%d)", int32(h))
}

// Endpoint is one endpoint in istiod's index (pilot/pkg/model
// IstioEndpoint), as the registry of its cluster built it.
type Endpoint struct {
	Labels    map[string]string
	Addresses []string
	// ServicePortName is the Service port's name the endpoint serves.
	ServicePortName string
	// ServiceAccount is the SPIFFE identity, from its cluster's trust
	// domain.
	ServiceAccount string
	// Network is the network istiod put it on: its pod's label, else the
	// label on its cluster's system namespace, else meshNetworks; "" for
	// none (on every proxy's network).
	Network string
	// Locality is its region/zone/subzone label; ClusterID the cluster
	// whose registry gave it.
	Locality, ClusterID string
	EndpointPort        uint32
	LbWeight            uint32
	// TLSMode is "istio" for an endpoint with the sidecar's (or ambient's)
	// mTLS, "disabled" otherwise.
	TLSMode      string
	Namespace    string
	WorkloadName string
	HostName     string
	SubDomain    string
	HealthStatus HealthStatus
	NodeName     string
}

// Address is the endpoint's first address ("" for none).
func (e Endpoint) Address() string {
	if len(e.Addresses) == 0 {
		return ""
	}
	return e.Addresses[0]
}

// UnmarshalJSON takes istiod's field names, Locality's two fields flat, and
// a single Address as older istiods wrote it.
func (e *Endpoint) UnmarshalJSON(data []byte) error {
	type plain Endpoint
	var raw struct {
		plain
		Address  string
		Locality struct {
			Label     string
			ClusterID string
		}
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*e = Endpoint(raw.plain)
	e.Locality, e.ClusterID = raw.Locality.Label, raw.Locality.ClusterID
	if len(e.Addresses) == 0 && raw.Address != "" {
		e.Addresses = []string{raw.Address}
	}
	return nil
}

// Shard is the endpoints one registry gave istiod for a Service: its key
// is PROVIDER/CLUSTER (Kubernetes/cluster2; an older istiod keyed by the
// cluster alone).
type Shard struct {
	Provider, Cluster string
	Endpoints         []Endpoint
}

// Key is the shard's key as istiod writes it.
func (s Shard) Key() string {
	if s.Provider == "" {
		return s.Cluster
	}
	return s.Provider + "/" + s.Cluster
}

// ServiceShards are one Service's (host and namespace: the same Service in
// several clusters is one) endpoints in istiod's index, a shard per
// registry and cluster, and the identities of all of them.
type ServiceShards struct {
	Host, Namespace string
	// Shards sorted by key, as istiod concatenates them for EDS.
	Shards          []Shard
	ServiceAccounts []string
}

// Shard returns the shard of cluster (any provider).
func (s ServiceShards) Shard(cluster string) (Shard, bool) {
	for _, sh := range s.Shards {
		if sh.Cluster == cluster {
			return sh, true
		}
	}
	return Shard{}, false
}

// ParseEndpointShardz reads /debug/endpointShardz ({HOST: {NAMESPACE:
// {Shards: {KEY: [endpoint...]}, ServiceAccounts}}}) for the Services
// match accepts (all when nil), sorted by host and namespace. The answer is
// istiod's whole index, so only the matched Services are decoded.
func ParseEndpointShardz(data []byte, match func(host, namespace string) bool) ([]ServiceShards, error) {
	var index map[string]map[string]json.RawMessage
	if err := decode("endpointShardz", data, '{', &index); err != nil {
		return nil, err
	}
	var out []ServiceShards
	for host, byNS := range index {
		for ns, raw := range byNS {
			if match != nil && !match(host, ns) {
				continue
			}
			var shards struct {
				Shards          map[string][]Endpoint
				ServiceAccounts json.RawMessage
			}
			if err := json.Unmarshal(raw, &shards); err != nil {
				return nil, fmt.Errorf("endpointShardz %s in %s: %w", host, ns, err)
			}
			s := ServiceShards{Host: host, Namespace: ns}
			for key, eps := range shards.Shards {
				sh := Shard{Cluster: key, Endpoints: eps}
				if p, c, ok := strings.Cut(key, "/"); ok {
					sh.Provider, sh.Cluster = p, c
				}
				s.Shards = append(s.Shards, sh)
			}
			sort.Slice(s.Shards, func(i, j int) bool { return s.Shards[i].Key() < s.Shards[j].Key() })
			var err error
			if s.ServiceAccounts, err = stringSet(shards.ServiceAccounts); err != nil {
				return nil, fmt.Errorf("endpointShardz %s in %s: ServiceAccounts: %w", host, ns, err)
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Namespace < out[j].Namespace
	})
	return out, nil
}

// stringSet reads a set of strings as istiod writes one: a JSON object
// whose keys are the members (sets.String, a map), or a list.
func stringSet(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var out []string
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, err
		}
	} else {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		for k := range m {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}
