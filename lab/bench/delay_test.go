package bench

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// The proxy must cost what the path it stands for costs: a round trip to
// open a connection, a round trip per exchange. Only the lower bounds are
// asserted: a loaded machine can add time, never remove it.
func TestDelayProxyCostsAHandshakeAndARoundTripPerExchange(t *testing.T) {
	p, err := NewDelayProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const rtt = 80 * time.Millisecond
	p.SetRTT(rtt)

	start := time.Now()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	exchange := func(line string) time.Duration {
		t.Helper()
		at := time.Now()
		if _, err := io.WriteString(c, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != line+"\n" {
			t.Fatalf("echo = %q, %v", got, err)
		}
		return time.Since(at)
	}
	exchange("first")
	if d := time.Since(start); d < 2*rtt {
		t.Errorf("connect + first exchange took %v, want at least 2 RTT (%v)", d, 2*rtt)
	}
	if d := exchange("second"); d < rtt {
		t.Errorf("an exchange on an open connection took %v, want at least 1 RTT (%v)", d, rtt)
	}
	if p.Conns() != 1 {
		t.Errorf("connections = %d, want 1", p.Conns())
	}

	// Bytes arrive in the order sent, and a half-close reaches the other end.
	c2, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for i := 0; i < 100; i++ {
		if _, err := c2.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	_ = c2.(*net.TCPConn).CloseWrite()
	all, err := io.ReadAll(c2)
	if err != nil || len(all) != 100 {
		t.Fatalf("read back %d bytes, %v", len(all), err)
	}
	for i, b := range all {
		if int(b) != i {
			t.Fatalf("byte %d is %d: reordered", i, b)
		}
	}
}
