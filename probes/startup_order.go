package probes

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podstartup"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
	corev1 "k8s.io/api/core/v1"
)

// StartupOrderProbe compares, per target pod, when the app started with when
// Envoy became ready, and looks for restarts soon after creation: the app that
// dials its database before the sidecar is up gets connection refused.
type StartupOrderProbe struct{}

func (StartupOrderProbe) Meta() Meta {
	return Meta{
		ID:    "startup-order",
		Title: "Container start order: app vs sidecar",
		Reads: []string{"pods", "pods/log (istio-proxy, app)", "configmaps (mesh config)"},
		Facts: []FactSpec{
			{"startup_native_sidecar", FactBool, "every meshed target pod runs its sidecar as a native sidecar (init container with restartPolicy Always)"},
			{"startup_hold_application", FactBool, "holdApplicationUntilProxyStarts is in effect on every meshed target pod"},
			{"startup_app_before_proxy", FactInt, "pods whose app container started before Envoy was ready: before pilot-agent logged it ready or, without that log, no later than the proxy container's start second (Envoy is never ready the second it starts)"},
			{"startup_early_restarts", FactInt, "pods restarted within EarlyRestartWindow (60 s) of creation"},
			{"startup_restart_reasons", FactList, "lastState termination reason and exit code of those restarts"},
			{"startup_connection_refused", FactInt, "pods whose app log shows connection refused in its first seconds"},
		},
	}
}

// maxPodsWithLogs bounds the pods whose logs are read, restarted pods first.
const maxPodsWithLogs = 5

type startupPod struct {
	Pod *corev1.Pod
	// ProxyLog, AppLogs (current and previous instance) may be empty when
	// the logs could not be read; the judgement then uses statuses only.
	ProxyLog    []byte
	AppLogs     map[string][]byte // container -> current log
	AppPrevLogs map[string][]byte // container -> previous instance log
	LogProblems []string
}

type startupInput struct {
	Pods []startupPod
	Mesh mesh.MeshConfig
}

func (StartupOrderProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchStartup(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = startupCommands(t, nil)
		return r
	}
	return evaluateStartup(t, in)
}

func fetchStartup(ctx context.Context, c cluster.Cluster, t cluster.Target) (startupInput, string, error) {
	var in startupInput
	var (
		svc           *corev1.Service
		meshErr, sErr error
		first         readgroup.Group
	)
	first.Go(func() { in.Mesh, meshErr = istioconfig.ReadMeshConfig(ctx, c) })
	first.Go(func() { svc, sErr = c.GetService(ctx, t.Namespace, t.Service) })
	first.Wait()
	if meshErr != nil {
		return in, "read the mesh config", meshErr
	}
	if sErr != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), sErr
	}
	pods, err := c.ListPods(ctx, t.Namespace, svc.Spec.Selector)
	if err != nil {
		return in, "list pods in " + t.Namespace, err
	}
	// Restarted pods first: they carry the evidence, and logs are read for a
	// few pods only.
	sort.SliceStable(pods, func(i, j int) bool { return restarts(&pods[i]) > restarts(&pods[j]) })
	in.Pods = make([]startupPod, len(pods))
	// Every log of every pod at once: each read fills only its own field.
	var logs readgroup.Group
	for i := range pods {
		sp := &in.Pods[i]
		*sp = startupPod{Pod: &pods[i], AppLogs: map[string][]byte{}, AppPrevLogs: map[string][]byte{}}
		if i >= maxPodsWithLogs {
			continue
		}
		ref := cluster.PodRef{Namespace: pods[i].Namespace, Name: pods[i].Name}
		apps := mesh.AppContainers(&pods[i])
		var proxyProblem string
		appLogs := make([][]byte, len(apps))
		prevLogs := make([][]byte, len(apps))
		prevProblems := make([]string, len(apps))
		var pod readgroup.Group
		if mesh.PodSidecar(&pods[i]) != mesh.SidecarNone {
			pod.Go(func() {
				if b, err := c.Logs(ctx, ref, cluster.LogOptions{Container: mesh.ProxyContainer, LimitBytes: cluster.DefaultLogLimit}); err == nil {
					sp.ProxyLog = b
				} else {
					proxyProblem = cluster.AccessProblem("read istio-proxy log of "+ref.String(), err)
				}
			})
		}
		for j, app := range apps {
			pod.Go(func() {
				if b, err := c.Logs(ctx, ref, cluster.LogOptions{Container: app.Name, LimitBytes: 256 << 10}); err == nil {
					appLogs[j] = b
				}
			})
			if st, ok := mesh.ContainerStatus(&pods[i], app.Name); ok && st.RestartCount > 0 {
				pod.Go(func() {
					if b, err := c.Logs(ctx, ref, cluster.LogOptions{Container: app.Name, Previous: true, LimitBytes: 256 << 10}); err == nil {
						prevLogs[j] = b
					} else {
						prevProblems[j] = cluster.AccessProblem("read previous log of "+ref.String()+" "+app.Name, err)
					}
				})
			}
		}
		logs.Go(func() {
			pod.Wait()
			// In the order the reads were once made one by one.
			if proxyProblem != "" {
				sp.LogProblems = append(sp.LogProblems, proxyProblem)
			}
			for j, app := range apps {
				if appLogs[j] != nil {
					sp.AppLogs[app.Name] = appLogs[j]
				}
				if prevLogs[j] != nil {
					sp.AppPrevLogs[app.Name] = prevLogs[j]
				}
				if prevProblems[j] != "" {
					sp.LogProblems = append(sp.LogProblems, prevProblems[j])
				}
			}
		})
	}
	logs.Wait()
	return in, "", nil
}

func evaluateStartup(t cluster.Target, in startupInput) Result {
	res := Result{Commands: startupCommands(t, in.Pods)}
	meshHold := in.Mesh.DefaultProxyConfig().GetHoldApplicationUntilProxyStarts().GetValue()
	meshed, native, hold := 0, 0, 0
	appBeforeProxy, earlyRestarts, refused := 0, 0, 0
	// refusedUnread: a pod restarted early and none of its app's logs could
	// be read, so "no connection refused" is not known.
	refusedUnread := false
	var reasons, problems, notInjected []string
	res.Evidence.Columns = []string{"pod", "sidecar", "hold app", "proxy ready", "app started", "restarts", "last termination", "connection refused"}

	for _, sp := range in.Pods {
		pod := sp.Pod
		start := podstartup.Of(pod, podstartup.Logs{Proxy: sp.ProxyLog, App: sp.AppLogs, AppPrevious: sp.AppPrevLogs}, in.Mesh)
		if start.HoldNotInjected {
			notInjected = append(notInjected, pod.Name)
		}
		if start.Sidecar != mesh.SidecarNone {
			meshed++
			if start.Sidecar == mesh.SidecarNative {
				native++
			}
			if start.HoldApplication {
				hold++
			}
		}
		if start.AppBeforeProxy {
			appBeforeProxy++
		}
		if start.EarlyRestart {
			earlyRestarts++
		}
		if start.ConnectionRefused {
			refused++
		}
		reasons = append(reasons, start.RestartReasons...)
		refusedUnread = refusedUnread || start.RefusedUnknown
		problems = append(problems, sp.LogProblems...)
		created := pod.CreationTimestamp.Time
		res.Evidence.Rows = append(res.Evidence.Rows, []string{
			pod.Name, string(start.Sidecar), wording.YesNo(start.HoldApplication), relative(start.ProxyReady, created, start.ProxyReadyFromLog), relative(start.AppStarted, created, true),
			fmt.Sprint(restarts(pod)), wording.Dash(start.LastTermination), wording.YesNo(start.ConnectionRefused),
		})
	}

	allNative := meshed > 0 && native == meshed
	allHold := meshed > 0 && hold == meshed
	res.Facts = Facts{
		"startup_native_sidecar":     allNative,
		"startup_hold_application":   allHold,
		"startup_app_before_proxy":   appBeforeProxy,
		"startup_early_restarts":     earlyRestarts,
		"startup_restart_reasons":    nonNil(reasons),
		"startup_connection_refused": refused,
	}
	if refused == 0 && refusedUnread {
		// Unknown is not zero: the restart's log would say.
		delete(res.Facts, "startup_connection_refused")
	}
	raw := []string{fmt.Sprintf("mesh defaultConfig holdApplicationUntilProxyStarts: %v (applies at injection: existing pods keep what they were injected with)", meshHold)}
	if len(notInjected) > 0 {
		raw = append(raw, fmt.Sprintf("holdApplicationUntilProxyStarts is asked for (annotation or mesh default) but %s were injected without it (no pilot-agent wait postStart hook): restart them to get it",
			strings.Join(notInjected, ", ")))
	}
	raw = append(raw, problems...)
	res.Evidence.Raw = strings.Join(raw, "\n")

	switch {
	case len(in.Pods) == 0:
		res.Status = StatusSkipped
		res.Summary = "no pods selected by the service: nothing to compare"
	case earlyRestarts > 0 && !allNative && !allHold:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("%d pod(s) restarted within %s of creation; app starts before Envoy is ready (%d pod(s)), no holdApplicationUntilProxyStarts", earlyRestarts, podstartup.EarlyRestartWindow, appBeforeProxy)
	case earlyRestarts > 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("%d pod(s) restarted within %s of creation although the app waits for the proxy: look at the app's own dependencies", earlyRestarts, podstartup.EarlyRestartWindow)
	case appBeforeProxy > 0 && !allNative && !allHold:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("app starts before Envoy is ready on %d pod(s): outbound calls at startup can fail", appBeforeProxy)
	default:
		res.Status = StatusPass
		res.Summary = "no early restarts; start order is safe"
	}
	return res
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, st := range pod.Status.ContainerStatuses {
		n += st.RestartCount
	}
	return n
}

func relative(t, created time.Time, known bool) string {
	if t.IsZero() || !known && created.IsZero() {
		return "-"
	}
	if created.IsZero() {
		return t.UTC().Format(time.RFC3339)
	}
	s := "+" + t.Sub(created).Round(100*time.Millisecond).String()
	if !known {
		s += " (container start)"
	}
	return s
}

func startupCommands(t cluster.Target, pods []startupPod) []string {
	cmds := []string{fmt.Sprintf("kubectl get pods -n %s -o custom-columns=NAME:.metadata.name,CREATED:.metadata.creationTimestamp,RESTARTS:.status.containerStatuses[*].restartCount", t.Namespace)}
	if len(pods) > 0 {
		p := pods[0].Pod
		cmds = append(cmds,
			fmt.Sprintf("kubectl get pod -n %s %s -o jsonpath='{range .status.containerStatuses[*]}{.name}{\"\\t\"}{.state.running.startedAt}{\"\\t\"}{.lastState.terminated.reason}{\"\\n\"}{end}'", p.Namespace, p.Name),
			fmt.Sprintf("kubectl logs -n %s %s -c %s | grep '%s'", p.Namespace, p.Name, mesh.ProxyContainer, podstartup.ProxyReadyMarker),
		)
		if apps := mesh.AppContainers(p); len(apps) > 0 {
			cmds = append(cmds, fmt.Sprintf("kubectl logs -n %s %s -c %s --previous | head -50", p.Namespace, p.Name, apps[0].Name))
		}
	}
	return cmds
}
