package bench

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProxy forwards TCP connections to an upstream address, as a long
// network path would: every byte takes OneWay to cross in either direction,
// and a new connection costs one round trip (2 x OneWay) before its first
// byte leaves, as the TCP handshake of a real path does. A client on
// loopback then sees the timing of a cluster RTT = 2 x OneWay away. TLS
// passes through untouched.
//
// Bandwidth is not limited: the benchmark is about round trips, and the
// lab's answers are small.
type DelayProxy struct {
	Addr     string
	upstream string
	ln       net.Listener
	oneWay   atomic.Int64 // time.Duration
	conns    atomic.Int64
	wg       sync.WaitGroup
}

// NewDelayProxy listens on a free loopback port with no delay; SetRTT sets it.
func NewDelayProxy(upstream string) (*DelayProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{Addr: ln.Addr().String(), upstream: upstream, ln: ln}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// SetRTT sets the round-trip time connections opened from now on see.
func (p *DelayProxy) SetRTT(rtt time.Duration) { p.oneWay.Store(int64(rtt / 2)) }

// RTT is the round-trip time new connections see.
func (p *DelayProxy) RTT() time.Duration { return 2 * time.Duration(p.oneWay.Load()) }

// Conns is the number of connections accepted since the last ResetConns.
func (p *DelayProxy) Conns() int64 { return p.conns.Load() }

// ResetConns zeroes the connection count.
func (p *DelayProxy) ResetConns() { p.conns.Store(0) }

// Close stops accepting connections; open ones run to their end.
func (p *DelayProxy) Close() error {
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *DelayProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.conns.Add(1)
		go p.forward(c, time.Duration(p.oneWay.Load()))
	}
}

func (p *DelayProxy) forward(client net.Conn, oneWay time.Duration) {
	defer client.Close()
	// The kernel completed the client's handshake with us at once; a real
	// path would have taken a round trip before the client's first byte
	// could leave. Bytes the client sent meanwhile wait in its socket.
	handshake := time.Now().Add(2 * oneWay)
	server, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	done := make(chan struct{}, 2)
	go func() { delayedCopy(server, client, oneWay, handshake); done <- struct{}{} }()
	go func() { delayedCopy(client, server, oneWay, handshake); done <- struct{}{} }()
	<-done
	<-done
}

// chunk is what one read returned, due at the other end at due.
type chunk struct {
	data []byte
	due  time.Time
}

// delayedCopy copies src to dst, each read delivered oneWay after it was
// read (and not before notBefore + oneWay), in order. At src's end it
// half-closes dst, once what came before has been delivered.
func delayedCopy(dst, src net.Conn, oneWay time.Duration, notBefore time.Time) {
	// The queue is deep enough that the reader never waits on the writer
	// for the lab's answers; if it did, it would only add delay, never
	// remove it.
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				at := time.Now()
				if at.Before(notBefore) {
					at = notBefore
				}
				queue <- chunk{data: buf[:n], due: at.Add(oneWay)}
			}
			if err != nil {
				return
			}
		}
	}()
	broken := false
	for c := range queue {
		if broken {
			continue // drain, so the reader ends
		}
		if wait := time.Until(c.due); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.data); err != nil {
			broken = true
			_ = src.Close()
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
}
