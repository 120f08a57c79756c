// Package watch follows a Deployment's rollout and judges every new pod the
// way the startup-order probe judges a service's pods, and the service's 503
// rate before against during the rollout: the regression guard a deployment
// pipeline runs after `kubectl apply` (`meshtriage watch`, exit non-zero on a
// regression).
//
// The judgement (Judge) is pure: it is fed observations (the Deployment and
// its pods at a time), startup verdicts and rates, and the tests drive it
// with scripted pod states. Watcher does the polling.
package watch

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podstartup"
)

// EarlyRestartWindow is the startup-order probe's window, one threshold
// for the triage and the rollout gate.
const EarlyRestartWindow = podstartup.EarlyRestartWindow

// RateTolerance is how much the 503 rate may grow over its baseline during
// the rollout before it counts as a regression; with no 503 before, any 503
// during is one.
const RateTolerance = 0.10

// Observation is one poll: the Deployment and the pods its selector matches.
type Observation struct {
	At         time.Time
	Deployment *appsv1.Deployment
	Pods       []corev1.Pod
}

// Rate is a 503 rate measured over a window.
type Rate struct {
	// Source says where it was measured ("source sidecar web/web-1",
	// "Prometheus").
	Source string
	// Requests and Errors503 are per second; Window is how long they were
	// measured over (the sum of the sampled windows).
	Requests  float64
	Errors503 float64
	Window    time.Duration
	ByFlag    []string
}

// String reads a rate as the report and the watch screen show it.
func (r *Rate) String() string {
	if r == nil {
		return "unknown"
	}
	s := fmt.Sprintf("%.3g 503/s of %.3g req/s over %s (%s)", r.Errors503, r.Requests, r.Window.Round(time.Second), r.Source)
	if len(r.ByFlag) > 0 {
		s += " by flag " + strings.Join(r.ByFlag, " ")
	}
	return s
}

// Rollout is the Deployment's progress as `kubectl rollout status` reads it.
type Rollout struct {
	Done bool
	// Failed is set when the Deployment exceeded its progress deadline.
	Failed  string
	Message string
}

// RolloutOf reads a Deployment's status the way kubectl rollout status does.
func RolloutOf(d *appsv1.Deployment) Rollout {
	if d == nil {
		return Rollout{Message: "deployment not read yet"}
	}
	if d.Generation > d.Status.ObservedGeneration {
		return Rollout{Message: "waiting for the deployment spec update to be observed"}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return Rollout{Failed: fmt.Sprintf("deployment %q exceeded its progress deadline", d.Name), Message: c.Message}
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case st.UpdatedReplicas < want:
		return Rollout{Message: fmt.Sprintf("%d of %d new replicas updated", st.UpdatedReplicas, want)}
	case st.Replicas > st.UpdatedReplicas:
		return Rollout{Message: fmt.Sprintf("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)}
	case st.AvailableReplicas < st.UpdatedReplicas:
		return Rollout{Message: fmt.Sprintf("%d of %d updated replicas available", st.AvailableReplicas, st.UpdatedReplicas)}
	}
	return Rollout{Done: true, Message: fmt.Sprintf("%d replicas updated and available", st.UpdatedReplicas)}
}

// PodState is one new pod as the watch has seen it.
type PodState struct {
	Name    string
	UID     types.UID
	Created time.Time
	// FirstSeen is the first observation with the pod; ReadyAt the first
	// with it Ready (zero if never).
	FirstSeen time.Time
	ReadyAt   time.Time
	LastSeen  time.Time
	Gone      bool
	Phase     corev1.PodPhase
	Restarts  int32
	// RestartedEarly: a restart was observed within EarlyRestartWindow of
	// creation, whatever the termination record says.
	RestartedEarly bool
	// Startup is the startup-order verdict on the pod's latest state.
	Startup   *podstartup.Start
	evaluated string // the state signature Startup was computed for
	pod       corev1.Pod
}

// Judge accumulates observations of one rollout.
type Judge struct {
	namespace  string
	deployment string
	started    time.Time
	now        time.Time
	old        map[types.UID]bool
	pods       map[types.UID]*PodState
	order      []types.UID
	rollout    Rollout
	// baselineAppFirst says whether the pods before the rollout already
	// started the app before Envoy; nil when there were none to look at.
	baselineAppFirst *bool
	before, during   *Rate
	rateProblems     []string
	settle           time.Duration
}

// NewJudge starts judging at the first observation. Pods present then are
// the old revision, except that a rollout already under way when the watch
// begins has its newest pod-template-hash group counted as new.
func NewJudge(namespace, deployment string, first Observation) *Judge {
	j := &Judge{
		namespace: namespace, deployment: deployment, started: first.At, now: first.At,
		old: map[types.UID]bool{}, pods: map[types.UID]*PodState{}, settle: EarlyRestartWindow,
	}
	newest := newestRevision(first.Pods)
	for i := range first.Pods {
		p := &first.Pods[i]
		if newest == "" || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != newest {
			j.old[p.UID] = true
		}
	}
	j.Observe(first)
	return j
}

// newestRevision is the pod-template-hash of the most recently created group
// when the pods span more than one revision, else "".
func newestRevision(pods []corev1.Pod) string {
	oldest := map[string]time.Time{}
	for _, p := range pods {
		h := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if h == "" {
			continue
		}
		if t, ok := oldest[h]; !ok || p.CreationTimestamp.Time.Before(t) {
			oldest[h] = p.CreationTimestamp.Time
		}
	}
	if len(oldest) < 2 {
		return ""
	}
	var newest string
	var at time.Time
	for h, t := range oldest {
		if newest == "" || t.After(at) || t.Equal(at) && h > newest {
			newest, at = h, t
		}
	}
	return newest
}

// Old lists the pods counted as the revision before the rollout, for the
// baseline.
func (j *Judge) Old(o Observation) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range o.Pods {
		if j.old[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

// SetBaseline records whether the old pods started their app before Envoy.
func (j *Judge) SetBaseline(verdicts []podstartup.Start) {
	if len(verdicts) == 0 {
		return
	}
	appFirst := false
	for _, v := range verdicts {
		appFirst = appFirst || v.AppBeforeProxy
	}
	j.baselineAppFirst = &appFirst
}

// Observe takes one poll into account.
func (j *Judge) Observe(o Observation) {
	j.now = o.At
	if o.Deployment != nil {
		j.rollout = RolloutOf(o.Deployment)
	}
	seen := map[types.UID]bool{}
	for i := range o.Pods {
		p := o.Pods[i]
		seen[p.UID] = true
		if j.old[p.UID] {
			continue
		}
		st, ok := j.pods[p.UID]
		if !ok {
			st = &PodState{Name: p.Name, UID: p.UID, Created: p.CreationTimestamp.Time, FirstSeen: o.At}
			if st.Created.IsZero() {
				st.Created = o.At
			}
			j.pods[p.UID] = st
			j.order = append(j.order, p.UID)
		}
		st.pod = p
		st.LastSeen = o.At
		st.Gone = false
		st.Phase = p.Status.Phase
		if ready, _ := mesh.PodReady(&p); ready && st.ReadyAt.IsZero() {
			st.ReadyAt = o.At
		}
		if r := appRestarts(&p); r > st.Restarts {
			if o.At.Sub(st.Created) <= EarlyRestartWindow {
				st.RestartedEarly = true
			}
			st.Restarts = r
		}
	}
	for uid, st := range j.pods {
		if !seen[uid] {
			st.Gone = true
		}
	}
}

func appRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range mesh.AppContainers(p) {
		if st, ok := mesh.ContainerStatus(p, c.Name); ok {
			n += st.RestartCount
		}
	}
	return n
}

// Due lists the new pods whose startup verdict is missing or stale: the pod
// started, restarted, became ready, or reached the end of its restart window
// since it was last judged. Each carries the pod as last observed.
func (j *Judge) Due() []corev1.Pod {
	var out []corev1.Pod
	for _, uid := range j.order {
		st := j.pods[uid]
		if st.Gone || !started(&st.pod) {
			continue
		}
		if sig := j.signature(st); sig != st.evaluated {
			out = append(out, st.pod)
		}
	}
	return out
}

// started: some app container has run, so there is a start order to judge.
func started(p *corev1.Pod) bool {
	for _, c := range mesh.AppContainers(p) {
		if st, ok := mesh.ContainerStatus(p, c.Name); ok && (st.State.Running != nil || st.State.Terminated != nil || st.LastTerminationState.Terminated != nil) {
			return true
		}
	}
	return false
}

func (j *Judge) signature(st *PodState) string {
	ready, _ := mesh.PodReady(&st.pod)
	return fmt.Sprintf("%d/%v/%v", st.Restarts, ready, j.now.Sub(st.Created) >= j.settle)
}

// SetStartup records the startup verdict of a pod Due returned.
func (j *Judge) SetStartup(uid types.UID, v podstartup.Start) {
	if st, ok := j.pods[uid]; ok {
		st.Startup = &v
		st.evaluated = j.signature(st)
	}
}

// SetRates records the 503 rate before and during the rollout; a nil rate
// with a problem says why it is unknown.
func (j *Judge) SetRates(before, during *Rate, problems ...string) {
	j.before, j.during = before, during
	j.rateProblems = problems
}

// Settled says the watch has seen enough: the rollout is done (or failed)
// and every new pod has been judged at least EarlyRestartWindow after its
// creation, or is gone.
func (j *Judge) Settled() bool {
	if j.rollout.Failed != "" {
		return true
	}
	if !j.rollout.Done {
		return false
	}
	for _, uid := range j.order {
		st := j.pods[uid]
		if st.Gone {
			continue
		}
		if j.now.Sub(st.Created) < j.settle || st.Startup == nil || st.evaluated != j.signature(st) {
			return false
		}
	}
	return true
}

// PodReport is one new pod's verdict.
type PodReport struct {
	Name              string        `json:"name"`
	Age               time.Duration `json:"-"`
	Phase             string        `json:"phase"`
	Ready             bool          `json:"ready"`
	Gone              bool          `json:"gone,omitempty"`
	Sidecar           string        `json:"sidecar"`
	StartOrder        string        `json:"start_order"`
	Restarts          int32         `json:"restarts"`
	EarlyRestart      bool          `json:"early_restart"`
	RestartReasons    []string      `json:"restart_reasons,omitempty"`
	ConnectionRefused bool          `json:"connection_refused"`
	// Verdict is ok, regressed, warn or pending (not judged yet); Why
	// says what regressed, Warnings what is worth reading.
	Verdict  string   `json:"verdict"`
	Why      []string `json:"why,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Report is the watch's outcome so far.
type Report struct {
	Namespace   string      `json:"namespace"`
	Deployment  string      `json:"deployment"`
	Started     time.Time   `json:"started"`
	Elapsed     string      `json:"elapsed"`
	Rollout     Rollout     `json:"rollout"`
	OldPods     int         `json:"old_pods"`
	Pods        []PodReport `json:"pods"`
	Before      *Rate       `json:"rate_before,omitempty"`
	During      *Rate       `json:"rate_during,omitempty"`
	RateProblem string      `json:"rate_problem,omitempty"`
	// Regressions are why the gate fails, one line each; Warnings are
	// worth reading but do not fail it.
	Regressions []string `json:"regressions"`
	Warnings    []string `json:"warnings,omitempty"`
	Settled     bool     `json:"settled"`
}

// Regressed says the gate fails.
func (r Report) Regressed() bool { return len(r.Regressions) > 0 }

// Verdicts.
const (
	VerdictOK        = "ok"
	VerdictRegressed = "regressed"
	VerdictWarn      = "warn"
	VerdictPending   = "pending"
)

// Report judges what has been observed so far.
func (j *Judge) Report() Report {
	r := Report{
		Namespace: j.namespace, Deployment: j.deployment, Started: j.started,
		Elapsed: j.now.Sub(j.started).Round(time.Second).String(), Rollout: j.rollout,
		OldPods: len(j.old), Before: j.before, During: j.during, Settled: j.Settled(), Regressions: []string{},
	}
	if len(j.rateProblems) > 0 {
		r.RateProblem = strings.Join(j.rateProblems, "; ")
	}
	if j.rollout.Failed != "" {
		r.Regressions = append(r.Regressions, j.rollout.Failed)
	}
	for _, uid := range j.order {
		pr := j.podReport(j.pods[uid])
		r.Pods = append(r.Pods, pr)
		for _, why := range pr.Why {
			r.Regressions = append(r.Regressions, pr.Name+": "+why)
		}
		for _, w := range pr.Warnings {
			r.Warnings = append(r.Warnings, pr.Name+": "+w)
		}
	}
	if j.before != nil && j.during != nil && rateRegressed(*j.before, *j.during) {
		r.Regressions = append(r.Regressions, fmt.Sprintf("503 rate rose from %s/s before to %s/s during the rollout (%s)",
			formatRate(j.before.Errors503), formatRate(j.during.Errors503), j.during.Source))
	}
	if r.Settled && len(j.order) == 0 && j.rollout.Done {
		r.Warnings = append(r.Warnings, "no new pod appeared: the rollout was complete when the watch began, or changed no pod")
	}
	return r
}

func rateRegressed(before, during Rate) bool {
	return during.Errors503 > 0 && during.Errors503 > before.Errors503*(1+RateTolerance)
}

func (j *Judge) podReport(st *PodState) PodReport {
	ready, _ := mesh.PodReady(&st.pod)
	pr := PodReport{
		Name: st.Name, Age: j.now.Sub(st.Created), Phase: string(st.Phase), Ready: ready, Gone: st.Gone,
		Sidecar: string(mesh.PodSidecar(&st.pod)), Restarts: st.Restarts, Verdict: VerdictPending, StartOrder: "-",
	}
	if st.Startup == nil {
		if st.RestartedEarly {
			pr.EarlyRestart = true
			pr.Verdict = VerdictRegressed
			pr.Why = append(pr.Why, fmt.Sprintf("restarted within %s of creation", EarlyRestartWindow))
		}
		return pr
	}
	v := st.Startup
	pr.StartOrder = startOrder(v)
	pr.EarlyRestart = v.EarlyRestart || st.RestartedEarly
	pr.RestartReasons = v.RestartReasons
	pr.ConnectionRefused = v.ConnectionRefused
	regressed, warn := false, false
	if pr.EarlyRestart {
		regressed = true
		why := fmt.Sprintf("restarted within %s of creation", EarlyRestartWindow)
		if len(v.RestartReasons) > 0 {
			why += " (" + strings.Join(v.RestartReasons, "; ") + ")"
		}
		pr.Why = append(pr.Why, why)
	}
	if v.ConnectionRefused {
		regressed = true
		pr.Why = append(pr.Why, `"connection refused" in the app log at startup`)
	}
	if v.AppBeforeProxy {
		switch {
		case j.baselineAppFirst != nil && !*j.baselineAppFirst:
			regressed = true
			pr.Why = append(pr.Why, "the app started before Envoy was ready, which the pods before the rollout did not")
		case j.baselineAppFirst != nil:
			warn = true
			pr.Warnings = append(pr.Warnings, "the app starts before Envoy is ready, as before the rollout: outbound calls at startup can fail")
		default:
			warn = true
			pr.Warnings = append(pr.Warnings, "the app starts before Envoy is ready (no pod before the rollout to compare with): outbound calls at startup can fail")
		}
	}
	switch {
	case regressed:
		pr.Verdict = VerdictRegressed
	case warn:
		pr.Verdict = VerdictWarn
	case j.now.Sub(st.Created) >= j.settle || st.Gone:
		pr.Verdict = VerdictOK
	}
	return pr
}

func startOrder(v *podstartup.Start) string {
	switch {
	case v.Sidecar == mesh.SidecarNone:
		return "no sidecar"
	case v.AppBeforeProxy:
		return "app before proxy"
	case v.Sidecar == mesh.SidecarNative:
		return "proxy first (native)"
	case v.HoldApplication:
		return "proxy first (hold)"
	}
	return "proxy first"
}

func formatRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 0.1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// sortPods orders pods by creation, then name, so reports are stable.
func sortPods(pods []corev1.Pod) {
	sort.SliceStable(pods, func(a, b int) bool {
		ta, tb := pods[a].CreationTimestamp, pods[b].CreationTimestamp
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return pods[a].Name < pods[b].Name
	})
}
