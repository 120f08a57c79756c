package probes

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
)

// probedPod is an orders pod with a sidecar and the app probes given, as
// the injector left them.
func probedPod(name string, annotations map[string]string, probers string, probes ...func(*corev1.Container)) corev1.Pod {
	app := corev1.Container{Name: "orders", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "admin", ContainerPort: 9090}}}
	for _, p := range probes {
		p(&app)
	}
	proxy := corev1.Container{Name: mesh.ProxyContainer}
	if probers != "" {
		proxy.Env = []corev1.EnvVar{{Name: "ISTIO_KUBE_APP_PROBERS", Value: probers}}
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "orders"}, Annotations: annotations},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "istio-init", Args: []string{"istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337",
				"-m", "REDIRECT", "-i", "*", "-x", "", "-b", "*", "-d", "15090,15021,15020"}}},
			Containers: []corev1.Container{app, proxy},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.17", HostIP: "10.0.1.12"},
	}
}

func readiness(h corev1.ProbeHandler) func(*corev1.Container) {
	return func(c *corev1.Container) { c.ReadinessProbe = &corev1.Probe{ProbeHandler: h} }
}

func liveness(h corev1.ProbeHandler) func(*corev1.Container) {
	return func(c *corev1.Container) { c.LivenessProbe = &corev1.Probe{ProbeHandler: h} }
}

func httpGet(port intstr.IntOrString, path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: port, Path: path}}
}

func strictShop(t *testing.T, extra ...*securityv1.PeerAuthentication) *mesh.Config {
	t.Helper()
	pas := append([]*securityv1.PeerAuthentication{peerAuth("shop", "default", securityv1beta1.PeerAuthentication_MutualTLS_STRICT, nil, nil)}, extra...)
	return &mesh.Config{RootNamespace: "istio-system", PeerAuthentications: pas}
}

func TestHealthProbesEvaluation(t *testing.T) {
	off := map[string]string{"sidecar.istio.io/rewriteAppHTTPProbers": "false"}
	rewrittenProbers := `{"/app-health/orders/readyz":{"httpGet":{"path":"/healthz/ready","port":8080,"scheme":"HTTP"},"timeoutSeconds":1}}`
	appHealth := httpGet(intstr.FromInt32(15020), "/app-health/orders/readyz")
	cases := []struct {
		name                           string
		pods                           []corev1.Pod
		cfg                            *mesh.Config
		blocked, tcp, missing, hostSet int
		kinds                          []string
		status                         Status
	}{
		{name: "rewritten readiness: pilot-agent probes the app",
			pods: []corev1.Pod{probedPod("o-1", nil, rewrittenProbers, readiness(appHealth))}, cfg: strictShop(t), kinds: []string{}, status: StatusPass},
		{name: "rewrite off, named port, STRICT: reset",
			pods: []corev1.Pod{probedPod("o-1", off, "", readiness(httpGet(intstr.FromString("http"), "/healthz/ready"))),
				probedPod("o-2", off, "", readiness(httpGet(intstr.FromString("http"), "/healthz/ready")))},
			cfg: strictShop(t), blocked: 1, kinds: []string{probeReadiness}, status: StatusFail},
		{name: "rewrite off, gRPC liveness, STRICT: reset",
			pods: []corev1.Pod{probedPod("o-1", off, "", liveness(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}))},
			cfg:  strictShop(t), blocked: 1, kinds: []string{probeLiveness}, status: StatusFail},
		{name: "rewrite off, PERMISSIVE: plaintext reaches the app",
			pods: []corev1.Pod{probedPod("o-1", off, "", readiness(httpGet(intstr.FromInt32(8080), "/healthz/ready")))},
			cfg:  &mesh.Config{RootNamespace: "istio-system"}, kinds: []string{}, status: StatusPass},
		{name: "rewrite off, the probe port PERMISSIVE at port level",
			pods: []corev1.Pod{probedPod("o-1", off, "", readiness(httpGet(intstr.FromInt32(9090), "/ready")))},
			cfg: strictShop(t, peerAuth("shop", "orders", securityv1beta1.PeerAuthentication_MutualTLS_UNSET, map[string]string{"app": "orders"},
				map[uint32]securityv1beta1.PeerAuthentication_MutualTLS_Mode{9090: securityv1beta1.PeerAuthentication_MutualTLS_PERMISSIVE})),
			kinds: []string{}, status: StatusPass},
		{name: "rewrite off, the probe port excluded from capture",
			pods: func() []corev1.Pod {
				p := probedPod("o-1", off, "", readiness(httpGet(intstr.FromInt32(9090), "/ready")))
				p.Spec.InitContainers[0].Args[len(p.Spec.InitContainers[0].Args)-1] = "15090,15021,15020,9090"
				return []corev1.Pod{p}
			}(),
			cfg: strictShop(t), kinds: []string{}, status: StatusPass},
		{name: "tcpSocket not rewritten: proves nothing",
			pods: []corev1.Pod{probedPod("o-1", off, "", liveness(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}))},
			cfg:  strictShop(t), tcp: 1, kinds: []string{}, status: StatusWarn},
		{name: "a copied /app-health/ path pilot-agent holds no original of",
			pods: []corev1.Pod{probedPod("o-1", nil, "", readiness(appHealth))}, cfg: strictShop(t), missing: 1, kinds: []string{}, status: StatusFail},
		{name: "a rewritten probe with httpGet.host",
			pods: []corev1.Pod{probedPod("o-1", nil, rewrittenProbers, readiness(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "localhost", Port: intstr.FromInt32(15020), Path: "/app-health/orders/readyz"}}))},
			cfg:  strictShop(t), hostSet: 1, kinds: []string{}, status: StatusWarn},
		{name: "exec probes never cross the sidecar",
			pods: []corev1.Pod{probedPod("o-1", off, "", readiness(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/health"}}}))},
			cfg:  strictShop(t), kinds: []string{}, status: StatusPass},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := evaluateHealthProbes(cluster.Target{Namespace: "shop", Service: "orders"}, healthProbesInput{Pods: c.pods, Config: c.cfg})
			if err := CheckFacts(HealthProbesProbe{}.Meta(), res); err != nil {
				t.Fatal(err)
			}
			if len(res.Facts) != len(HealthProbesProbe{}.Meta().Facts) {
				t.Errorf("emitted %d facts, declared %d", len(res.Facts), len(HealthProbesProbe{}.Meta().Facts))
			}
			for fact, want := range map[string]int{"healthprobe_blocked_by_strict": c.blocked, "healthprobe_tcp_unproven": c.tcp,
				"healthprobe_prober_missing": c.missing, "healthprobe_host_set": c.hostSet} {
				if got := res.Facts[fact].([]string); len(got) != want {
					t.Errorf("%s = %v, want %d", fact, got, want)
				}
			}
			if got := fmt.Sprint(res.Facts["healthprobe_blocked_kinds"]); got != fmt.Sprint(c.kinds) {
				t.Errorf("kinds %s, want %v", got, c.kinds)
			}
			if res.Status != c.status {
				t.Errorf("status %s, want %s: %s", res.Status, c.status, res.Summary)
			}
		})
	}
}

// Identical probes of several pods are one line, with the count; why the
// rewrite is off is named from the pod, else from the injector's values.
func TestHealthProbesSayWhyTheRewriteIsOff(t *testing.T) {
	h := readiness(httpGet(intstr.FromInt32(8080), "/healthz/ready"))
	off := map[string]string{"sidecar.istio.io/rewriteAppHTTPProbers": "false"}
	res := evaluateHealthProbes(cluster.Target{Namespace: "shop", Service: "orders"}, healthProbesInput{
		Pods: []corev1.Pod{probedPod("o-1", off, "", h), probedPod("o-2", off, "", h), probedPod("o-3", off, "", h)}, Config: strictShop(t)})
	blocked := res.Facts["healthprobe_blocked_by_strict"].([]string)
	if len(blocked) != 1 || !strings.Contains(blocked[0], "on 3 pods") || !strings.Contains(blocked[0], "namespace shop/default") {
		t.Errorf("blocked %v: want one line for 3 pods naming the STRICT policy", blocked)
	}
	if why := res.Facts["healthprobe_rewrite_off"]; why != `pod annotation sidecar.istio.io/rewriteAppHTTPProbers: "false"` {
		t.Errorf("rewrite off because %q", why)
	}
	f := false
	res = evaluateHealthProbes(cluster.Target{Namespace: "shop", Service: "orders"}, healthProbesInput{
		Pods: []corev1.Pod{probedPod("o-1", nil, "", h)}, Config: strictShop(t), InjectorRewrite: &f, InjectorRead: "configmap istio-system/istio-sidecar-injector"})
	if why := res.Facts["healthprobe_rewrite_off"].(string); !strings.Contains(why, "rewriteAppHTTPProbe: false (configmap istio-system/istio-sidecar-injector)") {
		t.Errorf("rewrite off because %q, want the injector's values", why)
	}
}

// The kubelet's refused probes, as a real inbound listener logs them: the
// real filter_chain_not_found lines (text.log, Harness docs and a 2023
// blog), their peer taken as the kubelet's address.
func TestKubeletRefusedOnRealLines(t *testing.T) {
	for _, c := range []struct {
		group, kubelet string
	}{
		{"Harness docs, 2022-08-15, NR filter_chain_not_found", "10.124.9.15"},
		{"blog, 2023-08-09, NR filter_chain_not_found", "10.20.221.213"},
	} {
		log := realworldLogGroup(t, "text.log", c.group)
		for _, host := range []string{c.kubelet, "10.0.0.99"} {
			matched, _, err := accesslog.Split(bytes.NewReader(log), kubeletRefused(host))
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if host == c.kubelet {
				want = 1
			}
			if matched.Entries != want {
				t.Errorf("%s from %s: %d refused, want %d", c.group, host, matched.Entries, want)
			}
		}
	}
}
