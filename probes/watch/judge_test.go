package watch

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

const s = time.Second

func TestACleanRolloutSettlesAfterTheRestartWindow(t *testing.T) {
	newA := podSpec{name: "orders-new-a", hash: "5d4b", created: 2 * s, hold: true}
	newAUp := newA
	newAUp.proxyStart, newAUp.appStart = 3*s, 5*s
	newAReady := newAUp
	newAReady.ready = true
	newB := podSpec{name: "orders-new-b", hash: "5d4b", created: 12 * s, proxyStart: 13 * s, appStart: 15 * s, ready: true, hold: true}

	steps := []step{
		{0, deployment(2, 1, 2, 0, 2, 2), []podSpec{oldA, oldB}},
		{2 * s, deployment(2, 2, 2, 1, 2, 3), []podSpec{oldA, oldB, newA}},
		{6 * s, deployment(2, 2, 2, 1, 2, 3), []podSpec{oldA, oldB, newAUp}},
		{10 * s, deployment(2, 2, 2, 1, 2, 3), []podSpec{oldA, oldB, newAReady}},
		{12 * s, deployment(2, 2, 2, 2, 2, 3), []podSpec{oldB, newAReady, newB}},
		{20 * s, deployment(2, 2, 2, 2, 2, 2), []podSpec{newAReady, newB}},
	}
	j := play(steps)
	r := j.Report()
	if !r.Rollout.Done {
		t.Fatalf("rollout %+v", r.Rollout)
	}
	if r.Settled {
		t.Fatal("settled 18 s after the last pod was created: a restart at 50 s would be missed")
	}
	if len(r.Pods) != 2 || r.Pods[0].Name != "orders-new-a" || r.Pods[0].Verdict != VerdictPending || r.OldPods != 2 {
		t.Fatalf("pods %+v", r.Pods)
	}

	j.Observe(step{75 * s, deployment(2, 2, 2, 2, 2, 2), []podSpec{newAReady, newB}}.observation())
	if j.Settled() {
		t.Fatal("settled before the pods were judged at the end of their window")
	}
	judgeDue(j)
	r = j.Report()
	if !r.Settled || r.Regressed() {
		t.Fatalf("clean rollout: settled %v, regressions %q", r.Settled, r.Regressions)
	}
	for _, p := range r.Pods {
		if p.Verdict != VerdictOK || p.StartOrder != "proxy first (hold)" || p.EarlyRestart || p.ConnectionRefused {
			t.Errorf("pod %+v", p)
		}
	}
}

func TestAStartupRaceInTheNewRevisionRegresses(t *testing.T) {
	// The new revision lost holdApplicationUntilProxyStarts: the app starts
	// before Envoy, is refused by its database and restarts at +1.4 s.
	racing := podSpec{name: "orders-new-a", hash: "5d4b", created: 2 * s, proxyStart: 2*s + 300*time.Millisecond, appStart: 2*s + 200*time.Millisecond}
	restarted := racing
	restarted.restartedAt = 2*s + 1400*time.Millisecond
	restarted.ready = true

	steps := []step{
		{0, deployment(2, 1, 1, 0, 1, 1), []podSpec{oldA}},
		{3 * s, deployment(2, 2, 1, 1, 1, 2), []podSpec{oldA, racing}},
		{6 * s, deployment(2, 2, 1, 1, 1, 2), []podSpec{oldA, restarted}},
		{10 * s, deployment(2, 2, 1, 1, 1, 1), []podSpec{restarted}},
	}
	j := play(steps)
	r := j.Report()
	if !r.Regressed() || r.Settled {
		t.Fatalf("regressed %v settled %v", r.Regressions, r.Settled)
	}
	p := r.Pods[0]
	if p.Verdict != VerdictRegressed || !p.EarlyRestart || !p.ConnectionRefused || p.StartOrder != "app before proxy" || p.Restarts != 1 {
		t.Errorf("pod %+v", p)
	}
	joined := strings.Join(r.Regressions, "\n")
	for _, want := range []string{"restarted within 1m0s of creation (orders-new-a: orders Error exit 1 at +1s)", `"connection refused"`, "which the pods before the rollout did not"} {
		if !strings.Contains(joined, want) {
			t.Errorf("regressions lack %q:\n%s", want, joined)
		}
	}
}

func TestAppBeforeProxyAsBeforeIsAWarningOnly(t *testing.T) {
	unheld := oldA
	unheld.hold = false
	unheld.appStart = -time.Hour + 500*time.Millisecond // before Envoy, like every pod of this service
	newer := podSpec{name: "orders-new-a", hash: "5d4b", created: 2 * s, proxyStart: 3 * s, appStart: 2*s + 500*time.Millisecond, ready: true}
	steps := []step{
		{0, deployment(2, 1, 1, 0, 1, 1), []podSpec{unheld}},
		{4 * s, deployment(2, 2, 1, 1, 1, 1), []podSpec{newer}},
		{70 * s, deployment(2, 2, 1, 1, 1, 1), []podSpec{newer}},
	}
	r := play(steps).Report()
	if r.Regressed() || !r.Settled || r.Pods[0].Verdict != VerdictWarn || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "as before the rollout") {
		t.Errorf("regressions %q warnings %q pods %+v", r.Regressions, r.Warnings, r.Pods)
	}
}

func TestARestartSeenBeforeTheLogsWereReadStillCounts(t *testing.T) {
	pending := podSpec{name: "orders-new-a", hash: "5d4b", created: 0, proxyStart: s}
	j := NewJudge("shop", "orders", step{0, deployment(2, 2, 1, 1, 0, 1), nil}.observation())
	j.Observe(step{2 * s, deployment(2, 2, 1, 1, 0, 1), []podSpec{pending}}.observation())
	if len(j.Due()) != 0 {
		t.Fatal("a pod whose app has not started has no start order to judge")
	}
	crashed := pending
	crashed.appStart, crashed.restartedAt = 2*s, 4*s
	j.Observe(step{8 * s, deployment(2, 2, 1, 1, 0, 1), []podSpec{crashed}}.observation())
	r := j.Report()
	if r.Pods[0].Verdict != VerdictRegressed || !r.Pods[0].EarlyRestart {
		t.Errorf("pod %+v", r.Pods[0])
	}
	if len(j.Due()) != 1 {
		t.Error("the restarted pod is due for judging")
	}
}

func TestARolloutUnderWayCountsTheNewestRevisionAsNew(t *testing.T) {
	already := podSpec{name: "orders-new-a", hash: "5d4b", created: -20 * s, proxyStart: -19 * s, appStart: -17 * s, ready: true, hold: true}
	j := NewJudge("shop", "orders", step{0, deployment(2, 2, 2, 1, 2, 3), []podSpec{oldA, oldB, already}}.observation())
	r := j.Report()
	if r.OldPods != 2 || len(r.Pods) != 1 || r.Pods[0].Name != "orders-new-a" {
		t.Errorf("old %d, new %+v", r.OldPods, r.Pods)
	}
}

func TestAStuckRolloutFailsAndAGoneRolloutIsSaid(t *testing.T) {
	d := deployment(2, 2, 2, 1, 1, 3)
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "orders-5d4b" has timed out progressing.`}}
	j := NewJudge("shop", "orders", step{0, d, []podSpec{oldA}}.observation())
	r := j.Report()
	if !r.Settled || !r.Regressed() || !strings.Contains(r.Regressions[0], "exceeded its progress deadline") {
		t.Errorf("%+v", r)
	}

	j = NewJudge("shop", "orders", step{0, deployment(1, 1, 2, 2, 2, 2), []podSpec{oldA, oldB}}.observation())
	r = j.Report()
	if !r.Settled || r.Regressed() || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "no new pod appeared") {
		t.Errorf("nothing to roll out: %+v", r)
	}
}

func TestThe503RateBeforeAgainstDuring(t *testing.T) {
	cases := []struct {
		before, during float64
		regressed      bool
	}{
		{0, 0, false},
		{0, 0.05, true}, // the seed's guard: 503s stay flat during a rollout
		{2, 2.1, false}, // within the tolerance of a noisy baseline
		{2, 3, true},
		{2, 0, false},
	}
	for _, c := range cases {
		j := NewJudge("shop", "orders", step{0, deployment(1, 1, 1, 1, 1, 1), nil}.observation())
		j.SetRates(&Rate{Errors503: c.before, Requests: 40, Source: "source sidecar web/web-1"}, &Rate{Errors503: c.during, Requests: 40, Source: "source sidecar web/web-1"})
		r := j.Report()
		if r.Regressed() != c.regressed {
			t.Errorf("before %v during %v: regressions %q", c.before, c.during, r.Regressions)
		}
	}
	j := NewJudge("shop", "orders", step{0, deployment(1, 1, 1, 1, 1, 1), nil}.observation())
	j.SetRates(nil, &Rate{Errors503: 3}, "503 rate before the rollout unknown: no sidecar")
	if r := j.Report(); r.Regressed() || !strings.Contains(r.RateProblem, "unknown") {
		t.Errorf("an unknown baseline is said, not judged: %+v", r)
	}
}

func TestRolloutOfReadsTheStatusAsKubectlDoes(t *testing.T) {
	cases := []struct {
		d    *appsv1.Deployment
		done bool
		msg  string
	}{
		{deployment(3, 2, 2, 2, 2, 2), false, "spec update to be observed"},
		{deployment(3, 3, 3, 1, 3, 4), false, "1 of 3 new replicas updated"},
		{deployment(3, 3, 3, 3, 3, 4), false, "1 old replicas pending termination"},
		{deployment(3, 3, 3, 3, 2, 3), false, "2 of 3 updated replicas available"},
		{deployment(3, 3, 3, 3, 3, 3), true, "3 replicas updated and available"},
	}
	for _, c := range cases {
		r := RolloutOf(c.d)
		if r.Done != c.done || !strings.Contains(r.Message, c.msg) {
			t.Errorf("%+v: got %+v, want done=%v %q", c.d.Status, r, c.done, c.msg)
		}
	}
}
