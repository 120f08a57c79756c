package probes

import (
	"reflect"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"google.golang.org/protobuf/types/known/durationpb"
	"istio.io/api/annotation"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func shutdownPod(name string, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "checkout"}, {Name: mesh.ProxyContainer}}},
	}
	if mutate != nil {
		mutate(&p)
	}
	return p
}

func TestShutdownOrder(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	always := corev1.ContainerRestartPolicyAlways
	cases := []struct {
		name    string
		pods    []corev1.Pod
		mesh    *meshv1alpha1.MeshConfig
		atRisk  bool
		drain   bool
		status  Status
		terming int
	}{
		{"bare classic sidecar mid-rollout", []corev1.Pod{
			shutdownPod("c-old", func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
			shutdownPod("c-new", nil),
		}, nil, true, false, StatusWarn, 1},
		{"EXIT_ON_ZERO_ACTIVE_CONNECTIONS in the injected env", []corev1.Pod{shutdownPod("c", func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: exitOnZeroActive, Value: "true"}}
		})}, nil, false, true, StatusPass, 0},
		{"terminationDrainDuration in the pod annotation", []corev1.Pod{shutdownPod("c", func(p *corev1.Pod) {
			p.Annotations = map[string]string{annotation.ProxyConfig.Name: "terminationDrainDuration: 30s"}
		})}, nil, false, true, StatusPass, 0},
		{"mesh-wide drain default", []corev1.Pod{shutdownPod("c", nil)},
			&meshv1alpha1.MeshConfig{DefaultConfig: &meshv1alpha1.ProxyConfig{TerminationDrainDuration: durationpb.New(20 * time.Second)}}, false, true, StatusPass, 0},
		// Setting the default explicitly, or less, drains no longer than
		// setting nothing.
		{"terminationDrainDuration at the 5 s default", []corev1.Pod{shutdownPod("c", func(p *corev1.Pod) {
			p.Annotations = map[string]string{annotation.ProxyConfig.Name: "terminationDrainDuration: 5s"}
		})}, nil, true, false, StatusWarn, 0},
		{"TERMINATION_DRAIN_DURATION_SECONDS below the default in the injected env", []corev1.Pod{shutdownPod("c", func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "TERMINATION_DRAIN_DURATION_SECONDS", Value: "3"}}
		})}, nil, true, false, StatusWarn, 0},
		{"TERMINATION_DRAIN_DURATION_SECONDS above the default in the injected env", []corev1.Pod{shutdownPod("c", func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "TERMINATION_DRAIN_DURATION_SECONDS", Value: "45"}}
		})}, nil, false, true, StatusPass, 0},
		// The app's preStop delays the app's SIGTERM, not the proxy's: Envoy
		// still exits 5 s in.
		{"app preStop only", []corev1.Pod{shutdownPod("c", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 10}}}
		})}, nil, true, false, StatusWarn, 0},
		{"native sidecar", []corev1.Pod{shutdownPod("c", func(p *corev1.Pod) {
			p.Spec.Containers = p.Spec.Containers[:1]
			p.Spec.InitContainers = []corev1.Container{{Name: mesh.ProxyContainer, RestartPolicy: &always}}
		})}, nil, false, false, StatusPass, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := evaluateShutdown(cluster.Target{Namespace: "shop", Service: "checkout"}, shutdownInput{Pods: tc.pods, Mesh: mesh.MeshConfig{Raw: tc.mesh}})
			if err := CheckFacts(ShutdownOrderProbe{}.Meta(), res); err != nil {
				t.Fatal(err)
			}
			if res.Facts["shutdown_at_risk"] != tc.atRisk || res.Facts["shutdown_drain_configured"] != tc.drain {
				t.Errorf("facts = %v", res.Facts)
			}
			if res.Facts["shutdown_pods_terminating"] != tc.terming {
				t.Errorf("terminating = %v, want %d", res.Facts["shutdown_pods_terminating"], tc.terming)
			}
			if res.Status != tc.status {
				t.Errorf("status = %s: %s", res.Status, res.Summary)
			}
		})
	}
}

// Ambient pods have no proxy of their own to drain: what the step reads of
// them is whether the app has a preStop and which of them are ending, by
// IP, for the ztunnel and gateway failures to be matched against.
func TestShutdownOrderAmbient(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC))
	ambientPod := func(name, ip string, mutate func(*corev1.Pod)) corev1.Pod {
		return shutdownPod(name, func(p *corev1.Pod) {
			p.Spec.Containers = p.Spec.Containers[:1]
			p.Annotations = map[string]string{annotation.AmbientRedirection.Name: mesh.RedirectionEnabled}
			p.Status.PodIP = ip
			if mutate != nil {
				mutate(p)
			}
		})
	}
	preStop := func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
	}
	ending := func(p *corev1.Pod) { p.DeletionTimestamp = &now }
	cases := []struct {
		name     string
		pods     []corev1.Pod
		prestop  bool
		ambient  int
		ips      []string
		status   Status
		terminal []string
	}{
		{"rollout without preStop", []corev1.Pod{ambientPod("o-old", "10.0.1.7", ending), ambientPod("o-new", "10.0.1.9", nil)},
			false, 2, []string{"10.0.1.7", "10.0.1.9"}, StatusWarn, []string{"10.0.1.7"}},
		{"rollout with preStop", []corev1.Pod{ambientPod("o-old", "10.0.1.7", func(p *corev1.Pod) { ending(p); preStop(p) }), ambientPod("o-new", "10.0.1.9", preStop)},
			true, 2, []string{"10.0.1.7", "10.0.1.9"}, StatusPass, []string{"10.0.1.7"}},
		{"no rollout, no preStop", []corev1.Pod{ambientPod("o", "10.0.1.9", nil)},
			false, 1, []string{"10.0.1.9"}, StatusPass, []string{}},
		// Not enrolled by the CNI: ztunnel does not carry it.
		{"no redirection annotation", []corev1.Pod{shutdownPod("o", func(p *corev1.Pod) { p.Spec.Containers = p.Spec.Containers[:1] })},
			false, 0, []string{}, StatusPass, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := evaluateShutdown(cluster.Target{Namespace: "shop", Service: "orders"}, shutdownInput{Pods: tc.pods})
			if err := CheckFacts(ShutdownOrderProbe{}.Meta(), res); err != nil {
				t.Fatal(err)
			}
			if res.Facts["shutdown_ambient_pods"] != tc.ambient || res.Facts["shutdown_ambient_app_prestop"] != tc.prestop {
				t.Errorf("ambient %v prestop %v, want %d %v", res.Facts["shutdown_ambient_pods"], res.Facts["shutdown_ambient_app_prestop"], tc.ambient, tc.prestop)
			}
			if !reflect.DeepEqual(res.Facts["shutdown_terminating_ips"], tc.terminal) || !reflect.DeepEqual(res.Facts["shutdown_pod_ips"], tc.ips) {
				t.Errorf("terminating %v pods %v", res.Facts["shutdown_terminating_ips"], res.Facts["shutdown_pod_ips"])
			}
			if res.Facts["shutdown_at_risk"] != false {
				t.Errorf("at risk without a classic sidecar")
			}
			if res.Status != tc.status {
				t.Errorf("status = %s: %s", res.Status, res.Summary)
			}
		})
	}
}
