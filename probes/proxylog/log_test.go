package proxylog

import (
	"context"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
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
