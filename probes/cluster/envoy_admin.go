package cluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// PodGetter reads one pod: a Cluster, or the cache the probes read through.
type PodGetter interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// EnvoyAdminTarget checks, before any port-forward or exec, that pod (as
// pods reads it) has a running istio-proxy whose admin API can be reached,
// and normalises path. what names the endpoint in errors ("Envoy admin of
// shop/web-1"); verb says what was wanted of it ("read", "change").
func EnvoyAdminTarget(ctx context.Context, pods PodGetter, pod PodRef, path, verb string) (what, cleanPath string, err error) {
	what = "Envoy admin of " + pod.String()
	p, err := pods.GetPod(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return what, path, err
	}
	if mesh.PodSidecar(p) == mesh.SidecarNone {
		return what, path, fmt.Errorf("pod %s has no %s container, so no Envoy admin to %s", pod, mesh.ProxyContainer, verb)
	}
	if p.Status.Phase != corev1.PodRunning {
		return what, path, &UnreachableError{What: what, Err: fmt.Errorf("pod is %s, not Running", p.Status.Phase)}
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return what, path, nil
}
