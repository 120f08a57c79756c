package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// SynczPath lists the proxies connected to the istiod replica asked, and
// how far each is in sync.
const SynczPath = "/debug/syncz"

// IstiodLabels select istiod pods of every revision, as the live Cluster
// picks the one it asks.
var IstiodLabels = map[string]string{"app": "istiod"}

// IstiodSearch is what asking the istiod replicas for a proxy found:
// syncz lists only the proxies connected to the replica asked, so they are
// asked in OrderIstiods' order until one lists it (istioctl proxy-status
// asks them all).
type IstiodSearch struct {
	// Running are the running istiod pods in the order asked; Replicas
	// is -1 when they could not be listed (the Cluster then picked one).
	Running  []corev1.Pod
	Replicas int
	// Proxies are the proxies listed by the replicas asked, in the order
	// asked; the sought one is among the last replica's when found.
	Proxies []envoy.ProxySync
	// Asked counts the replicas whose syncz was read; Unanswered says why
	// the others asked did not answer.
	Asked      int
	Unanswered []string
	// Replica is the istiod pod whose syncz lists the proxy; Found is
	// false when none did.
	Replica string
	Found   bool
	// Err is the first replica's failure and What the step that failed,
	// for a search in which no replica answered.
	Err  error
	What string
}

// FindIstiodOf asks the running istiod replicas of controlPlane for the
// proxy of pod, in turn, until one lists it.
func FindIstiodOf(ctx context.Context, c Cluster, controlPlane string, pod PodRef) IstiodSearch {
	s := IstiodSearch{Replicas: -1}
	if pods, err := c.ListPods(ctx, controlPlane, IstiodLabels); err == nil {
		s.Running = OrderIstiods(pods)
		s.Replicas = len(s.Running)
	}
	var replicas []string
	for _, p := range s.Running {
		replicas = append(replicas, p.Name)
	}
	if len(replicas) == 0 {
		replicas = []string{""} // the Cluster picks one, and says why it cannot
	}
	for _, replica := range replicas {
		proxies, doing, err := readSyncz(ctx, c, replica)
		if err != nil {
			if s.Err == nil {
				s.Err, s.What = err, doing
			}
			s.Unanswered = append(s.Unanswered, fmt.Sprintf("%s: %s", replica, wording.FirstLine(err.Error())))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		s.Asked++
		s.Proxies = append(s.Proxies, proxies...)
		if _, found := envoy.FindProxy(proxies, pod.Name, pod.Namespace); found {
			s.Replica, s.Found = replica, true
			break
		}
	}
	return s
}

// readSyncz reads and parses one replica's syncz; doing says which step
// failed.
func readSyncz(ctx context.Context, c Cluster, replica string) (proxies []envoy.ProxySync, doing string, err error) {
	of := ""
	if replica != "" {
		of = " of " + replica
	}
	body, err := c.Istiod(ctx, replica, SynczPath)
	if err != nil {
		return nil, "read istiod " + SynczPath + of, err
	}
	if proxies, err = envoy.ParseSyncz(body); err != nil {
		return nil, "parse istiod " + SynczPath + of, err
	}
	return proxies, "", nil
}
