// Package callerview is the caller's view: what the config model
// (probes/mesh) says the caller's proxy is given for each port of the
// target, and the reads it is built from, made as istiod makes them. The
// probes that judge configuration (mtls, destination-rules,
// gateway-routes), the fixes and the lab's differential test read it.
package callerview

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// View is what the config model says the caller's proxy is given for
// the target's ports, and the reads it was built from. The probes that
// judge configuration (mtls, destination-rules) read it; the read cache
// makes the reads happen once per wave however many probes ask.
type View struct {
	Config *mesh.Config
	Caller mesh.Caller
	// CallerNamed: the on-call named the caller (--from); otherwise the
	// view is for "a meshed pod in the target's namespace".
	CallerNamed bool
	// Views holds one view per service port judged (the target port, or
	// every port of the Service).
	Views []*mesh.View
}

// Fetch reads what the model needs: the mesh config; the Istio
// rules of the caller's, the target's and the root namespace (the root's
// may be unreadable: mesh-wide rules are then unknown); the Service, its
// endpoints, their pods, and their nodes when a subset selects on the
// locality labels; and the same for every other Service a route of the
// target's sends to.
func Fetch(ctx context.Context, c cluster.Cluster, t cluster.Target) (View, string, error) {
	var out View
	// The mesh config, the Service and the caller depend on nothing: one
	// round trip for the three.
	var (
		mc         mesh.MeshConfig
		svc        *corev1.Service
		pod        *corev1.Pod
		mcErr      error
		svcErr     error
		podErr     error
		first      readgroup.Group
		sourceRead = t.Source != nil
	)
	first.Go(func() { mc, mcErr = istioconfig.ReadMeshConfig(ctx, c) })
	first.Go(func() { svc, svcErr = c.GetService(ctx, t.Namespace, t.Service) })
	if sourceRead {
		first.Go(func() { pod, podErr = c.GetPod(ctx, t.Source.Namespace, t.Source.Name) })
	}
	first.Wait()
	if mcErr != nil {
		return out, "read the mesh config", mcErr
	}
	cfg := &mesh.Config{Mesh: mc, RootNamespace: mc.RootNamespace(istioconfig.ControlPlane(c)), Services: map[string]*mesh.ServiceData{}, Namespaces: map[string]*corev1.Namespace{}}
	out.Config = cfg
	if svcErr != nil {
		return out, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), svcErr
	}
	out.Caller = mesh.MeshedCallerIn(t.Namespace)
	if sourceRead {
		if podErr != nil {
			return out, "get source pod " + t.Source.String(), podErr
		}
		out.Caller, out.CallerNamed = mesh.CallerFromPod(pod), true
	}
	// Then the rules (every namespace's, one list a kind) and the Service's
	// endpoints, all at once; they are added to the model in a fixed order,
	// so errors and unknowns read the same whatever answered first.
	namespaces := wording.UniqueNonEmpty(out.Caller.Namespace, t.Namespace, cfg.RootNamespace)
	optional := func(ns string) bool { return ns != t.Namespace && ns != out.Caller.Namespace }
	var (
		rules     *istioconfig.Rules
		rulesWhat string
		rulesErr  error
		sd        *mesh.ServiceData
		sdNS      *corev1.Namespace
		sdWhat    string
		sdErr     error
		gwReads   gatewayReads
		gwAPI     *mesh.GatewayAPIConfig
		nets      networkReads
		second    readgroup.Group
	)
	second.Go(func() { rules, rulesWhat, rulesErr = istioconfig.ReadRules(ctx, c, namespaces, optional) })
	second.Go(func() { gwAPI = istioconfig.ReadGatewayAPI(ctx, c, namespaces) })
	second.Go(func() { sd, sdNS, sdWhat, sdErr = fetchServiceData(ctx, c, svc) })
	second.Go(func() { nets = fetchNetworks(ctx, c) })
	if out.Caller.Gateway {
		second.Go(func() { gwReads = fetchGatewayConfig(ctx, c, pod, []string{metav1.NamespaceAll}) })
	}
	second.Wait()
	if rulesErr != nil {
		return out, rulesWhat, rulesErr
	}
	rules.Into(cfg)
	cfg.GatewayAPI = gwAPI
	nets.into(cfg)
	if what, err := addServiceData(cfg, svc, sd, sdNS, sdWhat, sdErr); err != nil {
		return out, what, err
	}
	if out.Caller.Gateway {
		if gwReads.problems[metav1.NamespaceAll] == "" {
			// Every namespace's Gateways: the model needs no list of them.
			addGatewayConfig(cfg, gwReads)
			cfg.GatewayNamespaces = nil
		} else {
			// Refused across namespaces: the gateway's, the Service's and
			// the root's, then those its VirtualServices name.
			addGatewayConfig(cfg, fetchGatewayConfig(ctx, c, pod, namespaces))
			if more := gatewayNamespacesNamed(cfg); len(more) > 0 {
				addGatewayConfig(cfg, fetchGatewayConfig(ctx, c, pod, more))
			}
		}
	}
	// Other Services the target's routes send to: their endpoints, and,
	// where the rules were read namespace by namespace, the rules of
	// their namespaces (a DestinationRule there defines their subsets).
	hosts := routedHosts(cfg, out.Caller, mesh.ServiceHost(svc.Name, svc.Namespace))
	// What the Gateway API verdicts need: the caller's Gateway's Services,
	// the backends of the routes that concern the target.
	apiHosts := cfg.GatewayAPIReadHosts(out.Caller, mesh.ServiceHost(svc.Name, svc.Namespace))
	if len(apiHosts) > maxPodLookups {
		// Past the bound, their backends are undecided, never guessed.
		apiHosts = apiHosts[:maxPodLookups]
	}
	hosts = append(hosts, apiHosts...)
	if alias := mesh.ExternalNameOf(svc); alias != "" {
		// istiod routes an ExternalName Service as the Service it names.
		hosts = append([]string{alias}, hosts...)
	}
	var others []string
	for _, host := range hosts {
		if _, _, ok := serviceOfHost(host); ok && cfg.Services[host] == nil && !slices.Contains(others, host) {
			others = append(others, host)
		}
	}
	otherSvcs := make([]*corev1.Service, len(others))
	otherErrs := make([]error, len(others))
	var third readgroup.Group
	for i, host := range others {
		name, ns, _ := serviceOfHost(host)
		third.Go(func() { otherSvcs[i], otherErrs[i] = c.GetService(ctx, ns, name) })
	}
	third.Wait()
	cfg.ServicesUnknown, cfg.ServicesAbsent = map[string]string{}, map[string]bool{}
	var found []*corev1.Service
	var otherNamespaces []string
	for i, host := range others {
		name, ns, _ := serviceOfHost(host)
		switch err := otherErrs[i]; {
		case apierrors.IsNotFound(err) && !cluster.IsMissingKind(err):
			// the model then says no cluster is built for it
			cfg.ServicesAbsent[host] = true
		case err != nil:
			cfg.ServicesUnknown[host] = cluster.AccessProblem("get service "+ns+"/"+name, err)
			cfg.Unknown = append(cfg.Unknown, cfg.ServicesUnknown[host])
		default:
			found = append(found, otherSvcs[i])
			otherNamespaces = append(otherNamespaces, ns)
		}
	}
	if len(found) > 0 {
		datas := make([]*mesh.ServiceData, len(found))
		nss := make([]*corev1.Namespace, len(found))
		whats := make([]string, len(found))
		errs := make([]error, len(found))
		var fourth readgroup.Group
		var moreWhat string
		var moreErr error
		fourth.Go(func() { moreWhat, moreErr = rules.More(ctx, c, otherNamespaces, func(string) bool { return true }) })
		for i, other := range found {
			fourth.Go(func() { datas[i], nss[i], whats[i], errs[i] = fetchServiceData(ctx, c, other) })
		}
		fourth.Wait()
		if moreErr != nil {
			return out, moreWhat, moreErr
		}
		rules.Into(cfg)
		for i, other := range found {
			if what, err := addServiceData(cfg, other, datas[i], nss[i], whats[i], errs[i]); err != nil {
				cfg.Unknown = append(cfg.Unknown, cluster.AccessProblem(what, err))
			}
		}
	}
	if err := readNodesForSubsets(ctx, c, cfg); err != nil {
		return out, "", err
	}
	for _, sp := range svc.Spec.Ports {
		if t.Port != 0 && sp.Port != t.Port {
			continue
		}
		v, err := cfg.ViewFor(out.Caller, mesh.ServiceHost(svc.Name, svc.Namespace), sp.Port)
		if err != nil {
			return out, "work out the caller's view", err
		}
		out.Views = append(out.Views, v)
	}
	if len(out.Views) == 0 {
		return out, fmt.Sprintf("find port %d of service %s/%s", t.Port, t.Namespace, t.Service), fmt.Errorf("no such port: %w", cluster.ErrNotFound)
	}
	return out, "", nil
}

// networkReads are what split-horizon EDS needs: the network label of
// istiod's namespace (the network of pods that name none) and the
// Services labelled with a network (the gateways).
type networkReads struct {
	system      *corev1.Namespace
	systemName  string
	systemErr   error
	gateways    []corev1.Service
	gatewaysErr error
}

// fetchNetworks reads them at once: one GET and one label-selected list.
func fetchNetworks(ctx context.Context, c cluster.Cluster) networkReads {
	r := networkReads{systemName: istioconfig.ControlPlane(c)}
	var g readgroup.Group
	g.Go(func() { r.system, r.systemErr = c.GetNamespace(ctx, r.systemName) })
	g.Go(func() { r.gateways, r.gatewaysErr = cluster.NetworkGatewayServices(ctx, c) })
	g.Wait()
	return r
}

// into adds them to cfg; what was not read is said so, never taken as
// no network or no gateway.
func (r networkReads) into(cfg *mesh.Config) {
	cfg.SystemNamespace = r.systemName
	switch {
	case r.systemErr == nil:
		cfg.Namespaces[r.system.Name] = r.system
	case apierrors.IsNotFound(r.systemErr) && !cluster.IsMissingKind(r.systemErr):
		// no such namespace: no network label
	default:
		cfg.SystemNamespaceUnknown = cluster.AccessProblem("get namespace "+r.systemName, r.systemErr)
	}
	switch {
	case r.gatewaysErr == nil:
		cfg.NetworkGatewaysRead = true
		for i := range r.gateways {
			cfg.NetworkGatewayServices = append(cfg.NetworkGatewayServices, &r.gateways[i])
		}
	case errors.Is(r.gatewaysErr, cluster.ErrNotFound):
		cfg.NetworkGatewaysUnknown = strings.TrimSuffix(r.gatewaysErr.Error(), ": "+cluster.ErrNotFound.Error())
	default:
		cfg.NetworkGatewaysUnknown = cluster.AccessProblem("list the Services labelled "+mesh.LabelNetwork, r.gatewaysErr)
	}
}

// fetchServiceData reads a Service's EndpointSlices, its pods and its
// namespace (nil when unreadable) at once; what and err are the first
// failure, slices before pods.
func fetchServiceData(ctx context.Context, c cluster.Cluster, svc *corev1.Service) (sd *mesh.ServiceData, ns *corev1.Namespace, what string, err error) {
	sd = &mesh.ServiceData{Service: svc, Pods: map[string]*corev1.Pod{}, Nodes: map[string]*corev1.Node{}}
	var (
		pods              []corev1.Pod
		slicesErr, podErr error
		g                 readgroup.Group
	)
	g.Go(func() { sd.Slices, slicesErr = c.EndpointSlices(ctx, svc.Namespace, svc.Name) })
	if len(svc.Spec.Selector) > 0 {
		g.Go(func() { pods, podErr = c.ListPods(ctx, svc.Namespace, svc.Spec.Selector) })
	}
	g.Go(func() { ns, _ = c.GetNamespace(ctx, svc.Namespace) })
	g.Wait()
	if slicesErr != nil {
		return sd, nil, fmt.Sprintf("list endpointslices of %s/%s", svc.Namespace, svc.Name), slicesErr
	}
	if podErr != nil {
		return sd, nil, "list pods in " + svc.Namespace, podErr
	}
	for i := range pods {
		sd.Pods[pods[i].Name] = &pods[i]
	}
	findEndpointPods(ctx, c, sd)
	return sd, ns, "", nil
}

// maxPodLookups bounds the reads findEndpointPods makes for one Service:
// past it, the pods of further addresses are unknown, never guessed.
const maxPodLookups = 32

// findEndpointPods reads the pods behind the Service's endpoints that its
// selector did not list, as istiod finds them (mesh.ServiceData.PodOf):
// the pod a targetRef names, by name; for an address without targetRef,
// the pods of the endpoint's namespace with that IP. The reads go out
// together, after the slices; a Service whose endpoints all name pods the
// selector listed costs none.
func findEndpointPods(ctx context.Context, c cluster.Cluster, sd *mesh.ServiceData) {
	sd.PodsByIP, sd.PodsUnknown = map[string][]*corev1.Pod{}, map[string]string{}
	byIP := map[string]*corev1.Pod{}
	for _, p := range sd.Pods {
		if p.Status.PodIP != "" && !p.Spec.HostNetwork {
			byIP[p.Status.PodIP] = p // a pod network IP is one pod's
		}
	}
	type lookup struct{ ns, name, ip string }
	var lookups []lookup
	seen := map[lookup]bool{}
	for _, slice := range sd.Slices {
		ns := cmp.Or(slice.Namespace, sd.Service.Namespace)
		for _, ep := range slice.Endpoints {
			var want []lookup
			if ref := ep.TargetRef; ref != nil && ref.Kind == "Pod" {
				if ref.Namespace != ns || sd.Pods[ref.Name] != nil {
					continue // the model says why it is unknown, or has it
				}
				want = append(want, lookup{ns: ns, name: ref.Name})
			} else {
				for _, ip := range ep.Addresses {
					if p := byIP[ip]; p != nil && p.Namespace == ns {
						sd.PodsByIP[ip] = []*corev1.Pod{p}
						continue
					}
					want = append(want, lookup{ns: ns, ip: ip})
				}
			}
			for _, l := range want {
				if !seen[l] {
					seen[l] = true
					lookups = append(lookups, l)
				}
			}
		}
	}
	if len(lookups) > maxPodLookups {
		for _, l := range lookups[maxPodLookups:] {
			sd.PodsUnknown[l.name+l.ip] = fmt.Sprintf("not looked up: more than %d endpoints of %s name pods its selector does not list", maxPodLookups, sd.Service.Name)
		}
		lookups = lookups[:maxPodLookups]
	}
	pods := make([][]corev1.Pod, len(lookups))
	errs := make([]error, len(lookups))
	var g readgroup.Group
	for i, l := range lookups {
		g.Go(func() {
			if l.name != "" {
				var p *corev1.Pod
				if p, errs[i] = c.GetPod(ctx, l.ns, l.name); p != nil {
					pods[i] = []corev1.Pod{*p}
				}
				return
			}
			pods[i], errs[i] = cluster.PodsWithIP(ctx, c, l.ns, l.ip)
		})
	}
	g.Wait()
	for i, l := range lookups {
		switch err := errs[i]; {
		case l.name != "" && err == nil:
			sd.Pods[l.name] = &pods[i][0]
		case l.name != "" && apierrors.IsNotFound(err) && !cluster.IsMissingKind(err):
			// PodOf says so: istiod holds such an endpoint back.
		case l.name != "":
			sd.PodsUnknown[l.name] = cluster.AccessProblem("get pod "+l.ns+"/"+l.name, err)
		case err == nil:
			found := make([]*corev1.Pod, len(pods[i]))
			for j := range pods[i] {
				found[j] = &pods[i][j]
			}
			sd.PodsByIP[l.ip] = found
		case errors.Is(err, cluster.ErrNotFound):
			sd.PodsUnknown[l.ip] = strings.TrimSuffix(err.Error(), ": "+cluster.ErrNotFound.Error())
		default:
			sd.PodsUnknown[l.ip] = cluster.AccessProblem("find the pods of "+l.ns+" with IP "+l.ip, err)
		}
	}
}

// addServiceData adds what fetchServiceData read to cfg.
func addServiceData(cfg *mesh.Config, svc *corev1.Service, sd *mesh.ServiceData, ns *corev1.Namespace, what string, err error) (string, error) {
	cfg.Services[mesh.ServiceHost(svc.Name, svc.Namespace)] = sd
	if err != nil {
		return what, err
	}
	if ns != nil {
		cfg.Namespaces[ns.Name] = ns
	}
	return "", nil
}

// readNodesForSubsets reads the nodes of a Service's endpoints only when a
// DestinationRule subset selects on a label istiod takes from the node.
func readNodesForSubsets(ctx context.Context, c cluster.Cluster, cfg *mesh.Config) error {
	if !subsetsUseLocality(cfg) {
		return nil
	}
	for _, sd := range cfg.Services {
		pods := slices.Collect(maps.Values(sd.Pods))
		for _, found := range sd.PodsByIP {
			pods = append(pods, found...)
		}
		for _, p := range pods {
			name := p.Spec.NodeName
			if name == "" || sd.Nodes[name] != nil {
				continue
			}
			node, err := cluster.GetNode(ctx, c, name)
			if err != nil {
				sd.NodesUnknown = cluster.AccessProblem("get node "+name, err)
				cfg.Unknown = append(cfg.Unknown, sd.NodesUnknown+": the locality labels of its endpoints are unknown")
				continue
			}
			sd.Nodes[name] = node
		}
	}
	return nil
}

func subsetsUseLocality(cfg *mesh.Config) bool {
	for _, dr := range cfg.DestinationRules {
		for _, s := range dr.Spec.GetSubsets() {
			for k := range s.GetLabels() {
				if k == mesh.LabelRegion || k == mesh.LabelZone || k == mesh.LabelSubzone {
					return true
				}
			}
		}
	}
	return false
}

// routedHosts are the hosts the routes of host's VirtualServices send to:
// of every one that may route a port of host for the caller, since the
// one that does need not be the first (it has no route for the caller
// there, or no TCP route).
func routedHosts(cfg *mesh.Config, caller mesh.Caller, host string) []string {
	if caller.Gateway {
		return cfg.GatewayRoutedHosts(host)
	}
	seen := map[string]bool{}
	var out []string
	for _, vs := range cfg.VirtualServicesThatMayRoute(caller, host) {
		for _, proto := range []string{mesh.ProtocolHTTP, mesh.ProtocolTCP, mesh.ProtocolTLS} {
			for _, r := range mesh.RoutesOf(vs, 0, proto) {
				for _, d := range append(r.Destinations, r.Mirrors...) {
					if !seen[d.Host] {
						seen[d.Host] = true
						out = append(out, d.Host)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// serviceOfHost splits NAME.NAMESPACE.svc.cluster.local.
func serviceOfHost(host string) (name, ns string, ok bool) {
	parts := strings.Split(host, ".")
	if len(parts) != 5 || parts[2] != "svc" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// Read is the config model's answer for a target, read through c as the
// probes read it: what the caller's proxy (t.Source, or a meshed pod of
// the target's namespace) is given for each port judged, an error naming
// what could not be read. The fixes compute patches from it; the lab
// compares it with what a real istiod pushes.
func Read(ctx context.Context, c cluster.Cluster, t cluster.Target) (*mesh.Config, mesh.Caller, []*mesh.View, error) {
	cv, what, err := Fetch(ctx, c, t)
	if err != nil {
		return nil, mesh.Caller{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	return cv.Config, cv.Caller, cv.Views, nil
}
