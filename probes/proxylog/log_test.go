package proxylog

import (
	"context"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// NewestLog's promise: what it leaves out is the oldest lines, never the
// newest, whatever the lines' lengths. The recorded cluster applies the
// API server's order: the tail, then the byte limit from its oldest line.
func TestNewestLogKeepsTheNewestLines(t *testing.T) {
	pod := cluster.PodRef{Namespace: "shop", Name: "web-1"}
	huge := strings.Repeat("x", 20*LineAllowance) + "\n"
	newest := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("newest-" + string(rune('a'+i)) + "\n")
		}
		return b.String()
	}
	for name, log := range map[string]string{
		"a huge line oldest in the tail":     huge + newest(9),
		"a huge line among the oldest":       "old-1\nold-2\nold-3\n" + huge + newest(6),
		"lines each longer than allowed":     strings.Repeat(strings.Repeat("y", 2*LineAllowance)+"\n", 5) + newest(5),
		"short lines, well within the limit": newest(10),
	} {
		t.Run(name, func(t *testing.T) {
			s := recorded.FromObjects("test", []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: mesh.ProxyContainer}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}})
			s.Logs = map[recorded.LogKey][]byte{{Pod: pod, Container: mesh.ProxyContainer}: []byte(log)}
			c, err := recorded.NewCluster(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := NewestLog(context.Background(), c, pod, cluster.LogOptions{Container: mesh.ProxyContainer, TailLines: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
				if strings.HasPrefix(l, "newest-") && !strings.Contains(string(got), l+"\n") {
					t.Errorf("%s not read; got %d bytes: %.80q...", l, len(got), got)
				}
			}
		})
	}
}

// A request the inbound listener answered itself names no cluster: it is
// the pod's inbound side when it came to the pod's own address, and its
// own outbound call otherwise.
func TestInboundEntryAtTakesLocalRepliesToThePod(t *testing.T) {
	inbound := InboundEntryAt("10.244.1.10")
	for _, c := range []struct {
		e    accesslog.Entry
		want bool
	}{
		{accesslog.Entry{ResponseCode: 426, ResponseCodeDetails: "low_version", DownstreamLocalAddress: "10.244.1.10:8080"}, true},
		{accesslog.Entry{ResponseCode: 426, ResponseCodeDetails: "low_version", DownstreamLocalAddress: "10.96.40.12:8080"}, false},
		{accesslog.Entry{ResponseCode: 200, UpstreamCluster: "inbound|8080||", DownstreamLocalAddress: "10.244.1.10:8080"}, true},
		{accesslog.Entry{ResponseCode: 200, UpstreamCluster: "outbound|8080||web.shop.svc.cluster.local", DownstreamLocalAddress: "10.244.1.10:8080"}, false},
	} {
		if got := inbound(&c.e); got != c.want {
			t.Errorf("%+v: inbound = %v, want %v", c.e, got, c.want)
		}
	}
	if InboundEntryAt("")(&accesslog.Entry{ResponseCode: 426, DownstreamLocalAddress: "10.244.1.10:8080"}) {
		t.Error("without the pod's address, a local reply is not known to be inbound")
	}
}
