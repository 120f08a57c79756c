package probes

import (
	"context"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePrometheus answers /api/v1/query from recorded files chosen by the
// query's time and reporter, and records the queries it was asked.
type fakePrometheus struct {
	t       *testing.T
	now     time.Time
	answers map[string]string // "now|source", "before|destination", ... -> testdata file
	status  int
	mu      sync.Mutex
	queries []string
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/prom/api/v1/query" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query().Get("query")
	ts, err := strconv.ParseFloat(r.URL.Query().Get("time"), 64)
	if err != nil {
		http.Error(w, `{"status":"error","errorType":"bad_data","error":"cannot parse time"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	when := "before"
	if time.Unix(int64(ts), 0).Equal(f.now.Truncate(time.Second)) {
		when = "now"
	}
	reporter := "source"
	if strings.Contains(q, `reporter="destination"`) {
		reporter = "destination"
	}
	file, ok := f.answers[when+"|"+reporter]
	if !ok {
		file = "empty.json"
	}
	b, err := os.ReadFile("testdata/prometheus/" + file)
	if err != nil {
		f.t.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	if f.status != 0 {
		w.WriteHeader(f.status)
	}
	_, _ = w.Write(b)
}

var promTarget = cluster.Target{Namespace: "shop", Service: "orders", Port: 8080}

func promProbe(url string, now time.Time) PrometheusProbe {
	return PrometheusProbe{URL: url, Now: func() time.Time { return now }}
}

func TestPrometheusComparesNowWithBefore(t *testing.T) {
	now := time.Date(2025, 12, 2, 3, 30, 0, 0, time.UTC)
	fp := &fakePrometheus{t: t, now: now, answers: map[string]string{"now|source": "fixed.json", "before|source": "during.json"}}
	srv := httptest.NewServer(fp)
	defer srv.Close()

	res := Run(context.Background(), promProbe(srv.URL+"/prom", now), nil, promTarget)
	if err := CheckFacts(PrometheusProbe{}.Meta(), res); err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusPass {
		t.Errorf("after the fix: %s %q", res.Status, res.Summary)
	}
	if res.Facts["prometheus_503_rate"] != 0.0 || res.Facts["prometheus_request_rate"] != 43.8 {
		t.Errorf("now: %v", res.Facts)
	}
	if got := res.Facts["prometheus_503_rate_before"].(float64); got < 2.566 || got > 2.567 {
		t.Errorf("503 rate before = %v, want 2.5 + 0.0667", got)
	}
	if res.Facts["prometheus_before_s"] != 1800.0 || res.Facts["prometheus_window_s"] != 300.0 {
		t.Errorf("window/before: %v", res.Facts)
	}
	if !strings.Contains(res.Summary, "0 503/s now") || !strings.Contains(res.Summary, "2.57 503/s 30m before") {
		t.Errorf("summary %q", res.Summary)
	}
	want := `sum by (response_code, response_flags) (rate(istio_requests_total{reporter="source",destination_service="orders.shop.svc.cluster.local"}[5m]))`
	if len(fp.queries) != 2 || fp.queries[0] != want {
		t.Errorf("queries = %q, want twice %q", fp.queries, want)
	}
	if res.Commands[0] != want {
		t.Errorf("command = %q", res.Commands[0])
	}

	// Still burning: 503s now, split by flag.
	fp.answers = map[string]string{"now|source": "during.json", "before|source": "fixed.json"}
	res = Run(context.Background(), promProbe(srv.URL+"/prom", now), nil, promTarget)
	if res.Status != StatusFail {
		t.Errorf("during the incident: %s %q", res.Status, res.Summary)
	}
	flags := res.Facts["prometheus_503_by_flag"].([]string)
	if strings.Join(flags, " ") != "UC=0.067 UF,URX=2.50" {
		t.Errorf("by flag = %q", flags)
	}
	if got := res.Facts["prometheus_5xx_rate"].(float64); got < 2.566 || got > 2.567 {
		t.Errorf("5xx rate = %v (code 0 is not a 5xx)", got)
	}
}

func TestPrometheusFallsBackToTheDestinationReporter(t *testing.T) {
	now := time.Date(2025, 12, 2, 3, 30, 0, 0, time.UTC)
	fp := &fakePrometheus{t: t, now: now, answers: map[string]string{"now|destination": "fixed.json"}}
	srv := httptest.NewServer(fp)
	defer srv.Close()
	res := Run(context.Background(), promProbe(srv.URL+"/prom/", now), nil, promTarget)
	if res.Status != StatusPass || res.Facts["prometheus_reporter"] != "destination" {
		t.Errorf("%s %q %v", res.Status, res.Summary, res.Facts)
	}
	if len(fp.queries) != 4 {
		t.Errorf("queries: %q", fp.queries)
	}

	fp.answers = nil
	res = Run(context.Background(), promProbe(srv.URL+"/prom", now), nil, promTarget)
	if res.Status != StatusWarn || !strings.Contains(res.Summary, "no istio_requests_total") {
		t.Errorf("no series at all: %s %q", res.Status, res.Summary)
	}
}

func TestPrometheusBadAnswersAreOneLine(t *testing.T) {
	now := time.Date(2025, 12, 2, 3, 30, 0, 0, time.UTC)
	cases := []struct {
		name    string
		handler http.Handler
		want    string
	}{
		{"api error", &fakePrometheus{t: t, now: now, status: http.StatusBadRequest, answers: map[string]string{"now|source": "bad_data.json"}}, "bad_data: invalid parameter"},
		{"matrix", &fakePrometheus{t: t, now: now, answers: map[string]string{"now|source": "matrix.json"}}, `result type "matrix", want vector`},
		{"login page", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body>Sign in</body></html>"))
		}), "not a Prometheus API answer: <html>"},
		{"wrong path", http.NotFoundHandler(), "HTTP 404"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			res := Run(context.Background(), promProbe(srv.URL+"/prom", now), nil, promTarget)
			if res.Status != StatusError || !strings.Contains(res.Summary, c.want) || strings.Contains(res.Summary, "\n") {
				t.Errorf("%s %q, want error containing %q", res.Status, res.Summary, c.want)
			}
			if len(res.Facts) != 0 {
				t.Errorf("facts on error: %v", res.Facts)
			}
		})
	}
}

func TestPrometheusUnsetUnreachableOrSlow(t *testing.T) {
	res := Run(context.Background(), PrometheusProbe{}, nil, promTarget)
	if res.Status != StatusSkipped || !strings.Contains(res.Summary, "no --prometheus URL") {
		t.Errorf("unset: %s %q", res.Status, res.Summary)
	}

	res = Run(context.Background(), PrometheusProbe{URL: "prometheus:9090"}, nil, promTarget)
	if res.Status != StatusError || !strings.Contains(res.Summary, "want an http(s) URL") {
		t.Errorf("no scheme: %s %q", res.Status, res.Summary)
	}

	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	res = Run(context.Background(), PrometheusProbe{URL: "http://admin:hunter2@" + srv.Listener.Addr().String()}, nil, promTarget)
	if res.Status != StatusError || !strings.Contains(res.Summary, "unreachable") || strings.Contains(res.Summary, "hunter2") {
		t.Errorf("closed server: %s %q", res.Status, res.Summary)
	}

	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	res = Run(ctx, PrometheusProbe{URL: slow.URL}, nil, promTarget)
	if res.Status != StatusError || time.Since(start) > 5*time.Second {
		t.Errorf("slow server: %s %q after %s", res.Status, res.Summary, time.Since(start))
	}
}
