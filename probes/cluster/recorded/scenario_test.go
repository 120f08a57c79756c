package recorded

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// TestEmbeddedScenarios loads every shipped scenario and checks that its
// parts refer to each other: the target and source exist, every recorded
// Envoy dump and log belongs to a pod and container the manifests define,
// and the expected causes are catalogue IDs.
func TestEmbeddedScenarios(t *testing.T) {
	names, err := Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no embedded scenarios")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, err := Load(assets.FS, name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Title == "" || s.Summary == "" || s.Description == "" || s.ServerVersion == "" || s.Context == "" {
				t.Errorf("scenario.yaml lacks title, summary, description, serverVersion or context: %+v", s)
			}
			for _, id := range s.Expect {
				if !slices.Contains(assets.Causes, id) {
					t.Errorf("expects unknown cause %q", id)
				}
			}
			pods := map[cluster.PodRef]*corev1.Pod{}
			services := map[string]*corev1.Service{}
			namespaces := map[string]bool{}
			for _, obj := range s.Objects {
				switch o := obj.(type) {
				case *corev1.Pod:
					pods[cluster.PodRef{Namespace: o.Namespace, Name: o.Name}] = o
					if o.Status.Phase == "" || len(o.Status.Conditions) == 0 || o.Status.PodIP == "" {
						t.Errorf("pod %s/%s has no status as a kubelet reports it", o.Namespace, o.Name)
					}
				case *corev1.Service:
					services[o.Namespace+"/"+o.Name] = o
				case *corev1.Namespace:
					namespaces[o.Name] = true
				}
			}
			for ref, p := range pods {
				if !namespaces[ref.Namespace] {
					t.Errorf("pod %s: namespace %s not in the manifests", ref, ref.Namespace)
				}
				for _, cs := range append(p.Status.ContainerStatuses, p.Status.InitContainerStatuses...) {
					if cs.State.Running == nil && cs.State.Terminated == nil && cs.State.Waiting == nil {
						t.Errorf("pod %s container %s has no state", ref, cs.Name)
					}
				}
			}
			if services[s.Target.Namespace+"/"+s.Target.Service] == nil {
				t.Errorf("target service %s not in the manifests", s.Target)
			}
			if src := s.Target.Source; src != nil && pods[*src] == nil {
				t.Errorf("source pod %s not in the manifests", src)
			}
			for ref, paths := range s.Envoy {
				p := pods[ref]
				if p == nil {
					t.Errorf("Envoy data for unknown pod %s", ref)
					continue
				}
				if mesh.PodSidecar(p) == mesh.SidecarNone {
					t.Errorf("Envoy data for %s, which has no sidecar", ref)
				}
				for path := range paths {
					path, _, _ = strings.Cut(path, readSuffix)
					if _, ok := envoyFiles[path]; !ok {
						t.Errorf("Envoy data for %s at unexpected path %s", ref, path)
					}
				}
			}
			for key := range s.Logs {
				p := pods[key.Pod]
				if p == nil {
					t.Errorf("log for unknown pod %s", key.Pod)
					continue
				}
				if !hasContainer(p, key.Container) {
					t.Errorf("log for %s names container %s, which the pod does not have", key.Pod, key.Container)
				}
				if key.Previous {
					cs, _ := mesh.ContainerStatus(p, key.Container)
					if cs.RestartCount == 0 || cs.LastTerminationState.Terminated == nil {
						t.Errorf("previous log for %s/%s, which never restarted", key.Pod, key.Container)
					}
				}
			}
			c, err := NewCluster(s)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := c.GetService(ctx, s.Target.Namespace, s.Target.Service); err != nil {
				t.Errorf("target through the cluster: %v", err)
			}
			if v, err := c.ServerVersion(ctx); err != nil || v != s.ServerVersion {
				t.Errorf("ServerVersion = %q, %v; want %q", v, err, s.ServerVersion)
			}
		})
	}
}

const fixtureScenario = `
name: tiny
title: Tiny
description: one pod
context: test
serverVersion: v1.29.6-gke.1326000
target:
  namespace: shop
  service: orders
  port: 8080
  source: {namespace: shop, name: web-1}
expect: [endpoints.none-ready]
`

const fixtureManifests = `
apiVersion: v1
kind: Namespace
metadata:
  name: shop
  labels: {istio-injection: enabled}
---
apiVersion: v1
kind: Namespace
metadata: {name: istio-system}
---
# the control plane
apiVersion: v1
kind: Pod
metadata:
  name: istiod-1
  namespace: istio-system
  labels: {app: istiod}
spec:
  containers:
  - name: discovery
    image: docker.io/istio/pilot:1.24.2
status:
  phase: Running
---
apiVersion: v1
kind: Service
metadata: {name: orders, namespace: shop}
spec:
  selector: {app: orders}
  ports: [{name: http, port: 8080, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata:
  name: orders-1
  namespace: shop
  labels: {app: orders, version: v1}
spec:
  containers:
  - {name: orders, image: orders:1}
  - {name: istio-proxy, image: docker.io/istio/proxyv2:1.24.2}
status:
  phase: Running
  podIP: 10.244.1.17
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  labels: {app: web}
spec:
  containers:
  - {name: web, image: web:1}
  - {name: istio-proxy, image: docker.io/istio/proxyv2:1.24.2}
---
apiVersion: v1
kind: Pod
metadata:
  name: legacy-1
  namespace: shop
  labels: {app: orders, version: v0}
spec:
  containers:
  - {name: legacy, image: legacy:1}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: orders-abcde
  namespace: shop
  labels: {kubernetes.io/service-name: orders}
addressType: IPv4
endpoints:
- addresses: [10.244.1.17]
  conditions: {ready: false, serving: false, terminating: false}
  targetRef: {kind: Pod, name: orders-1, namespace: shop}
ports: [{name: http, port: 8080, protocol: TCP}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: orders, namespace: shop}
spec:
  host: orders.shop.svc.cluster.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 5, baseEjectionTime: 3m}
  subsets:
  - name: v1
    labels: {version: v1}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: istio-system}
spec:
  mtls: {mode: STRICT}
`

func fixtureFS(manifests string) fstest.MapFS {
	return fstest.MapFS{
		"scenarios/tiny/scenario.yaml":                           {Data: []byte(fixtureScenario)},
		"scenarios/tiny/manifests/all.yaml":                      {Data: []byte(manifests)},
		"scenarios/tiny/manifests/notes.txt":                     {Data: []byte("not YAML: ignored")},
		"scenarios/tiny/envoy/shop/web-1/clusters.json":          {Data: []byte(`{"cluster_statuses":[]}`)},
		"scenarios/tiny/envoy/shop/web-1/stats.txt":              {Data: []byte("server.live: 1\n")},
		"scenarios/tiny/envoy/shop/web-1/listeners.json":         {Data: []byte(`{"listener_statuses":[]}`)},
		"scenarios/tiny/envoy/shop/web-1/config_dump.json":       {Data: []byte(`{"configs":[]}`)},
		"scenarios/tiny/envoy/shop/web-1/stats_prometheus.txt":   {Data: []byte("istio_requests_total 10\n")},
		"scenarios/tiny/envoy/shop/web-1/stats_prometheus.2.txt": {Data: []byte("istio_requests_total 25\n")},
		"scenarios/tiny/logs/shop/web-1/istio-proxy.log":         {Data: []byte(proxyLog)},
		"scenarios/tiny/logs/shop/orders-1/orders.log":           {Data: []byte("2026-12-02T03:00:13.000Z INFO listening on :8080\n")},
		"scenarios/tiny/logs/shop/orders-1/orders.previous.log":  {Data: []byte("2026-12-02T03:00:02.304Z ERROR dial tcp 10.96.0.20:5432: connect: connection refused\n")},
		"scenarios/tiny/istiod/syncz.json":                       {Data: []byte(`[{"proxy":"web-1.shop"}]`)},
		"scenarios/not-a-scenario/README":                        {Data: []byte("no scenario.yaml here")},
		"runbooks/503.yaml":                                      {Data: []byte("id: x")},
	}
}

// proxyLog spans 40 minutes: Since 30m must drop the first block (and its
// unstamped continuation line) and keep the rest.
const proxyLog = `2026-12-02T02:40:00.000000Z	info	Envoy proxy is ready
  continuation of an old line
[2026-12-02T03:10:00.000Z] "GET /a HTTP/1.1" 200 - via_upstream - "-" 0 1 2 1 "-" "curl" "id1" "orders:8080" "10.244.1.17:8080" outbound|8080||orders.shop.svc.cluster.local - 10.96.14.20:8080 10.244.0.9:1 - default
[2026-12-02T03:20:00.000Z] "GET /b HTTP/1.1" 503 UH no_healthy_upstream - "-" 0 19 0 - "-" "curl" "id2" "orders:8080" "-" outbound|8080||orders.shop.svc.cluster.local - 10.96.14.20:8080 10.244.0.9:2 - default
`

func loadFixture(t *testing.T) (*Scenario, *Cluster) {
	t.Helper()
	s, err := Load(fixtureFS(fixtureManifests), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	c, err := newCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func TestNamesSkipsFoldersWithoutScenario(t *testing.T) {
	for _, fsys := range []fstest.MapFS{fixtureFS(""), subFS(fixtureFS(""), "scenarios/")} {
		names, err := Names(fsys)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names, []string{"tiny"}) {
			t.Errorf("Names = %v, want [tiny]", names)
		}
	}
}

func subFS(m fstest.MapFS, prefix string) fstest.MapFS {
	out := fstest.MapFS{}
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out[strings.TrimPrefix(k, prefix)] = v
		}
	}
	return out
}

func TestLoadReadsEveryPart(t *testing.T) {
	s, _ := loadFixture(t)
	if s.Target.Source == nil || *s.Target.Source != (cluster.PodRef{Namespace: "shop", Name: "web-1"}) || s.Target.Port != 8080 {
		t.Errorf("target = %+v", s.Target)
	}
	if !slices.Equal(s.Expect, []string{"endpoints.none-ready"}) {
		t.Errorf("expect = %v", s.Expect)
	}
	if len(s.Objects) != 10 {
		t.Errorf("decoded %d objects, want 10", len(s.Objects))
	}
	web := cluster.PodRef{Namespace: "shop", Name: "web-1"}
	if len(s.Envoy[web]) != 6 || string(s.Envoy[web]["/stats"]) != "server.live: 1\n" {
		t.Errorf("envoy data = %v", s.Envoy[web])
	}
	if _, ok := s.Logs[LogKey{Pod: cluster.PodRef{Namespace: "shop", Name: "orders-1"}, Container: "orders", Previous: true}]; !ok {
		t.Error("previous log not loaded")
	}
	if _, ok := s.Istiod[IstiodSyncz]; !ok {
		t.Error("syncz not loaded")
	}
}

func TestLoadRejects(t *testing.T) {
	cases := map[string]struct {
		edit func(fstest.MapFS)
		want string
	}{
		"unknown name": {func(fstest.MapFS) {}, `no scenario "other"`},
		"misspelt pod field": {func(m fstest.MapFS) {
			m["scenarios/tiny/manifests/all.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(fixtureManifests, "podIP:", "podIp:", 1))}
		}, `unknown field "status.podIp"`},
		"misspelt Istio spec field": {func(m fstest.MapFS) {
			m["scenarios/tiny/manifests/all.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(fixtureManifests, "subsets:", "subset:", 1))}
		}, `unknown field "subset"`},
		"unknown kind": {func(m fstest.MapFS) {
			m["scenarios/tiny/manifests/all.yaml"] = &fstest.MapFile{Data: []byte(fixtureManifests + "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")}
		}, "all.yaml document 11: example.com/v1 Widget"},
		"stray Envoy file": {func(m fstest.MapFS) {
			m["scenarios/tiny/envoy/shop/web-1/server_info.json"] = &fstest.MapFile{Data: []byte("{}")}
		}, "not a recorded admin response"},
		"header naming another scenario": {func(m fstest.MapFS) {
			m["scenarios/tiny/scenario.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(fixtureScenario, "name: tiny", "name: small", 1))}
		}, `names it "small"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fsys := fixtureFS(fixtureManifests)
			tc.edit(fsys)
			scenario := "tiny"
			if name == "unknown name" {
				scenario = "other"
			}
			_, err := Load(fsys, scenario)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestClusterReadsThroughObjectsReader checks the fake clientsets behave as
// the probes need: label-selector lists, Istio CRD lists by their resource
// names, EndpointSlices by service label, typed not-found errors.
func TestClusterReadsThroughObjectsReader(t *testing.T) {
	_, c := loadFixture(t)
	ctx := context.Background()

	pods, err := c.ListPods(ctx, "shop", map[string]string{"app": "orders"})
	if err != nil || len(pods) != 2 {
		t.Fatalf("ListPods(app=orders) = %d pods, %v; want orders-1 and legacy-1", len(pods), err)
	}
	pods, err = c.ListPods(ctx, "shop", map[string]string{"app": "orders", "version": "v1"})
	if err != nil || len(pods) != 1 || pods[0].Name != "orders-1" {
		t.Errorf("ListPods(app=orders,version=v1) = %v, %v", names(pods), err)
	}
	if pods, _ := c.ListPods(ctx, "shop", nil); len(pods) != 0 {
		t.Errorf("empty selector listed %d pods", len(pods))
	}
	slicesGot, err := c.EndpointSlices(ctx, "shop", "orders")
	if err != nil || len(slicesGot) != 1 || *slicesGot[0].Endpoints[0].Conditions.Ready {
		t.Errorf("EndpointSlices = %+v, %v", slicesGot, err)
	}
	drs, err := c.DestinationRules(ctx, "shop")
	if err != nil || len(drs) != 1 || drs[0].Spec.GetSubsets()[0].GetLabels()["version"] != "v1" ||
		drs[0].Spec.GetTrafficPolicy().GetOutlierDetection().GetBaseEjectionTime().AsDuration() != 3*time.Minute {
		t.Errorf("DestinationRules = %v, %v", drs, err)
	}
	pas, err := c.PeerAuthentications(ctx, "istio-system")
	if err != nil || len(pas) != 1 || pas[0].Spec.GetMtls().GetMode().String() != "STRICT" {
		t.Errorf("PeerAuthentications = %v, %v", pas, err)
	}
	if vss, err := c.VirtualServices(ctx, "shop"); err != nil || len(vss) != 0 {
		t.Errorf("VirtualServices = %v, %v", vss, err)
	}
	ns, err := c.GetNamespace(ctx, "shop")
	if err != nil || ns.Labels["istio-injection"] != "enabled" {
		t.Errorf("GetNamespace = %v, %v", ns, err)
	}
	if _, err := c.GetService(ctx, "shop", "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("GetService(missing) error = %v, want NotFound", err)
	}
	if _, err := c.GetConfigMap(ctx, "istio-system", "istio"); !apierrors.IsNotFound(err) {
		t.Errorf("absent mesh config error = %v, want NotFound", err)
	}
	if v, err := c.ServerVersion(ctx); err != nil || v != "v1.29.6-gke.1326000" {
		t.Errorf("ServerVersion = %q, %v", v, err)
	}
	if info := c.Info(); info.Context != "test" || info.ControlPlaneNamespace != "istio-system" || info.Server == "" {
		t.Errorf("Info = %+v", info)
	}
}

func TestClusterEnvoyAdmin(t *testing.T) {
	_, c := loadFixture(t)
	ctx := context.Background()
	web := cluster.PodRef{Namespace: "shop", Name: "web-1"}
	for _, path := range []string{"/stats", "/stats?filter=cluster", "/clusters?format=json", "/listeners?format=json", "/config_dump"} {
		if data, err := c.EnvoyAdmin(ctx, web, path); err != nil || len(data) == 0 {
			t.Errorf("EnvoyAdmin(%s) = %q, %v", path, data, err)
		}
	}
	var unreachable *cluster.UnreachableError
	_, err := c.EnvoyAdmin(ctx, cluster.PodRef{Namespace: "shop", Name: "orders-1"}, "/clusters?format=json")
	if !errors.As(err, &unreachable) || !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("EnvoyAdmin without recording: %v, want UnreachableError wrapping ErrNotFound", err)
	}
	if got := cluster.AccessProblem("read Envoy clusters", err); !strings.Contains(got, "no data recorded") && !strings.Contains(got, "not found") {
		t.Errorf("AccessProblem = %q", got)
	}
	_, err = c.EnvoyAdmin(ctx, cluster.PodRef{Namespace: "shop", Name: "legacy-1"}, "/stats")
	if !errors.As(err, &unreachable) || !strings.Contains(err.Error(), "no istio-proxy") {
		t.Errorf("EnvoyAdmin on a pod without sidecar: %v", err)
	}
	if _, err := c.EnvoyAdmin(ctx, cluster.PodRef{Namespace: "shop", Name: "gone"}, "/stats"); !apierrors.IsNotFound(err) {
		t.Errorf("EnvoyAdmin on an absent pod: %v, want NotFound", err)
	}
	// Counters are recorded twice; a third read still sees the second.
	for i, want := range []string{"10", "25", "25"} {
		data, err := c.EnvoyAdmin(ctx, web, "/stats/prometheus")
		if err != nil || !strings.Contains(string(data), want) {
			t.Errorf("read %d of /stats/prometheus = %q, %v; want %s", i+1, data, err, want)
		}
	}
	data, _ := c.EnvoyAdmin(ctx, web, "/stats")
	data[0] = 'X'
	if again, _ := c.EnvoyAdmin(ctx, web, "/stats"); again[0] == 'X' {
		t.Error("EnvoyAdmin returned the recording itself: a caller's edit leaked into the scenario")
	}
}

func TestClusterLogs(t *testing.T) {
	_, c := loadFixture(t)
	ctx := context.Background()
	web := cluster.PodRef{Namespace: "shop", Name: "web-1"}
	orders := cluster.PodRef{Namespace: "shop", Name: "orders-1"}

	all, err := c.Logs(ctx, web, cluster.LogOptions{Container: mesh.ProxyContainer})
	if err != nil || string(all) != proxyLog {
		t.Fatalf("whole log = %q, %v", all, err)
	}
	// The scenario's newest line is 03:20; Since 30m starts at 02:50.
	recent, _ := c.Logs(ctx, web, cluster.LogOptions{Container: mesh.ProxyContainer, Since: 30 * time.Minute})
	if strings.Contains(string(recent), "Envoy proxy is ready") || strings.Contains(string(recent), "continuation") ||
		!strings.Contains(string(recent), `"GET /a`) || !strings.Contains(string(recent), `"GET /b`) {
		t.Errorf("Since 30m kept %q", recent)
	}
	last, _ := c.Logs(ctx, web, cluster.LogOptions{Container: mesh.ProxyContainer, Since: 5 * time.Minute})
	if strings.Contains(string(last), `"GET /a`) || !strings.Contains(string(last), `"GET /b`) {
		t.Errorf("Since 5m kept %q", last)
	}
	head, _ := c.Logs(ctx, web, cluster.LogOptions{Container: mesh.ProxyContainer, LimitBytes: 20})
	if string(head) != proxyLog[:20] {
		t.Errorf("LimitBytes 20 = %q", head)
	}
	prev, err := c.Logs(ctx, orders, cluster.LogOptions{Container: "orders", Previous: true})
	if err != nil || !strings.Contains(string(prev), "connection refused") {
		t.Errorf("previous log = %q, %v", prev, err)
	}
	if _, err := c.Logs(ctx, orders, cluster.LogOptions{Container: "nope"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unknown container: %v, want BadRequest", err)
	}
	if _, err := c.Logs(ctx, orders, cluster.LogOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("no container on a two-container pod: %v, want BadRequest", err)
	}
	if _, err := c.Logs(ctx, cluster.PodRef{Namespace: "shop", Name: "legacy-1"}, cluster.LogOptions{Container: mesh.ProxyContainer}); !apierrors.IsBadRequest(err) {
		t.Errorf("istio-proxy log of a pod without sidecar: %v, want BadRequest", err)
	}
}

func TestClusterIstiod(t *testing.T) {
	_, c := loadFixture(t)
	ctx := context.Background()
	if data, err := c.Istiod(ctx, "", IstiodSyncz); err != nil || !strings.Contains(string(data), "web-1.shop") {
		t.Errorf("syncz = %q, %v", data, err)
	}
	if _, err := c.Istiod(ctx, "", "/debug/configz"); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("unrecorded istiod path: %v", err)
	}
	s, err := Load(fixtureFS(strings.Replace(fixtureManifests, "labels: {app: istiod}", "labels: {app: other}", 1)), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := NewCluster(s)
	var unreachable *cluster.UnreachableError
	if _, err := c2.Istiod(ctx, "", IstiodSyncz); !errors.As(err, &unreachable) || !strings.Contains(err.Error(), "no Running istiod pod (app=istiod) in istio-system") {
		t.Errorf("Istiod without an istiod pod: %v", err)
	}
}

func TestClusterHonoursCancelledContext(t *testing.T) {
	_, c := loadFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	web := cluster.PodRef{Namespace: "shop", Name: "web-1"}
	if _, err := c.EnvoyAdmin(ctx, web, "/stats"); !errors.Is(err, context.Canceled) {
		t.Errorf("EnvoyAdmin: %v", err)
	}
	if _, err := c.Logs(ctx, web, cluster.LogOptions{Container: mesh.ProxyContainer}); !errors.Is(err, context.Canceled) {
		t.Errorf("Logs: %v", err)
	}
	if _, err := c.Istiod(ctx, "", IstiodSyncz); !errors.Is(err, context.Canceled) {
		t.Errorf("Istiod: %v", err)
	}
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
