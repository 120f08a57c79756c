package watch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/prometheus"
)

// SidecarMeter measures the rate with the metrics probe: one run (two
// samples of a sidecar's counters) before the rollout, and back-to-back runs
// during it, summed. With a source pod its sidecar reports what the callers
// see, 503s of an upstream proxy that exited first included; without one an
// upstream pod's sidecar reports what it received.
type SidecarMeter struct {
	Cluster cluster.Cluster
	Target  cluster.Target
	// Interval is each run's sampling window (probes.DefaultMetricsInterval).
	Interval time.Duration

	mu       sync.Mutex
	stop     chan struct{}
	done     chan struct{}
	sum503   float64
	sumReq   float64
	window   float64
	byFlag   map[string]float64
	runs     int
	failures int
	lastErr  error
	last     string // whose sidecar the last sample came from
}

func (m *SidecarMeter) probe() probes.MetricsProbe {
	return probes.MetricsProbe{Interval: m.Interval}
}

// source says whose sidecar the metrics probe sampled: it falls back to an
// upstream pod when the caller has no sidecar.
func (m *SidecarMeter) source(res probes.Result) string {
	if reporter, _ := res.Facts["metrics_reporter"].(string); reporter == "source" && m.Target.Source != nil {
		return "source sidecar " + m.Target.Source.String()
	}
	return "destination sidecar of a " + m.Target.Service + " pod"
}

func (m *SidecarMeter) Before(ctx context.Context) (Rate, error) {
	res := probes.Run(ctx, m.probe(), m.Cluster, m.Target)
	if res.Status == probes.StatusError || res.Status == probes.StatusSkipped {
		return Rate{}, errors.New(res.Summary)
	}
	window, _ := res.Facts["metrics_window_s"].(float64)
	r := Rate{Source: m.source(res), Window: time.Duration(window * float64(time.Second))}
	r.Requests, _ = res.Facts["metrics_request_rate"].(float64)
	r.Errors503, _ = res.Facts["metrics_503_rate"].(float64)
	r.ByFlag, _ = res.Facts["metrics_503_by_flag"].([]string)
	return r, nil
}

func (m *SidecarMeter) Begin(ctx context.Context) {
	m.mu.Lock()
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	m.byFlag = map[string]float64{}
	stop, done := m.stop, m.done
	m.mu.Unlock()
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			m.add(probes.Run(ctx, m.probe(), m.Cluster, m.Target))
		}
	}()
}

func (m *SidecarMeter) add(res probes.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs++
	if res.Status == probes.StatusError || res.Status == probes.StatusSkipped {
		m.failures++
		m.lastErr = errors.New(res.Summary)
		return
	}
	m.last = m.source(res)
	window, _ := res.Facts["metrics_window_s"].(float64)
	rate503, _ := res.Facts["metrics_503_rate"].(float64)
	rate, _ := res.Facts["metrics_request_rate"].(float64)
	m.window += window
	m.sum503 += rate503 * window
	m.sumReq += rate * window
	flags, _ := res.Facts["metrics_503_by_flag"].([]string)
	for _, f := range flags {
		var name string
		var n int
		if i := strings.LastIndexByte(f, '='); i > 0 {
			name = f[:i]
			_, _ = fmt.Sscan(f[i+1:], &n)
		}
		m.byFlag[name] += float64(n)
	}
}

// End lets the run in flight finish, so the rollout's last seconds count.
func (m *SidecarMeter) End(ctx context.Context) (Rate, error) {
	m.mu.Lock()
	stop, done := m.stop, m.done
	m.mu.Unlock()
	if stop == nil {
		return Rate{}, errors.New("the rate was not measured: Begin was not called")
	}
	close(stop)
	select {
	case <-done:
	case <-ctx.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.window == 0 {
		if m.lastErr != nil {
			return Rate{}, m.lastErr
		}
		return Rate{}, errors.New("no sample completed during the rollout")
	}
	r := Rate{
		Source:    fmt.Sprintf("%s, %d samples", m.last, m.runs-m.failures),
		Requests:  m.sumReq / m.window,
		Errors503: m.sum503 / m.window,
		Window:    time.Duration(m.window * float64(time.Second)).Round(time.Second),
		ByFlag:    []string{},
	}
	for f, n := range m.byFlag {
		if n > 0 {
			r.ByFlag = append(r.ByFlag, fmt.Sprintf("%s=%d", f, int(n)))
		}
	}
	sort.Strings(r.ByFlag)
	return r, nil
}

// PrometheusMeter asks Prometheus: the rate over Window before the rollout,
// and the rate over the rollout's own duration at its end.
type PrometheusMeter struct {
	Prom   prometheus.Client
	Target cluster.Target
	// Window of the baseline (prometheus.DefaultWindow).
	Window time.Duration
	Now    func() time.Time

	reporter string
	begun    time.Time
}

// minRolloutWindow keeps rate() meaningful for a short rollout: it needs at
// least two scrapes in its range.
const minRolloutWindow = time.Minute

func (m *PrometheusMeter) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *PrometheusMeter) Before(ctx context.Context) (Rate, error) {
	window := m.Window
	if window <= 0 {
		window = prometheus.DefaultWindow
	}
	at := m.now()
	var rr prometheus.RequestRates
	for _, reporter := range []string{"source", "destination"} {
		var err error
		if rr, err = m.Prom.RequestRates(ctx, m.Target, reporter, window, at); err != nil {
			return Rate{}, err
		}
		m.reporter = reporter
		if len(rr.ByCodeFlags) > 0 {
			break
		}
	}
	return promRate(rr, window), nil
}

func (m *PrometheusMeter) Begin(context.Context) { m.begun = m.now() }

func (m *PrometheusMeter) End(ctx context.Context) (Rate, error) {
	if m.begun.IsZero() {
		return Rate{}, errors.New("the rate was not measured: Begin was not called")
	}
	if m.reporter == "" {
		m.reporter = "source"
	}
	at := m.now()
	window := max(at.Sub(m.begun).Round(time.Second), minRolloutWindow)
	rr, err := m.Prom.RequestRates(ctx, m.Target, m.reporter, window, at)
	if err != nil {
		return Rate{}, err
	}
	return promRate(rr, window), nil
}

func promRate(rr prometheus.RequestRates, window time.Duration) Rate {
	return Rate{
		Source:    fmt.Sprintf("Prometheus, reporter=%s", rr.Reporter),
		Requests:  rr.Total(),
		Errors503: rr.Rate503(),
		Window:    window,
		ByFlag:    rr.By503Flag(),
	}
}
