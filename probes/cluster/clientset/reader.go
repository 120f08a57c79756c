// Package clientset reads Kubernetes and Istio objects through clientsets. Both
// the live cluster (real clientsets) and the scenario cluster (fake clientsets
// loaded from YAML) embed Reader, so every probe sees the same read semantics.
package clientset

import (
	"context"

	"github.com/meshtriage/meshtriage/probes/mesh"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Reader implements the object reads of probes.Cluster.
type Reader struct {
	Kube  kubernetes.Interface
	Istio istioclient.Interface
}

func (r Reader) ServerVersion(ctx context.Context) (string, error) {
	// Discovery has no context parameter; the REST client honours the
	// client-wide timeout set by the caller's rest.Config.
	if err := ctx.Err(); err != nil {
		return "", err
	}
	v, err := r.Kube.Discovery().ServerVersion()
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

func (r Reader) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return r.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
}

func (r Reader) GetService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return r.Kube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (r Reader) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return r.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (r Reader) ListPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	if len(selector) == 0 {
		// An empty selector would list the whole namespace; a Service without
		// a selector selects nothing.
		return nil, nil
	}
	l, err := r.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(selector).String(),
	})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (r Reader) EndpointSlices(ctx context.Context, namespace, service string) ([]discoveryv1.EndpointSlice, error) {
	l, err := r.Kube.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + service,
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return nil, err
	}
	if err == nil && len(l.Items) > 0 {
		return l.Items, nil
	}
	sliceErr := err
	//nolint:staticcheck // core Endpoints is the documented fallback for clusters without slices.
	ep, err := r.Kube.CoreV1().Endpoints(namespace).Get(ctx, service, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if sliceErr != nil {
			return nil, sliceErr
		}
		return nil, nil
	}
	if err != nil {
		if sliceErr != nil {
			return nil, sliceErr
		}
		return nil, err
	}
	return mesh.SlicesFromEndpoints(ep), nil
}

// PodsByIP lists the pods whose IP is ip, in all namespaces: one request
// with the status.podIP field selector, which the API server indexes. The
// result is filtered here as well, because not every server (nor the fake
// clientset a recording replays through) applies field selectors; a
// finished pod keeps its IP after a new one has it, so those are left out.
func (r Reader) PodsByIP(ctx context.Context, ip string) ([]corev1.Pod, error) {
	l, err := r.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("status.podIP", ip).String(),
	})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if hasIP(&p, ip) {
			out = append(out, p)
		}
	}
	return out, nil
}

// NetworkGatewayServices lists the Services of every namespace labelled
// topology.istio.io/network: one request, selected by the API server.
func (r Reader) NetworkGatewayServices(ctx context.Context) ([]corev1.Service, error) {
	l, err := r.Kube.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: mesh.LabelNetwork})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// PodsWithIP lists the pods of one namespace whose status.podIP is ip:
// one request with the field selector, in the namespace the endpoint is
// in (a namespaced role allows it), filtered here too for servers and
// fake clientsets that do not apply field selectors. It keeps every such
// pod, whatever its phase: the config model applies istiod's own rules.
func (r Reader) PodsWithIP(ctx context.Context, namespace, ip string) ([]corev1.Pod, error) {
	l, err := r.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("status.podIP", ip).String(),
	})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.Status.PodIP == ip {
			out = append(out, p)
		}
	}
	return out, nil
}

func hasIP(p *corev1.Pod, ip string) bool {
	if p.Status.PodIP == ip {
		return true
	}
	for _, pip := range p.Status.PodIPs {
		if pip.IP == ip {
			return true
		}
	}
	return false
}

// GetNode reads a node: its locality labels, which istiod adds to the
// endpoints of its pods.
func (r Reader) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return r.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (r Reader) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return r.Kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (r Reader) DestinationRules(ctx context.Context, namespace string) ([]*networkingv1.DestinationRule, error) {
	l, err := r.Istio.NetworkingV1().DestinationRules(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (r Reader) VirtualServices(ctx context.Context, namespace string) ([]*networkingv1.VirtualService, error) {
	l, err := r.Istio.NetworkingV1().VirtualServices(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (r Reader) ServiceEntries(ctx context.Context, namespace string) ([]*networkingv1.ServiceEntry, error) {
	l, err := r.Istio.NetworkingV1().ServiceEntries(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (r Reader) Sidecars(ctx context.Context, namespace string) ([]*networkingv1.Sidecar, error) {
	l, err := r.Istio.NetworkingV1().Sidecars(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (r Reader) PeerAuthentications(ctx context.Context, namespace string) ([]*securityv1.PeerAuthentication, error) {
	l, err := r.Istio.SecurityV1().PeerAuthentications(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}
