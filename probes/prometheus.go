package probes

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/prometheus"
	"github.com/meshtriage/meshtriage/probes/wording"
	"github.com/prometheus/common/model"
)

// PrometheusProbe asks a Prometheus server the question MetricsProbe asks the
// sidecar: the target's request and 503 rates by response code and flags,
// over a window, now and at a time before. It covers every caller (not only
// one sidecar) and survives pod restarts, so it is the better proof when the
// on-call has a Prometheus. Registered always, so the runbook can name its
// facts; without a URL it is skipped.
type PrometheusProbe struct {
	// URL of the Prometheus server (http://prometheus.istio-system:9090); the
	// probe is skipped when empty.
	URL string
	// Before is how far back the baseline is read; DefaultPrometheusBefore
	// when zero.
	Before time.Duration
	// Window is the rate() range; prometheus.DefaultWindow when zero.
	Window time.Duration
	// Client sends the queries; a client without keep-alive when nil.
	Client *http.Client
	// Now is the time "now" is queried at; time.Now when nil.
	Now func() time.Time
}

// DefaultPrometheusBefore is how far back the baseline is read.
const DefaultPrometheusBefore = 30 * time.Minute

func (PrometheusProbe) Meta() Meta {
	return Meta{
		ID:    "prometheus",
		Title: "Prometheus: 503 rate now vs before",
		Reads: []string{"the Prometheus HTTP API (--prometheus URL): /api/v1/query"},
		Facts: []FactSpec{
			{"prometheus_reporter", FactString, "reporter label the rates were read for: source (the callers' sidecars) or destination"},
			{"prometheus_request_rate", FactFloat, "requests per second to the target now, over the window"},
			{"prometheus_503_rate", FactFloat, "503s per second now, over the window"},
			{"prometheus_5xx_rate", FactFloat, "5xx per second now, over the window"},
			{"prometheus_503_by_flag", FactList, "503s per second now by response_flags, as FLAGS=rate"},
			{"prometheus_request_rate_before", FactFloat, "requests per second at the baseline time"},
			{"prometheus_503_rate_before", FactFloat, "503s per second at the baseline time"},
			{"prometheus_window_s", FactFloat, "the rate() window in seconds"},
			{"prometheus_before_s", FactFloat, "how many seconds before now the baseline was read"},
		},
	}
}

type prometheusInput struct {
	Now, Before prometheus.RequestRates
	Window      time.Duration
}

func (p PrometheusProbe) Run(ctx context.Context, _ cluster.Cluster, t cluster.Target) Result {
	window := p.Window
	if window <= 0 {
		window = prometheus.DefaultWindow
	}
	before := p.Before
	if before <= 0 {
		before = DefaultPrometheusBefore
	}
	if p.URL == "" {
		return Result{Status: StatusSkipped, Summary: "no --prometheus URL: the sidecar metrics probe gives the current rate", Facts: Facts{},
			Commands: []string{prometheus.RequestRatesQuery(t, "source", window)}}
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	at := now()
	prom := prometheus.Client{URL: p.URL, Client: p.Client}
	what := "query Prometheus"
	in := prometheusInput{Window: window}
	// The callers' sidecars report what the callers saw, 503s of a proxy
	// that exited first included; a target called only from outside the
	// mesh has destination series only.
	for _, reporter := range []string{"source", "destination"} {
		var err error
		if in.Now, err = prom.RequestRates(ctx, t, reporter, window, at); err != nil {
			return ErrorResult(what, err)
		}
		if in.Before, err = prom.RequestRates(ctx, t, reporter, window, at.Add(-before)); err != nil {
			return ErrorResult(what, err)
		}
		if len(in.Now.ByCodeFlags) > 0 || len(in.Before.ByCodeFlags) > 0 {
			break
		}
	}
	return evaluatePrometheus(t, in)
}

func evaluatePrometheus(t cluster.Target, in prometheusInput) Result {
	res := Result{Commands: []string{prometheus.RequestRatesQuery(t, in.Now.Reporter, in.Window)}}
	keys := map[string]bool{}
	for k := range in.Now.ByCodeFlags {
		keys[k] = true
	}
	for k := range in.Before.ByCodeFlags {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	ago := in.Now.At.Sub(in.Before.At)
	res.Evidence.Columns = []string{"response code", "flags", "req/s " + model.Duration(ago.Round(time.Second)).String() + " ago", "req/s now"}
	for _, k := range sorted {
		code, flags, _ := strings.Cut(k, " ")
		res.Evidence.Rows = append(res.Evidence.Rows, []string{code, flags, wording.Rate(in.Before.ByCodeFlags[k]), wording.Rate(in.Now.ByCodeFlags[k])})
	}
	res.Evidence.Raw = fmt.Sprintf("rate over %s at %s and at %s (reporter=%q)", model.Duration(in.Window),
		in.Before.At.UTC().Format(time.RFC3339), in.Now.At.UTC().Format(time.RFC3339), in.Now.Reporter)
	now503, before503 := in.Now.Rate503(), in.Before.Rate503()
	nowTotal := in.Now.Total()
	res.Facts = Facts{
		"prometheus_reporter":            in.Now.Reporter,
		"prometheus_request_rate":        nowTotal,
		"prometheus_503_rate":            now503,
		"prometheus_5xx_rate":            in.Now.Rate5xx(),
		"prometheus_503_by_flag":         in.Now.By503Flag(),
		"prometheus_request_rate_before": in.Before.Total(),
		"prometheus_503_rate_before":     before503,
		"prometheus_window_s":            in.Window.Seconds(),
		"prometheus_before_s":            ago.Seconds(),
	}
	agoText := model.Duration(ago.Round(time.Second)).String()
	switch {
	case len(sorted) == 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("Prometheus has no istio_requests_total for %s: no traffic, or it does not scrape the sidecars", t.Host())
	case now503 > 0:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("%s 503/s now (of %s req/s, %s window); %s 503/s %s before", wording.Rate(now503), wording.Rate(nowTotal),
			model.Duration(in.Window), wording.Rate(before503), agoText)
	case nowTotal == 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("no requests to %s in the last %s; %s 503/s %s before", t.Host(), model.Duration(in.Window), wording.Rate(before503), agoText)
	default:
		res.Status = StatusPass
		res.Summary = fmt.Sprintf("0 503/s now (%s req/s, %s window); %s 503/s %s before", wording.Rate(nowTotal), model.Duration(in.Window),
			wording.Rate(before503), agoText)
	}
	return res
}
