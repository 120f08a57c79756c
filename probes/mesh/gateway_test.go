package mesh

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func proxyPod(labels map[string]string, args ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: ProxyContainer, Args: args}}}}
}

// Which pods are gateways: what pilot-agent is told to run decides; the
// labels only when the container says nothing (a hand-written manifest).
func TestGatewayPod(t *testing.T) {
	gatewayAPI := map[string]string{"gateway.networking.k8s.io/gateway-name": "shop-gw", "gateway.istio.io/managed": "istio.io-gateway-controller"}
	waypoint := map[string]string{"gateway.networking.k8s.io/gateway-name": "waypoint", "gateway.istio.io/managed": "istio.io-mesh-controller"}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"istio-ingressgateway (Helm chart)", proxyPod(map[string]string{"app": "istio-ingressgateway", "istio": "ingressgateway", "sidecar.istio.io/inject": "false"},
			"proxy", "router", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--proxyLogLevel=warning"), true},
		{"a sidecar, whatever its labels say", proxyPod(map[string]string{"istio": "ingressgateway"}, "proxy", "sidecar", "--domain", "x"), false},
		{"a waypoint runs proxy waypoint", proxyPod(waypoint, "proxy", "waypoint", "--domain", "x"), false},
		{"Gateway API deployment, no arguments", proxyPod(gatewayAPI), true},
		{"a waypoint's labels, no arguments", proxyPod(waypoint), false},
		{"istio=egressgateway, no arguments", proxyPod(map[string]string{"istio": "egressgateway"}), true},
		{"a meshed app, no arguments", proxyPod(map[string]string{"app": "web"}), false},
		{"no istio-proxy", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"istio": "ingressgateway"}}}, false},
	} {
		if got, why := GatewayPod(c.pod); got != c.want {
			t.Errorf("%s: gateway %v (%s), want %v", c.name, got, why, c.want)
		}
	}
	if c := CallerFromPod(proxyPod(gatewayAPI)); !c.Gateway || !c.Sidecar {
		t.Errorf("a gateway caller has an Envoy istiod configures: %+v", c)
	}
}

// istiod's resolveGatewayName, on the forms its own tests use.
func TestResolveGatewayName(t *testing.T) {
	for in, want := range map[string]string{
		"gateway": "default/gateway", "./gateway": "default/gateway", "istio-system/gateway": "istio-system/gateway",
		"gateway.istio-system.svc.cluster.local": "istio-system/gateway", "gateway.istio-system": "istio-system/gateway", "mesh": "mesh",
	} {
		if got := ResolveGatewayName(in, "default"); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// host.Names.Intersection's documented cases.
func TestIntersectHosts(t *testing.T) {
	for _, c := range []struct{ a, b, want []string }{
		{[]string{"foo.com", "bar.com"}, []string{"*.com"}, []string{"foo.com", "bar.com"}},
		{[]string{"foo.com", "*.net"}, []string{"*.com", "bar.net"}, []string{"foo.com", "bar.net"}},
		{[]string{"foo.com", "*.net"}, []string{"*.bar.net"}, []string{"*.bar.net"}},
		{[]string{"foo.com"}, []string{"bar.com"}, nil},
		{nil, []string{"bar.com"}, nil},
		{[]string{"*"}, []string{"shop.example.com"}, []string{"shop.example.com"}},
	} {
		got := intersectHosts(c.a, c.b)
		if len(got) != len(c.want) {
			t.Errorf("%v ∩ %v = %v, want %v", c.a, c.b, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%v ∩ %v = %v, want %v", c.a, c.b, got, c.want)
			}
		}
	}
}
