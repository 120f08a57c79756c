package remedies

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/patch"
	"github.com/meshtriage/meshtriage/probes/proxylog"
)

// AddServiceEntry registers each external host the caller's sidecar sent
// to BlackHoleCluster under REGISTRY_ONLY, with the ports its requests
// went to and the protocol they came as (TLS when the connection carried
// SNI, else HTTP), exported to the caller's namespace only.
type AddServiceEntry struct{}

func (AddServiceEntry) Meta() Meta {
	return Meta{
		ID:     "add-service-entry",
		Causes: []string{"serviceentry.missing"},
		Does:   "creates a ServiceEntry for each external host sent to BlackHoleCluster, with the ports and protocol its requests used",
		Reads:  []string{"pods/log (the caller's istio-proxy, as the service-entry step read it)"},
	}
}

func (AddServiceEntry) Compute(ctx context.Context, in *Input) Output {
	if in.Target.Source == nil {
		return unpatchable("no caller was named (--from): the hosts it sends to BlackHoleCluster are in its sidecar's log")
	}
	unregistered, _ := in.Facts["se_unregistered_hosts"].([]string)
	if len(unregistered) == 0 {
		return unpatchable("the service-entry step names no unregistered external host")
	}
	formats, _ := istioconfig.ReadAccessLogFormats(ctx, in.Cluster)
	hosts, err := proxylog.BlackholedHosts(ctx, in.Cluster, *in.Target.Source, formats)
	if err != nil {
		return unpatchable("the caller's sidecar log could not be read again: %v", err)
	}
	byHost := map[string]proxylog.BlackholedHost{}
	for _, h := range hosts {
		byHost[h.Host] = h
	}
	var out Output
	var notes []string
	ns := in.Target.Source.Namespace
	for _, host := range unregistered {
		h, ok := byHost[host]
		if !ok || len(h.Ports) == 0 {
			return unpatchable("the port of %s is not in the caller's log: a ServiceEntry needs it", host)
		}
		sort.Ints(h.Ports)
		proto := "HTTP"
		if h.TLS {
			proto = "TLS"
		}
		var ports []any
		for _, p := range h.Ports {
			ports = append(ports, map[string]any{"number": p, "name": strings.ToLower(proto) + "-" + fmt.Sprint(p), "protocol": proto})
		}
		obj := patch.Object{APIVersion: istioNetworking, Kind: "ServiceEntry", Namespace: ns, Name: dnsLabel(host)}
		p, err := patch.CreateObject(obj, newObject(obj, map[string]any{
			"hosts": []string{host}, "location": "MESH_EXTERNAL", "resolution": "DNS", "ports": ports, "exportTo": []string{"."},
		}))
		if err != nil {
			return unpatchable("%v", err)
		}
		out.Patches = append(out.Patches, p)
		notes = append(notes, fmt.Sprintf("%s on %s %v (%d requests refused)", host, proto, h.Ports, h.Count))
	}
	out.Note = "The patch registers " + strings.Join(notes, ", ") + ", exported to " + ns + " only."
	return out
}

// dnsLabel turns a host into an object name: api.example.com →
// api-example-com.
func dnsLabel(host string) string {
	s := strings.ToLower(strings.TrimPrefix(host, "*."))
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-")
}
