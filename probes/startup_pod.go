package probes

import (
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	corev1 "k8s.io/api/core/v1"
)

// PodStartupLogs are the logs of one pod that the startup judgement reads;
// any may be empty when it could not be read.
type PodStartupLogs struct {
	Proxy []byte
	// App and AppPrevious map an app container to its current and
	// previous-instance log.
	App         map[string][]byte
	AppPrevious map[string][]byte
}

// PodStartup is the startup-order probe's verdict on one pod.
type PodStartup struct {
	Status  Status
	Summary string
	// Sidecar is how the pod carries its proxy; HoldApplication says the
	// app waits for Envoy (holdApplicationUntilProxyStarts).
	Sidecar         mesh.SidecarKind
	HoldApplication bool
	// AppBeforeProxy: an app container started before Envoy was ready.
	AppBeforeProxy bool
	// EarlyRestart: an app container restarted within 60 s of creation;
	// RestartReasons says how (termination reason, exit code, when).
	EarlyRestart   bool
	RestartReasons []string
	// ConnectionRefused: the app log shows "connection refused" in its
	// first seconds.
	ConnectionRefused bool
	// Row is the probe's evidence row for the pod.
	Row []string
}

// EvaluatePodStartup judges one pod exactly as the startup-order probe
// judges each target pod, so `watch` and the runbook agree on what a bad
// start is.
func EvaluatePodStartup(pod *corev1.Pod, logs PodStartupLogs, meshCfg mesh.MeshConfig) PodStartup {
	sp := startupPod{Pod: pod, ProxyLog: logs.Proxy, AppLogs: logs.App, AppPrevLogs: logs.AppPrevious}
	if sp.AppLogs == nil {
		sp.AppLogs = map[string][]byte{}
	}
	if sp.AppPrevLogs == nil {
		sp.AppPrevLogs = map[string][]byte{}
	}
	res := evaluateStartup(cluster.Target{Namespace: pod.Namespace}, startupInput{Pods: []startupPod{sp}, Mesh: meshCfg})
	out := PodStartup{
		Status:            res.Status,
		Summary:           res.Summary,
		Sidecar:           mesh.PodSidecar(pod),
		HoldApplication:   res.Facts["startup_hold_application"] == true,
		AppBeforeProxy:    res.Facts["startup_app_before_proxy"] == 1,
		EarlyRestart:      res.Facts["startup_early_restarts"] == 1,
		ConnectionRefused: res.Facts["startup_connection_refused"] == 1,
	}
	if r, ok := res.Facts["startup_restart_reasons"].([]string); ok {
		out.RestartReasons = r
	}
	if len(res.Evidence.Rows) == 1 {
		out.Row = res.Evidence.Rows[0]
	}
	return out
}

// StartupColumns are the columns of PodStartup.Row.
func StartupColumns() []string {
	return evaluateStartup(cluster.Target{}, startupInput{}).Evidence.Columns
}
