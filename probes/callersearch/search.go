// Package callersearch is the caller search: it answers "whose sidecar
// sees the 503s?" when the on-call did not name a caller (--from). Without
// a caller the Envoy checks (hosts, outlier ejections, the caller's config
// and log) cannot run, and they are where half the causes show. It looks,
// most telling first:
//
//  1. Prometheus, when given: istio_requests_total reported by the callers'
//     sidecars, by source workload, 503s first;
//  2. the target's inbound access log: the downstream address of each entry
//     is the calling pod's IP, 5xx first;
//  3. the target's own pods, when their own outbound calls fail (the 5xx
//     callers see may be a broken dependency's);
//  4. the configuration: meshed pods in the namespaces whose
//     VirtualServices or DestinationRules name the host, the target's own
//     namespace first.
//
// It reads at most Max sidecars, one pod per workload, and says where each
// candidate came from, so a finding can name the callers it holds for.
package callersearch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
	"time"

	"istio.io/api/label"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/prometheus"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// DefaultMax is how many callers' sidecars a triage without --from
// reads: each costs an Envoy admin read and a log read, and three workloads
// cover most incidents' callers.
const DefaultMax = 3

// meshedPods selects the pods the sidecar injector labelled: every injected
// pod carries security.istio.io/tlsMode=istio, so a namespace's candidate
// callers are one narrow list, not every pod.
var meshedPods = map[string]string{label.SecurityTlsMode.Name: "istio"}

// How a candidate was found, most telling first.
const (
	ByPrometheus = "prometheus"
	ByInboundLog = "inbound-log"
	// ByOwnOutbound: a target pod whose own calls fail; the target's
	// 5xx may be its dependency's.
	ByOwnOutbound = "own-outbound"
	ByConfig      = "config"
)

// Options bounds the search.
type Options struct {
	// Max is how many callers' sidecars to read; DefaultMax when 0.
	Max int
	// Prometheus, when its URL is set, is asked first.
	Prometheus prometheus.Client
	// Window is the rate() range of the Prometheus query;
	// prometheus.DefaultWindow when zero.
	Window time.Duration
	// Now is when the Prometheus query is evaluated; time.Now when zero.
	Now time.Time
}

// Caller is one pod that calls the target, and why the search thinks so.
type Caller struct {
	Pod      cluster.PodRef `json:"pod"`
	Workload string         `json:"workload"`
	By       string         `json:"by"`
	// Why is the evidence in the on-call's words: "4.2 503/s to the target
	// (Prometheus, 5m)", "61 of 490 requests 5xx in the target's inbound
	// log", "meshed pod in shop, whose VirtualService routes the host".
	Why string `json:"why"`
	// Sidecar: the pod has an istio-proxy whose Envoy can be read.
	Sidecar bool `json:"sidecar"`

	errors   float64 // 503/s, or 5xx entries
	requests float64
}

// Result is what the search found and read.
type Result struct {
	// Callers are the callers whose sidecars a triage reads, most likely
	// first, at most Max, one pod per workload.
	Callers []Caller `json:"callers"`
	// Others are candidates beyond Max or of a workload already read.
	Others []Caller `json:"others,omitempty"`
	// Searched says where the search looked ("Prometheus", "the inbound
	// logs of 3 pods", "meshed pods in shop, web").
	Searched []string `json:"searched"`
	// Problems are reads that failed: what the search could not see.
	Problems []string `json:"problems,omitempty"`
}

// Summary is the search in one line for a report or a log note.
func (r Result) Summary() string {
	if len(r.Callers) == 0 {
		s := "no caller found (searched " + strings.Join(r.Searched, "; ") + ")"
		if len(r.Problems) > 0 {
			s += "; could not read: " + strings.Join(r.Problems, "; ")
		}
		return s
	}
	names := make([]string, len(r.Callers))
	for i, c := range r.Callers {
		names[i] = c.Pod.String() + " (" + c.Why + ")"
	}
	return fmt.Sprintf("read %d caller(s): %s", len(r.Callers), strings.Join(names, "; "))
}

// callerSearchInput is everything the search read; rankCallers decides.
type callerSearchInput struct {
	Target     cluster.Target
	Host       string
	TargetPods []corev1.Pod
	// Prometheus: 503 and total rates by source workload.
	PromAsked bool
	Window    time.Duration
	PromRates []workloadRate
	// PodsIn holds the meshed pods listed per namespace.
	PodsIn map[string][]corev1.Pod
	// Inbound-log peers: entries and 5xx entries by peer IP, over LogsRead
	// target pods, and the pods found at those IPs.
	LogsRead int
	Inbound  accesslog.Summary
	// OwnOutbound is each target pod's own outbound traffic, when it
	// failed: a target whose dependency is broken (an external host without
	// a ServiceEntry) answers its callers 5xx, and its own sidecar is where
	// the cause shows.
	OwnOutbound []ownOutbound
	PeerPods    map[string]*corev1.Pod
	ConfigNSs   []string
	// Gateways are the Gateways a VirtualService routing to the target
	// names, with their pods.
	Gateways []gatewayCandidate
	// ZtunnelCallers are the pods the ztunnels of the target's nodes saw
	// connect to it (an ambient target's callers have no Envoy log).
	ZtunnelSearched bool
	ZtunnelCallers  []ztunnelCaller
	// ConfigWhy says why each config namespace is a candidate.
	ConfigWhy map[string]string
	Problems  []string
}

type ownOutbound struct {
	Pod    cluster.PodRef
	Failed int
	Why    string
}

type workloadRate struct {
	Namespace, Workload string
	Rate503, Rate       float64
}

// Find searches for the target's callers. It never fails: what it
// could not read is in Problems, and an empty Callers says the triage goes
// on from the service side only.
func Find(ctx context.Context, c cluster.Cluster, t cluster.Target, s Options) Result {
	in := callerSearchInput{Target: t, Host: t.Host(), PodsIn: map[string][]corev1.Pod{}, PeerPods: map[string]*corev1.Pod{}, ConfigWhy: map[string]string{}}
	max := s.Max
	if max <= 0 {
		max = DefaultMax
	}
	problem := func(what string, err error) {
		in.Problems = append(in.Problems, cluster.AccessProblem(what, err))
	}
	// The first wave depends on nothing: the target's pods and their logs,
	// Prometheus, and the rules of every namespace.
	var (
		first             readgroup.Group
		logs              [][]byte
		logErrs           []error
		logPods           []cluster.PodRef
		vsErr, drErr      error
		vsRefs, drRefs    []string
		routingGateways   []*networkingv1.VirtualService
		gws               []*networkingv1.Gateway
		gwErr             error
		apiGateways       []gatewayCandidate
		apiRouteErrs      []error
		promErr           error
		svcWhat, podsWhat string
		svcErr, podsErr   error
		formats           accesslog.Formats
		formatProblems    []string
	)
	// The mesh's own access-log format: a JSON log under its keys is no
	// entry to the built-in layouts.
	first.Go(func() { formats, formatProblems = istioconfig.ReadAccessLogFormats(ctx, c) })
	first.Go(func() {
		svc, err := c.GetService(ctx, t.Namespace, t.Service)
		if err != nil {
			svcWhat, svcErr = fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
			return
		}
		if len(svc.Spec.Selector) == 0 {
			return // endpoints by hand: no pods, no inbound logs
		}
		pods, err := c.ListPods(ctx, t.Namespace, svc.Spec.Selector)
		if err != nil {
			podsWhat, podsErr = fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)), err
			return
		}
		in.TargetPods = pods
		readable := proxylog.UpstreamLogPods(pods)
		if len(readable) > proxylog.MaxUpstreamLogs {
			readable = readable[:proxylog.MaxUpstreamLogs]
		}
		logs, logErrs = make([][]byte, len(readable)), make([]error, len(readable))
		var g readgroup.Group
		for i, p := range readable {
			ref := cluster.PodRef{Namespace: p.Namespace, Name: p.Name}
			logPods = append(logPods, ref)
			// The access-log probe's read: the same options, so the read
			// cache serves it to that probe afterwards.
			g.Go(func() { logs[i], logErrs[i] = proxylog.NewestProxyLog(ctx, c, ref, proxylog.AccessLogTailLines) })
		}
		g.Wait()
	})
	if s.Prometheus.URL != "" {
		in.PromAsked = true
		in.Window = s.Window
		if in.Window <= 0 {
			in.Window = prometheus.DefaultWindow
		}
		at := s.Now
		if at.IsZero() {
			at = time.Now()
		}
		first.Go(func() { in.PromRates, promErr = callerRates(ctx, s.Prometheus, t, in.Window, at) })
	}
	first.Go(func() {
		vss, err := c.VirtualServices(ctx, "")
		if err != nil {
			vsErr = err
			return
		}
		for _, vs := range vss {
			if vsNamesHost(vs.Spec.GetHosts(), vsDestinations(vs), vs.Namespace, in.Host) {
				vsRefs = append(vsRefs, vs.Namespace)
				if namesGateways(vs) {
					routingGateways = append(routingGateways, vs)
				}
			}
		}
	})
	first.Go(func() { gws, gwErr = cluster.Gateways(ctx, c, "") })
	first.Go(func() {
		for _, kind := range []cluster.GatewayAPIKind{cluster.HTTPRoutes, cluster.GRPCRoutes} {
			routes, err := cluster.GatewayAPIList(ctx, c, kind, "")
			if err != nil {
				if !errors.Is(err, cluster.ErrNotInInput) && !errors.Is(err, cluster.ErrNotFound) && !cluster.IsMissingKind(err) {
					apiRouteErrs = append(apiRouteErrs, fmt.Errorf("list %s in all namespaces: %w", kind.Resource, err))
				}
				continue
			}
			apiGateways = append(apiGateways, apiGatewayCandidates(routes, t.Service, t.Namespace)...)
		}
	})
	first.Go(func() {
		drs, err := c.DestinationRules(ctx, "")
		if err != nil {
			drErr = err
			return
		}
		for _, dr := range drs {
			if h := dr.Spec.GetHost(); h != "" && !strings.HasPrefix(h, "*") && mesh.HostCovers(h, dr.Namespace, in.Host) {
				drRefs = append(drRefs, dr.Namespace)
			}
		}
	})
	first.Wait()
	if svcErr != nil {
		problem(svcWhat, svcErr)
	}
	if podsErr != nil {
		problem(podsWhat, podsErr)
	}
	if promErr != nil {
		problem("query Prometheus for the target's callers", promErr)
	}
	if vsErr != nil {
		problem("list virtualservices in all namespaces", vsErr)
	}
	if drErr != nil {
		problem("list destinationrules in all namespaces", drErr)
	}
	in.Problems = append(in.Problems, formatProblems...)
	for i, b := range logs {
		if logErrs[i] != nil {
			problem(fmt.Sprintf("read the %s log of %s", mesh.ProxyContainer, logPods[i]), logErrs[i])
			continue
		}
		inbound, outbound, _ := formats.Split(bytes.NewReader(b), proxylog.InboundEntry)
		in.Inbound.Merge(inbound)
		in.LogsRead++
		if failed := outbound.Status5xx + outbound.BlackHole + outbound.TCPFlags.Total(); failed > 0 {
			in.OwnOutbound = append(in.OwnOutbound, ownOutbound{Pod: logPods[i], Failed: failed,
				Why: fmt.Sprintf("a target pod whose own outbound calls fail: %d of %d entries (%d 5xx, %d BlackHoleCluster) in its log", failed, outbound.Entries, outbound.Status5xx, outbound.BlackHole)})
		}
	}

	if zcs, problems := ztunnelCallers(ctx, c, t, in.TargetPods); zcs != nil || problems != nil {
		in.ZtunnelSearched, in.ZtunnelCallers = true, zcs
		in.Problems = append(in.Problems, problems...)
	}

	if len(routingGateways) > 0 {
		if gwErr != nil {
			problem("list gateways in all namespaces", gwErr)
		}
		in.Gateways = gatewayCandidates(routingGateways, gws)
	}
	for _, err := range apiRouteErrs {
		problem("search the Gateway API routes", err)
	}
	in.Gateways = append(in.Gateways, apiGateways...)

	// The config namespaces: the target's first, then those whose rules
	// name the host, in name order.
	in.ConfigNSs = []string{t.Namespace}
	in.ConfigWhy[t.Namespace] = "the target's namespace"
	for _, refs := range []struct {
		nss []string
		why string
	}{{vsRefs, "a VirtualService there names the host"}, {drRefs, "a DestinationRule there names the host"}} {
		sort.Strings(refs.nss)
		for _, ns := range refs.nss {
			if _, seen := in.ConfigWhy[ns]; !seen {
				in.ConfigNSs = append(in.ConfigNSs, ns)
				in.ConfigWhy[ns] = refs.why
			}
		}
	}

	// The second wave: the pods behind the peers' IPs and the workloads
	// Prometheus named, and the meshed pods of the config namespaces.
	peerIPs := topPeers(in, 2*max)
	peerPods := make([][]corev1.Pod, len(peerIPs))
	peerErrs := make([]error, len(peerIPs))
	namespaces := in.ConfigNSs
	for _, r := range in.PromRates {
		namespaces = wording.AppendUnique(namespaces, r.Namespace)
	}
	nsPods := make([][]corev1.Pod, len(namespaces))
	nsErrs := make([]error, len(namespaces))
	var second readgroup.Group
	for i, ip := range peerIPs {
		second.Go(func() { peerPods[i], peerErrs[i] = cluster.PodsByIP(ctx, c, ip) })
	}
	for i, ns := range namespaces {
		second.Go(func() { nsPods[i], nsErrs[i] = c.ListPods(ctx, ns, meshedPods) })
	}
	gwPodErrs := make([]error, len(in.Gateways))
	for i := range in.Gateways {
		gc := &in.Gateways[i]
		second.Go(func() { gc.Pods, gwPodErrs[i] = c.ListPods(ctx, gc.Namespace, gc.Selector) })
	}
	second.Wait()
	for i, gc := range in.Gateways {
		if gwPodErrs[i] != nil {
			problem(fmt.Sprintf("list pods of Gateway %s (selector %v, every namespace)", gc.Gateway, gc.Selector), gwPodErrs[i])
		}
	}
	for i, ns := range namespaces {
		if nsErrs[i] != nil {
			problem(fmt.Sprintf("list meshed pods in %s", ns), nsErrs[i])
			continue
		}
		in.PodsIn[ns] = nsPods[i]
	}
	byIPErrs := 0
	for i, ip := range peerIPs {
		if peerErrs[i] != nil {
			byIPErrs++
			continue
		}
		for j := range peerPods[i] {
			if !peerPods[i][j].Spec.HostNetwork {
				in.PeerPods[ip] = &peerPods[i][j]
				break
			}
		}
	}
	if byIPErrs > 0 {
		// A role without cluster-wide pod lists: the peers are matched
		// against the namespaces listed above only.
		problem(fmt.Sprintf("find pods by IP for %d inbound peer(s); matched against the pods of %s only", byIPErrs, strings.Join(namespaces, ", ")), peerErrs[firstErr(peerErrs)])
		for ip := range in.Inbound.Peers.Counts {
			if in.PeerPods[ip] == nil {
				in.PeerPods[ip] = podWithIP(in.PodsIn, ip)
			}
		}
	}
	return rankCallers(in, max)
}

func firstErr(errs []error) int {
	for i, err := range errs {
		if err != nil {
			return i
		}
	}
	return 0
}

func podWithIP(podsIn map[string][]corev1.Pod, ip string) *corev1.Pod {
	for _, pods := range podsIn {
		for i := range pods {
			if pods[i].Status.PodIP == ip {
				return &pods[i]
			}
		}
	}
	return nil
}

// topPeers are the n peer IPs most worth resolving: most 5xx, then most
// entries. Loopback is the sidecar itself (Istio's 127.0.0.6 passthrough),
// not a caller.
func topPeers(in callerSearchInput, n int) []string {
	var ips []string
	for ip := range in.Inbound.Peers.Counts {
		if p := net.ParseIP(ip); p == nil || p.IsLoopback() {
			continue
		}
		ips = append(ips, ip)
	}
	sort.Slice(ips, func(i, j int) bool {
		a, b := ips[i], ips[j]
		if in.Inbound.PeersFailed.Counts[a] != in.Inbound.PeersFailed.Counts[b] {
			return in.Inbound.PeersFailed.Counts[a] > in.Inbound.PeersFailed.Counts[b]
		}
		if in.Inbound.Peers.Counts[a] != in.Inbound.Peers.Counts[b] {
			return in.Inbound.Peers.Counts[a] > in.Inbound.Peers.Counts[b]
		}
		return a < b
	})
	if len(ips) > n {
		ips = ips[:n]
	}
	return ips
}

// rankCallers orders the candidates, most telling evidence first, and
// picks at most max of them to read, one pod per workload.
func rankCallers(in callerSearchInput, max int) Result {
	var out Result
	out.Problems = in.Problems
	targetPod := map[string]bool{}
	for _, p := range in.TargetPods {
		targetPod[p.Namespace+"/"+p.Name] = true
	}
	var cands []Caller
	seenPod := map[string]bool{}
	add := func(pod *corev1.Pod, by, why string, errs, reqs float64) {
		key := pod.Namespace + "/" + pod.Name
		if seenPod[key] {
			return
		}
		seenPod[key] = true
		cands = append(cands, Caller{
			Pod: cluster.PodRef{Namespace: pod.Namespace, Name: pod.Name}, Workload: pod.Namespace + "/" + mesh.WorkloadName(pod),
			By: by, Why: why, Sidecar: mesh.PodSidecar(pod) != mesh.SidecarNone, errors: errs, requests: reqs,
		})
	}

	if in.PromAsked {
		out.Searched = append(out.Searched, "Prometheus (istio_requests_total by source workload, "+fmtWindow(in.Window)+")")
		rates := append([]workloadRate(nil), in.PromRates...)
		sort.SliceStable(rates, func(i, j int) bool {
			if rates[i].Rate503 != rates[j].Rate503 {
				return rates[i].Rate503 > rates[j].Rate503
			}
			return rates[i].Rate > rates[j].Rate
		})
		for _, r := range rates {
			why := fmt.Sprintf("%s 503/s of %s req/s to the target (Prometheus, %s)", wording.Rate(r.Rate503), wording.Rate(r.Rate), fmtWindow(in.Window))
			for _, pod := range readyFirst(in.PodsIn[r.Namespace]) {
				if mesh.WorkloadName(&pod) == r.Workload {
					add(&pod, ByPrometheus, why, r.Rate503, r.Rate)
				}
			}
		}
	}

	if in.LogsRead > 0 {
		out.Searched = append(out.Searched, fmt.Sprintf("the inbound access log of %d target pod(s)", in.LogsRead))
		for _, ip := range topPeers(in, len(in.Inbound.Peers.Counts)) {
			pod := in.PeerPods[ip]
			if pod == nil || targetPod[pod.Namespace+"/"+pod.Name] {
				continue
			}
			n, bad := in.Inbound.Peers.Counts[ip], in.Inbound.PeersFailed.Counts[ip]
			why := fmt.Sprintf("%d requests from %s in the target's inbound log", n, ip)
			if bad > 0 {
				why = fmt.Sprintf("%d failed of %d requests from %s in the target's inbound log", bad, n, ip)
			}
			add(pod, ByInboundLog, why, float64(bad), float64(n))
		}
	}

	out.Searched = append(out.Searched, addZtunnelCallers(in, add)...)

	own := append([]ownOutbound(nil), in.OwnOutbound...)
	sort.SliceStable(own, func(i, j int) bool { return own[i].Failed > own[j].Failed })
	for _, o := range own {
		for i := range in.TargetPods {
			if p := &in.TargetPods[i]; p.Namespace == o.Pod.Namespace && p.Name == o.Pod.Name {
				add(p, ByOwnOutbound, o.Why, float64(o.Failed), 0)
			}
		}
	}

	out.Searched = append(out.Searched, addGatewayCallers(in, add)...)

	out.Searched = append(out.Searched, "meshed pods in "+strings.Join(in.ConfigNSs, ", "))
	for _, ns := range in.ConfigNSs {
		for _, pod := range readyFirst(in.PodsIn[ns]) {
			if targetPod[pod.Namespace+"/"+pod.Name] {
				continue
			}
			add(&pod, ByConfig, "meshed pod in "+ns+": "+in.ConfigWhy[ns], 0, 0)
		}
	}

	// Read at most max, one pod per workload. A caller without a sidecar
	// has no Envoy to read, but is read all the same: what it sends
	// (plaintext, no retries) is the caller's side of the story.
	readWorkload := map[string]bool{}
	for _, c := range cands {
		if len(out.Callers) < max && !readWorkload[c.Workload] {
			readWorkload[c.Workload] = true
			out.Callers = append(out.Callers, c)
			continue
		}
		out.Others = append(out.Others, c)
	}
	return out
}

// readyFirst orders pods ready first, then by name, so the pick is stable.
func readyFirst(pods []corev1.Pod) []corev1.Pod {
	out := append([]corev1.Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, _ := mesh.PodReady(&out[i])
		rj, _ := mesh.PodReady(&out[j])
		if ri != rj {
			return ri
		}
		return out[i].Name < out[j].Name
	})
	var live []corev1.Pod
	for _, p := range out {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live = append(live, p)
		}
	}
	return live
}

func fmtWindow(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return d.String()
}

// vsNamesHost: a VirtualService in ns whose hosts or route destinations name
// host exactly (a wildcard host names every service, so it says nothing
// about who calls this one).
func vsNamesHost(hosts, destinations []string, ns, host string) bool {
	for _, h := range append(append([]string(nil), hosts...), destinations...) {
		if h != "" && !strings.HasPrefix(h, "*") && mesh.HostCovers(h, ns, host) {
			return true
		}
	}
	return false
}

// vsDestinations are the hosts a VirtualService's routes send to.
func vsDestinations(vs *networkingv1.VirtualService) []string {
	var out []string
	for _, r := range vs.Spec.GetHttp() {
		for _, d := range r.GetRoute() {
			out = append(out, d.GetDestination().GetHost())
		}
	}
	for _, r := range vs.Spec.GetTcp() {
		for _, d := range r.GetRoute() {
			out = append(out, d.GetDestination().GetHost())
		}
	}
	for _, r := range vs.Spec.GetTls() {
		for _, d := range r.GetRoute() {
			out = append(out, d.GetDestination().GetHost())
		}
	}
	return out
}

// RatesQuery is the PromQL for the target's request rates by source
// workload and code, as the on-call would type it.
func RatesQuery(t cluster.Target, window time.Duration) string {
	return fmt.Sprintf(`sum by (source_workload, source_workload_namespace, response_code) (rate(istio_requests_total{reporter="source",destination_service=%q}[%s]))`,
		t.Host(), fmtWindow(window))
}

// callerRates asks Prometheus for the target's callers by workload.
func callerRates(ctx context.Context, p prometheus.Client, t cluster.Target, window time.Duration, at time.Time) ([]workloadRate, error) {
	vec, err := p.Query(ctx, RatesQuery(t, window), at)
	if err != nil {
		return nil, err
	}
	by := map[[2]string]*workloadRate{}
	var order [][2]string
	for _, s := range vec {
		v := float64(s.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		k := [2]string{string(s.Metric["source_workload_namespace"]), string(s.Metric["source_workload"])}
		if k[0] == "" || k[1] == "" || k[1] == "unknown" {
			continue // traffic from outside the mesh has no source workload
		}
		r := by[k]
		if r == nil {
			r = &workloadRate{Namespace: k[0], Workload: k[1]}
			by[k] = r
			order = append(order, k)
		}
		r.Rate += v
		if s.Metric["response_code"] == "503" {
			r.Rate503 += v
		}
	}
	out := make([]workloadRate, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	return out, nil
}
