package callerview

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/readgroup"
)

// gatewayReads is what the config model needs besides the rules when the
// caller is a gateway: the Gateways of the namespaces that matter and the
// Services that select the gateway pod (their targetPorts are the
// listener ports).
type gatewayReads struct {
	gateways map[string][]*networkingv1.Gateway
	problems map[string]string // namespace -> why its Gateways are unknown
	services []*corev1.Service
}

// fetchGatewayConfig reads, at once, the Gateways of namespaces and the
// gateway pod's Services, found by the names its Deployment and Service
// conventionally share (the app label, the Deployment, the Gateway API
// Gateway's NAME-CLASS).
func fetchGatewayConfig(ctx context.Context, c cluster.Cluster, pod *corev1.Pod, namespaces []string) gatewayReads {
	r := gatewayReads{gateways: map[string][]*networkingv1.Gateway{}, problems: map[string]string{}}
	lists := make([][]*networkingv1.Gateway, len(namespaces))
	errs := make([]error, len(namespaces))
	var g readgroup.Group
	for i, ns := range namespaces {
		g.Go(func() { lists[i], errs[i] = cluster.Gateways(ctx, c, ns) })
	}
	names := gatewayServiceNames(pod)
	svcs := make([]*corev1.Service, len(names))
	for i, name := range names {
		g.Go(func() {
			if svc, err := c.GetService(ctx, pod.Namespace, name); err == nil && len(svc.Spec.Selector) > 0 && mesh.LabelsMatch(svc.Spec.Selector, pod.Labels) {
				svcs[i] = svc
			}
		})
	}
	g.Wait()
	for i, ns := range namespaces {
		switch err := errs[i]; {
		case err == nil, apierrors.IsNotFound(err) && cluster.IsMissingKind(err):
			// No Gateway CRD: no Gateway there.
			r.gateways[ns] = lists[i]
		default:
			r.problems[ns] = cluster.AccessProblem("list gateways in "+ns, err)
		}
	}
	for _, svc := range svcs {
		if svc != nil {
			r.services = append(r.services, svc)
		}
	}
	return r
}

// addGatewayConfig adds what fetchGatewayConfig read to cfg.
func addGatewayConfig(cfg *mesh.Config, r gatewayReads) {
	if cfg.GatewayNamespaces == nil {
		cfg.GatewayNamespaces = map[string]bool{}
	}
	for _, ns := range slices.Sorted(maps.Keys(r.gateways)) {
		cfg.GatewayNamespaces[ns] = true
		cfg.Gateways = append(cfg.Gateways, r.gateways[ns]...)
	}
	for _, ns := range slices.Sorted(maps.Keys(r.problems)) {
		cfg.Unknown = append(cfg.Unknown, r.problems[ns]+": its Gateways are not judged")
	}
	for _, svc := range r.services {
		if host := mesh.ServiceHost(svc.Name, svc.Namespace); cfg.Services[host] == nil {
			cfg.Services[host] = &mesh.ServiceData{Service: svc, Pods: map[string]*corev1.Pod{}, Nodes: map[string]*corev1.Node{}}
		}
	}
}

// gatewayNamespacesNamed are the namespaces of the Gateways the
// VirtualServices of cfg name that were not read yet.
func gatewayNamespacesNamed(cfg *mesh.Config) []string {
	var out []string
	for _, vs := range cfg.VirtualServices {
		for _, g := range vs.Spec.GetGateways() {
			ref := mesh.ResolveGatewayName(g, vs.Namespace)
			if ns, _, ok := strings.Cut(ref, "/"); ok && !cfg.GatewayNamespaces[ns] && !slices.Contains(out, ns) {
				out = append(out, ns)
			}
		}
	}
	sort.Strings(out)
	return out
}

// gatewayServiceNames are the names a gateway pod's Service usually has:
// its app label (istio-ingressgateway), its Deployment's name (from its
// ReplicaSet, else from its own name), and for a Gateway API Gateway
// NAME-istio.
func gatewayServiceNames(pod *corev1.Pod) []string {
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	add(pod.Labels["app"])
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "ReplicaSet" {
			if hash := pod.Labels["pod-template-hash"]; hash != "" {
				add(strings.TrimSuffix(ref.Name, "-"+hash))
			}
		}
	}
	if name := mesh.GatewayAPIName(pod); name != "" {
		add(name + "-istio")
	}
	// A Deployment's pod is NAME-HASH-SUFFIX: NAME, when nothing above
	// said it.
	if parts := strings.Split(pod.Name, "-"); len(parts) > 2 {
		add(strings.Join(parts[:len(parts)-2], "-"))
	}
	return names
}
