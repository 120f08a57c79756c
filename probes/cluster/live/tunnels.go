package live

import (
	"context"
	"sync"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
)

// tunnelPool keeps one port-forward per pod port open for one triage, so
// that the reads of a pod after the first cost a round trip each instead of
// a new connection, a TLS handshake, an upgrade and the stream creation.
// A tunnel in use is never closed under its reader: Reset and Close detach
// the open tunnels, and each closes when its last reader is done.
type tunnelPool struct {
	conn podconn.Dialer
	// setup bounds opening a tunnel. It is not the reader's deadline: the
	// tunnel outlives the read that asked for it.
	setup time.Duration
	// idle closes a tunnel no read has used for this long, so that a
	// session left open (the terminal UI) holds no port-forward it no
	// longer needs.
	idle time.Duration

	mu     sync.Mutex
	open   map[tunnelKey]*sharedTunnel
	closed bool
}

type tunnelKey struct {
	pod  cluster.PodRef
	port int
}

// sharedTunnel is a tunnel and the HTTP client over it, shared by the
// reads of one pod port.
type sharedTunnel struct {
	key   tunnelKey
	ready chan struct{} // closed when the dial has ended
	// set before ready is closed
	tunnel podconn.Tunnel
	client *podconn.Client
	err    error

	// guarded by the pool's mu
	users     int
	detached  bool // out of the pool: closes when its last user is done
	idleTimer *time.Timer
	closed    bool
}

// defaultTunnelIdle is how long an unused tunnel stays open.
const defaultTunnelIdle = 2 * time.Minute

func newTunnelPool(conn podconn.Dialer, setup time.Duration) *tunnelPool {
	return &tunnelPool{conn: conn, setup: setup, idle: defaultTunnelIdle, open: map[tunnelKey]*sharedTunnel{}}
}

// ended: the dial failed, or the tunnel has ended since. p.mu is held.
func (e *sharedTunnel) ended() bool {
	select {
	case <-e.ready:
		return e.err != nil || e.tunnel.Ended()
	default:
		return false
	}
}

// entry returns the pool's tunnel to key, starting a dial if there is none
// or the last one ended. p.mu is held.
func (p *tunnelPool) entry(key tunnelKey) (e *sharedTunnel, fresh bool) {
	if e = p.open[key]; e != nil && !e.ended() {
		return e, false
	}
	if e != nil {
		delete(p.open, key)
		if p.detachLocked(e) {
			go e.close()
		}
	}
	e = &sharedTunnel{key: key, ready: make(chan struct{})}
	if p.closed {
		e.detached = true // the session is over: this tunnel serves one read
	} else {
		p.open[key] = e
	}
	go p.dial(e)
	return e, true
}

func (p *tunnelPool) dial(e *sharedTunnel) {
	ctx, cancel := context.WithTimeout(context.Background(), p.setup)
	t, err := p.conn.Forward(ctx, e.key.pod, e.key.port)
	cancel()
	p.mu.Lock()
	e.tunnel, e.err = t, err
	if err == nil {
		e.client = podconn.NewClient(t)
	}
	close(e.ready)
	closeNow := p.idleLocked(e)
	p.mu.Unlock()
	if closeNow {
		e.close()
	}
}

// open starts opening a tunnel to pod:port, if none is open, without
// waiting for it: the first read then finds it ready, or nearer to it.
func (p *tunnelPool) start(pod cluster.PodRef, port int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.entry(tunnelKey{pod, port})
	}
}

// acquire returns an open tunnel to pod:port for one read, which must
// release it. fresh says it was opened for this read, not reused.
func (p *tunnelPool) acquire(ctx context.Context, pod cluster.PodRef, port int) (e *sharedTunnel, fresh bool, err error) {
	p.mu.Lock()
	e, fresh = p.entry(tunnelKey{pod, port})
	e.users++
	if e.idleTimer != nil {
		e.idleTimer.Stop()
		e.idleTimer = nil
	}
	p.mu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		p.release(e)
		return nil, false, ctx.Err()
	}
	if e.err != nil {
		p.release(e)
		return nil, false, e.err
	}
	return e, fresh, nil
}

// release ends one read's use of e.
func (p *tunnelPool) release(e *sharedTunnel) {
	p.mu.Lock()
	e.users--
	closeNow := p.idleLocked(e)
	p.mu.Unlock()
	if closeNow {
		e.close()
	}
}

// idleLocked decides what happens to e once no read uses it: close it now
// if it is out of the pool, or after the idle time. p.mu is held.
func (p *tunnelPool) idleLocked(e *sharedTunnel) (closeNow bool) {
	select {
	case <-e.ready:
	default:
		return false // the dial decides when it ends
	}
	if e.users > 0 || e.closed {
		return false
	}
	if e.detached || e.err != nil {
		e.closed = true
		return true
	}
	if e.idleTimer == nil {
		e.idleTimer = time.AfterFunc(p.idle, func() { p.expire(e) })
	}
	return false
}

func (p *tunnelPool) expire(e *sharedTunnel) {
	p.mu.Lock()
	e.idleTimer = nil
	if e.users > 0 || e.closed {
		p.mu.Unlock()
		return
	}
	if p.open[e.key] == e {
		delete(p.open, e.key)
	}
	e.detached, e.closed = true, true
	p.mu.Unlock()
	e.close()
}

// detachLocked takes e out of the pool; it closes once idle. p.mu is held.
func (p *tunnelPool) detachLocked(e *sharedTunnel) (closeNow bool) {
	e.detached = true
	if e.idleTimer != nil {
		e.idleTimer.Stop()
		e.idleTimer = nil
	}
	return p.idleLocked(e)
}

// reset detaches every open tunnel: the next reads open new ones, and each
// old one closes when its last read is done.
func (p *tunnelPool) reset() {
	p.mu.Lock()
	var closing []*sharedTunnel
	for key, e := range p.open {
		delete(p.open, key)
		if p.detachLocked(e) {
			closing = append(closing, e)
		}
	}
	p.mu.Unlock()
	for _, e := range closing {
		e.close()
	}
}

// close ends the pool: its tunnels close as reset's do, and later reads
// each get a tunnel of their own, closed after the read.
func (p *tunnelPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.reset()
}

// close closes e's client and tunnel; only one caller ever does (closed).
func (e *sharedTunnel) close() {
	if e.err != nil {
		return
	}
	e.client.Close()
	if e.tunnel.Close != nil {
		e.tunnel.Close()
	}
}
