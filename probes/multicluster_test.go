package probes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	istiodparse "github.com/meshtriage/meshtriage/probes/parse/istiod"
)

// withRemotes is a source given remote clusters, as a live client given
// --remote-contexts is.
type withRemotes struct {
	*recorded.Cluster // its optional reads (network gateways) promoted
	remotes           []cluster.Remote
}

func (w withRemotes) RemoteClusters() ([]cluster.Remote, string) { return w.remotes, "" }

func recordedDocs(t *testing.T, docs ...string) cluster.Cluster {
	t.Helper()
	c, err := recorded.NewCluster(recorded.FromObjects("test", decodeObjects(t, docs...)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mcNamespaceDoc(network string) string {
	labels := "{}"
	if network != "" {
		labels = fmt.Sprintf("{topology.istio.io/network: %s}", network)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: istio-system, labels: %s}", labels)
}

func mcGatewayDoc(network string, ports ...int) string {
	var ps []string
	for _, p := range ports {
		ps = append(ps, fmt.Sprintf("{name: p%d, port: %d}", p, p))
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: istio-eastwestgateway, namespace: istio-system, labels: {istio: eastwestgateway, topology.istio.io/network: %s}}
spec: {type: LoadBalancer, ports: [%s]}
status: {loadBalancer: {ingress: [{ip: 172.18.2.10}]}}`, network, strings.Join(ps, ", "))
}

func mcPodDoc(name, ip, clusterID string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: shop, labels: {app: orders, security.istio.io/tlsMode: istio}}
spec:
  containers:
  - {name: orders, image: orders}
  - name: istio-proxy
    image: proxyv2
    env: [{name: ISTIO_META_CLUSTER_ID, value: %s}, {name: ISTIO_META_NETWORK, value: network1}]
status: {podIP: %s, phase: Running, conditions: [{type: Ready, status: "True"}]}`, name, clusterID, ip)
}

func mcSliceDoc(ip, pod string) string {
	return fmt.Sprintf(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: orders-%s, namespace: shop, labels: {kubernetes.io/service-name: orders}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [%s], conditions: {ready: true}, targetRef: {kind: Pod, name: %s, namespace: shop}}]`, pod, ip, pod)
}

const mcServiceDoc = "apiVersion: v1\nkind: Service\nmetadata: {name: orders, namespace: shop}\nspec: {selector: {app: orders}, ports: [{name: http, port: 8080}]}"

func twoClusters(t *testing.T, remoteNamespaceNetwork string, remoteGateway string) cluster.Cluster {
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc,
		mcPodDoc("web-1", "10.1.0.9", "cluster1"), mcPodDoc("orders-a", "10.1.0.5", "cluster1"), mcSliceDoc("10.1.0.5", "orders-a"),
		strings.ReplaceAll(mcGatewayDoc("network1", 15443), "172.18.2.10", "172.18.1.10"))
	remote := recordedDocs(t, mcNamespaceDoc(remoteNamespaceNetwork), mcServiceDoc,
		mcPodDoc("orders-b", "10.2.0.5", "cluster2"), mcSliceDoc("10.2.0.5", "orders-b"), remoteGateway)
	return withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}}
}

var mcTarget = cluster.Target{Namespace: "shop", Service: "orders", Source: &cluster.PodRef{Namespace: "shop", Name: "web-1"}}

// Each endpoint says its cluster, and the remote one is reached through
// ctx2's east-west gateway.
func TestMultiClusterProbeShowsEachEndpointsCluster(t *testing.T) {
	r := MultiClusterProbe{}.Run(context.Background(), twoClusters(t, "network2", mcGatewayDoc("network2", 15021, 15443)), mcTarget)
	if r.Status != StatusPass {
		t.Fatalf("status %s: %s\n%s", r.Status, r.Summary, r.Evidence.Raw)
	}
	want := []string{"ctx2: 10.2.0.5 (pod orders-b) network network2: via gateway 172.18.2.10:15443"}
	if got := r.Facts["mc_endpoints"].([]string); !slices.Contains(got, want[0]) || len(got) != 2 || !strings.HasPrefix(got[0], "test: 10.1.0.5") && !strings.Contains(got[0], ": 10.1.0.5 (pod orders-a) network network1: direct") {
		t.Errorf("mc_endpoints = %q", got)
	}
	if r.Facts["mc_remotes_read"] != 1 || r.Facts["mc_via_gateway"] != 1 || len(r.Facts["mc_remote_direct"].([]string)) != 0 {
		t.Errorf("facts = %v", r.Facts)
	}
	if !slices.Contains(r.Commands, "kubectl get endpointslices --context ctx2 -n shop -l kubernetes.io/service-name=orders -o wide") {
		t.Errorf("commands = %q", r.Commands)
	}
	if !strings.Contains(r.Evidence.Raw, "cluster ctx2: cluster ID cluster2") {
		t.Errorf("raw evidence does not name ctx2's cluster ID:\n%s", r.Evidence.Raw)
	}
}

// ctx2's control-plane namespace has no network label while its gateway
// Service names network2: its pods go to the caller as pod IPs.
func TestMultiClusterProbeNamespaceLabelMissing(t *testing.T) {
	r := MultiClusterProbe{}.Run(context.Background(), twoClusters(t, "", mcGatewayDoc("network2", 15443)), mcTarget)
	if r.Status != StatusFail {
		t.Fatalf("status %s: %s", r.Status, r.Summary)
	}
	if got := r.Facts["mc_label_missing"].([]string); len(got) != 1 || !strings.HasPrefix(got[0], "ctx2: istio-system=network2") {
		t.Errorf("mc_label_missing = %q", got)
	}
	if got := r.Facts["mc_remote_direct"].([]string); len(got) != 1 || got[0] != "ctx2: 10.2.0.5 (network -)" {
		t.Errorf("mc_remote_direct = %q", got)
	}
}

// ctx2's namespace says net2, its gateway Service network2: the gateway
// stands for a network no endpoint is on.
func TestMultiClusterProbeNetworkLabelsDisagree(t *testing.T) {
	r := MultiClusterProbe{}.Run(context.Background(), twoClusters(t, "net2", mcGatewayDoc("network2", 15443)), mcTarget)
	if got := r.Facts["mc_label_disagrees"].([]string); len(got) != 1 || !strings.Contains(got[0], "on network net2 (namespace istio-system label), gateway Service istio-system/istio-eastwestgateway on network2") {
		t.Errorf("mc_label_disagrees = %q (%s)", got, r.Summary)
	}
}

// A gateway Service without 15443 is no gateway to istiod.
func TestMultiClusterProbeGatewayWithoutPort(t *testing.T) {
	r := MultiClusterProbe{}.Run(context.Background(), twoClusters(t, "network2", mcGatewayDoc("network2", 15021)), mcTarget)
	if got := r.Facts["mc_gateway_port_missing"].([]string); len(got) != 1 || got[0] != "ctx2 istio-system/istio-eastwestgateway" {
		t.Errorf("mc_gateway_port_missing = %q (%s)", got, r.Summary)
	}
}

// Not read is never absent: a recorded input says remote clusters are not
// recorded, and the probe judges nothing of other clusters: its one fact
// says none was given.
func TestMultiClusterProbeWithoutRemotesIsSkipped(t *testing.T) {
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc)
	r := MultiClusterProbe{}.Run(context.Background(), cluster.NewCache(local), mcTarget)
	if r.Summary != cluster.RemotesNotRecorded || r.Facts["mc_remotes_given"] != false || len(r.Facts) != 1 {
		t.Errorf("status %s: %s; facts %v", r.Status, r.Summary, r.Facts)
	}
}

// unreachable is a remote cluster whose API server does not answer.
type unreachable struct{ cluster.Cluster }

func (unreachable) EndpointSlices(context.Context, string, string) ([]discoveryv1.EndpointSlice, error) {
	return nil, errors.New("dial tcp 10.9.9.9:443: connect: connection refused")
}

func (unreachable) GetNamespace(context.Context, string) (*corev1.Namespace, error) {
	return nil, errors.New("dial tcp 10.9.9.9:443: connect: connection refused")
}

// A remote cluster that cannot be read is said, and its endpoints are
// neither counted nor taken as absent: the step warns, it does not pass.
func TestMultiClusterProbeUnreadRemoteIsNotAbsent(t *testing.T) {
	c := twoClusters(t, "network2", mcGatewayDoc("network2", 15443)).(withRemotes)
	c.remotes[0].Cluster = unreachable{c.remotes[0].Cluster}
	r := MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	unread := r.Facts["mc_remotes_unread"].([]string)
	if r.Status != StatusWarn || r.Facts["mc_remotes_read"] != 0 || len(unread) != 1 || !strings.Contains(unread[0], "ctx2: cannot list the EndpointSlices of shop/orders") {
		t.Errorf("status %s: %s; facts %v", r.Status, r.Summary, r.Facts)
	}
	for _, e := range r.Facts["mc_endpoints"].([]string) {
		if strings.HasPrefix(e, "ctx2:") {
			t.Errorf("an endpoint of the unread cluster: %s", e)
		}
	}
}

// withIstiod is a two-cluster source whose current cluster's istiod
// answers its debug paths with the samples recorded from the lab's real
// istiod (parse/istiod/testdata, read in place); a path not given is
// unreachable.
type withIstiod struct {
	withRemotes
	answers map[string][]byte
}

func (w withIstiod) Istiod(_ context.Context, _, path string) ([]byte, error) {
	if b, ok := w.answers[path]; ok {
		return b, nil
	}
	return nil, &cluster.UnreachableError{What: "istiod", Err: fmt.Errorf("GET %s: %w", path, cluster.ErrNotFound)}
}

func istiodSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("parse", "istiod", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func withIstiodSamples(t *testing.T, c cluster.Cluster, clusterz, networkz string) withIstiod {
	t.Helper()
	w := withIstiod{withRemotes: c.(withRemotes), answers: map[string][]byte{}}
	if clusterz != "" {
		w.answers[istiodparse.ClusterzPath] = istiodSample(t, clusterz)
	}
	if networkz != "" {
		w.answers[istiodparse.NetworkzPath] = istiodSample(t, networkz)
	}
	return w
}

// istiod's clusterz lists only its own cluster: ctx2's pods name
// cluster2, which istiod does not read. The finding carries the command
// that creates the secret, built from the contexts and the ID read.
func TestMultiClusterProbeRemoteSecretMissing(t *testing.T) {
	c := withIstiodSamples(t, twoClusters(t, "network2", mcGatewayDoc("network2", 15443)), "clusterz-config-only.json", "networkz-eastwest.json")
	r := MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	got, _ := r.Facts["mc_remote_secret_missing"].([]string)
	if r.Status != StatusFail || len(got) != 1 || !strings.HasPrefix(got[0], "ctx2: cluster ID cluster2 is not among the clusters istiod reads") ||
		!strings.HasSuffix(got[0], "istioctl create-remote-secret --context=ctx2 --name=cluster2 | kubectl apply -f -") {
		t.Errorf("status %s: %s; mc_remote_secret_missing = %q", r.Status, r.Summary, got)
	}
	if got := r.Facts["mc_istiod_clusters"]; !slices.Equal(got.([]string), []string{"Kubernetes (config cluster): synced"}) {
		t.Errorf("mc_istiod_clusters = %q", got)
	}
}

// With the secret (clusterz lists cluster2 synced) nothing is missing or
// stale, and the facts say so rather than staying unknown.
func TestMultiClusterProbeRemoteSecretSynced(t *testing.T) {
	c := withIstiodSamples(t, twoClusters(t, "network2", mcGatewayDoc("network2", 15443)), "clusterz-remote.json", "networkz-eastwest.json")
	r := MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	for _, f := range []string{"mc_remote_secret_missing", "mc_remote_secret_stale", "mc_cluster_id_collision"} {
		if got, ok := r.Facts[f].([]string); !ok || len(got) != 0 {
			t.Errorf("%s = %#v", f, r.Facts[f])
		}
	}
	if r.Status != StatusPass {
		t.Errorf("status %s: %s", r.Status, r.Summary)
	}
}

// A remote cluster istiod lists as timed out (or still syncing) is stale.
func TestMultiClusterProbeRemoteSecretStale(t *testing.T) {
	for _, status := range []string{"timeout", "syncing"} {
		c := withIstiodSamples(t, twoClusters(t, "network2", mcGatewayDoc("network2", 15443)), "clusterz-remote.json", "")
		c.answers[istiodparse.ClusterzPath] = []byte(strings.Replace(string(c.answers[istiodparse.ClusterzPath]),
			`"id":"cluster2","secretName":"istio-system/istio-remote-secret-cluster2","syncStatus":"synced"`,
			`"id":"cluster2","secretName":"istio-system/istio-remote-secret-cluster2","syncStatus":"`+status+`"`, 1))
		r := MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
		got, _ := r.Facts["mc_remote_secret_stale"].([]string)
		if len(got) != 1 || !strings.HasPrefix(got[0], "ctx2: cluster ID cluster2 is "+status+" in istiod's clusterz (secret istio-system/istio-remote-secret-cluster2)") ||
			!strings.Contains(got[0], "istioctl create-remote-secret --context=ctx2 --name=cluster2") {
			t.Errorf("%s: mc_remote_secret_stale = %q", status, got)
		}
	}
}

// A remote whose pods name istiod's own cluster ID collides with it; two
// contexts naming one ID collide with each other. Neither is "missing":
// a secret named by that ID would not help.
func TestMultiClusterProbeClusterIDCollision(t *testing.T) {
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc, mcPodDoc("web-1", "10.1.0.9", "Kubernetes"))
	remote := func(ip, pod, id string) cluster.Cluster {
		return recordedDocs(t, mcNamespaceDoc("network2"), mcServiceDoc, mcPodDoc(pod, ip, id), mcSliceDoc(ip, pod), mcGatewayDoc("network2", 15443))
	}
	c := withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{
		{Context: "ctx2", Cluster: remote("10.2.0.5", "orders-b", "Kubernetes")},
		{Context: "ctx3", Cluster: remote("10.3.0.5", "orders-c", "west")},
		{Context: "ctx4", Cluster: remote("10.4.0.5", "orders-d", "west")},
	}}
	r := MultiClusterProbe{}.Run(context.Background(), withIstiodSamples(t, c, "clusterz-config-only.json", ""), mcTarget)
	got, _ := r.Facts["mc_cluster_id_collision"].([]string)
	if len(got) != 2 || !strings.HasPrefix(got[0], "ctx2: its pods name cluster ID Kubernetes, istiod's own cluster's") ||
		!strings.HasPrefix(got[1], "ctx3, ctx4: their pods all name cluster ID west") {
		t.Errorf("mc_cluster_id_collision = %q", got)
	}
	if missing := r.Facts["mc_remote_secret_missing"].([]string); len(missing) != 0 {
		t.Errorf("mc_remote_secret_missing = %q", missing)
	}
}

// Not read is never absent: without clusterz the secret facts are
// unknown, and a remote whose pods name no cluster ID yields no finding.
func TestMultiClusterProbeRemoteSecretUnknown(t *testing.T) {
	r := MultiClusterProbe{}.Run(context.Background(), twoClusters(t, "network2", mcGatewayDoc("network2", 15443)), mcTarget)
	for _, f := range []string{"mc_istiod_clusters", "mc_remote_secret_missing", "mc_remote_secret_stale", "mc_cluster_id_collision", "mc_istiod_gateways"} {
		if v, ok := r.Facts[f]; ok {
			t.Errorf("%s = %#v with istiod not read", f, v)
		}
	}
	if r.Facts["mc_networkz_read"] != false || !strings.Contains(r.Evidence.Raw, "not known: istiod's /debug/clusterz not read") {
		t.Errorf("mc_networkz_read = %v; raw:\n%s", r.Facts["mc_networkz_read"], r.Evidence.Raw)
	}

	noID := strings.Replace(mcPodDoc("orders-b", "10.2.0.5", "cluster2"), "{name: ISTIO_META_CLUSTER_ID, value: cluster2}, ", "", 1)
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc, mcPodDoc("web-1", "10.1.0.9", "Kubernetes"))
	remote := recordedDocs(t, mcNamespaceDoc("network2"), mcServiceDoc, noID, mcSliceDoc("10.2.0.5", "orders-b"), mcGatewayDoc("network2", 15443))
	c := withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}}
	r = MultiClusterProbe{}.Run(context.Background(), withIstiodSamples(t, c, "clusterz-config-only.json", ""), mcTarget)
	if got := r.Facts["mc_remote_secret_missing"].([]string); len(got) != 0 {
		t.Errorf("mc_remote_secret_missing = %q for a remote whose cluster ID was not read", got)
	}
	if !strings.Contains(r.Evidence.Raw, "ctx2: whether istiod reads it is not known") {
		t.Errorf("raw does not say ctx2's cluster ID is unknown:\n%s", r.Evidence.Raw)
	}
}

// A gateway Service without 15443 that istiod still lists in networkz (a
// Service edited in place keeps its gateway in istiod): not unusable, and
// said as kept. networkz listing nothing for the network leaves it
// unusable, on istiod's word.
func TestMultiClusterProbeGatewayUnusableOnIstiodsWord(t *testing.T) {
	c := withIstiodSamples(t, twoClusters(t, "network2", mcGatewayDoc("network2", 15021)), "clusterz-remote.json", "networkz-eastwest.json")
	r := MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	kept, _ := r.Facts["mc_gateway_kept"].([]string)
	if got := r.Facts["mc_gateway_unusable"].([]string); len(got) != 0 || len(kept) != 1 || !strings.Contains(kept[0], "istiod still lists network2: 172.18.2.10:15443 (cluster cluster2)") {
		t.Errorf("mc_gateway_unusable = %q, mc_gateway_kept = %q", got, kept)
	}
	if got := r.Facts["mc_gateway_port_missing"].([]string); len(got) != 0 {
		t.Errorf("mc_gateway_port_missing = %q", got)
	}

	c = withIstiodSamples(t, twoClusters(t, "network2", mcGatewayDoc("network2", 15021)), "clusterz-remote.json", "networkz-dropped.json")
	r = MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	if got := r.Facts["mc_gateway_unusable"].([]string); len(got) != 1 || r.Facts["mc_networkz_read"] != true {
		t.Errorf("mc_gateway_unusable = %q, mc_networkz_read = %v", got, r.Facts["mc_networkz_read"])
	}
}

// A hostname-only gateway istiod lists in networkz was resolved: no
// finding; one it does not list stands on istiod's word.
func TestMultiClusterProbeGatewayHostnameOnIstiodsWord(t *testing.T) {
	hostname := strings.Replace(mcGatewayDoc("network2", 15443), "{ip: 172.18.2.10}", "{hostname: a1.elb.example.com}", 1)
	for sample, want := range map[string]int{"networkz-eastwest.json": 0, "networkz-dropped.json": 1} {
		c := withIstiodSamples(t, twoClusters(t, "network2", hostname), "clusterz-remote.json", sample)
		r := MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
		if got := r.Facts["mc_gateway_hostname"].([]string); len(got) != want {
			t.Errorf("%s: mc_gateway_hostname = %q", sample, got)
		}
	}
}

// istiod's clusterz lists a cluster (cluster3, from its remote secret)
// that no --remote-contexts context's pods name: istiod reads it, the
// triage did not, and the probe says so as a warning, never as a cluster
// without endpoints. With the real clusterz of the lab (cluster2 only,
// which ctx2 names) nothing is said; while a given remote's cluster ID is
// not known, a listed cluster may be it: said as not known.
func TestMultiClusterProbeSaysIstiodsClustersNotGiven(t *testing.T) {
	const threeClusters = `[{"id":"Kubernetes","secretName":"","syncStatus":"synced"},{"id":"cluster2","secretName":"istio-system/istio-remote-secret-cluster2","syncStatus":"synced"},{"id":"cluster3","secretName":"istio-system/istio-remote-secret-cluster3","syncStatus":"synced"}]`
	c := withIstiodSamples(t, twoClusters(t, "network2", mcGatewayDoc("network2", 15443)), "", "networkz-eastwest.json")
	c.answers[istiodparse.ClusterzPath] = []byte(threeClusters)
	r := MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	got, _ := r.Facts["mc_istiod_clusters_not_given"].([]string)
	const want = "cluster3 (secret istio-system/istio-remote-secret-cluster3): istiod reads cluster cluster3; it was not given (--remote-contexts), so its objects were not read"
	if len(got) != 1 || got[0] != want {
		t.Errorf("mc_istiod_clusters_not_given = %q, want [%q]", got, want)
	}
	if r.Status != StatusWarn || !strings.Contains(r.Summary, "istiod reads cluster cluster3; it was not given") {
		t.Errorf("status %s: %s; want a warning naming cluster3", r.Status, r.Summary)
	}

	r = MultiClusterProbe{}.Run(context.Background(), withIstiodSamples(t, twoClusters(t, "network2", mcGatewayDoc("network2", 15443)), "clusterz-remote.json", "networkz-eastwest.json"), mcTarget)
	if got := r.Facts["mc_istiod_clusters_not_given"]; got == nil || len(got.([]string)) != 0 {
		t.Errorf("mc_istiod_clusters_not_given = %#v, want none: ctx2 names cluster2", got)
	}

	noID := strings.Replace(mcPodDoc("orders-b", "10.2.0.5", "cluster2"), "{name: ISTIO_META_CLUSTER_ID, value: cluster2}, ", "", 1)
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc, mcPodDoc("web-1", "10.1.0.9", "Kubernetes"))
	remote := recordedDocs(t, mcNamespaceDoc("network2"), mcServiceDoc, noID, mcSliceDoc("10.2.0.5", "orders-b"), mcGatewayDoc("network2", 15443))
	c = withIstiodSamples(t, withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}}, "clusterz-remote.json", "")
	r = MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	if got, ok := r.Facts["mc_istiod_clusters_not_given"].([]string); !ok || len(got) != 0 {
		t.Errorf("mc_istiod_clusters_not_given = %#v, want none while ctx2's cluster ID is not known", r.Facts["mc_istiod_clusters_not_given"])
	}
	if !strings.Contains(r.Evidence.Raw, "not known: istiod reads cluster cluster2 (secret istio-system/istio-remote-secret-cluster2): whether it is ctx2") {
		t.Errorf("raw does not say cluster2 may be ctx2:\n%s", r.Evidence.Raw)
	}
}
