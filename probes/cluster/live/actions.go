package live

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// The write side of a live cluster: what probes/actions runs when the
// on-call asks for it, never a probe. Kept out of probes.Cluster so that no
// probe can reach it.
var _ actions.Runner = (*Cluster)(nil)

// maxExecOutput caps what one action's exec may print: curl's headers and
// the start of a body.
const maxExecOutput = 1 << 20

// Exec runs command in container of pod through pods/exec, as kubectl exec
// does, and returns its stdout and the start of its stderr.
func (c *Cluster) Exec(ctx context.Context, pod cluster.PodRef, container string, command []string) ([]byte, []byte, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	p, err := c.GetPod(ctx, pod.Namespace, pod.Name)
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
	out := &cappedBuffer{max: maxExecOutput, overflow: cancelExec}
	stderr, err := c.execInProxy(execCtx, pod, container, command, out)
	if err != nil {
		if forbidden := forbiddenFrom(err, "pods/exec", pod.Name); forbidden != nil {
			err = forbidden
		} else if out.exceeded() {
			err = fmt.Errorf("output of %s is larger than %d bytes", command[0], maxExecOutput)
		}
	}
	return out.bytes(), []byte(stderr), err
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
// refused, as EnvoyAdmin does for reads.
func (c *Cluster) EnvoyAdminPost(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	// A change reads the pod as it is now, not as the last wave saw it.
	what, path, err := c.adminTarget(ctx, c, pod, path, "change")
	if err != nil {
		return nil, err
	}
	t, err := c.openTunnel(ctx, pod, cluster.EnvoyAdminPort)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, &cluster.UnreachableError{What: what, Err: ctxErr}
		}
		return c.adminPostByExec(ctx, what, pod, path, err)
	}
	defer t.close()
	body, status, err := httpPost(ctx, "http://"+t.addr+path)
	if err == nil || status != 0 {
		return body, err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = ctxErr
	} else if t.lastError != nil {
		if fwdErr := t.lastError(); fwdErr != nil {
			err = fwdErr
		}
	}
	return nil, &cluster.UnreachableError{What: what, Err: err}
}

func (c *Cluster) adminPostByExec(ctx context.Context, what string, pod cluster.PodRef, path string, forwardErr error) ([]byte, error) {
	out := &cappedBuffer{max: maxExecOutput}
	stderr, err := c.execInProxy(ctx, pod, mesh.ProxyContainer, []string{"pilot-agent", "request", "POST", strings.TrimPrefix(path, "/")}, out)
	if err == nil {
		return out.bytes(), nil
	}
	execErr := forbiddenFrom(err, "pods/exec", pod.Name)
	if execErr == nil {
		execErr = err
		if stderr != "" {
			execErr = fmt.Errorf("%w: %s", err, stderr)
		}
	}
	return nil, &cluster.UnreachableError{What: what, Err: fmt.Errorf("port-forward: %s; exec fallback: %s",
		firstLine(forwardErr.Error()), firstLine(execErr.Error()))}
}

// httpPost is httpGet's counterpart for the admin endpoints that change
// state: Envoy refuses them over GET.
func httpPost(ctx context.Context, rawURL string) (body []byte, status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, nil)
	if err != nil {
		return nil, 0, err
	}
	transport := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxExecOutput))
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, fmt.Errorf("POST %s: HTTP %d: %s", req.URL.RequestURI(), resp.StatusCode, firstLine(strings.TrimSpace(string(body))))
	}
	return body, resp.StatusCode, nil
}

// GetDeployment reads a Deployment for `watch`: a read, kept apart from
// probes.Cluster because no probe needs it.
func (c *Cluster) GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return c.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
}
