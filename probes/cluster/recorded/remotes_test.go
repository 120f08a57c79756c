package recorded_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
)

// withRemotes is a source given remote clusters, as a live client given
// --remote-contexts is.
type withRemotes struct {
	*recorded.Cluster // its optional reads (network gateways) promoted
	remotes           []cluster.Remote
}

func (w withRemotes) RemoteClusters() ([]cluster.Remote, string) { return w.remotes, "" }

func docsCluster(t *testing.T, docs ...string) cluster.Cluster {
	t.Helper()
	objs, err := manifests.Decode("test.yaml", []byte(strings.Join(docs, "\n---\n")), true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(recorded.FromObjects("test", objs))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mcNamespace(network string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata: {name: istio-system, labels: {topology.istio.io/network: " + network + "}}"
}

const (
	mcShop    = "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}"
	mcService = "apiVersion: v1\nkind: Service\nmetadata: {name: orders, namespace: shop}\nspec: {selector: {app: orders}, ports: [{name: http, port: 8080}]}"
)

func mcGateway(network, ip string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: istio-eastwestgateway, namespace: istio-system, labels: {istio: eastwestgateway, topology.istio.io/network: %s}}
spec: {type: LoadBalancer, ports: [{name: tls, port: 15443}]}
status: {loadBalancer: {ingress: [{ip: %s}]}}`, network, ip)
}

func mcPod(name, ip, clusterID, network string) string {
	app := "orders"
	if strings.HasPrefix(name, "web") {
		app = "web"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: shop, labels: {app: %s, security.istio.io/tlsMode: istio}}
spec:
  containers:
  - {name: %s, image: %s}
  - name: istio-proxy
    image: proxyv2
    env: [{name: ISTIO_META_CLUSTER_ID, value: %s}, {name: ISTIO_META_NETWORK, value: %s}]
status: {podIP: %s, phase: Running, conditions: [{type: Ready, status: "True"}]}`, name, app, app, app, clusterID, network, ip)
}

func mcSlice(ip, pod string) string {
	return fmt.Sprintf(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: orders-%s, namespace: shop, labels: {kubernetes.io/service-name: orders}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [%s], conditions: {ready: true}, targetRef: {kind: Pod, name: %s, namespace: shop}}]`, pod, ip, pod)
}

// remoteSide is one remote cluster's side of orders: a pod on network
// behind its east-west gateway.
func remoteSide(t *testing.T, network, pod, ip, clusterID, gatewayIP string) cluster.Cluster {
	return docsCluster(t, mcNamespace(network), mcShop, mcService, mcGateway(network, gatewayIP), mcPod(pod, ip, clusterID, network), mcSlice(ip, pod))
}

// The contexts of two remote clusters, as users have them: an EKS ARN
// (':' and '/') and one written to climb out of the recording.
const (
	arnContext  = "arn:aws:eks:eu-west-1:123456789012:cluster/west"
	evilContext = "../../escaped"
)

// A triage through the recorder of a source with remote clusters records
// each remote's reads under its context; the recording, written redacted,
// read back and replayed, reaches the same facts, the multi-cluster ones
// naming each endpoint's context, and no file of it lies outside the
// recording's folder whatever the context names.
func TestRecorderRecordsRemoteClusters(t *testing.T) {
	local := docsCluster(t, mcNamespace("network1"), mcShop, mcService, mcGateway("network1", "172.18.1.10"),
		mcPod("web-1", "10.1.0.9", "cluster1", "network1"), mcPod("orders-a", "10.1.0.5", "cluster1", "network1"), mcSlice("10.1.0.5", "orders-a"))
	source := withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{
		{Context: arnContext, Cluster: remoteSide(t, "network2", "orders-b", "10.2.0.5", "cluster2", "172.18.2.10")},
		{Context: evilContext, Cluster: remoteSide(t, "network3", "orders-c", "10.3.0.5", "cluster3", "172.18.3.10")},
	}}
	target := cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "shop", Name: "web-1"}}

	rec := recorded.NewRecorder(source)
	live := runTriage(t, rec, target)
	wantEndpoints := []string{
		"(current): 10.1.0.5 (pod orders-a) network network1: direct",
		arnContext + ": 10.2.0.5 (pod orders-b) network network2: via gateway 172.18.2.10:15443",
		evilContext + ": 10.3.0.5 (pod orders-c) network network3: via gateway 172.18.3.10:15443",
	}
	endpoints := func(run triageRun) []string {
		r, ok := run.results["multicluster"]
		if !ok {
			t.Fatalf("no multicluster step ran (steps %v)", run.results)
		}
		got, _ := r.Facts["mc_endpoints"].([]string)
		return got
	}
	if got := endpoints(live); !slices.Equal(got, wantEndpoints) {
		t.Fatalf("through the recorder: mc_endpoints = %q, want %q; %v", got, wantEndpoints, live.results["multicluster"].Facts)
	}

	captured := rec.Scenario(target, live.findings)
	files, err := captured.Files(incidentlog.Redact)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "rec")
	if err := recorded.WriteDir(root, files); err != nil {
		t.Fatal(err)
	}
	var remoteFiles int
	err = filepath.WalkDir(filepath.Dir(root), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(root, p); p != filepath.Dir(root) && (rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))) {
			t.Errorf("%s written outside the recording", p)
		}
		if !d.IsDir() && strings.Contains(p, string(filepath.Separator)+"clusters"+string(filepath.Separator)) {
			remoteFiles++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if remoteFiles == 0 {
		t.Fatalf("no file under clusters/: %v", slices.Sorted(func(yield func(string) bool) {
			for k := range files {
				if !yield(k) {
					return
				}
			}
		}))
	}

	r, err := recorded.OpenRecording(root, "default")
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := recorded.NewCluster(r.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	remotes, unread := cluster.RemoteClusters(replayed)
	if unread != "" || len(remotes) != 2 || remotes[0].Context != arnContext || remotes[1].Context != evilContext {
		t.Fatalf("replayed remotes: %v (%q)", remotes, unread)
	}
	// Each remote's objects come back under its own context, and only there.
	ctx := context.Background()
	if pods, err := remotes[0].Cluster.ListPods(ctx, "shop", map[string]string{"app": "orders"}); err != nil || len(pods) != 1 || pods[0].Name != "orders-b" {
		t.Errorf("%s: orders pods %v (%v)", arnContext, pods, err)
	}
	if pods, err := remotes[1].Cluster.ListPods(ctx, "shop", map[string]string{"app": "orders"}); err != nil || len(pods) != 1 || pods[0].Name != "orders-c" {
		t.Errorf("%s: orders pods %v (%v)", evilContext, pods, err)
	}
	if got := remotes[0].Cluster.Info().Context; got != arnContext {
		t.Errorf("remote's own context %q, want %q", got, arnContext)
	}
	again := runTriage(t, replayed, target)
	if got := endpoints(again); !slices.Equal(got, wantEndpoints) {
		t.Errorf("replayed: mc_endpoints = %q, want %q", got, wantEndpoints)
	}
	sameOutcome(t, live, again)
}

// A recording of one cluster, as every recording before remote clusters
// were recorded, still says that no other cluster was read, recorded and
// replayed.
func TestRecordingOfOneClusterHasNoRemotes(t *testing.T) {
	rec := recorded.NewRecorder(docsCluster(t, mcShop, mcService))
	if _, err := rec.GetService(context.Background(), "shop", "orders"); err != nil {
		t.Fatal(err)
	}
	if remotes, unread := cluster.RemoteClusters(rec); len(remotes) != 0 || unread != cluster.RemotesNotRecorded {
		t.Errorf("recorder: %v, %q", remotes, unread)
	}
	files, err := rec.Scenario(cluster.Target{Namespace: "shop", Service: "orders"}, nil).Files(incidentlog.Redact)
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if strings.HasPrefix(name, recorded.ClustersDir+"/") || strings.Contains(string(files[name]), "clusters:") {
			t.Errorf("a recording of one cluster holds %s", name)
		}
	}
	r, err := recorded.LoadRecording(files, "recording", "default")
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(r.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	if remotes, unread := cluster.RemoteClusters(c); len(remotes) != 0 || unread != cluster.RemotesNotRecorded {
		t.Errorf("replayed: %v, %q", remotes, unread)
	}
}

// A context name is one folder of clusters/, whatever it holds.
func TestContextDirStaysInside(t *testing.T) {
	contexts := []string{arnContext, evilContext, "..", ".", "", "user@prod:443", `a\..\b`, "Prod", "prod", "ctx2", "c/../../..", strings.Repeat("x/", 200)}
	dirs := map[string]string{}
	for _, c := range contexts {
		d := recorded.ContextDir(c)
		p := recorded.ClustersDir + "/" + d
		if !fs.ValidPath(p) || strings.ContainsAny(d, `/\:`) || d == "." || d == ".." || len(d) > 100 {
			t.Errorf("context %q: folder %q", c, d)
		}
		if other, taken := dirs[d]; taken {
			t.Errorf("contexts %q and %q share folder %q", other, c, d)
		}
		dirs[d] = c
	}
	if got := recorded.ContextDir("ctx2"); got != "ctx2" {
		t.Errorf("a plain context's folder is %q, want its name", got)
	}
}

// A recording whose scenario.yaml points a remote cluster outside
// clusters/, or holds a folder there it does not name, is refused.
func TestRecordingRemoteDirsAreChecked(t *testing.T) {
	manifest := []byte("apiVersion: v1\nkind: Service\nmetadata: {name: orders, namespace: shop}\n")
	for name, tc := range map[string]struct {
		header string
		extra  string
		want   string
	}{
		"climbs out":       {"clusters: [{context: c2, dir: clusters/../../etc}]\n", "", "is not a folder of clusters/"},
		"not under it":     {"clusters: [{context: c2, dir: manifests}]\n", "", "is not a folder of clusters/"},
		"context twice":    {"clusters: [{context: c2, dir: clusters/a}, {context: c2, dir: clusters/b}]\n", "clusters/a/manifests/x.yaml", "twice"},
		"folder not named": {"", "clusters/c2/manifests/x.yaml", "does not name"},
		"folder missing":   {"clusters: [{context: c2, dir: clusters/c2}]\n", "", "no folder clusters/c2"},
	} {
		files := recorded.Files{"manifests/x.yaml": manifest, recorded.HeaderFile: []byte("name: x\n" + tc.header)}
		if tc.extra != "" {
			files[tc.extra] = manifest
		}
		_, err := recorded.LoadRecording(files, "recording", "default")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", name, err, tc.want)
		}
	}
}

// A scenario of several clusters is laid out as a recording of them: its
// remote clusters load with it.
func TestScenarioLoadsItsRemoteClusters(t *testing.T) {
	svc := []byte("apiVersion: v1\nkind: Service\nmetadata: {name: orders, namespace: shop}\nspec: {ports: [{port: 8080}]}\n")
	fsys := recorded.Files{
		"two/scenario.yaml":                  []byte("name: two\ntitle: two clusters\ntarget: {namespace: shop, service: orders}\nexpect: []\nclusters: [{context: west, dir: clusters/west}]\n"),
		"two/manifests/shop.yaml":            svc,
		"two/clusters/west/manifests/x.yaml": svc,
	}
	s, err := recorded.Load(fsys, "two")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Remotes) != 1 || s.Remotes[0].Context != "west" || len(s.Remotes[0].Objects) != 1 {
		t.Errorf("remotes %+v", s.Remotes)
	}
}

// Contexts "Prod" and "prod" are two folders on a case-insensitive file
// system too, and come back under their own names.
func TestRemoteFoldersDifferBeyondCase(t *testing.T) {
	svc := func(name string) *recorded.Scenario {
		objs, err := manifests.Decode("x.yaml", []byte("apiVersion: v1\nkind: Service\nmetadata: {name: "+name+", namespace: shop}\nspec: {ports: [{port: 80}]}\n"), true)
		if err != nil {
			t.Fatal(err)
		}
		return recorded.FromObjects(name, objs)
	}
	s := svc("local")
	s.Remotes = []recorded.RemoteScenario{{Context: "Prod", Scenario: svc("upper")}, {Context: "prod", Scenario: svc("lower")}}
	files, err := s.Files(incidentlog.Redact)
	if err != nil {
		t.Fatal(err)
	}
	folders := map[string]bool{}
	for name := range files {
		if rest, ok := strings.CutPrefix(name, "clusters/"); ok {
			folders[strings.ToLower(rest[:strings.IndexByte(rest, '/')])] = true
		}
	}
	if len(folders) != 2 {
		t.Errorf("folders (case folded) %v, want two", folders)
	}
	r, err := recorded.LoadRecording(files, "recording", "default")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Remotes) != 2 || r.Remotes[0].Context != "Prod" || r.Remotes[1].Context != "prod" {
		t.Fatalf("remotes %+v", r.Remotes)
	}
	c, err := recorded.NewCluster(r.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	remotes, _ := cluster.RemoteClusters(c)
	if _, err := remotes[1].Cluster.GetService(context.Background(), "shop", "lower"); err != nil {
		t.Errorf("prod's Service: %v", err)
	}
}
