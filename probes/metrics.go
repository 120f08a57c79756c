package probes

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
)

// MetricsProbe reads the sidecar's Prometheus stats twice, a few seconds
// apart, and reports istio_requests_total for the target by response code and
// flags: the difference is the current 503 rate, which is what proves a fix.
type MetricsProbe struct {
	// Interval between the two samples; DefaultMetricsInterval when zero,
	// and negative to not sample at all (a quick triage that accepts the
	// metrics rules as undecided).
	Interval time.Duration
}

// DefaultMetricsInterval is long enough for a busy service to show a rate
// and short enough for an on-call to wait for.
const DefaultMetricsInterval = 5 * time.Second

// ShortMetricsWindow is check's default window. The probe runs alongside
// the others, so the window overlaps them instead of adding to them: on a
// nearby cluster check answers in about this long, on a remote one the
// port-forwards take most of it anyway. A rate over one second is coarse
// for a quiet service; the result says how long the window was, and what
// the counters say since the proxy started.
const ShortMetricsWindow = time.Second

// prometheusPath is Envoy's admin path behind the sidecar's :15090 listener.
const prometheusPath = "/stats/prometheus"

func (MetricsProbe) Meta() Meta {
	return Meta{
		ID:    "metrics",
		Title: "Sidecar metrics: current 503 rate",
		Reads: []string{"pods/portforward (Envoy admin /stats/prometheus)", "pods/exec (pilot-agent fallback)"},
		Facts: []FactSpec{
			{"metrics_reporter", FactString, "whose sidecar was sampled: source (the caller) or destination (an upstream pod)"},
			{"metrics_requests", FactInt, "istio_requests_total for the target at the second sample"},
			{"metrics_503", FactInt, "of which response_code 503"},
			{"metrics_request_rate", FactFloat, "requests per second between the two samples"},
			{"metrics_503_rate", FactFloat, "503s per second between the two samples"},
			{"metrics_5xx_rate", FactFloat, "5xx per second between the two samples"},
			{"metrics_window_s", FactFloat, "seconds between the two samples"},
			{"metrics_503_by_flag", FactList, "new 503s in the window by response_flags, as FLAGS=count"},
			{"metrics_cx_connect_fail", FactInt, "envoy_cluster_upstream_cx_connect_fail over the target clusters"},
			{"metrics_rq_overflow", FactInt, "requests the connection pool limits refused, since the proxy started: envoy_cluster_upstream_rq_pending_overflow + envoy_cluster_upstream_rq_active_overflow (Envoy 1.38+ counts max-requests refusals only there) over the target clusters; unknown when the proxy reports neither"},
			{"metrics_rq_overflow_new", FactInt, "of those, refused between the two samples"},
			{"metrics_counters_age_s", FactFloat, "seconds the sampled proxy's counters have been counting (its uptime), when it reports one: the totals are since then"},
		},
	}
}

// requestSeries is istio_requests_total for the target, summed by code/flags.
type requestSeries map[string]float64 // "code flags" -> count

type metricsSample struct {
	At          time.Time
	Requests    requestSeries
	ConnectFail float64
	// Overflow sums the request overflow counters of the target clusters;
	// OverflowReported: the proxy reports one of them at all.
	Overflow         float64
	OverflowReported bool
	// Uptime is envoy_server_uptime, how long the counters have been
	// counting, in seconds; 0 when the proxy does not report it.
	Uptime float64
}

type metricsInput struct {
	Reporter      string
	First, Second metricsSample
	// SourceWithoutSidecar: the named caller has no sidecar, so an upstream
	// pod was sampled instead.
	SourceWithoutSidecar bool
	// Sampled is the pod whose sidecar's counters were read (or tried).
	Sampled *cluster.PodRef
}

func (p MetricsProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	if p.Interval < 0 {
		return Result{Status: StatusSkipped, Summary: "503 rate not sampled (metrics window 0)", Commands: metricsCommands(t, "source", nil)}
	}
	in, what, err := p.fetch(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = metricsCommands(t, in.Reporter, in.Sampled)
		return r
	}
	return evaluateMetrics(t, in)
}

func (p MetricsProbe) fetch(ctx context.Context, c cluster.Cluster, t cluster.Target) (metricsInput, string, error) {
	in := metricsInput{Reporter: "source"}
	pod := t.Source
	if pod != nil {
		src, err := c.GetPod(ctx, pod.Namespace, pod.Name)
		if err != nil {
			return in, "get source pod " + pod.String(), err
		}
		if mesh.PodSidecar(src) == mesh.SidecarNone {
			// A caller without a sidecar reports nothing; the upstream's
			// sidecar still counts what reaches it.
			in.SourceWithoutSidecar = true
			pod = nil
		}
	}
	if pod == nil {
		// Without a caller, an upstream pod's sidecar still counts what it
		// receives (reporter="destination").
		in.Reporter = "destination"
		svc, err := c.GetService(ctx, t.Namespace, t.Service)
		if err != nil {
			return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
		}
		pods, err := c.ListPods(ctx, t.Namespace, svc.Spec.Selector)
		if err != nil {
			return in, "list pods in " + t.Namespace, err
		}
		for i := range pods {
			if mesh.PodSidecar(&pods[i]) != mesh.SidecarNone && pods[i].Status.Phase == "Running" {
				pod = &cluster.PodRef{Namespace: pods[i].Namespace, Name: pods[i].Name}
				break
			}
		}
		if pod == nil {
			return in, "find a meshed pod of " + t.Service, fmt.Errorf("no running pod with a sidecar: %w", cluster.ErrNotFound)
		}
	}
	in.Sampled = pod
	interval := p.Interval
	if interval == 0 {
		interval = DefaultMetricsInterval
	}
	// The counters are read twice to make a rate: a memoising Cluster would
	// answer the second read with the first.
	counters := cluster.Uncached(c)
	sample := func() (metricsSample, error) {
		b, err := counters.EnvoyAdmin(ctx, *pod, prometheusPath)
		if err != nil {
			return metricsSample{}, err
		}
		s, err := parseMetricsSample(b, t, in.Reporter)
		s.At = time.Now()
		return s, err
	}
	what := "read " + prometheusPath + " of " + pod.String()
	var err error
	if in.First, err = sample(); err != nil {
		return in, what, err
	}
	select {
	case <-ctx.Done():
		return in, what, ctx.Err()
	case <-time.After(interval):
	}
	if in.Second, err = sample(); err != nil {
		return in, what, err
	}
	return in, "", nil
}

// parseMetricsSample extracts the target's series from Prometheus text.
func parseMetricsSample(text []byte, t cluster.Target, reporter string) (metricsSample, error) {
	metrics, err := envoy.ParsePrometheus(text)
	if err != nil {
		return metricsSample{}, err
	}
	s := metricsSample{Requests: requestSeries{}}
	host := t.Host()
	for _, m := range metrics["istio_requests_total"] {
		l := m.Labels
		if l["reporter"] != reporter || l["destination_service"] != host {
			continue
		}
		if t.Port != 0 && l["destination_port"] != "" && l["destination_port"] != fmt.Sprint(t.Port) && reporter == "source" {
			// destination_port is the container port on the inbound
			// side; only the outbound side names the service port.
			continue
		}
		s.Requests[l["response_code"]+" "+l["response_flags"]] += m.Value
	}
	s.ConnectFail = metrics.Sum("envoy_cluster_upstream_cx_connect_fail", func(l map[string]string) bool {
		return envoy.IsTargetCluster(l["cluster_name"], t.Host(), t.Port)
	})
	s.Uptime = metrics.Sum("envoy_server_uptime", func(map[string]string) bool { return true })
	for _, family := range []string{"envoy_cluster_upstream_rq_pending_overflow", "envoy_cluster_upstream_rq_active_overflow"} {
		if _, ok := metrics[family]; ok {
			s.OverflowReported = true
		}
		s.Overflow += metrics.Sum(family, func(l map[string]string) bool { return envoy.IsTargetCluster(l["cluster_name"], t.Host(), t.Port) })
	}
	return s, nil
}

func evaluateMetrics(t cluster.Target, in metricsInput) Result {
	res := Result{Commands: metricsCommands(t, in.Reporter, in.Sampled)}
	window := in.Second.At.Sub(in.First.At).Seconds()
	if window <= 0 {
		window = DefaultMetricsInterval.Seconds()
	}
	var total, total503, delta, delta503, delta5xx float64
	byFlag := map[string]float64{}
	keys := make([]string, 0, len(in.Second.Requests))
	for k := range in.Second.Requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	res.Evidence.Columns = []string{"response code", "flags", "total", "in window"}
	for _, k := range keys {
		now := in.Second.Requests[k]
		d := now - in.First.Requests[k]
		if d < 0 { // the proxy restarted between samples: its counters reset
			d = now
		}
		code, flags, _ := strings.Cut(k, " ")
		total += now
		delta += d
		if strings.HasPrefix(code, "5") {
			delta5xx += d
		}
		if code == "503" {
			total503 += now
			delta503 += d
			if d > 0 {
				byFlag[flags] += d
			}
		}
		res.Evidence.Rows = append(res.Evidence.Rows, []string{code, flags, fmt.Sprint(now), fmt.Sprint(d)})
	}
	var flagList []string
	for f, n := range byFlag {
		flagList = append(flagList, fmt.Sprintf("%s=%d", f, int(n)))
	}
	sort.Strings(flagList)
	res.Facts = Facts{
		"metrics_reporter":        in.Reporter,
		"metrics_requests":        int(total),
		"metrics_503":             int(total503),
		"metrics_request_rate":    delta / window,
		"metrics_503_rate":        delta503 / window,
		"metrics_5xx_rate":        delta5xx / window,
		"metrics_window_s":        window,
		"metrics_503_by_flag":     nonNil(flagList),
		"metrics_cx_connect_fail": int(in.Second.ConnectFail),
	}
	if age := in.Second.Uptime; age > 0 {
		res.Facts["metrics_counters_age_s"] = age
	}
	if in.Second.OverflowReported {
		res.Facts["metrics_rq_overflow"] = int(in.Second.Overflow)
		res.Facts["metrics_rq_overflow_new"] = max(0, int(in.Second.Overflow-in.First.Overflow))
	}
	res.Evidence.Raw = metricsMethod(t, in, window, total, total503)
	if in.SourceWithoutSidecar {
		res.Evidence.Raw += "\nthe source pod has no sidecar and reports no metrics: an upstream pod's sidecar was sampled (reporter=destination)"
	}
	switch {
	case len(keys) == 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("no istio_requests_total for %s from the %s sidecar: no traffic, or stats not enabled", t.Host(), in.Reporter)
	case delta503 > 0:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("%.2f 503/s now (%d in a %s window of %d requests, %s sidecar's counters)", delta503/window, int(delta503), seconds(window), int(delta), in.Reporter)
	case delta == 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("no requests in the %s window (%s sidecar's counters); %d 503s %s", seconds(window), in.Reporter, int(total503), countedSince(in.Second.Uptime))
	default:
		res.Status = StatusPass
		res.Summary = fmt.Sprintf("0 503/s over a %s window (%.1f req/s, %s sidecar's counters)", seconds(window), delta/window, in.Reporter)
	}
	return res
}

// metricsMethod says how the rate was measured, for the evidence: which
// counters, how far apart, and what the totals cover.
func metricsMethod(t cluster.Target, in metricsInput, window, total, total503 float64) string {
	how := fmt.Sprintf("istio_requests_total{reporter=%q,destination_service=%q}: two samples of the %s sidecar's counters %s apart, taken while the other checks ran; the rate is the difference over the window",
		in.Reporter, t.Host(), in.Reporter, seconds(window))
	how += fmt.Sprintf("\ntotals: %d requests, %d of them 503, %s", int(total), int(total503), countedSince(in.Second.Uptime))
	if age := in.Second.Uptime; age > 0 {
		how += fmt.Sprintf(" (%.3f 503/s on average)", total503/age)
	}
	return how
}

// countedSince says what a counter total covers.
func countedSince(uptime float64) string {
	if uptime <= 0 {
		return "since the proxy started (it reports no uptime)"
	}
	return "since the proxy started " + (time.Duration(uptime) * time.Second).String() + " ago"
}

// seconds formats a window: "1.0 s", "5.0 s".
func seconds(s float64) string { return fmt.Sprintf("%.1f s", s) }

// metricsCommands read the counters by hand: from the sidecar the probe
// sampled (the caller's, else an upstream pod's), and in Prometheus. No
// pod sampled (none with a sidecar, or none read), no command goes into
// one: the summary says why.
func metricsCommands(t cluster.Target, reporter string, sampled *cluster.PodRef) []string {
	var cmds []string
	if sampled != nil {
		cmds = append(cmds, fmt.Sprintf("kubectl exec -n %s %s -c %s -- pilot-agent request GET stats/prometheus | grep 'istio_requests_total{.*destination_service=\"%s\"'", sampled.Namespace, sampled.Name, mesh.ProxyContainer, t.Host()))
	}
	return append(cmds, fmt.Sprintf(`sum by (response_code, response_flags) (rate(istio_requests_total{reporter=%q,destination_service=%q}[5m]))`, reporter, t.Host()))
}
