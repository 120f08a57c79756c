package mesh

import (
	"fmt"
	"sort"
	"strings"

	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels istiod adds to every Kubernetes endpoint besides its pod's labels
// (pilot's serviceregistry/util/label AugmentLabels): a DestinationRule
// subset may select on them.
const (
	LabelRegion   = "topology.kubernetes.io/region"
	LabelZone     = "topology.kubernetes.io/zone"
	LabelSubzone  = "topology.istio.io/subzone"
	LabelHostname = "kubernetes.io/hostname"
	LabelCluster  = "topology.istio.io/cluster"
	LabelNetwork  = "topology.istio.io/network"
	// labelLocality is the pod label that overrides the node's locality,
	// as region.zone.subzone (labels cannot hold "/").
	labelLocality = "istio-locality"
)

// Endpoint is one address istiod gives proxies for a Service port.
type Endpoint struct {
	Address string
	// Port is the port the caller's proxy connects to: the targetPort the
	// EndpointSlice carries for the service port.
	Port int32
	// Pod is the pod behind it: the one its targetRef names, else the one
	// istiod finds by its IP in the endpoint's namespace; "" for an address
	// no pod has (a selector-less Service's external address).
	Pod string
	// PodUnknown says why the pod behind the address is not known: a
	// targetRef to a pod that was not found or not read, an address whose
	// pods were not searched. Its labels, sidecar and tlsMode are then
	// unknown, and so is every verdict that depends on them (subset
	// selection, the TLS it gets and accepts). "" when the pod is known, or
	// known to be none.
	PodUnknown string
	// PodExpected: the endpoint's targetRef names a pod, so istiod waits
	// for that pod and sends no endpoint for the address until it has it
	// (getPod's expectPod).
	PodExpected bool
	// ReadyUnknown says why the endpoint's readiness is not known (an
	// input without EndpointSlices whose pod carries no Ready condition):
	// it is then neither serving nor not, and verdicts on it wait.
	ReadyUnknown string
	Node         string
	Ready        bool
	Terminating  bool
	// Labels are the pod's labels with istiod's locality, host, cluster
	// and network labels added: what a subset selects on.
	Labels map[string]string
	// LabelsUnknown names the augmentation labels whose value could not be
	// read (the node was not readable).
	LabelsUnknown []string
	Sidecar       SidecarKind
	// TLSModeIstio is the pod label security.istio.io/tlsMode=istio, which
	// auto mTLS follows.
	TLSModeIstio bool
	// Ambient: the pod is enrolled in ambient (no sidecar): its ztunnel
	// terminates HBONE and enforces its PeerAuthentication.
	Ambient bool
	// HBONE: ztunnel and sidecars reach the pod through an HBONE tunnel
	// (AcceptsHBONE).
	HBONE bool
	// Namespace and Workload are the pod's namespace and workload as
	// istiod's endpoint builder names them (EndpointWorkloadName); "" for
	// an address without a known pod.
	Namespace, Workload string
}

// Meshed reports an endpoint a proxy terminates mTLS for: a sidecar, or
// ztunnel for an enrolled pod.
func (e Endpoint) Meshed() bool { return e.Sidecar != SidecarNone || e.Ambient }

// PodKnown reports an endpoint whose pod is known: what its sidecar
// accepts can be judged. An address no pod has is known to have none, but
// what serves it (a VM, a database) is not Istio's to say.
func (e Endpoint) PodKnown() bool { return e.Pod != "" && e.PodUnknown == "" }

// Serving reports whether Envoy sends requests to it: ready and not
// terminating.
func (e Endpoint) Serving() bool { return e.Ready && !e.Terminating }

// Endpoints are the Service's endpoints for a service port, with their
// labels as istiod sees them.
func (c *Config) Endpoints(sd *ServiceData, port int32) []Endpoint {
	var sp *corev1.ServicePort
	for i := range sd.Service.Spec.Ports {
		if sd.Service.Spec.Ports[i].Port == port {
			sp = &sd.Service.Spec.Ports[i]
		}
	}
	var out []Endpoint
	seen := map[string]bool{}
	if len(sd.Slices) == 0 && len(sd.Service.Spec.Selector) > 0 && len(sd.Pods) > 0 {
		// A Service that selects pods always has slices in a live cluster
		// (the EndpointSlice controller writes them); none at all means the
		// input left them out, as `kubectl get all` does. List the selected
		// pods as the controller would.
		return c.endpointsFromPods(sd, sp)
	}
	for _, slice := range sd.Slices {
		if slice.AddressType == discoveryv1.AddressTypeFQDN {
			continue // istiod reads no FQDN slices
		}
		target, ok := slicePort(slice, sp)
		if !ok {
			continue
		}
		ns := slice.Namespace
		if ns == "" {
			ns = sd.Service.Namespace
		}
		for _, ep := range slice.Endpoints {
			for _, addr := range ep.Addresses {
				if seen[addr] {
					continue
				}
				seen[addr] = true
				e := Endpoint{Address: addr, Port: target, Ready: ep.Conditions.Ready == nil || *ep.Conditions.Ready,
					Terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating}
				if ep.NodeName != nil {
					e.Node = *ep.NodeName
				}
				pod, unknown := sd.PodOf(ns, ep.TargetRef, addr)
				e.PodUnknown = unknown
				switch {
				case ep.TargetRef != nil && ep.TargetRef.Kind == "Pod":
					e.Pod, e.PodExpected = ep.TargetRef.Name, true
				case pod != nil:
					e.Pod = pod.Name
				}
				c.describeEndpoint(&e, pod, sd)
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// EndpointsInferred reports that the Service's endpoints come from its
// selected pods because the input held no EndpointSlice or Endpoints.
func (sd *ServiceData) EndpointsInferred() bool {
	return len(sd.Slices) == 0 && len(sd.Service.Spec.Selector) > 0 && len(sd.Pods) > 0
}

func (c *Config) endpointsFromPods(sd *ServiceData, sp *corev1.ServicePort) []Endpoint {
	if sp == nil {
		return nil
	}
	names := make([]string, 0, len(sd.Pods))
	for n := range sd.Pods {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Endpoint
	for _, n := range names {
		pod := sd.Pods[n]
		if pod.Status.PodIP == "" || !LabelsMatch(sd.Service.Spec.Selector, pod.Labels) {
			continue
		}
		port, ok := TargetPortOf(*sp, pod)
		if !ok {
			continue // the controller lists no endpoint for a named port the pod lacks
		}
		ready, _ := PodReady(pod)
		e := Endpoint{Address: pod.Status.PodIP, Port: port, Pod: pod.Name, Ready: ready, Terminating: pod.DeletionTimestamp != nil}
		if !hasReadyCondition(pod) {
			// A hand-written pod without status conditions: whether the
			// controller would list it ready is not known.
			e.ReadyUnknown = "pod " + pod.Name + " has no Ready condition in the input, and the input has no EndpointSlice to say"
		}
		c.describeEndpoint(&e, pod, sd)
		out = append(out, e)
	}
	return out
}

func hasReadyCondition(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return true
		}
	}
	return false
}

// TargetPortOf resolves a service port's targetPort on pod, as the
// EndpointSlice controller does: a number as is (the service port when
// unset), a name through the pod's container ports.
func TargetPortOf(sp corev1.ServicePort, pod *corev1.Pod) (int32, bool) {
	switch {
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal {
					return cp.ContainerPort, true
				}
			}
		}
		return 0, false
	case sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal, true
	}
	return sp.Port, true
}

// slicePort finds the slice's port for the service port: by name, as the
// EndpointSlice controller names them after the service ports.
func slicePort(slice discoveryv1.EndpointSlice, sp *corev1.ServicePort) (int32, bool) {
	if sp == nil {
		return 0, false
	}
	if len(slice.Ports) == 0 {
		// A hand-made slice without ports carries the targetPort as is.
		if sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0 {
			return sp.TargetPort.IntVal, true
		}
		return sp.Port, true
	}
	for _, p := range slice.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if name == sp.Name && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

// PodOf finds the pod behind an endpoint address of namespace ns as
// istiod's getPod does: the pod its targetRef names (by the targetRef's
// own namespace), else a pod of ns whose IP it is, among the pods istiod
// indexes by IP (Running or Pending with that status.podIP, Ready, not
// being deleted). unknown says why the pod cannot be told: a targetRef to
// a pod not read or not found, several pods with the IP, an address whose
// pods were not searched. A nil pod with no unknown is an address that no
// pod has.
func (sd *ServiceData) PodOf(ns string, ref *corev1.ObjectReference, addr string) (pod *corev1.Pod, unknown string) {
	if ref != nil && ref.Kind == "Pod" {
		switch {
		case ref.Namespace == "":
			return nil, fmt.Sprintf("the endpoint's targetRef names pod %s without a namespace (istiod finds no pod by it, and sends no endpoint for %s until it does)", ref.Name, addr)
		case ref.Namespace != ns:
			return nil, fmt.Sprintf("the endpoint's targetRef names pod %s/%s of another namespace, which was not read", ref.Namespace, ref.Name)
		case sd.Pods[ref.Name] != nil:
			return sd.Pods[ref.Name], ""
		case sd.PodsUnknown[ref.Name] != "":
			return nil, sd.PodsUnknown[ref.Name]
		}
		return nil, fmt.Sprintf("pod %s/%s, which the endpoint %s names, was not found (istiod sends no endpoint for the address until it sees the pod)", ns, ref.Name, addr)
	}
	if why := sd.PodsUnknown[addr]; why != "" {
		return nil, why
	}
	candidates, searched := sd.PodsByIP[addr]
	if !searched {
		return nil, fmt.Sprintf("no pod was looked for by the address %s (its endpoint names none)", addr)
	}
	var indexed []*corev1.Pod
	for _, p := range candidates {
		if p.Namespace == ns && IndexedByIP(p, addr) {
			indexed = append(indexed, p)
		}
	}
	switch len(indexed) {
	case 0:
		return nil, ""
	case 1:
		return indexed[0], ""
	}
	return nil, fmt.Sprintf("%d pods of %s have the IP %s (host network?): istiod takes any one of them", len(indexed), ns, addr)
}

// IndexedByIP reports whether istiod's pod cache finds pod by the address
// ip (PodCache.podsByIP): its status.podIP, a phase that is not final, no
// deletion under way, and Ready. A pod that is not ready is not found by
// IP: an endpoint without targetRef to it gets none of its labels.
func IndexedByIP(pod *corev1.Pod, ip string) bool {
	if pod.Status.PodIP != ip || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	ready, _ := PodReady(pod)
	return ready
}

// describeEndpoint fills in what istiod knows of the endpoint's pod. An
// endpoint without a known pod gets the labels istiod gives any address
// (cluster, network); one whose pod is unknown has its pod's labels
// unknown too.
func (c *Config) describeEndpoint(e *Endpoint, pod *corev1.Pod, sd *ServiceData) {
	e.Labels = map[string]string{}
	e.Sidecar = SidecarNone
	node := ""
	if pod != nil {
		for k, v := range pod.Labels {
			e.Labels[k] = v
		}
		e.Sidecar = PodSidecar(pod)
		e.TLSModeIstio = pod.Labels[label.SecurityTlsMode.Name] == "istio"
		e.Ambient = e.Sidecar == SidecarNone && DataPlaneOf(pod, nil).Enrolled()
		e.HBONE = AcceptsHBONE(pod)
		e.Namespace, e.Workload = pod.Namespace, EndpointWorkloadName(pod)
		if e.Node == "" {
			e.Node = pod.Spec.NodeName
		}
		// istiod's endpoint builder takes the host and the locality from
		// the pod's node, not from the slice.
		node = pod.Spec.NodeName
	}
	clusterID := c.ClusterID
	if clusterID == "" {
		clusterID = DefaultClusterID
	}
	e.Labels[LabelCluster] = clusterID
	if node != "" {
		e.Labels[LabelHostname] = node
	}
	// buildIstioEndpoint always sets the network label, "" when the
	// endpoint is on no named network: a subset selecting network "" takes
	// it.
	e.Labels[LabelNetwork] = c.network(pod)
	if (pod == nil || pod.Labels[LabelNetwork] == "") && c.SystemNamespaceUnknown != "" {
		// istiod's namespace, whose label names the network, was not read
		e.LabelsUnknown = append(e.LabelsUnknown, LabelNetwork)
	}
	if pod == nil {
		return // no pod: no locality
	}
	region, zone, subzone, known := c.locality(pod, sd.Nodes[node])
	if !known {
		e.LabelsUnknown = append(e.LabelsUnknown, LabelRegion, LabelZone, LabelSubzone)
		return
	}
	for k, v := range map[string]string{LabelRegion: region, LabelZone: zone, LabelSubzone: subzone} {
		if v != "" {
			e.Labels[k] = v
		}
	}
}

// locality is the endpoint's region, zone and subzone: the pod's
// istio-locality label, else its node's topology labels. known is false
// when neither could be read.
func (c *Config) locality(pod *corev1.Pod, node *corev1.Node) (region, zone, subzone string, known bool) {
	if pod != nil {
		if v := pod.Labels[labelLocality]; v != "" {
			sep := "."
			if strings.Contains(v, "/") {
				sep = "/"
			}
			parts := strings.SplitN(v, sep, 3)
			for len(parts) < 3 {
				parts = append(parts, "")
			}
			return parts[0], parts[1], parts[2], true
		}
	}
	if node == nil {
		return "", "", "", false
	}
	region, zone = node.Labels[LabelRegion], node.Labels[LabelZone]
	if region == "" {
		region = node.Labels["failure-domain.beta.kubernetes.io/region"]
	}
	if zone == "" {
		zone = node.Labels["failure-domain.beta.kubernetes.io/zone"]
	}
	return region, zone, node.Labels[LabelSubzone], true
}

// network is the pod's network: its own label, else the label of the
// Istio system namespace (istiod's own network), as istiod reads it.
func (c *Config) network(pod *corev1.Pod) string {
	if pod != nil && pod.Labels[LabelNetwork] != "" {
		return pod.Labels[LabelNetwork]
	}
	if ns := c.Namespaces[c.systemNamespace()]; ns != nil {
		return ns.Labels[LabelNetwork]
	}
	return ""
}

// systemNamespace is istiod's namespace.
func (c *Config) systemNamespace() string {
	if c.SystemNamespace != "" {
		return c.SystemNamespace
	}
	return c.RootNamespace
}

// SelectsEndpoint reports whether a subset's labels select the endpoint as
// istiod's labels.Instance.SubsetOf does (each label present with that
// value: a subset label "" does not select an endpoint without the
// label), and, when that depends on a label istiod adds but could not be
// read here, says so instead of guessing.
func SelectsEndpoint(subset map[string]string, e Endpoint) (selects bool, unknown string) {
	for k, v := range subset {
		got, ok := e.Labels[k]
		if !ok && contains(e.LabelsUnknown, k) {
			return false, fmt.Sprintf("label %s of endpoint %s (the node %s was not readable)", k, e.Address, e.Node)
		}
		if !ok || got != v {
			return false, ""
		}
	}
	return true, ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
