package remedies

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// API versions of the kinds remedies patch: those the triage reads them as.
const (
	istioNetworking = "networking.istio.io/v1"
	istioSecurity   = "security.istio.io/v1"
	gatewayAPI      = "gateway.networking.k8s.io/v1"
	k8sNetworking   = "networking.k8s.io/v1"
	coreV1          = "v1"
	appsV1          = "apps/v1"
)

func objectOf(apiVersion, kind string, m metav1.Object) patch.Object {
	return patch.Object{APIVersion: apiVersion, Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}
}

// change is the patch of ops on typed, the object as read: a merge patch
// when the ops touch maps only (what kubectl patch --type=merge reads
// best), a JSON patch with its test operations when a list element
// changes. Either way it is checked to apply to the object as read.
func change(obj patch.Object, typed any, ops ...patch.Op) (patch.Patch, error) {
	doc, err := json.Marshal(typed)
	if err != nil {
		return patch.Patch{}, err
	}
	jp, modified, err := patch.JSONPatch(obj, doc, ops...)
	if err != nil {
		return patch.Patch{}, err
	}
	for _, op := range ops {
		if op.Op != "test" && inList(op.Path) {
			return jp, nil
		}
	}
	return patch.MergePatch(obj, doc, modified)
}

// inList: the path goes through a list element (an index or "-").
func inList(path string) bool {
	for _, part := range strings.Split(path, "/") {
		if part == "-" {
			return true
		}
		if _, err := strconv.Atoi(part); err == nil && part != "" {
			return true
		}
	}
	return false
}

// workload is what owns a pod, as kubectl names it.
type workload struct {
	Kind, Namespace, Name string
}

// workloadOf is the pod's workload: its controller, a ReplicaSet's
// Deployment (the name as Istio's telemetry gives it, mesh.WorkloadName),
// a Job's CronJob; a pod without a controller is its own.
func workloadOf(pod *corev1.Pod) workload {
	w := workload{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		name := mesh.WorkloadName(pod)
		switch {
		case ref.Kind == "ReplicaSet" && name != ref.Name:
			return workload{Kind: "Deployment", Namespace: pod.Namespace, Name: name}
		case ref.Kind == "Job" && name != ref.Name:
			return workload{Kind: "CronJob", Namespace: pod.Namespace, Name: name}
		}
		return workload{Kind: ref.Kind, Namespace: pod.Namespace, Name: ref.Name}
	}
	return w
}

// Ref is kind/name as kubectl takes it ("deployment/orders").
func (w workload) Ref() string { return strings.ToLower(w.Kind) + "/" + w.Name }

func (w workload) String() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

// restartable: kubectl rollout restart takes it.
func (w workload) restartable() bool {
	switch w.Kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return true
	}
	return false
}

// workloadsOf are the pods' workloads, once each, in the pods' order.
func workloadsOf(pods []*corev1.Pod) []workload {
	seen := map[workload]bool{}
	var out []workload
	for _, p := range pods {
		w := workloadOf(p)
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// appContainer is the container of the pod that is not Istio's: the one
// kubectl.kubernetes.io/default-container names, else the first other than
// istio-proxy.
func appContainer(pod *corev1.Pod) string {
	if c := pod.Annotations["kubectl.kubernetes.io/default-container"]; c != "" && c != mesh.ProxyContainer {
		return c
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != mesh.ProxyContainer {
			return c.Name
		}
	}
	return ""
}

// generatedLabels are labels Kubernetes or Istio put on pods: never what a
// subset or selector is meant to pick.
var generatedLabels = map[string]bool{
	"pod-template-hash":                      true,
	"controller-revision-hash":               true,
	"pod-template-generation":                true,
	"statefulset.kubernetes.io/pod-name":     true,
	"apps.kubernetes.io/pod-index":           true,
	"security.istio.io/tlsMode":              true,
	"service.istio.io/canonical-name":        true,
	"service.istio.io/canonical-revision":    true,
	"batch.kubernetes.io/controller-uid":     true,
	"batch.kubernetes.io/job-name":           true,
	"controller-uid":                         true,
	"job-name":                               true,
	"istio.io/rev":                           true,
	"sidecar.istio.io/inject":                true,
	"topology.istio.io/network":              true,
	"gateway.networking.k8s.io/gateway-name": true,
}

func generatedLabel(k string) bool {
	return generatedLabels[k] || strings.HasPrefix(k, "topology.kubernetes.io/") || strings.HasPrefix(k, "topology.istio.io/") ||
		strings.HasPrefix(k, "kubernetes.io/") || strings.HasPrefix(k, "istio.io/")
}

// selectorString is a label selector as kubectl -l takes it, keys sorted.
func selectorString(sel map[string]string) string {
	keys := sortedKeys(sel)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return strings.Join(parts, ",")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// splitRef splits "namespace/name".
func splitRef(ref string) (ns, name string, ok bool) {
	ns, name, ok = strings.Cut(ref, "/")
	return ns, name, ok && ns != "" && name != ""
}

// newObject is the body of a create: apiVersion, kind, metadata and spec.
func newObject(obj patch.Object, spec map[string]any, labels ...map[string]string) map[string]any {
	meta := map[string]any{"name": obj.Name}
	if obj.Namespace != "" {
		meta["namespace"] = obj.Namespace
	}
	if len(labels) > 0 && len(labels[0]) > 0 {
		meta["labels"] = labels[0]
	}
	out := map[string]any{"apiVersion": obj.APIVersion, "kind": obj.Kind, "metadata": meta}
	if spec != nil {
		out["spec"] = spec
	}
	return out
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
