package lab

import (
	"io"
	"net"
	"sync"
)

// Relay is a TCP relay on loopback to one address that the test can cut,
// as a network partition or a moved API server endpoint cuts a remote
// cluster off from istiod while the cluster itself stays up: istiod's
// informers lose their watches and fail to re-list, and nothing else
// changes.
type Relay struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

// StartRelay listens on a free loopback port and relays every connection
// to target.
func StartRelay(target string) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{ln: ln, target: target}
	go r.serve()
	return r, nil
}

// Addr is the relay's HOST:PORT.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

func (r *Relay) serve() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil {
			in.Close()
			continue
		}
		r.mu.Lock()
		if r.cut {
			r.mu.Unlock()
			in.Close()
			out.Close()
			continue
		}
		r.conns = append(r.conns, in, out)
		r.mu.Unlock()
		go pipe(in, out)
		go pipe(out, in)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Cut closes the listener and every relayed connection: from then on the
// target cannot be reached through the relay.
func (r *Relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	r.ln.Close()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}
