// Package podconn opens connections into pods as kubectl does: port-forward
// tunnels (kubectl port-forward) and exec streams (kubectl exec). It sends no
// request of its own. The live client reads Envoy admin and istiod through
// it; the confirm-first actions (probes/actions) write through it. Keeping
// the transport here is what lets the read-only client hold no write path.
package podconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/klog/v2"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// Dialer reaches into pods. Kube is the client-go implementation; tests
// replace it to drive fallback and error paths without a kubelet.
type Dialer interface {
	// Forward opens a tunnel to pod:port. Errors before the tunnel is
	// ready are setup errors (RBAC, upgrade, API server).
	Forward(ctx context.Context, pod cluster.PodRef, port int) (Tunnel, error)
	// Exec runs command in a container of pod, writing its stdout to
	// stdout; it returns the start of stderr for the error message.
	Exec(ctx context.Context, pod cluster.PodRef, container string, command []string, stdout io.Writer) (stderr string, err error)
}

// Tunnel is an open port-forward: a local address that reaches a pod port.
type Tunnel struct {
	Addr string
	// Close stops the forwarder; it returns once the forwarder's goroutines
	// have ended (or after forwardGrace).
	Close func()
	// LastError is the last error the forwarder reported, such as the
	// kubelet's "connection refused" from the pod port; it explains a GET
	// that otherwise only sees EOF. Nil when there was none.
	LastError func() error
}

// Err is the forwarder's last error, or nil.
func (t Tunnel) Err() error {
	if t.LastError == nil {
		return nil
	}
	return t.LastError()
}

// forwardGrace bounds the wait for a stopped forwarder to wind down. The
// SPDY upgrade reads the server's response without a deadline; a server that
// accepts the connection and then stalls must not hold a probe past its
// context, so after this grace the forwarder is left to end by itself (its
// stop channel is closed, so it does once the upgrade returns).
const forwardGrace = 2 * time.Second

// Kube dials through the API server's pods/portforward and pods/exec.
type Kube struct {
	client rest.Interface
	config *rest.Config
}

// New dials with kube's REST client and the config it was built from.
func New(kube kubernetes.Interface, cfg *rest.Config) *Kube {
	return &Kube{client: kube.CoreV1().RESTClient(), config: cfg}
}

// Forward is the client-go tunnel, dialled as kubectl port-forward does:
// SPDY over WebSocket first, plain SPDY when the upgrade fails.
func (k *Kube) Forward(ctx context.Context, pod cluster.PodRef, port int) (Tunnel, error) {
	u := k.client.Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("portforward").URL()
	sink := &errorSink{}
	logger := logr.New(sink)
	// Neither dialer takes a context; binding it into their requests makes a
	// dial to an unreachable API server end at ctx's deadline.
	cfg := rest.CopyConfig(k.config)
	cfg.Wrap(bindContext(ctx))
	dialer, err := upgradeDialer(cfg, u, logger)
	if err != nil {
		return Tunnel{}, err
	}

	fwdCtx, cancel := context.WithCancel(ctx)
	// The forwarder reports connection errors through its context's logger;
	// capture them instead of letting klog print into the terminal UI.
	fwdCtx = klog.NewContext(fwdCtx, logger)
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddressesWithContext(fwdCtx, dialer,
		[]string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, ready, io.Discard, io.Discard)
	if err != nil {
		cancel()
		return Tunnel{}, err
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			timer := time.NewTimer(forwardGrace)
			defer timer.Stop()
			select {
			case <-done:
			case <-timer.C:
			}
		})
	}
	select {
	case <-ready:
		ports, err := pf.GetPorts()
		if err != nil || len(ports) == 0 {
			stop()
			return Tunnel{}, fmt.Errorf("port-forward to %s:%d: no local port: %v", pod, port, err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local)))
		return Tunnel{Addr: addr, Close: stop, LastError: sink.last}, nil
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("port-forward ended before it was ready")
		}
		return Tunnel{}, forwardError(err, pod)
	case <-ctx.Done():
		stop()
		return Tunnel{}, ctx.Err()
	}
}

func upgradeDialer(cfg *rest.Config, u *url.URL, logger klog.Logger) (httpstream.Dialer, error) {
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	wsDialer, err := portforward.NewSPDYOverWebsocketDialerWithLogger(logger, u, cfg)
	if err != nil {
		return nil, err
	}
	return portforward.NewFallbackDialer(wsDialer, spdyDialer, ShouldFallback), nil
}

// Exec runs command through pods/exec as kubectl exec does: WebSocket
// first, SPDY when the upgrade fails.
func (k *Kube) Exec(ctx context.Context, pod cluster.PodRef, container string, command []string, stdout io.Writer) (string, error) {
	u := k.client.Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   command,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec).URL()
	spdyExec, err := remotecommand.NewSPDYExecutor(k.config, "POST", u)
	if err != nil {
		return "", err
	}
	// RFC 6455 requires GET for the WebSocket upgrade.
	wsExec, err := remotecommand.NewWebSocketExecutor(k.config, "GET", u.String())
	if err != nil {
		return "", err
	}
	executor, err := remotecommand.NewFallbackExecutor(wsExec, spdyExec, ShouldFallback)
	if err != nil {
		return "", err
	}
	stderr := &headBuffer{max: 4 << 10}
	// Stream copy errors go to the context's logger, not klog's stderr.
	ctx = klog.NewContext(ctx, logr.New(&errorSink{}))
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	return FirstLine(strings.TrimSpace(stderr.String())), err
}

// ShouldFallback is kubectl's rule for retrying a WebSocket upgrade as SPDY.
// client-go's WebSocket transport now reports a refused upgrade with
// k8s.io/streaming's error type, which apimachinery's test does not
// recognise; either is a failed upgrade.
func ShouldFallback(err error) bool {
	return httpstream.IsUpgradeFailure(err) || streamhttp.IsUpgradeFailure(err) ||
		httpstream.IsHTTPSProxyError(err)
}

// forwardError restores the API server's verdict that the port-forward
// wrapping flattened into text: a refused upgrade becomes a Forbidden again,
// so cluster.AccessProblem can name the verb and resource.
func forwardError(err error, pod cluster.PodRef) error {
	if forbidden := ForbiddenFrom(err, "pods/portforward", pod.Name); forbidden != nil {
		return forbidden
	}
	return err
}

// ForbiddenFrom recognises an API server refusal in err, which client-go's
// upgrade paths hand back as text ("unable to upgrade connection: pods "x"
// is forbidden: User "u" cannot create resource "pods/exec" ..."). It
// returns nil for any other error.
func ForbiddenFrom(err error, resource, name string) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return err
	}
	msg := err.Error()
	i := strings.Index(msg, " is forbidden: ")
	if i < 0 {
		return nil
	}
	detail := msg[i+len(" is forbidden: "):]
	if j := strings.Index(msg, "User "); j >= 0 {
		detail = msg[j:]
	}
	return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, name, errors.New(FirstLine(detail)))
}

// bindContext gives every request through the wrapped transport ctx.
func bindContext(ctx context.Context) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return contextRoundTripper{ctx: ctx, next: rt}
	}
}

type contextRoundTripper struct {
	ctx  context.Context
	next http.RoundTripper
}

func (t contextRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(req.WithContext(t.ctx))
}

func (t contextRoundTripper) WrappedRoundTripper() http.RoundTripper { return t.next }

// errorSink is a logr sink that keeps the last error logged.
type errorSink struct {
	mu  sync.Mutex
	err error
}

func (s *errorSink) last() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *errorSink) Init(logr.RuntimeInfo)          {}
func (s *errorSink) Enabled(int) bool               { return false }
func (s *errorSink) Info(int, string, ...any)       {}
func (s *errorSink) WithValues(...any) logr.LogSink { return s }
func (s *errorSink) WithName(string) logr.LogSink   { return s }
func (s *errorSink) Error(err error, msg string, _ ...any) {
	if err == nil {
		err = errors.New(msg)
	}
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// FirstLine is s up to its first newline: error texts from a stream or a
// server body are shown on one line.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
