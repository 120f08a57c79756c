package picker

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

func pod(name string, labels map[string]string, sidecar mesh.SidecarKind, phase corev1.PodPhase, ready bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
	always := corev1.ContainerRestartPolicyAlways
	switch sidecar {
	case mesh.SidecarClassic:
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: mesh.ProxyContainer})
	case mesh.SidecarNative:
		p.Spec.InitContainers = []corev1.Container{{Name: mesh.ProxyContainer, RestartPolicy: &always}}
	}
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}}
	return p
}

func TestKubeCatalog(t *testing.T) {
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"istio-injection": "enabled"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "payments", Labels: map[string]string{"istio.io/rev": "canary"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "reviews", Namespace: "shop"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "reviews"},
			Ports:    []corev1.ServicePort{{Port: 9080, Protocol: corev1.ProtocolTCP}},
		}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ghost", Namespace: "shop"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "nothing"},
			Ports:    []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
		}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Port: 5432, Protocol: corev1.ProtocolTCP}},
		}},
		pod("reviews-1", map[string]string{"app": "reviews"}, mesh.SidecarClassic, corev1.PodRunning, true),
		pod("reviews-2", map[string]string{"app": "reviews"}, mesh.SidecarNative, corev1.PodRunning, false),
		pod("reviews-3", map[string]string{"app": "reviews"}, mesh.SidecarNone, corev1.PodRunning, true),
		pod("reviews-old", map[string]string{"app": "reviews"}, mesh.SidecarClassic, corev1.PodSucceeded, false),
		pod("web-1", map[string]string{"app.kubernetes.io/name": "web"}, mesh.SidecarClassic, corev1.PodRunning, true),
	}
	cat := KubeCatalog{Kube: fake.NewSimpleClientset(objs...)}
	ctx := context.Background()

	nss, err := cat.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantNS := []NamespaceSummary{{"kube-system", "none"}, {"payments", "revision=canary"}, {"shop", "enabled"}}
	if !reflect.DeepEqual(nss, wantNS) {
		t.Errorf("namespaces = %+v\nwant %+v", nss, wantNS)
	}

	svcs, err := cat.Services(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	wantSvc := []ServiceSummary{
		{Name: "db", Ports: []string{"5432/TCP"}, NoSelector: true},
		{Name: "ghost", Ports: []string{"80/TCP"}},
		// The finished pod is not counted; the one without a sidecar is.
		{Name: "reviews", Ports: []string{"9080/TCP"}, Pods: 3, WithSidecar: 2},
	}
	if !reflect.DeepEqual(svcs, wantSvc) {
		t.Errorf("services = %+v\nwant %+v", svcs, wantSvc)
	}

	pods, err := cat.Pods(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	wantPods := []PodSummary{
		{Name: "reviews-1", Ready: true, Sidecar: mesh.SidecarClassic, App: "reviews"},
		{Name: "reviews-2", Ready: false, Sidecar: mesh.SidecarNative, App: "reviews"},
		{Name: "reviews-3", Ready: true, Sidecar: mesh.SidecarNone, App: "reviews"},
		{Name: "web-1", Ready: true, Sidecar: mesh.SidecarClassic, App: "web"},
	}
	if !reflect.DeepEqual(pods, wantPods) {
		t.Errorf("pods = %+v\nwant %+v", pods, wantPods)
	}
}

// A refusal keeps its API type, so the picker can name the missing verb.
func TestKubeCatalogForbidden(t *testing.T) {
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("list", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), "", nil)
	})
	_, err := KubeCatalog{Kube: cs}.Namespaces(context.Background())
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want forbidden", err)
	}
	if got := cluster.AccessProblem("list namespaces", err); got == "" || got[:9] != "forbidden" {
		t.Fatalf("AccessProblem = %q", got)
	}
}
