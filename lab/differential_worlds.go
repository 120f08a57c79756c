package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/lab/worldgen"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// DifferentialOptions configure RunDifferential.
type DifferentialOptions struct {
	// Seed and Worlds: worlds 0..Worlds-1 of the run seeded Seed
	// (worldgen.Generate), in batches of BatchSize that share istiod.
	Seed      uint64
	Worlds    int
	BatchSize int
	// Parallel is how many worlds are created, and how many sidecars
	// connected, at once.
	Parallel int
	// Quiet is how long a sidecar must go without a push before what it
	// holds is compared (istiod debounces changes by 100 ms).
	Quiet time.Duration
	// OutDir, when set, receives each world that differed: its manifest
	// (world, root rules, mesh config) and the differences.
	OutDir string
	Logf   func(format string, args ...any)
}

// WorldResult is what the differential found in one world.
type WorldResult struct {
	World *worldgen.World
	Batch *worldgen.Batch
	// Callers are the world's pods with a sidecar, each compared as a
	// caller of every Service port of the world and as a server.
	Callers int
	// Clusters, Endpoints, Routes and Inbound count what was compared.
	Clusters, Endpoints, Routes, Inbound int
	Diffs                                []string
}

// DifferentialReport sums a run.
type DifferentialReport struct {
	Seed                                 uint64
	Worlds, Batches, Callers             int
	Clusters, Endpoints, Routes, Inbound int
	// Differing are the worlds with at least one difference.
	Differing []*WorldResult
	// Shapes counts, by input shape, the worlds and batches that held it.
	Shapes map[string]int
	// Where the time went.
	Mesh, Apply, Settle, Compare, Delete, Total time.Duration
}

// Diffs counts the differences of the run.
func (r *DifferentialReport) Diffs() int {
	n := 0
	for _, w := range r.Differing {
		n += len(w.Diffs)
	}
	return n
}

// RunDifferential generates worlds, loads them batch by batch into the lab
// (each batch with its mesh config and root-namespace rules), connects
// every pod with a sidecar to istiod, and compares what istiod pushed to
// it with what the config model, built from the objects the API server
// serves, says it gives that pod: as a caller of every Service port of its
// world (clusters, endpoints with their metadata, TLS sent, routes and
// weights) and as a server (the TLS its inbound listener accepts). Each
// batch is deleted before the next is loaded.
func RunDifferential(ctx context.Context, l *Lab, i *Istiod, opts DifferentialOptions) (*DifferentialReport, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 50
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 16
	}
	if opts.Quiet <= 0 {
		opts.Quiet = 300 * time.Millisecond
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ic, err := istioclient.NewForConfig(l.Config)
	if err != nil {
		return nil, err
	}
	rep := &DifferentialReport{Seed: opts.Seed, Shapes: map[string]int{}}
	start := time.Now()
	var previous *batchApplied
	for first, b := 0, 0; first < opts.Worlds; first, b = first+opts.BatchSize, b+1 {
		n := min(opts.BatchSize, opts.Worlds-first)
		batch := worldgen.NewBatch(opts.Seed, b, first, n)
		if previous != nil {
			t := time.Now()
			if err := previous.delete(ctx, opts.Parallel); err != nil {
				return rep, err
			}
			rep.Delete += time.Since(t)
		}
		applied, err := runBatch(ctx, l, i, ic, batch, opts, rep)
		previous = applied
		if err != nil {
			return rep, fmt.Errorf("batch %d (worlds %d-%d): %w", b, first, first+n-1, err)
		}
		rep.Batches++
		for s, c := range batch.Shapes {
			rep.Shapes[s] += c
		}
		logf("differential: batch %d: worlds %d-%d (mesh %q, %d root rules): %d callers; so far %d worlds, %d differing, %d differences (%s)",
			b, first, first+n-1, strings.TrimSpace(batch.Mesh), len(batch.Root), rep.Callers, rep.Worlds, len(rep.Differing), rep.Diffs(), time.Since(start).Round(time.Second))
	}
	if previous != nil {
		t := time.Now()
		if err := previous.delete(ctx, opts.Parallel); err != nil {
			return rep, err
		}
		rep.Delete += time.Since(t)
	}
	rep.Total = time.Since(start)
	return rep, nil
}

// batchApplied is what a batch put into the lab.
type batchApplied struct {
	applied []*Applied
}

func (b *batchApplied) delete(ctx context.Context, parallel int) error {
	var mu sync.Mutex
	var errs []error
	forEach(len(b.applied), parallel, func(k int) {
		if err := b.applied[k].Delete(ctx); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errors.Join(errs...)
}

func runBatch(ctx context.Context, l *Lab, i *Istiod, ic istioclient.Interface, batch *worldgen.Batch, opts DifferentialOptions, rep *DifferentialReport) (*batchApplied, error) {
	out := &batchApplied{}
	t := time.Now()
	if err := setMeshConfig(ctx, l, i, batch.Mesh); err != nil {
		return out, err
	}
	if len(batch.Root) > 0 {
		a, err := Apply(ctx, l, recorded.FromObjects(fmt.Sprintf("batch-%d-root", batch.Index), batch.Root))
		if err != nil {
			return out, err
		}
		out.applied = append(out.applied, a)
	}
	rep.Mesh += time.Since(t)

	// EndpointSlices go in after everything else, once istiod has read
	// the pods: istiod looks up the pod of an endpoint without targetRef
	// by IP when it reads the slice, and never again until the slice
	// changes, so a slice read before its pods' IPs would leave them
	// without pods for good. A real cluster's slices come after the pods
	// they list (the controller lists pods that have IPs); hand-made ones
	// usually long after.
	t = time.Now()
	var first, slices [][]runtime.Object
	for _, w := range batch.Worlds {
		var objs, sl []runtime.Object
		for _, o := range w.Objects {
			if _, ok := o.(*discoveryv1.EndpointSlice); ok {
				sl = append(sl, o)
			} else {
				objs = append(objs, o)
			}
		}
		first, slices = append(first, objs), append(slices, sl)
	}
	for phase, objects := range [][][]runtime.Object{first, slices} {
		applied := make([]*Applied, len(batch.Worlds))
		errs := make([]error, len(batch.Worlds))
		forEach(len(batch.Worlds), opts.Parallel, func(k int) {
			if len(objects[k]) > 0 {
				applied[k], errs[k] = Apply(ctx, l, recorded.FromObjects(fmt.Sprintf("%s-%d", batch.Worlds[k].Prefix, phase), objects[k]))
			}
		})
		for _, a := range applied {
			if a != nil {
				out.applied = append(out.applied, a)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return out, err
		}
		if phase == 0 {
			known := append([]runtime.Object(nil), batch.Root...)
			for _, objs := range first {
				known = append(known, objs...)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			err := i.WaitKnows(wctx, known)
			cancel()
			if err != nil {
				return out, err
			}
			// The pods' status (their IPs) is written after their creates,
			// which WaitKnows does not see.
			time.Sleep(2 * time.Second)
		}
	}
	rep.Apply += time.Since(t)

	t = time.Now()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	err := i.WaitKnows(wctx, batch.Objects())
	cancel()
	if err != nil {
		return out, err
	}
	// The creation times Apply restores arrive as updates after the
	// creates WaitKnows saw; istiod debounces them into one push.
	time.Sleep(2 * time.Second)
	cfg, pods, err := readModelConfig(ctx, l, ic, batch.Mesh)
	if err != nil {
		return out, err
	}
	rep.Settle += time.Since(t)

	t = time.Now()
	type job struct {
		w   int
		pod *corev1.Pod
	}
	var jobs []job
	results := make([]*WorldResult, len(batch.Worlds))
	for k, w := range batch.Worlds {
		results[k] = &WorldResult{World: w, Batch: batch}
		for _, p := range w.Pods() {
			if live := pods[p.Namespace+"/"+p.Name]; live != nil && mesh.PodSidecar(live) != mesh.SidecarNone {
				jobs = append(jobs, job{k, live})
			}
		}
	}
	var mu sync.Mutex
	forEach(len(jobs), opts.Parallel, func(k int) {
		j := jobs[k]
		w := batch.Worlds[j.w]
		r := compareWorldCaller(ctx, i, cfg, w, j.pod, opts.Quiet)
		mu.Lock()
		defer mu.Unlock()
		res := results[j.w]
		res.Callers++
		res.Clusters += r.Clusters
		res.Endpoints += r.Endpoints
		res.Routes += r.Routes
		res.Inbound += r.Inbound
		res.Diffs = append(res.Diffs, r.Diffs...)
	})
	rep.Compare += time.Since(t)
	for _, res := range results {
		rep.Worlds++
		rep.Callers += res.Callers
		rep.Clusters += res.Clusters
		rep.Endpoints += res.Endpoints
		rep.Routes += res.Routes
		rep.Inbound += res.Inbound
		if len(res.Diffs) > 0 {
			sort.Strings(res.Diffs)
			rep.Differing = append(rep.Differing, res)
			if opts.OutDir != "" {
				if err := writeDifferingWorld(opts.OutDir, res); err != nil {
					return out, err
				}
			}
		}
	}
	return out, nil
}

// callerComparison is one pod's comparison.
type callerComparison struct {
	Clusters, Endpoints, Routes, Inbound int
	Diffs                                []string
}

// compareWorldCaller connects pod's sidecar, waits for istiod's pushes to
// settle, and compares: pod as a caller of each Service port of w, and as
// a server.
func compareWorldCaller(ctx context.Context, i *Istiod, cfg *mesh.Config, w *worldgen.World, pod *corev1.Pod, quiet time.Duration) callerComparison {
	var out callerComparison
	who := pod.Namespace + "/" + pod.Name
	fail := func(err error) callerComparison {
		out.Diffs = append(out.Diffs, fmt.Sprintf("caller %s: %v", who, err))
		return out
	}
	node, err := SidecarNode(pod, IstioRelease)
	if err != nil {
		return fail(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	xds, err := ConnectXDS(cctx, i.GRPCAddr, node)
	if err != nil {
		return fail(err)
	}
	defer xds.Close()
	if err := xds.WaitSynced(cctx); err != nil {
		return fail(err)
	}
	if err := xds.WaitQuiet(cctx, quiet); err != nil {
		return fail(err)
	}
	pushed, routes, listeners := xds.Pushed(), xds.PushedRoutes(), xds.PushedListeners()
	caller := mesh.CallerFromPod(pod)
	for _, t := range w.Targets() {
		v, err := cfg.ViewFor(caller, t.Host, t.Port)
		if err != nil {
			out.Diffs = append(out.Diffs, fmt.Sprintf("caller %s: %s:%d: the model gave no view: %v", who, t.Host, t.Port, err))
			continue
		}
		var c Comparison
		c.add(CompareView(v, pushed))
		c.add(CompareSubsets(cfg, v, pushed))
		r := CompareRoutes(v, routes, listeners)
		out.Clusters += c.Clusters
		out.Endpoints += c.Endpoints
		out.Routes += r.Clusters
		for _, d := range append(c.Diffs, r.Diffs...) {
			out.Diffs = append(out.Diffs, fmt.Sprintf("caller %s → %s:%d: %s", who, t.Host, t.Port, d))
		}
	}
	in := CompareInbound(cfg, pod, listeners)
	out.Inbound += in.Clusters
	for _, d := range in.Diffs {
		out.Diffs = append(out.Diffs, fmt.Sprintf("server %s: %s", who, d))
	}
	return out
}

// CompareInbound compares what the model says pod accepts on each port it
// is an endpoint on (of any Service the model knows) with what its
// sidecar's inbound listener accepts there.
func CompareInbound(cfg *mesh.Config, pod *corev1.Pod, listeners map[string]*listenerv3.Listener) Comparison {
	var c Comparison
	seen := map[int32]bool{}
	for _, host := range sortedKeysOf(cfg.Services) {
		sd := cfg.Services[host]
		if sd.Service == nil {
			continue
		}
		for _, sp := range sd.Service.Spec.Ports {
			for _, e := range cfg.Endpoints(sd, sp.Port) {
				if e.Address != pod.Status.PodIP || e.Pod != pod.Name || e.Namespace != pod.Namespace || seen[e.Port] {
					continue
				}
				seen[e.Port] = true
				c.Clusters++
				want := cfg.Accepts(sd.Service.Namespace, e)
				got, why := PushedInbound(listeners, uint32(e.Port))
				if got != want.Mode {
					c.Diffs = append(c.Diffs, fmt.Sprintf("port %d: the model accepts %s (%s); its inbound listener accepts %s (%s)", e.Port, want.Mode, want.From, orNone(got), why))
				}
			}
		}
	}
	return c
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// setMeshConfig writes the mesh config into the ConfigMap istiod reads
// and waits until istiod serves it.
func setMeshConfig(ctx context.Context, l *Lab, i *Istiod, text string) error {
	cms := l.Kube.CoreV1().ConfigMaps(cluster.DefaultControlPlane)
	cm, err := cms.Get(ctx, mesh.MeshConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: mesh.MeshConfigMap, Namespace: cluster.DefaultControlPlane},
			Data: map[string]string{"mesh": text}}, metav1.CreateOptions{})
	case err == nil && cm.Data["mesh"] != text:
		cm.Data = map[string]string{"mesh": text}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("mesh config: %w", err)
	}
	return waitMeshConfig(ctx, i, text)
}

// waitMeshConfig waits until istiod serves the mesh config text (in the
// settings the generator and the cases vary): istiod takes a new
// ConfigMap istio a while after the API server has it, and a push made
// before would be compared with a model of the new one.
func waitMeshConfig(ctx context.Context, i *Istiod, text string) error {
	want, err := mesh.ParseMeshConfig(text)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		body, err := i.Get(wctx, "/debug/mesh")
		if err == nil {
			got := &meshv1alpha1.MeshConfig{}
			if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, got); err == nil && sameMeshSettings(got, want) {
				return nil
			}
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("istiod did not take the mesh config %q: %w", text, wctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sameMeshSettings compares the settings the generator varies.
func sameMeshSettings(got, want *meshv1alpha1.MeshConfig) bool {
	auto := func(m *meshv1alpha1.MeshConfig) bool {
		return m.GetEnableAutoMtls() == nil || m.GetEnableAutoMtls().GetValue()
	}
	return auto(got) == auto(want) &&
		got.GetOutboundTrafficPolicy().GetMode() == want.GetOutboundTrafficPolicy().GetMode() &&
		strings.Join(got.GetDefaultServiceExportTo(), ",") == strings.Join(orStar(want.GetDefaultServiceExportTo()), ",") &&
		strings.Join(got.GetDefaultVirtualServiceExportTo(), ",") == strings.Join(orStar(want.GetDefaultVirtualServiceExportTo()), ",") &&
		strings.Join(got.GetDefaultDestinationRuleExportTo(), ",") == strings.Join(orStar(want.GetDefaultDestinationRuleExportTo()), ",")
}

// orStar is a default exportTo as istiod serves it: "*" when unset.
func orStar(s []string) []string {
	if len(s) == 0 {
		return []string{"*"}
	}
	return s
}

// readModelConfig builds the config model from what the API server serves
// (every namespace), with the mesh config text, as istiod reads them.
func readModelConfig(ctx context.Context, l *Lab, ic istioclient.Interface, meshText string) (*mesh.Config, map[string]*corev1.Pod, error) {
	var objs []runtime.Object
	pods := map[string]*corev1.Pod{}
	all := metav1.ListOptions{}
	core := l.Kube.CoreV1()
	nss, err := core.Namespaces().List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for k := range nss.Items {
		objs = append(objs, &nss.Items[k])
	}
	nodes, err := core.Nodes().List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for k := range nodes.Items {
		objs = append(objs, &nodes.Items[k])
	}
	svcs, err := core.Services("").List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for k := range svcs.Items {
		objs = append(objs, &svcs.Items[k])
	}
	ps, err := core.Pods("").List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for k := range ps.Items {
		p := &ps.Items[k]
		objs = append(objs, p)
		pods[p.Namespace+"/"+p.Name] = p
	}
	slices, err := l.Kube.DiscoveryV1().EndpointSlices("").List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for k := range slices.Items {
		objs = append(objs, &slices.Items[k])
	}
	net := ic.NetworkingV1()
	vss, err := net.VirtualServices("").List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range vss.Items {
		objs = append(objs, o)
	}
	drs, err := net.DestinationRules("").List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range drs.Items {
		objs = append(objs, o)
	}
	ses, err := net.ServiceEntries("").List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range ses.Items {
		objs = append(objs, o)
	}
	scs, err := net.Sidecars("").List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range scs.Items {
		objs = append(objs, o)
	}
	pas, err := ic.SecurityV1().PeerAuthentications("").List(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range pas.Items {
		objs = append(objs, o)
	}
	raw, err := mesh.ParseMeshConfig(meshText)
	if err != nil {
		return nil, nil, err
	}
	mc := mesh.MeshConfig{Raw: raw, Found: true, NetworksRead: true} // the generator writes no meshNetworks
	return mesh.ConfigFromObjects(objs, mc, mc.RootNamespace(cluster.DefaultControlPlane)), pods, nil
}

// writeDifferingWorld writes a world that differed into dir: WORLD.yaml
// (the root rules, then the world) with the mesh config and the
// differences as comments, ready to become a model case.
func writeDifferingWorld(dir string, res *WorldResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := worldgen.YAML(append(append([]runtime.Object(nil), res.Batch.Root...), res.World.Objects...))
	if err != nil {
		return err
	}
	var head strings.Builder
	fmt.Fprintf(&head, "# world %d of seed %d (batch %d)\n", res.World.Index, res.World.Seed, res.Batch.Index)
	for _, line := range strings.Split(strings.TrimSpace(res.Batch.Mesh), "\n") {
		if line != "" {
			fmt.Fprintf(&head, "# mesh: %s\n", line)
		}
	}
	for _, d := range res.Diffs {
		fmt.Fprintf(&head, "# diff: %s\n", d)
	}
	return os.WriteFile(filepath.Join(dir, res.World.Prefix+".yaml"), append([]byte(head.String()), data...), 0o644)
}

// forEach runs f(0..n-1) on up to parallel goroutines.
func forEach(n, parallel int, f func(int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				f(k)
			}
		}()
	}
	for k := range n {
		next <- k
	}
	close(next)
	wg.Wait()
}
