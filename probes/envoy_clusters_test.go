package probes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Envoy-side probes are triaged from web-7d9 (the caller) towards
// svc/orders port 8080 in shop.
var (
	evSource = cluster.PodRef{Namespace: "shop", Name: "web-7d9"}
	evTarget = cluster.Target{Namespace: "shop", Service: "orders", Port: 8080, Source: &evSource}
)

func evTestdata(t testing.TB, probe, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", probe, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// evPod is a running pod of shop, with or without an istio-proxy.
func evPod(name string, app string, sidecar bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: app}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if sidecar {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: mesh.ProxyContainer})
	}
	return p
}

func evService(ports ...int32) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.12.4", ClusterIPs: []string{"10.96.12.4"},
			Selector: map[string]string{"app": "orders"}},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: p, Protocol: corev1.ProtocolTCP})
	}
	return svc
}

// evCheck runs the shared assertions on every result: declared facts only,
// all of them on success, none on error or skip.
func evCheck(t *testing.T, p Probe, r Result) {
	t.Helper()
	if err := CheckFacts(p.Meta(), r); err != nil {
		t.Fatal(err)
	}
	switch r.Status {
	case StatusError, StatusSkipped:
		if len(r.Facts) != 0 {
			t.Fatalf("%s result carries facts: %v", r.Status, r.Facts)
		}
	default:
		for _, f := range p.Meta().Facts {
			if _, ok := r.Facts[f.Name]; !ok {
				t.Fatalf("fact %s missing from %s result", f.Name, r.Status)
			}
		}
	}
	if r.Summary == "" || strings.Contains(r.Summary, "\n") {
		t.Fatalf("summary %q is not one line", r.Summary)
	}
}

func evClustersInput(t *testing.T, stats string) envoyClustersInput {
	t.Helper()
	cs, err := envoy.ParseClusters(evTestdata(t, "envoy-clusters", "clusters.json"))
	if err != nil {
		t.Fatal(err)
	}
	in := envoyClustersInput{Clusters: cs, Stats: envoy.Stats{}}
	if stats != "" {
		in.Stats = envoy.ParseStats(evTestdata(t, "envoy-clusters", stats), nil)
	}
	return in
}

func TestEnvoyClustersEvaluate(t *testing.T) {
	p := EnvoyClustersProbe{}
	allEjected := envoyClustersInput{Clusters: []envoy.Cluster{{Name: "outbound|8080||orders.shop.svc.cluster.local", Hosts: []envoy.Host{
		{Address: "10.0.0.1:8080", FailedOutlierCheck: true, EDSHealth: "HEALTHY"},
		{Address: "10.0.0.2:8080", FailedOutlierCheck: true, EDSHealth: "HEALTHY"},
	}}}}
	// Every route goes to subset v1: its one host is ejected there, while
	// the default cluster, which nothing routes to, still has both healthy.
	subsetEjected := envoyClustersInput{Clusters: []envoy.Cluster{
		{Name: "outbound|8080||orders.shop.svc.cluster.local", Hosts: []envoy.Host{
			{Address: "10.0.0.1:8080", EDSHealth: "HEALTHY"},
			{Address: "10.0.0.2:8080", EDSHealth: "HEALTHY"},
		}},
		{Name: "outbound|8080|v1|orders.shop.svc.cluster.local", Hosts: []envoy.Host{
			{Address: "10.0.0.1:8080", FailedOutlierCheck: true, EDSHealth: "HEALTHY"},
		}},
	}}
	cases := []struct {
		name   string
		target cluster.Target
		in     envoyClustersInput
		status Status
		facts  Facts
		inSum  []string
	}{
		{
			"mixed health with stats", evTarget, evClustersInput(t, "stats.txt"), StatusWarn,
			Facts{
				"envoy_cluster_present": true,
				"envoy_clusters":        []string{"outbound|8080_v2", "outbound|8080__"}, // replaced below
				"envoy_hosts_total":     4, "envoy_hosts_healthy": 1, "envoy_hosts_outlier_ejected": 1,
				"envoy_hosts_active_hc_failed": 1, "envoy_hosts_eds_unhealthy": 1,
				"envoy_empty_clusters":       []string{"outbound|8080|v2|orders.shop.svc.cluster.local"},
				"envoy_clusters_all_ejected": []string{},
				"envoy_rq_pending_overflow":  218, "envoy_cx_overflow": 17, "envoy_ejections_active": 1, "envoy_cx_connect_fail": 11,
				"envoy_cluster_stats_present": true,
			},
			[]string{"1/4 hosts healthy", "1 outlier-ejected", "no hosts in outbound|8080|v2|", "upstream_rq_pending_overflow 218"},
		},
		{
			// Istio's default stats inclusion: counters unknown, host data used.
			"default stats", evTarget, evClustersInput(t, "stats_default.txt"), StatusWarn,
			Facts{"envoy_rq_pending_overflow": 0, "envoy_cx_overflow": 0, "envoy_ejections_active": 1, "envoy_cx_connect_fail": 9, "envoy_cluster_stats_present": false},
			[]string{"overflow counters unknown"},
		},
		{
			"/stats unreadable", evTarget, func() envoyClustersInput {
				in := evClustersInput(t, "")
				in.StatsProblem = "cannot read Envoy /stats of shop/web-7d9: no data recorded"
				return in
			}(), StatusWarn,
			Facts{"envoy_cluster_stats_present": false, "envoy_hosts_total": 4},
			[]string{"overflow counters unknown: cannot read Envoy /stats"},
		},
		{
			"every port", cluster.Target{Namespace: "shop", Service: "orders", Source: &evSource}, evClustersInput(t, "stats.txt"), StatusWarn,
			Facts{"envoy_hosts_total": 5, "envoy_hosts_healthy": 2, "envoy_cx_overflow": 18},
			nil,
		},
		{
			"no cluster for the target", cluster.Target{Namespace: "shop", Service: "payments", Port: 8080, Source: &evSource}, evClustersInput(t, "stats.txt"), StatusFail,
			Facts{"envoy_cluster_present": false, "envoy_clusters": []string{}, "envoy_hosts_total": 0, "envoy_cluster_stats_present": false},
			[]string{"no outbound cluster for payments.shop.svc.cluster.local port 8080"},
		},
		{
			"every host ejected", evTarget, allEjected, StatusFail,
			Facts{"envoy_hosts_total": 2, "envoy_hosts_healthy": 0, "envoy_hosts_outlier_ejected": 2, "envoy_ejections_active": 2,
				"envoy_clusters_all_ejected": []string{"outbound|8080||orders.shop.svc.cluster.local"}},
			[]string{"0/2 hosts healthy", "(2 outlier-ejected)"},
		},
		{
			"one subset all ejected", evTarget, subsetEjected, StatusFail,
			Facts{"envoy_hosts_total": 3, "envoy_hosts_healthy": 2, "envoy_hosts_outlier_ejected": 1,
				"envoy_clusters_all_ejected": []string{"outbound|8080|v1|orders.shop.svc.cluster.local"}},
			[]string{"2/3 hosts healthy", "every host ejected in outbound|8080|v1|orders.shop.svc.cluster.local"},
		},
	}
	cases[0].facts["envoy_clusters"] = []string{"outbound|8080|v2|orders.shop.svc.cluster.local", "outbound|8080||orders.shop.svc.cluster.local"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := evaluateEnvoyClusters(c.target, c.in)
			r.Probe = p.Meta().ID
			evCheck(t, p, r)
			if r.Status != c.status {
				t.Errorf("status %s, want %s: %s", r.Status, c.status, r.Summary)
			}
			for k, want := range c.facts {
				if !reflect.DeepEqual(r.Facts[k], want) {
					t.Errorf("%s = %#v, want %#v", k, r.Facts[k], want)
				}
			}
			for _, s := range c.inSum {
				if !strings.Contains(r.Summary, s) {
					t.Errorf("summary %q lacks %q", r.Summary, s)
				}
			}
		})
	}
}

func TestEnvoyClustersEvidence(t *testing.T) {
	r := evaluateEnvoyClusters(evTarget, evClustersInput(t, "stats.txt"))
	if len(r.Evidence.Rows) != 5 || r.Evidence.Rows[0][1] != "(no hosts)" || r.Evidence.Rows[2][3] != "failed_outlier_check" {
		t.Errorf("rows %v", r.Evidence.Rows)
	}
	for _, want := range []string{
		"outbound|8080||orders.shop.svc.cluster.local::10.244.2.21:8080::health_flags::/failed_outlier_check",
		"cluster.outbound|8080||orders.shop.svc.cluster.local.upstream_rq_pending_overflow: 213",
	} {
		if !strings.Contains(r.Evidence.Raw, want) {
			t.Errorf("raw lacks %q:\n%s", want, r.Evidence.Raw)
		}
	}
	if strings.Contains(r.Evidence.Raw, "shop-canary") || strings.Contains(r.Evidence.Raw, "assignment_stale") {
		t.Errorf("raw has another host's or zero stats:\n%s", r.Evidence.Raw)
	}
	wantCmd := "kubectl exec -n shop web-7d9 -c istio-proxy -- pilot-agent request GET 'clusters?format=json'"
	if r.Commands[0] != wantCmd || !strings.Contains(strings.Join(r.Commands, "\n"), "istioctl proxy-config endpoint web-7d9.shop --cluster 'outbound|8080||orders.shop.svc.cluster.local'") {
		t.Errorf("commands %q", r.Commands)
	}
}

func TestEnvoyClustersThroughClusterReads(t *testing.T) {
	p := EnvoyClustersProbe{}
	ctx := context.Background()
	setup := func() *fakeCluster {
		f := newFakeCluster(t, evPod("web-7d9", "web", true), evService(8080))
		f.envoy[envoyKey(evSource, "/clusters?format=json")] = evTestdata(t, "envoy-clusters", "clusters.json")
		f.envoy[envoyKey(evSource, "/stats")] = evTestdata(t, "envoy-clusters", "stats.txt")
		return f
	}

	r := Run(ctx, p, setup(), evTarget)
	evCheck(t, p, r)
	if r.Status != StatusWarn || r.Facts["envoy_rq_pending_overflow"] != 218 || r.Facts["envoy_hosts_total"] != 4 {
		t.Errorf("%s %s %v", r.Status, r.Summary, r.Facts)
	}

	cases := []struct {
		name   string
		mutate func(*fakeCluster)
		target cluster.Target
		status Status
		inSum  string
	}{
		{"no source", nil, cluster.Target{Namespace: "shop", Service: "orders", Port: 8080}, StatusSkipped, envoyadmin.NoSourceSummary},
		{"source without sidecar", func(f *fakeCluster) {
			_ = f.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), evPod("web-7d9", "web", false), "shop")
		}, evTarget, StatusSkipped, "has no istio-proxy"},
		{"source pod gone", func(f *fakeCluster) {
			_ = f.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "shop", "web-7d9")
		}, evTarget, StatusError, "cannot get source pod shop/web-7d9: not found"},
		{"envoy admin unreachable", func(f *fakeCluster) {
			f.errs["envoy:"+envoyKey(evSource, "/clusters?format=json")] = &cluster.UnreachableError{What: "Envoy admin of shop/web-7d9", Err: errors.New("port-forward: connection refused")}
		}, evTarget, StatusError, "Envoy admin of shop/web-7d9 unreachable"},
		{"malformed clusters JSON", func(f *fakeCluster) {
			f.envoy[envoyKey(evSource, "/clusters?format=json")] = []byte(`{"cluster_statuses": [{"name": "outbound|8080||orders`)
		}, evTarget, StatusError, "cannot parse Envoy /clusters?format=json of shop/web-7d9"},
		{"stats unreachable keeps host health", func(f *fakeCluster) {
			f.errs["envoy:"+envoyKey(evSource, "/stats")] = &cluster.UnreachableError{What: "Envoy admin of shop/web-7d9", Err: errors.New("EOF")}
		}, evTarget, StatusWarn, "overflow counters unknown: cannot read Envoy /stats"},
		{"RBAC on pods does not stop the admin read", func(f *fakeCluster) { f.forbid("get", "pods") }, evTarget, StatusWarn, "1/4 hosts healthy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := setup()
			if c.mutate != nil {
				c.mutate(f)
			}
			r := Run(ctx, p, f, c.target)
			evCheck(t, p, r)
			if r.Status != c.status || !strings.Contains(r.Summary, c.inSum) {
				t.Errorf("%s %q, want %s containing %q", r.Status, r.Summary, c.status, c.inSum)
			}
		})
	}
}

// The health flags of active health checking and the max-requests
// overflow of newer Envoys, through the probe (probes/parse/envoy/testdata:
// every host state, and the /stats of Envoy 1.38+ that counts max-requests
// refusals only in upstream_rq_active_overflow). Pending, excluded and
// timing-out hosts take no request; degraded ones are not healthy but
// still take requests, so a cluster of them is no 503 UH.
func TestEnvoyClustersHealthFlagsAndActiveOverflow(t *testing.T) {
	for _, file := range []string{"clusters_health_flags.txt", "clusters_health_flags.json"} {
		data, err := os.ReadFile(filepath.Join("parse", "envoy", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		cs, err := envoy.ParseClusters(data)
		if err != nil {
			t.Fatal(err)
		}
		stats, err := os.ReadFile(filepath.Join("parse", "envoy", "testdata", "stats_active_overflow.txt"))
		if err != nil {
			t.Fatal(err)
		}
		r := evaluateEnvoyClusters(evTarget, envoyClustersInput{Clusters: cs, Stats: envoy.ParseStats(stats, targetStats(evTarget))})
		wantDegraded := 2
		if strings.HasSuffix(file, ".json") {
			wantDegraded = 3 // failed_degraded_outlier_detection has no text name
		}
		if r.Facts["envoy_hosts_healthy"] != 1 || r.Facts["envoy_hosts_degraded"] != wantDegraded || r.Facts["envoy_hosts_active_hc_failed"] != 6 {
			t.Errorf("%s: healthy %v degraded %v out by active hc %v, want 1 %d 6", file, r.Facts["envoy_hosts_healthy"], r.Facts["envoy_hosts_degraded"], r.Facts["envoy_hosts_active_hc_failed"], wantDegraded)
		}
		if r.Facts["envoy_rq_active_overflow"] != 57 || r.Facts["envoy_rq_overflow"] != 57 || r.Facts["envoy_rq_pending_overflow"] != 0 {
			t.Errorf("%s: overflow pending %v active %v sum %v, want 0 57 57", file, r.Facts["envoy_rq_pending_overflow"], r.Facts["envoy_rq_active_overflow"], r.Facts["envoy_rq_overflow"])
		}
		if err := CheckFacts(EnvoyClustersProbe{}.Meta(), r); err != nil {
			t.Fatal(err)
		}
	}
}
