//go:build integration

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// check without --from, given --remote-contexts c2, where the pod whose
// requests get the 503s is web-2 of c2: c2's orders replica logs them
// (inbound, downstream 10.2.0.9), and c1's replica logs only web-1's 200s.
// The real binary, through one kubeconfig of two contexts against two
// real API servers, finds web-2 in c2 by IP (no pod of c1 has it), names
// it with its context, does not read it as the triage's caller (the
// probes read the caller through c1), says so first with the check that
// triages from c2, and still reads c1's web-1.
func TestRemoteContextsCallerSearchFindsTheCallerInC2(t *testing.T) {
	c1, c2 := startTwoLabs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	inbound := func(replicaIP, peer string, code int, flags string) string {
		return fmt.Sprintf(`[2026-12-02T04:59:33.001Z] "GET /api/orders/1 HTTP/1.1" %d %s via_upstream - "-" 0 91 1 - "-" "Go-http-client/1.1" "ee8fd9e4-d8f0-4460-b93e-734a135311f9" "orders:8080" "%[3]s:8080" inbound|8080|| 127.0.0.6:43642 %[3]s:8080 %[4]s:40750 outbound_.8080_._.orders.shop.svc.cluster.local default`+"\n",
			code, flags, replicaIP, peer)
	}
	side := func(l *Lab, network, clusterID, ordersPod, ordersIP string, log string, extra ...runtime.Object) {
		s := recorded.FromObjects("orders-"+ordersPod, append([]runtime.Object{
			mcNamespace("istio-system", map[string]string{networkLabel: network}), mcNamespace("shop", nil),
			mcService(), mcGatewayService(network), mcPod(ordersPod, ordersIP, clusterID, network), mcSlice(ordersIP, ordersPod),
		}, extra...))
		s.Logs[recorded.LogKey{Pod: cluster.PodRef{Namespace: "shop", Name: ordersPod}, Container: "istio-proxy"}] = []byte(log)
		if _, err := Apply(ctx, l, s); err != nil {
			t.Fatal(err)
		}
	}
	side(c1, "network1", "cluster1", "orders-cluster1", "10.1.0.5", inbound("10.1.0.5", "10.1.0.9", 200, "-"),
		mcPod("web-1", "10.1.0.9", "cluster1", "network1"))
	side(c2, "network2", "cluster2", "orders-cluster2", "10.2.0.5", inbound("10.2.0.5", "10.2.0.9", 503, "UF")+inbound("10.2.0.5", "10.2.0.9", 503, "UF"),
		mcPod("web-2", "10.2.0.9", "cluster2", "network2"))

	args := twoContextKubeconfig(t, c1, c2)
	args = args[:len(args)-2] // no --from: the caller search
	out, stderr, code := runMeshtriage(t, args...)
	var rep struct {
		Search struct {
			Callers []struct {
				Pod     cluster.PodRef `json:"pod"`
				Context string         `json:"context"`
			} `json:"callers"`
			Remote []struct {
				Pod     cluster.PodRef `json:"pod"`
				Context string         `json:"context"`
				By      string         `json:"by"`
				Why     string         `json:"why"`
				Triage  string         `json:"triage"`
			} `json:"remote"`
			RemoteFirst bool     `json:"remote_first"`
			Searched    []string `json:"searched"`
			Problems    []string `json:"problems"`
		} `json:"caller_search"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("exit %d, not the JSON report: %v\n%s\n%s", code, err, out, stderr)
	}
	cs := rep.Search
	if len(cs.Remote) != 1 || cs.Remote[0].Context != "c2" || cs.Remote[0].Pod != (cluster.PodRef{Namespace: "shop", Name: "web-2"}) || cs.Remote[0].By != "inbound-log" ||
		!strings.HasPrefix(cs.Remote[0].Why, "2 failed of 2 requests from 10.2.0.9") {
		t.Fatalf("remote candidates %+v, want c2: shop/web-2 from c2's inbound log (searched %q; problems %q)", cs.Remote, cs.Searched, cs.Problems)
	}
	const wantCmd = "meshtriage check --context c2 --remote-contexts c1 -n shop svc/orders --from shop/pod/web-2"
	if cs.Remote[0].Triage != wantCmd || !cs.RemoteFirst {
		t.Errorf("triage %q (remote first %v), want %q first", cs.Remote[0].Triage, cs.RemoteFirst, wantCmd)
	}
	if len(cs.Callers) != 1 || cs.Callers[0].Pod.Name != "web-1" || cs.Callers[0].Context != "" {
		t.Errorf("callers read %+v, want c1's web-1 only", cs.Callers)
	}

	// The command said runs as printed (with the same kubeconfig): a
	// triage from web-2, in c2 as its current cluster.
	fromC2 := append([]string{args[0], args[1]}, strings.Fields(strings.TrimPrefix(wantCmd, "meshtriage "))...)
	out, stderr, code = runMeshtriage(t, fromC2...)
	var triaged struct {
		Target cluster.Target `json:"target"`
		Steps  []mcStep       `json:"steps"`
	}
	if err := json.Unmarshal(out, &triaged); err != nil || code == 1 {
		t.Fatalf("%v: exit %d, %v\n%s\n%s", fromC2, code, err, out, stderr)
	}
	if triaged.Target.Source == nil || *triaged.Target.Source != (cluster.PodRef{Namespace: "shop", Name: "web-2"}) {
		t.Errorf("%v triaged from %v, want shop/web-2", fromC2, triaged.Target.Source)
	}
	for _, st := range triaged.Steps {
		if st.Probe == "multicluster" && st.Facts["mc_remotes_read"] != float64(1) {
			t.Errorf("from c2: multicluster step %s: %s (c1 not read as its remote)", st.Status, st.Summary)
		}
	}
}
