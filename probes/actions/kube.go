package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Kube runs actions against a live cluster, all of them through pods/exec:
// a command in the caller's container, and Envoy admin's state-changing
// endpoints through `pilot-agent request POST` in istio-proxy. Never through
// a port-forward, though Envoy admin would accept a POST there too: the
// read-only role grants port-forward, and a change must need more than the
// read-only role. An RBAC refusal names the role that grants pods/exec
// (live.ExecRole, assets/rbac).
type Kube struct {
	// Conn reaches into pods (the live client's PodConn).
	Conn podconn.Dialer
	// Pods reads the pod fresh before a change: a change acts on the pod
	// as it is now, not as the last wave of probes saw it.
	Pods cluster.PodGetter
	// Timeout bounds each call, as the live client bounds its reads (its
	// RequestTimeout); DefaultTimeout when zero.
	Timeout time.Duration
}

var _ Runner = Kube{}

// NewKube runs actions through the live client's transport. Its pod checks
// read the cluster itself, never the probes' cache: a change acts on the pod
// as it is now.
func NewKube(lc *live.Cluster) Kube {
	return Kube{Conn: lc.PodConn(), Pods: lc, Timeout: lc.RequestTimeout()}
}

// DefaultTimeout bounds a call when Kube has no Timeout.
const DefaultTimeout = 30 * time.Second

// maxExecOutput caps what one action's exec may print: curl's headers and
// the start of a body.
const maxExecOutput = 1 << 20

func (k Kube) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	timeout := k.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return context.WithTimeout(ctx, timeout)
}

// Exec runs command in container of pod through pods/exec, as kubectl exec
// does, and returns its stdout and the start of its stderr.
func (k Kube) Exec(ctx context.Context, pod cluster.PodRef, container string, command []string) ([]byte, []byte, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	p, err := k.Pods.GetPod(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return nil, nil, err
	}
	if !hasContainer(p, container) {
		return nil, nil, fmt.Errorf("pod %s has no container %s", pod, container)
	}
	if p.Status.Phase != corev1.PodRunning {
		return nil, nil, &cluster.UnreachableError{What: "pod " + pod.String(), Err: fmt.Errorf("pod is %s, not Running", p.Status.Phase)}
	}
	out, stderr, err := k.exec(ctx, pod, container, command, maxExecOutput)
	return out, []byte(stderr), err
}

// exec runs command through pods/exec with its output capped at max.
func (k Kube) exec(ctx context.Context, pod cluster.PodRef, container string, command []string, max int64) ([]byte, string, error) {
	execCtx, cancelExec := context.WithCancel(ctx)
	defer cancelExec()
	out := &podconn.CappedBuffer{Max: max, Overflow: cancelExec}
	stderr, err := k.Conn.Exec(execCtx, pod, container, command, out)
	if err != nil {
		if forbidden := podconn.ForbiddenFrom(err, "pods/exec", pod.Name); forbidden != nil {
			err = needsExecRole(forbidden, pod)
		} else if out.Exceeded() {
			err = fmt.Errorf("output of %s is larger than %d bytes", command[0], max)
		}
	}
	return out.Bytes(), stderr, err
}

// needsExecRole is the API server's refusal of pods/exec with what to do
// about it: the actions need the exec role, which the read-only role leaves
// out on purpose. It stays a Forbidden whose message carries the hint, so
// that cluster.AccessProblem keeps it.
func needsExecRole(forbidden error, pod cluster.PodRef) error {
	detail := forbidden.Error()
	var status apierrors.APIStatus
	if errors.As(forbidden, &status) {
		if msg := status.Status().Message; msg != "" {
			detail = msg
			if i := strings.Index(msg, "User "); i >= 0 {
				detail = msg[i:]
			}
		}
	}
	return apierrors.NewForbidden(corev1.Resource("pods/exec"), pod.Name, fmt.Errorf(
		"%s; meshtriage's actions run through pods/exec, which the read-only role %s leaves out: bind the ClusterRole or Role %s (assets/rbac/%s.yaml) to allow them",
		podconn.FirstLine(detail), live.ReadOnlyRole, live.ExecRole, live.ExecRole))
}

func hasContainer(p *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// EnvoyAdminPost POSTs path to pod's Envoy admin API with `pilot-agent
// request POST` in istio-proxy, through pods/exec (see Kube for why never
// through a port-forward).
func (k Kube) EnvoyAdminPost(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	what, path, err := cluster.EnvoyAdminTarget(ctx, k.Pods, pod, path, "change")
	if err != nil {
		return nil, err
	}
	out, stderr, err := k.exec(ctx, pod, mesh.ProxyContainer, []string{"pilot-agent", "request", "POST", strings.TrimPrefix(path, "/")}, maxExecOutput)
	switch {
	case err == nil:
		return out, nil
	case apierrors.IsForbidden(err):
		return nil, err
	case ctx.Err() != nil:
		return nil, &cluster.UnreachableError{What: what, Err: ctx.Err()}
	}
	if stderr != "" {
		err = fmt.Errorf("%w: %s", err, stderr)
	}
	return nil, &cluster.UnreachableError{What: what, Err: fmt.Errorf("pilot-agent request POST %s: %s", path, podconn.FirstLine(err.Error()))}
}
