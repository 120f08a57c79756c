package probes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// shardzSample is the lab istiod's endpointShardz (read in place) with the
// orders entry's shard of each cluster ID in addrs holding those addresses
// instead (nil: no such shard), each a copy of the sample's own endpoint.
func shardzSample(t *testing.T, addrs map[string][]string) []byte {
	t.Helper()
	var index map[string]map[string]map[string]any
	if err := json.Unmarshal(istiodSample(t, "endpointShardz-eastwest.json"), &index); err != nil {
		t.Fatal(err)
	}
	orders := index["orders.shop.svc.cluster.local"]["shop"]
	shards := orders["Shards"].(map[string]any)
	proto := shards["Kubernetes/cluster2"].([]any)[0].(map[string]any)
	for id, as := range addrs {
		key := "Kubernetes/" + id
		delete(shards, key)
		if as == nil {
			continue
		}
		var eps []any
		for _, a := range as {
			e := maps.Clone(proto)
			e["Addresses"] = []string{a}
			eps = append(eps, e)
		}
		shards[key] = eps
	}
	b, err := json.Marshal(index)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shardClusters are twoClusters taken at now (a recording's capture time),
// ctx2's orders pod Ready since five minutes before it.
func shardClusters(t *testing.T, now time.Time, clusterz string, shardz []byte) withIstiod {
	t.Helper()
	remotePod := strings.Replace(mcPodDoc("orders-b", "10.2.0.5", "cluster2"), `{type: Ready, status: "True"}`,
		`{type: Ready, status: "True", lastTransitionTime: "`+now.Add(-5*time.Minute).Format(time.RFC3339)+`"}`, 1)
	s := recorded.FromObjects("local", decodeObjects(t, mcNamespaceDoc("network1"), mcServiceDoc,
		mcPodDoc("web-1", "10.1.0.9", "cluster1"), mcPodDoc("orders-a", "10.1.0.5", "cluster1"), mcSliceDoc("10.1.0.5", "orders-a"),
		strings.ReplaceAll(mcGatewayDoc("network1", 15443), "172.18.2.10", "172.18.1.10")))
	s.CapturedAt = now
	local, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	remote := recordedDocs(t, mcNamespaceDoc("network2"), mcServiceDoc, remotePod, mcSliceDoc("10.2.0.5", "orders-b"), mcGatewayDoc("network2", 15443))
	w := withIstiodSamples(t, withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}}, clusterz, "networkz-eastwest.json")
	if shardz != nil {
		w.answers[istiodparse.EndpointShardzPath] = shardz
	}
	return w
}

// clusterz says cluster2 synced, but istiod's index holds the address of
// a pod cluster 2 no longer lists and lacks the one Ready there for five
// minutes: istiod stopped following the cluster (the lab's cut-off
// istiod does exactly this). In step, nothing is said; without the old
// address, only a lack; unread, nothing is judged and it is said.
func TestMultiClusterProbeIstiodIndexBehind(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	r := MultiClusterProbe{}.Run(context.Background(), shardClusters(t, now, "clusterz-remote.json", shardzSample(t, map[string][]string{"cluster2": {"10.2.0.4"}})), mcTarget)
	behind, _ := r.Facts["mc_istiod_shard_behind"].([]string)
	if r.Status != StatusFail || len(behind) != 1 || !strings.HasPrefix(behind[0], "ctx2: cluster ID cluster2 is synced in istiod's clusterz, but istiod's endpoint index lacks 1 endpoint Ready there for over 1m0s: 10.2.0.5 (pod orders-b)") ||
		!strings.Contains(behind[0], "it still holds 1 address the cluster no longer lists: 10.2.0.4") {
		t.Errorf("behind: status %s: %s; mc_istiod_shard_behind = %q", r.Status, r.Summary, behind)
	}

	r = MultiClusterProbe{}.Run(context.Background(), shardClusters(t, now, "clusterz-remote.json", shardzSample(t, map[string][]string{"cluster2": nil})), mcTarget)
	lacks, _ := r.Facts["mc_istiod_shard_lacks"].([]string)
	if behind, _ := r.Facts["mc_istiod_shard_behind"].([]string); len(behind) != 0 || len(lacks) != 1 || !strings.HasPrefix(lacks[0], "ctx2: cluster ID cluster2 is synced") {
		t.Errorf("no shard: behind %q, lacks %q", behind, lacks)
	}

	r = MultiClusterProbe{}.Run(context.Background(), shardClusters(t, now, "clusterz-remote.json", shardzSample(t, map[string][]string{"cluster2": {"10.2.0.5"}})), mcTarget)
	for _, f := range []string{"mc_istiod_shard_behind", "mc_istiod_shard_lacks"} {
		if got, ok := r.Facts[f].([]string); !ok || len(got) != 0 {
			t.Errorf("in step: %s = %#v (read and empty)", f, r.Facts[f])
		}
	}
	if r.Status != StatusPass {
		t.Errorf("in step: status %s: %s", r.Status, r.Summary)
	}

	// Not read is never "in step": the facts stay absent and the reason
	// is in the evidence.
	r = MultiClusterProbe{}.Run(context.Background(), shardClusters(t, now, "clusterz-remote.json", nil), mcTarget)
	if _, ok := r.Facts["mc_istiod_shard_behind"]; ok || !strings.Contains(r.Evidence.Raw, "not known: istiod's /debug/endpointShardz not read") {
		t.Errorf("unread: mc_istiod_shard_behind = %#v; raw:\n%s", r.Facts["mc_istiod_shard_behind"], r.Evidence.Raw)
	}
	// Nor is a recording without a time: how long a pod was Ready is then
	// not known.
	r = MultiClusterProbe{}.Run(context.Background(), shardClusters(t, time.Time{}, "clusterz-remote.json", shardzSample(t, map[string][]string{"cluster2": {"10.2.0.4"}})), mcTarget)
	if _, ok := r.Facts["mc_istiod_shard_behind"]; ok || !strings.Contains(r.Evidence.Raw, "the time the input was taken is not known") {
		t.Errorf("no time: mc_istiod_shard_behind = %#v; raw:\n%s", r.Facts["mc_istiod_shard_behind"], r.Evidence.Raw)
	}
}

// A cluster clusterz lists as closed (its secret deleted or replaced) is
// one istiod no longer reads.
func TestMultiClusterProbeRemoteClusterClosed(t *testing.T) {
	c := withIstiodSamples(t, twoClusters(t, "network2", mcGatewayDoc("network2", 15443)), "clusterz-remote.json", "")
	c.answers[istiodparse.ClusterzPath] = []byte(strings.Replace(string(c.answers[istiodparse.ClusterzPath]), `"syncStatus":"synced"}]`, `"syncStatus":"closed"}]`, 1))
	r := MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	got, _ := r.Facts["mc_remote_secret_stale"].([]string)
	if len(got) != 1 || !strings.Contains(got[0], "is closed in istiod's clusterz") || !strings.Contains(got[0], "reads none of its endpoints") {
		t.Errorf("closed: mc_remote_secret_stale = %q (clusterz %s)", got, c.answers[istiodparse.ClusterzPath])
	}
}

// perReplica is a two-cluster source whose istiod replicas answer each
// its own: a path a replica was not given is unreachable there.
type perReplica struct {
	withRemotes
	answers map[string]map[string][]byte // replica -> path -> body
}

func (p perReplica) Istiod(_ context.Context, replica, path string) ([]byte, error) {
	if b, ok := p.answers[replica][path]; ok {
		return b, nil
	}
	return nil, &cluster.UnreachableError{What: "istiod " + replica, Err: fmt.Errorf("GET %s: %w", path, cluster.ErrNotFound)}
}

// Two istiod replicas: the older is asked first, but the caller is
// connected to the other, which has timed out on cluster 2. The probe
// takes the word of the caller's replica (the one whose EDS it gets), and
// says which it asked.
func TestMultiClusterProbeAsksTheCallersIstiod(t *testing.T) {
	istiodDoc := func(name, created string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: istio-system, labels: {app: istiod}, creationTimestamp: "%s"}
spec: {containers: [{name: discovery, image: pilot}]}
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}`, name, created)
	}
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc,
		mcPodDoc("web-1", "10.1.0.9", "cluster1"), mcPodDoc("orders-a", "10.1.0.5", "cluster1"), mcSliceDoc("10.1.0.5", "orders-a"),
		istiodDoc("istiod-old", "2026-12-01T00:00:00Z"), istiodDoc("istiod-new", "2026-12-04T00:00:00Z"))
	remote := recordedDocs(t, mcNamespaceDoc("network2"), mcServiceDoc, mcPodDoc("orders-b", "10.2.0.5", "cluster2"), mcSliceDoc("10.2.0.5", "orders-b"), mcGatewayDoc("network2", 15443))
	syncz := func(proxy string) []byte {
		return []byte(strings.Replace(string(envoyTestdata(t, "syncz.json")), `"proxy": "web-7d9.shop"`, `"proxy": "`+proxy+`"`, 1))
	}
	synced := istiodSample(t, "clusterz-remote.json")
	timedOut := []byte(strings.Replace(string(synced), `"syncStatus":"synced"}]`, `"syncStatus":"timeout"}]`, 1))
	c := perReplica{withRemotes: withRemotes{Cluster: local.(*recorded.Cluster), remotes: []cluster.Remote{{Context: "ctx2", Cluster: remote}}},
		answers: map[string]map[string][]byte{
			"istiod-old": {cluster.SynczPath: syncz("someone-else.shop"), istiodparse.ClusterzPath: synced},
			"istiod-new": {cluster.SynczPath: syncz("web-1.shop"), istiodparse.ClusterzPath: timedOut},
		}}
	r := MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	if got, _ := r.Facts["mc_remote_secret_stale"].([]string); len(got) != 1 || !strings.Contains(got[0], "is timeout in istiod's clusterz") {
		t.Errorf("mc_remote_secret_stale = %q: the caller's replica (istiod-new) says timeout", got)
	}
	if got := r.Facts["mc_istiod_asked"]; !strings.Contains(r.Evidence.Raw, "istiod asked: istiod-new, the replica the caller shop/web-1 is connected to") || got != "istiod-new, the replica the caller shop/web-1 is connected to (its syncz lists it)" {
		t.Errorf("mc_istiod_asked = %q; the evidence does not name the replica asked:\n%s", got, r.Evidence.Raw)
	}

	// No replica lists the caller: the first is asked, and that is said.
	c.answers["istiod-new"][cluster.SynczPath] = syncz("someone-else.shop")
	r = MultiClusterProbe{}.Run(context.Background(), c, mcTarget)
	if !strings.Contains(r.Evidence.Raw, "no istiod replica's syncz lists the caller shop/web-1") {
		t.Errorf("caller not found: the evidence does not say so:\n%s", r.Evidence.Raw)
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

// withIstiodOnly is a one-cluster source whose istiod answers clusterz.
type withIstiodOnly struct {
	*recorded.Cluster
	clusterz []byte
}

func (w withIstiodOnly) Istiod(_ context.Context, _, path string) ([]byte, error) {
	if path == istiodparse.ClusterzPath {
		return w.clusterz, nil
	}
	return nil, &cluster.UnreachableError{What: "istiod", Err: fmt.Errorf("GET %s: %w", path, cluster.ErrNotFound)}
}

// Given no other cluster, while istiod reads cluster2 through a remote
// secret (the lab istiod's real clusterz): the mesh spans a cluster this
// triage did not read, and the on-call is told which and how to give it.
// istiod reading only its own cluster is a plain pass.
func TestMultiClusterProbeSaysRemotesNotGiven(t *testing.T) {
	local := recordedDocs(t, mcNamespaceDoc("network1"), mcServiceDoc).(*recorded.Cluster)
	r := MultiClusterProbe{}.Run(context.Background(), cluster.NewCache(withIstiodOnly{local, istiodSample(t, "clusterz-remote.json")}), mcTarget)
	got, _ := r.Facts["mc_istiod_clusters_not_given"].([]string)
	if r.Status != StatusWarn || r.Facts["mc_remotes_given"] != false || len(got) != 1 ||
		got[0] != "cluster2 (secret istio-system/istio-remote-secret-cluster2): istiod reads cluster cluster2; it was not given (--remote-contexts), so its objects were not read" ||
		!strings.Contains(r.Summary, "istiod reads 1 cluster besides its own") {
		t.Errorf("status %s: %s; mc_istiod_clusters_not_given = %q", r.Status, r.Summary, got)
	}

	r = MultiClusterProbe{}.Run(context.Background(), cluster.NewCache(withIstiodOnly{local, istiodSample(t, "clusterz-config-only.json")}), mcTarget)
	if got, ok := r.Facts["mc_istiod_clusters_not_given"].([]string); r.Status != StatusPass || r.Summary != cluster.RemotesNotRecorded || !ok || len(got) != 0 {
		t.Errorf("own cluster only: status %s: %s; mc_istiod_clusters_not_given = %#v", r.Status, r.Summary, r.Facts["mc_istiod_clusters_not_given"])
	}
}
