package podconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// StatusError is a non-200 answer from Envoy admin or istiod.
type StatusError struct {
	Method string
	Path   string
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.Status)
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

// Client sends HTTP requests to the pod port at the end of a tunnel. It
// keeps connections alive between requests: the reads of one pod after the
// first cost one round trip each, where a new connection costs the stream
// creation too.
type Client struct {
	transport *http.Transport
	client    *http.Client
}

// NewClient is a client for t. Close it before t.
func NewClient(t Tunnel) *Client {
	transport := &http.Transport{
		// Environment proxies must never see a request meant for a pod.
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return t.Dial(ctx)
		},
		MaxIdleConnsPerHost: maxIdlePerTunnel,
		IdleConnTimeout:     idleConnTimeout,
	}
	return &Client{transport: transport, client: &http.Client{Transport: transport}}
}

// Probes of one wave read a pod's admin API concurrently; this many
// connections stay open for the next wave.
const maxIdlePerTunnel = 8

// idleConnTimeout closes the connections a session no longer uses; the
// tunnel stays open until its owner closes it.
const idleConnTimeout = 90 * time.Second

// Close closes the client's idle connections.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// Get GETs path (with its query) and reads at most max bytes of the body.
func (c *Client) Get(ctx context.Context, path string, max int64) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, max)
}

// Post is Get's counterpart for the admin endpoints that change state:
// Envoy refuses them over GET.
func (c *Client) Post(ctx context.Context, path string, max int64) ([]byte, error) {
	return c.do(ctx, http.MethodPost, path, max)
}

func (c *Client) do(ctx context.Context, method, path string, max int64) ([]byte, error) {
	// The host is never resolved: every connection goes through the tunnel.
	req, err := http.NewRequestWithContext(ctx, method, "http://localhost"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, &StatusError{Method: method, Path: req.URL.RequestURI(), Status: resp.StatusCode, Body: FirstLine(strings.TrimSpace(string(msg)))}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("response to %s %s is larger than %d bytes", method, req.URL.RequestURI(), max)
	}
	return body, nil
}

// CappedBuffer collects at most Max bytes; a write past the cap fails and
// calls Overflow, which cancels the exec stream that feeds it.
type CappedBuffer struct {
	Max      int64
	Overflow func()

	mu   sync.Mutex
	buf  bytes.Buffer
	over bool
}

// ErrOverflow is what a write past the cap returns.
var ErrOverflow = errors.New("output exceeds the byte limit")

func (b *CappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if int64(b.buf.Len())+int64(len(p)) > b.Max {
		b.over = true
		if b.Overflow != nil {
			b.Overflow()
		}
		return 0, ErrOverflow
	}
	return b.buf.Write(p)
}

// Bytes is a copy of what was collected.
func (b *CappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Exceeded reports a write past the cap.
func (b *CappedBuffer) Exceeded() bool {
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
