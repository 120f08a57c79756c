package actions

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Kube runs actions against a live cluster: exec through pods/exec, and
// Envoy admin POSTs through a port-forward (or `pilot-agent request POST`
// when the port-forward is refused). Both need more than the read-only
// role grants; see assets/rbac.
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
	execCtx, cancelExec := context.WithCancel(ctx)
	defer cancelExec()
	out := &podconn.CappedBuffer{Max: maxExecOutput, Overflow: cancelExec}
	stderr, err := k.Conn.Exec(execCtx, pod, container, command, out)
	if err != nil {
		if forbidden := podconn.ForbiddenFrom(err, "pods/exec", pod.Name); forbidden != nil {
			err = forbidden
		} else if out.Exceeded() {
			err = fmt.Errorf("output of %s is larger than %d bytes", command[0], maxExecOutput)
		}
	}
	return out.Bytes(), []byte(stderr), err
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

// EnvoyAdminPost POSTs path to pod's Envoy admin API through a port-forward
// to 15000, or through `pilot-agent request POST` when the port-forward is
// refused, as the live client does for reads.
func (k Kube) EnvoyAdminPost(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	what, path, err := cluster.EnvoyAdminTarget(ctx, k.Pods, pod, path, "change")
	if err != nil {
		return nil, err
	}
	t, err := k.Conn.Forward(ctx, pod, cluster.EnvoyAdminPort)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, &cluster.UnreachableError{What: what, Err: ctxErr}
		}
		return k.adminPostByExec(ctx, what, pod, path, err)
	}
	defer t.Close()
	body, err := podconn.Post(ctx, "http://"+t.Addr+path, maxExecOutput)
	if err == nil {
		return body, nil
	}
	if _, answered := err.(*podconn.StatusError); answered {
		return nil, err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = ctxErr
	} else if fwdErr := t.Err(); fwdErr != nil {
		err = fwdErr
	}
	return nil, &cluster.UnreachableError{What: what, Err: err}
}

func (k Kube) adminPostByExec(ctx context.Context, what string, pod cluster.PodRef, path string, forwardErr error) ([]byte, error) {
	out := &podconn.CappedBuffer{Max: maxExecOutput}
	stderr, err := k.Conn.Exec(ctx, pod, mesh.ProxyContainer, []string{"pilot-agent", "request", "POST", strings.TrimPrefix(path, "/")}, out)
	if err == nil {
		return out.Bytes(), nil
	}
	execErr := podconn.ForbiddenFrom(err, "pods/exec", pod.Name)
	if execErr == nil {
		execErr = err
		if stderr != "" {
			execErr = fmt.Errorf("%w: %s", err, stderr)
		}
	}
	return nil, &cluster.UnreachableError{What: what, Err: fmt.Errorf("port-forward: %s; exec fallback: %s",
		podconn.FirstLine(forwardErr.Error()), podconn.FirstLine(execErr.Error()))}
}
