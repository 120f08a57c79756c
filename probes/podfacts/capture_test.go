package podfacts

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func injectedPod(annotations map[string]string, iptables ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "o-1", Namespace: "shop", Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "istio-proxy"}}}}
	if len(iptables) > 0 {
		p.Spec.InitContainers = []corev1.Container{{Name: "istio-init", Args: append([]string{"istio-iptables"}, iptables...)}}
	}
	return p
}

// What istio-iptables captures inbound: its own arguments when the pod
// has them (the injector merged the annotations into them), else the
// annotations.
func TestInboundCaptured(t *testing.T) {
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		port int32
		want bool
		why  string
	}{
		{"default: every port", injectedPod(nil, "-b", "*", "-d", "15090,15021,15020"), 8080, true, ""},
		{"excluded by -d", injectedPod(nil, "-b", "*", "-d", "15090,15021,15020,9090"), 9090, false, "excluded"},
		{"not in -b", injectedPod(nil, "-b", "8080", "-d", "15090,15021,15020"), 9090, false, "not in the inbound ports captured"},
		{"the annotations, without istio-init", injectedPod(map[string]string{"traffic.sidecar.istio.io/excludeInboundPorts": "9090"}), 9090, false, "annotation excludeInboundPorts"},
		{"interception NONE", injectedPod(map[string]string{"sidecar.istio.io/interceptionMode": "NONE"}, "-b", "*"), 8080, false, "NONE"},
		{"no sidecar", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}, 8080, false, "no sidecar"},
	} {
		got, why := InboundCaptured(c.pod, c.port)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: captured %v (%q), want %v (%q)", c.name, got, why, c.want, c.why)
		}
	}
}

func TestProbeRewritten(t *testing.T) {
	pod := injectedPod(map[string]string{"status.sidecar.istio.io/port": "15021"})
	app := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(15021), Path: "/app-health/app/readyz"}}}
	if !ProbeRewritten(pod, app) || ProbeThroughSidecar(pod, app) {
		t.Error("a probe on the pod's status port and /app-health/ path is rewritten")
	}
	plain := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(15020), Path: "/app-health/app/readyz"}}}
	if ProbeRewritten(pod, plain) || !ProbeThroughSidecar(pod, plain) {
		t.Error("15020 is not this pod's status port: the kubelet sends the probe to the app's side")
	}
	exec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	if ProbeThroughSidecar(pod, exec) || ProbeThroughSidecar(pod, nil) {
		t.Error("an exec probe, or none, never crosses the sidecar")
	}
}

func TestProxyAcceptsHTTP10(t *testing.T) {
	env := injectedPod(nil)
	env.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "ISTIO_META_HTTP10", Value: "1"}}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"istio-proxy env", env, true},
		{"proxyMetadata", injectedPod(map[string]string{"proxy.istio.io/config": "proxyMetadata:\n  ISTIO_META_HTTP10: \"1\"\n"}), true},
		{"proxyMetadata 0", injectedPod(map[string]string{"proxy.istio.io/config": "proxyMetadata: {ISTIO_META_HTTP10: \"0\"}"}), false},
		{"nothing", injectedPod(nil), false},
	} {
		if got, _ := ProxyAcceptsHTTP10(c.pod); got != c.want {
			t.Errorf("%s: accepts HTTP/1.0 = %v, want %v", c.name, got, c.want)
		}
	}
}
