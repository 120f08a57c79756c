package lab

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// CompareWaypointServices compares the Service ports a waypoint serves:
// those of the inbound-vip|PORT|PROTOCOL|HOST clusters istiod pushes to
// the waypoint's proxy, against those of the Services the model binds to
// it (mesh.BindServiceWaypoint, as istiod's fetchWaypointForService)
// given every Service, Namespace and Gateway the API server serves. A
// Service whose binding the model cannot decide is left out.
func CompareWaypointServices(services []corev1.Service, namespaces map[string]*corev1.Namespace, gateways []*gatewayv1.Gateway, waypoint mesh.WaypointRef, clusterNames []string) Comparison {
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
	return c
}
