package picker

import (
	"context"
	"fmt"
	"sort"

	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// KubeCatalog lists through a Kubernetes clientset: the live cluster's, or
// the fake one a recorded scenario serves (both expose it as
// objects.Reader.Kube). Services and pods are listed one namespace at a
// time; the pod list is read once per namespace and matched locally against
// each Service's selector.
type KubeCatalog struct {
	Kube kubernetes.Interface
}

// Namespaces lists every namespace with its injection setting. Listing
// namespaces is cluster-scoped RBAC that an on-call may lack; the picker
// then asks for the name instead.
func (k KubeCatalog) Namespaces(ctx context.Context) ([]NamespaceSummary, error) {
	l, err := k.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]NamespaceSummary, 0, len(l.Items))
	for i := range l.Items {
		ns := &l.Items[i]
		out = append(out, NamespaceSummary{Name: ns.Name, Injection: mesh.NamespaceInjection(ns)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Services lists the namespace's Services with the pods each selects.
func (k KubeCatalog) Services(ctx context.Context, namespace string) ([]ServiceSummary, error) {
	svcs, err := k.Kube.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := k.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]ServiceSummary, 0, len(svcs.Items))
	for _, svc := range svcs.Items {
		s := ServiceSummary{Name: svc.Name, NoSelector: len(svc.Spec.Selector) == 0}
		for _, p := range svc.Spec.Ports {
			s.Ports = append(s.Ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
		if !s.NoSelector {
			sel := labels.SelectorFromSet(svc.Spec.Selector)
			for i := range pods.Items {
				pod := &pods.Items[i]
				if !live(pod) || !sel.Matches(labels.Set(pod.Labels)) {
					continue
				}
				s.Pods++
				if mesh.PodSidecar(pod) != mesh.SidecarNone {
					s.WithSidecar++
				}
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Pods lists the namespace's running pods as candidate callers.
func (k KubeCatalog) Pods(ctx context.Context, namespace string) ([]PodSummary, error) {
	l, err := k.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []PodSummary
	for i := range l.Items {
		pod := &l.Items[i]
		if !live(pod) {
			continue
		}
		ready, _ := mesh.PodReady(pod)
		out = append(out, PodSummary{Name: pod.Name, Ready: ready, Sidecar: mesh.PodSidecar(pod), App: appName(pod)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// live leaves out finished pods (completed Jobs, evicted pods): they
// neither serve nor call.
func live(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// appName is the workload name the way Istio derives its canonical service
// name from the pod's labels.
func appName(pod *corev1.Pod) string {
	for _, k := range []string{label.ServiceCanonicalName.Name, "app.kubernetes.io/name", "app"} {
		if v := pod.Labels[k]; v != "" {
			return v
		}
	}
	return ""
}

// SearchCatalog is a KubeCatalog that also ranks the target's callers with
// the caller search of `check` (callersearch.Find) over Cluster.
type SearchCatalog struct {
	KubeCatalog
	Cluster cluster.Cluster
}

// pickerCallers is how many candidates the picker offers: more than check
// reads, since the on-call picks one.
const pickerCallers = 10

// Callers lists the callers the search finds, most likely first.
func (s SearchCatalog) Callers(ctx context.Context, namespace, service string) ([]PodSummary, error) {
	res := callersearch.Find(ctx, cluster.NewCache(s.Cluster), cluster.Target{Namespace: namespace, Service: service}, callersearch.Options{Max: pickerCallers})
	var out []PodSummary
	for _, c := range append(res.Callers, res.Others...) {
		side := mesh.SidecarNone
		if c.Sidecar {
			side = mesh.SidecarClassic
		}
		out = append(out, PodSummary{Namespace: c.Pod.Namespace, Name: c.Pod.Name, Why: c.Why, Sidecar: side})
	}
	return out, nil
}
