package mesh

import (
	"sort"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ConfigFromObjects indexes a set of objects (a recording, a test's YAML,
// what the lab loaded) into a Config: every Service with its
// EndpointSlices (or converted Endpoints), the pods they point at (by
// targetRef, else by IP in the endpoint's namespace), and those pods'
// nodes. The objects are taken for the whole world: a pod that is not
// among them does not exist.
func ConfigFromObjects(objects []runtime.Object, mc MeshConfig, rootNamespace string) *Config {
	c := &Config{Mesh: mc, RootNamespace: rootNamespace, Services: map[string]*ServiceData{}, Namespaces: map[string]*corev1.Namespace{}, AllServices: true}
	pods := map[string]*corev1.Pod{} // namespace/name
	nodes := map[string]*corev1.Node{}
	var slices []discoveryv1.EndpointSlice
	var endpoints []*corev1.Endpoints //nolint:staticcheck // core Endpoints is deprecated but still served.
	for _, obj := range objects {
		switch o := obj.(type) {
		case *corev1.Service:
			c.Services[ServiceHost(o.Name, o.Namespace)] = &ServiceData{Service: o, Pods: map[string]*corev1.Pod{}, Nodes: map[string]*corev1.Node{}}
		case *corev1.Namespace:
			c.Namespaces[o.Name] = o
		case *corev1.Pod:
			pods[o.Namespace+"/"+o.Name] = o
		case *corev1.Node:
			nodes[o.Name] = o
		case *discoveryv1.EndpointSlice:
			slices = append(slices, *o)
		case *corev1.Endpoints: //nolint:staticcheck // see above
			endpoints = append(endpoints, o)
		case *networkingv1.VirtualService:
			c.VirtualServices = append(c.VirtualServices, o)
		case *networkingv1.DestinationRule:
			c.DestinationRules = append(c.DestinationRules, o)
		case *networkingv1.ServiceEntry:
			c.ServiceEntries = append(c.ServiceEntries, o)
		case *networkingv1.Sidecar:
			c.Sidecars = append(c.Sidecars, o)
		case *networkingv1.Gateway:
			c.Gateways = append(c.Gateways, o)
		case *securityv1.PeerAuthentication:
			c.PeerAuthentications = append(c.PeerAuthentications, o)
		}
	}
	sort.Slice(slices, func(i, j int) bool { return slices[i].Name < slices[j].Name })
	for _, s := range slices {
		if sd := c.Services[ServiceHost(s.Labels[discoveryv1.LabelServiceName], s.Namespace)]; sd != nil {
			sd.Slices = append(sd.Slices, s)
		}
	}
	for _, ep := range endpoints {
		// The API converts Endpoints only for a Service without slices.
		if sd := c.Services[ServiceHost(ep.Name, ep.Namespace)]; sd != nil && len(sd.Slices) == 0 {
			sd.Slices = SlicesFromEndpoints(ep)
		}
	}
	byIP := map[string][]*corev1.Pod{} // namespace/IP
	for _, p := range pods {
		if p.Status.PodIP != "" {
			byIP[p.Namespace+"/"+p.Status.PodIP] = append(byIP[p.Namespace+"/"+p.Status.PodIP], p)
		}
	}
	for _, sd := range c.Services {
		sd.PodsByIP = map[string][]*corev1.Pod{}
		addNode := func(p *corev1.Pod) {
			if n := nodes[p.Spec.NodeName]; n != nil {
				sd.Nodes[n.Name] = n
			}
		}
		for _, s := range sd.Slices {
			for _, ep := range s.Endpoints {
				if ref := ep.TargetRef; ref != nil && ref.Kind == "Pod" {
					if p := pods[ref.Namespace+"/"+ref.Name]; p != nil && ref.Namespace == s.Namespace {
						sd.Pods[p.Name] = p
						addNode(p)
					}
					continue
				}
				for _, addr := range ep.Addresses {
					found := byIP[s.Namespace+"/"+addr]
					sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
					sd.PodsByIP[addr] = found
					for _, p := range found {
						addNode(p)
					}
				}
			}
		}
	}
	return c
}
