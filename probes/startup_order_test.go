package probes

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podstartup"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"istio.io/api/annotation"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var podCreated = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(podCreated.Add(d)) }

// ordersPod is the orders-api pod of the startup race: the app container
// starts 200 ms after creation, Envoy is ready at +2.5 s, the app's first
// instance dials postgres, is refused and exits 1 at +1.4 s, and restarts.
func ordersPod(restarted bool) *corev1.Pod {
	app := corev1.ContainerStatus{Name: "orders-api", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(200 * time.Millisecond)}}}
	if restarted {
		app.RestartCount = 1
		app.State.Running.StartedAt = at(3 * time.Second)
		app.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, StartedAt: at(200 * time.Millisecond), FinishedAt: at(1400 * time.Millisecond)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-api-5c9f-x2x", Namespace: "shop", CreationTimestamp: metav1.NewTime(podCreated)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "orders-api"}, {Name: mesh.ProxyContainer}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			app,
			{Name: mesh.ProxyContainer, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(250 * time.Millisecond)}}},
		}},
	}
}

const ordersProxyLog = `2026-12-02T03:00:00.300000Z	info	FLAG: --concurrency="2"
2026-12-02T03:00:01.900000Z	info	Readiness succeeded in 1.6s
2026-12-02T03:00:02.500000Z	info	Envoy proxy is ready
`

const ordersPreviousLog = `2026-12-02T03:00:00.900Z INFO starting orders-api v1.8.2
2026-12-02T03:00:01.300Z ERROR db: dial tcp 10.96.0.20:5432: connect: connection refused
2026-12-02T03:00:01.390Z FATAL cannot reach postgres, exiting
`

func TestStartupOrderFindsTheOrdersAPIRace(t *testing.T) {
	in := startupInput{Pods: []startupPod{{
		Pod:         ordersPod(true),
		ProxyLog:    []byte(ordersProxyLog),
		AppLogs:     map[string][]byte{"orders-api": []byte("2026-12-02T03:00:03.100Z INFO connected to postgres\n")},
		AppPrevLogs: map[string][]byte{"orders-api": []byte(ordersPreviousLog)},
	}}}
	res := evaluateStartup(cluster.Target{Namespace: "shop", Service: "orders-api"}, in)
	if err := CheckFacts(StartupOrderProbe{}.Meta(), res); err != nil {
		t.Fatal(err)
	}
	want := Facts{"startup_app_before_proxy": 1, "startup_early_restarts": 1, "startup_connection_refused": 1, "startup_native_sidecar": false, "startup_hold_application": false}
	for k, v := range want {
		if res.Facts[k] != v {
			t.Errorf("%s = %v, want %v", k, res.Facts[k], v)
		}
	}
	if reasons := res.Facts["startup_restart_reasons"].([]string); len(reasons) != 1 || reasons[0] != "orders-api-5c9f-x2x: orders-api Error exit 1 at +1s" {
		t.Errorf("restart reasons = %q", reasons)
	}
	if res.Status != StatusFail {
		t.Errorf("status = %s: %s", res.Status, res.Summary)
	}
}

func TestStartupOrderHoldAndNativeSidecarAreSafe(t *testing.T) {
	held := ordersPod(false)
	held.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"pilot-agent", "wait"}}}}
	always := corev1.ContainerRestartPolicyAlways
	native := ordersPod(false)
	native.Spec.Containers = native.Spec.Containers[:1]
	native.Spec.InitContainers = []corev1.Container{{Name: mesh.ProxyContainer, RestartPolicy: &always}}
	for name, pod := range map[string]*corev1.Pod{"postStart hook": held, "native sidecar": native} {
		t.Run(name, func(t *testing.T) {
			res := evaluateStartup(cluster.Target{Namespace: "shop", Service: "orders-api"}, startupInput{Pods: []startupPod{{Pod: pod}}})
			if res.Status != StatusPass {
				t.Errorf("status = %s: %s", res.Status, res.Summary)
			}
			protected := res.Facts["startup_hold_application"] == true || res.Facts["startup_native_sidecar"] == true
			if !protected {
				t.Errorf("neither hold nor native detected: %v", res.Facts)
			}
		})
	}
}

// The annotation and the mesh default act at injection only: a pod injected
// before they were set has no pilot-agent wait hook and is not held, so the
// verification "hold is in effect" cannot pass on a ConfigMap edit alone.
func TestStartupOrderHoldAskedForButNotInjected(t *testing.T) {
	annotated := ordersPod(true)
	annotated.Annotations = map[string]string{annotation.ProxyConfig.Name: "holdApplicationUntilProxyStarts: true\n"}
	meshHold := mesh.MeshConfig{Raw: &meshv1alpha1.MeshConfig{DefaultConfig: &meshv1alpha1.ProxyConfig{HoldApplicationUntilProxyStarts: wrapperspb.Bool(true)}}}
	for name, in := range map[string]startupInput{
		"annotation":   {Pods: []startupPod{{Pod: annotated, ProxyLog: []byte(ordersProxyLog)}}},
		"mesh default": {Pods: []startupPod{{Pod: ordersPod(true), ProxyLog: []byte(ordersProxyLog)}}, Mesh: meshHold},
	} {
		t.Run(name, func(t *testing.T) {
			res := evaluateStartup(cluster.Target{Namespace: "shop", Service: "orders-api"}, in)
			if res.Facts["startup_hold_application"] != false {
				t.Errorf("hold counted without the injected hook: %v", res.Facts)
			}
			if res.Status != StatusFail || !strings.Contains(res.Evidence.Raw, "injected without it") {
				t.Errorf("status %s, raw %q", res.Status, res.Evidence.Raw)
			}
		})
	}
}

func TestStartupOrderLateRestartIsNotAStartupRace(t *testing.T) {
	pod := ordersPod(true)
	st := &pod.Status.ContainerStatuses[0]
	st.LastTerminationState.Terminated.StartedAt = at(time.Hour)
	st.LastTerminationState.Terminated.FinishedAt = at(2 * time.Hour)
	st.LastTerminationState.Terminated.Reason = "OOMKilled"
	res := evaluateStartup(cluster.Target{Namespace: "shop", Service: "orders-api"}, startupInput{Pods: []startupPod{{Pod: pod, ProxyLog: []byte(ordersProxyLog)}}})
	if res.Facts["startup_early_restarts"] != 0 {
		t.Errorf("a restart two hours in counted as early: %v", res.Facts)
	}
}

// A pod that restarted at startup, whose app logs could not be read: "no
// connection refused" is not known, so the fact is left unknown rather
// than 0, and the runbook can say the previous log would confirm the race.
func TestStartupOrderUnreadLogLeavesConnectionRefusedUnknown(t *testing.T) {
	in := startupInput{Pods: []startupPod{{Pod: ordersPod(true), ProxyLog: []byte(ordersProxyLog), LogProblems: []string{"cannot read the previous orders-api log"}}}}
	res := evaluateStartup(cluster.Target{Namespace: "shop", Service: "orders-api"}, in)
	if v, ok := res.Facts["startup_connection_refused"]; ok {
		t.Errorf("startup_connection_refused = %v, want unknown", v)
	}
	if res.Facts["startup_early_restarts"] != 1 {
		t.Errorf("startup_early_restarts = %v, want 1", res.Facts["startup_early_restarts"])
	}
	in.Pods[0].AppPrevLogs = map[string][]byte{"orders-api": []byte("2026-12-02T03:00:00.900Z INFO starting\n")}
	if res := evaluateStartup(cluster.Target{Namespace: "shop", Service: "orders-api"}, in); res.Facts["startup_connection_refused"] != 0 {
		t.Errorf("with the previous log read and no refusal: startup_connection_refused = %v, want 0", res.Facts["startup_connection_refused"])
	}
}

// The rollout watch judges a pod with podstartup.Of, the probe each of
// the Service's pods: on one pod they agree.
func TestPodStartAgreesWithTheProbe(t *testing.T) {
	target := cluster.Target{Namespace: "shop"}
	race := ordersPod(true)
	logs := podstartup.Logs{
		Proxy:       []byte(ordersProxyLog),
		AppPrevious: map[string][]byte{"orders-api": []byte(ordersPreviousLog)},
	}
	got := podstartup.Of(race, logs, mesh.MeshConfig{})
	res := evaluateStartup(target, startupInput{Pods: []startupPod{{Pod: race, ProxyLog: logs.Proxy, AppLogs: map[string][]byte{}, AppPrevLogs: logs.AppPrevious}}})
	if !got.AppBeforeProxy || !got.EarlyRestart || !got.ConnectionRefused || got.HoldApplication || res.Status != StatusFail {
		t.Errorf("the orders-api race: %+v; the probe: %s %q", got, res.Status, res.Summary)
	}
	if res.Facts["startup_app_before_proxy"] != 1 || res.Facts["startup_early_restarts"] != 1 || res.Facts["startup_connection_refused"] != 1 {
		t.Errorf("the probe's facts %v disagree with the pod's start %+v", res.Facts, got)
	}
	if len(got.RestartReasons) != 1 || len(res.Evidence.Rows) != 1 || len(res.Evidence.Rows[0]) != len(res.Evidence.Columns) {
		t.Errorf("reasons %q, rows %q", got.RestartReasons, res.Evidence.Rows)
	}

	held := ordersPod(false)
	held.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"pilot-agent", "wait"}}}}
	got = podstartup.Of(held, podstartup.Logs{}, mesh.MeshConfig{})
	res = evaluateStartup(target, startupInput{Pods: []startupPod{{Pod: held}}})
	if got.EarlyRestart || got.ConnectionRefused || !got.HoldApplication || res.Status != StatusPass || got.Sidecar != mesh.SidecarClassic {
		t.Errorf("a held pod: %+v; the probe: %s %q", got, res.Status, res.Summary)
	}
	if !slices.Contains(res.Evidence.Columns, "proxy ready") {
		t.Errorf("columns %q", res.Evidence.Columns)
	}
}
