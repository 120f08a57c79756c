// Package bench holds what the benchmark programs under lab/bench share:
// running a command with its resource usage, counting what a client reads
// from the lab's API server, the istioctl build, and the machine's load.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshtriage/meshtriage/lab"
)

// IstioctlVersion is the istio.io/istio module lab/tools/istioctl requires;
// the cached binary is named after it so a version bump rebuilds.
const IstioctlVersion = "v0.0.0-20260827124520-eed52ebb66ad"

// IstioctlBinary returns a cached istioctl of IstioctlVersion, building it
// from lab/tools/istioctl the first time (many minutes on a small machine).
// $MESHLAB_ISTIOCTL names a prebuilt binary instead.
func IstioctlBinary(ctx context.Context) (string, error) {
	if p := os.Getenv("MESHLAB_ISTIOCTL"); p != "" {
		return p, nil
	}
	cache, err := lab.CacheDir(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "istioctl-"+IstioctlVersion[strings.LastIndex(IstioctlVersion, "-")+1:])
	if executable(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	// A second benchmark started meanwhile waits for the first one's build.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if executable(bin) {
		return bin, nil
	}
	root, err := lab.ModuleRoot(ctx)
	if err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tmp, ".")
	cmd.Dir = filepath.Join(root, "lab", "tools", "istioctl")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build istioctl %s: %w\n%s", IstioctlVersion, err, out.String())
	}
	return bin, os.Rename(tmp, bin)
}

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Usage is what one run of a command cost.
type Usage struct {
	Wall     time.Duration
	CPU      time.Duration // user + system
	MaxRSSKB int64
	Exit     int
	Stdout   []byte
	Stderr   []byte
}

// Run runs cmd to its end and reports its wall time, CPU time (getrusage
// of the child) and peak resident set. A non-zero exit is not an error:
// meshtriage check exits 3 on a finding.
//
// The peak is the child's VmHWM, sampled from /proc while it runs, not
// getrusage's ru_maxrss: Go starts children with CLONE_VM, and at exec
// Linux folds the high-water mark of the shared, parent's, address space
// into the child's ru_maxrss, so a 30 MB child of a 250 MB parent reports
// 250 MB.
func Run(cmd *exec.Cmd) (Usage, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Usage{}, err
	}
	var hwm atomic.Int64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb := vmHWM(status); kb > hwm.Load() {
				hwm.Store(kb)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-sampled
	u := Usage{Wall: time.Since(start), Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), MaxRSSKB: hwm.Load()}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return u, err
	}
	st := cmd.ProcessState
	u.Exit = st.ExitCode()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		u.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return u, nil
}

// vmHWM reads the peak resident set in kB from a /proc/PID/status (0 when
// the process is gone or not yet exec'd into its own address space, which
// the next sample catches).
func vmHWM(status string) int64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	return 0
}

// CountingProxy forwards TCP connections to an upstream address and counts
// the bytes each way. TLS passes through untouched, so a client sees the
// real API server's certificate; the counts are bytes on the wire (after
// gzip, with TLS framing), including port-forward streams.
type CountingProxy struct {
	Addr     string
	upstream string
	ln       net.Listener
	down, up atomic.Int64 // server->client, client->server
	conns    atomic.Int64
	wg       sync.WaitGroup
}

// NewCountingProxy listens on a free loopback port.
func NewCountingProxy(upstream string) (*CountingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &CountingProxy{Addr: ln.Addr().String(), upstream: upstream, ln: ln}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *CountingProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.conns.Add(1)
		go p.forward(c)
	}
}

func (p *CountingProxy) forward(client net.Conn) {
	defer client.Close()
	server, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, n *atomic.Int64) {
		_, _ = io.Copy(dst, countingReader{src, n})
		// Half-close so the other direction can finish its last bytes.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(client, server, &p.down)
	go pipe(server, client, &p.up)
	<-done
	<-done
}

// countingReader adds as bytes flow, so a connection a client keeps open
// (an in-process client's pool) is counted too.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// Reset zeroes the counters.
func (p *CountingProxy) Reset() { p.down.Store(0); p.up.Store(0); p.conns.Store(0) }

// Counts returns the bytes read by clients, the bytes they sent, and the
// connections they opened since the last Reset.
func (p *CountingProxy) Counts() (down, up, conns int64) {
	return p.down.Load(), p.up.Load(), p.conns.Load()
}

// Close stops accepting connections.
func (p *CountingProxy) Close() error { return p.ln.Close() }

// WriteKubeconfigVia writes a copy of the lab's admin kubeconfig whose
// server is the proxy's address.
func WriteKubeconfigVia(l *lab.Lab, proxyAddr, path string) error {
	cfg, err := clientcmd.LoadFromFile(l.Kubeconfig)
	if err != nil {
		return err
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + proxyAddr
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// AuditMark is a position in the audit log.
type AuditMark int64

// MarkAudit returns the audit log's current end.
func MarkAudit(l *lab.Lab) (AuditMark, error) {
	st, err := os.Stat(l.AuditLog)
	if err != nil {
		return 0, err
	}
	return AuditMark(st.Size()), nil
}

// Requests are the API requests the audit log recorded after a mark.
type Requests struct {
	Total int
	// ByResource counts "verb resource", e.g. "list pods", "get pods/portforward".
	ByResource map[string]int
	// URIs are "VERB URI" in the order logged.
	URIs []string
}

// Top lists the n most frequent "verb resource" with their counts.
func (r Requests) Top(n int) string {
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range r.ByResource {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].k < all[j].k
	})
	var parts []string
	for i, e := range all {
		if i == n {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}

// RequestsSince counts the requests recorded after mark whose user agent
// passes keep. It waits for the log to stop growing first: the API server
// writes an event when the response completes, which can be after the
// client has read it and exited.
func RequestsSince(l *lab.Lab, mark AuditMark, keep func(userAgent string) bool) (Requests, error) {
	settle(l.AuditLog)
	f, err := os.Open(l.AuditLog)
	if err != nil {
		return Requests{}, err
	}
	defer f.Close()
	if _, err := f.Seek(int64(mark), io.SeekStart); err != nil {
		return Requests{}, err
	}
	out := Requests{ByResource: map[string]int{}}
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			lab.AuditEvent
			AuditID string `json:"auditID"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line cut by the mark or still being written
		}
		if seen[e.AuditID] || !keep(e.UserAgent) {
			continue
		}
		seen[e.AuditID] = true
		out.Total++
		out.ByResource[e.Verb+" "+e.Resource()]++
		out.URIs = append(out.URIs, e.Verb+" "+e.RequestURI)
	}
	return out, sc.Err()
}

func settle(path string) {
	last := int64(-1)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		st, err := os.Stat(path)
		if err != nil {
			return
		}
		if st.Size() == last {
			return
		}
		last = st.Size()
		time.Sleep(300 * time.Millisecond)
	}
}

// LoadAvg is /proc/loadavg's 1-minute figure.
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var one float64
	fmt.Sscanf(string(b), "%f", &one)
	return one
}

// Median of a non-empty slice.
func Median[T int64 | float64 | time.Duration | int](xs []T) T {
	s := append([]T(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
