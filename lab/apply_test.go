package lab

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// The kubelet replays a scenario's logs so that pods/log with sinceSeconds
// and limitBytes returns what the in-memory scenario returns for the same
// LogOptions: the probes then read the same lines in the lab.
func TestReplayedLogsMatchInMemory(t *testing.T) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	compared, cut := 0, 0
	for _, name := range names {
		s, err := recorded.Load(assets.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := recorded.NewCluster(s)
		if err != nil {
			t.Fatal(err)
		}
		k := startTestKubelet(t)
		newest := recorded.NewestLogTime(s.Logs)
		k.SetClock(func() time.Time { return newest })
		for key, data := range s.Logs {
			k.SetLogs(key.Pod, key.Container, key.Previous, stampLines(data, newest))
		}
		for key := range s.Logs {
			for _, since := range []time.Duration{0, 10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute} {
				for _, limit := range []int64{0, 200} {
					want, err := mem.Logs(context.Background(), key.Pod, cluster.LogOptions{Container: key.Container, Previous: key.Previous, Since: since, LimitBytes: limit})
					if err != nil {
						t.Fatalf("%s in memory: %v", name, err)
					}
					q := url.Values{}
					if key.Previous {
						q.Set("previous", "true")
					}
					if since > 0 {
						q.Set("sinceSeconds", fmt.Sprint(int(since.Seconds())))
					}
					if limit == 0 {
						limit = cluster.DefaultLogLimit
					}
					q.Set("limitBytes", fmt.Sprint(limit))
					code, got := getPodLogs(t, k, key.Pod, key.Container, q.Encode())
					if code != 200 || !bytes.Equal([]byte(got), want) {
						t.Errorf("%s %s/%s previous=%v since %s limit %d: kubelet %d %q\nin memory %q", name, key.Pod, key.Container, key.Previous, since, limit, code, got, want)
					}
					compared++
					if since > 0 && len(want) < min(len(s.Logs[key]), int(limit)) {
						cut++
					}
				}
			}
		}
	}
	if compared == 0 || cut == 0 {
		t.Fatalf("%d reads compared, %d cut by a since window: the scenarios no longer exercise sinceSeconds", compared, cut)
	}
}

func getPodLogs(t *testing.T, k *Kubelet, pod cluster.PodRef, container, query string) (int, string) {
	t.Helper()
	resp, err := insecureClient().Get(kubeletURL(k, "/containerLogs/"+pod.Namespace+"/"+pod.Name+"/"+container+"?"+query))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.String()
}

func TestStampLines(t *testing.T) {
	newest := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	lines := stampLines([]byte("starting\n2026-03-01T09:58:00.000000Z info ready\n  continued\n[2026-03-01T09:59:30.123Z] \"GET / HTTP/1.1\" 503 UH\n"), newest)
	want := []time.Time{newest, newest.Add(-2 * time.Minute), newest.Add(-2 * time.Minute), newest.Add(-30*time.Second + 123*time.Millisecond)}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		if !l.Time.Equal(want[i]) {
			t.Errorf("line %d %q stamped %s, want %s", i, l.Text, l.Time, want[i])
		}
	}
}

func TestEtcdKey(t *testing.T) {
	cases := []struct {
		gvr      schema.GroupVersionResource
		ns, name string
		want     string
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "shop", "web-1", "/registry/pods/shop/web-1"},
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "shop", "orders", "/registry/services/specs/shop/orders"},
		{schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, "shop", "orders", "/registry/services/endpoints/shop/orders"},
		{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "shop", "/registry/namespaces/shop"},
		{schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, "shop", "orders-abc", "/registry/endpointslices/shop/orders-abc"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "shop", "web", "/registry/deployments/shop/web"},
		{schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "destinationrules"}, "shop", "orders", "/registry/networking.istio.io/destinationrules/shop/orders"},
		{schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "peerauthentications"}, "istio-system", "default", "/registry/security.istio.io/peerauthentications/istio-system/default"},
	}
	for _, c := range cases {
		if got := etcdKey(c.gvr, c.ns, c.name); got != c.want {
			t.Errorf("etcdKey(%v, %s, %s) = %s, want %s", c.gvr, c.ns, c.name, got, c.want)
		}
	}
}
