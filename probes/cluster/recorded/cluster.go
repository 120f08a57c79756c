package recorded

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/clientset"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Cluster serves a Scenario as a probes.Cluster: objects through fake
// clientsets read by the same objects.Reader the live cluster uses, and the
// recorded Envoy admin, log and istiod data from memory. Safe for concurrent
// probes.
type Cluster struct {
	clientset.Reader
	s    *Scenario
	info cluster.ClusterInfo
	// logNow is a recorded scenario's "now", against which
	// LogOptions.Since is measured: when it was captured, else the newest
	// timestamp in its logs.
	logNow time.Time
	// implied are namespaces objects are in without a recorded Namespace.
	implied map[string]bool

	// remotes serve the recording's remote clusters (remotes.go).
	remotes []cluster.Remote

	mu    sync.Mutex
	reads map[envoyRead]int
}

type envoyRead struct {
	pod  cluster.PodRef
	path string
}

var _ cluster.Cluster = (*Cluster)(nil)

// NewCluster loads s into fake clientsets. It fails on an object the fake
// API cannot hold (e.g. two objects with one name), never silently.
func NewCluster(s *Scenario) (cluster.Cluster, error) {
	return newCluster(s)
}

func newCluster(s *Scenario) (*Cluster, error) {
	kube := kubefake.NewClientset()
	istio := istiofake.NewSimpleClientset()
	for _, obj := range s.Objects {
		if _, ok := obj.(*gatewayv1.Gateway); ok {
			continue // served from s.Objects (GatewayAPIGateways): no fake clientset of ours holds the kind
		}
		tracker := kube.Tracker()
		switch {
		case isIstio(obj):
			tracker = istio.Tracker()
		case !isKube(obj):
			// A kind no clientset of ours holds and no read asks for (a
			// Gateway API HTTPRoute of a recording): kept in s.Objects,
			// never a reason to refuse the input.
			continue
		}
		if err := addTracked(tracker, obj.DeepCopyObject()); err != nil {
			return nil, fmt.Errorf("scenario %s: load %s: %w", s.Name, describe(obj), err)
		}
	}
	if s.ServerVersion != "" {
		disc, ok := kube.Discovery().(*fakediscovery.FakeDiscovery)
		if !ok {
			return nil, fmt.Errorf("scenario %s: fake discovery has type %T", s.Name, kube.Discovery())
		}
		disc.FakedServerVersion = versionInfo(s.ServerVersion)
	}
	cp := s.ControlPlaneNamespace
	if cp == "" {
		cp = cluster.DefaultControlPlane
	}
	logNow := s.CapturedAt
	if logNow.IsZero() {
		logNow = newestTimestamp(s.Logs)
	}
	implied := map[string]bool{}
	for _, ns := range append(manifests.ImpliedNamespaces(s.Objects), s.ImpliedNamespaces...) {
		implied[ns] = true
	}
	var remotes []cluster.Remote
	for _, r := range s.Remotes {
		rc, err := newCluster(r.Scenario)
		if err != nil {
			return nil, fmt.Errorf("remote cluster %s: %w", r.Context, err)
		}
		remotes = append(remotes, cluster.Remote{Context: r.Context, Cluster: rc})
	}
	return &Cluster{
		Reader:  clientset.Reader{Kube: kube, Istio: istio},
		s:       s,
		info:    cluster.ClusterInfo{Context: s.Context, Server: s.Source, ControlPlaneNamespace: cp},
		logNow:  logNow,
		implied: implied,
		remotes: remotes,
	}, nil
}

// NewClusterWithInfo is NewCluster with the identity the caller gives (for
// --manifests, where the kube context named on the command line is shown).
func NewClusterWithInfo(s *Scenario, info cluster.ClusterInfo) (cluster.Cluster, error) {
	c, err := newCluster(s)
	if err != nil {
		return nil, err
	}
	if info.ControlPlaneNamespace == "" {
		info.ControlPlaneNamespace = c.info.ControlPlaneNamespace
	}
	if info.Server == "" {
		info.Server = c.info.Server
	}
	c.info = info
	return c, nil
}

func isIstio(obj runtime.Object) bool {
	gvks, _, err := manifests.Scheme.ObjectKinds(obj)
	return err == nil && len(gvks) > 0 && strings.HasSuffix(gvks[0].Group, "istio.io")
}

// isKube: a kind of client-go's scheme, which the fake Kubernetes
// clientset holds.
func isKube(obj runtime.Object) bool {
	gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
	return err == nil && len(gvks) > 0
}

func describe(obj runtime.Object) string {
	kind := fmt.Sprintf("%T", obj)
	if gvks, _, err := manifests.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		kind = gvks[0].Kind
	}
	if m, ok := obj.(interface {
		GetNamespace() string
		GetName() string
	}); ok {
		return fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
	}
	return kind
}

// versionInfo fills what discovery reports for a git version like
// "v1.30.4" or "v1.29.6-gke.1326000".
func versionInfo(git string) *version.Info {
	v := &version.Info{GitVersion: git, Platform: "linux/amd64"}
	var major, minor int
	if n, _ := fmt.Sscanf(strings.TrimPrefix(git, "v"), "%d.%d", &major, &minor); n == 2 {
		v.Major, v.Minor = fmt.Sprint(major), fmt.Sprint(minor)
	}
	return v
}

func (c *Cluster) Info() cluster.ClusterInfo { return c.info }

// HoldsEndpoints reports whether the recording holds any EndpointSlice or
// Endpoints: a dump without them says nothing of a Service's endpoints.
func (c *Cluster) HoldsEndpoints() bool {
	for _, obj := range c.s.Objects {
		switch obj.(type) {
		case *discoveryv1.EndpointSlice, *corev1.Endpoints: //nolint:staticcheck // core Endpoints is still served
			return true
		}
	}
	return false
}

// HoldsPods reports whether the recording holds a pod of namespace (""
// for any).
func (c *Cluster) HoldsPods(namespace string) bool {
	for _, obj := range c.s.Objects {
		if p, ok := obj.(*corev1.Pod); ok && (namespace == "" || p.Namespace == namespace) {
			return true
		}
	}
	return false
}

// Scenario is the recorded data this cluster serves.
func (c *Cluster) Scenario() *Scenario { return c.s }

// ServerVersion reports the recorded version; a manifest set records none,
// which is "unknown", not the fake client's placeholder version.
func (c *Cluster) ServerVersion(ctx context.Context) (string, error) {
	if err := c.failed(readVersion()); err != nil {
		return "", err
	}
	if c.s.ServerVersion == "" {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "", fmt.Errorf("server version: %w", cluster.ErrNotFound)
	}
	return c.Reader.ServerVersion(ctx)
}

// Netstat answers a pod's recorded netstat (cluster.SocketLister);
// cluster.ErrNoNetstat when the recording holds none of it.
func (c *Cluster) Netstat(ctx context.Context, pod cluster.PodRef) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, ok := c.s.Netstat[pod]
	if !ok {
		return nil, cluster.ErrNoNetstat
	}
	return bytes.Clone(data), nil
}

// EnvoyAdmin answers from the recorded admin responses, after the checks a
// live port-forward would fail on: the pod exists and carries a sidecar. The
// n-th read of a path gets the n-th recording of it when there is one (two
// samples of counters), else the latest before it.
func (c *Cluster) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	what := "Envoy admin of " + pod.String()
	p, err := c.GetPod(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return nil, err
	}
	if mesh.PodSidecar(p) == mesh.SidecarNone {
		return nil, &cluster.UnreachableError{What: what, Err: fmt.Errorf("pod has no %s container", mesh.ProxyContainer)}
	}
	c.mu.Lock()
	if c.reads == nil {
		c.reads = map[envoyRead]int{}
	}
	read := envoyRead{pod, basePath(path)}
	c.reads[read]++
	n := c.reads[read]
	c.mu.Unlock()
	if err := c.failed(readEnvoy(pod, path, n)); err != nil {
		return nil, err
	}
	if n > 1 && c.s.StrictSamples && sampledPaths[basePath(path)] && !c.s.hasRead(pod, path, n) {
		return nil, &cluster.UnreachableError{What: what, Err: fmt.Errorf("GET %s a %s time: %w: the recording holds %s of the counters, not a later one to count what changed",
			path, ordinal(n), cluster.ErrNotFound, countNoun(c.s.reads(pod, path), "sample"))}
	}
	data, ok := c.s.EnvoyResponseN(pod, path, n)
	if !ok {
		return nil, &cluster.UnreachableError{What: what, Err: fmt.Errorf("GET %s: %w", path, cluster.ErrNotFound)}
	}
	return append([]byte(nil), data...), nil
}

// Now is the recording's present (cluster.Clock): when it was captured,
// else the newest timestamp in its logs; not known without either.
func (c *Cluster) Now() (time.Time, bool) { return c.logNow, !c.logNow.IsZero() }

// Logs answers like the pods/log API: the pod and container must exist, a
// previous log only exists for a restarted container; Since, then
// TailLines, then LimitBytes apply in the kubelet's order (LimitBytes keeps
// the first bytes of what the others left). Since is measured back from
// when a recording was captured, or from the newest timestamp recorded
// anywhere in the scenario, since recorded lines carry fixed dates. Lines
// without a leading timestamp belong to the line before them.
func (c *Cluster) Logs(ctx context.Context, pod cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.failed(readLogs(pod, opts)); err != nil {
		return nil, err
	}
	p, err := c.GetPod(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return nil, err
	}
	container := opts.Container
	if container == "" {
		if len(p.Spec.Containers) != 1 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, containerNames(p)))
		}
		container = p.Spec.Containers[0].Name
	}
	if !hasContainer(p, container) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
	}
	data, ok := c.s.Logs[LogKey{Pod: pod, Container: container, Previous: opts.Previous}]
	if !ok {
		if opts.Previous {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod.Name))
		}
		return nil, fmt.Errorf("log of %s container %s: %w", pod, container, cluster.ErrNotFound)
	}
	if opts.Since > 0 && !c.logNow.IsZero() {
		data = since(data, c.logNow.Add(-opts.Since))
	}
	if opts.TailLines > 0 {
		data = tail(data, opts.TailLines)
	}
	limit := opts.LimitBytes
	if limit <= 0 {
		limit = cluster.DefaultLogLimit
	}
	if int64(len(data)) > limit {
		data = data[:limit]
	}
	return append([]byte(nil), data...), nil
}

// Istiod answers from the recorded istiod debug output once an istiod pod
// exists (the named one, when replica is named), as the live cluster must
// find one to port-forward to. A replica's own recording answers for it;
// a recording that holds replicas' own answers has none for the others, as
// they did not answer when it was made. Otherwise every replica gives the
// one recorded answer.
func (c *Cluster) Istiod(ctx context.Context, replica, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.failed(readIstiod(replica, path)); err != nil {
		return nil, err
	}
	pods, err := c.ListPods(ctx, c.info.ControlPlaneNamespace, map[string]string{"app": "istiod"})
	if err != nil {
		return nil, err
	}
	if replica != "" {
		pods = slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.Name != replica })
	}
	switch {
	case len(pods) == 0 && replica != "":
		return nil, &cluster.UnreachableError{What: "istiod", Err: fmt.Errorf("no istiod pod %s in %s", replica, c.info.ControlPlaneNamespace)}
	case len(pods) == 0:
		return nil, cluster.NoRunningIstiod(c.info.ControlPlaneNamespace)
	}
	data, ok := c.s.Istiod[path]
	if replica != "" && len(c.s.IstiodReplicas) > 0 {
		data, ok = c.s.IstiodReplicas[replica][path]
	} else if !ok {
		// Any replica: the first one asked, in the order a live
		// cluster would pick, that has an answer recorded.
		for _, p := range cluster.OrderIstiods(pods) {
			if data, ok = c.s.IstiodReplicas[p.Name][path]; ok {
				break
			}
		}
	}
	if !ok {
		return nil, &cluster.UnreachableError{What: "istiod", Err: fmt.Errorf("GET %s: %w", path, cluster.ErrNotFound)}
	}
	return append([]byte(nil), data...), nil
}

func hasContainer(p *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

func containerNames(p *corev1.Pod) string {
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return strings.Join(names, " ")
}
