package live

import (
	"context"
	"errors"
	"io"
	"net/url"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
)

// setupError is a port-forward that never became ready.
type setupError struct{ err error }

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

// forwardGet is the one forward-then-GET path, as istioctl's EnvoyDo:
// reach pod:port through a port-forward and GET path. Within a session the
// port-forward is the session's tunnel to that pod port, shared by all its
// reads; outside one, a tunnel of the read's own, closed on every path.
// what names the endpoint in errors ("Envoy admin of shop/web-1").
func (c *Cluster) forwardGet(ctx context.Context, what string, pod cluster.PodRef, port int, path string) ([]byte, error) {
	if c.tunnels == nil {
		t, err := c.conn.Forward(ctx, pod, port)
		if err != nil {
			return nil, c.setupFailed(ctx, what, err)
		}
		client := podconn.NewClient(t)
		defer t.Close()
		defer client.Close()
		body, err := client.Get(ctx, path, c.maxBytes)
		return body, c.getFailed(ctx, what, path, t, err)
	}
	for attempt := 0; ; attempt++ {
		e, fresh, err := c.tunnels.acquire(ctx, pod, port)
		if err != nil {
			return nil, c.setupFailed(ctx, what, err)
		}
		body, err := e.client.Get(ctx, path, c.maxBytes)
		ended := e.tunnel.Ended()
		c.tunnels.release(e)
		// A kept tunnel can end between reads (the API server restarted,
		// an idle timeout on the way): one new tunnel is worth trying
		// before the read is called a failure.
		if err != nil && !fresh && ended && attempt == 0 && ctx.Err() == nil {
			continue
		}
		return body, c.getFailed(ctx, what, path, e.tunnel, err)
	}
}

// setupFailed classifies an error opening the tunnel: the caller's
// deadline, or a setup error, which the Envoy admin read answers with the
// exec fallback.
func (c *Cluster) setupFailed(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &cluster.UnreachableError{What: what, Err: ctxErr}
	}
	return &setupError{err: err}
}

// getFailed classifies an error of the GET itself: Envoy's or istiod's own
// answer, or an endpoint that could not be reached, with the best reason
// known (the deadline, or what the kubelet reported on the tunnel).
func (c *Cluster) getFailed(ctx context.Context, what, path string, t podconn.Tunnel, err error) error {
	if err == nil {
		return nil
	}
	var status *podconn.StatusError
	if errors.As(err, &status) {
		status.Path = path
		return err
	}
	var refused *podconn.ForwardError
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case errors.As(err, &refused):
		err = refused
	case t.Err() != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		// The connection ended without a word; the tunnel's last report
		// says why.
		err = t.Err()
	default:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // not the made-up URL the request went to
		}
	}
	return &cluster.UnreachableError{What: what, Err: err}
}
