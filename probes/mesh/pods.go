package mesh

import (
	"fmt"
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

// DefaultProxyUID is the UID (and GID) the injector runs istio-proxy as,
// and the owner istio-iptables exempts from redirection.
const DefaultProxyUID = 1337

// ProxyIDs are the UID and GID whose traffic istio-iptables lets out
// without redirecting it to Envoy (ISTIO_OUTPUT: -m owner --uid-owner /
// --gid-owner ... -j RETURN): the istio-init container's -u and -g, else
// the istio-proxy container's runAsUser and runAsGroup, else 1337 (the
// injector's default, GetProxyIDs; OpenShift picks from the namespace's
// range and writes it in both places).
func ProxyIDs(pod *corev1.Pod) (uid, gid int64) {
	uid, gid = DefaultProxyUID, DefaultProxyUID
	if c, ok := ProxyContainerSpec(pod); ok && c.SecurityContext != nil {
		if u := c.SecurityContext.RunAsUser; u != nil {
			uid = *u
		}
		if g := c.SecurityContext.RunAsGroup; g != nil {
			gid = *g
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name != "istio-init" {
			continue
		}
		args := append(append([]string(nil), c.Command...), c.Args...)
		for i := 0; i+1 < len(args); i++ {
			var n int64
			if _, err := fmt.Sscan(strings.Trim(args[i+1], `"`), &n); err != nil {
				continue
			}
			switch args[i] {
			case "-u", "--proxy-uid":
				uid = n
			case "-g", "--proxy-gid":
				gid = n
			}
		}
	}
	return uid, gid
}

// SidecarBypass says which of the pod's app containers send around its
// sidecar: a container that runs as the proxy's UID or GID (its own
// securityContext, else the pod's) is exempt from istio-iptables'
// redirection, so its connections leave as the app wrote them, plaintext.
// all is true when every app container does. The UID an image declares
// (USER in its Dockerfile) is not in the pod spec and is not judged.
func SidecarBypass(pod *corev1.Pod) (bypassing []string, all bool) {
	if PodSidecar(pod) == SidecarNone || pod.Annotations["sidecar.istio.io/interceptionMode"] == "NONE" {
		return nil, false
	}
	uid, gid := ProxyIDs(pod)
	apps := AppContainers(pod)
	for _, c := range apps {
		var runAsUser, runAsGroup *int64
		if sc := pod.Spec.SecurityContext; sc != nil {
			runAsUser, runAsGroup = sc.RunAsUser, sc.RunAsGroup
		}
		if sc := c.SecurityContext; sc != nil {
			if sc.RunAsUser != nil {
				runAsUser = sc.RunAsUser
			}
			if sc.RunAsGroup != nil {
				runAsGroup = sc.RunAsGroup
			}
		}
		switch {
		case runAsUser != nil && *runAsUser == uid:
			bypassing = append(bypassing, fmt.Sprintf("container %s runs as UID %d, the proxy's", c.Name, uid))
		case runAsGroup != nil && *runAsGroup == gid:
			bypassing = append(bypassing, fmt.Sprintf("container %s runs as GID %d, the proxy's", c.Name, gid))
		}
	}
	return bypassing, len(apps) > 0 && len(bypassing) == len(apps)
}
