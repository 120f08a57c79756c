package cluster

import (
	"sort"

	"github.com/meshtriage/meshtriage/probes/mesh"
	corev1 "k8s.io/api/core/v1"
)

// OrderIstiods is the order istiod replicas are asked in: Running and not
// being deleted, Ready first, then the oldest (the one most proxies have
// stayed connected to), then by name.
func OrderIstiods(pods []corev1.Pod) []corev1.Pod {
	var running []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	sort.SliceStable(running, func(i, j int) bool {
		ri, _ := mesh.PodReady(&running[i])
		rj, _ := mesh.PodReady(&running[j])
		if ri != rj {
			return ri
		}
		ti, tj := running[i].CreationTimestamp, running[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return running[i].Name < running[j].Name
	})
	return running
}
