package podconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// tunnel is one port-forward connection to the API server. Each Dial asks
// the kubelet for a new connection to the pod port: an error stream and a
// data stream with the same request ID (the port-forward protocol v1).
type tunnel struct {
	conn   httpstream.Connection
	pod    cluster.PodRef
	port   int
	nextID atomic.Int64
	sink   errorSink

	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{}
	// wg counts the goroutines of the tunnel's connections, which Close
	// waits for.
	wg sync.WaitGroup
}

func newTunnel(conn httpstream.Connection, pod cluster.PodRef, port int) Tunnel {
	t := &tunnel{conn: conn, pod: pod, port: port, closing: make(chan struct{}), done: make(chan struct{})}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		select {
		case <-conn.CloseChan():
		case <-t.closing:
		}
		close(t.done)
	}()
	return Tunnel{Dial: t.dial, Close: t.close, LastError: t.sink.last, Done: t.done}
}

func (t *tunnel) close() {
	t.closeOnce.Do(func() {
		close(t.closing)
		_ = t.conn.Close()
		ended := make(chan struct{})
		go func() { t.wg.Wait(); close(ended) }()
		timer := time.NewTimer(forwardGrace)
		defer timer.Stop()
		select {
		case <-ended:
		case <-timer.C:
		}
	})
}

// errorStreamWait bounds how long a connection that the pod side ended
// waits for the kubelet's reason on the error stream.
const errorStreamWait = time.Second

type createdStream struct {
	s   httpstream.Stream
	err error
}

// dial creates the connection's two streams at once. client-go's forwarder
// creates them one after the other, and each creation waits for the
// server's reply: a round trip each, where one suffices. The kubelet pairs
// the two by request ID, in either order.
func (t *tunnel) dial(ctx context.Context) (net.Conn, error) {
	select {
	case <-t.done:
		return nil, fmt.Errorf("port-forward to %s:%d has ended", t.pod, t.port)
	default:
	}
	id := strconv.FormatInt(t.nextID.Add(1)-1, 10)
	errHeaders := http.Header{}
	errHeaders.Set(corev1.StreamType, corev1.StreamTypeError)
	errHeaders.Set(corev1.PortHeader, strconv.Itoa(t.port))
	errHeaders.Set(corev1.PortForwardRequestIDHeader, id)
	dataHeaders := errHeaders.Clone()
	dataHeaders.Set(corev1.StreamType, corev1.StreamTypeData)

	errC, dataC := make(chan createdStream, 1), make(chan createdStream, 1)
	t.wg.Add(2)
	go func() { defer t.wg.Done(); s, err := t.conn.CreateStream(errHeaders); errC <- createdStream{s, err} }()
	go func() { defer t.wg.Done(); s, err := t.conn.CreateStream(dataHeaders); dataC <- createdStream{s, err} }()
	both := make(chan [2]createdStream, 1)
	t.wg.Add(1)
	go func() { defer t.wg.Done(); both <- [2]createdStream{<-errC, <-dataC} }()

	var pair [2]createdStream
	select {
	case pair = <-both:
	case <-ctx.Done():
		// The streams are dropped when they arrive.
		t.wg.Add(1)
		go func() { defer t.wg.Done(); t.drop(<-both) }()
		return nil, ctx.Err()
	}
	if err := errors.Join(pair[0].err, pair[1].err); err != nil {
		t.drop(pair)
		if t.sink.last() == nil {
			t.sink.Error(err, "")
		}
		return nil, fmt.Errorf("port-forward to %s:%d: %w", t.pod, t.port, err)
	}
	c := &streamConn{data: pair[1].s, errs: pair[0].s, conn: t.conn, errDone: make(chan struct{})}
	// Nothing is written to the error stream; the kubelet writes its
	// reason there when it cannot reach the pod port.
	_ = c.errs.Close()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer close(c.errDone)
		msg, err := io.ReadAll(c.errs)
		if len(msg) > 0 {
			c.remoteErr = &ForwardError{Reason: FirstLine(string(msg))}
			t.sink.Error(c.remoteErr, "")
		} else if err != nil && !errors.Is(err, io.EOF) {
			t.sink.Error(err, "")
		}
	}()
	return c, nil
}

func (t *tunnel) drop(pair [2]createdStream) {
	var made []httpstream.Stream
	for _, p := range pair {
		if p.s != nil {
			_ = p.s.Reset()
			made = append(made, p.s)
		}
	}
	t.conn.RemoveStreams(made...)
}

// ForwardError is the kubelet's reason a connection through a tunnel
// failed, as it writes it on the error stream ("error forwarding port
// 15000 to pod ...: connection refused").
type ForwardError struct{ Reason string }

func (e *ForwardError) Error() string { return e.Reason }

// streamConn is one connection to the pod port through a tunnel.
type streamConn struct {
	data, errs httpstream.Stream
	conn       httpstream.Connection
	// remoteErr is the kubelet's reason, set before errDone is closed.
	remoteErr error
	errDone   chan struct{}
	closeOnce sync.Once
}

var _ net.Conn = (*streamConn)(nil)

// Read returns the kubelet's reason in place of the end of the stream when
// it gave one: "connection refused" says more than EOF.
func (c *streamConn) Read(p []byte) (int, error) {
	n, err := c.data.Read(p)
	if errors.Is(err, io.EOF) {
		timer := time.NewTimer(errorStreamWait)
		defer timer.Stop()
		select {
		case <-c.errDone:
			if c.remoteErr != nil {
				return n, c.remoteErr
			}
		case <-timer.C:
		}
	}
	return n, err
}

func (c *streamConn) Write(p []byte) (int, error) { return c.data.Write(p) }

// Close resets both streams: the kubelet then closes its connection to the
// pod port.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.data.Reset()
		_ = c.errs.Reset()
		c.conn.RemoveStreams(c.data, c.errs)
	})
	return nil
}

// A stream has no addresses or deadlines of its own; the HTTP client
// bounds a request with its context, which closes the connection.
func (c *streamConn) LocalAddr() net.Addr              { return tunnelAddr{} }
func (c *streamConn) RemoteAddr() net.Addr             { return tunnelAddr{} }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

type tunnelAddr struct{}

func (tunnelAddr) Network() string { return "port-forward" }
func (tunnelAddr) String() string  { return "port-forward" }
