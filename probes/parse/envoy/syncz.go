package envoy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// xDS sync states as istioctl proxy-status prints them.
const (
	Synced  = "SYNCED"
	Stale   = "STALE"
	NotSent = "NOT SENT"
)

// xDS type URLs istiod keys its per-resource status by.
const (
	ClusterTypeURL  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	ListenerTypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteTypeURL    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	EndpointTypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// ProxySync is one proxy's sync state as istiod reports it.
type ProxySync struct {
	ProxyID      string // <pod>.<namespace>
	ClusterID    string
	ProxyType    string
	ProxyVersion string
	// ProxyIstioVersion is the proxy's own Istio version: syncz's
	// istio_version, which every istiod (1.10 and later) fills from the
	// ISTIO_VERSION metadata the proxy sends (debug.go Syncz:
	// node.GetIstioVersion()), and the node metadata's ISTIO_VERSION in
	// the xDS-shaped output. It is never istiod's version.
	ProxyIstioVersion string
	// ControlPlaneVersion is istiod's version where the output says it:
	// the xDS-shaped output's control_plane identifier; "" from the HTTP
	// JSON, which does not carry it (istiod's /version does).
	ControlPlaneVersion string
	// CDS, LDS, RDS, EDS are SYNCED, STALE or NOT SENT.
	CDS, LDS, RDS, EDS string
	// Detail says more where istioctl does ("STALE (Never Acknowledged)",
	// the last NACK error), keyed by CDS/LDS/RDS/EDS.
	Detail map[string]string
	// Rejected holds, by CDS/LDS/RDS/EDS, the error of the proxy's last
	// NACK of that type as istiod recorded it (its WatchedResource
	// LastError, set in ShouldRespond, cleared by the next ACK): the
	// proxy rejected istiod's newest config of the type and runs the one
	// it accepted before.
	Rejected map[string]string
}

// Types lists the four states in the order istioctl prints them.
func (p ProxySync) Types() [][2]string {
	return [][2]string{{"CDS", p.CDS}, {"LDS", p.LDS}, {"EDS", p.EDS}, {"RDS", p.RDS}}
}

// RejectedTypes are the types whose last push the proxy rejected, in the
// order Types lists them.
func (p ProxySync) RejectedTypes() []string {
	var out []string
	for _, tv := range p.Types() {
		if p.Rejected[tv[0]] != "" {
			out = append(out, tv[0])
		}
	}
	return out
}

// syncStatus mirrors the JSON of istiod's /debug/syncz
// (pilot/pkg/xds/debug.go SyncStatus). Unknown fields are ignored.
type syncStatus struct {
	ClusterID     string                    `json:"cluster_id"`
	ProxyID       string                    `json:"proxy"`
	ProxyType     string                    `json:"proxy_type"`
	ProxyVersion  string                    `json:"proxy_version"`
	IstioVersion  string                    `json:"istio_version"`
	ClusterSent   string                    `json:"cluster_sent"`
	ClusterAcked  string                    `json:"cluster_acked"`
	ListenerSent  string                    `json:"listener_sent"`
	ListenerAcked string                    `json:"listener_acked"`
	RouteSent     string                    `json:"route_sent"`
	RouteAcked    string                    `json:"route_acked"`
	EndpointSent  string                    `json:"endpoint_sent"`
	EndpointAcked string                    `json:"endpoint_acked"`
	Resources     map[string]resourceStatus `json:"resources"`
}

// resourceStatus mirrors debug.go ResourceStatus (Istio 1.23+): the
// NACK's error is lastError, camel case, unlike the flat fields.
type resourceStatus struct {
	Sent      string `json:"sent"`
	Acked     string `json:"acked"`
	LastError string `json:"lastError"`
}

// XDSStatus is istioctl proxy-status's verdict on one xDS type from the
// nonce istiod last sent and the one the proxy last acknowledged, as in
// istio/istio istioctl/pkg/writer/pilot/status.go xdsStatus: nothing sent is
// NOT SENT, the same nonce acknowledged is SYNCED, anything else STALE
// (with "(Never Acknowledged)" when nothing was).
func XDSStatus(sent, acked string) (state, detail string) {
	switch {
	case sent == "":
		return NotSent, NotSent
	case sent == acked:
		return Synced, Synced
	case acked == "":
		return Stale, "STALE (Never Acknowledged)"
	}
	return Stale, Stale
}

// ParseSyncz decodes /debug/syncz: the JSON array istiod serves over HTTP,
// or the xDS-shaped DiscoveryResponse of ClientConfig resources newer
// istioctl asks for over xDS.
func ParseSyncz(data []byte) ([]ProxySync, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, fmt.Errorf("syncz: empty response")
	}
	if data[0] == '{' {
		return parseSynczXDS(data)
	}
	var ss []syncStatus
	if err := json.Unmarshal(data, &ss); err != nil {
		return nil, fmt.Errorf("syncz: %w", err)
	}
	out := make([]ProxySync, 0, len(ss))
	for _, s := range ss {
		p := ProxySync{
			ProxyID: s.ProxyID, ClusterID: s.ClusterID, ProxyType: s.ProxyType,
			ProxyVersion: s.ProxyVersion, ProxyIstioVersion: s.IstioVersion, Detail: map[string]string{}, Rejected: map[string]string{},
		}
		set := func(short, typeURL string, state *string, sent, acked string) {
			// Like istioctl, the verdict comes from the flat fields every
			// istiod sends; the per-type map of newer ones only adds the
			// last NACK error.
			*state, p.Detail[short] = XDSStatus(sent, acked)
			if e := strings.TrimSpace(s.Resources[typeURL].LastError); e != "" {
				p.Detail[short] += ": rejected: " + e
				p.Rejected[short] = e
			}
		}
		set("CDS", ClusterTypeURL, &p.CDS, s.ClusterSent, s.ClusterAcked)
		set("LDS", ListenerTypeURL, &p.LDS, s.ListenerSent, s.ListenerAcked)
		set("RDS", RouteTypeURL, &p.RDS, s.RouteSent, s.RouteAcked)
		set("EDS", EndpointTypeURL, &p.EDS, s.EndpointSent, s.EndpointAcked)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProxyID < out[j].ProxyID })
	return out, nil
}

// xdsResponse is the subset of a DiscoveryResponse of
// envoy.service.status.v3.ClientConfig that proxy-status reads, in both the
// proto (snake_case) and protojson (camelCase) spellings.
type xdsResponse struct {
	Resources    []clientConfig `json:"resources"`
	ControlPlane struct {
		Identifier string `json:"identifier"`
	} `json:"control_plane"`
	ControlPlaneCamel struct {
		Identifier string `json:"identifier"`
	} `json:"controlPlane"`
}

type clientConfig struct {
	Node struct {
		ID       string `json:"id"`
		Metadata struct {
			IstioVersion string `json:"ISTIO_VERSION"`
		} `json:"metadata"`
	} `json:"node"`
	Generic      []genericXDS `json:"generic_xds_configs"`
	GenericCamel []genericXDS `json:"genericXdsConfigs"`
}

type genericXDS struct {
	TypeURL           string `json:"type_url"`
	TypeURLCamel      string `json:"typeUrl"`
	ConfigStatus      string `json:"config_status"`
	ConfigStatusCamel string `json:"configStatus"`
	// ErrorState is the last NACK's error, set with config status ERROR
	// (statusgen.go debugSyncz: admin.v3.UpdateFailureState).
	ErrorState      updateFailure `json:"error_state"`
	ErrorStateCamel updateFailure `json:"errorState"`
}

type updateFailure struct {
	Details string `json:"details"`
}

func parseSynczXDS(data []byte) ([]ProxySync, error) {
	var r xdsResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("syncz (xDS): %w", err)
	}
	version := controlPlaneVersion(first(r.ControlPlane.Identifier, r.ControlPlaneCamel.Identifier))
	var out []ProxySync
	for _, cc := range r.Resources {
		p := ProxySync{ProxyID: proxyIDFromNode(cc.Node.ID), ProxyIstioVersion: cc.Node.Metadata.IstioVersion,
			ControlPlaneVersion: version, Detail: map[string]string{}, Rejected: map[string]string{},
			CDS: NotSent, LDS: NotSent, RDS: NotSent, EDS: NotSent}
		for _, g := range append(cc.Generic, cc.GenericCamel...) {
			status := first(g.ConfigStatus, g.ConfigStatusCamel)
			rejected := strings.TrimSpace(first(g.ErrorState.Details, g.ErrorStateCamel.Details))
			// ERROR is istiod's word for a type whose last push the
			// proxy NACKed (debugSyncStatus): by the nonces it is STALE,
			// the proxy keeps what it accepted before, and the reason is
			// the error's details.
			state := Stale
			switch status {
			case "SYNCED":
				state = Synced
			case "NOT_SENT", "":
				state = NotSent
			}
			short := ""
			switch first(g.TypeURL, g.TypeURLCamel) {
			case ClusterTypeURL:
				short, p.CDS = "CDS", state
			case ListenerTypeURL:
				short, p.LDS = "LDS", state
			case RouteTypeURL:
				short, p.RDS = "RDS", state
			case EndpointTypeURL:
				short, p.EDS = "EDS", state
			}
			if short != "" {
				p.Detail[short] = strings.ReplaceAll(first(status, "NOT_SENT"), "_", " ")
				if rejected != "" {
					p.Detail[short] = Stale + ": rejected: " + rejected
					p.Rejected[short] = rejected
				}
			}
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProxyID < out[j].ProxyID })
	return out, nil
}

// proxyIDFromNode turns an Envoy node ID (sidecar~10.0.0.1~web-7d9.shop~shop.svc.cluster.local)
// into the proxy ID syncz uses (web-7d9.shop).
func proxyIDFromNode(id string) string {
	parts := strings.Split(id, "~")
	if len(parts) == 4 {
		return parts[2]
	}
	return id
}

// controlPlaneVersion reads istiod's identifier, a JSON string like
// {"Component":"istiod","ID":"istiod-5d4c","Info":{"version":"1.24.2",...}}.
func controlPlaneVersion(identifier string) string {
	var id struct {
		Info struct {
			Version string `json:"version"`
		} `json:"Info"`
	}
	if json.Unmarshal([]byte(identifier), &id) != nil {
		return ""
	}
	return id.Info.Version
}

// FindProxy returns the entry of pod (ID "<pod>.<namespace>").
func FindProxy(list []ProxySync, pod, namespace string) (ProxySync, bool) {
	id := pod + "." + namespace
	for _, p := range list {
		if p.ProxyID == id {
			return p, true
		}
	}
	return ProxySync{}, false
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
