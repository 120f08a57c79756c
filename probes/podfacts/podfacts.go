// Package podfacts says what a pod's spec and status tell the probes:
// which of its ports a Service port lands on, whether it is ready and,
// when not, why, in the kubelet's words.
package podfacts

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// ServiceTargetPort is sp.TargetPort with the API default applied.
func ServiceTargetPort(sp corev1.ServicePort) intstr.IntOrString {
	tp := sp.TargetPort
	if (tp.Type == intstr.Int && tp.IntVal == 0) || (tp.Type == intstr.String && tp.StrVal == "") {
		return intstr.FromInt32(sp.Port)
	}
	return tp
}

// ResolvedTargetPort is the pod port a service port lands on: a named
// targetPort looked up in pod's containers, 0 when it does not resolve.
func ResolvedTargetPort(sp corev1.ServicePort, pod *corev1.Pod) int32 {
	tp := ServiceTargetPort(sp)
	if tp.Type == intstr.Int {
		return tp.IntVal
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == tp.StrVal {
				return p.ContainerPort
			}
		}
	}
	return 0
}

// NotReadyReason says why a pod is not ready: its Ready condition, then
// the first app or proxy container that is not ready and the state the
// kubelet reports for it (ImagePullBackOff, CrashLoopBackOff, ...), the
// part that names a cause. The endpoints probe says it of a not-ready
// endpoint's pod, the data-plane probe of a waypoint's pods.
func NotReadyReason(po *corev1.Pod) string {
	_, why := mesh.PodReady(po)
	if po.DeletionTimestamp != nil {
		why = strings.TrimSpace("deleting " + why)
	}
	for _, c := range append(append([]corev1.Container(nil), po.Spec.InitContainers...), po.Spec.Containers...) {
		st, ok := mesh.ContainerStatus(po, c.Name)
		if !ok || st.Ready {
			continue
		}
		if isInit(po, c.Name) && !(c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways) {
			if st.State.Terminated != nil && st.State.Terminated.ExitCode == 0 {
				continue
			}
		}
		return why + "; " + containerNotReady(c, st)
	}
	return wording.Dash(why)
}

func isInit(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

func containerNotReady(c corev1.Container, st corev1.ContainerStatus) string {
	s := st.State
	switch {
	case s.Waiting != nil:
		out := fmt.Sprintf("container %s waiting: %s", c.Name, s.Waiting.Reason)
		if st.RestartCount > 0 {
			out += fmt.Sprintf(" (%d restarts)", st.RestartCount)
		}
		return out
	case s.Terminated != nil:
		return fmt.Sprintf("container %s terminated: %s exit %d", c.Name, s.Terminated.Reason, s.Terminated.ExitCode)
	case s.Running != nil && c.ReadinessProbe != nil:
		return fmt.Sprintf("container %s running, readiness probe failing", c.Name)
	case s.Running != nil && st.Started != nil && !*st.Started:
		return fmt.Sprintf("container %s running, startup probe not passed", c.Name)
	case s.Running != nil:
		return fmt.Sprintf("container %s running, not ready", c.Name)
	}
	return fmt.Sprintf("container %s not ready", c.Name)
}

// ReadyPods counts the Running, Ready pods.
func ReadyPods(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if ready, _ := mesh.PodReady(&pods[i]); ready && pods[i].Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}
