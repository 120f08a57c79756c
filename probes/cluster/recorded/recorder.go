package recorded

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
)

// Recorder is a Cluster that passes every read to another one and keeps
// what it answered: the objects, the Envoy admin responses in the order
// they were read (a counter sampled twice is kept twice), the container
// logs, istiod's answers per replica, and the reads that failed. A triage
// run through it leaves, in Scenario, a recording that replays that triage
// offline to the same facts. It has no Unwrap on purpose: reads that skip
// the probes' cache (the second sample of the counters) must still be
// recorded.
type Recorder struct {
	c cluster.Cluster
	// now is the clock log windows are measured from; the wall clock.
	now func() time.Time

	mu         sync.Mutex
	created    time.Time
	objects    map[objectKey]runtime.Object
	envoy      map[envoyRead]map[int]envoyResponse
	envoyReads map[envoyRead]int
	logs       map[LogKey][]logRead
	istiod     map[string]map[string][]byte // replica ("" for any) → path → body
	failures   map[string]Failure
	version    string
	unrecorded map[string]bool
	// logNow is the latest "now" consistent with every windowed log read
	// (see Scenario); zero until one returned a stamped line.
	logNow time.Time
	// lastWindowed is when the last windowed log read started.
	lastWindowed time.Time
	// sampled is when each read of a sampled counter path started.
	sampled map[envoyRead][]time.Time

	// remotes are the remote clusters of c, each behind its own
	// recorder; remotesUnread says why there are none (remotes.go).
	remotes       []cluster.Remote
	remotesUnread string
}

type objectKey struct {
	kind            schema.GroupKind
	namespace, name string
}

type envoyResponse struct {
	path string
	body []byte
}

type logRead struct {
	opts cluster.LogOptions
	data []byte
}

var _ cluster.Cluster = (*Recorder)(nil)

// NewRecorder records the reads made through it of c.
func NewRecorder(c cluster.Cluster) *Recorder {
	r := newRecorder(c)
	remotes, unread := cluster.RemoteClusters(c)
	r.remotesUnread = unread
	for _, remote := range remotes {
		r.remotes = append(r.remotes, cluster.Remote{Context: remote.Context, Cluster: newRecorder(remote.Cluster)})
	}
	return r
}

func newRecorder(c cluster.Cluster) *Recorder {
	return &Recorder{
		c:          c,
		now:        time.Now,
		created:    time.Now(),
		objects:    map[objectKey]runtime.Object{},
		envoy:      map[envoyRead]map[int]envoyResponse{},
		envoyReads: map[envoyRead]int{},
		logs:       map[LogKey][]logRead{},
		istiod:     map[string]map[string][]byte{},
		failures:   map[string]Failure{},
		unrecorded: map[string]bool{},
		sampled:    map[envoyRead][]time.Time{},
	}
}

func (r *Recorder) Info() cluster.ClusterInfo { return r.c.Info() }

// fail keeps a failed read; a later success of the same read replaces it.
func (r *Recorder) fail(read string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures[read] = failureOf(read, err)
}

func (r *Recorder) succeed(read string, objs ...runtime.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, read)
	for _, obj := range objs {
		r.keep(obj)
	}
}

// keep stores a copy of obj with its apiVersion and kind set (clientsets
// leave them out) and without managedFields, as `kubectl get -o yaml`
// shows objects.
func (r *Recorder) keep(obj runtime.Object) {
	obj = obj.DeepCopyObject()
	gvks, _, err := manifests.Scheme.ObjectKinds(obj)
	m, accErr := meta.Accessor(obj)
	if err != nil || accErr != nil || len(gvks) == 0 {
		return
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	m.SetManagedFields(nil)
	r.objects[objectKey{gvks[0].GroupKind(), m.GetNamespace(), m.GetName()}] = obj
}

// record ends an object read: the object(s) kept, or the failure.
func record[T any](r *Recorder, read string, v T, err error, objs func(T) []runtime.Object) (T, error) {
	if err != nil {
		r.fail(read, err)
		return v, err
	}
	r.succeed(read, objs(v)...)
	return v, nil
}

func one[T runtime.Object](v T) []runtime.Object { return []runtime.Object{v} }

func (r *Recorder) ServerVersion(ctx context.Context) (string, error) {
	v, err := r.c.ServerVersion(ctx)
	if err != nil {
		r.fail(readVersion(), err)
		return v, err
	}
	r.succeed(readVersion())
	r.mu.Lock()
	r.version = v
	r.mu.Unlock()
	return v, nil
}

func (r *Recorder) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	v, err := r.c.GetNamespace(ctx, name)
	return record(r, readNamespace(name), v, err, one[*corev1.Namespace])
}

func (r *Recorder) GetService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	v, err := r.c.GetService(ctx, namespace, name)
	return record(r, readService(namespace, name), v, err, one[*corev1.Service])
}

func (r *Recorder) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	v, err := r.c.GetPod(ctx, namespace, name)
	return record(r, readPod(namespace, name), v, err, one[*corev1.Pod])
}

func (r *Recorder) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	v, err := r.c.GetConfigMap(ctx, namespace, name)
	return record(r, readConfigMap(namespace, name), v, err, one[*corev1.ConfigMap])
}

func (r *Recorder) ListPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	v, err := r.c.ListPods(ctx, namespace, selector)
	return record(r, readPods(namespace, selector), v, err, values[corev1.Pod])
}

// GetNode keeps the nodes the config model read (subsets on locality
// labels), so a replay builds the same view.
func (r *Recorder) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	v, err := cluster.GetNode(ctx, r.c, name)
	return record(r, readNode(name), v, err, one[*corev1.Node])
}

// PodsByIP keeps the pods the caller search found by IP.
func (r *Recorder) PodsByIP(ctx context.Context, ip string) ([]corev1.Pod, error) {
	v, err := cluster.PodsByIP(ctx, r.c, ip)
	return record(r, readPodsByIP(ip), v, err, values[corev1.Pod])
}

// NetworkGatewayServices keeps the network gateways the config model read.
func (r *Recorder) NetworkGatewayServices(ctx context.Context) ([]corev1.Service, error) {
	v, err := cluster.NetworkGatewayServices(ctx, r.c)
	return record(r, readNetworkGateways(), v, err, values[corev1.Service])
}

// PodsWithIP keeps the pods the config model found behind an endpoint
// address without targetRef.
func (r *Recorder) PodsWithIP(ctx context.Context, namespace, ip string) ([]corev1.Pod, error) {
	v, err := cluster.PodsWithIP(ctx, r.c, namespace, ip)
	return record(r, readPodsWithIP(namespace, ip), v, err, values[corev1.Pod])
}

func (r *Recorder) EndpointSlices(ctx context.Context, namespace, service string) ([]discoveryv1.EndpointSlice, error) {
	v, err := r.c.EndpointSlices(ctx, namespace, service)
	return record(r, readSlices(namespace, service), v, err, values[discoveryv1.EndpointSlice])
}

func (r *Recorder) DestinationRules(ctx context.Context, namespace string) ([]*networkingv1.DestinationRule, error) {
	v, err := r.c.DestinationRules(ctx, namespace)
	return record(r, readIstioList("destinationrules", namespace), v, err, pointers[*networkingv1.DestinationRule])
}

func (r *Recorder) VirtualServices(ctx context.Context, namespace string) ([]*networkingv1.VirtualService, error) {
	v, err := r.c.VirtualServices(ctx, namespace)
	return record(r, readIstioList("virtualservices", namespace), v, err, pointers[*networkingv1.VirtualService])
}

func (r *Recorder) ServiceEntries(ctx context.Context, namespace string) ([]*networkingv1.ServiceEntry, error) {
	v, err := r.c.ServiceEntries(ctx, namespace)
	return record(r, readIstioList("serviceentries", namespace), v, err, pointers[*networkingv1.ServiceEntry])
}

func (r *Recorder) Sidecars(ctx context.Context, namespace string) ([]*networkingv1.Sidecar, error) {
	v, err := r.c.Sidecars(ctx, namespace)
	return record(r, readIstioList("sidecars", namespace), v, err, pointers[*networkingv1.Sidecar])
}

func (r *Recorder) PeerAuthentications(ctx context.Context, namespace string) ([]*securityv1.PeerAuthentication, error) {
	v, err := r.c.PeerAuthentications(ctx, namespace)
	return record(r, readIstioList("peerauthentications", namespace), v, err, pointers[*securityv1.PeerAuthentication])
}

func values[T any, P interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]))
	}
	return out
}

func pointers[T runtime.Object](items []T) []runtime.Object {
	out := make([]runtime.Object, 0, len(items))
	for _, v := range items {
		out = append(out, v)
	}
	return out
}

// EnvoyAdmin numbers each read of a path (by the part before '?'), as the
// replay does, so that the n-th read replays the n-th answer.
func (r *Recorder) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	read := envoyRead{pod, basePath(path)}
	r.mu.Lock()
	if sampledPaths[read.path] {
		r.sampled[read] = append(r.sampled[read], r.now())
	}
	r.envoyReads[read]++
	n := r.envoyReads[read]
	if _, ok := envoyFileOf(path); !ok {
		r.unrecorded["Envoy admin GET "+path] = true
	}
	r.mu.Unlock()
	body, err := r.c.EnvoyAdmin(ctx, pod, path)
	key := readEnvoy(pod, path, n)
	if err != nil {
		r.fail(key, err)
		return body, err
	}
	r.succeed(key)
	r.mu.Lock()
	if r.envoy[read] == nil {
		r.envoy[read] = map[int]envoyResponse{}
	}
	r.envoy[read][n] = envoyResponse{path: path, body: bytes.Clone(body)}
	r.mu.Unlock()
	return body, nil
}

func (r *Recorder) Logs(ctx context.Context, pod cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	started := r.now()
	data, err := r.c.Logs(ctx, pod, opts)
	key := readLogs(pod, opts)
	if err != nil {
		r.fail(key, err)
		return data, err
	}
	r.succeed(key)
	r.mu.Lock()
	defer r.mu.Unlock()
	if opts.Container == "" {
		// The layout files logs by container; the probes always name one.
		r.unrecorded[fmt.Sprintf("log of %s without a container name", pod)] = true
		return data, nil
	}
	lk := LogKey{Pod: pod, Container: opts.Container, Previous: opts.Previous}
	r.logs[lk] = append(r.logs[lk], logRead{opts: opts, data: bytes.Clone(data)})
	if opts.Since > 0 {
		if started.After(r.lastWindowed) {
			r.lastWindowed = started
		}
		if first, ok := firstLineTime(data); ok {
			if bound := first.Add(opts.Since); r.logNow.IsZero() || bound.Before(r.logNow) {
				r.logNow = bound
			}
		}
	}
	return data, nil
}

func (r *Recorder) Istiod(ctx context.Context, replica, path string) ([]byte, error) {
	body, err := r.c.Istiod(ctx, replica, path)
	key := readIstiod(replica, path)
	if err != nil {
		r.fail(key, err)
		return body, err
	}
	r.succeed(key)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := istiodFile(path); !ok {
		r.unrecorded["istiod GET "+path] = true
	}
	if r.istiod[replica] == nil {
		r.istiod[replica] = map[string][]byte{}
	}
	r.istiod[replica][path] = bytes.Clone(body)
	return body, nil
}

// Unrecorded lists the reads that were answered but that the recording
// layout has no file for (none, with today's probes), sorted.
func (r *Recorder) Unrecorded() []string {
	r.mu.Lock()
	out := sortedKeys(r.unrecorded)
	r.mu.Unlock()
	for _, remote := range r.remotes {
		for _, u := range remote.Cluster.(*Recorder).Unrecorded() {
			out = append(out, remote.Context+": "+u)
		}
	}
	return out
}

// Scenario is the recording of every read so far, for target; expect
// lists the causes the triage found, which a replay must find again.
//
// Its CapturedAt is the "now" log windows are measured back from on
// replay. The kubelet measured them from its own clock, which the recorder
// cannot read; so it is the latest time consistent with what every
// windowed read returned (each read's first line lies inside its window),
// and no later than the last such read began.
func (r *Recorder) Scenario(target cluster.Target, expect []string) *Scenario {
	s := r.scenario(target, expect)
	for _, remote := range r.remotes {
		// A remote holds no target: the triage's is in the current context.
		rs := remote.Cluster.(*Recorder).scenario(cluster.Target{}, nil)
		rs.Context = remote.Context
		s.Remotes = append(s.Remotes, RemoteScenario{Context: remote.Context, Scenario: rs})
	}
	return s
}

func (r *Recorder) scenario(target cluster.Target, expect []string) *Scenario {
	info := r.c.Info()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &Scenario{
		Name:                  "capture",
		Title:                 fmt.Sprintf("%s, captured from %s", target, info.Context),
		Context:               info.Context,
		ServerVersion:         r.version,
		ControlPlaneNamespace: info.ControlPlaneNamespace,
		Target:                target,
		Expect:                append([]string{}, expect...),
		Envoy:                 map[cluster.PodRef]map[string][]byte{},
		Logs:                  map[LogKey][]byte{},
		Istiod:                map[string][]byte{},
		IstiodReplicas:        map[string]map[string][]byte{},
		Failures:              map[string]Failure{},
		StrictSamples:         true,
	}
	s.CapturedAt = r.lastWindowed
	if s.CapturedAt.IsZero() {
		s.CapturedAt = r.created
	}
	if !r.logNow.IsZero() && r.logNow.Before(s.CapturedAt) {
		s.CapturedAt = r.logNow
	}
	s.CapturedAt = s.CapturedAt.UTC().Truncate(time.Second)
	keys := make([]objectKey, 0, len(r.objects))
	for k := range r.objects {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.kind != b.kind {
			return a.kind.String() < b.kind.String()
		}
		return a.name < b.name
	})
	for _, k := range keys {
		s.Objects = append(s.Objects, r.objects[k].DeepCopyObject())
	}
	for read, byN := range r.envoy {
		if s.Envoy[read.pod] == nil {
			s.Envoy[read.pod] = map[string][]byte{}
		}
		first, ok := byN[1]
		if !ok {
			continue // the first read failed: no answer to number from
		}
		s.Envoy[read.pod][first.path] = first.body
		for n, resp := range byN {
			if n >= 2 {
				s.Envoy[read.pod][first.path+readSuffix+fmt.Sprint(n)] = resp.body
			}
		}
	}
	for k, reads := range r.logs {
		s.Logs[k] = mergeLogReads(reads)
	}
	for replica, byPath := range r.istiod {
		for p, body := range byPath {
			if replica == "" {
				s.Istiod[p] = body
				continue
			}
			if s.IstiodReplicas[replica] == nil {
				s.IstiodReplicas[replica] = map[string][]byte{}
			}
			s.IstiodReplicas[replica][p] = body
		}
	}
	for k, f := range r.failures {
		s.Failures[k] = f
	}
	for _, at := range r.sampled {
		if len(at) >= 2 && (s.SamplesApart == 0 || at[1].Sub(at[0]) < s.SamplesApart) {
			s.SamplesApart = at[1].Sub(at[0])
		}
	}
	s.ImpliedNamespaces = manifests.ImpliedNamespaces(s.Objects)
	return s
}

// mergeLogReads joins the reads of one container's log into the one log
// they are parts of: the read from the start (what a startup check reads)
// and the windowed tail (what the access-log check reads) overlap where the
// log is short, and follow one another where it is long. A read contained
// in what is already kept adds nothing; one that starts inside it extends
// it; one that starts after it is appended.
func mergeLogReads(reads []logRead) []byte {
	sorted := append([]logRead(nil), reads...)
	sort.SliceStable(sorted, func(i, j int) bool {
		wi := sorted[i].opts.Since > 0 || sorted[i].opts.TailLines > 0
		wj := sorted[j].opts.Since > 0 || sorted[j].opts.TailLines > 0
		if wi != wj {
			return !wi // reads from the start first
		}
		return len(sorted[i].data) > len(sorted[j].data)
	})
	var merged []byte
	for _, rd := range sorted {
		b := rd.data
		switch {
		case len(b) == 0 || bytes.Contains(merged, b):
			continue
		case len(merged) == 0:
			merged = bytes.Clone(b)
			continue
		}
		firstLine := b[:lineEnd(b, 0)]
		extended := false
		for at := 0; at < len(merged); {
			i := bytes.Index(merged[at:], firstLine)
			if i < 0 {
				break
			}
			p := at + i
			if (p == 0 || merged[p-1] == '\n') && bytes.HasPrefix(b, merged[p:]) {
				merged = append(merged[:p:p], b...)
				extended = true
				break
			}
			at = p + 1
		}
		if !extended {
			if merged[len(merged)-1] != '\n' {
				merged = append(merged, '\n')
			}
			merged = append(merged, b...)
		}
	}
	return merged
}

// firstLineTime is the timestamp of the first stamped line of a log.
func firstLineTime(data []byte) (time.Time, bool) {
	for i := 0; i < len(data); {
		end := lineEnd(data, i)
		if t, ok := lineTime(data[i:end]); ok {
			return t, true
		}
		i = end
	}
	return time.Time{}, false
}
