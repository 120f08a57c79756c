package bugreport

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
)

// realworld is public Envoy output kept outside the repository
// (../shared/fixtures/realworld/README.md), read in place.
const realworld = "../../../../shared/fixtures/realworld"

// Real /clusters text from a sidecar (istio/istio#6085) reads as the JSON
// form would: the same hosts, health, weight and counters.
func TestClustersTextFromARealSidecar(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(realworld, "clusters_text/istio6085_plain_clusters.txt"))
	if err != nil {
		t.Skipf("fixture not available: %v", err)
	}
	j, err := clustersJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := envoy.ParseClusters(j)
	if err != nil {
		t.Fatalf("converted JSON does not parse: %v\n%s", err, j)
	}
	if len(clusters) != 1 || clusters[0].Name != "outbound|9000||cloudspidergateway.cloudspider.svc.cluster.local" || len(clusters[0].Hosts) != 2 {
		t.Fatalf("clusters = %+v", clusters)
	}
	h := clusters[0].Hosts[1]
	if h.Address != "10.244.25.4:9000" || !h.Healthy() || h.Weight != 1 || h.Stats["rq_error"] != 2 || h.Stats["cx_total"] != 2990 || h.Stats["rq_success"] != 16921 {
		t.Errorf("host = %+v", h)
	}
	if _, ok := h.Stats["region"]; ok {
		t.Error("locality read as a counter")
	}
}

// Every health flag Envoy's text names, cluster-wide lines, IPv6 and
// internal addresses.
func TestClustersTextFlagsAndAddresses(t *testing.T) {
	text := `outbound|8080||orders.shop.svc.cluster.local::observability_name::outbound|8080||orders.shop.svc.cluster.local
outbound|8080||orders.shop.svc.cluster.local::default_priority::max_connections::1
outbound|8080||orders.shop.svc.cluster.local::outlier::success_rate_average::-1
outbound|8080||orders.shop.svc.cluster.local::added_via_api::true
outbound|8080||orders.shop.svc.cluster.local::10.244.1.17:8080::cx_connect_fail::3
outbound|8080||orders.shop.svc.cluster.local::10.244.1.17:8080::health_flags::/failed_outlier_check
outbound|8080||orders.shop.svc.cluster.local::[fd00::12]:8080::health_flags::/failed_eds_health/pending_dynamic_removal
outbound|8080||orders.shop.svc.cluster.local::[fd00::12]:8080::weight::2
outbound|8080||orders.shop.svc.cluster.local::10.244.1.19:8080::health_flags::/failed_active_hc
outbound|8080||orders.shop.svc.cluster.local::10.244.1.20:8080::health_flags::/eds_status_draining
outbound|8080||orders.shop.svc.cluster.local::10.244.1.21:8080::health_flags::healthy
inbound-vip|8080|http|orders.shop.svc.cluster.local::envoy://connect_originate/10.244.1.17:8080::health_flags::healthy
`
	j, err := clustersJSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := envoy.ParseClusters(j)
	if err != nil {
		t.Fatalf("%v\n%s", err, j)
	}
	if len(clusters) != 2 || !clusters[0].AddedViaAPI || len(clusters[0].Hosts) != 5 {
		t.Fatalf("clusters = %+v", clusters)
	}
	hosts := clusters[0].Hosts
	want := []struct {
		addr    string
		healthy bool
		check   func(envoy.Host) bool
	}{
		{"10.244.1.17:8080", false, func(h envoy.Host) bool { return h.FailedOutlierCheck && h.Stats["cx_connect_fail"] == 3 }},
		{"[fd00::12]:8080", false, func(h envoy.Host) bool { return h.EDSHealth == "UNHEALTHY" && h.PendingRemoval && h.Weight == 2 }},
		{"10.244.1.19:8080", false, func(h envoy.Host) bool { return h.FailedActiveHealthCheck }},
		{"10.244.1.20:8080", false, func(h envoy.Host) bool { return h.EDSHealth == "DRAINING" }},
		{"10.244.1.21:8080", true, func(h envoy.Host) bool { return h.EDSHealth == "UNKNOWN" }},
	}
	for i, w := range want {
		h := hosts[i]
		if h.Address != w.addr || h.Healthy() != w.healthy || !w.check(h) {
			t.Errorf("host %d = %+v, want %s healthy=%v", i, h, w.addr, w.healthy)
		}
	}
	if a := clusters[1].Hosts[0].Address; a != "envoy://connect_originate" {
		t.Errorf("internal address = %q", a)
	}
	if _, err := clustersJSON([]byte("not::a")); err == nil {
		t.Error("a line with two fields: no error")
	}
	if j, _ := clustersJSON([]byte(` {"cluster_statuses":[]}`)); string(j) != ` {"cluster_statuses":[]}` {
		t.Errorf("JSON is not passed through: %s", j)
	}
}

func TestListenersText(t *testing.T) {
	j, err := listenersJSON([]byte("virtualOutbound::0.0.0.0:15001\n0.0.0.0_8080::0.0.0.0:8080\n10.96.14.20_5432::10.96.14.20:5432\n"))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := envoy.ParseListeners(j)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 3 || ls[1].Name != "0.0.0.0_8080" || ls[1].Port != 8080 || ls[2].IP != "10.96.14.20" {
		t.Errorf("listeners = %+v", ls)
	}
}

// archive writes files as istioctl bug-report does: under bug-report/,
// each file stamped with the time it was written.
func archive(t *testing.T, files map[string]string, written time.Time) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: "bug-report/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: written}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	tw.Close()
	gz.Close()
	p := filepath.Join(t.TempDir(), "bug-report.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const k8sResources = `apiVersion: v1
items:
- apiVersion: v1
  kind: Service
  metadata: {name: orders, namespace: shop}
  spec:
    selector: {app: orders}
    ports: [{name: http, port: 8080}]
- apiVersion: v1
  kind: Pod
  metadata: {name: web-1, namespace: shop, labels: {app: web}}
  spec:
    containers: [{name: web, image: web}, {name: istio-proxy, image: proxyv2}]
  status: {phase: Running}
kind: List
metadata:
  resourceVersion: ""
`

const clusterResources = `apiVersion: v1
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: shop, labels: {istio-injection: enabled}}
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: destinationrules.networking.istio.io}
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: virtualservices.networking.istio.io}
kind: List
metadata:
  resourceVersion: ""
`

const istiodPods = `apiVersion: v1
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: istiod-1, namespace: istio-system, labels: {app: istiod}}
  spec:
    containers: [{name: discovery, image: pilot}]
  status: {phase: Running}
kind: List
metadata:
  resourceVersion: ""
`

// netstatOfWeb is `netstat -natpw` in web-1's istio-proxy, as istioctl
// runs it (content.go GetNetstat): the app's socket with PID "-".
const netstatOfWeb = `Active Internet connections (servers and established)
Proto Recv-Q Send-Q Local Address           Foreign Address         State       PID/Program name
tcp        0      0 127.0.0.1:8080          0.0.0.0:*               LISTEN      -
tcp        0      0 0.0.0.0:15021           0.0.0.0:*               LISTEN      16/envoy
tcp6       0      0 :::15020                :::*                    LISTEN      1/pilot-agent
`

func fullReport() map[string]string {
	return map[string]string{
		"versions":                                   "CLI version:\n...",
		"bug-report.log":                             "2026-12-02T03:30:00Z\tinfo\t...",
		"analyze/allNamespaces/allNamespaces":        "Info [IST0102] ...",
		"cluster/k8s-resources":                      k8sResources,
		"cluster/k8s-cluster-resources":              clusterResources,
		"cluster/crs":                                "apiVersion: v1\nitems:\n- apiVersion: networking.istio.io/v1\n  kind: DestinationRule\n  metadata: {name: orders, namespace: shop}\n  spec: {host: orders}\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
		"cluster/pods":                               istiodPods,
		"cluster/secrets":                            "NAME            TYPE     DATA   AGE\nprod-db-creds   Opaque   2      9d\n",
		"cluster/events":                             "LAST SEEN   TYPE   REASON\n",
		"cluster/cluster-context":                    "prod-eu\nhttps://10.0.0.1:6443\n",
		"cluster/kubectl-version":                    "Client Version: v1.32.4\nKustomize Version: v5.5.0\nServer Version: v1.31.2\n",
		"proxies/shop/web-1/clusters":                "outbound|8080||orders.shop.svc.cluster.local::10.244.1.17:8080::health_flags::/failed_outlier_check\n",
		"proxies/shop/web-1/listeners":               "0.0.0.0_8080::0.0.0.0:8080\n",
		"proxies/shop/web-1/config_dump?include_eds": `{"configs": []}`,
		"proxies/shop/web-1/stats/prometheus":        "istio_requests_total{response_code=\"503\"} 7\n",
		"proxies/shop/web-1/certs":                   `{"certificates": []}`,
		"proxies/shop/web-1/netstat":                 netstatOfWeb,
		"proxies/shop/web-1/istio-proxy.log": previousPresent + "2026-12-02T03:20:00.000Z\tinfo\tEnvoy proxy is ready\n" +
			previousMarker + "2026-12-02T03:10:00.000Z\terror\tcrashed\n",
		"istio/istio-system/istiod-1/debug/syncz":   `[{"proxy": "web-1.shop"}]`,
		"istio/istio-system/istiod-1/debug/configz": `[]`,
		"istio/istio-system/istiod-1/discovery.log": "2026-12-02T03:00:00.000Z\tinfo\tstarted\n",
		"istio/istio-system/istiod-1/metrics":       "pilot_xds 1\n",
	}
}

// An istioctl bug report reads as the cluster it was taken from: its
// objects, the proxy's Envoy output (text converted), the current and
// previous proxy log apart, istiod's syncz as its replica's, the kube
// context, server version and capture time; secrets never read.
func TestOpenReadsIstioctlLayout(t *testing.T) {
	written := time.Date(2026, 12, 2, 3, 30, 5, 0, time.UTC)
	r, err := Open(archive(t, fullReport(), written), "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Scenario
	if s.Context != "prod-eu" || s.Source != "https://10.0.0.1:6443" || s.ServerVersion != "v1.31.2" || !s.CapturedAt.Equal(written) || s.ControlPlaneNamespace != "istio-system" {
		t.Errorf("context %q server %q version %q captured %v control plane %q", s.Context, s.Source, s.ServerVersion, s.CapturedAt, s.ControlPlaneNamespace)
	}
	if len(s.Objects) != 5 {
		t.Errorf("%d objects, want the namespace, service, two pods and the DestinationRule", len(s.Objects))
	}
	web := cluster.PodRef{Namespace: "shop", Name: "web-1"}
	var paths []string
	for p := range s.Envoy[web] {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if want := []string{"/clusters?format=json", "/config_dump", "/listeners?format=json", "/stats/prometheus"}; !slices.Equal(paths, want) {
		t.Errorf("Envoy paths %v, want %v", paths, want)
	}
	cur := s.Logs[recorded.LogKey{Pod: web, Container: "istio-proxy"}]
	prev := s.Logs[recorded.LogKey{Pod: web, Container: "istio-proxy", Previous: true}]
	if string(cur) != "2026-12-02T03:20:00.000Z\tinfo\tEnvoy proxy is ready\n" || string(prev) != "2026-12-02T03:10:00.000Z\terror\tcrashed\n" {
		t.Errorf("current log %q, previous %q", cur, prev)
	}
	if string(s.IstiodReplicas["istiod-1"][recorded.IstiodSyncz]) != `[{"proxy": "web-1.shop"}]` {
		t.Errorf("istiod replicas = %v", s.IstiodReplicas)
	}
	if got := strings.Join(r.Notes, "\n"); !strings.Contains(got, "skipped 2 document(s), not a Kubernetes or Istio kind meshtriage reads: apiextensions.k8s.io/v1 CustomResourceDefinition") ||
		!strings.Contains(got, "one sample of each proxy's counters") {
		t.Errorf("notes:\n%s", got)
	}

	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	body, err := c.EnvoyAdmin(ctx, web, "/clusters?format=json")
	if err != nil {
		t.Fatal(err)
	}
	if cl, err := envoy.ParseClusters(body); err != nil || len(cl) != 1 || cl[0].Hosts[0].Healthy() {
		t.Errorf("clusters through the cluster: %+v %v", cl, err)
	}
	if _, err := c.EnvoyAdmin(ctx, web, "/stats/prometheus"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnvoyAdmin(ctx, web, "/stats/prometheus"); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("a second sample of the counters: %v, want not recorded (a bug report holds one)", err)
	}
	// The proxy's netstat, read through the session's cache as the
	// app-listen probe reads it; a pod without one is not read, not empty.
	if got, err := cluster.Netstat(ctx, cluster.NewCache(c), web); err != nil || string(got) != netstatOfWeb {
		t.Errorf("netstat: %q %v", got, err)
	}
	if _, err := cluster.Netstat(ctx, cluster.NewCache(c), cluster.PodRef{Namespace: "shop", Name: "orders-1"}); !errors.Is(err, cluster.ErrNoNetstat) {
		t.Errorf("netstat of a pod the bug report lacks: %v", err)
	}
	if ns, err := c.GetNamespace(ctx, "shop"); err != nil || ns.Labels["istio-injection"] != "enabled" {
		t.Errorf("namespace: %v %v", ns, err)
	}
}

// `istioctl bug-report --include NS` asks kubectl for "-n istio-system,NS"
// and gets empty lists: the notes say so and how to add the objects, which
// -f then supplies.
func TestOpenSaysWhatTheBugReportLacks(t *testing.T) {
	files := fullReport()
	empty := "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n"
	files["cluster/k8s-resources"], files["cluster/crs"] = empty, empty
	for k := range files {
		if strings.HasPrefix(k, "proxies/") && !strings.HasSuffix(k, ".log") || strings.HasPrefix(k, "istio/") {
			delete(files, k)
		}
	}
	p := archive(t, files, time.Now())
	r, err := Open(p, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(r.Notes, "\n")
	for _, want := range []string{"cluster/k8s-resources is an empty list (and so is its crs)", "no proxy's Envoy output", "no istiod debug/syncz"} {
		if !strings.Contains(got, want) {
			t.Errorf("notes lack %q:\n%s", want, got)
		}
	}
	r, err = Open(p, "shop", map[string][]byte{"dump.yaml": []byte(k8sResources + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")})
	if err != nil {
		t.Fatal(err)
	}
	// The bug report's namespace and istiod pod, and the dump's service
	// and pod; the dump's copy of the namespace is skipped.
	if len(r.Objects) != 4 {
		t.Errorf("%d objects with -f, want 4", len(r.Objects))
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "Namespace shop is already read from manifests/k8s-cluster-resources.yaml") {
		t.Errorf("the second copy of the namespace is not said to be skipped:\n%s", strings.Join(r.Notes, "\n"))
	}
}

// A cluster without Istio objects has an empty crs: that alone is no
// sign of --include, and is not reported as one.
func TestOpenTakesAnEmptyCRsAsTrue(t *testing.T) {
	files := fullReport()
	files["cluster/crs"] = "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n"
	r, err := Open(archive(t, files, time.Now()), "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Notes, "\n"); strings.Contains(got, "empty list") {
		t.Errorf("notes:\n%s", got)
	}
}

func TestOpenRefusesWhatIsNoBugReport(t *testing.T) {
	p := archive(t, map[string]string{"README": "hello"}, time.Now())
	if _, err := Open(p, "default", nil); err == nil || !strings.Contains(err.Error(), "not an istioctl bug-report") {
		t.Errorf("archive without bug-report files: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.tar.gz"), "default", nil); err == nil {
		t.Error("missing file: no error")
	}
}

// The unpacked folder reads as the archive does.
func TestOpenReadsTheUnpackedFolder(t *testing.T) {
	dir := t.TempDir()
	for name, data := range fullReport() {
		p := filepath.Join(dir, "bug-report", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(dir, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Objects) != 5 || len(r.Envoy) != 1 || r.Context != "prod-eu" {
		t.Errorf("objects %d, envoy %d, context %q", len(r.Objects), len(r.Envoy), r.Context)
	}
}

// Bug reports of two clusters read as one mesh: the first is the current
// cluster, the second a remote one under the context its
// cluster/cluster-context names, with its own objects; two of one context
// are refused by name.
func TestOpenMeshNamesEachClusterByItsContext(t *testing.T) {
	written := time.Date(2026, 12, 2, 3, 30, 5, 0, time.UTC)
	west := fullReport()
	west["cluster/cluster-context"] = "arn:aws:eks:eu-west-1:123456789012:cluster/west\nhttps://10.0.0.2:6443\n"
	west["cluster/k8s-resources"] = strings.ReplaceAll(k8sResources, "web-1", "web-west")
	first, second := archive(t, fullReport(), written), archive(t, west, written)
	r, err := OpenMesh([]string{first, second}, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(r.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	if c.Info().Context != "prod-eu" {
		t.Errorf("current context %q", c.Info().Context)
	}
	remotes, unread := cluster.RemoteClusters(c)
	if unread != "" || len(remotes) != 1 || remotes[0].Context != "arn:aws:eks:eu-west-1:123456789012:cluster/west" {
		t.Fatalf("remotes %v (%q)", remotes, unread)
	}
	ctx := context.Background()
	if _, err := remotes[0].Cluster.GetPod(ctx, "shop", "web-west"); err != nil {
		t.Errorf("the remote's pod: %v", err)
	}
	if _, err := c.GetPod(ctx, "shop", "web-west"); err == nil {
		t.Errorf("the remote's pod is served by the current cluster too")
	}
	if _, err := OpenMesh([]string{first, archive(t, fullReport(), written)}, "default", nil); err == nil || !strings.Contains(err.Error(), `are both of context "prod-eu"`) {
		t.Errorf("two bug reports of one context: %v", err)
	}
	// istioctl bug-report --context c2 writes the kubeconfig's current
	// context (kubectl config current-context ignores --context), with
	// c2's server: one context, two servers, said as such.
	otherServer := fullReport()
	otherServer["cluster/cluster-context"] = "prod-eu\nhttps://10.0.0.9:6443\n"
	if _, err := OpenMesh([]string{first, archive(t, otherServer, written)}, "default", nil); err == nil ||
		!strings.Contains(err.Error(), `both name context "prod-eu", of different API servers (https://10.0.0.1:6443, https://10.0.0.9:6443)`) ||
		!strings.Contains(err.Error(), "kubectl config use-context") {
		t.Errorf("two servers under one context: %v", err)
	}
	noContext := fullReport()
	delete(noContext, "cluster/cluster-context")
	if _, err := OpenMesh([]string{first, archive(t, noContext, written)}, "default", nil); err == nil || !strings.Contains(err.Error(), "no cluster/cluster-context") {
		t.Errorf("a further bug report without context: %v", err)
	}
	// One bug report is one cluster, as it always was.
	one, err := OpenMesh([]string{first}, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	oc, err := recorded.NewCluster(one.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	if _, unread := cluster.RemoteClusters(oc); unread != cluster.RemotesNotRecorded {
		t.Errorf("one bug report: %q", unread)
	}
}
