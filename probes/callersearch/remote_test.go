package callersearch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/prometheus"
)

// current is the triage's own cluster, named by its kubeconfig context and
// given the mesh's remote clusters, as a live client given
// --remote-contexts is.
type current struct {
	*recorded.Cluster // PodsByIP promoted
	context           string
	remotes           []cluster.Remote
}

func (c current) Info() cluster.ClusterInfo {
	i := c.Cluster.Info()
	i.Context = c.context
	return i
}

func (c current) RemoteClusters() ([]cluster.Remote, string) { return c.remotes, "" }

// refusing is a remote cluster whose credentials the API server refuses.
type refusing struct{ cluster.Cluster }

func (refusing) GetService(context.Context, string, string) (*corev1.Service, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "orders", errors.New("user cannot get services in shop"))
}

// mcPod is a pod of Deployment app (ReplicaSet app-7d9c), named
// app-7d9c-id.
func mcPod(app, id, ip, clusterID string) *corev1.Pod {
	controller := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-7d9c-" + id, GenerateName: app + "-7d9c-", Namespace: "shop",
			Labels:          map[string]string{"app": app, "pod-template-hash": "7d9c", "security.istio.io/tlsMode": "istio"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9c", Controller: &controller}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: app, Image: app},
			{Name: "istio-proxy", Image: "proxyv2", Env: []corev1.EnvVar{{Name: "ISTIO_META_CLUSTER_ID", Value: clusterID}}}}},
		Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

var ordersService = &corev1.Service{
	ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
	Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "orders"}, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
}

// inbound503 is an orders replica's sidecar's inbound entry, Istio's
// default TEXT layout, of a 503 to a request from peer.
func inbound503(replicaIP, peer string) string {
	return fmt.Sprintf(`[2026-12-02T04:59:33.001Z] "GET /api/orders/1 HTTP/1.1" 503 UF upstream_reset_before_response_started{connection_failure} - "-" 0 91 1 - "-" "Go-http-client/1.1" "ee8fd9e4-d8f0-4460-b93e-734a135311f9" "orders:8080" "%[1]s:8080" inbound|8080|| 127.0.0.6:43642 %[1]s:8080 %[2]s:40750 outbound_.8080_._.orders.shop.svc.cluster.local default`+"\n", replicaIP, peer)
}

func recordedWith(t *testing.T, logs map[string]string, objs ...runtime.Object) *recorded.Cluster {
	t.Helper()
	s := recorded.FromObjects("test", objs)
	for pod, log := range logs {
		s.Logs[recorded.LogKey{Pod: cluster.PodRef{Namespace: "shop", Name: pod}, Container: "istio-proxy"}] = []byte(log)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*recorded.Cluster)
}

var ordersTarget = cluster.Target{Namespace: "shop", Service: "orders"}

// c1 holds an orders replica that logged nothing and a web pod; c2 an
// orders replica that logged the 503s of web-2, a pod of c2 only.
func twoClustersCallerInC2(t *testing.T) (current, *recorded.Cluster) {
	local := recordedWith(t, map[string]string{"orders-7d9c-a": ""}, ordersService,
		mcPod("orders", "a", "10.1.0.5", "cluster1"), mcPod("web", "1", "10.1.0.9", "cluster1"))
	remote := recordedWith(t, map[string]string{"orders-7d9c-b": inbound503("10.2.0.5", "10.2.0.9") + inbound503("10.2.0.5", "10.2.0.9")}, ordersService,
		mcPod("orders", "b", "10.2.0.5", "cluster2"), mcPod("web", "2", "10.2.0.9", "cluster2"))
	return current{Cluster: local, context: "c1", remotes: []cluster.Remote{{Context: "c2", Cluster: remote}}}, remote
}

// The 503s are logged by c2's replica, from a pod of c2 (not found by IP
// in c1): the caller is c2's pod, said with its context, and not read as
// the triage's caller (the probes read the caller through c1); the
// summary says so with the check that triages from c2; c1's best
// candidate is still read.
func TestFindCallersFindsARemoteCallerByIPInItsCluster(t *testing.T) {
	c, _ := twoClustersCallerInC2(t)
	res := callersearch.Find(context.Background(), cluster.NewCache(c), ordersTarget, callersearch.Options{})
	if len(res.Remote) == 0 {
		t.Fatalf("no remote candidate: %s", res.Summary())
	}
	got := res.Remote[0]
	if got.Context != "c2" || got.Pod != (cluster.PodRef{Namespace: "shop", Name: "web-7d9c-2"}) || got.By != callersearch.ByInboundLog || got.Name() != "c2: shop/web-7d9c-2" {
		t.Errorf("remote candidate %+v, want c2: shop/web-2 from the inbound log", got)
	}
	if !strings.Contains(got.Why, "2 failed of 2 requests from 10.2.0.9") || !strings.Contains(got.Why, "cluster c2") {
		t.Errorf("why %q: want c2's replica's 2 failed requests", got.Why)
	}
	const wantCmd = "meshtriage check --context c2 --remote-contexts c1 -n shop svc/orders --from shop/pod/web-7d9c-2"
	if got.Triage != wantCmd {
		t.Errorf("triage command %q, want %q", got.Triage, wantCmd)
	}
	if !res.RemoteFirst {
		t.Errorf("the remote caller is the most likely one; RemoteFirst false: %s", res.Summary())
	}
	for _, cl := range res.Callers {
		if cl.Context != "" || cl.Pod.Name == "web-7d9c-2" {
			t.Errorf("caller %+v read through the current cluster", cl)
		}
	}
	if len(res.Callers) == 0 || res.Callers[0].Pod.Name != "web-7d9c-1" {
		t.Errorf("callers %+v: want c1's best candidate, web-1, still read", res.Callers)
	}
	sum := res.Summary()
	t.Log(sum)
	if !strings.Contains(sum, "the most likely caller, c2: shop/web-7d9c-2") || !strings.Contains(sum, "not read") || !strings.Contains(sum, wantCmd) {
		t.Errorf("summary %q: want the remote caller said plainly, with the command from its side", sum)
	}
}

// A remote cluster that refuses its reads is unread, never "no callers
// there".
func TestFindCallersSaysARemoteUnread(t *testing.T) {
	c, remote := twoClustersCallerInC2(t)
	c.remotes = []cluster.Remote{{Context: "c2", Cluster: refusing{remote}}}
	res := callersearch.Find(context.Background(), cluster.NewCache(c), ordersTarget, callersearch.Options{})
	problems := strings.Join(res.Problems, "; ")
	if !strings.Contains(problems, "cluster c2 (--remote-contexts) not read, so its callers are not known") || !strings.Contains(problems, "forbidden") {
		t.Errorf("problems %q: want c2 said unread, with why", problems)
	}
	if len(res.Remote) != 0 {
		t.Errorf("remote candidates %+v from a cluster not read", res.Remote)
	}
	// c1's web is found and read; the summary still says c2 unread.
	if sum := res.Summary(); len(res.Callers) == 0 || !strings.Contains(sum, "cluster c2 (--remote-contexts) not read") {
		t.Errorf("summary %q: want c2 said unread beside the callers read", sum)
	}
	for _, s := range res.Searched {
		if strings.Contains(s, "c2") {
			t.Errorf("searched %q: c2 was not searched", s)
		}
	}
}

// Prometheus's source_cluster attributes a workload to its cluster: web
// runs in both clusters, and only c2's copy (cluster ID cluster2) gets
// 503s; it is that one, in c2, not c1's web, that is the most likely. A
// source_cluster no context reads is said, not looked for in c1.
func TestFindCallersAttributesPrometheusSourcesToTheirCluster(t *testing.T) {
	c, _ := twoClustersCallerInC2(t)
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.FormValue("query")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[
{"metric":{"source_workload":"web","source_workload_namespace":"shop","source_cluster":"cluster1","response_code":"200"},"value":[1,"7.5"]},
{"metric":{"source_workload":"web","source_workload_namespace":"shop","source_cluster":"cluster2","response_code":"503"},"value":[1,"2.5"]},
{"metric":{"source_workload":"batch","source_workload_namespace":"shop","source_cluster":"cluster9","response_code":"503"},"value":[1,"1"]}]}}`)
	}))
	defer srv.Close()
	res := callersearch.Find(context.Background(), cluster.NewCache(c), ordersTarget, callersearch.Options{Prometheus: prometheus.Client{URL: srv.URL}, Now: time.Unix(1, 0)})
	if !strings.Contains(query, "source_cluster") {
		t.Errorf("query %s: want the rates by source_cluster too", query)
	}
	if !res.RemoteFirst || len(res.Remote) == 0 {
		t.Fatalf("want c2's web first: %s", res.Summary())
	}
	if got := res.Remote[0]; got.Name() != "c2: shop/web-7d9c-2" || got.By != callersearch.ByPrometheus || !strings.Contains(got.Why, "2.50 503/s") || !strings.Contains(got.Why, "source_cluster cluster2") {
		t.Errorf("remote candidate %+v, want c2: shop/web-2 from Prometheus at 2.5 503/s of cluster2", got)
	}
	if len(res.Callers) == 0 || res.Callers[0].Pod.Name != "web-7d9c-1" || !strings.HasPrefix(res.Callers[0].Why, "0 503/s of 7.50 req/s") {
		t.Errorf("callers %+v: want c1's web-1 with its own rates (no 503s)", res.Callers)
	}
	if problems := strings.Join(res.Problems, "; "); !strings.Contains(problems, "shop/batch") || !strings.Contains(problems, "cluster9") {
		t.Errorf("problems %q: want batch of cluster9 said not looked for", problems)
	}
}
