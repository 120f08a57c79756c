package mesh

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SlicesFromEndpoints converts a core Endpoints object into the EndpointSlice
// shape (one slice per subset) so probes handle one form.
//
//nolint:staticcheck // core Endpoints is deprecated but still served.
func SlicesFromEndpoints(ep *corev1.Endpoints) []discoveryv1.EndpointSlice {
	var out []discoveryv1.EndpointSlice
	for i, ss := range ep.Subsets {
		s := discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:      fmt.Sprintf("%s-endpoints-%d", ep.Name, i),
				Namespace: ep.Namespace,
				Labels:    map[string]string{discoveryv1.LabelServiceName: ep.Name},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
		for _, p := range ss.Ports {
			p := p
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: &p.Name, Port: &p.Port, Protocol: &p.Protocol})
		}
		add := func(addrs []corev1.EndpointAddress, ready bool) {
			for _, a := range addrs {
				r := ready
				e := discoveryv1.Endpoint{Addresses: []string{a.IP}, Conditions: discoveryv1.EndpointConditions{Ready: &r}, TargetRef: a.TargetRef, NodeName: a.NodeName}
				s.Endpoints = append(s.Endpoints, e)
			}
		}
		add(ss.Addresses, true)
		add(ss.NotReadyAddresses, false)
		out = append(out, s)
	}
	return out
}

// SliceAddresses counts the endpoint addresses slices hold, ready or not:
// what a Service has behind it in one cluster.
func SliceAddresses(slices []discoveryv1.EndpointSlice) int {
	n := 0
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			n += len(ep.Addresses)
		}
	}
	return n
}
