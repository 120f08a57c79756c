//go:build integration

package lab

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/report"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// liveReport is `meshtriage check -o json` against the lab.
func liveReport(t *testing.T, l *Lab, s *recorded.Scenario) report.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr, err := triage.Open(ctx, triage.LiveSource(liveCluster(t, l.Kubeconfig, s, 20*time.Second)), s.Target, triage.Options{Mode: runbook.ModeAuto, User: "lab-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Auto(ctx); err != nil {
		t.Fatal(err)
	}
	return tr.Report()
}

// applyPatches applies patches through the real API server as `kubectl
// patch --type=...` and `kubectl apply -f -` do: client-go's Patch with the
// patch type, a Create for a new object. It returns what to delete after.
func applyPatches(t *testing.T, l *Lab, patches []runbook.Patch) []func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(l.Kube.Discovery()))
	var undo []func()
	for _, p := range patches {
		gv, err := schema.ParseGroupVersion(p.APIVersion)
		if err != nil {
			t.Fatal(err)
		}
		m, err := mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: p.Kind}, gv.Version)
		if err != nil {
			t.Fatalf("%s: %v", p.Object(), err)
		}
		var client dynamic.ResourceInterface = l.Dynamic.Resource(m.Resource)
		if p.Namespace != "" {
			client = l.Dynamic.Resource(m.Resource).Namespace(p.Namespace)
		}
		switch p.Type {
		case runbook.PatchCreate:
			var obj unstructured.Unstructured
			if err := json.Unmarshal(p.Patch, &obj.Object); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Create(ctx, &obj, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
				t.Fatalf("create %s: %v", p.Object(), err)
			}
			name := p.Name
			undo = append(undo, func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("delete %s: %v", name, err)
				}
			})
		default:
			pt := map[string]types.PatchType{runbook.PatchMerge: types.MergePatchType, runbook.PatchJSON: types.JSONPatchType, runbook.PatchStrategic: types.StrategicMergePatchType}[p.Type]
			if _, err := client.Patch(ctx, p.Name, pt, p.Patch, metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
				t.Fatalf("kubectl patch %s --type=%s: %v\n%s", p.Object(), p.Type, err, p.Patch)
			}
		}
	}
	return undo
}

func causesOf(r report.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Cause)
	}
	slices.Sort(out)
	return out
}

// (f) A finding's patch, applied by the real API server, clears its cause
// when check runs again against the lab, and causes no other: for each
// scenario whose cause the configuration shows, the first direction whose
// simulation says it clears it.
func TestFixPatchesClearTheirCauseInTheLab(t *testing.T) {
	l := sharedLab(t)
	for _, name := range []string{"subset-no-pods", "gateway-subset-no-pods", "vs-undefined-subset", "port-mismatch",
		"gateway-vs-not-bound", "mtls-to-pod-without-sidecar", "mtls-plaintext-to-strict", "ambient-hbone-networkpolicy",
		"gatewayapi-backend-port-missing", "gatewayapi-route-not-attached", "gatewayapi-ref-not-permitted", "gateway-listener-unreachable",
		"mesh-route-backend-not-found", "waypoint-route-backend-not-found", "protocol-mysql-named-http"} {
		t.Run(name, func(t *testing.T) {
			s := loadScenario(t, name)
			applyShared(t, l, s)
			before := liveReport(t, l, s)
			if len(before.Findings) == 0 {
				t.Fatalf("check finds nothing in the lab")
			}
			f := before.Findings[0]
			var fix *runbook.Fix
			for i, d := range f.Fix.Directions {
				if len(d.Patches) > 0 && d.Simulation != nil && slices.Contains(d.Simulation.Clears, f.Cause) {
					fix = &f.Fix.Directions[i]
					break
				}
			}
			if fix == nil {
				t.Fatalf("%s: no direction whose simulation clears it: %+v", f.Cause, f.Fix.Directions)
			}
			for _, u := range applyPatches(t, l, fix.Patches) {
				t.Cleanup(u)
			}
			after := liveReport(t, l, s)
			was := causesOf(before)
			for _, af := range after.Findings {
				onlyRuntime := onRuntimeEvidence(af)
				switch {
				case af.Cause == f.Cause && !onlyRuntime:
					t.Errorf("%s %s applied by the API server: the configuration still shows it (%+v)", f.Cause, fix.ID, af.Evidence)
				case af.Cause == f.Cause:
					t.Logf("%s is still found on the runtime evidence the lab replays (%s): the configuration no longer shows it", f.Cause, steps(af))
				case !slices.Contains(was, af.Cause) && !onlyRuntime:
					t.Errorf("%s %s applied by the API server causes %s (%s)", f.Cause, fix.ID, af.Cause, steps(af))
				}
			}
		})
	}
}

// runtimeSteps judge what the lab replays as recorded (Envoy admin, the
// proxies' and ztunnel's logs, istiod's sync status): it still shows the
// 503s a patch of the configuration would stop, so a finding that rests on
// these steps alone after the patch is the replay's, not the patch's.
var runtimeSteps = []string{"envoy-clusters", "envoy-listeners", "envoy-config", "access-log", "metrics", "proxy-status", "ztunnel", "waypoint", "prometheus"}

func onRuntimeEvidence(f report.Finding) bool {
	if f.Cause == runbook.Unexplained {
		return slices.Contains(runtimeSteps, f.Step)
	}
	for _, e := range f.Evidence {
		if !slices.Contains(runtimeSteps, e.Step) {
			return false
		}
	}
	return true
}

func steps(f report.Finding) []string {
	if f.Step != "" {
		return []string{f.Step}
	}
	var out []string
	for _, e := range f.Evidence {
		out = append(out, e.Step)
	}
	return out
}
