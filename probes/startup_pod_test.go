package probes

import (
	"slices"
	"testing"

	"github.com/meshtriage/meshtriage/probes/mesh"
	corev1 "k8s.io/api/core/v1"
)

func TestEvaluatePodStartupAgreesWithTheProbe(t *testing.T) {
	logs := PodStartupLogs{
		Proxy:       []byte(ordersProxyLog),
		AppPrevious: map[string][]byte{"orders-api": []byte(ordersPreviousLog)},
	}
	got := EvaluatePodStartup(ordersPod(true), logs, mesh.MeshConfig{})
	if !got.AppBeforeProxy || !got.EarlyRestart || !got.ConnectionRefused || got.HoldApplication || got.Status != StatusFail {
		t.Errorf("the orders-api race: %+v", got)
	}
	if len(got.RestartReasons) != 1 || len(got.Row) != len(StartupColumns()) {
		t.Errorf("reasons %q, row %q", got.RestartReasons, got.Row)
	}

	held := ordersPod(false)
	held.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"pilot-agent", "wait"}}}}
	got = EvaluatePodStartup(held, PodStartupLogs{}, mesh.MeshConfig{})
	if got.EarlyRestart || got.ConnectionRefused || !got.HoldApplication || got.Status != StatusPass || got.Sidecar != mesh.SidecarClassic {
		t.Errorf("a held pod: %+v", got)
	}
	if !slices.Contains(StartupColumns(), "proxy ready") {
		t.Errorf("columns %q", StartupColumns())
	}
}
