package probes

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/wording"
	corev1 "k8s.io/api/core/v1"
)

// EnvoyListenersProbe reads the source sidecar's /listeners for a listener
// that captures the target port.
type EnvoyListenersProbe struct{}

func (EnvoyListenersProbe) Meta() Meta {
	return Meta{
		ID:    "envoy-listeners",
		Title: "Envoy listener for the port (source sidecar)",
		Reads: []string{"pods", "services", "pods/portforward (Envoy admin /listeners)", "pods/exec (pilot-agent fallback)"},
		Facts: []FactSpec{
			{"listener_found", FactBool, "a listener for the port (0.0.0.0_PORT for HTTP, VIP_PORT for TCP) covers every target port; virtualOutbound alone does not count, it only hands unmatched traffic to PassthroughCluster or BlackHoleCluster"},
			{"listener_names", FactList, "listeners matching the target port"},
			{"listener_missing_ports", FactList, "target ports no listener covers"},
			{"listener_virtual_outbound", FactBool, "the proxy has the virtualOutbound listener (15001) that iptables redirects outbound traffic to"},
		},
	}
}

type envoyListenersInput struct {
	// Skip says why there is no Envoy to read ("" when there is).
	Skip      string
	Listeners []envoy.Listener
	// Ports are the target ports: t.Port, or every port of the Service.
	Ports []int32
	// VIPs are the Service's cluster IPs; empty for a headless Service or
	// when the Service could not be read, and then any listener on the port
	// counts.
	VIPs []string
	// ServiceProblem says why the Service could not be read.
	ServiceProblem string
}

func (p EnvoyListenersProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchEnvoyListeners(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = envoyListenersCommands(t)
		return r
	}
	return evaluateEnvoyListeners(t, in)
}

func fetchEnvoyListeners(ctx context.Context, c cluster.Cluster, t cluster.Target) (in envoyListenersInput, what string, err error) {
	if in.Skip, what, err = envoyadmin.CheckSource(ctx, c, t); err != nil || in.Skip != "" {
		return in, what, err
	}
	if pod, err := c.GetPod(ctx, t.Source.Namespace, t.Source.Name); err == nil {
		if gateway, _ := mesh.GatewayPod(pod); gateway {
			// A gateway has no outbound listener per Service port: it
			// listens on its Gateway servers' ports, which the gateway
			// step reads.
			in.Skip = fmt.Sprintf("source pod %s is a gateway: it listens on its Gateway servers' ports, not on the Service's (see the gateway step)", t.Source)
			return in, "", nil
		}
	}
	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	switch {
	case err == nil:
		in.VIPs = serviceVIPs(svc)
		for _, sp := range svc.Spec.Ports {
			if t.Port == 0 || sp.Port == t.Port {
				in.Ports = append(in.Ports, sp.Port)
			}
		}
	case t.Port == 0:
		return in, fmt.Sprintf("get service %s/%s (its ports are the target ports)", t.Namespace, t.Service), err
	default:
		in.ServiceProblem = cluster.AccessProblem(fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err)
	}
	if t.Port != 0 && len(in.Ports) == 0 {
		in.Ports = []int32{t.Port}
	}
	src := *t.Source
	body, err := c.EnvoyAdmin(ctx, src, envoyadmin.ListenersPath)
	if err != nil {
		return in, fmt.Sprintf("read Envoy %s of %s", envoyadmin.ListenersPath, src), err
	}
	if in.Listeners, err = envoy.ParseListeners(body); err != nil {
		return in, fmt.Sprintf("parse Envoy %s of %s", envoyadmin.ListenersPath, src), err
	}
	return in, "", nil
}

func serviceVIPs(svc *corev1.Service) []string {
	var vips []string
	for _, ip := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
		if ip != "" && ip != corev1.ClusterIPNone && !slices.Contains(vips, ip) {
			vips = append(vips, ip)
		}
	}
	return vips
}

func evaluateEnvoyListeners(t cluster.Target, in envoyListenersInput) Result {
	if in.Skip != "" {
		return skippedResult(in.Skip, envoyListenersCommands(t))
	}
	var names, missing []string
	var rows [][]string
	virtualOutbound := false
	for _, l := range in.Listeners {
		if l.Name == envoy.VirtualOutbound {
			virtualOutbound = true
		}
	}
	for _, port := range in.Ports {
		found := false
		for _, l := range in.Listeners {
			if l.CoversPort(port, in.VIPs) {
				found = true
				if !slices.Contains(names, l.Name) {
					names = append(names, l.Name)
				}
				rows = append(rows, []string{strconv.Itoa(int(port)), l.Name, l.Address})
			}
		}
		if !found {
			missing = append(missing, strconv.Itoa(int(port)))
			rows = append(rows, []string{strconv.Itoa(int(port)), "(none)", "-"})
		}
	}
	sort.Strings(names)
	found := len(in.Ports) > 0 && len(missing) == 0

	status, summary := StatusPass, ""
	switch {
	case len(in.Ports) == 0:
		status = StatusWarn
		summary = fmt.Sprintf("service %s/%s declares no port to look for", t.Namespace, t.Service)
	case found:
		summary = fmt.Sprintf("%s capture%s port %s", strings.Join(names, ", "), wording.Plural(len(names), "s", ""), joinPorts(in.Ports))
	default:
		status = StatusFail
		summary = fmt.Sprintf("no listener for port %s in the source proxy", strings.Join(missing, ", "))
		if virtualOutbound {
			summary += ": traffic to it falls through virtualOutbound to PassthroughCluster or BlackHoleCluster"
		}
		summary += " (port not on the Service, a Sidecar scoping it out, or a stale proxy)"
	}
	if in.ServiceProblem != "" {
		summary += "; any listener on the port counted, " + in.ServiceProblem
	}

	var raw []string
	for _, l := range in.Listeners {
		raw = append(raw, fmt.Sprintf("%-28s %s", l.Name, l.Address))
	}
	return Result{
		Status:  status,
		Summary: summary,
		Evidence: Evidence{
			Columns: []string{"port", "listener", "address"},
			Rows:    rows,
			Raw:     strings.Join(raw, "\n"),
		},
		Facts: Facts{
			"listener_found":            found,
			"listener_names":            nonNil(names),
			"listener_missing_ports":    nonNil(missing),
			"listener_virtual_outbound": virtualOutbound,
		},
		Commands: envoyListenersCommands(t),
	}
}

func envoyListenersCommands(t cluster.Target) []string {
	if t.Source == nil {
		return nil
	}
	src := *t.Source
	port := ""
	if t.Port != 0 {
		port = fmt.Sprintf(" --port %d", t.Port)
	}
	return []string{
		fmt.Sprintf("istioctl proxy-config listener %s.%s%s", src.Name, src.Namespace, port),
		envoyadmin.PilotAgentRequest(src, "listeners?format=json"),
		fmt.Sprintf("kubectl get service -n %s %s -o jsonpath='{.spec.clusterIPs} {.spec.ports}'", t.Namespace, t.Service),
	}
}

func joinPorts(ports []int32) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}
