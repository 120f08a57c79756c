package bugreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// istioctl bug-report asks Envoy for /clusters and /listeners without
// ?format=json, so it stores Envoy's text form; the probes read the JSON
// form. These convert one into the other, field for field: nothing the
// text does not say is added (a host's EDS status is the one its health
// flags name, else absent).

// clustersJSON converts /clusters text ("CLUSTER::HOST::KEY::VALUE" and
// "CLUSTER::KEY::VALUE" lines) into /clusters?format=json. Text that is
// already JSON is returned as is.
func clustersJSON(text []byte) ([]byte, error) {
	if isJSON(text) {
		return text, nil
	}
	type cluster struct {
		order int
		json  clusterStatus
		hosts map[string]*hostStatus
		addrs []string
	}
	clusters := map[string]*cluster{}
	for n, line := range strings.Split(string(text), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := splitFields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("clusters line %d: want CLUSTER::KEY::VALUE or CLUSTER::HOST::KEY::VALUE, got %q", n+1, line)
		}
		name := fields[0]
		c := clusters[name]
		if c == nil {
			c = &cluster{order: len(clusters), json: clusterStatus{Name: name}, hosts: map[string]*hostStatus{}}
			clusters[name] = c
		}
		if clusterKeys[fields[1]] {
			if fields[1] == "added_via_api" && len(fields) == 3 {
				c.json.AddedViaAPI = fields[2] == "true"
			}
			continue
		}
		if len(fields) != 4 {
			return nil, fmt.Errorf("clusters line %d: want CLUSTER::HOST::KEY::VALUE, got %q", n+1, line)
		}
		addr, key, value := fields[1], fields[2], fields[3]
		h := c.hosts[addr]
		if h == nil {
			h = &hostStatus{Address: address(addr)}
			c.hosts[addr] = h
			c.addrs = append(c.addrs, addr)
		}
		switch key {
		case "health_flags":
			h.HealthStatus = healthFlags(value)
		case "weight":
			w, err := strconv.ParseUint(value, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("clusters line %d: weight %q: %w", n+1, value, err)
			}
			h.Weight = uint32(w)
		case "region", "zone", "sub_zone", "canary", "priority", "hostname", "success_rate", "local_origin_success_rate":
			// Locality and success rates: no probe reads them.
		default:
			if v, err := strconv.ParseUint(value, 10, 64); err == nil {
				h.Stats = append(h.Stats, hostStat{Name: key, Value: strconv.FormatUint(v, 10)})
			}
		}
	}
	ordered := make([]*cluster, 0, len(clusters))
	for _, c := range clusters {
		ordered = append(ordered, c)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].order < ordered[j].order })
	out := clustersDoc{ClusterStatuses: []clusterStatus{}}
	for _, c := range ordered {
		for _, a := range c.addrs {
			c.json.HostStatuses = append(c.json.HostStatuses, *c.hosts[a])
		}
		out.ClusterStatuses = append(out.ClusterStatuses, c.json)
	}
	return json.Marshal(out)
}

// clusterKeys are the keys of cluster-wide lines in /clusters text.
var clusterKeys = map[string]bool{
	"added_via_api": true, "observability_name": true, "eds_service_name": true,
	"default_priority": true, "high_priority": true, "outlier": true,
}

// splitFields splits a /clusters text line on "::", keeping an IPv6 host
// ("[::1]:8080") whole.
func splitFields(line string) []string {
	parts := strings.Split(line, "::")
	var out []string
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		if strings.HasPrefix(p, "[") && !strings.Contains(p, "]") {
			for i+1 < len(parts) && !strings.Contains(p, "]") {
				i++
				p += "::" + parts[i]
			}
		}
		out = append(out, p)
	}
	return out
}

// healthFlags reads Envoy's health flags ("healthy", or "/failed_outlier_check/...").
func healthFlags(v string) *healthStatus {
	hs := &healthStatus{}
	for _, f := range strings.Split(v, "/") {
		switch f {
		case "failed_active_hc":
			hs.FailedActiveHealthCheck = true
		case "failed_outlier_check":
			hs.FailedOutlierCheck = true
		case "failed_eds_health":
			hs.EDSHealthStatus = "UNHEALTHY"
		case "degraded_eds_health":
			hs.EDSHealthStatus = "DEGRADED"
		case "eds_status_draining":
			hs.EDSHealthStatus = "DRAINING"
		case "pending_dynamic_removal":
			hs.PendingDynamicRemoval = true
		case "degraded_active_hc":
			hs.ActiveHCDegraded = true
		case "pending_active_hc":
			hs.PendingActiveHC = true
		case "excluded_via_immediate_hc_fail":
			hs.ExcludedViaImmediateHCFail = true
		case "active_hc_timeout":
			hs.ActiveHCTimeout = true
		}
	}
	return hs
}

// address is an Envoy address as the text names it: ip:port, an internal
// listener (envoy://NAME/...), or a pipe path.
func address(s string) *envoyAddress {
	if name, ok := strings.CutPrefix(s, "envoy://"); ok {
		name, _, _ = strings.Cut(name, "/")
		return &envoyAddress{Internal: &internalAddress{ServerListenerName: name}}
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return &envoyAddress{Pipe: &pipeAddress{Path: s}}
	}
	p, err := strconv.ParseUint(port, 10, 32)
	if err != nil {
		return &envoyAddress{Pipe: &pipeAddress{Path: s}}
	}
	return &envoyAddress{Socket: &socketAddress{Address: host, PortValue: uint32(p)}}
}

// listenersJSON converts /listeners text ("NAME::ADDRESS" lines) into
// /listeners?format=json.
func listenersJSON(text []byte) ([]byte, error) {
	if isJSON(text) {
		return text, nil
	}
	out := listenersDoc{ListenerStatuses: []listenerStatus{}}
	for n, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, addr, ok := strings.Cut(line, "::")
		if !ok {
			return nil, fmt.Errorf("listeners line %d: want NAME::ADDRESS, got %q", n+1, line)
		}
		out.ListenerStatuses = append(out.ListenerStatuses, listenerStatus{Name: name, LocalAddress: address(addr)})
	}
	return json.Marshal(out)
}

func isJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// The JSON shapes of envoy.admin.v3.Clusters and Listeners, with the
// field names Envoy writes.
type clustersDoc struct {
	ClusterStatuses []clusterStatus `json:"cluster_statuses"`
}

type clusterStatus struct {
	Name         string       `json:"name"`
	AddedViaAPI  bool         `json:"added_via_api,omitempty"`
	HostStatuses []hostStatus `json:"host_statuses,omitempty"`
}

type hostStatus struct {
	Address      *envoyAddress `json:"address,omitempty"`
	Stats        []hostStat    `json:"stats,omitempty"`
	HealthStatus *healthStatus `json:"health_status,omitempty"`
	Weight       uint32        `json:"weight,omitempty"`
}

type hostStat struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type healthStatus struct {
	FailedActiveHealthCheck    bool   `json:"failed_active_health_check,omitempty"`
	FailedOutlierCheck         bool   `json:"failed_outlier_check,omitempty"`
	EDSHealthStatus            string `json:"eds_health_status,omitempty"`
	PendingDynamicRemoval      bool   `json:"pending_dynamic_removal,omitempty"`
	ActiveHCDegraded           bool   `json:"failed_active_degraded_check,omitempty"`
	PendingActiveHC            bool   `json:"pending_active_hc,omitempty"`
	ExcludedViaImmediateHCFail bool   `json:"excluded_via_immediate_hc_fail,omitempty"`
	ActiveHCTimeout            bool   `json:"active_hc_timeout,omitempty"`
}

type envoyAddress struct {
	Socket   *socketAddress   `json:"socket_address,omitempty"`
	Pipe     *pipeAddress     `json:"pipe,omitempty"`
	Internal *internalAddress `json:"envoy_internal_address,omitempty"`
}

type socketAddress struct {
	Address   string `json:"address"`
	PortValue uint32 `json:"port_value"`
}

type pipeAddress struct {
	Path string `json:"path"`
}

type internalAddress struct {
	ServerListenerName string `json:"server_listener_name"`
}

type listenersDoc struct {
	ListenerStatuses []listenerStatus `json:"listener_statuses"`
}

type listenerStatus struct {
	Name         string        `json:"name"`
	LocalAddress *envoyAddress `json:"local_address,omitempty"`
}
