package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	istioscheme "istio.io/client-go/pkg/clientset/versioned/scheme"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// applyScheme names the kind of every typed object a scenario holds.
var applyScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := istioscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := gatewayv1.Install(s); err != nil {
		panic(err)
	}
	return s
}()

// Applied is a scenario loaded into the lab; Delete takes it out again.
type Applied struct {
	Scenario *recorded.Scenario
	lab      *Lab
	created  []appliedObject
	pods     []cluster.PodRef
}

type appliedObject struct {
	gvr        schema.GroupVersionResource
	namespace  string
	name       string
	kind       string
	finalizers bool // no controller here will ever remove them
}

func (o appliedObject) String() string {
	if o.namespace == "" {
		return o.kind + " " + o.name
	}
	return o.kind + " " + o.namespace + "/" + o.name
}

// Apply creates every object of s as the controllers and kubelet of a real
// cluster would have left it: namespaces first, then ServiceAccounts (each
// namespace's default one too, which no controller creates here), then the
// rest in recorded order; pod status through the status subresource;
// creation and deletion times as recorded. The fake kubelet then serves the
// pods' recorded logs, their Envoy admin on 15000 and istiod's debug
// endpoints on 15014.
//
// A bare API server never finishes deleting a namespace, so namespaces
// outlive Delete; Apply brings an existing one's labels and annotations to
// what s records.
func Apply(ctx context.Context, l *Lab, s *recorded.Scenario) (_ *Applied, err error) {
	a := &Applied{Scenario: s, lab: l}
	defer func() {
		if err != nil {
			err = fmt.Errorf("apply scenario %s: %w", s.Name, err)
			if derr := a.Delete(context.WithoutCancel(ctx)); derr != nil {
				err = fmt.Errorf("%w (and undoing it: %v)", err, derr)
			}
		}
	}()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(l.Kube.Discovery()))

	var namespaces, accounts, rest []*unstructured.Unstructured
	nodeLabels := map[string]map[string]string{}
	for _, obj := range s.Objects {
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		switch u.GetKind() {
		case "Namespace":
			namespaces = append(namespaces, u)
		case "ServiceAccount":
			accounts = append(accounts, u)
		case "Node":
			// The lab's own nodes stand in; the recorded ones give them
			// their labels (the locality istiod adds to endpoints).
			nodeLabels[u.GetName()] = u.GetLabels()
		default:
			rest = append(rest, u)
		}
	}

	recordedNS := map[string]bool{}
	for _, ns := range namespaces {
		recordedNS[ns.GetName()] = true
	}
	neededNS, neededSA, nodes := map[string]bool{}, map[[2]string]bool{}, map[string]bool{}
	for _, u := range append(accounts, rest...) {
		if ns := u.GetNamespace(); ns != "" {
			neededNS[ns] = true
			neededSA[[2]string{ns, "default"}] = true
		}
		if u.GetKind() == "Pod" {
			sa, _, _ := unstructured.NestedString(u.Object, "spec", "serviceAccountName")
			if sa == "" {
				sa = "default"
			}
			neededSA[[2]string{u.GetNamespace(), sa}] = true
			if node, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName"); node != "" {
				nodes[node] = true
			}
		}
	}
	for _, ns := range sortedKeys(neededNS) {
		if !recordedNS[ns] {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("Namespace")
			u.SetName(ns)
			namespaces = append(namespaces, u)
		}
	}
	for _, ns := range namespaces {
		if err := a.applyNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	for _, sa := range accounts {
		delete(neededSA, [2]string{sa.GetNamespace(), sa.GetName()})
	}
	for _, key := range sortedPairs(neededSA) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ServiceAccount")
		u.SetNamespace(key[0])
		u.SetName(key[1])
		accounts = append(accounts, u)
	}
	for _, node := range sortedKeys(nodes) {
		if err := l.RegisterNode(ctx, node); err != nil {
			return nil, err
		}
		if err := l.LabelNode(ctx, node, nodeLabels[node]); err != nil {
			return nil, err
		}
	}
	for _, u := range append(accounts, rest...) {
		if err := a.create(ctx, mapper, u); err != nil {
			return nil, err
		}
	}
	if err := a.serve(s); err != nil {
		return nil, err
	}
	return a, nil
}

// statusRecorded: the recorded status of a kind no controller here writes,
// which the probes read: a pod's, a Gateway API Gateway's (a waypoint's
// address, its listeners' conditions) and route's (istiod's verdict on
// each parentRef), a Service's conditions (istiod's
// istio.io/WaypointBound).
func statusRecorded(gvk schema.GroupVersionKind, status any) bool {
	switch {
	case gvk.Kind == "Pod":
		return true
	case gvk.Group == gatewayv1.GroupName:
		switch gvk.Kind {
		case "Gateway", "HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute":
			// A typed object without a recorded status converts to an
			// empty one (a route's parents null), which the API server
			// rejects: only a status with something in it was recorded.
			m, _ := status.(map[string]any)
			for _, v := range m {
				switch v := v.(type) {
				case []any:
					if len(v) > 0 {
						return true
					}
				case map[string]any:
					if len(v) > 0 {
						return true
					}
				case nil:
				default:
					return true
				}
			}
		}
		return false
	case gvk.Group == "" && gvk.Kind == "Service":
		m, _ := status.(map[string]any)
		conds, _ := m["conditions"].([]any)
		return len(conds) > 0
	}
	return false
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	gvks, _, err := applyScheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return nil, fmt.Errorf("object %T: unknown kind: %v", obj, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u, nil
}

// recordedMeta is what the API server sets itself on create and Apply
// restores afterwards.
type recordedMeta struct {
	creation     *metav1.Time
	deletion     *metav1.Time
	deletionSecs *int64
}

func takeServerFields(u *unstructured.Unstructured) recordedMeta {
	var rm recordedMeta
	if t := u.GetCreationTimestamp(); !t.IsZero() {
		rm.creation = &t
	}
	rm.deletion = u.GetDeletionTimestamp()
	rm.deletionSecs = u.GetDeletionGracePeriodSeconds()
	for _, f := range [][]string{
		{"metadata", "resourceVersion"}, {"metadata", "uid"}, {"metadata", "creationTimestamp"},
		{"metadata", "deletionTimestamp"}, {"metadata", "deletionGracePeriodSeconds"},
		{"metadata", "managedFields"}, {"metadata", "selfLink"}, {"metadata", "generation"},
	} {
		unstructured.RemoveNestedField(u.Object, f...)
	}
	return rm
}

func (a *Applied) applyNamespace(ctx context.Context, u *unstructured.Unstructured) error {
	u = u.DeepCopy()
	rm := takeServerFields(u)
	unstructured.RemoveNestedField(u.Object, "status")
	gvr := corev1.SchemeGroupVersion.WithResource("namespaces")
	client := a.lab.Dynamic.Resource(gvr)
	_, err := client.Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *unstructured.Unstructured
		cur, err = client.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err == nil {
			// The API server keeps kubernetes.io/metadata.name whatever the
			// update says.
			cur.SetLabels(u.GetLabels())
			cur.SetAnnotations(u.GetAnnotations())
			_, err = client.Update(ctx, cur, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("namespace %s: %w", u.GetName(), err)
	}
	return a.restoreMeta(ctx, gvr, "", u.GetName(), rm)
}

func (a *Applied) create(ctx context.Context, mapper meta.RESTMapper, u *unstructured.Unstructured) error {
	u = u.DeepCopy()
	gvk := u.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
	}
	obj := appliedObject{gvr: mapping.Resource, namespace: u.GetNamespace(), name: u.GetName(), kind: gvk.Kind, finalizers: len(u.GetFinalizers()) > 0}
	rm := takeServerFields(u)
	status, hasStatus, _ := unstructured.NestedFieldCopy(u.Object, "status")
	var client interface {
		Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
		UpdateStatus(context.Context, *unstructured.Unstructured, metav1.UpdateOptions) (*unstructured.Unstructured, error)
		Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
		Delete(context.Context, string, metav1.DeleteOptions, ...string) error
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		client = a.lab.Dynamic.Resource(mapping.Resource).Namespace(obj.namespace)
	} else {
		client = a.lab.Dynamic.Resource(mapping.Resource)
	}
	created, err := client.Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) && gvk.Kind == "ServiceAccount" {
		// Kept from an earlier scenario along with its namespace.
		return nil
	}
	if apierrors.IsAlreadyExists(err) && gvk.Group == gatewayv1.GroupName && gvk.Kind == "GatewayClass" {
		// A running istiod creates its default GatewayClasses (istio,
		// istio-waypoint) once the Gateway API CRDs are served: the
		// scenario's recorded one is that same class.
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", obj, err)
	}
	a.created = append(a.created, obj)
	if hasStatus && statusRecorded(gvk, status) {
		// Status is what the kubelet (pods) or a controller (istiod's
		// conditions on a Service, a Gateway's addresses) reports: the
		// create above dropped it.
		// A controller running in the lab (istiod) may write it first:
		// put the recorded status on the latest version.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			created.Object["status"] = status
			_, err := client.UpdateStatus(ctx, created, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				if latest, gerr := client.Get(ctx, obj.name, metav1.GetOptions{}); gerr == nil {
					created = latest
				}
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("set status of %s: %w", obj, err)
		}
	}
	if gvk.Kind == "Pod" {
		a.pods = append(a.pods, cluster.PodRef{Namespace: obj.namespace, Name: obj.name})
	}
	if rm.deletion != nil {
		grace := int64(30)
		if rm.deletionSecs != nil {
			grace = *rm.deletionSecs
		}
		if grace == 0 {
			grace = 1 // 0 would delete at once; the recording shows it still terminating.
		}
		if err := client.Delete(ctx, obj.name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			return fmt.Errorf("start deleting %s: %w", obj, err)
		}
	}
	return a.restoreMeta(ctx, mapping.Resource, obj.namespace, obj.name, rm)
}

// restoreMeta writes the recorded creation and deletion times into the
// object as stored in etcd: the API server sets them itself and no request
// can change them, yet probes compare them with recorded container start
// times and order policies by age.
func (a *Applied) restoreMeta(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, rm recordedMeta) error {
	if rm.creation == nil && rm.deletion == nil {
		return nil
	}
	key := etcdKey(gvr, namespace, name)
	kv := newEtcdKV(a.lab.etcdURL)
	// A controller may write the object between the read and the write
	// (istiod, ambient on, sets a Service's status): read it again.
	var err error
	for range 5 {
		if err = restoreMetaOnce(ctx, kv, key, name, rm); !errors.Is(err, errChangedWhileRewritten) {
			return err
		}
	}
	return err
}

func restoreMetaOnce(ctx context.Context, kv *etcdKV, key, name string, rm recordedMeta) error {
	value, rev, found, err := kv.get(ctx, key)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("restore times of %s: no etcd key %s", name, key)
	}
	var stored map[string]any
	if err := json.Unmarshal(value, &stored); err != nil {
		return fmt.Errorf("restore times of %s: etcd holds no JSON (is --storage-media-type=application/json set?): %w", key, err)
	}
	md, _ := stored["metadata"].(map[string]any)
	if md == nil {
		return fmt.Errorf("restore times of %s: no metadata", key)
	}
	if rm.creation != nil {
		md["creationTimestamp"] = rm.creation.UTC().Format(time.RFC3339)
	}
	if rm.deletion != nil {
		if _, deleting := md["deletionTimestamp"]; deleting {
			md["deletionTimestamp"] = rm.deletion.UTC().Format(time.RFC3339)
		}
	}
	out, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	return kv.putIfUnchanged(ctx, key, out, rev)
}

// etcdKey is where kube-apiserver keeps an object (its default
// --etcd-prefix /registry and resource prefixes).
func etcdKey(gvr schema.GroupVersionResource, namespace, name string) string {
	prefix := "/registry/" + gvr.Resource
	switch {
	case gvr.Group == "" && gvr.Resource == "services":
		prefix = "/registry/services/specs"
	case gvr.Group == "" && gvr.Resource == "endpoints":
		prefix = "/registry/services/endpoints"
	case gvr.Group == "" && gvr.Resource == "nodes":
		prefix = "/registry/minions"
	case strings.Contains(gvr.Group, "."):
		// Custom resources, and aggregated built-in groups that keep their
		// group in the key.
		if !builtinGroups[gvr.Group] {
			prefix = "/registry/" + gvr.Group + "/" + gvr.Resource
		}
	}
	if namespace == "" {
		return prefix + "/" + name
	}
	return prefix + "/" + namespace + "/" + name
}

// builtinGroups are dotted groups whose resources are stored without the
// group in the key.
var builtinGroups = map[string]bool{
	"discovery.k8s.io": true, "rbac.authorization.k8s.io": true, "networking.k8s.io": true,
	"coordination.k8s.io": true, "scheduling.k8s.io": true, "storage.k8s.io": true,
	"admissionregistration.k8s.io": true,
}

// serve hands the recorded data plane to the fake kubelet.
func (a *Applied) serve(s *recorded.Scenario) error {
	k := a.lab.Kubelet
	cp := s.ControlPlaneNamespace
	if cp == "" {
		cp = cluster.DefaultControlPlane
	}
	// Recorded lines carry fixed dates, and the in-memory scenario measures
	// --since back from the newest of them; so does the kubelet here.
	newest := recorded.NewestLogTime(s.Logs)
	if !newest.IsZero() {
		k.SetClock(func() time.Time { return newest })
	}
	for key, data := range s.Logs {
		k.SetLogs(key.Pod, key.Container, key.Previous, stampLines(data, newest))
	}
	for _, pod := range a.pods {
		k.AddPod(pod)
		if _, ok := s.Envoy[pod]; ok {
			if err := k.Serve(pod, cluster.EnvoyAdminPort, EnvoyAdminSimulator(s, pod)); err != nil {
				return err
			}
		}
	}
	for _, obj := range s.Objects {
		pod, ok := obj.(*corev1.Pod)
		if ok && pod.Namespace == cp && pod.Labels["app"] == "istiod" && len(s.Istiod) > 0 {
			if err := k.Serve(cluster.PodRef{Namespace: pod.Namespace, Name: pod.Name}, cluster.IstiodMonitoringPort, IstiodSimulator(s)); err != nil {
				return err
			}
		}
	}
	return nil
}

// stampLines gives each recorded line its own timestamp; a line without one
// shares the time of the line before it, and leading unstamped lines count
// as written at the end of the recording (newest), so a since window keeps
// them, as the in-memory scenario does.
func stampLines(data []byte, newest time.Time) []LogLine {
	if newest.IsZero() {
		newest = time.Now()
	}
	lines := LinesAt(data, newest)
	current := newest
	for i := range lines {
		if t, ok := recorded.LineTime([]byte(lines[i].Text)); ok {
			current = t
		}
		lines[i].Time = current
	}
	return lines
}

// EnvoyAdminSimulator answers Envoy admin GETs for pod from the scenario's
// recordings, matching paths as the in-memory scenario does: the n-th read
// of a path gets its n-th recording (counters that moved on between two
// samples). Anything not recorded is a 404, as Envoy answers an unknown
// admin path.
func EnvoyAdminSimulator(s *recorded.Scenario, pod cluster.PodRef) http.Handler {
	var mu sync.Mutex
	reads := map[string]int{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "the lab's Envoy admin is read-only", http.StatusMethodNotAllowed)
			return
		}
		mu.Lock()
		reads[r.URL.Path]++
		n := reads[r.URL.Path]
		mu.Unlock()
		data, ok := s.EnvoyResponseN(pod, r.URL.RequestURI(), n)
		if !ok {
			http.Error(w, "invalid path: "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", contentType(data))
		w.Write(data)
	})
}

// IstiodSimulator answers istiod monitoring-port GETs from the scenario,
// by path and query (/debug/edsz?proxyID=POD.NS is one proxy's); an
// unrecorded edsz read is answered as istiod answers one for a proxy it
// does not know.
func IstiodSimulator(s *recorded.Scenario) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := s.Istiod[r.URL.RequestURI()]
		if !ok && r.URL.Path == recorded.IstiodEdsz {
			http.Error(w, "Proxy not connected to this Pilot instance. It may be connected to another instance.", http.StatusNotFound)
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType(data))
		w.Write(data)
	})
}

func contentType(data []byte) string {
	if t := strings.TrimSpace(string(data[:min(len(data), 64)])); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return "application/json"
	}
	return "text/plain; charset=UTF-8"
}

// Delete removes what Apply created, newest first; pods go at once, as a
// node confirming their end would let them. Namespaces and ServiceAccounts
// stay (see Apply).
func (a *Applied) Delete(ctx context.Context) error {
	var errs []error
	zero := int64(0)
	for i := len(a.created) - 1; i >= 0; i-- {
		o := a.created[i]
		if o.kind == "ServiceAccount" {
			continue
		}
		var client dynamic.ResourceInterface = a.lab.Dynamic.Resource(o.gvr)
		if o.namespace != "" {
			client = a.lab.Dynamic.Resource(o.gvr).Namespace(o.namespace)
		}
		var err error
		if o.finalizers {
			_, err = client.Patch(ctx, o.name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
		if err == nil {
			err = client.Delete(ctx, o.name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", o, err))
		}
	}
	for _, pod := range a.pods {
		a.lab.Kubelet.Forget(pod)
	}
	a.lab.Kubelet.SetClock(nil)
	a.created, a.pods = nil, nil
	return errors.Join(errs...)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedPairs(m map[[2]string]bool) [][2]string {
	out := make([][2]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out
}
