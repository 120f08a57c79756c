package probes

import (
	"fmt"
	"testing"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"istio.io/api/label"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func mtlsService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "orders"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
}

func meshedPod(name string, sidecar bool) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "orders"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		}}},
		// Each pod its own address, so a model without EndpointSlices
		// lists it as the EndpointSlice controller would.
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.0.%d", name[len(name)-1]),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if sidecar {
		p.Labels[label.SecurityTlsMode.Name] = "istio"
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: mesh.ProxyContainer})
	}
	return p
}

func peerAuth(ns, name string, mode securityv1beta1.PeerAuthentication_MutualTLS_Mode, selector map[string]string, ports map[uint32]securityv1beta1.PeerAuthentication_MutualTLS_Mode) *securityv1.PeerAuthentication {
	pa := &securityv1.PeerAuthentication{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	pa.Spec.Mtls = &securityv1beta1.PeerAuthentication_MutualTLS{Mode: mode}
	if selector != nil {
		pa.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: selector}
	}
	if ports != nil {
		pa.Spec.PortLevelMtls = map[uint32]*securityv1beta1.PeerAuthentication_MutualTLS{}
		for p, m := range ports {
			pa.Spec.PortLevelMtls[p] = &securityv1beta1.PeerAuthentication_MutualTLS{Mode: m}
		}
	}
	return pa
}

func tlsRule(ns, host string, mode networkingv1alpha3.ClientTLSSettings_TLSmode) *networkingv1.DestinationRule {
	dr := &networkingv1.DestinationRule{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}}
	dr.Spec.Host = host
	dr.Spec.TrafficPolicy = &networkingv1alpha3.TrafficPolicy{Tls: &networkingv1alpha3.ClientTLSSettings{Mode: mode}}
	return dr
}

func TestMTLSEvaluation(t *testing.T) {
	target := cluster.Target{Namespace: "shop", Service: "orders"}
	from := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	plainClient := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}}}
	meshedClient := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}, {Name: mesh.ProxyContainer}}}}
	strict := securityv1beta1.PeerAuthentication_MutualTLS_STRICT
	permissive := securityv1beta1.PeerAuthentication_MutualTLS_PERMISSIVE
	disable := securityv1beta1.PeerAuthentication_MutualTLS_DISABLE
	unset := securityv1beta1.PeerAuthentication_MutualTLS_UNSET

	cases := []struct {
		name       string
		target     cluster.Target
		in         modelInput
		mode       string
		sends      string
		mismatch   string
		wantStatus Status
	}{
		{
			name:   "auto mTLS to a PERMISSIVE meshed upstream is fine",
			target: target,
			in:     modelInput{Pods: []corev1.Pod{meshedPod("o-1", true)}},
			mode:   "PERMISSIVE", sends: "mtls", mismatch: MismatchNone, wantStatus: StatusPass,
		},
		{
			name:   "explicit ISTIO_MUTUAL to PERMISSIVE is not a mismatch",
			target: target,
			in: modelInput{
				Pods:             []corev1.Pod{meshedPod("o-1", true)},
				PeerAuths:        []*securityv1.PeerAuthentication{peerAuth("shop", "default", permissive, nil, nil)},
				DestinationRules: []*networkingv1.DestinationRule{tlsRule("shop", "orders", networkingv1alpha3.ClientTLSSettings_ISTIO_MUTUAL)},
			},
			mode: "PERMISSIVE", sends: "mtls", mismatch: MismatchNone, wantStatus: StatusPass,
		},
		{
			name:   "client without sidecar to STRICT namespace",
			target: from,
			in: modelInput{
				Pods:      []corev1.Pod{meshedPod("o-1", true)},
				Source:    plainClient,
				PeerAuths: []*securityv1.PeerAuthentication{peerAuth("shop", "default", strict, nil, nil)},
			},
			mode: "STRICT", sends: "plaintext", mismatch: MismatchPlaintextStrict, wantStatus: StatusFail,
		},
		{
			name:   "DR tls DISABLE to mesh-wide STRICT",
			target: from,
			in: modelInput{
				Pods:             []corev1.Pod{meshedPod("o-1", true)},
				Source:           meshedClient,
				RootNamespace:    "istio-system",
				PeerAuths:        []*securityv1.PeerAuthentication{peerAuth("istio-system", "default", strict, nil, nil)},
				DestinationRules: []*networkingv1.DestinationRule{tlsRule("web", "orders.shop.svc.cluster.local", networkingv1alpha3.ClientTLSSettings_DISABLE)},
			},
			mode: "STRICT", sends: "plaintext", mismatch: MismatchPlaintextStrict, wantStatus: StatusFail,
		},
		{
			name:   "ISTIO_MUTUAL to pods without sidecar",
			target: target,
			in: modelInput{
				Pods:             []corev1.Pod{meshedPod("o-1", false), meshedPod("o-2", false)},
				DestinationRules: []*networkingv1.DestinationRule{tlsRule("shop", "orders", networkingv1alpha3.ClientTLSSettings_ISTIO_MUTUAL)},
			},
			mode: "PERMISSIVE", sends: "mtls", mismatch: MismatchMTLSNoSidecar, wantStatus: StatusFail,
		},
		{
			name:   "auto mTLS to pods without sidecar sends plaintext: fine",
			target: target,
			in:     modelInput{Pods: []corev1.Pod{meshedPod("o-1", false)}},
			mode:   "PERMISSIVE", sends: "plaintext", mismatch: MismatchNone, wantStatus: StatusPass,
		},
		{
			name:   "DR SIMPLE toward a meshed upstream is double TLS",
			target: target,
			in: modelInput{
				Pods:             []corev1.Pod{meshedPod("o-1", true)},
				DestinationRules: []*networkingv1.DestinationRule{tlsRule("shop", "orders", networkingv1alpha3.ClientTLSSettings_SIMPLE)},
			},
			mode: "PERMISSIVE", sends: "tls", mismatch: MismatchDoubleTLS, wantStatus: StatusFail,
		},
		{
			name:   "workload UNSET inherits namespace STRICT, portLevelMtls PERMISSIVE on the container port wins",
			target: from,
			in: modelInput{
				Pods:   []corev1.Pod{meshedPod("o-1", true)},
				Source: plainClient,
				PeerAuths: []*securityv1.PeerAuthentication{
					peerAuth("shop", "default", strict, nil, nil),
					peerAuth("shop", "orders", unset, map[string]string{"app": "orders"}, map[uint32]securityv1beta1.PeerAuthentication_MutualTLS_Mode{8080: permissive}),
				},
			},
			mode: "PERMISSIVE", sends: "plaintext", mismatch: MismatchNone, wantStatus: StatusPass,
		},
		{
			name:   "explicit ISTIO_MUTUAL to a DISABLE upstream",
			target: target,
			in: modelInput{
				Pods:             []corev1.Pod{meshedPod("o-1", true)},
				PeerAuths:        []*securityv1.PeerAuthentication{peerAuth("shop", "orders", disable, map[string]string{"app": "orders"}, nil)},
				DestinationRules: []*networkingv1.DestinationRule{tlsRule("shop", "orders", networkingv1alpha3.ClientTLSSettings_ISTIO_MUTUAL)},
			},
			mode: "DISABLE", sends: "mtls", mismatch: MismatchMTLSDisabled, wantStatus: StatusFail,
		},
		{
			name:   "a DR in another namespace for a short host does not apply",
			target: target,
			in: modelInput{
				Pods:             []corev1.Pod{meshedPod("o-1", true)},
				PeerAuths:        []*securityv1.PeerAuthentication{peerAuth("shop", "default", strict, nil, nil)},
				DestinationRules: []*networkingv1.DestinationRule{tlsRule("web", "orders", networkingv1alpha3.ClientTLSSettings_DISABLE)},
			},
			mode: "STRICT", sends: "mtls", mismatch: MismatchNone, wantStatus: StatusPass,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Service = mtlsService()
			res := evaluateMTLS(tc.target, tc.in.view(t, tc.target))
			if err := CheckFacts(MTLSProbe{}.Meta(), res); err != nil {
				t.Fatal(err)
			}
			if len(res.Facts) != len(MTLSProbe{}.Meta().Facts) {
				t.Errorf("emitted %d facts, declared %d", len(res.Facts), len(MTLSProbe{}.Meta().Facts))
			}
			if got := res.Facts["mtls_upstream_mode"]; got != tc.mode {
				t.Errorf("upstream mode = %v, want %s", got, tc.mode)
			}
			if got := res.Facts["mtls_client_sends"]; got != tc.sends {
				t.Errorf("client sends = %v, want %s", got, tc.sends)
			}
			if got := res.Facts["mtls_mismatch"]; got != tc.mismatch {
				t.Errorf("mismatch = %v, want %s (%s)", got, tc.mismatch, res.Evidence.Raw)
			}
			if res.Status != tc.wantStatus {
				t.Errorf("status = %s, want %s: %s", res.Status, tc.wantStatus, res.Summary)
			}
		})
	}
}

// modelInput is a world for the config model: the target Service, its pods
// (each an endpoint), the calling pod and the rules.
type modelInput struct {
	Service          *corev1.Service
	Pods             []corev1.Pod
	Source           *corev1.Pod
	RootNamespace    string
	PeerAuths        []*securityv1.PeerAuthentication
	DestinationRules []*networkingv1.DestinationRule
	VirtualServices  []*networkingv1.VirtualService
	Mesh             mesh.MeshConfig
}

// view is what the probes' fetch would have built from these objects.
func (in modelInput) view(t *testing.T, target cluster.Target) callerview.View {
	t.Helper()
	root := in.RootNamespace
	if root == "" {
		root = "istio-system"
	}
	svc := in.Service
	objs := []runtime.Object{svc}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: svc.Name + "-x", Namespace: svc.Namespace,
		Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}}}
	for _, sp := range svc.Spec.Ports {
		name, port := sp.Name, sp.TargetPort.IntVal
		if sp.TargetPort.Type == intstr.String {
			port = 8080 // the pods' "http" container port
		}
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: &name, Port: &port})
	}
	for i := range in.Pods {
		p := in.Pods[i]
		ready := true
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.0.%d", i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}})
		objs = append(objs, &p)
	}
	objs = append(objs, slice)
	for _, pa := range in.PeerAuths {
		objs = append(objs, pa)
	}
	for _, dr := range in.DestinationRules {
		objs = append(objs, dr)
	}
	for _, vs := range in.VirtualServices {
		objs = append(objs, vs)
	}
	cfg := mesh.ConfigFromObjects(objs, in.Mesh, root)
	cv := callerview.View{Config: cfg, Caller: mesh.MeshedCallerIn(target.Namespace)}
	if in.Source != nil {
		cv.Caller, cv.CallerNamed = mesh.CallerFromPod(in.Source), true
	}
	for _, sp := range svc.Spec.Ports {
		if target.Port != 0 && sp.Port != target.Port {
			continue
		}
		v, err := cfg.ViewFor(cv.Caller, mesh.ServiceHost(svc.Name, svc.Namespace), sp.Port)
		if err != nil {
			t.Fatal(err)
		}
		cv.Views = append(cv.Views, v)
	}
	return cv
}
