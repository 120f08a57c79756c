package live

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/klog/v2"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// tunnel is an open port-forward: a local address that reaches a pod port.
type tunnel struct {
	addr string
	// close stops the forwarder; it returns once the forwarder's goroutines
	// have ended (or after forwardGrace).
	close func()
	// lastError is the last error the forwarder reported, such as the
	// kubelet's "connection refused" from the pod port; it explains a GET
	// that otherwise only sees EOF. Nil when there was none.
	lastError func() error
}

// tunnelFunc opens a tunnel to pod:port. Errors before the tunnel is ready
// are setup errors (RBAC, upgrade, API server) and may warrant a fallback.
type tunnelFunc func(ctx context.Context, pod cluster.PodRef, port int) (tunnel, error)

// forwardGrace bounds the wait for a stopped forwarder to wind down. The
// SPDY upgrade reads the server's response without a deadline; a server that
// accepts the connection and then stalls must not hold a probe past its
// context, so after this grace the forwarder is left to end by itself (its
// stop channel is closed, so it does once the upgrade returns).
const forwardGrace = 2 * time.Second

// setupError is a port-forward that never became ready.
type setupError struct{ err error }

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

// httpStatusError is a non-200 answer from Envoy admin or istiod.
type httpStatusError struct {
	Path   string
	Status int
	Body   string
}

func (e *httpStatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("GET %s: HTTP %d", e.Path, e.Status)
	}
	return fmt.Sprintf("GET %s: HTTP %d: %s", e.Path, e.Status, e.Body)
}

// forwardGet is the one forward-then-GET path, as istioctl's EnvoyDo: open a
// tunnel to pod:port, GET path through it, close the tunnel on every path.
// what names the endpoint in errors ("Envoy admin of shop/web-1").
func (c *Cluster) forwardGet(ctx context.Context, what string, pod cluster.PodRef, port int, path string) ([]byte, error) {
	t, err := c.openTunnel(ctx, pod, port)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, &cluster.UnreachableError{What: what, Err: ctxErr}
		}
		return nil, &setupError{err: err}
	}
	defer t.close()
	body, err := httpGet(ctx, "http://"+t.addr+path, c.maxBytes)
	if err == nil {
		return body, nil
	}
	var status *httpStatusError
	if errors.As(err, &status) {
		status.Path = path
		return nil, err
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

// httpGet GETs url without keep-alive (the tunnel closes right after) and
// reads at most max bytes of the body.
func httpGet(ctx context.Context, rawURL string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, &httpStatusError{Path: req.URL.RequestURI(), Status: resp.StatusCode, Body: firstLine(strings.TrimSpace(string(msg)))}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("response to GET %s is larger than %d bytes", req.URL.RequestURI(), max)
	}
	return body, nil
}

// portForward is the client-go tunnel, dialled as kubectl port-forward does:
// SPDY over WebSocket first, plain SPDY when the upgrade fails.
func (c *Cluster) portForward(ctx context.Context, pod cluster.PodRef, port int) (tunnel, error) {
	u := c.Kube.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("portforward").URL()
	sink := &errorSink{}
	logger := logr.New(sink)
	// Neither dialer takes a context; binding it into their requests makes a
	// dial to an unreachable API server end at ctx's deadline.
	cfg := rest.CopyConfig(c.config)
	cfg.Wrap(bindContext(ctx))
	dialer, err := upgradeDialer(cfg, u, logger)
	if err != nil {
		return tunnel{}, err
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
		return tunnel{}, err
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
			return tunnel{}, fmt.Errorf("port-forward to %s:%d: no local port: %v", pod, port, err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local)))
		return tunnel{addr: addr, close: stop, lastError: sink.last}, nil
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("port-forward ended before it was ready")
		}
		return tunnel{}, forwardError(err, pod)
	case <-ctx.Done():
		stop()
		return tunnel{}, ctx.Err()
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
	return portforward.NewFallbackDialer(wsDialer, spdyDialer, shouldFallback), nil
}

// shouldFallback is kubectl's rule for retrying a WebSocket upgrade as SPDY.
// client-go's WebSocket transport now reports a refused upgrade with
// k8s.io/streaming's error type, which apimachinery's test does not
// recognise; either is a failed upgrade.
func shouldFallback(err error) bool {
	return httpstream.IsUpgradeFailure(err) || streamhttp.IsUpgradeFailure(err) ||
		httpstream.IsHTTPSProxyError(err)
}

// forwardError restores the API server's verdict that the port-forward
// wrapping flattened into text: a refused upgrade becomes a Forbidden again,
// so probes.AccessProblem can name the verb and resource.
func forwardError(err error, pod cluster.PodRef) error {
	if forbidden := forbiddenFrom(err, "pods/portforward", pod.Name); forbidden != nil {
		return forbidden
	}
	return err
}

// forbiddenFrom recognises an API server refusal in err, which client-go's
// upgrade paths hand back as text ("unable to upgrade connection: pods "x"
// is forbidden: User "u" cannot create resource "pods/exec" ..."). It
// returns nil for any other error.
func forbiddenFrom(err error, resource, name string) error {
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
	return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, name, errors.New(firstLine(detail)))
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

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
