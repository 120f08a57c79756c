package watch

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podstartup"
)

// Deployments reads a Deployment; the live cluster implements it. A narrow
// interface of its own, since no probe reads Deployments.
type Deployments interface {
	GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
}

// RateMeter measures the target service's 503 rate before the rollout and
// during it.
type RateMeter interface {
	Before(ctx context.Context) (Rate, error)
	// Begin starts measuring the rollout; End stops and returns the rate
	// since Begin.
	Begin(ctx context.Context)
	End(ctx context.Context) (Rate, error)
}

// Config is one watch.
type Config struct {
	Cluster     cluster.Cluster
	Deployments Deployments
	Namespace   string
	Deployment  string
	// Interval between polls (DefaultInterval); Timeout bounds the whole
	// watch (DefaultTimeout).
	Interval time.Duration
	Timeout  time.Duration
	// Rates is nil when no Service's rate is measured.
	Rates RateMeter
	// OnReport receives the report after every poll (the TUI, progress
	// lines on a terminal).
	OnReport func(Report)
	Now      func() time.Time
}

const (
	DefaultInterval = 2 * time.Second
	DefaultTimeout  = 10 * time.Minute
)

// TimeoutError says the rollout did not settle within the timeout.
type TimeoutError struct {
	Timeout time.Duration
	Rollout Rollout
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the rollout did not settle within %s (%s)", e.Timeout, e.Rollout.Message)
}

// Watch follows the rollout until it settles (done, and every new pod
// judged past its restart window), fails, or the timeout passes, and
// returns the final report. The error is set when the watch could not start
// (the Deployment is unreadable) or did not settle (*TimeoutError); a
// regression is in the report, not an error.
func Watch(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	w := &watcher{cfg: cfg}
	first, err := w.observe(ctx)
	if err != nil {
		return Report{Namespace: cfg.Namespace, Deployment: cfg.Deployment, Regressions: []string{}}, err
	}
	meshCfg, err := istioconfig.ReadMeshConfig(ctx, cfg.Cluster)
	if err != nil {
		// The mesh default only decides holdApplicationUntilProxyStarts for
		// pods without the injector's hook; the pods themselves still tell.
		meshCfg = mesh.MeshConfig{}
	}
	w.mesh = meshCfg
	j := NewJudge(cfg.Namespace, cfg.Deployment, first)
	var baseline []podstartup.Start
	for i, p := range j.Old(first) {
		if i == 2 {
			break
		}
		baseline = append(baseline, w.evaluate(ctx, p))
	}
	j.SetBaseline(baseline)

	var before *Rate
	var rateProblems []string
	if cfg.Rates != nil {
		if r, err := cfg.Rates.Before(ctx); err == nil {
			before = &r
		} else {
			rateProblems = append(rateProblems, "503 rate before the rollout unknown: "+oneLine(err))
		}
		cfg.Rates.Begin(ctx)
	}
	j.SetRates(before, nil, rateProblems...)

	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	var watchErr error
	for {
		for _, p := range j.Due() {
			j.SetStartup(p.UID, w.evaluate(ctx, p))
		}
		if cfg.OnReport != nil {
			cfg.OnReport(j.Report())
		}
		if j.Settled() {
			break
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				watchErr = &TimeoutError{Timeout: cfg.Timeout, Rollout: j.Report().Rollout}
			} else {
				watchErr = ctx.Err()
			}
			break
		}
		o, err := w.observe(ctx)
		if err != nil {
			// One failed poll (an API server hiccup) is not the end of a
			// rollout; the timeout bounds a lasting one.
			continue
		}
		j.Observe(o)
	}

	if cfg.Rates != nil {
		// The rollout's context may be over; the last rate read gets its own.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		during, err := cfg.Rates.End(rctx)
		rcancel()
		if err == nil {
			j.SetRates(before, &during, rateProblems...)
		} else {
			j.SetRates(before, nil, append(rateProblems, "503 rate during the rollout unknown: "+oneLine(err))...)
		}
	}
	rep := j.Report()
	if cfg.OnReport != nil {
		cfg.OnReport(rep)
	}
	return rep, watchErr
}

type watcher struct {
	cfg  Config
	mesh mesh.MeshConfig
}

// observe reads the Deployment and the pods of its selector: a get and a
// list, since the read-only role grants no watch.
func (w *watcher) observe(ctx context.Context) (Observation, error) {
	o := Observation{At: w.cfg.Now()}
	d, err := w.cfg.Deployments.GetDeployment(ctx, w.cfg.Namespace, w.cfg.Deployment)
	if err != nil {
		return o, errors.New(cluster.AccessProblem(fmt.Sprintf("get deployment %s/%s", w.cfg.Namespace, w.cfg.Deployment), err))
	}
	o.Deployment = d
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		return o, fmt.Errorf("deployment %s/%s has no matchLabels in its selector: meshtriage lists pods by labels", w.cfg.Namespace, w.cfg.Deployment)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return o, fmt.Errorf("deployment %s/%s selector: %w", w.cfg.Namespace, w.cfg.Deployment, err)
	}
	pods, err := w.cfg.Cluster.ListPods(ctx, w.cfg.Namespace, d.Spec.Selector.MatchLabels)
	if err != nil {
		return o, errors.New(cluster.AccessProblem("list pods in "+w.cfg.Namespace, err))
	}
	for _, p := range pods {
		// matchExpressions narrow what matchLabels listed.
		if sel.Matches(labels.Set(p.Labels)) {
			o.Pods = append(o.Pods, p)
		}
	}
	sortPods(o.Pods)
	return o, nil
}

// evaluate reads a pod's logs and judges its start as the startup-order
// probe would.
func (w *watcher) evaluate(ctx context.Context, p corev1.Pod) podstartup.Start {
	ref := cluster.PodRef{Namespace: p.Namespace, Name: p.Name}
	logs := podstartup.Logs{App: map[string][]byte{}, AppPrevious: map[string][]byte{}}
	c := w.cfg.Cluster
	if mesh.PodSidecar(&p) != mesh.SidecarNone {
		if b, err := c.Logs(ctx, ref, cluster.LogOptions{Container: mesh.ProxyContainer, LimitBytes: 1 << 20}); err == nil {
			logs.Proxy = b
		}
	}
	for _, app := range mesh.AppContainers(&p) {
		if b, err := c.Logs(ctx, ref, cluster.LogOptions{Container: app.Name, LimitBytes: 256 << 10}); err == nil {
			logs.App[app.Name] = b
		}
		if st, ok := mesh.ContainerStatus(&p, app.Name); ok && st.RestartCount > 0 {
			if b, err := c.Logs(ctx, ref, cluster.LogOptions{Container: app.Name, Previous: true, LimitBytes: 256 << 10}); err == nil {
				logs.AppPrevious[app.Name] = b
			}
		}
	}
	return podstartup.Of(&p, logs, w.mesh)
}

func oneLine(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
