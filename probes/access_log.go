package probes

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/podfacts"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/vocabulary"
	"github.com/meshtriage/meshtriage/probes/wording"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AccessLogProbe tallies the source (and upstream) istio-proxy access logs:
// entries by response flag with the code each came with, response code
// details and transport failure reasons, which are the primary evidence for
// most 503 causes. Flags are counted on every entry, not only on 5xx ones:
// NR comes with 404 (or 0 on TCP), DC with 0, and both are 503 evidence.
type AccessLogProbe struct{}

func (AccessLogProbe) Meta() Meta {
	return Meta{
		ID:    "access-log",
		Title: "istio-proxy access log: 503s by response flag",
		Reads: []string{"pods/log (istio-proxy)", "pods", "services", "configmaps (mesh config: its access-log format)"},
		Facts: []FactSpec{
			{"log_lines", FactInt, "access-log lines read"},
			{"log_unparsed", FactInt, "lines that are not access-log entries"},
			{"log_5xx", FactInt, "entries with a 5xx response code"},
			{"log_503", FactInt, "entries with response code 503"},
			{"log_2xx", FactInt, "entries with a 2xx response code"},
			{"log_flag_uh", FactInt, "HTTP entries flagged UH (no healthy upstream; comes with 503)"},
			{"log_flag_uf", FactInt, "HTTP entries flagged UF (upstream connection failure; 503)"},
			{"log_flag_uo", FactInt, "HTTP entries flagged UO (upstream overflow: circuit breaking; 503)"},
			{"log_flag_nr", FactInt, "HTTP entries flagged NR (no route; comes with 404, or 503 before Istio 1.1)"},
			{"log_flag_nc", FactInt, "HTTP entries flagged NC (no cluster; 503)"},
			{"log_flag_urx", FactInt, "HTTP entries flagged URX (retry/connect attempts exhausted)"},
			{"log_flag_uc", FactInt, "HTTP entries flagged UC (upstream connection termination; 503)"},
			{"log_flag_ut", FactInt, "HTTP entries flagged UT (upstream request timeout; 504)"},
			{"log_flag_dc", FactInt, "HTTP entries flagged DC (downstream connection termination; comes with response code 0)"},
			{"log_flag_lr", FactInt, "HTTP entries flagged LR (connection local reset)"},
			{"log_flag_ur", FactInt, "HTTP entries flagged UR (upstream remote reset)"},
			{"log_flag_codes", FactList, "each flag of an HTTP entry with the response code it came with, as \"FLAG CODE\" (\"NR 404\", \"DC 0\", \"UO 503\"), most frequent first"},
			{"log_tcp", FactInt, "TCP proxy entries (request \"- - -\", no HTTP status)"},
			{"log_tcp_flag_uf", FactInt, "TCP entries flagged UF (upstream connection failure)"},
			{"log_tcp_flag_urx", FactInt, "TCP entries flagged URX (connect attempts exhausted)"},
			{"log_tcp_flag_uh", FactInt, "TCP entries flagged UH (no healthy upstream, BlackHoleCluster)"},
			{"log_tcp_flag_nr", FactInt, "TCP entries flagged NR: no filter chain took the connection (filter_chain_not_found, e.g. plaintext into a STRICT port)"},
			{"log_details", FactList, "distinct response_code_details of failed entries (5xx, or carrying a response flag)"},
			{"log_transport_failures", FactList, "distinct upstream_transport_failure_reason values"},
			{"log_blackhole", FactInt, "entries of the source routed to BlackHoleCluster (or the block_all route), whatever their destination"},
			{"log_blackhole_hosts", FactList, "authorities of entries routed to BlackHoleCluster"},
			{"log_tunnel_resets", FactInt, "UC entries (a connection reset under the request) sent through an HBONE tunnel (upstream host envoy://connect_originate/IP:PORT): a pooled connection to the pod's 15008 that was no longer good"},
			{"log_tunnel_reset_ips", FactList, "pod IPs of those tunnel resets, most frequent first"},
			{"log_tunnel_reset_reused_ips", FactList, "of log_tunnel_reset_ips, those whose pod now (of the Service) started after the caller's istio-proxy and at most hboneIdleTimeout before the first reset to it: a connection the caller pooled to that IP before was to another pod"},
			{"log_tunnel_reset_times_known", FactBool, "the caller's istio-proxy start, the mesh's hboneIdleTimeout, and for every tunnel reset IP its first reset's time and its pod's start were read"},
			{"log_hbone_idle_timeout", FactString, "the idle timeout of the Envoys' pooled HBONE connections (meshConfig.hboneIdleTimeout, else Istio's 1h; 0s: none), \"\" when the mesh config was not read"},
			{"log_tunnel_failed_ips", FactList, "pod IPs of 5xx entries sent through an HBONE tunnel (upstream host envoy://connect_originate/IP:PORT, ambient), most frequent first"},
			{"log_connection_refused", FactInt, "entries whose failure reason says connection refused (delayed connect error: 111)"},
			{"log_upstream_pods", FactInt, "upstream pods whose istio-proxy log was read (inbound side)"},
			{"log_unexplained", FactList, "failures the vocabulary (assets/vocabulary) knows no cause of the catalogue for, each with its response flag, code, details and hop (the caller's sidecar, a gateway, the destination's inbound), as LINE=COUNT"},
			{"log_xds_rejected", FactInt, "lines of the caller's istio-proxy log in which its Envoy (or pilot-agent, before its first config) says it rejected an xDS update (\"gRPC config for ... rejected\", \"delta config for ... rejected\"): the proxy keeps the config it had (0 when the caller's log was not read)"},
			{"log_xds_rejected_reason", FactString, "the newest of those, as TYPE: ERROR (\"\" when none)"},
			{"log_http10_rejected", FactInt, "requests Envoy refused with its own 426 because they were HTTP/1.0 (details low_version; no flag, no 5xx): the listener does not accept HTTP/1.0 (istiod sets accept_http_10 only with PILOT_HTTP10 or the proxy's ISTIO_META_HTTP10=1)"},
			{"log_http10_hops", FactList, "the hops whose proxy answered 426 low_version: sidecar-outbound (the caller's sidecar), sidecar-inbound (the destination's), gateway"},
			{"log_http10_accepted_by", FactList, "pods whose proxy logged 426 low_version and is now told to accept HTTP/1.0 (ISTIO_META_HTTP10=1 in istio-proxy's env or its proxy.istio.io/config proxyMetadata), with where: the 426s came before the change, or from a proxy not yet restarted"},
			{"log_nc500", FactInt, "entries the caller's proxy answered 500 NC (cluster_not_found): a Gateway API route (gateway semantics) to a cluster istiod does not build; a sidecar's about the target, a gateway's whatever their host (such an entry names no cluster, so its log alone does not tell the Service its route meant; the gateway step ties them to routes by route_name)"},
			{"log_nc500_routes", FactList, "route names (route_name) of the log_nc500 entries, most frequent first"},
			{"log_custom_format", FactBool, "the mesh config declares an access-log format of its own (meshConfig.accessLogFormat, or an envoyFileAccessLog provider's), by which the log was read"},
		},
	}
}

// podLog is one pod's tally, split into the entries about the target and
// the rest of what the proxy logged.
type podLog struct {
	Pod      cluster.PodRef
	Upstream bool // an upstream (target) pod: its inbound side
	// Gateway: the source is an Istio gateway, not a sidecar.
	Gateway bool
	// AcceptsHTTP10 says where the pod's proxy is told to accept
	// HTTP/1.0, "" when it is not (or the pod was not read).
	AcceptsHTTP10 string
	Target        accesslog.Summary
	Other         accesslog.Summary
	// NC500 counts, by route name, the caller's 500 NC entries: those
	// about the target, and on a gateway every one that names no cluster.
	NC500 accesslog.Counter
	// Rejections are the xDS updates the caller's Envoy said it rejected
	// (the caller's log only).
	Rejections []envoy.XDSRejection
	Problem    string // why the log could not be read
}

type accessLogInput struct {
	Logs []podLog
	// Selector is the Service selector the upstream pods were listed by.
	Selector map[string]string
	// UpstreamSkipped counts upstream pods not read: no sidecar, or beyond
	// proxylog.MaxUpstreamLogs.
	UpstreamSkipped int
	UpstreamTotal   int
	// Problems are reads that failed without spoiling the rest.
	Problems []string
	// Formats are the mesh's own access-log formats the logs were read by.
	Formats accesslog.Formats
	// HBONEIdleTimeout is the mesh's idle timeout of pooled HBONE
	// connections, when MeshConfigRead.
	HBONEIdleTimeout time.Duration
	MeshConfigRead   bool
	// CallerProxyStarted is when the caller's istio-proxy container (the
	// Envoy that holds the pool) last started; zero when not read.
	CallerProxyStarted time.Time
	// PodsByIP are the Service's pods by status.podIP, nil when they were
	// not listed.
	PodsByIP map[string]podStarted
}

// podStarted is a pod of the Service and when it started (status.startTime,
// about when its IP was given to it; zero when the pod has none).
type podStarted struct {
	Pod     string
	Started time.Time
}

func (p AccessLogProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchAccessLog(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = accessLogCommands(t, in.Selector)
		return r
	}
	if len(in.Logs) == 0 {
		summary := "no istio-proxy log to read: " + noLogWhy(t, in)
		return Result{Status: StatusSkipped, Summary: summary, Facts: Facts{}, Commands: accessLogCommands(t, in.Selector)}
	}
	return evaluateAccessLog(t, in)
}

func noLogWhy(t cluster.Target, in accessLogInput) string {
	var why []string
	if t.Source == nil {
		why = append(why, "no source pod named (--from pod/NAME)")
	}
	why = append(why, in.Problems...)
	switch {
	case len(in.Selector) == 0:
		why = append(why, "the Service has no selector")
	case in.UpstreamTotal == 0:
		why = append(why, "the Service selects no pod")
	default:
		why = append(why, fmt.Sprintf("none of the %d selected pods has a sidecar", in.UpstreamTotal))
	}
	return strings.Join(why, "; ")
}

func fetchAccessLog(ctx context.Context, c cluster.Cluster, t cluster.Target) (accessLogInput, string, error) {
	var in accessLogInput
	var firstErr error
	var firstWhat string
	fail := func(what string, err error) {
		in.Problems = append(in.Problems, cluster.AccessProblem(what, err))
		if firstErr == nil {
			firstErr, firstWhat = err, what
		}
	}
	// readLog reads one pod's log; it touches nothing shared, so the reads
	// run at once and are added below in a fixed order (the caller's first).
	// The mesh's own formats first: every log is read by them.
	var formatProblems []string
	in.Formats, formatProblems = istioconfig.ReadAccessLogFormats(ctx, c)
	in.Problems = append(in.Problems, formatProblems...)
	// The same ConfigMap (the session's read cache answers it): the pooled
	// HBONE connections' idle timeout. Unread, it is unknown.
	if mc, err := istioconfig.ReadMeshConfig(ctx, c); err == nil {
		in.HBONEIdleTimeout, in.MeshConfigRead = mc.HBONEIdleTimeout(), true
	}
	readLog := func(pod cluster.PodRef, podIP string, upstream, gateway bool) (podLog, string, error) {
		what := fmt.Sprintf("read the %s log of %s", mesh.ProxyContainer, pod)
		b, err := proxylog.NewestProxyLog(ctx, c, pod, proxylog.AccessLogTailLines)
		if err != nil {
			return podLog{Pod: pod, Upstream: upstream, Problem: cluster.AccessProblem(what, err)}, what, err
		}
		if upstream {
			pl := podLog{Pod: pod, Upstream: true}
			pl.Target, pl.Other, _ = in.Formats.Split(bytes.NewReader(b), proxylog.InboundEntryAt(podIP))
			return pl, "", nil
		}
		return splitCallerLog(in.Formats, pod, b, t, gateway), "", nil
	}
	type logRead struct {
		log     podLog
		what    string
		err     error
		skipped string // why the log was not read
		// proxyStarted: the caller's istio-proxy container's start.
		proxyStarted time.Time
	}
	var (
		source   *logRead
		upstream []logRead
		// failures of the Service and pod reads, in the order made
		lookups []logRead
		g       readgroup.Group
	)
	if t.Source != nil {
		source = &logRead{}
		g.Go(func() {
			src := *t.Source
			pod, err := c.GetPod(ctx, src.Namespace, src.Name)
			if err == nil && mesh.PodSidecar(pod) == mesh.SidecarNone {
				source.skipped = fmt.Sprintf("source pod %s has no %s: no outbound access log", src, mesh.ProxyContainer)
				return
			}
			// RBAC on pods need not stop a log read.
			var gateway bool
			if err == nil {
				gateway, _ = mesh.GatewayPod(pod)
			}
			source.log, source.what, source.err = readLog(src, "", false, gateway)
			if err == nil {
				source.proxyStarted = proxyStarted(pod)
				source.log.Gateway = gateway
				if ok, where := podfacts.ProxyAcceptsHTTP10(pod); ok {
					source.log.AcceptsHTTP10 = where
				}
			}
		})
	}
	g.Go(func() {
		svc, err := c.GetService(ctx, t.Namespace, t.Service)
		if err != nil {
			lookups = append(lookups, logRead{what: fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err: err})
			return
		}
		if in.Selector = svc.Spec.Selector; len(in.Selector) == 0 {
			return
		}
		pods, err := c.ListPods(ctx, t.Namespace, in.Selector)
		if err != nil {
			lookups = append(lookups, logRead{what: fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(in.Selector)), err: err})
		}
		in.UpstreamTotal = len(pods)
		if err == nil {
			in.PodsByIP = map[string]podStarted{}
			for _, pod := range pods {
				if ip := pod.Status.PodIP; ip != "" && pod.DeletionTimestamp == nil {
					var started time.Time
					if pod.Status.StartTime != nil {
						started = pod.Status.StartTime.Time
					}
					in.PodsByIP[ip] = podStarted{Pod: pod.Namespace + "/" + pod.Name, Started: started}
				}
			}
		}
		readable := proxylog.UpstreamLogPods(pods)
		in.UpstreamSkipped = len(pods) - len(readable)
		if len(readable) > proxylog.MaxUpstreamLogs {
			in.UpstreamSkipped += len(readable) - proxylog.MaxUpstreamLogs
			readable = readable[:proxylog.MaxUpstreamLogs]
		}
		upstream = make([]logRead, len(readable))
		var logs readgroup.Group
		for i, pod := range readable {
			logs.Go(func() {
				upstream[i].log, upstream[i].what, upstream[i].err = readLog(cluster.PodRef{Namespace: pod.Namespace, Name: pod.Name}, pod.Status.PodIP, true, false)
				if ok, where := podfacts.ProxyAcceptsHTTP10(&pod); ok {
					upstream[i].log.AcceptsHTTP10 = where
				}
			})
		}
		logs.Wait()
	})
	g.Wait()

	add := func(r logRead, hasLog bool) {
		if r.skipped != "" {
			in.Problems = append(in.Problems, r.skipped)
			return
		}
		if hasLog {
			in.Logs = append(in.Logs, r.log)
		}
		if r.err != nil {
			fail(r.what, r.err)
		}
	}
	if source != nil {
		add(*source, true)
		in.CallerProxyStarted = source.proxyStarted
	}
	for _, r := range lookups {
		add(r, false)
	}
	for _, r := range upstream {
		add(r, true)
	}

	for _, l := range in.Logs {
		if l.Problem == "" {
			return in, "", nil
		}
	}
	if firstErr != nil {
		return in, firstWhat, firstErr
	}
	return in, "", nil
}

// sourceEntryMatcher selects the source's entries about the target: sent
// to one of its outbound clusters, or addressed to its name when no cluster
// took them (NR, NC). A pod calls many services; counting their 503s would
// blame the target for someone else's outage.
func sourceEntryMatcher(t cluster.Target) func(*accesslog.Entry) bool {
	names := map[string]bool{}
	for _, n := range []string{t.Service, t.Service + "." + t.Namespace, t.Service + "." + t.Namespace + ".svc", t.Host()} {
		names[n] = true
	}
	return func(e *accesslog.Entry) bool {
		if e.UpstreamCluster != "" && e.UpstreamCluster != accesslog.BlackHoleCluster && e.UpstreamCluster != accesslog.PassthroughCluster {
			return envoy.IsTargetCluster(e.UpstreamCluster, t.Host(), t.Port)
		}
		host, port := e.Authority, ""
		if h, p, err := net.SplitHostPort(e.Authority); err == nil {
			host, port = h, p
		}
		if !names[host] {
			return false
		}
		return t.Port == 0 || port == "" || port == strconv.Itoa(int(t.Port))
	}
}

// splitCallerLog tallies the caller's log: the entries about the target
// (sourceEntryMatcher), the rest, the xDS updates its Envoy rejected, and
// its 500 NC entries by route name. Under Gateway API semantics a route to
// a cluster istiod does not build answers 500 NC (cluster_not_found), not
// 503: a sidecar's such entries about the target count; a gateway's entry
// names no cluster and the public host, not the Service its route meant,
// so every one of a gateway counts, and the gateway step ties them to the
// target's routes by route_name.
func splitCallerLog(fs accesslog.Formats, pod cluster.PodRef, b []byte, t cluster.Target, gateway bool) podLog {
	pl := podLog{Pod: pod, Gateway: gateway}
	about := sourceEntryMatcher(t)
	match := func(e *accesslog.Entry) bool {
		ok := about(e)
		if e.ResponseCode == 500 && e.HasFlag("NC") && (ok || gateway && noCluster(e)) {
			pl.NC500.Add(wording.Dash(e.RouteName))
		}
		return ok
	}
	pl.Target, pl.Other, _ = fs.Split(bytes.NewReader(b), match)
	pl.Rejections = envoy.ParseXDSRejections(b)
	return pl
}

// noCluster: the entry names no upstream cluster (NC: Envoy found none).
func noCluster(e *accesslog.Entry) bool { return e.UpstreamCluster == "" || e.UpstreamCluster == "-" }

// accessLogFlags maps the flag facts to Envoy's response flags.
var accessLogFlags = []struct{ fact, flag string }{
	{"log_flag_uh", "UH"}, {"log_flag_uf", "UF"}, {"log_flag_uo", "UO"}, {"log_flag_nr", "NR"},
	{"log_flag_nc", "NC"}, {"log_flag_urx", "URX"}, {"log_flag_uc", "UC"}, {"log_flag_ut", "UT"},
	{"log_flag_dc", "DC"}, {"log_flag_lr", "LR"}, {"log_flag_ur", "UR"},
}

// accessLogTCPFlags maps the TCP flag facts to Envoy's response flags.
var accessLogTCPFlags = []struct{ fact, flag string }{
	{"log_tcp_flag_uf", "UF"}, {"log_tcp_flag_urx", "URX"}, {"log_tcp_flag_uh", "UH"}, {"log_tcp_flag_nr", "NR"},
}

func evaluateAccessLog(t cluster.Target, in accessLogInput) Result {
	var all accesslog.Summary
	var blackhole accesslog.Summary // every entry of the source, for BlackHoleCluster
	var rows [][]string
	var raw []string
	upstreamRead := 0
	var http10Hops, http10Accepted []string
	var srcSummary, upSummary string
	var up accesslog.Summary
	var rejections []envoy.XDSRejection
	var nc500 accesslog.Counter // the caller's 500 NC entries, by route name (one caller a log)
	reading := proxylog.NewReading()
	for _, l := range in.Logs {
		side := "source (outbound)"
		hop := vocabulary.SidecarOutbound
		switch {
		case l.Upstream:
			side, hop = "upstream (inbound)", vocabulary.SidecarInbound
		case l.Gateway:
			side, hop = "source (gateway)", vocabulary.Gateway
		}
		if l.Problem == "" {
			reading.AddEnvoy(hop, l.Target.Failures)
		}
		if l.Problem != "" {
			rows = append(rows, []string{side, l.Pod.String(), "-", "-", "-", "-", "-", "-", l.Problem})
			continue
		}
		all.Merge(l.Target)
		if l.Target.HTTP10Rejected > 0 && !slices.Contains(http10Hops, string(hop)) {
			http10Hops = append(http10Hops, string(hop))
		}
		if l.Target.HTTP10Rejected > 0 && l.AcceptsHTTP10 != "" {
			http10Accepted = append(http10Accepted, l.Pod.String()+": "+l.AcceptsHTTP10)
		}
		if l.Upstream {
			upstreamRead++
			up.Merge(l.Target)
		} else {
			blackhole.Merge(l.Target)
			blackhole.Merge(l.Other)
			srcSummary = sideSummary("source "+l.Pod.Name, l.Target)
			rejections, nc500 = l.Rejections, l.NC500
		}
		rows = append(rows, []string{side, l.Pod.String(), strconv.Itoa(l.Target.Entries), strconv.Itoa(l.Target.Status2xx),
			strconv.Itoa(l.Target.Status5xx), strconv.Itoa(l.Target.Status503), wording.Dash(flagCodeText(l.Target.FlagCodes)),
			wording.Dash(tcpText(l.Target)), wording.Dash(counterText(l.Target.Details))})
		if len(l.Target.Samples) > 0 {
			raw = append(raw, fmt.Sprintf("# %s %s (%s .. %s)", side, l.Pod, timeText(l.Target.First), timeText(l.Target.Last)))
			raw = append(raw, l.Target.Samples...)
		}
	}
	if upstreamRead > 0 {
		upSummary = sideSummary(fmt.Sprintf("upstream %d pod%s", upstreamRead, wording.Plural(upstreamRead, "", "s")), up)
	}
	// Lines the tally set aside (the source's calls elsewhere) were still read.
	lines := all.Lines
	for _, l := range in.Logs {
		lines += l.Other.Lines
	}

	facts := Facts{
		"log_lines":               lines,
		"log_unparsed":            all.Unparsed,
		"log_5xx":                 all.Status5xx,
		"log_503":                 all.Status503,
		"log_2xx":                 all.Status2xx,
		"log_details":             nonNil(all.Details.Keys()),
		"log_transport_failures":  nonNil(all.TransportFailures.Keys()),
		"log_blackhole":           blackhole.BlackHole,
		"log_blackhole_hosts":     nonNil(blackhole.BlackHoleHosts.Keys()),
		"log_connection_refused":  all.ConnectionRefused,
		"log_tunnel_failed_ips":   nonNil(all.TunnelFailed.Keys()),
		"log_upstream_pods":       upstreamRead,
		"log_flag_codes":          nonNil(all.FlagCodes.Keys()),
		"log_tcp":                 all.TCP,
		"log_unexplained":         nonNil(reading.Unexplained()),
		"log_custom_format":       len(in.Formats) > 0,
		"log_xds_rejected":        len(rejections),
		"log_xds_rejected_reason": "",
		"log_http10_rejected":     all.HTTP10Rejected,
		"log_http10_hops":         nonNil(http10Hops),
		"log_http10_accepted_by":  nonNil(http10Accepted),
		"log_nc500":               nc500.Total(),
		"log_nc500_routes":        nonNil(nc500.Keys()),
	}
	if n := len(rejections); n > 0 {
		newest := rejections[n-1]
		facts["log_xds_rejected_reason"] = newest.Type + ": " + newest.Reason
		raw = append(raw, fmt.Sprintf("# the caller's Envoy rejected %s (newest last)", wording.CountNoun(n, "xDS update")))
		for _, r := range rejections[max(0, n-maxRejectionLines):] {
			raw = append(raw, r.Line)
		}
	}
	resets := tunnelResetsOf(all, in)
	facts["log_tunnel_resets"] = all.TunnelReset.Total()
	facts["log_tunnel_reset_ips"] = nonNil(all.TunnelReset.Keys())
	facts["log_tunnel_reset_reused_ips"] = nonNil(resets.reused)
	facts["log_tunnel_reset_times_known"] = resets.known
	facts["log_hbone_idle_timeout"] = resets.idle
	if len(resets.lines) > 0 {
		raw = append(raw, "# resets of pooled HBONE connections (UC to envoy://connect_originate), by pod IP")
		raw = append(raw, resets.lines...)
	}
	for _, f := range accessLogFlags {
		facts[f.fact] = all.Flags.Counts[f.flag]
	}
	for _, f := range accessLogTCPFlags {
		facts[f.fact] = all.TCPFlags.Counts[f.flag]
	}

	var parts []string
	for _, s := range []string{srcSummary, upSummary} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	status := StatusPass
	if u := reading.Summary(); u != "" {
		parts = append([]string{u}, parts...)
	}
	if n := nc500.Total(); n > 0 {
		parts = append([]string{fmt.Sprintf("%s answered 500 NC (cluster_not_found: a Gateway API route to a cluster istiod does not build), route %s", wording.CountNoun(n, "request"), counterText(nc500))}, parts...)
	}
	switch {
	case all.Status503 > 0, all.Flags.Counts["NC"] > 0, nc500.Total() > 0:
		// NC, whatever its code (503 for a VirtualService, 500 under
		// Gateway API semantics), fails every request it answers.
		status = StatusFail
	case len(reading.Unexplained()) > 0:
		// A flag, or an error Envoy answered itself, that no cause of the
		// catalogue produces: the triage says so (an unexplained finding
		// when nothing else is found) instead of ending in no finding.
		status = StatusFail
	case all.HTTP10Rejected > 0:
		// Envoy's own 426 fails every request of an HTTP/1.0 client.
		status = StatusFail
	case all.Status5xx > 0 || blackhole.BlackHole > 0:
		status = StatusWarn
	case all.Entries == 0:
		status = StatusWarn
		parts = append(parts, "no access-log entry for the target in the last 30m (is meshConfig.accessLogFile set?)")
	}
	if n := len(rejections); n > 0 {
		parts = append(parts, fmt.Sprintf("the caller's Envoy logged %s (%s)", wording.CountNoun(n, "rejected xDS update"), facts["log_xds_rejected_reason"]))
		status = worse(status, StatusWarn)
	}
	if all.HTTP10Rejected > 0 {
		parts = append(parts, fmt.Sprintf("%d HTTP/1.0 requests refused with 426 low_version by %s", all.HTTP10Rejected, strings.Join(http10Hops, ", ")))
	}
	if n := all.TunnelReset.Total(); n > 0 {
		parts = append(parts, fmt.Sprintf("%s reset pooled HBONE connections (UC to envoy://connect_originate) to %s, %d of them now a pod younger than the caller's proxy that started before the resets",
			wording.CountNoun(n, "request"), strings.Join(all.TunnelReset.Keys(), ", "), len(resets.reused)))
	}
	if blackhole.BlackHole > 0 {
		parts = append(parts, fmt.Sprintf("%d to BlackHoleCluster (%s)", blackhole.BlackHole, strings.Join(blackhole.BlackHoleHosts.Keys(), ", ")))
	}
	if in.UpstreamSkipped > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d upstream pods not read (no sidecar, or over %d)", in.UpstreamSkipped, in.UpstreamTotal, proxylog.MaxUpstreamLogs))
	}
	if len(in.Problems) > 0 {
		parts = append(parts, strings.Join(in.Problems, "; "))
	}
	return Result{
		Status:  status,
		Summary: strings.Join(parts, "; "),
		Evidence: Evidence{
			Columns: []string{"side", "pod", "entries", "2xx", "5xx", "503", "flags (with code)", "TCP", "response_code_details"},
			Rows:    rows,
			Raw:     strings.Join(append(raw, reading.Raw()...), "\n"),
		},
		Facts:    facts,
		Commands: accessLogCommands(t, in.Selector),
	}
}

// tunnelResets sets each pod IP a pooled HBONE connection was reset to
// against the pod that owns the IP now: one that started after the
// caller's Envoy, before the first reset and within the pool's idle
// timeout of it got an IP the caller may still have held a connection to
// for another pod (istio/ztunnel#1662). Any time not read leaves the
// answer unknown, never "not reused".
type tunnelResets struct {
	reused []string
	known  bool
	idle   string
	lines  []string
}

func tunnelResetsOf(all accesslog.Summary, in accessLogInput) tunnelResets {
	var out tunnelResets
	if in.MeshConfigRead {
		out.idle = in.HBONEIdleTimeout.String()
	}
	ips := all.TunnelReset.Keys()
	if len(ips) == 0 {
		return out
	}
	out.known = in.MeshConfigRead && !in.CallerProxyStarted.IsZero() && in.PodsByIP != nil
	caller := "not read"
	if !in.CallerProxyStarted.IsZero() {
		caller = in.CallerProxyStarted.UTC().Format(time.RFC3339)
	}
	for _, ip := range ips {
		line := fmt.Sprintf("%s: %d reset(s), the caller's istio-proxy started %s", ip, all.TunnelReset.Counts[ip], caller)
		first, err := time.Parse(time.RFC3339Nano, all.TunnelResetFirst[ip])
		if err == nil {
			line += ", first reset " + first.UTC().Format(time.RFC3339Nano)
		}
		pod, owned := in.PodsByIP[ip]
		switch {
		case in.PodsByIP == nil:
			line += "; the Service's pods were not listed"
		case !owned:
			line += "; no running pod of the Service has this IP now"
		case pod.Started.IsZero():
			line += "; " + pod.Pod + " has no start time"
		default:
			line += fmt.Sprintf("; %s has it, started %s", pod.Pod, pod.Started.UTC().Format(time.RFC3339))
		}
		out.lines = append(out.lines, line)
		if err != nil || !owned || pod.Started.IsZero() {
			out.known = false
			continue
		}
		if in.CallerProxyStarted.IsZero() || !pod.Started.After(in.CallerProxyStarted) || first.Before(pod.Started) {
			continue
		}
		// Envoy closes a pooled connection idle longer than the timeout
		// (0: never); the stale one idled at least since the pod started.
		if in.MeshConfigRead && in.HBONEIdleTimeout > 0 && first.Sub(pod.Started) > in.HBONEIdleTimeout {
			continue
		}
		out.reused = append(out.reused, ip)
	}
	return out
}

// proxyStarted is when the pod's istio-proxy container last started (its
// Envoy's connection pools are that old at most); zero when not known.
func proxyStarted(pod *corev1.Pod) time.Time {
	st, ok := mesh.ContainerStatus(pod, mesh.ProxyContainer)
	if !ok || st.State.Running == nil {
		return time.Time{}
	}
	return st.State.Running.StartedAt.Time
}

func sideSummary(who string, s accesslog.Summary) string {
	out := fmt.Sprintf("%s: %d 503, %d 5xx of %d entries", who, s.Status503, s.Status5xx, s.Entries)
	if f := flagCodeText(s.FlagCodes); f != "" {
		out += " (" + f + ")"
	}
	if f := counterText(s.TCPFlags); f != "" {
		out += fmt.Sprintf("; %d TCP (%s)", s.TCP, f)
	}
	if s.ConnectionRefused > 0 {
		out += fmt.Sprintf(", %d connection refused", s.ConnectionRefused)
	}
	return out
}

// tcpText renders a side's TCP entries and their flags, e.g. "4: UF 4, URX 4".
func tcpText(s accesslog.Summary) string {
	if s.TCP == 0 {
		return ""
	}
	if f := counterText(s.TCPFlags); f != "" {
		return fmt.Sprintf("%d: %s", s.TCP, f)
	}
	return strconv.Itoa(s.TCP)
}

// counterText renders the most frequent values of c, e.g. "UF 8, URX 8".
func counterText(c accesslog.Counter) string { return counterTextSep(c, " ") }

// flagCodeText renders flags with their codes, e.g. "UF 503: 8, NR 404: 2".
func flagCodeText(c accesslog.Counter) string { return counterTextSep(c, ": ") }

func counterTextSep(c accesslog.Counter, sep string) string {
	keys := c.Keys()
	var parts []string
	for i, k := range keys {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("+%d more", len(keys)-4))
			break
		}
		parts = append(parts, fmt.Sprintf("%s%s%d", k, sep, c.Counts[k]))
	}
	return strings.Join(parts, ", ")
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.UTC().Format(time.RFC3339)
}

func accessLogCommands(t cluster.Target, selector map[string]string) []string {
	var cmds []string
	if t.Source != nil {
		cmds = append(cmds, fmt.Sprintf("kubectl logs -n %s %s -c %s --since=30m | grep -E ' 503 | NC '", t.Source.Namespace, t.Source.Name, mesh.ProxyContainer))
	}
	if len(selector) > 0 {
		cmds = append(cmds, fmt.Sprintf("kubectl logs -n %s -l %s -c %s --since=30m --prefix | grep 'inbound|' | grep -E ' 503 | NC '", t.Namespace, labels.SelectorFromSet(selector), mesh.ProxyContainer))
	}
	return cmds
}

// maxRejectionLines is how many of the caller's rejected-update lines the
// evidence quotes: they repeat on every push.
const maxRejectionLines = 3
