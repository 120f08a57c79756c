package lab

import (
	"fmt"
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// CompareWaypointServices compares the Service ports a waypoint serves:
// those of the inbound-vip|PORT|PROTOCOL|HOST clusters istiod pushes to
// the waypoint's proxy, against those of the Services the model binds to
// it (mesh.BindServiceWaypoint, as istiod's fetchWaypointForService)
// given every Service, Namespace and Gateway the API server serves. A
// Service whose binding the model cannot decide is left out. bound are
// the model's (HOST:PORT).
func CompareWaypointServices(services []corev1.Service, namespaces map[string]*corev1.Namespace, gateways []*gatewayv1.Gateway, waypoint mesh.WaypointRef, clusterNames []string) (Comparison, map[string]bool) {
	var c Comparison
	byNamespace := map[string][]*gatewayv1.Gateway{}
	for _, gw := range gateways {
		byNamespace[gw.Namespace] = append(byNamespace[gw.Namespace], gw)
	}
	model, undecided := map[string]bool{}, map[string]bool{}
	for k := range services {
		svc := &services[k]
		ns := namespaces[svc.Namespace]
		use := mesh.UseWaypoint(svc.ObjectMeta, "service", ns)
		b := mesh.BindServiceWaypoint(svc, ns, byNamespace[use.Ref.Namespace], true)
		host := mesh.ServiceHost(svc.Name, svc.Namespace)
		for _, p := range svc.Spec.Ports {
			hp := fmt.Sprintf("%s:%d", host, p.Port)
			switch {
			case b.State == mesh.WaypointUnknown:
				undecided[hp] = true
			case b.State == mesh.WaypointBound && b.Waypoint != nil && b.Waypoint.Ref == waypoint:
				model[hp] = true
			}
		}
	}
	pushed := map[string]bool{}
	for _, name := range clusterNames {
		parts := strings.Split(name, "|")
		if len(parts) == 4 && parts[0] == "inbound-vip" {
			if hp := parts[3] + ":" + parts[1]; !undecided[hp] {
				pushed[hp] = true
			}
		}
	}
	c.Clusters = len(model) + len(pushed)
	c.Diffs = compareSets("Service port served by waypoint "+waypoint.String(), sortedKeysOf(model), sortedKeysOf(pushed))
	return c, model
}

// CompareWaypointRoutes compares a waypoint's HTTP routes: for each
// Service port the model binds to it (bound, HOST:PORT) whose protocol is
// HTTP, the inline route configuration of the main_internal listener's
// filter chain inbound-vip|PORT|http|HOST against the model's routes for a
// meshed caller of the Service's namespace (a waypoint applies the same
// VirtualServices and mesh routes), their clusters named as a waypoint
// names them (getWaypointDestinationCluster: inbound-vip|PORT|PROTOCOL[/
// SUBSET]|HOST for a Service bound to this waypoint, the outbound cluster
// otherwise). Routes are compared as CompareRoutes compares them.
func CompareWaypointRoutes(cfg *mesh.Config, bound map[string]bool, listeners map[string]*listenerv3.Listener) Comparison {
	var c Comparison
	chains := map[string]*listenerv3.FilterChain{}
	for _, fc := range listeners["main_internal"].GetFilterChains() {
		chains[fc.GetName()] = fc
	}
	for _, hp := range sortedKeysOf(bound) {
		host, portText, _ := strings.Cut(hp, ":")
		port, _ := strconv.Atoi(portText)
		sd := cfg.Services[host]
		if sd == nil || sd.Service == nil {
			continue
		}
		v, err := cfg.ViewFor(mesh.MeshedCallerIn(sd.Service.Namespace), host, int32(port))
		if err != nil || v.Protocol != mesh.ProtocolHTTP || v.Visibility.Undecided != "" {
			continue
		}
		name := fmt.Sprintf("inbound-vip|%d|http|%s", port, host)
		c.Clusters++
		fc := chains[name]
		if fc == nil {
			c.Diffs = append(c.Diffs, fmt.Sprintf("%s: the model routes it on the waypoint; main_internal has no such filter chain", name))
			continue
		}
		var pushed []routeSig
		for _, f := range fc.GetFilters() {
			hcm := &hcmv3.HttpConnectionManager{}
			if tc := f.GetTypedConfig(); tc == nil || !tc.MessageIs(hcm) || tc.UnmarshalTo(hcm) != nil {
				continue
			}
			for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
				for _, r := range vh.GetRoutes() {
					pushed = append(pushed, envoyRouteSig(r))
				}
			}
		}
		var model []routeSig
		for _, r := range v.Routes {
			sends := modelRouteSends(r, func(d mesh.Destination) string { return waypointCluster(cfg, bound, d) })
			model = append(model, routeSig{sends: sends, catchAll: r.CatchAll})
		}
		c.Diffs = append(c.Diffs, compareRouteSigs(name, model, pushed)...)
	}
	return c
}

// waypointCluster names a route destination's cluster as a waypoint does.
func waypointCluster(cfg *mesh.Config, bound map[string]bool, d mesh.Destination) string {
	if d.Cluster == mesh.UnknownServiceCluster {
		return d.Cluster
	}
	sd := cfg.Services[d.Host]
	known := sd != nil && sd.Service != nil
	entry := false
	for _, se := range cfg.ServiceEntries {
		entry = entry || mesh.ServiceEntryDeclares(se, d.Host)
	}
	if !known && (entry || cfg.ServicesUnknown[d.Host] != "") || known && !bound[fmt.Sprintf("%s:%d", d.Host, d.Port)] {
		return d.Cluster
	}
	// getWaypointDestinationCluster and portToSubset: a Service the
	// waypoint serves, or none at all, is inbound-vip, its subset the
	// port's protocol; a port (or Service) istiod does not know is http.
	subset := "http"
	if known {
		for _, sp := range sd.Service.Spec.Ports {
			if sp.Port == d.Port && mesh.PortProtocol(sp) != mesh.ProtocolHTTP {
				subset = "tcp"
			}
		}
	}
	if d.Subset != "" {
		subset += "/" + d.Subset
	}
	return fmt.Sprintf("inbound-vip|%d|%s|%s", d.Port, subset, d.Host)
}
