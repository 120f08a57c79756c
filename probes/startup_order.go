package probes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
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

// EarlyRestartWindow is how soon after creation a restart counts as a
// startup failure; the rollout watch judges new pods with it too.
const EarlyRestartWindow = 60 * time.Second

// Windows that define "at startup".
const (
	startupLogWindow = 30 * time.Second
	maxPodsWithLogs  = 5
)

// proxyReadyMarker is what pilot-agent logs once Envoy answers its readiness
// check.
const proxyReadyMarker = "Envoy proxy is ready"

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
		kind := mesh.PodSidecar(pod)
		holdApp := holdsApplication(pod)
		if kind == mesh.SidecarClassic && !holdApp && holdRequested(pod, meshHold) {
			notInjected = append(notInjected, pod.Name)
		}
		if kind != mesh.SidecarNone {
			meshed++
			if kind == mesh.SidecarNative {
				native++
			}
			if holdApp {
				hold++
			}
		}
		created := pod.CreationTimestamp.Time
		proxyReady, readyKnown := proxyReadyTime(sp.ProxyLog)
		if !readyKnown && kind != mesh.SidecarNone {
			// Without the log, the proxy container's start is the earliest
			// Envoy could have been ready.
			if st, ok := mesh.ContainerStatus(pod, mesh.ProxyContainer); ok {
				if s := firstStart(st); !s.IsZero() {
					proxyReady = s
				}
			}
		}
		appStart := time.Time{}
		podRestarted, podRefused, podBefore := false, false, false
		var lastTerm string
		for _, app := range mesh.AppContainers(pod) {
			st, ok := mesh.ContainerStatus(pod, app.Name)
			if !ok {
				continue
			}
			s := firstStart(st)
			if appStart.IsZero() || (!s.IsZero() && s.Before(appStart)) {
				appStart = s
			}
			if kind != mesh.SidecarNone && !s.IsZero() && !proxyReady.IsZero() && appBeforeReady(s, proxyReady, readyKnown) {
				podBefore = true
			}
			if term := st.LastTerminationState.Terminated; term != nil && st.RestartCount > 0 {
				end := term.FinishedAt.Time
				if end.IsZero() {
					end = term.StartedAt.Time
				}
				if !created.IsZero() && !end.IsZero() && end.Sub(created) <= EarlyRestartWindow {
					podRestarted = true
					lastTerm = fmt.Sprintf("%s %s exit %d at +%s", app.Name, term.Reason, term.ExitCode, end.Sub(created).Round(time.Second))
					reasons = append(reasons, pod.Name+": "+lastTerm)
				} else if lastTerm == "" {
					lastTerm = fmt.Sprintf("%s %s exit %d", app.Name, term.Reason, term.ExitCode)
				}
			}
			if connectionRefusedAtStart(sp.AppPrevLogs[app.Name]) || connectionRefusedAtStart(sp.AppLogs[app.Name]) {
				podRefused = true
			}
			if podRestarted && sp.AppPrevLogs[app.Name] == nil && sp.AppLogs[app.Name] == nil {
				refusedUnread = true
			}
		}
		if podBefore {
			appBeforeProxy++
		}
		if podRestarted {
			earlyRestarts++
		}
		if podRefused {
			refused++
		}
		problems = append(problems, sp.LogProblems...)
		res.Evidence.Rows = append(res.Evidence.Rows, []string{
			pod.Name, string(kind), wording.YesNo(holdApp), relative(proxyReady, created, readyKnown), relative(appStart, created, true),
			fmt.Sprint(restarts(pod)), wording.Dash(lastTerm), wording.YesNo(podRefused),
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
		res.Summary = fmt.Sprintf("%d pod(s) restarted within %s of creation; app starts before Envoy is ready (%d pod(s)), no holdApplicationUntilProxyStarts", earlyRestarts, EarlyRestartWindow, appBeforeProxy)
	case earlyRestarts > 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("%d pod(s) restarted within %s of creation although the app waits for the proxy: look at the app's own dependencies", earlyRestarts, EarlyRestartWindow)
	case appBeforeProxy > 0 && !allNative && !allHold:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("app starts before Envoy is ready on %d pod(s): outbound calls at startup can fail", appBeforeProxy)
	default:
		res.Status = StatusPass
		res.Summary = "no early restarts; start order is safe"
	}
	return res
}

// holdsApplication reports whether the pod was injected with
// holdApplicationUntilProxyStarts. The injector turns it into a postStart
// hook running `pilot-agent wait` on istio-proxy, and that hook is what holds
// the app: the pod annotation and the mesh default are read only at
// injection, so a pod injected before they were set (the usual state right
// after the fix is applied and before the rollout restart) is not held
// whatever they say now.
func holdsApplication(pod *corev1.Pod) bool {
	c, ok := mesh.ProxyContainerSpec(pod)
	if !ok || c.Lifecycle == nil || c.Lifecycle.PostStart == nil || c.Lifecycle.PostStart.Exec == nil {
		return false
	}
	cmd := strings.Join(c.Lifecycle.PostStart.Exec.Command, " ")
	return strings.Contains(cmd, "pilot-agent") && strings.Contains(cmd, "wait")
}

// holdRequested reports whether the pod's annotation, else the mesh
// default, asks for holdApplicationUntilProxyStarts: what a pod injected now
// would get.
func holdRequested(pod *corev1.Pod, meshDefault bool) bool {
	if a := mesh.PodProxyConfigAnnotation(pod); a != "" {
		if pc, err := mesh.ParseProxyConfig(a); err == nil && pc.GetHoldApplicationUntilProxyStarts() != nil {
			return pc.GetHoldApplicationUntilProxyStarts().GetValue()
		}
	}
	return meshDefault
}

// proxyReadyTime finds pilot-agent's "Envoy proxy is ready" line; its first
// field is an RFC 3339 timestamp.
func proxyReadyTime(log []byte) (time.Time, bool) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, proxyReadyMarker) {
			continue
		}
		if ts, ok := leadingTimestamp(line); ok {
			return ts, true
		}
	}
	return time.Time{}, false
}

// connectionRefusedAtStart looks for "connection refused" in the first
// seconds of a container log (timestamped lines), or its first lines when the
// app does not timestamp its output.
func connectionRefusedAtStart(log []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var first time.Time
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
		ts, ok := leadingTimestamp(line)
		if ok && first.IsZero() {
			first = ts
		}
		within := (ok && ts.Sub(first) <= startupLogWindow) || (!ok && n < 50)
		if !within {
			if ok {
				return false
			}
			continue
		}
		if strings.Contains(strings.ToLower(line), "connection refused") {
			return true
		}
	}
	return false
}

func leadingTimestamp(line string) (time.Time, bool) {
	field := line
	if i := strings.IndexAny(line, " \t"); i > 0 {
		field = line[:i]
	}
	field = strings.Trim(field, "[]")
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000000Z", "2006/01/02 15:04:05"} {
		if ts, err := time.Parse(layout, field); err == nil {
			return ts, true
		}
	}
	return time.Time{}, false
}

// firstStart is when the container's first recorded instance started.
func firstStart(st corev1.ContainerStatus) time.Time {
	if t := st.LastTerminationState.Terminated; t != nil && !t.StartedAt.IsZero() {
		return t.StartedAt.Time
	}
	if st.State.Running != nil {
		return st.State.Running.StartedAt.Time
	}
	if t := st.State.Terminated; t != nil {
		return t.StartedAt.Time
	}
	return time.Time{}
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
			fmt.Sprintf("kubectl logs -n %s %s -c %s | grep '%s'", p.Namespace, p.Name, mesh.ProxyContainer, proxyReadyMarker),
		)
		if apps := mesh.AppContainers(p); len(apps) > 0 {
			cmds = append(cmds, fmt.Sprintf("kubectl logs -n %s %s -c %s --previous | head -50", p.Namespace, p.Name, apps[0].Name))
		}
	}
	return cmds
}

// appBeforeReady says whether an app container that started at appStart
// could have run before Envoy was ready. With pilot-agent's ready line the
// comparison is exact. Without it, ready is only the proxy container's start,
// and container status times have whole seconds: an app started in the same
// second as the proxy container started before Envoy could answer, because
// Envoy is never ready the second it starts.
func appBeforeReady(appStart, ready time.Time, readyFromLog bool) bool {
	if readyFromLog {
		return appStart.Before(ready)
	}
	return !appStart.After(ready)
}
