package probes

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/parse/netstat"
	"github.com/meshtriage/meshtriage/probes/podfacts"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// AppListenProbe reads where the Service's apps listen for the target
// port. Since Istio 1.10 the sidecar's inbound cluster dials the pod's own
// IP (ORIGINAL_DST, the upgrade notes of 1.10), not 127.0.0.1, so an app
// bound to loopback refuses every request the sidecar forwards: the
// destination's inbound logs UF "delayed connect error: 111" on
// inbound|PORT||, while a readiness probe on another port (or exec) keeps
// the pod Ready. The app says where it listens when it starts (uvicorn's
// "Uvicorn running on http://127.0.0.1:8080", Flask's "Running on
// http://127.0.0.1:5000"), or its spec does (--host 127.0.0.1,
// --bind=localhost:8080). Only a Sidecar ingress listener whose
// defaultEndpoint is a loopback address serves such an app (istiod's
// inbound cluster then dials it, cluster.go buildInboundClusters).
type AppListenProbe struct{}

func (AppListenProbe) Meta() Meta {
	return Meta{
		ID:    "app-listen",
		Title: "Where the app listens: the pod's address, where the sidecar's inbound dials it, or loopback only",
		Reads: []string{"services", "pods", "pods/log (app containers from their start, istio-proxy)", "sidecars", "netstat (an istioctl bug-report's, where the source holds it)"},
		Facts: []FactSpec{
			{"applisten_pods", FactInt, "pods of the Service with a sidecar whose app containers' start-up logs and specs were read for where they listen"},
			{"applisten_loopback", FactList, "pods whose app listens for the target port on loopback only (127.0.0.1, localhost, ::1), as POD CONTAINER: the app's own log line or the spec's argument or environment variable, or as POD netstat: the pod's LISTEN row (an istioctl bug-report's netstat, which overrides both); a log that also names the pod's or the wildcard address for the port counts as not loopback only"},
			{"applisten_loopback_from_spec", FactList, "of those, the ones only the pod spec says (an argument or environment variable naming a loopback address), as POD CONTAINER: WHERE=VALUE"},
			{"applisten_inbound_refused", FactInt, "requests and connections the pods' inbound refused on the target port (UF, delayed connect error 111 on inbound|PORT|| or the inbound passthrough): the sidecar dialled the pod's IP and nothing listens there"},
			{"applisten_sidecar_loopback", FactList, "Sidecar resources whose ingress listener for the port sends to a loopback defaultEndpoint, which serves an app bound to loopback, as NAMESPACE/NAME PORT->ENDPOINT"},
			{"applisten_sidecars_read", FactBool, "the namespace's Sidecar resources were read (false: whether one sends the port to loopback is not known)"},
		},
	}
}

// appStartupLogLimit is how much of an app container's log is read from
// its start: where it says where it listens.
const appStartupLogLimit = 64 << 10

type appListenPod struct {
	Pod *corev1.Pod
	// Port is the container port the Service port lands on, 0 when the
	// targetPort names no port of the pod.
	Port int32
	// AppLogs holds each app container's log from its start.
	AppLogs map[string][]byte
	// Refused counts the inbound refusals of its proxy's log on Port;
	// ProxyLogRead is false when the log was not read.
	Refused      int
	ProxyLogRead bool
	// Netstat is `netstat -natpw` of the pod's network namespace, where
	// the source holds it (an istioctl bug-report); nil when not read.
	Netstat []byte
}

type appListenInput struct {
	Pods        []appListenPod
	Sidecars    []*networkingv1.Sidecar
	SidecarsErr string // why the Sidecars were not read, "" when they were
	Problems    []string
}

func (AppListenProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchAppListen(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = appListenCommands(t, nil)
		return r
	}
	return evaluateAppListen(t, in)
}

func fetchAppListen(ctx context.Context, c cluster.Cluster, t cluster.Target) (appListenInput, string, error) {
	var in appListenInput
	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	if err != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
	}
	if len(svc.Spec.Selector) == 0 {
		return in, "", nil
	}
	pods, err := c.ListPods(ctx, t.Namespace, svc.Spec.Selector)
	if err != nil {
		return in, fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)), err
	}
	sp := podfacts.ServicePortOf(svc, t.Port)
	// The newest-started pods first, as many as the access-log reads.
	read := proxylog.UpstreamLogPods(pods)
	if len(read) > proxylog.MaxUpstreamLogs {
		read = read[:proxylog.MaxUpstreamLogs]
	}
	formats, problems := istioconfig.ReadAccessLogFormats(ctx, c)
	in.Problems = append(in.Problems, problems...)
	in.Pods = make([]appListenPod, len(read))
	logProblems := make([]string, len(read))
	var g readgroup.Group
	for i := range read {
		pod := &read[i]
		ap := &in.Pods[i]
		*ap = appListenPod{Pod: pod, Port: podfacts.TargetPortOn(sp, pod), AppLogs: map[string][]byte{}}
		ref := cluster.PodRef{Namespace: pod.Namespace, Name: pod.Name}
		apps := mesh.AppContainers(pod)
		logs := make([][]byte, len(apps))
		var podReads readgroup.Group
		for j, app := range apps {
			// From the container's start: where it says it listens.
			podReads.Go(func() {
				if b, err := c.Logs(ctx, ref, cluster.LogOptions{Container: app.Name, LimitBytes: appStartupLogLimit}); err == nil {
					logs[j] = b
				}
			})
		}
		podReads.Go(func() {
			// The kernel's own list of the pod's sockets, where the source
			// holds one; a source that cannot read it leaves it unread.
			if b, err := cluster.Netstat(ctx, c, ref); err == nil {
				ap.Netstat = b
			}
		})
		podReads.Go(func() {
			b, err := proxylog.NewestProxyLog(ctx, c, ref, proxylog.AccessLogTailLines)
			if err != nil {
				logProblems[i] = cluster.AccessProblem(fmt.Sprintf("read the %s log of %s", mesh.ProxyContainer, ref), err)
				return
			}
			matched, _, _ := formats.Split(bytes.NewReader(b), inboundRefusedOn(pod.Status.PodIP, ap.Port))
			ap.Refused, ap.ProxyLogRead = matched.Entries, true
		})
		g.Go(func() {
			podReads.Wait()
			for j, app := range apps {
				if logs[j] != nil {
					ap.AppLogs[app.Name] = logs[j]
				}
			}
		})
	}
	g.Go(func() {
		sidecars, err := c.Sidecars(ctx, t.Namespace)
		if err != nil {
			in.SidecarsErr = cluster.AccessProblem("list sidecars in "+t.Namespace, err)
			return
		}
		in.Sidecars = sidecars
	})
	g.Wait()
	for _, p := range logProblems {
		if p != "" {
			in.Problems = append(in.Problems, p)
		}
	}
	return in, "", nil
}

// inboundRefusedOn selects the inbound entries of the pod's proxy that
// could not connect to the app on port: UF with connection refused, on
// inbound|PORT|| or, for a port no Service declares, the inbound
// passthrough to podIP:PORT.
func inboundRefusedOn(podIP string, port int32) func(*accesslog.Entry) bool {
	return func(e *accesslog.Entry) bool {
		if port == 0 || !proxylog.InboundEntry(e) || !strings.Contains(e.Flags, "UF") || !e.ConnectionRefused() {
			return false
		}
		if strings.HasPrefix(e.UpstreamCluster, "inbound|") {
			return strings.HasPrefix(e.UpstreamCluster, "inbound|"+strconv.Itoa(int(port))+"|")
		}
		host, p, err := net.SplitHostPort(e.UpstreamHost)
		return err == nil && p == strconv.Itoa(int(port)) && (podIP == "" || host == podIP)
	}
}

func evaluateAppListen(t cluster.Target, in appListenInput) Result {
	r := Result{Probe: "app-listen", Commands: appListenCommands(t, in.Pods)}
	r.Evidence.Columns = []string{"pod", "container", "port", "listens", "from", "inbound refused"}
	var loopback, fromSpec, served []string
	read, refused := 0, 0
	for _, ap := range in.Pods {
		pod := ap.Pod
		if mesh.PodSidecar(pod) == mesh.SidecarNone {
			continue
		}
		read++
		refused += ap.Refused
		refusedText := "not read"
		if ap.ProxyLogRead {
			refusedText = strconv.Itoa(ap.Refused)
		}
		if ap.Port == 0 {
			r.Evidence.Rows = append(r.Evidence.Rows, []string{pod.Name, "-", "-", "the targetPort names no port of the pod", "-", refusedText})
			continue
		}
		for _, sc := range in.Sidecars {
			if ep := loopbackIngress(sc, pod, ap.Port); ep != "" {
				served = append(served, fmt.Sprintf("%s/%s %d->%s", sc.Namespace, sc.Name, ap.Port, ep))
			}
		}
		// The pod's sockets, as netstat lists them, are what the kernel
		// does now: they override what the app said and what it was told.
		if where, line := listenFromNetstat(ap.Netstat, ap.Port); where != "" {
			if where == listenLoopback {
				loopback = append(loopback, pod.Name+" netstat: "+line)
			}
			r.Evidence.Rows = append(r.Evidence.Rows, []string{pod.Name, "-", strconv.Itoa(int(ap.Port)), where, "its netstat: " + line, refusedText})
			continue
		}
		for _, app := range mesh.AppContainers(pod) {
			where, line := listenFromLog(ap.AppLogs[app.Name], ap.Port)
			from := "its log: " + line
			if where == "" {
				where, line = listenFromSpec(app, ap.Port)
				from = "its spec: " + line
				if where == listenLoopback {
					fromSpec = append(fromSpec, pod.Name+" "+app.Name+": "+line)
				}
			}
			switch where {
			case "":
				r.Evidence.Rows = append(r.Evidence.Rows, []string{pod.Name, app.Name, strconv.Itoa(int(ap.Port)), "not said", "-", refusedText})
				continue
			case listenLoopback:
				loopback = append(loopback, pod.Name+" "+app.Name+": "+line)
			}
			r.Evidence.Rows = append(r.Evidence.Rows, []string{pod.Name, app.Name, strconv.Itoa(int(ap.Port)), where, from, refusedText})
		}
	}
	slices.Sort(served)
	served = slices.Compact(served)
	r.Facts = Facts{
		"applisten_pods":               read,
		"applisten_loopback":           nonNil(loopback),
		"applisten_loopback_from_spec": nonNil(fromSpec),
		"applisten_inbound_refused":    refused,
		"applisten_sidecar_loopback":   nonNil(served),
		"applisten_sidecars_read":      in.SidecarsErr == "",
	}
	var problems, warnings []string
	if len(loopback) > 0 && len(served) == 0 {
		problems = append(problems, "the app listens on loopback only, where the sidecar's inbound (which dials the pod's IP) does not reach: "+strings.Join(loopback, "; "))
	}
	if len(served) > 0 {
		warnings = append(warnings, "a Sidecar sends the port to a loopback address: "+strings.Join(served, ", "))
	}
	if refused > 0 {
		warnings = append(warnings, fmt.Sprintf("the pods' inbound could not connect to the app on the target port %s (UF, connection refused)", wording.CountNoun(refused, "time")))
	}
	if in.SidecarsErr != "" {
		warnings = append(warnings, in.SidecarsErr)
	}
	warnings = append(warnings, in.Problems...)
	head := fmt.Sprintf("%s with a sidecar: where the app listens read", wording.CountNoun(read, "pod"))
	if read == 0 {
		head = "no pod of the Service with a sidecar read: nothing dials the app from the pod's IP"
	}
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: warnings, FailWithWarnings: true}.judge()
	return r
}

// Where an app says it listens.
const (
	listenLoopback = podfacts.BindLoopback
	listenPod      = podfacts.BindAll
)

// listenAddress finds HOST:PORT (an URL's too) for the port in a line,
// the host a name, an IPv4 address or a bracketed IPv6 one.
var listenAddress = regexp.MustCompile(`(\[[0-9a-fA-F:.]*\]|[0-9]{1,3}(?:\.[0-9]{1,3}){3}|localhost|0\.0\.0\.0|\*)?:([0-9]{1,5})\b`)

// listenWords are what a line that says where a server listens says.
var listenWords = regexp.MustCompile(`(?i)listen|running on|serving|started (?:server|http)|bound to|binding to|starting .*server`)

// listenFromLog reads where the app says it listens for port in its log:
// loopback only when every line that names the port's address names a
// loopback one (Flask started with host 0.0.0.0 names 127.0.0.1 and the
// pod's address; Flask's "Running on all addresses" says it outright).
func listenFromLog(log []byte, port int32) (where, line string) {
	var loopbackLine string
	for _, l := range strings.Split(string(log), "\n") {
		if !listenWords.MatchString(l) {
			continue
		}
		if strings.Contains(strings.ToLower(l), "all addresses") {
			return listenPod, strings.TrimSpace(l)
		}
		for _, m := range listenAddress.FindAllStringSubmatchIndex(l, -1) {
			host, p := "", l[m[4]:m[5]]
			if m[2] >= 0 {
				host = l[m[2]:m[3]]
			} else if m[0] > 0 && !strings.ContainsRune(" \t=\"'(", rune(l[m[0]-1])) {
				continue // a bare :PORT only after a space or a quote: not a clock's 10:08
			}
			if p != strconv.Itoa(int(port)) {
				continue
			}
			if isLoopbackHost(host) {
				if loopbackLine == "" {
					loopbackLine = strings.TrimSpace(l)
				}
				continue
			}
			return listenPod, strings.TrimSpace(l)
		}
	}
	if loopbackLine != "" {
		return listenLoopback, loopbackLine
	}
	return "", ""
}

// listenFromNetstat reads where the pod's sockets listen for port in a
// netstat's LISTEN rows: loopback only when every row for the port is a
// loopback address; "" when no row names the port (or none was read).
func listenFromNetstat(out []byte, port int32) (where, line string) {
	rows := netstat.OnPort(netstat.Listeners(out), port)
	if len(rows) == 0 {
		return "", ""
	}
	for _, l := range rows {
		if !l.Loopback() {
			return listenPod, l.Line
		}
	}
	return listenLoopback, rows[0].Line
}

// listenFromSpec reads the container's arguments and environment for a
// bind address (podfacts.SpecBind).
func listenFromSpec(c corev1.Container, port int32) (where, line string) {
	b, ok := podfacts.SpecBind(c, port)
	if !ok {
		return "", ""
	}
	return b.Where, b.Line
}

func isLoopbackHost(h string) bool { return podfacts.LoopbackHost(h) }

// loopbackIngress is the loopback defaultEndpoint of the Sidecar's ingress
// listener for port when the Sidecar applies to the pod, "" otherwise.
func loopbackIngress(sc *networkingv1.Sidecar, pod *corev1.Pod, port int32) string {
	if sel := sc.Spec.GetWorkloadSelector().GetLabels(); len(sel) > 0 && !labels.SelectorFromSet(sel).Matches(labels.Set(pod.Labels)) {
		return ""
	}
	for _, in := range sc.Spec.GetIngress() {
		if in.GetPort().GetNumber() != uint32(port) {
			continue
		}
		ep := in.GetDefaultEndpoint()
		host, _, err := net.SplitHostPort(ep)
		if err == nil && isLoopbackHost(host) {
			return ep
		}
	}
	return ""
}

func appListenCommands(t cluster.Target, pods []appListenPod) []string {
	var cmds []string
	for _, ap := range pods {
		p := ap.Pod
		for _, app := range mesh.AppContainers(p) {
			cmds = append(cmds, fmt.Sprintf("kubectl logs -n %s %s -c %s | grep -iE 'listen|running on|serving' | head", p.Namespace, p.Name, app.Name))
			break
		}
		if ap.Port != 0 {
			cmds = append(cmds, fmt.Sprintf("kubectl logs -n %s %s -c istio-proxy --since=10m | grep 'inbound|%d||' | grep -E 'UF|111'", p.Namespace, p.Name, ap.Port))
		}
		break
	}
	return append(cmds, fmt.Sprintf("kubectl get sidecar -n %s -o yaml", t.Namespace))
}
