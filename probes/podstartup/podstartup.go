// Package podstartup says how a pod started: whether its app started
// before Envoy was ready, restarted within EarlyRestartWindow of the pod's
// creation, logged "connection refused" in its first seconds, and whether
// the pod was injected with holdApplicationUntilProxyStarts. The
// startup-order probe builds its facts from it, pod by pod, and the
// rollout watch judges each new pod with it, so the two agree on what a
// bad start is.
package podstartup

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Logs are the logs of one pod that the startup judgement reads; any may
// be empty when it could not be read, and the judgement then uses the
// pod's statuses only.
type Logs struct {
	Proxy []byte
	// App and AppPrevious map an app container to its current and
	// previous-instance log.
	App         map[string][]byte
	AppPrevious map[string][]byte
}

// Start is how one pod started, as its spec, statuses and logs tell.
type Start struct {
	// Sidecar is how the pod carries its proxy; HoldApplication says the
	// app waits for Envoy (the pod was injected with
	// holdApplicationUntilProxyStarts); HoldNotInjected says a classic
	// sidecar's pod asks for it (annotation or mesh default) but was
	// injected without it.
	Sidecar         mesh.SidecarKind
	HoldApplication bool
	HoldNotInjected bool
	// ProxyReady is when Envoy was ready: pilot-agent's ready line
	// (ProxyReadyFromLog), else the proxy container's start, the
	// earliest it could have been; zero when neither is known.
	ProxyReady        time.Time
	ProxyReadyFromLog bool
	// AppStarted is when the first app container first started.
	AppStarted time.Time
	// AppBeforeProxy: an app container started before Envoy was ready.
	AppBeforeProxy bool
	// EarlyRestart: an app container restarted within EarlyRestartWindow
	// of creation; RestartReasons says how, as "POD: CONTAINER REASON exit
	// CODE at +WHEN".
	EarlyRestart   bool
	RestartReasons []string
	// LastTermination is an app container's last termination ("" when
	// none): the early one, else the first.
	LastTermination string
	// ConnectionRefused: an app log shows "connection refused" in its
	// first seconds. RefusedUnknown: the pod restarted early and an app
	// container's logs could not be read, so no refusal is not known.
	ConnectionRefused bool
	RefusedUnknown    bool
}

// Of judges how pod started.
func Of(pod *corev1.Pod, logs Logs, meshCfg mesh.MeshConfig) Start {
	meshHold := meshCfg.DefaultProxyConfig().GetHoldApplicationUntilProxyStarts().GetValue()
	kind := mesh.PodSidecar(pod)
	holdApp := holdsApplication(pod)
	out := Start{Sidecar: kind, HoldApplication: holdApp}
	if kind == mesh.SidecarClassic && !holdApp && holdRequested(pod, meshHold) {
		out.HoldNotInjected = true
	}
	created := pod.CreationTimestamp.Time
	proxyReady, readyKnown := proxyReadyTime(logs.Proxy)
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
				out.RestartReasons = append(out.RestartReasons, pod.Name+": "+lastTerm)
			} else if lastTerm == "" {
				lastTerm = fmt.Sprintf("%s %s exit %d", app.Name, term.Reason, term.ExitCode)
			}
		}
		if connectionRefusedAtStart(logs.AppPrevious[app.Name]) || connectionRefusedAtStart(logs.App[app.Name]) {
			podRefused = true
		}
		if podRestarted && logs.AppPrevious[app.Name] == nil && logs.App[app.Name] == nil {
			out.RefusedUnknown = true
		}
	}
	out.ProxyReady, out.ProxyReadyFromLog = proxyReady, readyKnown
	out.AppStarted, out.AppBeforeProxy = appStart, podBefore
	out.EarlyRestart, out.LastTermination, out.ConnectionRefused = podRestarted, lastTerm, podRefused
	return out
}

// EarlyRestartWindow is how soon after creation a restart counts as a
// startup failure; the rollout watch judges new pods with it too.
const EarlyRestartWindow = 60 * time.Second

// startupLogWindow is how long after its first line a container log is
// "at startup".
const startupLogWindow = 30 * time.Second

// ProxyReadyMarker is what pilot-agent logs once Envoy answers its readiness
// check.
const ProxyReadyMarker = "Envoy proxy is ready"

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
		if !strings.Contains(line, ProxyReadyMarker) {
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
