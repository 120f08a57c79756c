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
	Pod cluster.PodRef `json:"pod"`
	// Context is the kubeconfig context of the cluster the pod was found
	// in when it is a remote one (--remote-contexts); "" for the current
	// cluster.
	Context  string `json:"context,omitempty"`
	Workload string `json:"workload"`
	By       string `json:"by"`
	// Why is the evidence in the on-call's words: "4.2 503/s to the target
	// (Prometheus, 5m)", "61 of 490 requests 5xx in the target's inbound
	// log", "meshed pod in shop, whose VirtualService routes the host".
	Why string `json:"why"`
	// Sidecar: the pod has an istio-proxy whose Envoy can be read.
	Sidecar bool `json:"sidecar"`
	// Triage, for a caller of a remote cluster, is the check that triages
	// from its side: this triage reads its caller through the current
	// cluster only.
	Triage string `json:"triage,omitempty"`

	errors   float64 // 503/s, or 5xx entries
	requests float64
}

// Name is the pod as the evidence names it: CONTEXT: ns/pod for a pod of
// a remote cluster, ns/pod for one of the current cluster.
func (c Caller) Name() string {
	if c.Context != "" {
		return c.Context + ": " + c.Pod.String()
	}
	return c.Pod.String()
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
	// Problems are reads that failed: what the search could not see. A
	// remote cluster that could not be read is one: its callers are not
	// known, never "none".
	Problems []string `json:"problems,omitempty"`
	// Remote are the candidates found in the remote clusters
	// (--remote-contexts), most likely first: the triage's probes read a
	// caller through the current cluster, so none is read; each carries
	// the check that triages from its side. Never in Others.
	Remote []Caller `json:"remote,omitempty"`
	// RemoteFirst: Remote[0] is the most likely caller of all, ahead of
	// every one read.
	RemoteFirst bool `json:"remote_first,omitempty"`
	// RemotesUnread are the remote clusters that could not be read, as
	// "cluster CONTEXT (--remote-contexts) not read ...: why" (among
	// Problems too): the summary says them even when callers were found.
	RemotesUnread []string `json:"remotes_unread,omitempty"`
}

// RemoteNote says what was found in the remote clusters and not read:
// first of all (first true) when the most likely caller is there, with the
// check that triages from its side; "" when nothing was.
func (r Result) RemoteNote() (note string, first bool) {
	if len(r.Remote) == 0 {
		return "", false
	}
	top := r.Remote[0]
	if r.RemoteFirst {
		return fmt.Sprintf("the most likely caller, %s (%s), is in cluster %s: this triage reads its caller through the current cluster, so it was not read; triage from its side: %s",
			top.Name(), top.Why, top.Context, top.Triage), true
	}
	return fmt.Sprintf("%s in remote clusters not read (this triage reads its caller through the current cluster), first %s (%s): triage from its side: %s",
		wording.CountNoun(len(r.Remote), "candidate"), top.Name(), top.Why, top.Triage), false
}

// Summary is the search in one line for a report or a log note.
func (r Result) Summary() string {
	var s string
	if len(r.Callers) == 0 {
		s = "no caller found in the current cluster (searched " + strings.Join(r.Searched, "; ") + ")"
		if len(r.Remote) == 0 {
			s = "no caller found (searched " + strings.Join(r.Searched, "; ") + ")"
		}
	} else {
		names := make([]string, len(r.Callers))
		for i, c := range r.Callers {
			names[i] = c.Name() + " (" + c.Why + ")"
		}
		s = fmt.Sprintf("read %d caller(s): %s", len(r.Callers), strings.Join(names, "; "))
	}
	if note, first := r.RemoteNote(); first {
		s = note + "; " + s
	} else if note != "" {
		s += "; " + note
	}
	switch {
	case len(r.Callers) == 0 && len(r.Problems) > 0:
		s += "; could not read: " + strings.Join(r.Problems, "; ")
	case len(r.RemotesUnread) > 0:
		s += "; " + strings.Join(r.RemotesUnread, "; ")
	}
	return s
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

	// The other clusters (--remote-contexts): the target read in each,
	// the current cluster's context name and cluster ID (Prometheus's
	// source_cluster), and, per peer IP, the context of the cluster whose
	// pod has it ("" the current) and the contexts whose target pods
	// logged it.
	Remotes        []remoteTarget
	CurrentContext string
	CurrentID      string
	RemotesUnread  []string
	PeerContext    map[string]string
	PeerSeenIn     map[string][]string
}

type ownOutbound struct {
	Pod     cluster.PodRef
	Context string
	Failed  int
	Why     string
}

type workloadRate struct {
	Namespace, Workload string
	// Cluster is the source_cluster label: the caller's cluster ID.
	Cluster       string
	Rate503, Rate float64
	// Context is the cluster Cluster was attributed to ("" the current);
	// elsewhere: it names a cluster no context read is.
	Context   string
	elsewhere bool
}

// Find searches for the target's callers. It never fails: what it
// could not read is in Problems, and an empty Callers says the triage goes
// on from the service side only.
func Find(ctx context.Context, c cluster.Cluster, t cluster.Target, s Options) Result {
	in := callerSearchInput{Target: t, Host: t.Host(), PodsIn: map[string][]corev1.Pod{}, PeerPods: map[string]*corev1.Pod{}, ConfigWhy: map[string]string{},
		CurrentContext: c.Info().Context, PeerContext: map[string]string{}, PeerSeenIn: map[string][]string{}}
	remotes, _ := cluster.RemoteClusters(c)
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
	first.Go(func() { in.Remotes = readRemoteTargets(ctx, remotes, t) })
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
	in.LogsRead = mergeTargetLogs(&in, formats, "", logs, logErrs, logPods)
	targetPods := make([]*corev1.Pod, len(in.TargetPods))
	for i := range in.TargetPods {
		targetPods[i] = &in.TargetPods[i]
	}
	in.CurrentID, _ = mesh.ClusterIDOfPods(targetPods)
	for i := range in.Remotes {
		rt := &in.Remotes[i]
		if rt.Unread != "" {
			unread := fmt.Sprintf("cluster %s (--remote-contexts) not read, so its callers are not known: %s", rt.Context, rt.Unread)
			in.Problems = append(in.Problems, unread)
			in.RemotesUnread = append(in.RemotesUnread, unread)
			continue
		}
		rt.LogsRead = mergeTargetLogs(&in, formats, rt.Context, rt.logs, rt.logErrs, rt.logPods)
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
	remoteNamespaces := map[string][]string{}
	for i := range in.PromRates {
		r := &in.PromRates[i]
		var attributed bool
		r.Context, attributed = sourceClusterContext(r.Cluster, in.CurrentID, in.Remotes)
		r.elsewhere = !attributed
		switch {
		case r.elsewhere:
		case r.Context == "":
			namespaces = wording.AppendUnique(namespaces, r.Namespace)
		default:
			remoteNamespaces[r.Context] = wording.AppendUnique(remoteNamespaces[r.Context], r.Namespace)
		}
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
	// In each remote read: the same peers by IP (a remote replica logs
	// its own callers, and a caller of the current one's log may be a
	// remote pod on a flat network), and the namespaces of the workloads
	// Prometheus attributes to it.
	remotePeers := make([][][]corev1.Pod, len(in.Remotes))
	remotePeerErrs := make([][]error, len(in.Remotes))
	for ri := range in.Remotes {
		rt := &in.Remotes[ri]
		if rt.Unread != "" {
			continue
		}
		remotePeers[ri], remotePeerErrs[ri] = make([][]corev1.Pod, len(peerIPs)), make([]error, len(peerIPs))
		for i, ip := range peerIPs {
			second.Go(func() { remotePeers[ri][i], remotePeerErrs[ri][i] = cluster.PodsByIP(ctx, rt.Cluster, ip) })
		}
		rt.nsListed = remoteNamespaces[rt.Context]
		rt.nsPods, rt.nsErrs = make([][]corev1.Pod, len(rt.nsListed)), make([]error, len(rt.nsListed))
		for i, ns := range rt.nsListed {
			second.Go(func() { rt.nsPods[i], rt.nsErrs[i] = rt.Cluster.ListPods(ctx, ns, meshedPods) })
		}
	}
	second.Wait()
	for _, rt := range in.Remotes {
		for i, ns := range rt.nsListed {
			if rt.nsErrs[i] != nil {
				problem(fmt.Sprintf("list meshed pods in %s in cluster %s", ns, rt.Context), rt.nsErrs[i])
				continue
			}
			rt.PodsIn[ns] = rt.nsPods[i]
		}
	}
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
		if p := notHostNetwork(peerPods[i]); p != nil {
			in.PeerPods[ip] = p
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
	if len(in.Remotes) > 0 {
		resolvePeersAcrossClusters(&in, peerIPs, remotePeers, remotePeerErrs, problem)
	}
	return rankCallers(in, max)
}

// resolvePeersAcrossClusters gives each peer IP the pod of the cluster
// most likely to hold it: first the clusters whose target pods logged it
// (the current one first), then the others. Pod IPs of clusters on
// different networks may overlap; a replica's caller on its own network
// is in its own cluster, and one from another network arrives through an
// east-west gateway, whose pod is then what the IP names.
func resolvePeersAcrossClusters(in *callerSearchInput, peerIPs []string, remotePeers [][][]corev1.Pod, remotePeerErrs [][]error, problem func(string, error)) {
	current := in.PeerPods
	in.PeerPods = map[string]*corev1.Pod{}
	for ip, p := range current {
		if p != nil {
			in.PeerPods[ip] = p
		}
	}
	lookedUp := map[string]int{}
	for i, ip := range peerIPs {
		lookedUp[ip] = i
	}
	for ip, i := range lookedUp {
		order := append([]string(nil), in.PeerSeenIn[ip]...)
		sort.SliceStable(order, func(a, b int) bool { return order[a] == "" && order[b] != "" })
		order = wording.AppendUnique(order, "")
		for _, rt := range in.Remotes {
			order = wording.AppendUnique(order, rt.Context)
		}
		delete(in.PeerPods, ip)
		for _, name := range order {
			if name == "" {
				if p := current[ip]; p != nil {
					in.PeerPods[ip] = p
					break
				}
				continue
			}
			ri := remoteIndex(in.Remotes, name)
			if ri < 0 || remotePeers[ri] == nil || remotePeerErrs[ri][i] != nil {
				continue
			}
			if p := notHostNetwork(remotePeers[ri][i]); p != nil {
				in.PeerPods[ip], in.PeerContext[ip] = p, name
				break
			}
		}
	}
	for ri, rt := range in.Remotes {
		failed, first := 0, -1
		for i, err := range remotePeerErrs[ri] {
			if err != nil {
				failed++
				if first < 0 {
					first = i
				}
			}
		}
		if failed > 0 {
			problem(fmt.Sprintf("find pods by IP for %d inbound peer(s) in cluster %s", failed, rt.Context), remotePeerErrs[ri][first])
		}
	}
}

func remoteIndex(remotes []remoteTarget, name string) int {
	for i := range remotes {
		if remotes[i].Context == name {
			return i
		}
	}
	return -1
}

// notHostNetwork is the first pod that is not on its node's network: a
// host-network pod shares its IP with the node and every other such pod.
func notHostNetwork(pods []corev1.Pod) *corev1.Pod {
	for j := range pods {
		if !pods[j].Spec.HostNetwork {
			return &pods[j]
		}
	}
	return nil
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
	out.Problems, out.RemotesUnread = in.Problems, in.RemotesUnread
	// Pods are keyed by their cluster's context too: the same name in two
	// clusters is two pods.
	podKey := func(context string, p *corev1.Pod) string { return context + "\x00" + p.Namespace + "/" + p.Name }
	targetPod := map[string]bool{}
	for i := range in.TargetPods {
		targetPod[podKey("", &in.TargetPods[i])] = true
	}
	for _, rt := range in.Remotes {
		for i := range rt.Pods {
			targetPod[podKey(rt.Context, &rt.Pods[i])] = true
		}
	}
	var cands []Caller
	seenPod := map[string]bool{}
	addIn := func(context string) func(pod *corev1.Pod, by, why string, errs, reqs float64) {
		return func(pod *corev1.Pod, by, why string, errs, reqs float64) {
			key := podKey(context, pod)
			if seenPod[key] {
				return
			}
			seenPod[key] = true
			cands = append(cands, Caller{
				Pod: cluster.PodRef{Namespace: pod.Namespace, Name: pod.Name}, Context: context, Workload: pod.Namespace + "/" + mesh.WorkloadName(pod),
				By: by, Why: why, Sidecar: mesh.PodSidecar(pod) != mesh.SidecarNone, errors: errs, requests: reqs,
			})
		}
	}
	add := addIn("")

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
			if r.elsewhere {
				out.Problems = append(out.Problems, fmt.Sprintf("Prometheus names %s/%s as a caller (%s 503/s) from cluster %s (source_cluster), which is neither the current cluster (%s) nor any --remote-contexts cluster read: its pods were not looked for; give its context with --remote-contexts",
					r.Namespace, r.Workload, wording.Rate(r.Rate503), r.Cluster, in.CurrentID))
				continue
			}
			source := "Prometheus, " + fmtWindow(in.Window)
			if r.Cluster != "" && r.Cluster != "unknown" {
				source += ", source_cluster " + r.Cluster
			}
			why := fmt.Sprintf("%s 503/s of %s req/s to the target (%s)", wording.Rate(r.Rate503), wording.Rate(r.Rate), source)
			pods := in.PodsIn[r.Namespace]
			if r.Context != "" {
				pods = nil
				if ri := remoteIndex(in.Remotes, r.Context); ri >= 0 {
					pods = in.Remotes[ri].PodsIn[r.Namespace]
				}
			}
			for _, pod := range readyFirst(pods) {
				if mesh.WorkloadName(&pod) == r.Workload {
					addIn(r.Context)(&pod, ByPrometheus, why, r.Rate503, r.Rate)
				}
			}
		}
	}

	remoteLogsRead := 0
	for _, rt := range in.Remotes {
		remoteLogsRead += rt.LogsRead
	}
	if in.LogsRead > 0 {
		out.Searched = append(out.Searched, fmt.Sprintf("the inbound access log of %d target pod(s)", in.LogsRead))
	}
	for _, rt := range in.Remotes {
		switch {
		case rt.NoService:
			out.Searched = append(out.Searched, fmt.Sprintf("cluster %s: no Service %s/%s there", rt.Context, in.Target.Namespace, in.Target.Service))
		case rt.Unread == "":
			out.Searched = append(out.Searched, fmt.Sprintf("cluster %s: the inbound access log of %d target pod(s)", rt.Context, rt.LogsRead))
		}
	}
	if in.LogsRead+remoteLogsRead > 0 {
		for _, ip := range topPeers(in, len(in.Inbound.Peers.Counts)) {
			pod, context := in.PeerPods[ip], in.PeerContext[ip]
			if pod == nil || targetPod[podKey(context, pod)] {
				continue
			}
			where := "the target's inbound log"
			if len(in.Remotes) > 0 {
				where += " (" + loggedIn(in.PeerSeenIn[ip]) + ")"
			}
			n, bad := in.Inbound.Peers.Counts[ip], in.Inbound.PeersFailed.Counts[ip]
			why := fmt.Sprintf("%d requests from %s in %s", n, ip, where)
			if bad > 0 {
				why = fmt.Sprintf("%d failed of %d requests from %s in %s", bad, n, ip, where)
			}
			addIn(context)(pod, ByInboundLog, why, float64(bad), float64(n))
		}
	}

	out.Searched = append(out.Searched, addZtunnelCallers(in, add)...)

	own := append([]ownOutbound(nil), in.OwnOutbound...)
	sort.SliceStable(own, func(i, j int) bool { return own[i].Failed > own[j].Failed })
	for _, o := range own {
		pods := in.TargetPods
		if ri := remoteIndex(in.Remotes, o.Context); o.Context != "" && ri >= 0 {
			pods = in.Remotes[ri].Pods
		}
		for i := range pods {
			if p := &pods[i]; p.Namespace == o.Pod.Namespace && p.Name == o.Pod.Name {
				addIn(o.Context)(p, ByOwnOutbound, o.Why, float64(o.Failed), 0)
			}
		}
	}

	out.Searched = append(out.Searched, addGatewayCallers(in, add)...)

	out.Searched = append(out.Searched, "meshed pods in "+strings.Join(in.ConfigNSs, ", "))
	for _, ns := range in.ConfigNSs {
		for _, pod := range readyFirst(in.PodsIn[ns]) {
			if targetPod[podKey("", &pod)] {
				continue
			}
			add(&pod, ByConfig, "meshed pod in "+ns+": "+in.ConfigWhy[ns], 0, 0)
		}
	}

	// Read at most max, one pod per workload. A caller without a sidecar
	// has no Envoy to read, but is read all the same: what it sends
	// (plaintext, no retries) is the caller's side of the story. A
	// caller of a remote cluster is not read (the probes read the
	// caller through the current cluster): it is said, with the check
	// that triages from its side, first when it is the most likely.
	var remoteContexts []string
	for _, rt := range in.Remotes {
		remoteContexts = append(remoteContexts, rt.Context)
	}
	out.RemoteFirst = len(cands) > 0 && cands[0].Context != ""
	readWorkload := map[string]bool{}
	for _, c := range cands {
		if c.Context != "" {
			// Never among Others, which a picker offers as pods of the
			// current cluster.
			c.Triage = triageCommand(in.Target, c.Pod, c.Context, in.CurrentContext, remoteContexts)
			out.Remote = append(out.Remote, c)
			continue
		}
		if len(out.Callers) < max && !readWorkload[c.Workload] {
			readWorkload[c.Workload] = true
			out.Callers = append(out.Callers, c)
			continue
		}
		out.Others = append(out.Others, c)
	}
	return out
}

// loggedIn names the clusters whose target pods logged a peer.
func loggedIn(contexts []string) string {
	names := make([]string, len(contexts))
	for i, c := range contexts {
		names[i] = "cluster " + c
		if c == "" {
			names[i] = "the current cluster"
		}
	}
	return strings.Join(names, ", ")
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
	return fmt.Sprintf(`sum by (source_workload, source_workload_namespace, source_cluster, response_code) (rate(istio_requests_total{reporter="source",destination_service=%q}[%s]))`,
		t.Host(), fmtWindow(window))
}

// callerRates asks Prometheus for the target's callers by workload.
func callerRates(ctx context.Context, p prometheus.Client, t cluster.Target, window time.Duration, at time.Time) ([]workloadRate, error) {
	vec, err := p.Query(ctx, RatesQuery(t, window), at)
	if err != nil {
		return nil, err
	}
	by := map[[3]string]*workloadRate{}
	var order [][3]string
	for _, s := range vec {
		v := float64(s.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		// source_cluster (Istio's standard label: the calling proxy's
		// cluster ID) keeps a workload of the same name in two clusters
		// apart.
		k := [3]string{string(s.Metric["source_workload_namespace"]), string(s.Metric["source_workload"]), string(s.Metric["source_cluster"])}
		if k[0] == "" || k[1] == "" || k[1] == "unknown" {
			continue // traffic from outside the mesh has no source workload
		}
		r := by[k]
		if r == nil {
			r = &workloadRate{Namespace: k[0], Workload: k[1], Cluster: k[2]}
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
