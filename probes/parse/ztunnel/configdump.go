package ztunnel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Dump is what a triage reads of ztunnel's admin /config_dump (port 15000,
// what `istioctl ztunnel-config all -o json` prints): the workloads and
// services istiod sent it, and the authorization policies it enforces.
// Older ztunnels print each collection as an object keyed by address,
// newer ones as a list; both read the same.
type Dump struct {
	Workloads []Workload
	Services  []Service
	Policies  []Policy
}

// Workload is one workload ztunnel knows.
type Workload struct {
	UID            string
	Name           string
	Namespace      string
	ServiceAccount string
	Node           string
	// Protocol is how ztunnel reaches it: HBONE (in ambient, or a sidecar
	// that accepts tunnels) or TCP (plaintext: not in the mesh).
	Protocol string
	Status   string
	IPs      []string
	// Waypoint is the workload's waypoint address, "" for none.
	Waypoint              string
	AuthorizationPolicies []string
}

// Service is one service ztunnel knows.
type Service struct {
	Name      string
	Namespace string
	Hostname  string
	VIPs      []string
	// Ports maps service port to target port.
	Ports map[int]int
	// Waypoint is the service's waypoint address, "" for none: ztunnel
	// sends the service's traffic there.
	Waypoint  string
	Endpoints []Endpoint
}

// Endpoint is one workload behind a service.
type Endpoint struct {
	WorkloadUID string
	Address     string
}

// Policy is one authorization policy ztunnel holds.
type Policy struct {
	Name, Namespace, Scope, Action string
}

type rawDump struct {
	Workloads json.RawMessage `json:"workloads"`
	Services  json.RawMessage `json:"services"`
	Policies  json.RawMessage `json:"policies"`
}

type rawGateway struct {
	Destination json.RawMessage `json:"destination"`
}

type rawWorkload struct {
	UID                   string      `json:"uid"`
	Name                  string      `json:"name"`
	Namespace             string      `json:"namespace"`
	ServiceAccount        string      `json:"serviceAccount"`
	Node                  string      `json:"node"`
	Protocol              string      `json:"protocol"`
	Status                string      `json:"status"`
	WorkloadIPs           []string    `json:"workloadIps"`
	Waypoint              *rawGateway `json:"waypoint"`
	AuthorizationPolicies []string    `json:"authorizationPolicies"`
}

type rawService struct {
	Name      string                     `json:"name"`
	Namespace string                     `json:"namespace"`
	Hostname  string                     `json:"hostname"`
	VIPs      []json.RawMessage          `json:"vips"`
	Ports     map[string]json.RawMessage `json:"ports"`
	Waypoint  *rawGateway                `json:"waypoint"`
	Endpoints json.RawMessage            `json:"endpoints"`
}

type rawEndpoint struct {
	WorkloadUID string          `json:"workloadUid"`
	Address     json.RawMessage `json:"address"`
}

type rawPolicy struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Scope     string `json:"scope"`
	Action    string `json:"action"`
}

// ParseConfigDump decodes a ztunnel /config_dump.
func ParseConfigDump(data []byte) (Dump, error) {
	var raw rawDump
	if err := json.Unmarshal(data, &raw); err != nil {
		return Dump{}, fmt.Errorf("ztunnel config_dump: %w", err)
	}
	var d Dump
	var workloads []rawWorkload
	if err := listOrMap(raw.Workloads, &workloads); err != nil {
		return Dump{}, fmt.Errorf("ztunnel config_dump workloads: %w", err)
	}
	for _, w := range workloads {
		d.Workloads = append(d.Workloads, Workload{
			UID: w.UID, Name: w.Name, Namespace: w.Namespace, ServiceAccount: w.ServiceAccount, Node: w.Node,
			Protocol: w.Protocol, Status: w.Status, IPs: w.WorkloadIPs, Waypoint: gatewayAddress(w.Waypoint),
			AuthorizationPolicies: w.AuthorizationPolicies,
		})
	}
	var services []rawService
	if err := listOrMap(raw.Services, &services); err != nil {
		return Dump{}, fmt.Errorf("ztunnel config_dump services: %w", err)
	}
	for _, s := range services {
		svc := Service{Name: s.Name, Namespace: s.Namespace, Hostname: s.Hostname, Waypoint: gatewayAddress(s.Waypoint), Ports: map[int]int{}}
		for _, v := range s.VIPs {
			if a := addressString(v); a != "" {
				svc.VIPs = append(svc.VIPs, a)
			}
		}
		for k, v := range s.Ports {
			sp, err1 := strconv.Atoi(k)
			var tp int
			err2 := json.Unmarshal(v, &tp)
			if err1 == nil && err2 == nil {
				svc.Ports[sp] = tp
			}
		}
		var eps []rawEndpoint
		if err := listOrMap(s.Endpoints, &eps); err == nil {
			for _, e := range eps {
				svc.Endpoints = append(svc.Endpoints, Endpoint{WorkloadUID: e.WorkloadUID, Address: addressString(e.Address)})
			}
		}
		sort.Slice(svc.Endpoints, func(i, j int) bool { return svc.Endpoints[i].WorkloadUID < svc.Endpoints[j].WorkloadUID })
		d.Services = append(d.Services, svc)
	}
	var policies []rawPolicy
	if err := listOrMap(raw.Policies, &policies); err != nil {
		return Dump{}, fmt.Errorf("ztunnel config_dump policies: %w", err)
	}
	for _, p := range policies {
		d.Policies = append(d.Policies, Policy{Name: p.Name, Namespace: p.Namespace, Scope: p.Scope, Action: p.Action})
	}
	sort.Slice(d.Workloads, func(i, j int) bool { return d.Workloads[i].UID < d.Workloads[j].UID })
	sort.Slice(d.Services, func(i, j int) bool { return d.Services[i].Hostname < d.Services[j].Hostname })
	return d, nil
}

// listOrMap decodes a JSON list, or the values of a JSON object, into out;
// absent or null is empty.
func listOrMap[T any](data json.RawMessage, out *[]T) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil
	}
	if data[0] == '[' {
		return json.Unmarshal(data, out)
	}
	var m map[string]T
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		*out = append(*out, m[k])
	}
	return nil
}

// gatewayAddress renders a waypoint reference: "NS/HOSTNAME" for a
// hostname, the IP for "NETWORK/IP" or {"address":...}.
func gatewayAddress(g *rawGateway) string {
	if g == nil {
		return ""
	}
	return addressString(g.Destination)
}

// addressString reads an address as ztunnel prints it: "NETWORK/IP" (the
// network may be empty: "/10.0.0.1"), a bare IP, "NS/HOSTNAME", or an
// object {"network":..., "address":...} / {"namespace":..., "hostname":...}.
func addressString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if i := strings.LastIndexByte(s, '/'); i >= 0 && !strings.Contains(s[i+1:], ".svc") && looksLikeIP(s[i+1:]) {
			return s[i+1:]
		}
		return s
	}
	var o struct {
		Address   string `json:"address"`
		Namespace string `json:"namespace"`
		Hostname  string `json:"hostname"`
	}
	if json.Unmarshal(raw, &o) == nil {
		switch {
		case o.Hostname != "":
			return o.Namespace + "/" + o.Hostname
		case o.Address != "":
			return addressString(json.RawMessage(strconv.Quote(o.Address)))
		}
	}
	return ""
}

func looksLikeIP(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == ':' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return strings.ContainsAny(s, ".:")
}

// WorkloadByIP finds the workload with ip.
func (d Dump) WorkloadByIP(ip string) (Workload, bool) {
	for _, w := range d.Workloads {
		for _, a := range w.IPs {
			if a == ip {
				return w, true
			}
		}
	}
	return Workload{}, false
}

// ServiceByHost finds the service with hostname.
func (d Dump) ServiceByHost(hostname string) (Service, bool) {
	for _, s := range d.Services {
		if s.Hostname == hostname {
			return s, true
		}
	}
	return Service{}, false
}
