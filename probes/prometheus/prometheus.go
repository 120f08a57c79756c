// Package prometheus asks a Prometheus server's HTTP API for the target's
// istio_requests_total rates: the Prometheus probe's question (503s now and
// before) and the caller search's (who calls the target, by source
// workload).
package prometheus

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

	"github.com/prometheus/common/model"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// DefaultWindow is the rate() range of the queries when none is given.
const DefaultWindow = 5 * time.Minute

// maxResponse bounds one answer: a vector by code and flags is a few
// hundred bytes; anything near this is not the query we sent.
const maxResponse = 8 << 20

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
			out = append(out, flags+"="+wording.Rate(v))
		}
	}
	sort.Strings(out)
	return out
}

// Client queries one Prometheus server's HTTP API.
type Client struct {
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
func (p Client) RequestRates(ctx context.Context, t cluster.Target, reporter string, window time.Duration, at time.Time) (RequestRates, error) {
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

// Error is an answer of the Prometheus API that is not a result.
type Error struct {
	Server string // the URL with any password redacted
	Status int
	Type   string // errorType: bad_data, timeout, ...
	Msg    string
}

func (e *Error) Error() string {
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
func (p Client) Query(ctx context.Context, promql string, at time.Time) (model.Vector, error) {
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, &cluster.UnreachableError{What: "Prometheus at " + server, Err: err}
	}
	if len(body) > maxResponse {
		return nil, &Error{Server: server, Status: resp.StatusCode, Msg: fmt.Sprintf("answer larger than %d bytes", maxResponse)}
	}
	var env apiResponse
	if err := json.Unmarshal(body, &env); err != nil {
		// A proxy or login page in front of Prometheus answers HTML.
		return nil, &Error{Server: server, Status: resp.StatusCode, Msg: "not a Prometheus API answer: " + wording.FirstLine(strings.TrimSpace(string(body[:min(len(body), 120)])))}
	}
	if env.Status != "success" {
		return nil, &Error{Server: server, Status: resp.StatusCode, Type: env.ErrorType, Msg: env.Error}
	}
	var data queryData
	if err := json.Unmarshal(env.Data, &data); err != nil {
		return nil, &Error{Server: server, Status: resp.StatusCode, Msg: "malformed data: " + err.Error()}
	}
	if data.ResultType != model.ValVector.String() {
		return nil, &Error{Server: server, Status: resp.StatusCode, Msg: fmt.Sprintf("result type %q, want vector", data.ResultType)}
	}
	var vec model.Vector
	if err := json.Unmarshal(data.Result, &vec); err != nil {
		return nil, &Error{Server: server, Status: resp.StatusCode, Msg: "malformed vector: " + err.Error()}
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
