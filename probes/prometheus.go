package probes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
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
	// Window is the rate() range; DefaultPrometheusWindow when zero.
	Window time.Duration
	// Client sends the queries; a client without keep-alive when nil.
	Client *http.Client
	// Now is the time "now" is queried at; time.Now when nil.
	Now func() time.Time
}

const (
	DefaultPrometheusWindow = 5 * time.Minute
	DefaultPrometheusBefore = 30 * time.Minute
	// maxPrometheusResponse bounds one answer: a vector by code and flags is
	// a few hundred bytes; anything near this is not the query we sent.
	maxPrometheusResponse = 8 << 20
)

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

// RequestRates are the target's istio_requests_total rates at one time,
// summed by code and flags.
type RequestRates struct {
	At       time.Time
	Reporter string
	// ByCodeFlags is "CODE FLAGS" -> requests per second.
	ByCodeFlags map[string]float64
}

// Total is every request per second.
func (r RequestRates) Total() float64 { return r.sum(func(string) bool { return true }) }

// Rate503 is 503s per second.
func (r RequestRates) Rate503() float64 { return r.sum(func(c string) bool { return c == "503" }) }

// Rate5xx is 5xx per second.
func (r RequestRates) Rate5xx() float64 {
	return r.sum(func(c string) bool { return strings.HasPrefix(c, "5") })
}

func (r RequestRates) sum(code func(string) bool) float64 {
	var n float64
	for k, v := range r.ByCodeFlags {
		c, _, _ := strings.Cut(k, " ")
		if code(c) {
			n += v
		}
	}
	return n
}

// By503Flag lists the 503 rate by response flags as FLAGS=rate, sorted.
func (r RequestRates) By503Flag() []string {
	out := []string{}
	for k, v := range r.ByCodeFlags {
		code, flags, _ := strings.Cut(k, " ")
		if code == "503" && v > 0 {
			out = append(out, flags+"="+formatRate(v))
		}
	}
	sort.Strings(out)
	return out
}

// Prometheus queries one Prometheus server's HTTP API.
type Prometheus struct {
	URL    string
	Client *http.Client
}

// RequestRatesQuery is the PromQL for the target's request rates by code and
// flags over window, as the on-call would type it.
func RequestRatesQuery(t cluster.Target, reporter string, window time.Duration) string {
	return fmt.Sprintf(`sum by (response_code, response_flags) (rate(istio_requests_total{reporter=%q,destination_service=%q}[%s]))`,
		reporter, t.Host(), model.Duration(window))
}

// RequestRates evaluates RequestRatesQuery at the time at.
func (p Prometheus) RequestRates(ctx context.Context, t cluster.Target, reporter string, window time.Duration, at time.Time) (RequestRates, error) {
	vec, err := p.Query(ctx, RequestRatesQuery(t, reporter, window), at)
	if err != nil {
		return RequestRates{}, err
	}
	r := RequestRates{At: at, Reporter: reporter, ByCodeFlags: map[string]float64{}}
	for _, s := range vec {
		v := float64(s.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		code := string(s.Metric["response_code"])
		flags := string(s.Metric["response_flags"])
		if flags == "" {
			flags = "-"
		}
		r.ByCodeFlags[code+" "+flags] += v
	}
	return r, nil
}

// PrometheusError is an answer of the Prometheus API that is not a result.
type PrometheusError struct {
	Server string // the URL with any password redacted
	Status int
	Type   string // errorType: bad_data, timeout, ...
	Msg    string
}

func (e *PrometheusError) Error() string {
	switch {
	case e.Type != "":
		return fmt.Sprintf("Prometheus at %s: %s: %s", e.Server, e.Type, e.Msg)
	case e.Msg != "":
		return fmt.Sprintf("Prometheus at %s: HTTP %d: %s", e.Server, e.Status, e.Msg)
	}
	return fmt.Sprintf("Prometheus at %s: HTTP %d", e.Server, e.Status)
}

// apiResponse is the envelope of every /api/v1 answer.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// Query runs an instant query at the time at and returns its vector.
func (p Prometheus) Query(ctx context.Context, promql string, at time.Time) (model.Vector, error) {
	base, err := url.Parse(p.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("--prometheus %q: want an http(s) URL such as http://prometheus.istio-system:9090", redactURL(p.URL))
	}
	server := base.Redacted()
	u := base.JoinPath("api", "v1", "query")
	q := url.Values{}
	q.Set("query", promql)
	q.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	client := p.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: http.ProxyFromEnvironment}}
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &cluster.UnreachableError{What: "Prometheus at " + server, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPrometheusResponse+1))
	if err != nil {
		return nil, &cluster.UnreachableError{What: "Prometheus at " + server, Err: err}
	}
	if len(body) > maxPrometheusResponse {
		return nil, &PrometheusError{Server: server, Status: resp.StatusCode, Msg: fmt.Sprintf("answer larger than %d bytes", maxPrometheusResponse)}
	}
	var env apiResponse
	if err := json.Unmarshal(body, &env); err != nil {
		// A proxy or login page in front of Prometheus answers HTML.
		return nil, &PrometheusError{Server: server, Status: resp.StatusCode, Msg: "not a Prometheus API answer: " + wording.FirstLine(strings.TrimSpace(string(body[:min(len(body), 120)])))}
	}
	if env.Status != "success" {
		return nil, &PrometheusError{Server: server, Status: resp.StatusCode, Type: env.ErrorType, Msg: env.Error}
	}
	var data queryData
	if err := json.Unmarshal(env.Data, &data); err != nil {
		return nil, &PrometheusError{Server: server, Status: resp.StatusCode, Msg: "malformed data: " + err.Error()}
	}
	if data.ResultType != model.ValVector.String() {
		return nil, &PrometheusError{Server: server, Status: resp.StatusCode, Msg: fmt.Sprintf("result type %q, want vector", data.ResultType)}
	}
	var vec model.Vector
	if err := json.Unmarshal(data.Result, &vec); err != nil {
		return nil, &PrometheusError{Server: server, Status: resp.StatusCode, Msg: "malformed vector: " + err.Error()}
	}
	return vec, nil
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

type prometheusInput struct {
	Now, Before RequestRates
	Window      time.Duration
}

func (p PrometheusProbe) Run(ctx context.Context, _ cluster.Cluster, t cluster.Target) Result {
	window := p.Window
	if window <= 0 {
		window = DefaultPrometheusWindow
	}
	before := p.Before
	if before <= 0 {
		before = DefaultPrometheusBefore
	}
	if p.URL == "" {
		return Result{Status: StatusSkipped, Summary: "no --prometheus URL: the sidecar metrics probe gives the current rate", Facts: Facts{},
			Commands: []string{RequestRatesQuery(t, "source", window)}}
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	at := now()
	prom := Prometheus{URL: p.URL, Client: p.Client}
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
	res := Result{Commands: []string{RequestRatesQuery(t, in.Now.Reporter, in.Window)}}
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
		res.Evidence.Rows = append(res.Evidence.Rows, []string{code, flags, formatRate(in.Before.ByCodeFlags[k]), formatRate(in.Now.ByCodeFlags[k])})
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
		res.Summary = fmt.Sprintf("%s 503/s now (of %s req/s, %s window); %s 503/s %s before", formatRate(now503), formatRate(nowTotal),
			model.Duration(in.Window), formatRate(before503), agoText)
	case nowTotal == 0:
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("no requests to %s in the last %s; %s 503/s %s before", t.Host(), model.Duration(in.Window), formatRate(before503), agoText)
	default:
		res.Status = StatusPass
		res.Summary = fmt.Sprintf("0 503/s now (%s req/s, %s window); %s 503/s %s before", formatRate(nowTotal), model.Duration(in.Window),
			formatRate(before503), agoText)
	}
	return res
}

// formatRate keeps small rates readable: 0.0033/s matters when it is a 503.
func formatRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 0.1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}
