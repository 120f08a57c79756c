//go:build integration

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networkingv1 "istio.io/api/networking/v1"
	networkingclientv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/mesh/meshtest"
	istiodparse "github.com/meshtriage/meshtriage/probes/parse/istiod"
)

// Names of the two-cluster lab (testdata/multicluster).
const (
	remoteClusterID = "cluster2"
	mcOrdersCluster = "outbound|8080||orders.shop.svc.cluster.local"
	eastWestIP      = "172.18.2.10"
	networkLabel    = "topology.istio.io/network"
)

// multiClusterLab is two labs, each its own etcd, API server and fake
// kubelet, and a primary istiod on the first, started with the remote
// timeout short (a remote that never syncs holds istiod's readiness that
// long). Each cluster's objects of testdata/multicluster are applied.
type multiClusterLab struct {
	c1, c2 *Lab
	istiod *Istiod
	caller *corev1.Pod
	// eastWest is cluster 2's east-west gateway pod.
	eastWest *corev1.Pod
	// s1 is cluster 1's input, as a triage of it would be given.
	s1 *recorded.Scenario
}

func startMultiClusterLab(t *testing.T) *multiClusterLab {
	t.Helper()
	m := &multiClusterLab{c1: StartT(t, Options{}), c2: StartT(t, Options{})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	i, err := StartIstiodEnv(ctx, m.c1, "PILOT_REMOTE_CLUSTER_TIMEOUT=5s")
	if err != nil {
		t.Fatalf("start istiod: %v", err)
	}
	m.istiod = i
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("istiod log tail:\n%s", tail(i.Log, 60))
		}
		i.Stop()
	})
	objs1 := meshtest.Objects(t, "testdata/multicluster", "cluster1.yaml")
	objs2 := meshtest.Objects(t, "testdata/multicluster", "cluster2.yaml")
	m.s1 = recorded.FromObjects("multicluster/cluster1", objs1)
	if _, err := Apply(ctx, m.c1, m.s1); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, m.c2, recorded.FromObjects("multicluster/cluster2", objs2)); err != nil {
		t.Fatal(err)
	}
	if err := i.WaitKnows(ctx, objs1); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs1 {
		if p, ok := o.(*corev1.Pod); ok && p.Name == "web-1" {
			m.caller = p
		}
	}
	for _, o := range objs2 {
		if p, ok := o.(*corev1.Pod); ok && p.Labels["istio"] == "eastwestgateway" {
			m.eastWest = p
		}
	}
	for _, pod := range IstiodPods(m.s1) {
		i.ServeAs(pod)
	}
	return m
}

// TestMultiClusterAgainstIstiod: a primary istiod reads a second cluster
// only through a remote secret, and then gives a caller of the first
// cluster the second's endpoints of the same Service: the pods' own
// addresses on a flat network, the east-west gateway's address once the
// clusters are on two networks and the second has a gateway; each step
// also against the config model, cluster by cluster. Without the secret,
// or with one istiod cannot use, istiod lists no such cluster (or lists it
// timed out) and pushes none of its endpoints: what
// multicluster.remote-secret-missing and -stale stand on. The second
// cluster's east-west gateway gets its 15443 passthrough only from an
// AUTO_PASSTHROUGH Gateway of the config cluster: what
// multicluster.eastwest-not-passthrough stands on. Then each gateway and
// network label istiod cannot use (unusableGatewaySteps): cluster 2's
// pods go to the caller direct.
func TestMultiClusterAgainstIstiod(t *testing.T) {
	start := time.Now()
	m := startMultiClusterLab(t)
	t.Logf("two clusters and istiod up in %s", time.Since(start).Round(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sc, err := m.istiod.ConnectSidecar(ctx, m.caller)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()

	local := "10.244.1.10:8080 weight=1 tlsMode=istio cluster=Kubernetes"
	t.Run("without the remote secret", func(t *testing.T) {
		clusters := clusterzIDs(t, m.istiod)
		if !slices.Equal(clusters, []string{IstiodClusterID + " synced"}) {
			t.Errorf("clusterz = %v, want only the config cluster", clusters)
		}
		waitPushedEndpoints(t, sc, local)
		compareWithModel(t, m, sc)
		captureDebug(t, m.istiod, "no-remote")
		wantShards(t, m.istiod,
			"Kubernetes/Kubernetes 10.244.1.10:8080 network= cluster=Kubernetes tlsMode=istio Healthy")
		if gws := networkz(t, m.istiod); len(gws) != 0 {
			t.Errorf("networkz = %v, want no gateway", gws)
		}
	})
	if t.Failed() {
		return
	}

	if err := m.istiod.AddRemote(ctx, m.c2, remoteClusterID); err != nil {
		t.Fatal(err)
	}
	t.Run("flat network", func(t *testing.T) {
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		if err := m.istiod.WaitClusterz(wctx, remoteClusterID, "synced"); err != nil {
			t.Fatal(err)
		}
		c2, _ := clusterz(t, m.istiod).Find(remoteClusterID)
		if ns, name := c2.Secret(); ns != cluster.DefaultControlPlane || name != "istio-remote-secret-"+remoteClusterID {
			t.Errorf("clusterz secretName of %s = %q", remoteClusterID, c2.SecretName)
		}
		// No network anywhere: every endpoint is on every proxy's network,
		// so the remote pods come as they are, mTLS or not.
		waitPushedEndpoints(t, sc, local,
			"10.245.1.10:8080 weight=1 tlsMode=istio cluster="+remoteClusterID,
			"10.245.1.11:8080 weight=1 tlsMode= cluster="+remoteClusterID,
			"10.245.1.12:8080 weight=1 tlsMode=istio cluster="+remoteClusterID)
		compareWithModel(t, m, sc)
		captureDebug(t, m.istiod, "flat")
		productReads(t, m, remoteClusterID+" synced", []string{"Kubernetes/Kubernetes", "Kubernetes/" + remoteClusterID})
		wantShards(t, m.istiod,
			"Kubernetes/Kubernetes 10.244.1.10:8080 network= cluster=Kubernetes tlsMode=istio Healthy",
			"Kubernetes/cluster2 10.245.1.10:8080 network= cluster=cluster2 tlsMode=istio Healthy",
			"Kubernetes/cluster2 10.245.1.11:8080 network= cluster=cluster2 tlsMode=disabled Healthy",
			"Kubernetes/cluster2 10.245.1.12:8080 network= cluster=cluster2 tlsMode=istio Healthy")
	})

	t.Run("east-west gateway", func(t *testing.T) {
		// Each cluster's istio-system names its network (the endpoints'
		// network, §1.3), and cluster 2 has a gateway for network2: a
		// Service labelled with it, with port 15443 and an external
		// address.
		labelNamespace(t, m.c1, cluster.DefaultControlPlane, networkLabel, "network1")
		labelNamespace(t, m.c2, cluster.DefaultControlPlane, networkLabel, "network2")
		gw := eastWestService()
		if _, err := m.c2.Kube.CoreV1().Services(gw.Namespace).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The caller is on network1 with cluster 1's pod: direct. Cluster
		// 2's two mTLS pods as one endpoint, the gateway's, with their
		// summed weight (one gateway: no scaling); its plaintext one
		// dropped (the gateway routes by the SNI of Istio's mTLS only).
		waitPushedEndpoints(t, sc, local,
			eastWestIP+":15443 weight=2 tlsMode=istio cluster="+remoteClusterID)
		compareWithModel(t, m, sc)
		captureDebug(t, m.istiod, "eastwest")
		if gws := networkz(t, m.istiod); !slices.Equal(gws, []string{"network2 cluster2 " + eastWestIP + ":15443 hbone=0"}) {
			t.Errorf("networkz = %v", gws)
		}
		// istiod's index keeps every endpoint with its network: the
		// gateway and the mTLS filter are applied per caller at push.
		wantShards(t, m.istiod,
			"Kubernetes/Kubernetes 10.244.1.10:8080 network=network1 cluster=Kubernetes tlsMode=istio Healthy",
			"Kubernetes/cluster2 10.245.1.10:8080 network=network2 cluster=cluster2 tlsMode=istio Healthy",
			"Kubernetes/cluster2 10.245.1.11:8080 network=network2 cluster=cluster2 tlsMode=disabled Healthy",
			"Kubernetes/cluster2 10.245.1.12:8080 network=network2 cluster=cluster2 tlsMode=istio Healthy")
	})

	t.Run("east-west gateway's own config", func(t *testing.T) {
		// Cluster 2's gateway pod, a proxy of cluster 2 (ISTIO_META_CLUSTER_ID:
		// istiod finds its pod in that cluster's registry), connects to the
		// primary. Without a Gateway of the config cluster selecting it
		// with an AUTO_PASSTHROUGH server it gets no listener on 15443
		// (the evidence for eastwest-not-passthrough); with one, a 15443
		// listener with a filter chain for orders' SNI and the SNI-DNAT
		// cluster holding only network2's mTLS endpoints.
		node, err := SidecarNode(m.eastWest, IstioRelease)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(node.GetId(), "router~") {
			t.Fatalf("the east-west gateway connects as %s", node.GetId())
		}
		ew, err := ConnectXDS(ctx, m.istiod.GRPCAddr, node)
		if err != nil {
			t.Fatal(err)
		}
		defer ew.Close()
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		if err := ew.WaitSynced(wctx); err != nil {
			t.Fatal(err)
		}
		if err := ew.WaitQuiet(wctx, time.Second); err != nil {
			t.Fatal(err)
		}
		if got := passthrough(ew); got != "no 15443 listener" {
			t.Errorf("without a Gateway: %s", got)
		}
		createCrossNetworkGateway(t, m.c1)
		want := "15443 listener with SNI " + sniCluster + "; " + sniCluster + ": 10.245.1.10:8080,10.245.1.12:8080"
		err = ew.WaitFor(wctx, "the AUTO_PASSTHROUGH config", func(map[string]*XDSTypeState) bool { return passthroughLocked(ew) == want })
		if err != nil {
			t.Fatalf("%v: have %s, want %s", err, passthrough(ew), want)
		}
	})

	unusableGatewaySteps(t, m, sc, local)

	if err := m.istiod.RemoveRemote(ctx, remoteClusterID); err != nil {
		t.Fatal(err)
	}
	t.Run("remote secret deleted", func(t *testing.T) {
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		if err := m.istiod.WaitClusterz(wctx, remoteClusterID, ""); err != nil {
			t.Fatal(err)
		}
		waitPushedEndpoints(t, sc, local)
		compareWithModel(t, m, sc)
		productReads(t, m, "", []string{"Kubernetes/Kubernetes"})
		wantShards(t, m.istiod,
			"Kubernetes/Kubernetes 10.244.1.10:8080 network=network1 cluster=Kubernetes tlsMode=istio Healthy")
	})

	t.Run("remote secrets istiod cannot use", func(t *testing.T) {
		// What clusterz shows for the secrets behind remote-secret-missing
		// and -stale: one in another namespace (#49780) and one whose
		// kubeconfig reads a token file (sanitizeKubeConfig refuses it) are
		// never listed; one keyed by istiod's own cluster ID is ignored;
		// one whose token the API server refuses is listed, syncing, then
		// timeout once PILOT_REMOTE_CLUSTER_TIMEOUT passes. Secrets are
		// handled in order, so once the last is listed the others have
		// been read.
		kubeconfig := func(edit func(*clientcmdapi.AuthInfo)) []byte {
			raw, err := m.c2.RemoteKubeconfig(remoteClusterID)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.Load(raw)
			if err != nil {
				t.Fatal(err)
			}
			edit(cfg.AuthInfos[remoteClusterID])
			out, err := clientcmd.Write(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		keep := func(*clientcmdapi.AuthInfo) {}
		secrets := []struct {
			namespace, name, key string
			data                 []byte
		}{
			{"default", "istio-remote-secret-elsewhere", "cluster-elsewhere", kubeconfig(keep)},
			{cluster.DefaultControlPlane, "istio-remote-secret-tokenfile", "cluster-tokenfile", kubeconfig(func(a *clientcmdapi.AuthInfo) {
				a.Token, a.TokenFile = "", "/var/run/secrets/kubernetes.io/serviceaccount/token"
			})},
			{cluster.DefaultControlPlane, "istio-remote-secret-self", IstiodClusterID, kubeconfig(keep)},
			{cluster.DefaultControlPlane, "istio-remote-secret-badtoken", "cluster-badtoken", kubeconfig(func(a *clientcmdapi.AuthInfo) { a.Token = "not-a-token" })},
		}
		for _, sec := range secrets {
			obj := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: sec.name, Namespace: sec.namespace, Labels: map[string]string{MultiClusterSecretLabel: "true"}},
				Data:       map[string][]byte{sec.key: sec.data},
			}
			if _, err := m.c1.Kube.CoreV1().Secrets(sec.namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		if err := m.istiod.WaitClusterz(wctx, "cluster-badtoken", istiodparse.SyncStatusTimeout); err != nil {
			t.Fatal(err)
		}
		got := clusterzIDs(t, m.istiod)
		if want := []string{IstiodClusterID + " synced", "cluster-badtoken timeout"}; !slices.Equal(got, want) {
			t.Errorf("clusterz = %v, want %v", got, want)
		}
		if c, _ := clusterz(t, m.istiod).Find(IstiodClusterID); c.Remote() {
			t.Errorf("the config cluster is listed from secret %s", c.SecretName)
		}
		// Not listed for the reasons istiod gives (its log is the only
		// place it says them).
		log, err := os.ReadFile(m.istiod.Log)
		if err != nil {
			t.Fatal(err)
		}
		for _, why := range []string{"tokenFile is not allowed", "ignoring cluster as it would overwrite the config cluster"} {
			if !strings.Contains(string(log), why) {
				t.Errorf("istiod's log does not say %q", why)
			}
		}
		if strings.Contains(string(log), "cluster-elsewhere") {
			t.Error("istiod read the secret of namespace default")
		}
		waitPushedEndpoints(t, sc, local)
		for _, sec := range secrets {
			if err := m.c1.Kube.CoreV1().Secrets(sec.namespace).Delete(ctx, sec.name, metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
		}
	})
}

// eastWestService is cluster 2's east-west gateway Service as the
// east-west step creates it: labelled with network2, port 15443, the
// external address eastWestIP.
func eastWestService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-eastwestgateway", Namespace: cluster.DefaultControlPlane,
			Labels: map[string]string{"istio": "eastwestgateway", networkLabel: "network2"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"istio": "eastwestgateway"},
			Ports: []corev1.ServicePort{
				{Name: "status-port", Port: 15021, TargetPort: intstr.FromInt32(15021)},
				{Name: "tls", Port: 15443, TargetPort: intstr.FromInt32(15443)},
			},
			ExternalIPs: []string{eastWestIP},
		},
	}
}

// productReads reads clusterz, networkz and endpointShardz as a triage of
// cluster 1 would: the product's helpers (cluster.IstiodClusters, ...)
// through the live cluster, reaching istiod's pod through
// pods/portforward. It requires cluster2 "ID STATUS" in clusterz (none:
// "") and orders' shards to be shards.
func productReads(t *testing.T, m *multiClusterLab, remote string, shards []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := liveCluster(t, m.c1.Kubeconfig, m.s1, 20*time.Second)
	clusters, err := cluster.IstiodClusters(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	if c2, ok := clusters.Find(remoteClusterID); ok {
		got = c2.ID + " " + c2.SyncStatus
	}
	if got != remote {
		t.Errorf("clusterz through the product: %s = %q, want %q", remoteClusterID, got, remote)
	}
	if _, err := cluster.IstiodNetworkGateways(ctx, c, ""); err != nil {
		t.Error(err)
	}
	services, err := cluster.IstiodEndpointShards(ctx, c, "", func(host, ns string) bool { return host == "orders.shop.svc.cluster.local" })
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range services {
		for _, sh := range s.Shards {
			keys = append(keys, sh.Key())
		}
	}
	if !slices.Equal(keys, shards) {
		t.Errorf("endpointShardz through the product: orders' shards %v, want %v", keys, shards)
	}
}

// wantShards requires orders' endpoints in istiod's index to be want
// (shardEndpoints' lines). The caller's EDS is awaited first: istiod
// indexes endpoints before it pushes them.
func wantShards(t *testing.T, i *Istiod, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := shardEndpoints(t, i); !slices.Equal(got, want) {
		t.Errorf("endpointShardz of orders:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// compareWithModel compares orders' endpoints istiod pushed to the caller
// with the product's multi-cluster model: callerview.ReadClusters reads
// cluster 1 (the current context) and, when clusterz lists it synced,
// cluster 2 (a remote context) as a triage of cluster 1 with
// --remote-contexts reads them, and mesh.MultiClusterEndpoints and
// CallerEndpoints say what the caller gets. Each endpoint the model
// decides must be pushed with its address, port, weight, tlsMode, the
// cluster istio.workload ends with and direct or through a gateway (the
// weight and cluster only where the model states them); the model must
// leave exactly the addresses undecided undecided (what it cannot know:
// a hostname gateway, a gateway Service without an address), and istiod
// may push for those what it likes; nothing else.
func compareWithModel(t *testing.T, m *multiClusterLab, sc *Sidecar, undecided ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := liveCluster(t, m.c1.Kubeconfig, m.s1, 20*time.Second)
	var remotes []cluster.Remote
	for _, cz := range clusterz(t, m.istiod) {
		switch {
		case cz.SyncStatus != istiodparse.SyncStatusSynced:
			t.Fatalf("clusterz lists %s %s", cz.ID, cz.SyncStatus)
		case cz.ID == remoteClusterID:
			remotes = append(remotes, cluster.Remote{Context: remoteClusterID, Cluster: liveCluster(t, m.c2.Kubeconfig, m.s1, 20*time.Second)})
		case cz.ID != IstiodClusterID:
			t.Fatalf("clusterz lists %s, which the lab does not run", cz.ID)
		}
	}
	c.SetRemotes(remotes)
	reads := callerview.ReadClusters(ctx, c, cluster.Target{Namespace: "shop", Service: "orders", Port: 8080})
	if reads.MeshUnknown != "" {
		t.Fatal(reads.MeshUnknown)
	}
	mc := mesh.MultiClusterEndpoints(mesh.CallerFromPod(m.caller), reads.Mesh.Networks, reads.Reads)
	if len(mc.Unread) > 0 || len(mc.Unknown) > 0 {
		t.Fatalf("the model read: unread %v, unknown %v", mc.Unread, mc.Unknown)
	}
	eps, left := mc.CallerEndpoints("http")
	var gotUndecided []string
	for _, e := range left {
		gotUndecided = append(gotUndecided, e.Address)
	}
	slices.Sort(gotUndecided)
	slices.Sort(undecided)
	if !slices.Equal(gotUndecided, undecided) {
		t.Errorf("the model leaves undecided %v, want %v", left, undecided)
	}
	pushed := map[string]string{}
	weights := pushedWeights(sc, mcOrdersCluster)
	if pc := sc.XDS.Pushed()[mcOrdersCluster]; pc != nil {
		for _, e := range pc.Endpoints {
			// istiod writes a gateway's endpoint with the telemetry of no
			// workload, only the gateway's cluster (;;;;CLUSTER).
			path := "direct"
			if strings.HasPrefix(e.Workload, ";") {
				path = "gateway"
			}
			pushed[e.Key()] = describePushedEndpoint(e, weights[e.Key()]) + " " + path
		}
	}
	var model []string
	for _, e := range eps {
		weight, cl, path := fmt.Sprint(e.Weight), e.Cluster, "direct"
		if e.WeightUnknown != "" {
			weight = `\d+`
		}
		if !e.ClusterKnown {
			cl = `.*`
		}
		if e.Gateway != nil {
			path = "gateway"
		}
		line := fmt.Sprintf("%s weight=%s tlsMode=%s cluster=%s %s", regexp.QuoteMeta(e.String()), weight, regexp.QuoteMeta(e.TLSMode), cl, path)
		model = append(model, line)
		got, ok := pushed[e.String()]
		if ok && regexp.MustCompile("^"+line+"$").MatchString(got) {
			delete(pushed, e.String())
			continue
		}
		t.Errorf("the model's %s: istiod pushed %q", line, got)
	}
	if len(pushed) > 0 && len(left) == 0 {
		t.Errorf("istiod pushed %v, which the model does not have (it has %v)", slices.Sorted(maps.Values(pushed)), model)
	}
}

// sniCluster is the cluster an AUTO_PASSTHROUGH gateway forwards orders'
// port 8080 to, named by the SNI the caller's Envoy sends.
const sniCluster = "outbound_.8080_._.orders.shop.svc.cluster.local"

// passthrough describes what a gateway's xDS client holds for orders'
// AUTO_PASSTHROUGH: whether a listener on 15443 has a filter chain
// matching sniCluster's SNI, and that cluster's endpoints.
func passthrough(c *XDSClient) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return passthroughLocked(c)
}

func passthroughLocked(c *XDSClient) string {
	var listener *listenerv3.Listener
	for _, r := range c.types[ListenerType].Resources {
		if l := r.Message.(*listenerv3.Listener); l.GetAddress().GetSocketAddress().GetPortValue() == 15443 {
			listener = l
		}
	}
	if listener == nil {
		return "no 15443 listener"
	}
	out := "15443 listener without SNI " + sniCluster
	for _, fc := range listener.GetFilterChains() {
		if slices.Contains(fc.GetFilterChainMatch().GetServerNames(), sniCluster) {
			out = "15443 listener with SNI " + sniCluster
		}
	}
	if c.types[ClusterType].Resources[sniCluster] == nil {
		return out + "; no cluster " + sniCluster
	}
	var eps []string
	if res := c.types[EndpointType].Resources[sniCluster]; res != nil {
		for _, le := range res.Message.(*endpointv3.ClusterLoadAssignment).GetEndpoints() {
			for _, lb := range le.GetLbEndpoints() {
				addr, port, _ := endpointAddress(lb)
				eps = append(eps, fmt.Sprintf("%s:%d", addr, port))
			}
		}
	}
	slices.Sort(eps)
	return out + "; " + sniCluster + ": " + strings.Join(eps, ",")
}

// createCrossNetworkGateway creates, in the config cluster,
// samples/multicluster/expose-services.yaml's Gateway: the east-west
// gateways' 15443 in AUTO_PASSTHROUGH for every *.local host.
func createCrossNetworkGateway(t *testing.T, l *Lab) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ic, err := istioclient.NewForConfig(l.Config)
	if err != nil {
		t.Fatal(err)
	}
	gw := &networkingclientv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "cross-network-gateway", Namespace: cluster.DefaultControlPlane},
		Spec: networkingv1.Gateway{
			Selector: map[string]string{"istio": "eastwestgateway"},
			Servers: []*networkingv1.Server{{
				Port:  &networkingv1.Port{Number: 15443, Name: "tls", Protocol: "TLS"},
				Tls:   &networkingv1.ServerTLSSettings{Mode: networkingv1.ServerTLSSettings_AUTO_PASSTHROUGH},
				Hosts: []string{"*.local"},
			}},
		},
	}
	if _, err := ic.NetworkingV1().Gateways(gw.Namespace).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// captureDebug writes istiod's clusterz, networkz and endpointShardz as
// they are at this step into $MESHLAB_CAPTURE_DIR (when set), named
// STEP-clusterz.json and so on: how probes/parse/istiod's testdata was
// taken.
func captureDebug(t *testing.T, i *Istiod, step string) {
	t.Helper()
	dir := os.Getenv("MESHLAB_CAPTURE_DIR")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"clusterz", "networkz", "endpointShardz"} {
		body, err := i.Get(ctx, "/debug/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, step+"-"+name+".json"), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// waitPushedEndpoints waits until the caller holds exactly want as the
// endpoints of orders' cluster (ADDRESS:PORT, the tlsMode of its transport
// socket match and the cluster its istio.workload metadata ends with), or
// fails after 30 s with what it holds.
func waitPushedEndpoints(t *testing.T, sc *Sidecar, want ...string) {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(30 * time.Second)
	var got []string
	for {
		got = got[:0]
		weights := pushedWeights(sc, mcOrdersCluster)
		if pc := sc.XDS.Pushed()[mcOrdersCluster]; pc != nil {
			for _, e := range pc.Endpoints {
				got = append(got, describePushedEndpoint(e, weights[e.Key()]))
			}
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s endpoints after 30 s:\n  %s\nwant:\n  %s", mcOrdersCluster, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func describePushedEndpoint(e PushedEndpoint, weight uint32) string {
	workloadCluster := e.Workload[strings.LastIndex(e.Workload, ";")+1:]
	return fmt.Sprintf("%s weight=%d tlsMode=%s cluster=%s", e.Key(), weight, e.TLSMode, workloadCluster)
}

// pushedWeights are the load-balancing weights istiod sent with the
// endpoints of the EDS cluster name (ADDRESS:PORT → weight; 0 when it sent
// none, which Envoy takes as 1): a gateway's endpoint carries the summed
// weight of the remote endpoints it stands for.
func pushedWeights(sc *Sidecar, name string) map[string]uint32 {
	c := sc.XDS
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]uint32{}
	res := c.types[EndpointType].Resources[name]
	if res == nil {
		return out
	}
	for _, le := range res.Message.(*endpointv3.ClusterLoadAssignment).GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			addr, port, _ := endpointAddress(lb)
			out[fmt.Sprintf("%s:%d", addr, port)] = lb.GetLoadBalancingWeight().GetValue()
		}
	}
	return out
}

// clusterz is istiod's /debug/clusterz through the product's parser.
func clusterz(t *testing.T, i *Istiod) istiodparse.Clusters {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := i.Get(ctx, istiodparse.ClusterzPath)
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := istiodparse.ParseClusterz(body)
	if err != nil {
		t.Fatal(err)
	}
	return clusters
}

// clusterzIDs is clusterz as "ID STATUS", in istiod's order.
func clusterzIDs(t *testing.T, i *Istiod) []string {
	t.Helper()
	var out []string
	for _, c := range clusterz(t, i) {
		out = append(out, c.ID+" "+c.SyncStatus)
	}
	return out
}

// networkz is istiod's /debug/networkz through the product's parser, as
// "NETWORK CLUSTER ADDR:PORT hbone=PORT".
func networkz(t *testing.T, i *Istiod) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := i.Get(ctx, istiodparse.NetworkzPath)
	if err != nil {
		t.Fatal(err)
	}
	gws, err := istiodparse.ParseNetworkz(body)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range gws {
		out = append(out, fmt.Sprintf("%s %s %s:%d hbone=%d", g.Network, g.Cluster, g.Addr, g.Port, g.HBONEPort))
	}
	slices.Sort(out)
	return out
}

// shardEndpoints are the endpoints of orders in istiod's endpoint index
// through the product's parser, one per endpoint as "SHARD ADDRESS:PORT
// network=NETWORK cluster=CLUSTER tlsMode=MODE HEALTH", sorted.
func shardEndpoints(t *testing.T, i *Istiod) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := i.Get(ctx, istiodparse.EndpointShardzPath)
	if err != nil {
		t.Fatal(err)
	}
	services, err := istiodparse.ParseEndpointShardz(body, func(host, ns string) bool {
		return host == "orders.shop.svc.cluster.local" && ns == "shop"
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range services {
		for _, sh := range s.Shards {
			for _, e := range sh.Endpoints {
				out = append(out, fmt.Sprintf("%s %s:%d network=%s cluster=%s tlsMode=%s %s",
					sh.Key(), e.Address(), e.EndpointPort, e.Network, e.ClusterID, e.TLSMode, e.HealthStatus))
			}
		}
	}
	slices.Sort(out)
	return out
}

// labelNamespace sets a label on a namespace of l (value "": removes it),
// creating the namespace if absent.
func labelNamespace(t *testing.T, l *Lab, name, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := l.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns, err = l.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[key] = value
	if value == "" {
		delete(ns.Labels, key)
	}
	if _, err := l.Kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// elbHostname is a load balancer hostname shaped like an AWS ELB's, under
// .invalid (RFC 6761), so it resolves nowhere, istiod's DNS included.
const elbHostname = "a1b2c3d4e5f6-0123456789.us-east-1.elb.invalid"

// unusableGatewaySteps turn cluster 2's working east-west gateway (the
// east-west step: the caller gets 172.18.2.10:15443) into each gateway or
// network label istiod cannot use, one update at a time, and back, so
// every step starts from the working gateway and the change alone is what
// istiod reacted to: what multicluster.gateway-unusable,
// -gateway-hostname-unresolved and -network-label-missing and -disagrees
// stand on, and the ways out next to them (a static meshNetworks gateway,
// the gatewayPort label, an external IP). istiod keeps cluster 2's
// endpoints in its index throughout. Where it has no usable gateway for
// their network the sidecar caller gets them direct, their pod IPs, the
// plaintext pod too: with no gateway anywhere every endpoint goes as it
// is, and an endpoint on network "" or on a network without a gateway is
// direct (EndpointsByNetworkFilter). A Service changed in place to one
// with no address is the exception: istiod keeps its old gateway.
func unusableGatewaySteps(t *testing.T, m *multiClusterLab, sc *Sidecar, local string) {
	direct := []string{local,
		"10.245.1.10:8080 weight=1 tlsMode=istio cluster=" + remoteClusterID,
		"10.245.1.11:8080 weight=1 tlsMode= cluster=" + remoteClusterID,
		"10.245.1.12:8080 weight=1 tlsMode=istio cluster=" + remoteClusterID}
	viaGateway := []string{local, eastWestIP + ":15443 weight=2 tlsMode=istio cluster=" + remoteClusterID}
	gateway := []string{"network2 cluster2 " + eastWestIP + ":15443 hbone=0"}
	shards := func(network string) []string {
		return []string{
			"Kubernetes/Kubernetes 10.244.1.10:8080 network=network1 cluster=Kubernetes tlsMode=istio Healthy",
			"Kubernetes/cluster2 10.245.1.10:8080 network=" + network + " cluster=cluster2 tlsMode=istio Healthy",
			"Kubernetes/cluster2 10.245.1.11:8080 network=" + network + " cluster=cluster2 tlsMode=disabled Healthy",
			"Kubernetes/cluster2 10.245.1.12:8080 network=" + network + " cluster=cluster2 tlsMode=istio Healthy",
		}
	}
	restore := func(t *testing.T) {
		t.Helper()
		setEastWestService(t, m.c2, func(*corev1.Service) {})
		labelNamespace(t, m.c2, cluster.DefaultControlPlane, networkLabel, "network2")
		waitPushedEndpoints(t, sc, viaGateway...)
	}
	// expect requires what istiod shows once the caller holds endpoints:
	// its networkz, orders' shards and, when log is not "", that line in
	// its log. expectWithModel also compares the caller's endpoints with
	// the config model's, cluster by cluster; the steps that use only
	// expect say why the model cannot be held to istiod there.
	expect := func(t *testing.T, endpoints, gateways, shards []string, log string) {
		t.Helper()
		if log != "" {
			waitIstiodLog(t, m.istiod, log)
		}
		waitPushedEndpoints(t, sc, endpoints...)
		if got := networkz(t, m.istiod); !slices.Equal(got, gateways) {
			t.Errorf("networkz = %v, want %v", got, gateways)
		}
		wantShards(t, m.istiod, shards...)
	}
	expectWithModel := func(t *testing.T, endpoints, gateways, shards []string, log string, undecided ...string) {
		t.Helper()
		expect(t, endpoints, gateways, shards, log)
		compareWithModel(t, m, sc, undecided...)
	}
	cluster2 := []string{"10.245.1.10", "10.245.1.11", "10.245.1.12"}

	t.Run("gateway publishes only a load balancer hostname", func(t *testing.T) {
		// An ELB: type LoadBalancer, status.loadBalancer.ingress[].hostname
		// only. istiod (RESOLVE_HOSTNAME_GATEWAYS default true) resolves it
		// with its own DNS, fails, and drops the gateway: no gateway
		// anywhere, so cluster 2's pod IPs go to the caller as they are.
		setEastWestService(t, m.c2, func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalIPs = corev1.ServiceTypeLoadBalancer, nil
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: elbHostname}}
		})
		// The model cannot know what istiod's DNS answers, so it leaves
		// cluster 2's endpoints undecided.
		expectWithModel(t, direct, nil, shards("network2"), fmt.Sprintf("could not resolve hostname %q for 1 gateways", elbHostname), cluster2...)
		captureDebug(t, m.istiod, "hostname-unresolved")

		// The fix direction: a static address for network2 in the config
		// cluster's meshNetworks. istiod takes it as network2's gateway of
		// no cluster (meshNetworks gateways have none), and the caller gets
		// cluster 2's mTLS pods through it, weight 2, its istio.workload
		// naming no cluster (";;;;"); deleting it goes back to direct.
		staticIP := "172.18.2.20"
		meshNetworks := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "istio", Namespace: cluster.DefaultControlPlane},
			Data: map[string]string{"meshNetworks": "networks:\n  network2:\n    endpoints: [{fromRegistry: cluster2}]\n" +
				"    gateways: [{address: " + staticIP + ", port: 15443}]\n"},
		}
		configMaps := m.c1.Kube.CoreV1().ConfigMaps(cluster.DefaultControlPlane)
		if _, err := configMaps.Create(context.Background(), meshNetworks, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The model takes meshNetworks from the config cluster for every
		// cluster, as istiod does; cluster 2's endpoints stay undecided
		// there: had istiod resolved the hostname, that gateway of
		// (network2, cluster2) would come before the static one of no
		// cluster (GatewaysForNetworkAndCluster first).
		expectWithModel(t, []string{local, staticIP + ":15443 weight=2 tlsMode=istio cluster="},
			[]string{"network2  " + staticIP + ":15443 hbone=0"}, shards("network2"), "", cluster2...)
		if err := configMaps.Delete(context.Background(), meshNetworks.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		expect(t, direct, nil, shards("network2"), "")
		restore(t)
	})

	t.Run("gateway without its gateway port or 15008", func(t *testing.T) {
		// The Service keeps its label and address but has neither 15443
		// nor 15008: "labeled as gateway, but does not listen".
		setEastWestService(t, m.c2, func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] })
		expectWithModel(t, direct, nil, shards("network2"),
			"service istio-system/istio-eastwestgateway is labeled as gateway, but does not listen neither on port 15443 nor on port 15008")
		restore(t)
		// The label networking.istio.io/gatewayPort moves the gateway
		// port: 15444 with a port 15444 is a gateway there; the label
		// with only 15443 is dropped as above, naming 15444.
		setEastWestService(t, m.c2, func(s *corev1.Service) {
			s.Labels["networking.istio.io/gatewayPort"] = "15444"
			s.Spec.Ports[1].Port = 15444
		})
		expectWithModel(t, []string{local, eastWestIP + ":15444 weight=2 tlsMode=istio cluster=" + remoteClusterID},
			[]string{"network2 cluster2 " + eastWestIP + ":15444 hbone=0"}, shards("network2"), "")
		setEastWestService(t, m.c2, func(s *corev1.Service) { s.Labels["networking.istio.io/gatewayPort"] = "15444" })
		expectWithModel(t, direct, nil, shards("network2"),
			"service istio-system/istio-eastwestgateway is labeled as gateway, but does not listen neither on port 15444 nor on port 15008")
		restore(t)
	})

	t.Run("NodePort gateway without a node selector", func(t *testing.T) {
		// A NodePort Service's node addresses are a gateway's only with
		// the annotation traffic.istio.io/nodeSelector (#39930); without
		// it, and without an external IP, it has no address. istiod's
		// addOrUpdateService re-reads a Service's gateways only when it
		// has an external address (or is a NodePort gateway with the
		// annotation): the working gateway changed in place to such a
		// NodePort is converted (registryz: no external address) but its
		// old gateway stays in networkz and in the caller's EDS, until
		// something makes istiod re-read every Service (a network label
		// or meshNetworks change) or the Service is deleted.
		// With an external IP it is a gateway there, annotation or not
		// (conversion takes spec.externalIPs whatever the type).
		setEastWestService(t, m.c2, func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalIPs = corev1.ServiceTypeNodePort, []string{"172.18.2.11"}
		})
		expectWithModel(t, []string{local, "172.18.2.11:15443 weight=2 tlsMode=istio cluster=" + remoteClusterID},
			[]string{"network2 cluster2 172.18.2.11:15443 hbone=0"}, shards("network2"), "")
		restore(t)
		setEastWestService(t, m.c2, func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalIPs = corev1.ServiceTypeNodePort, nil
		})
		waitRegistryAddresses(t, m.istiod, eastWestHost, "")
		// The model reads the Service as it is now, istiod answers from
		// its history: only networkz knows, so the model leaves cluster
		// 2's endpoints undecided.
		expectWithModel(t, viaGateway, gateway, shards("network2"), "", cluster2...)
		// Created as such a NodePort, it is no gateway.
		services := m.c2.Kube.CoreV1().Services(cluster.DefaultControlPlane)
		if err := services.Delete(context.Background(), "istio-eastwestgateway", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRegistryAddresses(t, m.istiod, eastWestHost, "absent")
		nodePort := eastWestService()
		nodePort.Spec.Type, nodePort.Spec.ExternalIPs = corev1.ServiceTypeNodePort, nil
		if _, err := services.Create(context.Background(), nodePort, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRegistryAddresses(t, m.istiod, eastWestHost, "")
		expectWithModel(t, direct, nil, shards("network2"), "", cluster2...)
		restore(t)
	})

	t.Run("load balancer pending", func(t *testing.T) {
		// A LoadBalancer with no ingress yet has no address either: the
		// same branch of addOrUpdateService, so the working gateway changed
		// in place to one keeps its old address as the NodePort does.
		setEastWestService(t, m.c2, func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalIPs = corev1.ServiceTypeLoadBalancer, nil
		})
		waitRegistryAddresses(t, m.istiod, eastWestHost, "")
		expectWithModel(t, viaGateway, gateway, shards("network2"), "", cluster2...)
		restore(t)
	})

	t.Run("network label missing on cluster 2", func(t *testing.T) {
		// Cluster 1's istio-system says network1, cluster 2's nothing: its
		// endpoints are on network "", which is every proxy's network, so
		// they go direct though network2's gateway stands in networkz.
		labelNamespace(t, m.c2, cluster.DefaultControlPlane, networkLabel, "")
		expectWithModel(t, direct, gateway, shards(""), "")
		captureDebug(t, m.istiod, "network-label-missing")
		restore(t)
	})

	t.Run("network labels disagree", func(t *testing.T) {
		// Cluster 2's istio-system says net2, its gateway Service network2:
		// its endpoints are on net2, which has no gateway, so they go
		// direct; networkz lists a gateway for a network no endpoint is on.
		labelNamespace(t, m.c2, cluster.DefaultControlPlane, networkLabel, "net2")
		expectWithModel(t, direct, gateway, shards("net2"), "")
		restore(t)
	})
}

// setEastWestService makes cluster 2's east-west gateway Service
// eastWestService changed by change, in one update of its spec (and one
// of its status when it has or had a load balancer's ingress), so istiod
// never sees a state between the two.
func setEastWestService(t *testing.T, l *Lab, change func(*corev1.Service)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	services := l.Kube.CoreV1().Services(cluster.DefaultControlPlane)
	cur, err := services.Get(ctx, "istio-eastwestgateway", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := eastWestService()
	change(want)
	if len(cur.Status.LoadBalancer.Ingress) > 0 && len(want.Status.LoadBalancer.Ingress) == 0 {
		// Clear the ingress first: a load balancer without one has no
		// address either, so istiod sees no working gateway in between.
		cur.Status.LoadBalancer.Ingress = nil
		if cur, err = services.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want.ResourceVersion = cur.ResourceVersion
	want.Spec.ClusterIP, want.Spec.ClusterIPs = cur.Spec.ClusterIP, cur.Spec.ClusterIPs
	want.Spec.IPFamilies, want.Spec.IPFamilyPolicy = cur.Spec.IPFamilies, cur.Spec.IPFamilyPolicy
	got, err := services.Update(ctx, want, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Status.LoadBalancer.Ingress) > 0 {
		got.Status = want.Status
		if _, err := services.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// eastWestHost is cluster 2's east-west gateway Service's host.
const eastWestHost = "istio-eastwestgateway.istio-system.svc.cluster.local"

// waitRegistryAddresses waits up to 30 s until istiod's /debug/registryz
// (its Services as converted, model.Service) holds host with the external
// addresses want (the gateway addresses it takes from a Service's load
// balancer, externalIPs or nodes, comma-separated over its clusters), or,
// with want "absent", no longer holds host: the sign istiod has converted
// a change of the Service.
func waitRegistryAddresses(t *testing.T, i *Istiod, host, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	got := ""
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		body, err := i.Get(ctx, "/debug/registryz")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var services []struct {
			Hostname   string `json:"hostname"`
			Attributes struct {
				ClusterExternalAddresses struct {
					Addresses map[string][]string
				}
			}
		}
		if err := json.Unmarshal(body, &services); err != nil {
			t.Fatalf("registryz: %v", err)
		}
		got = "absent"
		for _, s := range services {
			if s.Hostname != host {
				continue
			}
			var addrs []string
			for _, c := range slices.Sorted(maps.Keys(s.Attributes.ClusterExternalAddresses.Addresses)) {
				addrs = append(addrs, s.Attributes.ClusterExternalAddresses.Addresses[c]...)
			}
			got = strings.Join(addrs, ",")
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("registryz: %s has external addresses %q after 30 s, want %q", host, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitIstiodLog waits up to 30 s for istiod's log to hold line.
func waitIstiodLog(t *testing.T, i *Istiod, line string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		log, err := os.ReadFile(i.Log)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(log), line) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("istiod's log does not say %q after 30 s:\n%s", line, tail(i.Log, 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
