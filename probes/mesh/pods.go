package mesh

import (
	"strings"

	"istio.io/api/annotation"
	corev1 "k8s.io/api/core/v1"
)

// Well-known names of the data plane that istio.io/api has no constant for.
const (
	ProxyContainer         = "istio-proxy"
	NamespaceInjectionName = "istio-injection" // the classic injection label
	MeshConfigMap          = "istio"
)

// SidecarKind says how a pod carries its istio-proxy.
type SidecarKind string

const (
	SidecarNone    SidecarKind = "none"
	SidecarClassic SidecarKind = "classic" // a regular container
	SidecarNative  SidecarKind = "native"  // an init container with restartPolicy Always (Kubernetes 1.29+)
)

// PodSidecar reports whether and how pod carries an istio-proxy. The
// injector's status annotation alone is not proof: an injected pod may have
// had its container removed, and a hand-written one has no annotation.
func PodSidecar(pod *corev1.Pod) SidecarKind {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == ProxyContainer && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return SidecarNative
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == ProxyContainer {
			return SidecarClassic
		}
	}
	return SidecarNone
}

// AppContainers are the pod's containers other than istio-proxy.
func AppContainers(pod *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for _, c := range pod.Spec.Containers {
		if c.Name != ProxyContainer {
			out = append(out, c)
		}
	}
	return out
}

// ProxyContainerSpec returns the istio-proxy container (classic or native).
func ProxyContainerSpec(pod *corev1.Pod) (corev1.Container, bool) {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == ProxyContainer {
			return c, true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == ProxyContainer {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// ContainerStatus finds a container's status among regular and init statuses.
func ContainerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, s := range list {
			if s.Name == name {
				return s, true
			}
		}
	}
	return corev1.ContainerStatus{}, false
}

// PodReady reports the pod's Ready condition and its reason/message.
func PodReady(pod *corev1.Pod) (ready bool, why string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			why = c.Reason
			if c.Message != "" {
				why = strings.TrimSpace(why + " " + c.Message)
			}
			return c.Status == corev1.ConditionTrue, why
		}
	}
	return false, "no Ready condition"
}

// PodProxyConfigAnnotation is the pod's proxy.istio.io/config annotation
// (ProxyConfig YAML overriding mesh defaultConfig), or "".
func PodProxyConfigAnnotation(pod *corev1.Pod) string {
	return pod.Annotations[annotation.ProxyConfig.Name]
}
