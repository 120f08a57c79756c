package mesh_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Which app containers istio-iptables lets out around the sidecar: those
// running as the proxy's UID or GID, the one istio-init was given (-u, -g)
// or the proxy runs as, 1337 by default.
func TestSidecarBypass(t *testing.T) {
	app := func(name string, uid, gid *int64) corev1.Container {
		return corev1.Container{Name: name, SecurityContext: &corev1.SecurityContext{RunAsUser: uid, RunAsGroup: gid}}
	}
	proxy := corev1.Container{Name: mesh.ProxyContainer}
	pod := func(mutate func(*corev1.Pod), containers ...corev1.Container) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "web"}, Spec: corev1.PodSpec{Containers: append(containers, proxy)}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	openshift := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "istio-init", Args: []string{"istio-iptables", "-p", "15001", "-u", "1000650000", "-m", "REDIRECT"}}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		n    int
		all  bool
	}{
		{"app as 1337", pod(nil, app("web", ptr.To[int64](1337), nil)), 1, true},
		{"app as another UID", pod(nil, app("web", ptr.To[int64](1000), nil)), 0, false},
		{"no UID in the spec (the image's USER is not judged)", pod(nil, corev1.Container{Name: "web"}), 0, false},
		{"pod-level runAsGroup 1337", pod(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsGroup: ptr.To[int64](1337)}
		}, corev1.Container{Name: "web"}), 1, true},
		{"container UID overrides the pod's", pod(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1337)}
		}, app("web", ptr.To[int64](1000), nil)), 0, false},
		{"one of two containers", pod(nil, app("web", ptr.To[int64](1337), nil), app("worker", ptr.To[int64](1000), nil)), 1, false},
		{"OpenShift: istio-init's -u, not 1337", pod(openshift, app("web", ptr.To[int64](1337), nil), app("worker", ptr.To[int64](1000650000), nil)), 1, false},
		{"no sidecar, no redirection", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{app("web", ptr.To[int64](1337), nil)}}}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, all := mesh.SidecarBypass(tc.pod)
			if len(got) != tc.n || all != tc.all {
				t.Errorf("bypassing %q (all %v), want %d (all %v)", got, all, tc.n, tc.all)
			}
			if c := mesh.CallerFromPod(tc.pod); (c.Bypass != "") != tc.all || tc.all && !strings.Contains(c.Bypass, "the proxy's") {
				t.Errorf("caller bypass %q", c.Bypass)
			}
		})
	}
}
