package watch

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podstartup"
)

// The rollout script: times are offsets from t0, the moment the watch
// starts; old pods were created an hour before.
var t0 = time.Date(2025, 12, 2, 3, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

// podSpec is one pod's state at one moment of the script.
type podSpec struct {
	name    string
	hash    string
	created time.Duration
	// proxyStart, appStart: container starts (0: not started yet).
	proxyStart, appStart time.Duration
	ready                bool
	// restartedAt: the app's first instance ended then, and it restarted.
	restartedAt time.Duration
	hold        bool
}

func (s podSpec) pod() corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: s.name, UID: types.UID("uid-" + s.name), CreationTimestamp: at(s.created),
			Labels: map[string]string{"app": "orders", appsv1.DefaultDeploymentUniqueLabelKey: s.hash},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "orders"}, {Name: mesh.ProxyContainer}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if s.hold {
		p.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"pilot-agent", "wait"}}}}
	}
	if s.proxyStart != 0 {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: mesh.ProxyContainer,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(s.proxyStart)}}})
	}
	if s.appStart != 0 {
		app := corev1.ContainerStatus{Name: "orders", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(s.appStart)}}}
		if s.restartedAt != 0 {
			app.RestartCount = 1
			app.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, StartedAt: at(s.appStart), FinishedAt: at(s.restartedAt)}
			app.State.Running.StartedAt = at(s.restartedAt + time.Second)
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, app)
	}
	status := corev1.ConditionFalse
	if s.ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func deployment(gen, observed, replicas, updated, available, total int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", Generation: int64(gen)},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "orders"}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: int64(observed), Replicas: total, UpdatedReplicas: updated,
			AvailableReplicas: available, ReadyReplicas: available},
	}
}

// step is one poll of the script.
type step struct {
	at   time.Duration
	dep  *appsv1.Deployment
	pods []podSpec
}

func (s step) observation() Observation {
	o := Observation{At: t0.Add(s.at), Deployment: s.dep}
	for _, p := range s.pods {
		o.Pods = append(o.Pods, p.pod())
	}
	return o
}

var (
	oldA = podSpec{name: "orders-old-a", hash: "7c9f", created: -time.Hour, proxyStart: -time.Hour + time.Second, appStart: -time.Hour + 3*time.Second, ready: true, hold: true}
	oldB = podSpec{name: "orders-old-b", hash: "7c9f", created: -time.Hour, proxyStart: -time.Hour + time.Second, appStart: -time.Hour + 3*time.Second, ready: true, hold: true}
)

// logsFor is what the pods log in the script: Envoy is ready a second after
// its container starts, and the app of a pod that restarted was refused by
// its database at startup.
func logsFor(p corev1.Pod) podstartup.Logs {
	logs := podstartup.Logs{App: map[string][]byte{}, AppPrevious: map[string][]byte{}}
	if st, ok := mesh.ContainerStatus(&p, mesh.ProxyContainer); ok && st.State.Running != nil {
		ready := st.State.Running.StartedAt.Add(time.Second).UTC().Format("2006-01-02T15:04:05.000000Z")
		logs.Proxy = []byte(ready + "\tinfo\tEnvoy proxy is ready\n")
	}
	if st, ok := mesh.ContainerStatus(&p, "orders"); ok && st.RestartCount > 0 {
		start := st.LastTerminationState.Terminated.StartedAt.UTC().Format(time.RFC3339Nano)
		logs.AppPrevious["orders"] = []byte(start + " ERROR db: dial tcp 10.96.0.20:5432: connect: connection refused\n")
	}
	return logs
}

// play feeds the script to a judge, judging due pods as the watcher does.
func play(steps []step) *Judge {
	first := steps[0].observation()
	j := NewJudge("shop", "orders", first)
	var base []podstartup.Start
	for _, p := range j.Old(first) {
		base = append(base, podstartup.Of(&p, logsFor(p), mesh.MeshConfig{}))
	}
	j.SetBaseline(base)
	judgeDue(j)
	for _, s := range steps[1:] {
		j.Observe(s.observation())
		judgeDue(j)
	}
	return j
}

func judgeDue(j *Judge) {
	for _, p := range j.Due() {
		j.SetStartup(p.UID, podstartup.Of(&p, logsFor(p), mesh.MeshConfig{}))
	}
}
