package recorded_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
)

// triageRun is what a triage concluded, and every probe's outcome.
type triageRun struct {
	findings []string
	results  map[string]probes.Result
	sess     *runbook.Session
}

// runTriage walks the runbook unattended over c behind the probes' read
// cache, as `meshtriage check` does, with a short metrics window.
func runTriage(t *testing.T, c cluster.Cluster, target cluster.Target) triageRun {
	t.Helper()
	graph, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: 20 * time.Millisecond}
	sess, err := runbook.NewSession(runbook.Config{
		Graph: graph, Cluster: cluster.NewCache(c), Target: target, Probes: reg, Mode: runbook.ModeAuto,
		Clock: func() time.Time { return time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	findings, err := sess.Auto(ctx)
	if err != nil {
		t.Fatalf("auto triage: %v", err)
	}
	run := triageRun{results: map[string]probes.Result{}, sess: sess}
	for _, f := range findings {
		run.findings = append(run.findings, f.Cause)
	}
	sort.Strings(run.findings)
	for _, st := range sess.Steps() {
		if r, ok := sess.Result(st.ID); ok {
			run.results[st.ID] = r
		}
	}
	return run
}

// replay writes what rec recorded as a redacted archive, reads it back as
// a user's --recording would be, and returns the cluster it serves.
func replay(t *testing.T, rec *recorded.Recorder, target cluster.Target, findings []string) (cluster.Cluster, []byte) {
	t.Helper()
	files, err := rec.Scenario(target, findings).Files(incidentlog.Redact)
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := recorded.WriteArchive(&archive, "capture", files, time.Now()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "capture.tar.gz")
	if err := os.WriteFile(path, archive.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := recorded.OpenRecording(path, "default")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Skipped) > 0 || !r.HasTarget || r.Target.String() != target.String() || !slices.Equal(r.Expect, findings) {
		t.Errorf("recording read back: skipped %v, target %s (want %s), expect %v (want %v)", r.Skipped, r.Target, target, r.Expect, findings)
	}
	c, err := recorded.NewCluster(r.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	return c, archive.Bytes()
}

// sameOutcome requires the replay to reach every probe's status, summary
// and facts the recorded run reached; rates depend on how long the two
// samples of the counters were apart, so of those only "zero or not" must
// agree.
func sameOutcome(t *testing.T, live, again triageRun) {
	t.Helper()
	if !slices.Equal(live.findings, again.findings) {
		t.Errorf("findings: live %v, replayed %v", live.findings, again.findings)
	}
	for id, want := range live.results {
		got, ok := again.results[id]
		if !ok {
			t.Errorf("step %s ran live, not on replay", id)
			continue
		}
		if got.Status != want.Status {
			t.Errorf("step %s: status live %s (%s), replayed %s (%s)", id, want.Status, want.Summary, got.Status, got.Summary)
		}
		for k, v := range want.Facts {
			g := got.Facts[k]
			if f, isFloat := v.(float64); isFloat && (strings.HasSuffix(k, "_rate") || strings.HasSuffix(k, "_window_s")) {
				if gf, _ := g.(float64); (f == 0) != (gf == 0) {
					t.Errorf("step %s fact %s: live %v, replayed %v", id, k, v, g)
				}
				continue
			}
			if !reflect.DeepEqual(fmt.Sprint(v), fmt.Sprint(g)) {
				t.Errorf("step %s fact %s: live %v, replayed %v", id, k, v, g)
			}
		}
		if len(got.Facts) != len(want.Facts) {
			t.Errorf("step %s: %d facts live, %d replayed", id, len(want.Facts), len(got.Facts))
		}
	}
}

// TestCaptureReplaysEveryScenario records a triage of every embedded
// scenario through a Recorder, writes the recording as `meshtriage
// capture` does (redacted, archived), reads it back as `check --recording`
// does, and triages it again: the same findings, and every probe the same
// status and facts.
func TestCaptureReplaysEveryScenario(t *testing.T) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := recorded.Load(assets.FS, name)
			if err != nil {
				t.Fatal(err)
			}
			live, err := recorded.NewCluster(s)
			if err != nil {
				t.Fatal(err)
			}
			rec := recorded.NewRecorder(live)
			first := runTriage(t, rec, s.Target)
			if u := rec.Unrecorded(); len(u) > 0 {
				t.Errorf("reads the recording has no file for: %v", u)
			}
			c, _ := replay(t, rec, s.Target, first.findings)
			sameOutcome(t, first, runTriage(t, c, s.Target))
		})
	}
}

// forbidding refuses some reads, as a narrow RBAC role does.
type forbidding struct {
	cluster.Cluster
	pods bool
}

func (f forbidding) ListPods(ctx context.Context, ns string, sel map[string]string) ([]corev1.Pod, error) {
	if f.pods {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("User \"oncall\" cannot list resource \"pods\" in API group \"\" in the namespace %q", ns))
	}
	return f.Cluster.ListPods(ctx, ns, sel)
}

func (f forbidding) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, name, fmt.Errorf("User \"oncall\" cannot get resource \"namespaces\""))
}

// A read that failed when the capture was made fails the same way on
// replay: refused pods are not "no pods" (which would claim the selector
// matches nothing), and a refused namespace leaves its injection unknown.
func TestCaptureReplaysFailedReads(t *testing.T) {
	s, err := recorded.Load(assets.FS, "healthy")
	if err != nil {
		t.Fatal(err)
	}
	for _, refusePods := range []bool{false, true} {
		t.Run(fmt.Sprintf("pods refused %v", refusePods), func(t *testing.T) {
			c, err := recorded.NewCluster(s)
			if err != nil {
				t.Fatal(err)
			}
			rec := recorded.NewRecorder(forbidding{Cluster: c, pods: refusePods})
			ctx := context.Background()
			live := probes.Run(ctx, probes.TargetProbe{}, cluster.NewCache(rec), s.Target)
			again, _ := replay(t, rec, s.Target, nil)
			got := probes.Run(ctx, probes.TargetProbe{}, cluster.NewCache(again), s.Target)
			if got.Status != live.Status || got.Summary != live.Summary || fmt.Sprint(got.Facts) != fmt.Sprint(live.Facts) {
				t.Errorf("target probe live: %s %q %v\nreplayed: %s %q %v", live.Status, live.Summary, live.Facts, got.Status, got.Summary, got.Facts)
			}
			if _, known := got.Facts["target_namespace_injection"]; known {
				t.Errorf("namespace injection %v from a recording whose namespace was unreadable", got.Facts["target_namespace_injection"])
			}
			if refusePods && (got.Status != probes.StatusError || !strings.Contains(got.Summary, "forbidden")) {
				t.Errorf("refused pods replayed as %s %q", got.Status, got.Summary)
			}
		})
	}
}
