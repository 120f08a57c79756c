// Package cluster is how the probes read a cluster: the read-only Cluster
// interface, the triage Target, the per-wave read cache, and the one-line
// explanations of read errors. Its subpackages implement Cluster: live
// (client-go against a real API server), recorded (a recorded incident
// served from memory) and clientset (the object reads both share).
// Nothing here writes: the confirm-first actions live in probes/actions.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Cluster is everything a probe may read. Reads are narrow on purpose: by name,
// or by label selector inside one namespace, never cluster-wide, so a triage
// costs the same on a 10-pod cluster as on a 10,000-pod one. Implementations:
// live (client-go against a real API server) and recorded (a recorded
// incident served from memory).
//
// Every method honours ctx's deadline. Errors from the API server keep their
// apimachinery type so that AccessProblem can name a missing RBAC verb.
type Cluster interface {
	// Info names the cluster for the status bar and the incident log.
	Info() ClusterInfo
	// ServerVersion is the Kubernetes server's git version, e.g. "v1.31.2".
	ServerVersion(ctx context.Context) (string, error)

	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
	GetService(ctx context.Context, namespace, name string) (*corev1.Service, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// ListPods lists the pods of one namespace matching selector (nil or
	// empty selects none: a Service without a selector selects no pods).
	ListPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error)
	// EndpointSlices returns the service's EndpointSlices; where the API has
	// none it converts the core Endpoints object, so callers see one shape.
	EndpointSlices(ctx context.Context, namespace, service string) ([]discoveryv1.EndpointSlice, error)
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)

	DestinationRules(ctx context.Context, namespace string) ([]*networkingv1.DestinationRule, error)
	VirtualServices(ctx context.Context, namespace string) ([]*networkingv1.VirtualService, error)
	ServiceEntries(ctx context.Context, namespace string) ([]*networkingv1.ServiceEntry, error)
	Sidecars(ctx context.Context, namespace string) ([]*networkingv1.Sidecar, error)
	PeerAuthentications(ctx context.Context, namespace string) ([]*securityv1.PeerAuthentication, error)

	// EnvoyAdmin GETs path (e.g. "/clusters?format=json") from the Envoy admin
	// API of pod's istio-proxy.
	EnvoyAdmin(ctx context.Context, pod PodRef, path string) ([]byte, error)
	// Logs reads a container's log, bounded by opts.
	Logs(ctx context.Context, pod PodRef, opts LogOptions) ([]byte, error)
	// Istiod GETs path (e.g. "/debug/syncz") from the monitoring port of
	// istiod pod replica in the control-plane namespace, or, when replica
	// is "", of a Running (preferably Ready) istiod pod it picks.
	Istiod(ctx context.Context, replica, path string) ([]byte, error)
}

// ClusterInfo identifies the cluster a session talks to.
type ClusterInfo struct {
	Context string `json:"context"`
	Server  string `json:"server"`
	// ControlPlaneNamespace is where istiod and the mesh config live (istio-system).
	ControlPlaneNamespace string `json:"control_plane_namespace"`
}

// LogOptions bound a log read: a triage never pulls a whole log.
type LogOptions struct {
	Container  string
	Since      time.Duration // 0: no time bound
	LimitBytes int64         // 0: DefaultLogLimit
	Previous   bool          // the previous (crashed) instance
	// TailLines keeps only the newest lines (0: from the start of the
	// window). The API server applies LimitBytes after it, from the oldest
	// of those lines, so a tail that fits the byte limit yields the newest
	// entries: what an incident needs, not the first 4 MB of the window.
	TailLines int64
}

// DefaultLogLimit caps a log read when the caller sets no limit.
const DefaultLogLimit = 4 << 20

// Where a live cluster reaches Envoy admin and istiod, and where the control
// plane lives unless told otherwise.
const (
	EnvoyAdminPort       = 15000
	IstiodMonitoringPort = 15014
	DefaultControlPlane  = "istio-system"
)

// ErrNotFound is returned by Cluster implementations for absent recorded data
// (a scenario without an Envoy dump for a pod); API "not found" errors keep
// their apimachinery type.
var ErrNotFound = errors.New("not found")

// ErrNotInInput: a source made from exported documents holds nothing of
// what was asked (a namespace the user did not export), which says
// nothing of the cluster.
var ErrNotInInput = errors.New("not in the input")

// UnreachableError says a pod's Envoy admin or istiod could not be reached.
type UnreachableError struct {
	What string // "Envoy admin of default/web-1", "istiod"
	Err  error
}

func (e *UnreachableError) Error() string { return fmt.Sprintf("%s unreachable: %v", e.What, e.Err) }
func (e *UnreachableError) Unwrap() error { return e.Err }

// NoRunningIstiod is the error of an istiod read with no Running istiod pod
// (app=istiod) in ns to ask: one wording live and replayed, so a fact that
// quotes it reads the same from either.
func NoRunningIstiod(ns string) *UnreachableError {
	return &UnreachableError{What: "istiod", Err: fmt.Errorf("no Running istiod pod (app=istiod) in %s", ns)}
}

// NodeGetter is the one cluster-scoped read, optional: the config model
// needs a node's locality labels only when a DestinationRule subset selects
// on them, so a triage without it (or without RBAC for nodes) still runs.
type NodeGetter interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// GetNode reads a node through c when c can; ErrNotFound when it cannot.
func GetNode(ctx context.Context, c Cluster, name string) (*corev1.Node, error) {
	if ng, ok := c.(NodeGetter); ok {
		return ng.GetNode(ctx, name)
	}
	return nil, fmt.Errorf("%w: this source has no nodes", ErrNotFound)
}

// PodIPFinder finds the pods that have an IP, in every namespace the
// reader may list: how a caller's address in an inbound access log
// becomes a pod. Optional, like NodeGetter.
type PodIPFinder interface {
	PodsByIP(ctx context.Context, ip string) ([]corev1.Pod, error)
}

// PodsByIP finds the pods with ip through c when c can; ErrNotFound when
// the source cannot search by IP.
func PodsByIP(ctx context.Context, c Cluster, ip string) ([]corev1.Pod, error) {
	if f, ok := c.(PodIPFinder); ok {
		return f.PodsByIP(ctx, ip)
	}
	return nil, fmt.Errorf("%w: this source cannot find pods by IP", ErrNotFound)
}

// SocketLister says which sockets a pod's network namespace holds: the
// `netstat -natpw` istioctl's bug-report runs in each proxy's istio-proxy
// container (proxies/NS/POD/netstat). Reading it live is an exec, which the
// read-only role does not grant, so only inputs that hold it (a bug report)
// are one. Optional, like NodeGetter.
type SocketLister interface {
	Netstat(ctx context.Context, pod PodRef) ([]byte, error)
}

// ErrNoNetstat: the source holds no netstat of the pod, or cannot read one.
var ErrNoNetstat = fmt.Errorf("%w: no netstat of the pod (an istioctl bug-report holds one per proxy; live it is `kubectl exec POD -c istio-proxy -- netstat -ltn`)", ErrNotFound)

// Netstat reads pod's netstat through c when c can; ErrNoNetstat when the
// source cannot.
func Netstat(ctx context.Context, c Cluster, pod PodRef) ([]byte, error) {
	if f, ok := c.(SocketLister); ok {
		return f.Netstat(ctx, pod)
	}
	return nil, ErrNoNetstat
}

// PodIPSearcher finds the pods of one namespace that have an IP: how istiod
// finds the pod behind an endpoint address whose EndpointSlice entry names
// none (getPod without targetRef). Optional, like NodeGetter. An empty
// answer says that no pod of the namespace has the IP; a source that
// cannot say so (an input that may not hold every pod) answers ErrNotFound
// when it finds none.
type PodIPSearcher interface {
	PodsWithIP(ctx context.Context, namespace, ip string) ([]corev1.Pod, error)
}

// PodsWithIP searches namespace's pods by ip through c when c can;
// ErrNotFound when the source cannot.
func PodsWithIP(ctx context.Context, c Cluster, namespace, ip string) ([]corev1.Pod, error) {
	if f, ok := c.(PodIPSearcher); ok {
		return f.PodsWithIP(ctx, namespace, ip)
	}
	return nil, fmt.Errorf("%w: this source cannot search pods by IP", ErrNotFound)
}

// NetworkGatewayLister lists, across namespaces, the Services labelled
// topology.istio.io/network: the network gateways istiod finds for
// split-horizon EDS. One label-selected list. Optional, like NodeGetter;
// a source that cannot say it holds every one answers ErrNotFound when it
// finds none.
type NetworkGatewayLister interface {
	NetworkGatewayServices(ctx context.Context) ([]corev1.Service, error)
}

// NetworkGatewayServices lists the network-labelled Services through c
// when c can; ErrNotFound when the source cannot.
func NetworkGatewayServices(ctx context.Context, c Cluster) ([]corev1.Service, error) {
	if f, ok := c.(NetworkGatewayLister); ok {
		return f.NetworkGatewayServices(ctx)
	}
	return nil, fmt.Errorf("%w: this source cannot list Services by label across namespaces", ErrNotFound)
}

// EndpointsHolder is a source made from an input (a dump, a recording)
// that says whether the input holds any EndpointSlice or Endpoints at all.
// One without them (`kubectl get all` leaves them out) says nothing of a
// selector-less Service's endpoints: none read is not none.
type EndpointsHolder interface {
	HoldsEndpoints() bool
}

// PodsHolder is a source made from an input that says whether the input
// holds any pod of a namespace ("" for any namespace): a dump of the
// application's namespaces says nothing of the control plane's pods.
type PodsHolder interface {
	HoldsPods(namespace string) bool
}

// InputLacksPods reports a source whose input holds no pod of namespace
// ("": of any namespace); false for a live cluster, which answers for
// itself.
func InputLacksPods(c Cluster, namespace string) bool {
	h, ok := Uncached(c).(PodsHolder)
	return ok && !h.HoldsPods(namespace)
}

// InputLacksEndpoints reports a source whose input holds no EndpointSlice
// or Endpoints at all; false for a live cluster, which answers for itself.
func InputLacksEndpoints(c Cluster) bool {
	h, ok := Uncached(c).(EndpointsHolder)
	return ok && !h.HoldsEndpoints()
}
