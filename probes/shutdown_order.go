package probes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/wording"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// ShutdownOrderProbe checks whether a classic sidecar can exit before the app
// has drained: no terminationDrainDuration, EXIT_ON_ZERO_ACTIVE_CONNECTIONS
// or preStop on istio-proxy. A preStop on the app does not count: the proxy
// gets SIGTERM at once whatever the app's hook does and exits after its 5 s
// drain, so an app kept alive longer only serves and calls out longer
// without a proxy.
type ShutdownOrderProbe struct{}

func (ShutdownOrderProbe) Meta() Meta {
	return Meta{
		ID:    "shutdown-order",
		Title: "Shutdown order: proxy drain vs app",
		Reads: []string{"pods", "configmaps (mesh config)"},
		Facts: []FactSpec{
			{"shutdown_classic_sidecar", FactBool, "some target pod uses a classic (container) sidecar"},
			{"shutdown_drain_configured", FactBool, "every classic-sidecar pod has terminationDrainDuration above the 5 s default, EXIT_ON_ZERO_ACTIVE_CONNECTIONS or a proxy preStop"},
			{"shutdown_app_prestop", FactBool, "every classic-sidecar pod's app containers have a preStop hook"},
			{"shutdown_pods_terminating", FactInt, "target pods being deleted now (a rollout in progress)"},
			{"shutdown_ambient_pods", FactInt, "target pods ztunnel carries (ambient: the CNI's redirection annotation enabled or pending)"},
			{"shutdown_ambient_app_prestop", FactBool, "every ambient pod's app containers have a preStop hook (false when there is no ambient pod)"},
			{"shutdown_terminating_ips", FactList, "pod IPs of the target pods being deleted now"},
			{"shutdown_pod_ips", FactList, "pod IPs of every target pod read (an IP outside it belongs to no pod of the Service any more)"},
			{"shutdown_at_risk", FactBool, "some pod has a classic sidecar without drain settings that outlast the 5 s default (an app preStop does not keep the proxy up)"},
		},
	}
}

const exitOnZeroActive = "EXIT_ON_ZERO_ACTIVE_CONNECTIONS"

type shutdownInput struct {
	Pods []corev1.Pod
	Mesh mesh.MeshConfig
}

func (ShutdownOrderProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchShutdown(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = shutdownCommands(t)
		return r
	}
	return evaluateShutdown(t, in)
}

func fetchShutdown(ctx context.Context, c cluster.Cluster, t cluster.Target) (shutdownInput, string, error) {
	var in shutdownInput
	var err error
	if in.Mesh, err = istioconfig.ReadMeshConfig(ctx, c); err != nil {
		return in, "read the mesh config", err
	}
	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	if err != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
	}
	if in.Pods, err = c.ListPods(ctx, t.Namespace, svc.Spec.Selector); err != nil {
		return in, "list pods in " + t.Namespace, err
	}
	return in, "", nil
}

func evaluateShutdown(t cluster.Target, in shutdownInput) Result {
	res := Result{Commands: shutdownCommands(t)}
	res.Evidence.Columns = []string{"pod", "sidecar", "drain", "app preStop", "grace period", "terminating"}
	classic, drained, prestopped, terminating, atRisk := 0, 0, 0, 0, 0
	ambient, ambientPrestopped := 0, 0
	terminatingIPs, podIPs := []string{}, []string{}
	for i := range in.Pods {
		pod := &in.Pods[i]
		kind := mesh.PodSidecar(pod)
		drain, drains := drainSetting(pod, in.Mesh.DefaultProxyConfig())
		prestop := appsHavePreStop(pod)
		if pod.DeletionTimestamp != nil {
			terminating++
			if ip := pod.Status.PodIP; ip != "" {
				terminatingIPs = append(terminatingIPs, ip)
			}
		}
		if ip := pod.Status.PodIP; ip != "" {
			podIPs = append(podIPs, ip)
		}
		// ztunnel drains a pod's connections when the pod goes: nothing
		// keeps its app up until istiod's removal of it reaches the
		// callers but the app's own preStop.
		if d := mesh.DataPlaneOf(pod, nil); d.Mode == mesh.DataPlaneAmbient && (d.Enrolled() || d.Pending()) {
			ambient++
			if prestop {
				ambientPrestopped++
			}
		}
		if kind == mesh.SidecarClassic {
			classic++
			if drains {
				drained++
			} else {
				atRisk++
			}
			if prestop {
				prestopped++
			}
		}
		grace := "30s (default)"
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = fmt.Sprintf("%ds", *g)
		}
		res.Evidence.Rows = append(res.Evidence.Rows, []string{
			pod.Name, string(kind), wording.Dash(drain), wording.YesNo(prestop), grace, wording.YesNo(pod.DeletionTimestamp != nil),
		})
	}
	res.Facts = Facts{
		"shutdown_classic_sidecar":     classic > 0,
		"shutdown_drain_configured":    classic > 0 && drained == classic,
		"shutdown_app_prestop":         classic > 0 && prestopped == classic,
		"shutdown_pods_terminating":    terminating,
		"shutdown_at_risk":             atRisk > 0,
		"shutdown_ambient_pods":        ambient,
		"shutdown_ambient_app_prestop": ambient > 0 && ambientPrestopped == ambient,
		"shutdown_terminating_ips":     terminatingIPs,
		"shutdown_pod_ips":             podIPs,
	}
	res.Evidence.Raw = "A classic sidecar receives SIGTERM together with the app and drains for terminationDrainDuration (5 s when unset) " +
		"before exiting, whatever preStop the app has; requests the app is still serving, and calls the app makes while draining, then fail. " +
		"Native sidecars (Kubernetes 1.29+) stop after the app containers. " +
		"In ambient, ztunnel drains a pod's connections when it ends, before istiod's removal of it reaches every gateway, waypoint and ztunnel: " +
		"only a preStop on the app keeps it serving meanwhile."
	switch {
	case len(in.Pods) == 0:
		res.Status = StatusSkipped
		res.Summary = "no pods selected by the service"
	case atRisk > 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("%d of %d pod(s) have a classic sidecar that drains no longer than the 5 s default: the proxy can exit before the app drains", atRisk, len(in.Pods))
		if prestopped > 0 {
			res.Summary += " (an app preStop delays the app, not the proxy)"
		}
		if terminating > 0 {
			res.Summary += fmt.Sprintf(" (%d terminating now)", terminating)
		}
	case ambient > 0 && ambientPrestopped < ambient && terminating > 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("%d pod(s) terminating in ambient whose app has no preStop: connections routed to them before istiod's removal reaches the callers are refused", terminating)
	case classic == 0:
		res.Status = StatusPass
		res.Summary = "no classic sidecars: shutdown order is handled by Kubernetes (native sidecar) or there is no proxy"
	default:
		res.Status = StatusPass
		res.Summary = "classic sidecars have drain settings"
	}
	return res
}

// defaultDrainDuration is what Envoy drains for when nothing is set; a
// setting at or below it changes nothing about a rollout's 503s.
const defaultDrainDuration = 5 * time.Second

// drainSetting says how the pod's proxy waits for in-flight work on
// shutdown ("" when nothing is set) and whether that outlasts the bare
// default. The injected istio-proxy container is the ground truth
// (PROXY_CONFIG and proxyMetadata become its env at injection); the pod
// annotation and mesh default fill in.
func drainSetting(pod *corev1.Pod, meshDefault *meshv1alpha1.ProxyConfig) (setting string, drains bool) {
	proxy, ok := mesh.ProxyContainerSpec(pod)
	if !ok {
		return "", false
	}
	if proxy.Lifecycle != nil && proxy.Lifecycle.PreStop != nil {
		return "proxy preStop", true
	}
	duration := func(d time.Duration) (string, bool) {
		if d <= defaultDrainDuration {
			return fmt.Sprintf("terminationDrainDuration %s (no longer than the %s default)", d, defaultDrainDuration), false
		}
		return "terminationDrainDuration " + d.String(), true
	}
	configs := []*meshv1alpha1.ProxyConfig{}
	for _, env := range proxy.Env {
		switch env.Name {
		case exitOnZeroActive:
			if strings.EqualFold(env.Value, "true") {
				return exitOnZeroActive, true
			}
		case "TERMINATION_DRAIN_DURATION_SECONDS":
			if secs, err := strconv.Atoi(env.Value); err == nil && secs > 0 {
				return duration(time.Duration(secs) * time.Second)
			}
		case "PROXY_CONFIG":
			if pc, err := mesh.ParseProxyConfig(env.Value); err == nil {
				configs = append(configs, pc)
			}
		}
	}
	if a := mesh.PodProxyConfigAnnotation(pod); a != "" {
		if pc, err := mesh.ParseProxyConfig(a); err == nil {
			configs = append(configs, pc)
		}
	}
	configs = append(configs, meshDefault)
	for _, pc := range configs {
		if strings.EqualFold(pc.GetProxyMetadata()[exitOnZeroActive], "true") {
			return exitOnZeroActive, true
		}
		if d := pc.GetTerminationDrainDuration(); d != nil && d.AsDuration() > 0 {
			return duration(d.AsDuration())
		}
	}
	return "", false
}

func appsHavePreStop(pod *corev1.Pod) bool {
	apps := mesh.AppContainers(pod)
	if len(apps) == 0 {
		return false
	}
	for _, c := range apps {
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
			return false
		}
	}
	return true
}

func shutdownCommands(t cluster.Target) []string {
	return []string{
		fmt.Sprintf("kubectl get pods -n %s -o yaml | grep -nE 'preStop|terminationGracePeriodSeconds|EXIT_ON_ZERO_ACTIVE_CONNECTIONS|terminationDrainDuration'", t.Namespace),
		"kubectl get configmap istio -n istio-system -o jsonpath='{.data.mesh}'",
	}
}
