package probes

import (
	"context"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The incident is now: access-log reads must ask for the newest lines, or a
// busy proxy's byte limit returns the oldest part of the window.
func TestAccessLogReadsAskForTheNewestLines(t *testing.T) {
	src := cluster.PodRef{Namespace: "web", Name: "web-1"}
	target := cluster.Target{Namespace: "shop", Service: "orders", Source: &src}
	caller := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}, {Name: mesh.ProxyContainer}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, p := range []Probe{AccessLogProbe{}, ServiceEntryProbe{}} {
		f := newFakeCluster(t, mtlsService(), caller)
		f.logs[logKey(src, mesh.ProxyContainer)] = []byte("")
		Run(context.Background(), p, f, target)
		if f.lastLogOptions.TailLines != proxylog.AccessLogTailLines || f.lastLogOptions.Container != mesh.ProxyContainer {
			t.Errorf("%s read logs with %+v", p.Meta().ID, f.lastLogOptions)
		}
	}
}
