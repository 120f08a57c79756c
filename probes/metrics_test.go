package probes

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readMetricsSample(t *testing.T, file string, at time.Time, target cluster.Target) metricsSample {
	t.Helper()
	b, err := os.ReadFile("testdata/metrics/" + file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseMetricsSample(b, target, "source")
	if err != nil {
		t.Fatal(err)
	}
	s.At = at
	return s
}

func TestMetricsRateFromTwoRecordedSamples(t *testing.T) {
	target := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	in := metricsInput{
		Reporter: "source",
		First:    readMetricsSample(t, "before.prom", t0, target),
		Second:   readMetricsSample(t, "after.prom", t0.Add(5*time.Second), target),
	}
	res := evaluateMetrics(target, in)
	if err := CheckFacts(MetricsProbe{}.Meta(), res); err != nil {
		t.Fatal(err)
	}
	// 15 new 503s (UF,URX) and 100 new 200s in 5 s; payments' 503s are not ours.
	if got := res.Facts["metrics_503_rate"]; got != 3.0 {
		t.Errorf("503 rate = %v, want 3", got)
	}
	if got := res.Facts["metrics_request_rate"]; got != 23.0 {
		t.Errorf("request rate = %v, want 23", got)
	}
	if got := res.Facts["metrics_503"]; got != 55 {
		t.Errorf("503 total = %v, want 55", got)
	}
	if flags := res.Facts["metrics_503_by_flag"].([]string); len(flags) != 1 || flags[0] != "UF,URX=15" {
		t.Errorf("by flag = %q", flags)
	}
	if res.Facts["metrics_cx_connect_fail"] != 21 {
		t.Errorf("connect fail = %v", res.Facts["metrics_cx_connect_fail"])
	}
	if res.Status != StatusFail {
		t.Errorf("status = %s", res.Status)
	}

	// After the fix the counters stand still for 503 and move for 200.
	fixed := metricsInput{Reporter: "source", First: in.Second, Second: in.Second}
	fixed.Second.At = fixed.First.At.Add(5 * time.Second)
	fixed.Second.Requests = requestSeries{"200 -": in.Second.Requests["200 -"] + 50, "503 UF,URX": in.Second.Requests["503 UF,URX"]}
	res = evaluateMetrics(target, fixed)
	if res.Status != StatusPass || res.Facts["metrics_503_rate"] != 0.0 {
		t.Errorf("after the fix: %s %v", res.Status, res.Facts)
	}
}

func metricsPod(ns, name string, sidecar bool, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if sidecar {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: mesh.ProxyContainer})
	}
	return p
}

func TestMetricsProbeSamplesThroughEnvoyAdmin(t *testing.T) {
	f := newFakeCluster(t, metricsPod("web", "web-1", true, nil))
	src := cluster.PodRef{Namespace: "web", Name: "web-1"}
	before, _ := os.ReadFile("testdata/metrics/before.prom")
	f.envoy[envoyKey(src, prometheusPath)] = before
	target := cluster.Target{Namespace: "shop", Service: "orders", Source: &src}
	res := Run(context.Background(), MetricsProbe{Interval: time.Millisecond}, f, target)
	if res.Status != StatusWarn || res.Facts["metrics_503_rate"] != 0.0 {
		t.Errorf("identical samples must show no new traffic: %s %q %v", res.Status, res.Summary, res.Facts)
	}

	f.envoy[envoyKey(src, prometheusPath)] = []byte("istio_requests_total{reporter=\"source\" 12\n")
	res = Run(context.Background(), MetricsProbe{Interval: time.Millisecond}, f, target)
	if res.Status != StatusError || len(res.Facts) != 0 {
		t.Errorf("malformed text: %s %q", res.Status, res.Summary)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	f.envoy[envoyKey(src, prometheusPath)] = before
	res = Run(ctx, MetricsProbe{Interval: time.Hour}, f, target)
	if res.Status != StatusError || !strings.Contains(res.Summary, "deadline exceeded") {
		t.Errorf("the probe must give up at its deadline: %s %q", res.Status, res.Summary)
	}
}

// A caller without a sidecar has no metrics of its own: the upstream pod's
// sidecar (reporter="destination") is sampled instead of failing the step.
func TestMetricsSampleTheUpstreamWhenTheCallerHasNoSidecar(t *testing.T) {
	upstream := metricsPod("shop", "orders-1", true, map[string]string{"app": "orders"})
	f := newFakeCluster(t, metricsPod("web", "web-1", false, nil), upstream, mtlsService())
	f.envoy[envoyKey(cluster.PodRef{Namespace: "shop", Name: "orders-1"}, prometheusPath)] = []byte(
		`istio_requests_total{reporter="destination",destination_service="orders.shop.svc.cluster.local",response_code="200",response_flags="-"} 7` + "\n")
	src := cluster.PodRef{Namespace: "web", Name: "web-1"}
	res := Run(context.Background(), MetricsProbe{Interval: time.Millisecond}, f, cluster.Target{Namespace: "shop", Service: "orders", Source: &src})
	if res.Status == StatusError || res.Facts["metrics_reporter"] != "destination" || res.Facts["metrics_requests"] != 7 {
		t.Errorf("got %s %q %v", res.Status, res.Summary, res.Facts)
	}
	if !strings.Contains(res.Evidence.Raw, "the source pod has no sidecar") {
		t.Errorf("evidence does not say why the upstream was sampled: %q", res.Evidence.Raw)
	}
}

// The rate is labelled with how it was measured: whose counters, how far
// apart the samples were, and what the totals cover (the proxy's uptime
// when it reports one; unknown otherwise, never made up).
func TestMetricsSayHowTheRateWasMeasured(t *testing.T) {
	target := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &cluster.PodRef{Namespace: "web", Name: "web-1"}}
	sample := func(text string, at time.Time) metricsSample {
		s, err := parseMetricsSample([]byte(text), target, "source")
		if err != nil {
			t.Fatal(err)
		}
		s.At = at
		return s
	}
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	series := `istio_requests_total{reporter="source",destination_service="orders.shop.svc.cluster.local",response_code="503",response_flags="UF"} %d` + "\n"
	uptime := "# TYPE envoy_server_uptime gauge\nenvoy_server_uptime{} %d\n"

	in := metricsInput{
		Reporter: "source",
		First:    sample(fmt.Sprintf(series, 7200)+fmt.Sprintf(uptime, 3600), t0),
		Second:   sample(fmt.Sprintf(series, 7202)+fmt.Sprintf(uptime, 3601), t0.Add(time.Second)),
	}
	res := evaluateMetrics(target, in)
	if err := CheckFacts(MetricsProbe{}.Meta(), res); err != nil {
		t.Fatal(err)
	}
	if res.Facts["metrics_counters_age_s"] != 3601.0 || res.Facts["metrics_window_s"] != 1.0 {
		t.Errorf("facts = %v", res.Facts)
	}
	for _, want := range []string{"1.0 s window", "source sidecar's counters"} {
		if !strings.Contains(res.Summary, want) {
			t.Errorf("summary %q lacks %q", res.Summary, want)
		}
	}
	for _, want := range []string{"two samples of the source sidecar's counters 1.0 s apart", "7202 of them 503", "since the proxy started 1h0m1s ago", "2.000 503/s on average"} {
		if !strings.Contains(res.Evidence.Raw, want) {
			t.Errorf("evidence %q lacks %q", res.Evidence.Raw, want)
		}
	}

	// A proxy that reports no uptime: the totals' span is unknown, and said so.
	in.First, in.Second = sample(fmt.Sprintf(series, 5), t0), sample(fmt.Sprintf(series, 5), t0.Add(time.Second))
	res = evaluateMetrics(target, in)
	if _, ok := res.Facts["metrics_counters_age_s"]; ok {
		t.Errorf("an age was reported without an uptime: %v", res.Facts)
	}
	if !strings.Contains(res.Summary, "no requests in the 1.0 s window") || !strings.Contains(res.Summary, "reports no uptime") {
		t.Errorf("summary = %q", res.Summary)
	}
}

// Envoy 1.38+ counts max-requests refusals only in
// upstream_rq_active_overflow: the metrics' circuit-breaker facts sum it
// with the pending one, and a proxy that reports neither leaves them unknown.
func TestMetricsRequestOverflow(t *testing.T) {
	tg := cluster.Target{Namespace: "shop", Service: "orders", Port: 8080}
	sample := func(active int) metricsSample {
		text := "# TYPE envoy_cluster_upstream_rq_pending_overflow counter\n" +
			`envoy_cluster_upstream_rq_pending_overflow{cluster_name="outbound|8080||orders.shop.svc.cluster.local"} 3` + "\n" +
			"# TYPE envoy_cluster_upstream_rq_active_overflow counter\n" +
			fmt.Sprintf(`envoy_cluster_upstream_rq_active_overflow{cluster_name="outbound|8080||orders.shop.svc.cluster.local"} %d`, active) + "\n" +
			fmt.Sprintf(`envoy_cluster_upstream_rq_active_overflow{cluster_name="outbound|8080||catalog.shop.svc.cluster.local"} %d`, 1000) + "\n"
		s, err := parseMetricsSample([]byte(text), tg, "source")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first, second := sample(50), sample(57)
	first.At, second.At = time.Unix(0, 0), time.Unix(5, 0)
	r := evaluateMetrics(tg, metricsInput{Reporter: "source", First: first, Second: second})
	if r.Facts["metrics_rq_overflow"] != 60 || r.Facts["metrics_rq_overflow_new"] != 7 {
		t.Errorf("overflow %v, new %v, want 60 and 7", r.Facts["metrics_rq_overflow"], r.Facts["metrics_rq_overflow_new"])
	}
	none, _ := parseMetricsSample([]byte("# TYPE envoy_server_uptime gauge\nenvoy_server_uptime 10\n"), tg, "source")
	r = evaluateMetrics(tg, metricsInput{Reporter: "source", First: none, Second: none})
	if _, ok := r.Facts["metrics_rq_overflow"]; ok {
		t.Errorf("overflow %v from a proxy that reports no overflow counter: unknown is not 0", r.Facts["metrics_rq_overflow"])
	}
}
