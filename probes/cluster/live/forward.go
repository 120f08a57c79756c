package live

import (
	"context"
	"errors"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
)

// setupError is a port-forward that never became ready.
type setupError struct{ err error }

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

// forwardGet is the one forward-then-GET path, as istioctl's EnvoyDo: open a
// tunnel to pod:port, GET path through it, close the tunnel on every path.
// what names the endpoint in errors ("Envoy admin of shop/web-1").
func (c *Cluster) forwardGet(ctx context.Context, what string, pod cluster.PodRef, port int, path string) ([]byte, error) {
	t, err := c.conn.Forward(ctx, pod, port)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, &cluster.UnreachableError{What: what, Err: ctxErr}
		}
		return nil, &setupError{err: err}
	}
	defer t.Close()
	body, err := podconn.Get(ctx, "http://"+t.Addr+path, c.maxBytes)
	if err == nil {
		return body, nil
	}
	var status *podconn.StatusError
	if errors.As(err, &status) {
		status.Path = path
		return nil, err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = ctxErr
	} else if fwdErr := t.Err(); fwdErr != nil {
		err = fwdErr
	}
	return nil, &cluster.UnreachableError{What: what, Err: err}
}
