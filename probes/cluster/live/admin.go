package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/klog/v2"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// execFunc runs command in a container of pod, writing its stdout to stdout;
// it returns the start of stderr for the error message.
type execFunc func(ctx context.Context, pod cluster.PodRef, container string, command []string, stdout io.Writer) (stderr string, err error)

// istiodSelector finds istiod pods; every revision keeps app=istiod.
var istiodSelector = map[string]string{"app": "istiod"}

// adminTarget checks, before any port-forward, that pod (as getPod reads
// it) has a running istio-proxy whose admin API can be reached, and
// normalises path.
func (c *Cluster) adminTarget(ctx context.Context, getPod podReader, pod cluster.PodRef, path, verb string) (what, cleanPath string, err error) {
	what = "Envoy admin of " + pod.String()
	p, err := getPod.GetPod(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return what, path, err
	}
	if mesh.PodSidecar(p) == mesh.SidecarNone {
		return what, path, fmt.Errorf("pod %s has no %s container, so no Envoy admin to %s", pod, mesh.ProxyContainer, verb)
	}
	if p.Status.Phase != corev1.PodRunning {
		return what, path, &cluster.UnreachableError{What: what, Err: fmt.Errorf("pod is %s, not Running", p.Status.Phase)}
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return what, path, nil
}

// EnvoyAdmin reads path from pod's Envoy admin API: through a port-forward
// to 15000, or, when the port-forward is refused or cannot be upgraded,
// through `pilot-agent request GET` exec'd in the istio-proxy container.
func (c *Cluster) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	what, path, err := c.adminTarget(ctx, c.podsForReads(), pod, path, "read")
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
	out := &cappedBuffer{max: c.maxBytes}
	execCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	out.overflow = cancel
	command := []string{"pilot-agent", "request", "GET", strings.TrimPrefix(path, "/")}
	stderr, err := c.execInProxy(execCtx, pod, mesh.ProxyContainer, command, out)
	if err == nil {
		return out.bytes(), nil
	}
	if out.exceeded() {
		return nil, fmt.Errorf("response to GET %s via pilot-agent is larger than %d bytes", path, c.maxBytes)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, &cluster.UnreachableError{What: what, Err: ctxErr}
	}
	execErr := forbiddenFrom(err, "pods/exec", pod.Name)
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
		firstLine(forwardErr.Error()), firstLine(execErr.Error()))}
}

// bothForbidden joins the two refusals into one Forbidden whose message
// names both missing permissions.
func bothForbidden(pod cluster.PodRef, forwardErr, execErr error) error {
	detail := func(err error) string {
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
	return apierrors.NewForbidden(corev1.Resource("pods/portforward"), pod.Name,
		fmt.Errorf("%s; and the exec fallback: %s", detail(forwardErr), detail(execErr)))
}

// exec runs command through pods/exec as kubectl exec does: WebSocket
// first, SPDY when the upgrade fails.
func (c *Cluster) exec(ctx context.Context, pod cluster.PodRef, container string, command []string, stdout io.Writer) (string, error) {
	u := c.Kube.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   command,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec).URL()
	spdyExec, err := remotecommand.NewSPDYExecutor(c.config, "POST", u)
	if err != nil {
		return "", err
	}
	// RFC 6455 requires GET for the WebSocket upgrade.
	wsExec, err := remotecommand.NewWebSocketExecutor(c.config, "GET", u.String())
	if err != nil {
		return "", err
	}
	executor, err := remotecommand.NewFallbackExecutor(wsExec, spdyExec, shouldFallback)
	if err != nil {
		return "", err
	}
	stderr := &headBuffer{max: 4 << 10}
	// Stream copy errors go to the context's logger, not klog's stderr.
	ctx = klog.NewContext(ctx, logr.New(&errorSink{}))
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	return firstLine(strings.TrimSpace(stderr.String())), err
}

// Istiod GETs path from istiod's monitoring port through a port-forward to
// the named replica, or to a Running (preferably Ready) istiod pod.
func (c *Cluster) Istiod(ctx context.Context, replica, path string) ([]byte, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	ns := c.info.ControlPlaneNamespace
	var pod corev1.Pod
	if replica != "" {
		p, err := c.podsForReads().GetPod(ctx, ns, replica)
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
			return nil, &cluster.UnreachableError{What: "istiod", Err: fmt.Errorf("no Running istiod pod (%s) in %s",
				labels.SelectorFromSet(istiodSelector), ns)}
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
			return nil, setup.err
		}
		return nil, &cluster.UnreachableError{What: what, Err: setup.err}
	}
	return body, err
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

// cappedBuffer collects at most max bytes; a write past the cap fails and
// calls overflow, which cancels the exec stream that feeds it.
type cappedBuffer struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	max      int64
	over     bool
	overflow func()
}

var errOverflow = errors.New("output exceeds the byte limit")

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if int64(b.buf.Len())+int64(len(p)) > b.max {
		b.over = true
		if b.overflow != nil {
			b.overflow()
		}
		return 0, errOverflow
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func (b *cappedBuffer) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

// headBuffer keeps the first max bytes written and drops the rest without
// failing the writer, so a chatty stderr never aborts the command.
type headBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *headBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
