package probes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strconv"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/podfacts"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
	"istio.io/api/annotation"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// HealthProbesProbe reads the Service's pods' health probes as the kubelet
// sends them and the sidecar receives them. The injector rewrites an
// httpGet, tcpSocket or gRPC probe to pilot-agent's /app-health/CONTAINER/
// KIND on the status port (15020) and keeps the original in istio-proxy's
// ISTIO_KUBE_APP_PROBERS, unless sidecar.istio.io/rewriteAppHTTPProbers is
// "false" on the pod or the injector's values turn it off
// (pkg/kube/inject/app_probe.go). Not rewritten, the kubelet's plaintext
// probe of a captured port meets the sidecar's inbound listener, which
// under STRICT holds no plaintext filter chain: reset, and the pod never
// becomes ready. A tcpSocket probe passes there whatever the app does
// (Envoy accepts the connection itself). Rewritten, pilot-agent answers
// 400 for a path ISTIO_KUBE_APP_PROBERS does not hold, and a probe with
// httpGet.host goes to that host's status port, not the pod's.
type HealthProbesProbe struct{}

func (HealthProbesProbe) Meta() Meta {
	return Meta{
		ID:    "health-probes",
		Title: "Health probes under the sidecar: rewritten to pilot-agent, or plaintext into the inbound listener",
		Reads: []string{"services", "pods", "peerauthentications", "configmaps (mesh config; the sidecar injector's values)", "pods/log (istio-proxy)"},
		Facts: []FactSpec{
			{"healthprobe_pods", FactInt, "pods of the Service with a sidecar whose probes were read"},
			{"healthprobe_blocked_by_strict", FactList, "httpGet and gRPC probes the kubelet sends as they are (not rewritten to pilot-agent) to a port the sidecar captures whose PeerAuthentication mode is STRICT: the inbound listener has no plaintext filter chain for them and resets them; as CONTAINER KIND ACTION on N pods, with why"},
			{"healthprobe_blocked_kinds", FactList, "the kinds of those probes: readiness (the pods never become ready), liveness (the kubelet restarts them), startup"},
			{"healthprobe_rewrite_off", FactString, "why the kubelet sends those probes as they are: the pod's sidecar.istio.io/rewriteAppHTTPProbers annotation, or the injector's values (sidecarInjectorWebhook.rewriteAppHTTPProbe); \"\" when every probe is rewritten"},
			{"healthprobe_tcp_unproven", FactList, "tcpSocket probes of a captured port, not rewritten: Envoy accepts the connection itself, so they pass whatever the app does"},
			{"healthprobe_prober_missing", FactList, "probes pointing at pilot-agent's /app-health/ path that istio-proxy's ISTIO_KUBE_APP_PROBERS does not hold (a pod spec copied from an injected pod: the injector leaves a probe on the status port alone): pilot-agent answers 400 to every one"},
			{"healthprobe_host_set", FactList, "rewritten httpGet probes that set httpGet.host: the kubelet sends them to that host's status port, not to the pod's pilot-agent"},
			{"healthprobe_kubelet_resets", FactInt, "connections the pods' inbound listener refused with NR filter_chain_not_found from the kubelet's address (the pod's host IP): its probes, refused"},
		},
	}
}

// Probe kinds, as the facts name them.
const (
	probeReadiness = "readiness"
	probeLiveness  = "liveness"
	probeStartup   = "startup"
)

// injectorRewriteValue is the injector's values key that turns the probe
// rewrite off mesh-wide.
const injectorRewriteValue = "sidecarInjectorWebhook.rewriteAppHTTPProbe"

type healthProbesInput struct {
	Pods   []corev1.Pod
	Config *mesh.Config
	// InjectorRewrite is the injector's rewriteAppHTTPProbe setting, nil
	// when its values were not read or do not say.
	InjectorRewrite *bool
	InjectorRead    string // the ConfigMap read, or why it was not
	// KubeletResets counts, by pod name, the NR filter_chain_not_found
	// entries of its inbound from its host IP; a pod whose log was not
	// read has none.
	KubeletResets map[string]int
	Problems      []string
}

func (p HealthProbesProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchHealthProbes(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = healthProbesCommands(t, nil)
		return r
	}
	return evaluateHealthProbes(t, in)
}

func fetchHealthProbes(ctx context.Context, c cluster.Cluster, t cluster.Target) (healthProbesInput, string, error) {
	in := healthProbesInput{KubeletResets: map[string]int{}}
	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	if err != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
	}
	if len(svc.Spec.Selector) == 0 {
		return in, "", nil
	}
	if in.Pods, err = c.ListPods(ctx, t.Namespace, svc.Spec.Selector); err != nil {
		return in, fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)), err
	}
	// The PeerAuthentications as istiod reads them (mesh, namespace,
	// workload, port level), through the config model's reads.
	cv, what, err := callerview.Fetch(ctx, c, t)
	if err != nil {
		return in, what, err
	}
	in.Config = cv.Config
	// Kubelet's plaintext probes reach the inbound only when not
	// rewritten: read the injector's values and the logs only then.
	plain := unrewrittenPods(in.Pods)
	if len(plain) == 0 {
		return in, "", nil
	}
	formats, problems := istioconfig.ReadAccessLogFormats(ctx, c)
	in.Problems = append(in.Problems, problems...)
	var g readgroup.Group
	counts := make([]int, len(plain))
	logProblems := make([]string, len(plain))
	for i, pod := range plain {
		g.Go(func() {
			ref := cluster.PodRef{Namespace: pod.Namespace, Name: pod.Name}
			b, err := proxylog.NewestProxyLog(ctx, c, ref, proxylog.AccessLogTailLines)
			if err != nil {
				logProblems[i] = cluster.AccessProblem(fmt.Sprintf("read the %s log of %s", mesh.ProxyContainer, ref), err)
				return
			}
			matched, _, _ := formats.Split(bytes.NewReader(b), kubeletRefused(pod.Status.HostIP))
			counts[i] = matched.Entries
		})
	}
	g.Go(func() { in.InjectorRewrite, in.InjectorRead = readInjectorRewrite(ctx, c, plain[0]) })
	g.Wait()
	for i, pod := range plain {
		if logProblems[i] != "" {
			in.Problems = append(in.Problems, logProblems[i])
			continue
		}
		in.KubeletResets[pod.Name] = counts[i]
	}
	return in, "", nil
}

// kubeletRefused selects the inbound connections refused for want of a
// filter chain whose peer is the kubelet: its host's address.
func kubeletRefused(hostIP string) func(*accesslog.Entry) bool {
	return func(e *accesslog.Entry) bool {
		if hostIP == "" || e.ResponseCodeDetails != "filter_chain_not_found" {
			return false
		}
		host, _, err := net.SplitHostPort(e.DownstreamRemoteAddress)
		return err == nil && host == hostIP
	}
}

// unrewrittenPods are the pods with a sidecar one of whose app probes the
// kubelet sends as it is.
func unrewrittenPods(pods []corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		pod := &pods[i]
		if mesh.PodSidecar(pod) == mesh.SidecarNone {
			continue
		}
		for _, ap := range appProbes(pod) {
			if podfacts.ProbeThroughSidecar(pod, ap.probe) {
				out = append(out, pod)
				break
			}
		}
	}
	return out
}

// readInjectorRewrite reads the injector's values for the pod's revision:
// istio-sidecar-injector (istio-sidecar-injector-REV) in the control
// plane's namespace, whose "values" JSON holds
// sidecarInjectorWebhook.rewriteAppHTTPProbe.
func readInjectorRewrite(ctx context.Context, c cluster.Cluster, pod *corev1.Pod) (*bool, string) {
	name := "istio-sidecar-injector"
	if rev := pod.Labels["istio.io/rev"]; rev != "" && rev != "default" {
		name += "-" + rev
	}
	ns := istioconfig.ControlPlane(c)
	cm, err := c.GetConfigMap(ctx, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("configmap %s/%s not found", ns, name)
	case err != nil:
		return nil, cluster.AccessProblem(fmt.Sprintf("get configmap %s/%s", ns, name), err)
	}
	var values struct {
		SidecarInjectorWebhook struct {
			RewriteAppHTTPProbe *bool `json:"rewriteAppHTTPProbe"`
		} `json:"sidecarInjectorWebhook"`
	}
	if err := json.Unmarshal([]byte(cm.Data["values"]), &values); err != nil {
		return nil, fmt.Sprintf("configmap %s/%s: values not JSON: %v", ns, name, err)
	}
	return values.SidecarInjectorWebhook.RewriteAppHTTPProbe, fmt.Sprintf("configmap %s/%s", ns, name)
}

// appProbe is one probe of an app container.
type appProbe struct {
	container corev1.Container
	kind      string
	probe     *corev1.Probe
}

func appProbes(pod *corev1.Pod) []appProbe {
	var out []appProbe
	for _, c := range mesh.AppContainers(pod) {
		for _, p := range []struct {
			kind  string
			probe *corev1.Probe
		}{{probeReadiness, c.ReadinessProbe}, {probeLiveness, c.LivenessProbe}, {probeStartup, c.StartupProbe}} {
			if p.probe != nil {
				out = append(out, appProbe{container: c, kind: p.kind, probe: p.probe})
			}
		}
	}
	return out
}

func (ap appProbe) action() string {
	switch h := ap.probe.ProbeHandler; {
	case h.HTTPGet != nil:
		return "httpGet"
	case h.GRPC != nil:
		return "grpc"
	case h.TCPSocket != nil:
		return "tcpSocket"
	}
	return "exec"
}

// port is the container port the probe dials (a named port resolved
// against the container's ports), 0 when it names none.
func (ap appProbe) port() int32 {
	var p intstr.IntOrString
	switch h := ap.probe.ProbeHandler; {
	case h.HTTPGet != nil:
		p = h.HTTPGet.Port
	case h.TCPSocket != nil:
		p = h.TCPSocket.Port
	case h.GRPC != nil:
		return h.GRPC.Port
	}
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range ap.container.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return 0
}

func (ap appProbe) describe() string {
	switch h := ap.probe.ProbeHandler; {
	case h.HTTPGet != nil:
		return fmt.Sprintf("%s %s httpGet :%s%s", ap.container.Name, ap.kind, h.HTTPGet.Port.String(), h.HTTPGet.Path)
	case h.GRPC != nil:
		return fmt.Sprintf("%s %s grpc :%d", ap.container.Name, ap.kind, h.GRPC.Port)
	case h.TCPSocket != nil:
		return fmt.Sprintf("%s %s tcpSocket :%s", ap.container.Name, ap.kind, h.TCPSocket.Port.String())
	}
	return ap.container.Name + " " + ap.kind + " exec"
}

// appProbers are the paths istio-proxy's ISTIO_KUBE_APP_PROBERS holds;
// nil when the variable is absent or not JSON.
func appProbers(pod *corev1.Pod) map[string]bool {
	proxy, ok := mesh.ProxyContainerSpec(pod)
	if !ok {
		return nil
	}
	for _, e := range proxy.Env {
		if e.Name != "ISTIO_KUBE_APP_PROBERS" {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(e.Value), &m) != nil {
			return nil
		}
		out := map[string]bool{}
		for k := range m {
			out[k] = true
		}
		return out
	}
	return nil
}

// rewriteOffWhy says why a pod's probes were not rewritten.
func rewriteOffWhy(pod *corev1.Pod, injector *bool, injectorRead string) string {
	name := annotation.SidecarRewriteAppHTTPProbers.Name
	if v, ok := pod.Annotations[name]; ok {
		if b, err := strconv.ParseBool(v); err == nil && !b {
			return fmt.Sprintf("pod annotation %s: %q", name, v)
		}
	}
	if injector != nil && !*injector {
		return fmt.Sprintf("the injector's values %s: false (%s)", injectorRewriteValue, injectorRead)
	}
	return "the pod was injected without rewriting them (no " + name + " annotation says why; the injector's values: " + wording.Dash(injectorRead) + ")"
}

// probeCount groups identical probes of several pods.
type probeCount struct {
	order []string
	n     map[string]int
	why   map[string]string
}

func (pc *probeCount) add(desc, why string) {
	if pc.n == nil {
		pc.n, pc.why = map[string]int{}, map[string]string{}
	}
	if _, ok := pc.n[desc]; !ok {
		pc.order = append(pc.order, desc)
		pc.why[desc] = why
	}
	pc.n[desc]++
}

func (pc *probeCount) list() []string {
	out := []string{}
	for _, d := range pc.order {
		s := fmt.Sprintf("%s on %s", d, wording.CountNoun(pc.n[d], "pod"))
		if pc.why[d] != "" {
			s += ": " + pc.why[d]
		}
		out = append(out, s)
	}
	return out
}

func evaluateHealthProbes(t cluster.Target, in healthProbesInput) Result {
	r := Result{Facts: Facts{}, Commands: healthProbesCommands(t, in.Pods)}
	var blocked, tcp, missing, host probeCount
	kinds := map[string]bool{}
	rewriteOff := ""
	read, resets := 0, 0
	r.Evidence.Columns = []string{"pod", "container", "probe", "kubelet sends", "port captured", "mode", "verdict"}
	pods := append([]corev1.Pod(nil), in.Pods...)
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for i := range pods {
		pod := &pods[i]
		if mesh.PodSidecar(pod) == mesh.SidecarNone {
			continue
		}
		read++
		resets += in.KubeletResets[pod.Name]
		status := podfacts.StatusPort(pod)
		probers := appProbers(pod)
		for _, ap := range appProbes(pod) {
			row := func(sends, captured, mode, verdict string) {
				r.Evidence.Rows = append(r.Evidence.Rows, []string{pod.Name, ap.container.Name, ap.kind + " " + ap.action(), sends, captured, mode, verdict})
			}
			switch {
			case ap.action() == "exec":
				row("exec in the container", "-", "-", "not through the sidecar")
			case podfacts.ProbeRewritten(pod, ap.probe):
				h := ap.probe.HTTPGet
				sends := fmt.Sprintf("pilot-agent :%d%s", status, h.Path)
				switch {
				case probers == nil || !probers[h.Path]:
					missing.add(ap.describe(), "istio-proxy's ISTIO_KUBE_APP_PROBERS has no "+h.Path)
					row(sends, "-", "-", "pilot-agent has no original for this path: 400")
				case h.Host != "":
					host.add(ap.describe(), fmt.Sprintf("httpGet.host %s: the kubelet sends it to %s:%d", h.Host, h.Host, status))
					row(sends, "-", "-", "sent to "+h.Host+", not the pod")
				default:
					row(sends, "-", "-", "rewritten: pilot-agent probes the app")
				}
			default:
				port := ap.port()
				captured, whyNot := podfacts.InboundCaptured(pod, port)
				mode := mesh.PeerMode{Mode: "-", From: "-"}
				if in.Config != nil {
					mode = in.Config.PeerAuthMode(pod.Namespace, pod.Labels, port)
				}
				sends := fmt.Sprintf("plaintext %s :%d", ap.action(), port)
				capturedText := "yes"
				if !captured {
					capturedText = "no: " + whyNot
				}
				why := rewriteOffWhy(pod, in.InjectorRewrite, in.InjectorRead)
				switch {
				case !captured:
					row(sends, capturedText, mode.Mode, "reaches the app around the sidecar")
				case ap.action() == "tcpSocket":
					tcp.add(ap.describe(), "Envoy accepts the connection itself")
					row(sends, capturedText, mode.Mode, "passes whatever the app does")
				case mode.Mode == mesh.ModeStrict:
					rewriteOff = why
					kinds[ap.kind] = true
					blocked.add(ap.describe(), fmt.Sprintf("not rewritten (%s), port %d captured, STRICT (%s)", why, port, mode.From))
					row(sends, capturedText, mode.Mode+" ("+mode.From+")", "reset: no plaintext filter chain")
				default:
					row(sends, capturedText, mode.Mode, "reaches the app through the sidecar in plaintext")
				}
			}
		}
	}
	var kindList []string
	for _, k := range []string{probeReadiness, probeLiveness, probeStartup} {
		if kinds[k] {
			kindList = append(kindList, k)
		}
	}
	r.Facts = Facts{
		"healthprobe_pods":              read,
		"healthprobe_blocked_by_strict": blocked.list(),
		"healthprobe_blocked_kinds":     nonNil(kindList),
		"healthprobe_rewrite_off":       rewriteOff,
		"healthprobe_tcp_unproven":      tcp.list(),
		"healthprobe_prober_missing":    missing.list(),
		"healthprobe_host_set":          host.list(),
		"healthprobe_kubelet_resets":    resets,
	}
	var problems, warnings []string
	problems = append(problems, prefixed("kubelet's plaintext probe reset under STRICT: ", blocked.list())...)
	problems = append(problems, prefixed("pilot-agent has no original for: ", missing.list())...)
	warnings = append(warnings, prefixed("rewritten probe sent elsewhere: ", host.list())...)
	warnings = append(warnings, prefixed("tcpSocket probe proves nothing under the sidecar: ", tcp.list())...)
	if resets > 0 {
		warnings = append(warnings, fmt.Sprintf("%d connections from the kubelet's address refused by the inbound listener (NR filter_chain_not_found)", resets))
	}
	warnings = append(warnings, in.Problems...)
	head := fmt.Sprintf("%s with a sidecar: health probes read", wording.CountNoun(read, "pod"))
	if read == 0 {
		head = "no pod of the Service has a sidecar: its probes reach the app directly"
	}
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: warnings, FailWithWarnings: true}.judge()
	return r
}

func prefixed(prefix string, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = prefix + s
	}
	return out
}

func healthProbesCommands(t cluster.Target, pods []corev1.Pod) []string {
	cmds := []string{}
	if len(pods) > 0 {
		p := pods[0]
		cmds = append(cmds,
			fmt.Sprintf("kubectl get pod -n %s %s -o jsonpath='{range .spec.containers[*]}{.name} {.readinessProbe} {.livenessProbe}{\"\\n\"}{end}'", p.Namespace, p.Name),
			fmt.Sprintf("kubectl get pod -n %s %s -o jsonpath='{.metadata.annotations.sidecar\\.istio\\.io/rewriteAppHTTPProbers} {.spec.containers[?(@.name==\"istio-proxy\")].env[?(@.name==\"ISTIO_KUBE_APP_PROBERS\")].value}'", p.Namespace, p.Name),
			fmt.Sprintf("kubectl describe pod -n %s %s", p.Namespace, p.Name))
	}
	return append(cmds, fmt.Sprintf("kubectl get peerauthentication -n %s", t.Namespace))
}
