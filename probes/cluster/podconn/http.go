package podconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
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

// Get GETs url without keep-alive (the tunnel closes right after) and reads
// at most max bytes of the body.
func Get(ctx context.Context, rawURL string, max int64) ([]byte, error) {
	return do(ctx, http.MethodGet, rawURL, max)
}

// Post is Get's counterpart for the admin endpoints that change state:
// Envoy refuses them over GET.
func Post(ctx context.Context, rawURL string, max int64) ([]byte, error) {
	return do(ctx, http.MethodPost, rawURL, max)
}

func do(ctx context.Context, method, rawURL string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, rawURL, nil)
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
