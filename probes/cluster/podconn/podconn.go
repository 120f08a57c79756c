// Package podconn opens connections into pods as kubectl does: port-forward
// tunnels (kubectl port-forward) and exec streams (kubectl exec). It sends no
// request of its own. The live client reads Envoy admin and istiod through
// it; the confirm-first actions (probes/actions) write through it. Keeping
// the transport here is what lets the read-only client hold no write path.
package podconn

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
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

// Tunnel is an open port-forward to one pod port: one connection to the
// API server (SPDY, or SPDY over WebSocket) that carries any number of
// connections to the port, each a pair of streams.
type Tunnel struct {
	// Dial opens one connection to the pod port through the tunnel.
	Dial func(ctx context.Context) (net.Conn, error)
	// Close ends the tunnel and every connection through it; it returns
	// once the tunnel's goroutines have ended (or after forwardGrace).
	Close func()
	// LastError is the last error the kubelet reported for a connection,
	// such as "connection refused" from the pod port; it explains a request
	// that otherwise only sees EOF. Nil when there was none.
	LastError func() error
	// Done is closed once the tunnel has ended: closed, or its connection
	// to the API server lost. Nil when the tunnel cannot tell.
	Done <-chan struct{}
}

// Err is the tunnel's last error, or nil.
func (t Tunnel) Err() error {
	if t.LastError == nil {
		return nil
	}
	return t.LastError()
}

// Ended reports whether the tunnel can no longer carry a connection.
func (t Tunnel) Ended() bool {
	if t.Done == nil {
		return false
	}
	select {
	case <-t.Done:
		return true
	default:
		return false
	}
}

// forwardGrace bounds the wait for a closed tunnel's goroutines to wind
// down.
const forwardGrace = 2 * time.Second

// Kube dials through the API server's pods/portforward and pods/exec.
type Kube struct {
	client rest.Interface
	config *rest.Config
	// spdyOnly remembers that the API server refused a WebSocket upgrade
	// (before Kubernetes 1.35 it authorises one as "get", which a role
	// granting only "create" lacks): later tunnels go straight to SPDY
	// instead of paying for a refused upgrade, a connection and a TLS
	// handshake each time.
	spdyOnly atomic.Bool
}

// New dials with kube's REST client and the config it was built from.
func New(kube kubernetes.Interface, cfg *rest.Config) *Kube {
	return &Kube{client: kube.CoreV1().RESTClient(), config: cfg}
}

// Forward opens a tunnel to pod:port as kubectl port-forward does (SPDY
// over WebSocket first, plain SPDY when the upgrade fails), without a local
// listener: the tunnel's Dial opens connections on it directly. ctx bounds
// the setup only; the tunnel lives until Close.
func (k *Kube) Forward(ctx context.Context, pod cluster.PodRef, port int) (Tunnel, error) {
	u := k.client.Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("portforward").URL()
	// Neither dialer takes a context; binding it into their requests makes a
	// dial to an unreachable API server end at ctx's deadline.
	cfg := rest.CopyConfig(k.config)
	cfg.Wrap(bindContext(ctx))
	dialer, err := k.upgradeDialer(cfg, u)
	if err != nil {
		return Tunnel{}, err
	}
	type dialed struct {
		conn httpstream.Connection
		err  error
	}
	// The SPDY upgrade reads the server's response without a deadline: a
	// server that accepts the connection and then stalls must not hold the
	// caller past ctx. The dial then ends by itself, and its connection, if
	// one comes, is closed.
	result := make(chan dialed, 1)
	go func() {
		conn, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
		result <- dialed{conn, err}
	}()
	select {
	case d := <-result:
		if d.err != nil {
			return Tunnel{}, forwardError(d.err, pod)
		}
		return newTunnel(d.conn, pod, port), nil
	case <-ctx.Done():
		go func() {
			if d := <-result; d.conn != nil {
				_ = d.conn.Close()
			}
		}()
		return Tunnel{}, ctx.Err()
	}
}

// upgradeDialer is kubectl's: WebSocket, then SPDY when the upgrade fails.
func (k *Kube) upgradeDialer(cfg *rest.Config, u *url.URL) (httpstream.Dialer, error) {
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	if k.spdyOnly.Load() {
		return spdyDialer, nil
	}
	// The tunnelling connection reports stream copy errors through this
	// logger; klog would print them over the terminal UI.
	wsDialer, err := portforward.NewSPDYOverWebsocketDialerWithLogger(logr.New(&errorSink{}), u, cfg)
	if err != nil {
		return nil, err
	}
	return portforward.NewFallbackDialer(wsDialer, spdyDialer, func(err error) bool {
		if !ShouldFallback(err) {
			return false
		}
		k.spdyOnly.Store(true)
		return true
	}), nil
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
