package live

import (
	"context"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// Warmup is what a triage is known to read first, opened before it asks:
// against a remote cluster the port-forwards are the longest chains of
// round trips of a triage (a connection, a TLS handshake, an upgrade and
// the streams, after the reads that find the pod), and they can start
// while the reachability check runs.
type Warmup struct {
	// Caller is the pod whose Envoy admin the triage reads (check --from);
	// nil when not known before connecting.
	Caller *cluster.PodRef
}

// warmState is what Warm started, until the first session adopts it.
type warmState struct {
	tunnels *tunnelPool
	// istiodPods is the list of istiod's pods Warm made, for the first
	// session's first read of it; done is closed when it is in.
	done       chan struct{}
	istiodPods []corev1.Pod
	istiodErr  error

	mu      sync.Mutex
	adopted bool
	expiry  *time.Timer
}

// warmKeep is how long what Warm opened waits for a session to adopt it
// before it is closed: a triage starts right after its reachability check.
const warmKeep = 30 * time.Second

// Warm starts, without waiting, what a triage waits longest for: the list
// of istiod's pods and a port-forward to the replica asked first (the
// proxy-status probe asks them in cluster.OrderIstiods order), and a
// port-forward to w.Caller's Envoy admin. The first NewCache adopts them;
// unadopted, they close after warmKeep or at Close. Call it before the
// client is shared: it sets what the sessions read.
func (c *Cluster) Warm(w Warmup) {
	state := &warmState{tunnels: newTunnelPool(c.conn, c.timeout), done: make(chan struct{})}
	c.warmed = state
	if w.Caller != nil {
		state.tunnels.start(*w.Caller, cluster.EnvoyAdminPort)
	}
	ns := c.info.ControlPlaneNamespace
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		state.istiodPods, state.istiodErr = c.Reader.ListPods(ctx, ns, istiodSelector)
		close(state.done)
		if state.istiodErr != nil {
			return
		}
		if pod, ok := pickIstiod(state.istiodPods); ok {
			state.tunnels.start(cluster.PodRef{Namespace: ns, Name: pod.Name}, cluster.IstiodMonitoringPort)
		}
	}()
	state.expiry = time.AfterFunc(warmKeep, func() {
		if state.adopt() {
			state.tunnels.close()
		}
	})
}

// adopt hands what Warm started to one taker, once.
func (w *warmState) adopt() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.adopted {
		return false
	}
	w.adopted = true
	w.expiry.Stop()
	return true
}

// Close closes what Warm opened if no session adopted it (the reachability
// check failed). Sessions close their own (SessionCache.Close).
func (c *Cluster) Close() error {
	if w := c.warmed; w != nil && w.adopt() {
		w.tunnels.close()
	}
	return nil
}

// istiodHandoff gives the session that adopted Warm's work the istiod pod
// list Warm made, once: later lists are read anew.
type istiodHandoff struct {
	mu sync.Mutex
	w  *warmState
}

func (h *istiodHandoff) take() *warmState {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.w
	h.w = nil
	return w
}

// ListPods is the clientset's, except that a session's first list of
// istiod's pods is the one Warm made alongside the reachability check.
func (c *Cluster) ListPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	if namespace != c.info.ControlPlaneNamespace || !maps.Equal(selector, istiodSelector) {
		return c.Reader.ListPods(ctx, namespace, selector)
	}
	if w := c.istiodWarm.take(); w != nil {
		select {
		case <-w.done:
			if w.istiodErr == nil {
				return w.istiodPods, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Reader.ListPods(ctx, namespace, selector)
}
