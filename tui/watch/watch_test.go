package watch

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/probes/cluster"
	pwatch "github.com/meshtriage/meshtriage/probes/watch"
	"github.com/meshtriage/meshtriage/tui/common"
)

func newScreen(w, h int) *Model {
	c := common.New(context.Background(), func() time.Time { return time.Date(2025, 12, 2, 3, 0, 0, 0, time.UTC) }, true)
	m := New(c)
	m.SetSize(w, h)
	return m
}

func regressedReport() pwatch.Report {
	return pwatch.Report{
		Namespace: "shop", Deployment: "orders", Elapsed: "1m12s",
		Rollout: pwatch.Rollout{Done: true, Message: "2 replicas updated and available"},
		Pods: []pwatch.PodReport{
			{Name: "orders-5d4b-a", Sidecar: "classic", StartOrder: "app before proxy", Restarts: 1, EarlyRestart: true, ConnectionRefused: true, Verdict: pwatch.VerdictRegressed},
			{Name: "orders-5d4b-b", Sidecar: "classic", StartOrder: "proxy first (hold)", Verdict: pwatch.VerdictOK},
		},
		Before:      &pwatch.Rate{Source: "source sidecar web/web-1", Requests: 41, Errors503: 0, Window: 5 * time.Second},
		During:      &pwatch.Rate{Source: "source sidecar web/web-1, 12 samples", Requests: 40, Errors503: 0.4, Window: time.Minute, ByFlag: []string{"UC=24"}},
		Regressions: []string{"orders-5d4b-a: restarted within 1m0s of creation", "503 rate rose from 0/s before to 0.40/s during the rollout"},
		Settled:     true,
	}
}

func TestRolloutScreen(t *testing.T) {
	m := newScreen(80, 22)
	m.id = 1
	m.running = true
	m.Update(ReportMsg{id: 1, Report: regressedReport()})
	m.Update(DoneMsg{id: 1, Report: regressedReport()})
	golden.RequireEqual(t, ansi.Strip(m.View()))
}

func TestRolloutScreenIgnoresAnOldWatch(t *testing.T) {
	m := newScreen(80, 22)
	m.id, m.running = 2, true
	m.Update(DoneMsg{id: 1, Report: regressedReport()})
	if !m.Running() || len(m.Report().Pods) != 0 {
		t.Error("a stopped watch's late report replaced the current one")
	}
	if lines := strings.Count(m.View(), "\n") + 1; lines != 22 {
		t.Errorf("view is %d lines, want 22", lines)
	}
	m.Update(DoneMsg{id: 2, Err: errors.New("the rollout did not settle within 10m0s")})
	if !strings.Contains(ansi.Strip(m.View()), "did not settle") {
		t.Errorf("the error is not shown:\n%s", ansi.Strip(m.View()))
	}
}

// doneCluster serves a Deployment whose rollout is complete and changed no
// pod: the watch settles at its first poll.
type doneCluster struct{ cluster.Cluster }

func (doneCluster) GetDeployment(context.Context, string, string) (*appsv1.Deployment, error) {
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "orders"}}},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1},
	}, nil
}
func (doneCluster) ListPods(context.Context, string, map[string]string) ([]corev1.Pod, error) {
	return nil, nil
}
func (doneCluster) Info() cluster.ClusterInfo { return cluster.ClusterInfo{} }
func (doneCluster) GetConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func TestStartRunsTheWatchAndDeliversItsEnd(t *testing.T) {
	m := newScreen(80, 22)
	cmd := m.Start(pwatch.Config{Cluster: doneCluster{}, Deployments: doneCluster{}, Namespace: "shop", Deployment: "orders", Interval: time.Millisecond})
	var done bool
	for i := 0; i < 10 && cmd != nil && !done; i++ {
		msg := cmd()
		_, done = msg.(DoneMsg)
		cmd = m.Update(msg)
	}
	if !done || m.Running() || !m.Report().Settled || m.Err() != nil {
		t.Fatalf("done %v running %v report %+v err %v", done, m.Running(), m.Report(), m.Err())
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "PASS: no regression") || !strings.Contains(v, "no new pod appeared") {
		t.Errorf("view:\n%s", v)
	}
	if cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEscape}); cmd == nil {
		t.Error("esc after the watch does not close the screen")
	} else if _, ok := cmd().(ClosedMsg); !ok {
		t.Error("esc did not send ClosedMsg")
	}
}

func TestRunEndsWithTheWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := Run(ctx, pwatch.Config{Cluster: doneCluster{}, Deployments: doneCluster{}, Namespace: "shop", Deployment: "orders", Interval: time.Millisecond},
		true, tea.WithInput(strings.NewReader("")), tea.WithOutput(io.Discard), tea.WithWindowSize(80, 24), tea.WithoutSignals())
	if err != nil || !rep.Settled || rep.Deployment != "orders" {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	// The screen itself is pinned by TestRolloutScreen; the program may end
	// before a frame with it is drawn, since the watch settles at once.
}
