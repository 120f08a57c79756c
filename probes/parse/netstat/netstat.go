// Package netstat reads `netstat -natpw` (net-tools) as istioctl's
// bug-report runs it in each proxy's istio-proxy container
// (tools/bug-report/pkg/content GetNetstat: proxies/NS/POD/netstat): the
// sockets of the pod's network namespace, the app's among them. Only the
// listening TCP sockets are read: where something listens for a port.
package netstat

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
)

// Listener is one listening TCP socket.
type Listener struct {
	// Host is the local address without its port ("127.0.0.1", "::",
	// "0.0.0.0", "::1", a pod IP).
	Host string
	Port int32
	// Program is netstat's PID/Program name column: "-" for a process of
	// another user (the app, seen from istio-proxy's UID), "16/envoy".
	Program string
	// Line is the row as netstat wrote it.
	Line string
}

// Loopback reports whether the socket takes connections to loopback only.
func (l Listener) Loopback() bool {
	h := strings.TrimPrefix(l.Host, "::ffff:")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Listeners reads the LISTEN rows of tcp and tcp6 sockets; headers, UDP,
// raw sockets and connections are skipped, as is a row it cannot read.
func Listeners(out []byte) []Listener {
	var ls []Listener
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		// Proto Recv-Q Send-Q Local Foreign State [PID/Program]
		if len(f) < 6 || (f[0] != "tcp" && f[0] != "tcp6") || f[5] != "LISTEN" {
			continue
		}
		i := strings.LastIndexByte(f[3], ':')
		if i < 0 {
			continue
		}
		port, err := strconv.ParseInt(f[3][i+1:], 10, 32)
		if err != nil {
			continue
		}
		l := Listener{Host: f[3][:i], Port: int32(port), Line: line}
		if len(f) > 6 {
			l.Program = strings.Join(f[6:], " ")
		}
		ls = append(ls, l)
	}
	return ls
}

// OnPort are the listeners of port.
func OnPort(ls []Listener, port int32) []Listener {
	var out []Listener
	for _, l := range ls {
		if l.Port == port {
			out = append(out, l)
		}
	}
	return out
}
