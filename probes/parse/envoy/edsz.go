package envoy

import (
	"bytes"
	"fmt"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// EdszPath is istiod's debug endpoint that answers, for one connected
// proxy, the endpoints istiod would send it now: /debug/edsz?proxyID=POD.NS
// (pilot/pkg/xds/debug.go typedConfigDumpHandler("eds") → ConfigDump with
// types=eds: the EDS generator run for the names the proxy watches, the
// ClusterLoadAssignments as the configs of an admin.v3.ConfigDump). istiod
// answers 404 "Proxy not connected to this Pilot instance" from a replica
// the proxy is not connected to.
const EdszPath = "/debug/edsz"

var claURL = typePrefix + string((&endpointv3.ClusterLoadAssignment{}).ProtoReflect().Descriptor().FullName())

// ParseEdsz reads istiod's /debug/edsz answer: the endpoint assignments of
// the clusters match accepts (all when match is nil), by cluster name.
// Unknown Any types (istiod's own metadata) do not fail it.
func ParseEdsz(data []byte, match func(cluster string) bool) ([]Endpoints, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("edsz: not a JSON config dump: %q", firstBytes(data, 80))
	}
	var cd adminv3.ConfigDump
	if err := tolerant(&TolerantResolver{}).Unmarshal(data, &cd); err != nil {
		return nil, fmt.Errorf("edsz: %w", err)
	}
	var out []Endpoints
	for _, cfg := range cd.GetConfigs() {
		if cfg.GetTypeUrl() != claURL {
			continue
		}
		var cla endpointv3.ClusterLoadAssignment
		if err := cfg.UnmarshalTo(&cla); err != nil {
			return nil, fmt.Errorf("edsz: %w", err)
		}
		if match == nil || match(cla.GetClusterName()) {
			out = append(out, AnalyzeEndpoints(&cla))
		}
	}
	return out, nil
}

func firstBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
