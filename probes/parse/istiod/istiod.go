// Package istiod parses istiod's own debug endpoints on its monitoring port
// (15014) that say which clusters and networks it reads: /debug/clusterz,
// /debug/networkz and /debug/endpointShardz (pilot/pkg/xds/debug.go). They
// are what a multi-cluster triage stands on (issue 30): a remote cluster
// istiod does not list is one whose endpoints it never pushes.
//
// The shapes are istiod's JSON of its own Go types (no API contract), read
// leniently: unknown fields are ignored, a field a version lacks is left
// zero, and the one renamed field (an endpoint's Address, Addresses since
// dual-stack) is read in both spellings.
package istiod

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Debug paths on istiod's monitoring port.
const (
	ClusterzPath       = "/debug/clusterz"
	NetworkzPath       = "/debug/networkz"
	EndpointShardzPath = "/debug/endpointShardz"
)

// Sync states of a cluster in clusterz (pkg/kube/multicluster/cluster.go).
const (
	SyncStatusSynced  = "synced"
	SyncStatusSyncing = "syncing"
	// SyncStatusTimeout: the remote did not sync within
	// PILOT_REMOTE_CLUSTER_TIMEOUT; istiod went ready without it.
	SyncStatusTimeout = "timeout"
	// SyncStatusClosed: its secret was deleted or replaced.
	SyncStatusClosed = "closed"
)

// Cluster is one cluster istiod reads Services and endpoints from: its own
// (the config cluster, first, with no secret) and one per data key of each
// remote secret (pkg/cluster DebugInfo, secretcontroller.go
// ListRemoteClusters).
type Cluster struct {
	ID string `json:"id"`
	// SecretName is NAMESPACE/NAME of the remote secret that names it; ""
	// for the config cluster.
	SecretName string `json:"secretName"`
	SyncStatus string `json:"syncStatus"`
}

// Remote: the cluster is read through a remote secret.
func (c Cluster) Remote() bool { return c.SecretName != "" }

// Secret splits SecretName into namespace and name.
func (c Cluster) Secret() (namespace, name string) {
	namespace, name, ok := strings.Cut(c.SecretName, "/")
	if !ok {
		return "", c.SecretName
	}
	return namespace, name
}

// Clusters is clusterz's answer, in istiod's order.
type Clusters []Cluster

// Find returns the cluster of ID id. A cluster clusterz does not list is
// one istiod does not read (no remote secret names it, or the secret is
// keyed by istiod's own cluster ID, or by an ID another secret has
// already registered).
func (cs Clusters) Find(id string) (Cluster, bool) {
	for _, c := range cs {
		if c.ID == id {
			return c, true
		}
	}
	return Cluster{}, false
}

// ParseClusterz reads /debug/clusterz: a JSON list of clusters. istiod
// always lists its own cluster, so an empty list is refused rather than
// read as "no remote cluster": a cluster not listed must mean istiod does
// not read it, never that the answer was not clusterz.
func ParseClusterz(data []byte) (Clusters, error) {
	var out Clusters
	if err := decode("clusterz", data, '[', &out); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("clusterz: lists no cluster, not even istiod's own: %q", firstBytes(data, 80))
	}
	for i, c := range out {
		if c.ID == "" {
			return nil, fmt.Errorf("clusterz: entry %d has no id", i)
		}
	}
	return out, nil
}

// NetworkGateway is a gateway into a network as istiod resolved it
// (pilot/pkg/model NetworkGateway): from a Service labelled
// topology.istio.io/network with the gateway port (or 15008), from a
// Gateway API Gateway labelled with a network, or from meshNetworks.
// A gateway whose hostname istiod could not resolve is not listed.
type NetworkGateway struct {
	Network string
	// Cluster is the cluster whose registry gave the gateway; "" for one
	// from meshNetworks.
	Cluster string
	Addr    string
	// Port is the mTLS (AUTO_PASSTHROUGH) port, 0 for an HBONE-only
	// gateway; HBONEPort the HBONE port, 0 for none.
	Port, HBONEPort uint32
	ServiceAccount  struct{ Namespace, Name string }
}

// ParseNetworkz reads /debug/networkz: a JSON list of gateways, null when
// istiod knows none (no gateway anywhere: split-horizon EDS is off).
func ParseNetworkz(data []byte) ([]NetworkGateway, error) {
	var out []NetworkGateway
	if err := decode("networkz", data, '[', &out); err != nil {
		return nil, err
	}
	return out, nil
}

// decode unmarshals istiod's JSON answer of what, which must start with
// open (or be null); anything else (a 404 page, a text error) is an error
// naming what it began with.
func decode(what string, data []byte, open byte, v any) error {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	if len(data) == 0 || data[0] != open {
		return fmt.Errorf("%s: not istiod's JSON: %q", what, firstBytes(data, 80))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func firstBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
