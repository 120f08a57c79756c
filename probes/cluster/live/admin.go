package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// istiodSelector finds istiod pods; every revision keeps app=istiod.
var istiodSelector = map[string]string{"app": "istiod"}

// EnvoyAdmin reads path from pod's Envoy admin API: through a port-forward
// to 15000, or, when the port-forward is refused or cannot be upgraded,
// through `pilot-agent request GET` exec'd in the istio-proxy container.
func (c *Cluster) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	what, path, err := cluster.EnvoyAdminTarget(ctx, c.podsForReads(), pod, path, "read")
	if err != nil {
		return nil, err
	}
	body, err := c.forwardGet(ctx, what, pod, cluster.EnvoyAdminPort, path)
	var setup *setupError
	if !errors.As(err, &setup) {
		return body, err
	}
	return c.adminByExec(ctx, what, pod, path, setup.err)
}

// adminByExec is the fallback when the port-forward could not be set up.
func (c *Cluster) adminByExec(ctx context.Context, what string, pod cluster.PodRef, path string, forwardErr error) ([]byte, error) {
	execCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &podconn.CappedBuffer{Max: c.maxBytes, Overflow: cancel}
	command := []string{"pilot-agent", "request", "GET", strings.TrimPrefix(path, "/")}
	stderr, err := c.conn.Exec(execCtx, pod, mesh.ProxyContainer, command, out)
	if err == nil {
		return out.Bytes(), nil
	}
	if out.Exceeded() {
		return nil, fmt.Errorf("response to GET %s via pilot-agent is larger than %d bytes", path, c.maxBytes)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, &cluster.UnreachableError{What: what, Err: ctxErr}
	}
	execErr := podconn.ForbiddenFrom(err, "pods/exec", pod.Name)
	if execErr == nil {
		execErr = err
		if stderr != "" {
			execErr = fmt.Errorf("%w: %s", err, stderr)
		}
	}
	if apierrors.IsForbidden(forwardErr) && apierrors.IsForbidden(execErr) {
		return nil, bothForbidden(pod, forwardErr, execErr)
	}
	return nil, &cluster.UnreachableError{What: what, Err: fmt.Errorf("port-forward: %s; exec fallback: %s",
		podconn.FirstLine(forwardErr.Error()), podconn.FirstLine(execErr.Error()))}
}

// bothForbidden joins the two refusals into one Forbidden whose message
// names both missing permissions and the role that grants the first.
func bothForbidden(pod cluster.PodRef, forwardErr, execErr error) error {
	return apierrors.NewForbidden(corev1.Resource("pods/portforward"), pod.Name,
		fmt.Errorf("%s; and the exec fallback: %s; %s", forbiddenDetail(forwardErr), forbiddenDetail(execErr), portForwardHint))
}

// portForwardHint says which role grants what the reads of Envoy admin and
// istiod need.
var portForwardHint = fmt.Sprintf("the read-only role %s (assets/rbac/%s.yaml) grants pods/portforward", ReadOnlyRole, ReadOnlyRole)

// needsPortForward is a refused port-forward with portForwardHint: it stays
// a Forbidden, so cluster.AccessProblem keeps the hint.
func needsPortForward(forbidden error, pod cluster.PodRef) error {
	return apierrors.NewForbidden(corev1.Resource("pods/portforward"), pod.Name,
		fmt.Errorf("%s; %s", forbiddenDetail(forbidden), portForwardHint))
}

// forbiddenDetail is the API server's "User ... cannot ..." of a refusal.
func forbiddenDetail(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		msg := status.Status().Message
		if i := strings.Index(msg, "User "); i >= 0 {
			return msg[i:]
		}
		return msg
	}
	return err.Error()
}

// Istiod GETs path from istiod's monitoring port through a port-forward to
// the named replica, or to a Running (preferably Ready) istiod pod.
func (c *Cluster) Istiod(ctx context.Context, replica, path string) ([]byte, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	ns := c.info.ControlPlaneNamespace
	var pod corev1.Pod
	if replica != "" {
		p, err := c.istiodPod(ctx, ns, replica)
		if err != nil {
			return nil, err
		}
		if p.Status.Phase != corev1.PodRunning {
			return nil, &cluster.UnreachableError{What: "istiod " + ns + "/" + replica, Err: fmt.Errorf("pod is %s, not Running", p.Status.Phase)}
		}
		pod = *p
	} else {
		pods, err := c.podsForReads().ListPods(ctx, ns, istiodSelector)
		if err != nil {
			return nil, err
		}
		var ok bool
		if pod, ok = pickIstiod(pods); !ok {
			return nil, cluster.NoRunningIstiod(ns)
		}
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	ref := cluster.PodRef{Namespace: ns, Name: pod.Name}
	what := "istiod " + ref.String()
	body, err := c.forwardGet(ctx, what, ref, cluster.IstiodMonitoringPort, path)
	var setup *setupError
	if errors.As(err, &setup) {
		if apierrors.IsForbidden(setup.err) {
			return nil, needsPortForward(setup.err, ref)
		}
		return nil, &cluster.UnreachableError{What: what, Err: setup.err}
	}
	return body, err
}

// istiodPod finds a named replica in the istiod pod list the caller took
// its name from (the proxy-status probe asks the replicas of that list), so
// that asking a replica costs no round trip of its own; a replica the list
// lacks (another revision's label) is read by name, as is every replica
// outside a session, where there is no list to share.
func (c *Cluster) istiodPod(ctx context.Context, ns, replica string) (*corev1.Pod, error) {
	if c.pods == nil {
		return c.GetPod(ctx, ns, replica)
	}
	if pods, err := c.pods.ListPods(ctx, ns, istiodSelector); err == nil {
		for i := range pods {
			if pods[i].Name == replica {
				return &pods[i], nil
			}
		}
	}
	return c.pods.GetPod(ctx, ns, replica)
}

// pickIstiod is the first replica in probes.OrderIstiods: Ready, then the
// oldest, so repeated reads in one session ask the same istiod.
func pickIstiod(pods []corev1.Pod) (corev1.Pod, bool) {
	ordered := cluster.OrderIstiods(pods)
	if len(ordered) == 0 {
		return corev1.Pod{}, false
	}
	return ordered[0], true
}

// Logs streams a container's log through pods/log, bounded by opts, and
// never holds more than the byte limit in memory even if the server ignores
// limitBytes.
func (c *Cluster) Logs(ctx context.Context, pod cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	limit := opts.LimitBytes
	if limit <= 0 {
		limit = cluster.DefaultLogLimit
	}
	lo := &corev1.PodLogOptions{
		Container:  opts.Container,
		Previous:   opts.Previous,
		LimitBytes: &limit,
	}
	if opts.Since > 0 {
		secs := int64(math.Ceil(opts.Since.Seconds()))
		lo.SinceSeconds = &secs
	}
	if opts.TailLines > 0 {
		lo.TailLines = &opts.TailLines
	}
	rc, err := c.Kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, lo).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readLimited(rc, limit)
}

// readLimited reads at most limit bytes of r.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, limit))
}
