package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The Kubernetes side of a scenario. Writing these objects by hand drifts
// (an EndpointSlice address no pod has, an Envoy host list that does not
// match the story); building them from one description keeps every
// cross-reference true.

const (
	istioVersion = "1.24.2"
	proxyImage   = "docker.io/istio/proxyv2:" + istioVersion
	pilotImage   = "docker.io/istio/pilot:" + istioVersion
	meshDomain   = "cluster.local"
	region       = "eu-west-1"
)

// node is one worker: its address, zone and the /24 its pods get IPs from.
type node struct {
	ip, zone, podCIDR string
}

var nodes = map[string]node{
	"worker-a": {"10.0.1.11", "eu-west-1a", "10.244.0"},
	"worker-b": {"10.0.1.12", "eu-west-1b", "10.244.1"},
	"worker-c": {"10.0.1.13", "eu-west-1c", "10.244.2"},
}

func nodeOf(name string) node {
	n, ok := nodes[name]
	if !ok {
		panic("unknown node " + name)
	}
	return n
}

// podIP is host's address in the node's pod CIDR.
func podIP(nodeName string, host int) string {
	return nodeOf(nodeName).podCIDR + "." + strconv.Itoa(host)
}

type objectKey struct{ namespace, name string }

type logKey struct {
	namespace, pod, container string
	previous                  bool
}

type serviceRecord struct {
	uid    string
	labels Object
}

// World is one scenario's cluster: objects grouped into manifest files,
// container logs, and the pods and services later objects refer to.
type World struct {
	name string
	now  time.Time
	// resourceVersion grows by 7 per object, like a busy API server's.
	resourceVersion int
	manifests       map[string][]Object
	logs            map[logKey][]string
	pods            map[objectKey]*Pod
	services        map[objectKey]serviceRecord
}

func newWorld(name string, now time.Time) *World {
	return &World{
		name:            name,
		now:             now,
		resourceVersion: 48100 + (hashInt(name)>>16)%5000,
		manifests:       map[string][]Object{},
		logs:            map[logKey][]string{},
		pods:            map[objectKey]*Pod{},
		services:        map[objectKey]serviceRecord{},
	}
}

func (w *World) add(file string, obj Object) Object {
	w.manifests[file] = append(w.manifests[file], obj)
	return obj
}

// objectUID is the object's metadata.uid: stable per scenario, kind,
// namespace and name, so owner references can be computed before the owner.
func (w *World) objectUID(kind, namespace, name string) string {
	return stableUID(w.name, kind, namespace, name)
}

// ObjectMeta is what meta() needs beyond kind, namespace and name.
type ObjectMeta struct {
	Labels, Annotations Object
	Owner               Object
	Extra               Object
}

func (w *World) meta(kind, namespace, name string, created time.Time, m ObjectMeta) Object {
	w.resourceVersion += 7
	out := Object{
		{"name", name},
		{"uid", w.objectUID(kind, namespace, name)},
		{"resourceVersion", strconv.Itoa(w.resourceVersion)},
		{"creationTimestamp", apiTime(created)},
	}
	if namespace != "" {
		out.Set("namespace", namespace)
	}
	if len(m.Labels) > 0 {
		out.Set("labels", m.Labels)
	}
	if len(m.Annotations) > 0 {
		out.Set("annotations", m.Annotations)
	}
	if m.Owner != nil {
		out.Set("ownerReferences", []Object{m.Owner})
	}
	for _, f := range m.Extra {
		out.Set(f.Key, f.Value)
	}
	return out
}

// log appends lines to a container's log (its previous instance's when
// previous); they are sorted by time when written.
func (w *World) log(namespace, pod, container string, previous bool, lines ...string) {
	k := logKey{namespace, pod, container, previous}
	w.logs[k] = append(w.logs[k], lines...)
}

// Namespace adds a namespace; injection "" leaves the istio-injection
// label off.
func (w *World) Namespace(name string, created time.Time, injection string) Object {
	labels := Object{{"kubernetes.io/metadata.name", name}}
	if injection != "" {
		labels.Set("istio-injection", injection)
	}
	return w.add("namespaces.yaml", Object{
		{"apiVersion", "v1"}, {"kind", "Namespace"},
		{"metadata", w.meta("Namespace", "", name, created, ObjectMeta{Labels: labels})},
		{"spec", Object{{"finalizers", []string{"kubernetes"}}}},
		{"status", Object{{"phase", "Active"}}},
	})
}

// ServicePort is one port of a Service.
type ServicePort struct {
	Name         string
	Port, Target int
}

// ServiceSpec describes a ClusterIP Service.
type ServiceSpec struct {
	Namespace, Name, ClusterIP string
	Selector                   Object
	Created                    time.Time
	Ports                      []ServicePort
	// Labels default to app: Name.
	Labels Object
	// File defaults to NAMESPACE.yaml.
	File string
}

func (w *World) Service(s ServiceSpec) Object {
	labels := s.Labels
	if labels == nil {
		labels = Object{{"app", s.Name}}
	}
	var ports []Object
	for _, p := range s.Ports {
		ports = append(ports, Object{{"name", p.Name}, {"port", p.Port}, {"protocol", "TCP"}, {"targetPort", p.Target}})
	}
	metadata := w.meta("Service", s.Namespace, s.Name, s.Created, ObjectMeta{Labels: labels})
	w.services[objectKey{s.Namespace, s.Name}] = serviceRecord{uid: w.objectUID("Service", s.Namespace, s.Name), labels: labels}
	file := s.File
	if file == "" {
		file = s.Namespace + ".yaml"
	}
	return w.add(file, Object{
		{"apiVersion", "v1"}, {"kind", "Service"},
		{"metadata", metadata},
		{"spec", Object{
			{"clusterIP", s.ClusterIP}, {"clusterIPs", []string{s.ClusterIP}}, {"internalTrafficPolicy", "Cluster"},
			{"ipFamilies", []string{"IPv4"}}, {"ipFamilyPolicy", "SingleStack"},
			{"ports", ports},
			{"selector", s.Selector}, {"sessionAffinity", "None"}, {"type", "ClusterIP"},
		}},
		{"status", Object{{"loadBalancer", Object{}}}},
	})
}

// Endpoint is one pod in an EndpointSlice with its conditions.
type Endpoint struct {
	Pod                         string
	Ready, Serving, Terminating bool
}

// ready lists pods as ready, serving endpoints.
func ready(pods ...*Pod) []Endpoint {
	out := make([]Endpoint, len(pods))
	for i, p := range pods {
		out[i] = Endpoint{Pod: p.Name, Ready: true, Serving: true}
	}
	return out
}

// EndpointSlice adds the slice the endpointslice controller would write
// for service, named name (service-XXXXX); every endpoint must name a pod
// already in the world.
func (w *World) EndpointSlice(namespace, service, name string, endpoints []Endpoint, portName string, port int, created time.Time) Object {
	svc, ok := w.services[objectKey{namespace, service}]
	if !ok {
		panic(fmt.Sprintf("EndpointSlice: no service %s/%s", namespace, service))
	}
	var eps []Object
	for _, e := range endpoints {
		p, ok := w.pods[objectKey{namespace, e.Pod}]
		if !ok {
			panic(fmt.Sprintf("EndpointSlice %s: no pod %s/%s", service, namespace, e.Pod))
		}
		eps = append(eps, Object{
			{"addresses", []string{p.IP}},
			{"conditions", Object{{"ready", e.Ready}, {"serving", e.Serving}, {"terminating", e.Terminating}}},
			{"nodeName", p.Node},
			{"targetRef", Object{{"kind", "Pod"}, {"name", e.Pod}, {"namespace", namespace}, {"uid", p.UID}}},
			{"zone", nodeOf(p.Node).zone},
		})
	}
	labels := Object{
		{"endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io"},
		{"kubernetes.io/service-name", service},
	}
	for _, f := range svc.labels {
		labels.Set(f.Key, f.Value)
	}
	if !strings.HasPrefix(name, service+"-") {
		panic(fmt.Sprintf("EndpointSlice %s of service %s: the controller names it %s-XXXXX", name, service, service))
	}
	return w.add(namespace+".yaml", Object{
		{"apiVersion", "discovery.k8s.io/v1"}, {"kind", "EndpointSlice"},
		{"addressType", "IPv4"},
		{"endpoints", eps},
		{"metadata", w.meta("EndpointSlice", namespace, name, created, ObjectMeta{
			Labels:      labels,
			Annotations: Object{{"endpoints.kubernetes.io/last-change-trigger-time", apiTime(created)}},
			Owner: Object{{"apiVersion", "v1"}, {"blockOwnerDeletion", true}, {"controller", true}, {"kind", "Service"},
				{"name", service}, {"uid", svc.uid}},
			Extra: Object{{"generateName", service + "-"}},
		})},
		{"ports", []Object{{{"name", portName}, {"port", port}, {"protocol", "TCP"}}}},
	})
}

// IstioObject adds an Istio resource to NAMESPACE-istio.yaml.
func (w *World) IstioObject(apiVersion, kind, namespace, name string, created time.Time, spec any) Object {
	return w.add(namespace+"-istio.yaml", Object{
		{"apiVersion", apiVersion}, {"kind", kind},
		{"metadata", w.meta(kind, namespace, name, created, ObjectMeta{Extra: Object{{"generation", 1}}})},
		{"spec", spec},
	})
}

func (w *World) rsOwner(namespace, replicaSet string) Object {
	return Object{{"apiVersion", "apps/v1"}, {"blockOwnerDeletion", true}, {"controller", true}, {"kind", "ReplicaSet"},
		{"name", replicaSet}, {"uid", w.objectUID("ReplicaSet", namespace, replicaSet)}}
}

// sortedPods lists the pods by namespace and name, the order istiod's
// syncz uses.
func (w *World) sortedPods() []*Pod {
	keys := make([]objectKey, 0, len(w.pods))
	for k := range w.pods {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
	out := make([]*Pod, len(keys))
	for i, k := range keys {
		out[i] = w.pods[k]
	}
	return out
}
