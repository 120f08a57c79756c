package mesh_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

func netpol(t *testing.T, doc string) networkingv1.NetworkPolicy {
	t.Helper()
	var p networkingv1.NetworkPolicy
	if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func peerPod(ns, name, ip string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Status: corev1.PodStatus{PodIP: ip}}
}

// The failure this exists for: a policy that admits the app's port and
// not HBONE's drops every ambient connection.
func TestNetworkPolicyHBONE(t *testing.T) {
	web := mesh.NetPeer{Pod: peerPod("shop", "web-1", "10.244.0.21", map[string]string{"app": "web"}), Namespace: namespace("shop", map[string]string{"kubernetes.io/metadata.name": "shop"})}
	orders := mesh.NetPeer{Pod: peerPod("shop", "orders-1", "10.244.1.7", map[string]string{"app": "orders"}), Namespace: web.Namespace}
	other := mesh.NetPeer{Pod: peerPod("front", "web-2", "10.244.2.9", map[string]string{"app": "web"})} // namespace unread

	appPortOnly := netpol(t, `
metadata: {name: orders-from-web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: orders}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{protocol: TCP, port: 8080}]`)
	withHBONE := netpol(t, `
metadata: {name: orders-hbone, namespace: shop}
spec:
  podSelector: {matchLabels: {app: orders}}
  ingress:
  - from: [{podSelector: {}}]
    ports: [{port: 15008}]`)
	byNamespace := netpol(t, `
metadata: {name: orders-from-front, namespace: shop}
spec:
  podSelector: {}
  ingress:
  - from: [{namespaceSelector: {matchLabels: {team: front}}}]`)
	denyEgress := netpol(t, `
metadata: {name: web-egress, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: 10.244.0.0/16, except: [10.244.1.0/24]}}]
    ports: [{port: 15000, endPort: 15010}]`)
	otherPod := netpol(t, `
metadata: {name: checkout-only, namespace: shop}
spec:
  podSelector: {matchLabels: {app: checkout}}
  ingress: []`)

	cases := []struct {
		name             string
		from, to         mesh.NetPeer
		ingress, egress  []networkingv1.NetworkPolicy
		allowed, decided bool
	}{
		{"no policy", web, orders, nil, nil, true, true},
		{"a policy for other pods isolates nothing here", web, orders, []networkingv1.NetworkPolicy{otherPod}, nil, true, true},
		{"the app's port only: HBONE dropped", web, orders, []networkingv1.NetworkPolicy{appPortOnly}, nil, false, true},
		{"a second policy admits 15008", web, orders, []networkingv1.NetworkPolicy{appPortOnly, withHBONE}, nil, true, true},
		{"namespace selector, namespace unread", other, orders, []networkingv1.NetworkPolicy{byNamespace}, nil, false, false},
		{"egress range covers 15008 but the except excludes the target", web, orders, nil, []networkingv1.NetworkPolicy{denyEgress}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := mesh.NetworkPolicyAllows(tc.from, tc.to, mesh.HBONEPort, tc.ingress, tc.egress)
			if v.Allowed != tc.allowed || v.Decided != tc.decided {
				t.Errorf("allowed %v decided %v (%s; isolating %v), want %v %v", v.Allowed, v.Decided, v.Why, v.Isolating, tc.allowed, tc.decided)
			}
		})
	}
	// The app's port itself is admitted by the same policy: that is what
	// makes the failure hard to see.
	if v := mesh.NetworkPolicyAllows(web, orders, 8080, []networkingv1.NetworkPolicy{appPortOnly}, nil); !v.Allowed {
		t.Errorf("port 8080 from web: %s, want admitted", v.Why)
	}
	named := appPortOnly.DeepCopy()
	named.Spec.Ingress[0].Ports[0].Port = &intstr.IntOrString{Type: intstr.String, StrVal: "hbone"}
	orders.Pod.Spec.Containers = []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{Name: "hbone", ContainerPort: 15008}}}}
	if v := mesh.NetworkPolicyAllows(web, orders, mesh.HBONEPort, []networkingv1.NetworkPolicy{*named}, nil); !v.Allowed {
		t.Errorf("a named port the pod declares as 15008: %s, want admitted", v.Why)
	}
}
