//go:build integration

package lab

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
)

// One lab with a real istiod serves the tests against istiod, apart from
// the shared lab: istiod writes into the cluster it watches (its CA
// secret, root-certificate ConfigMaps, leases), which the other tests'
// audit checks do not expect. Scenarios are applied in turn.
var (
	istiodOnce   sync.Once
	istiodLabL   *Lab
	istiodL      *Istiod
	istiodLabErr error
	istiodMu     sync.Mutex // one scenario in the istiod lab at a time
)

func istiodLab(t *testing.T) (*Lab, *Istiod) {
	t.Helper()
	istiodOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "istiod lab: "+f+"\n", a...) }
		istiodLabL, istiodLabErr = Start(ctx, Options{Logf: logf})
		if istiodLabErr != nil {
			return
		}
		istiodL, istiodLabErr = StartIstiod(ctx, istiodLabL)
	})
	if istiodLabErr != nil {
		t.Fatalf("start the istiod lab: %v", istiodLabErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("istiod log tail:\n%s", tail(istiodL.Log, 40))
		}
	})
	return istiodLabL, istiodL
}

// stopIstiodLab runs from TestMain.
func stopIstiodLab() {
	if istiodL != nil {
		istiodL.Stop()
	}
	if istiodLabL != nil {
		istiodLabL.Stop()
	}
}

// applyToIstiod loads s into the istiod lab for the rest of the test,
// makes the scenario's istiod pod the real istiod for the product, and
// waits until istiod has read every Service and Istio rule of s.
func applyToIstiod(t *testing.T, l *Lab, i *Istiod, s *recorded.Scenario) *Applied {
	t.Helper()
	istiodMu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The scenario's mesh config first: istiod gives a VirtualService or
	// DestinationRule without exportTo the mesh default it had when it read
	// the object, and a later mesh change that leaves the object as it was
	// pushes nothing new for it.
	meshText, rest := scenarioMeshConfig(s)
	if err := setMeshConfig(ctx, l, i, meshText); err != nil {
		istiodMu.Unlock()
		t.Fatal(err)
	}
	a, err := Apply(ctx, l, rest)
	if err != nil {
		istiodMu.Unlock()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer istiodMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := a.Delete(ctx); err != nil {
			t.Errorf("delete scenario %s: %v", s.Name, err)
		}
		if err := setMeshConfig(ctx, l, i, ""); err != nil {
			t.Errorf("scenario %s: put back the default mesh config: %v", s.Name, err)
		}
	})
	for _, pod := range IstiodPods(s) {
		i.ServeAs(pod)
	}
	if err := i.WaitKnows(ctx, s.Objects); err != nil {
		t.Fatal(err)
	}
	return a
}

// scenarioMeshConfig is the mesh config a scenario brings in the ConfigMap
// istiod reads ("" for none: istiod's defaults), and the scenario without
// that ConfigMap, to apply after it.
func scenarioMeshConfig(s *recorded.Scenario) (string, *recorded.Scenario) {
	text, rest := "", *s
	rest.Objects = nil
	for _, obj := range s.Objects {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == mesh.MeshConfigMap && cm.Namespace == cluster.DefaultControlPlane {
			text = cm.Data["mesh"]
			continue
		}
		rest.Objects = append(rest.Objects, obj)
	}
	return text, &rest
}

func scenarioPodByRef(t *testing.T, s *recorded.Scenario, ref cluster.PodRef) *corev1.Pod {
	t.Helper()
	for _, obj := range s.Objects {
		if p, ok := obj.(*corev1.Pod); ok && p.Namespace == ref.Namespace && p.Name == ref.Name {
			return p
		}
	}
	t.Fatalf("scenario %s has no pod %s", s.Name, ref)
	return nil
}

// connectSource connects the scenario's source pod to istiod as its
// sidecar and lets istiod's pushes for what it just read arrive.
func connectSource(t *testing.T, i *Istiod, s *recorded.Scenario) *Sidecar {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc, err := i.ConnectSidecar(ctx, scenarioPodByRef(t, s, *s.Target.Source))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	if err := sc.XDS.WaitQuiet(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	return sc
}

func runProbe(t *testing.T, l *Lab, s *recorded.Scenario, id string) probes.Result {
	t.Helper()
	p := probes.ByID()[id]
	if p == nil {
		t.Fatalf("no probe %s", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return probes.Run(ctx, p, liveCluster(t, l.Kubeconfig, s, 20*time.Second), s.Target)
}

func requireFacts(t *testing.T, r probes.Result, want probes.Facts) {
	t.Helper()
	for k, v := range want {
		got, ok := r.Facts[k]
		if !ok || fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("probe %s fact %s = %v (present %v), want %v\n  %s: %s", r.Probe, k, got, ok, v, r.Status, r.Summary)
		}
	}
}

// istiod starts out of cluster against the lab's API server, reads it
// (the lab's own kubernetes Service is in its registry) and serves
// /debug/syncz, empty while no proxy is connected.
func TestIstiodServesSyncz(t *testing.T) {
	_, i := istiodLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body, err := i.Get(ctx, "/debug/syncz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envoy.ParseSyncz(body); err != nil {
		t.Fatalf("syncz does not parse: %v\n%s", err, body)
	}
	if err := i.WaitKnows(ctx, []runtime.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}}}); err != nil {
		t.Fatal(err)
	}
}

// proxy-status read by the product, through pods/portforward to the
// scenario's istiod pod, from the real istiod's /debug/syncz: SYNCED while
// the sidecar ACKs, STALE once it stops ACKing and istiod pushes a change,
// and not known once it disconnects.
func TestProxyStatusFromRealIstiod(t *testing.T) {
	l, i := istiodLab(t)
	s := loadScenario(t, "healthy")
	applyToIstiod(t, l, i, s)
	sc := connectSource(t, i, s)

	synced := runProbe(t, l, s, "proxy-status")
	requireFacts(t, synced, probes.Facts{"xds_proxy_known": true, "xds_cds": "SYNCED", "xds_lds": "SYNCED", "xds_eds": "SYNCED", "xds_rds": "SYNCED", "xds_stale_types": []string{}})
	if synced.Status != probes.StatusPass {
		t.Errorf("SYNCED proxy: status %s (%s)", synced.Status, synced.Summary)
	}

	// Stuck: a new Service in the caller's namespace makes istiod push
	// every type; none is ACKed.
	if err := sc.XDS.SetACK(false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	trigger := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Target.Source.Namespace, Name: "meshlab-push-trigger"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "meshlab-push-trigger"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 9999, TargetPort: intstr.FromInt32(9999)}}},
	}
	if _, err := l.Kube.CoreV1().Services(trigger.Namespace).Create(ctx, trigger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Kube.CoreV1().Services(trigger.Namespace).Delete(context.Background(), trigger.Name, metav1.DeleteOptions{})
	})
	if err := sc.XDS.WaitFor(ctx, "a CDS push it does not ACK", func(types map[string]*XDSTypeState) bool {
		return types[ClusterType].Ignored > 0 && types[ListenerType].Ignored > 0
	}); err != nil {
		t.Fatal(err)
	}
	stale := runProbe(t, l, s, "proxy-status")
	requireFacts(t, stale, probes.Facts{"xds_proxy_known": true, "xds_cds": "STALE", "xds_lds": "STALE"})
	if types, _ := stale.Facts["xds_stale_types"].([]string); !slices.Contains(types, "CDS") || !slices.Contains(types, "LDS") {
		t.Errorf("stale types %v, want CDS and LDS among them", stale.Facts["xds_stale_types"])
	}
	if stale.Status != probes.StatusFail {
		t.Errorf("STALE proxy: status %s (%s)", stale.Status, stale.Summary)
	}

	// Gone: istiod forgets the proxy once its stream ends.
	sc.Close()
	id := s.Target.Source.Name + "." + s.Target.Source.Namespace
	for {
		body, err := i.Get(ctx, "/debug/syncz")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), id) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("istiod still lists %s after its stream ended", id)
		case <-time.After(100 * time.Millisecond):
		}
	}
	gone := runProbe(t, l, s, "proxy-status")
	requireFacts(t, gone, probes.Facts{"xds_proxy_known": false, "xds_cds": "UNKNOWN", "xds_istiod_replicas": 1, "xds_istiod_asked": 1})
	if gone.Status != probes.StatusWarn {
		t.Errorf("disconnected proxy: status %s (%s)", gone.Status, gone.Summary)
	}
}

// sidecarSource is the scenario's source pod when it has a sidecar to
// play; nil when the caller has none (its Envoy probes skip).
func sidecarSource(t *testing.T, s *recorded.Scenario) *corev1.Pod {
	t.Helper()
	if s.Target.Source == nil {
		return nil
	}
	pod := scenarioPodByRef(t, s, *s.Target.Source)
	if mesh.PodSidecar(pod) == mesh.SidecarNone {
		return nil
	}
	return pod
}

// The envoy-config and envoy-listeners probes read, through
// pods/portforward, the /config_dump and /listeners built from what the
// real istiod pushed to the scenario's source pod, and find what the
// recorded scenario's Envoy data made them find: the target's cluster,
// its TLS, outlier detection, circuit breakers and idle timeout, and the
// listener for the port. A difference is a recording that does not say
// what istiod would have generated, or a probe that reads istiod's output
// differently from the recording's.
func TestEnvoyProbesOnIstiodConfig(t *testing.T) {
	l, i := istiodLab(t)
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			s := loadScenario(t, name)
			if sidecarSource(t, s) == nil {
				t.Skipf("the source of %s has no sidecar: there is no Envoy config to read", name)
			}
			mem, err := recorded.NewCluster(s)
			if err != nil {
				t.Fatal(err)
			}
			applyToIstiod(t, l, i, s)
			connectSource(t, i, s)
			results := map[string]probes.Result{}
			for _, id := range []string{"envoy-config", "envoy-listeners"} {
				got := runProbe(t, l, s, id)
				results[id] = got
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				want := probes.Run(ctx, probes.ByID()[id], mem, s.Target)
				cancel()
				switch {
				case want.Status == probes.StatusSkipped && got.Status == probes.StatusSkipped && got.Summary == want.Summary:
					// A gateway source: envoy-listeners leaves its listeners
					// to the gateway step, on istiod's config as on the
					// recording.
					continue
				case got.Status == probes.StatusError || got.Status == probes.StatusSkipped:
					t.Fatalf("%s on istiod's config: %s: %s (the recording: %s: %s)", id, got.Status, got.Summary, want.Status, want.Summary)
				}
				for k, v := range want.Facts {
					if fmt.Sprint(got.Facts[k]) != fmt.Sprint(v) {
						t.Errorf("%s fact %s: istiod's config gives %v, the recording %v\n  istiod:    %s\n  recording: %s", id, k, got.Facts[k], v, got.Summary, want.Summary)
					}
				}
			}
			requireFacts(t, results["envoy-config"], probes.Facts{"config_cluster_found": true})
			if results["envoy-listeners"].Status != probes.StatusSkipped {
				requireFacts(t, results["envoy-listeners"], probes.Facts{"listener_found": true, "listener_virtual_outbound": true})
			}
		})
	}
}
