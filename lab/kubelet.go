package lab

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Kubelet is the lab's stand-in for a node's kubelet: an HTTPS server on
// 127.0.0.1 implementing the endpoints the API server proxies pods/log,
// pods/portforward and pods/exec to. Each forwarded (pod, port) reaches a
// loopback listener: an HTTP handler the lab serves (the Envoy-admin
// simulator, istiod's syncz) or any address (a real istiod).
type Kubelet struct {
	// Port is the HTTPS port; the Node's daemonEndpoints point at it.
	Port int

	ln     net.Listener
	server *http.Server

	mu      sync.Mutex
	pods    map[cluster.PodRef]bool
	logs    map[logKey][]LogLine
	ports   map[portKey]string
	servers map[portKey]*http.Server
	exec    ExecFunc
	clock   func() time.Time
	// Requests counts served requests by kind ("logs", "portforward",
	// "portforward-ws", "exec"), so tests can prove which path a probe took.
	requests map[string]int
}

// LogLine is one line of a container log with the time the runtime stamped
// on it, which sinceSeconds and timestamps=true work from.
type LogLine struct {
	Time time.Time
	Text string
}

// LinesAt splits a recorded log into lines stamped t.
func LinesAt(data []byte, t time.Time) []LogLine {
	var out []LogLine
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l != "" {
			out = append(out, LogLine{Time: t, Text: l})
		}
	}
	return out
}

// ExecFunc runs a command in a container and returns its exit code.
type ExecFunc func(ctx context.Context, pod cluster.PodRef, container string, command []string, stdout, stderr io.Writer) int

type logKey struct {
	pod       cluster.PodRef
	container string
	previous  bool
}

type portKey struct {
	pod  cluster.PodRef
	port int32
}

// PortForwardProtocol is the only SPDY port-forward subprotocol.
const PortForwardProtocol = "portforward.k8s.io"

// StartKubelet listens on a free loopback port with a fresh self-signed
// certificate.
func StartKubelet() (*Kubelet, error) {
	cert, err := selfSignedCert("meshlab-kubelet")
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return nil, err
	}
	k := &Kubelet{
		Port:     ln.Addr().(*net.TCPAddr).Port,
		ln:       ln,
		pods:     map[cluster.PodRef]bool{},
		logs:     map[logKey][]LogLine{},
		ports:    map[portKey]string{},
		servers:  map[portKey]*http.Server{},
		requests: map[string]int{},
	}
	k.exec = k.pilotAgent
	k.clock = time.Now
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", k.serveLogs)
	mux.HandleFunc("/portForward/{ns}/{pod}", k.servePortForward)
	mux.HandleFunc("/portForward/{ns}/{pod}/{uid}", k.servePortForward)
	mux.HandleFunc("/exec/{ns}/{pod}/{container}", k.serveExec)
	mux.HandleFunc("/exec/{ns}/{pod}/{uid}/{container}", k.serveExec)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	// No WriteTimeout: port-forward and exec hijack the connection and live
	// as long as the client keeps them.
	k.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go k.server.Serve(ln)
	return k, nil
}

// Close stops the kubelet and every simulator it serves.
func (k *Kubelet) Close() {
	k.server.Close()
	k.Reset()
}

// Reset forgets every pod, log and port, closing the simulators.
func (k *Kubelet) Reset() {
	k.mu.Lock()
	servers := k.servers
	k.pods = map[cluster.PodRef]bool{}
	k.logs = map[logKey][]LogLine{}
	k.ports = map[portKey]string{}
	k.servers = map[portKey]*http.Server{}
	k.mu.Unlock()
	for _, s := range servers {
		s.Close()
	}
}

// Forget stops running pod: its logs, ports and simulators go.
func (k *Kubelet) Forget(pod cluster.PodRef) {
	k.mu.Lock()
	var closing []*http.Server
	delete(k.pods, pod)
	for key := range k.logs {
		if key.pod == pod {
			delete(k.logs, key)
		}
	}
	for key, s := range k.servers {
		if key.pod == pod {
			closing = append(closing, s)
			delete(k.servers, key)
		}
	}
	for key := range k.ports {
		if key.pod == pod {
			delete(k.ports, key)
		}
	}
	k.mu.Unlock()
	for _, s := range closing {
		s.Close()
	}
}

// AddPod makes the kubelet run pod: its containers' logs read as empty
// until SetLogs, and its ports refuse connections until Serve or Forward.
func (k *Kubelet) AddPod(pod cluster.PodRef) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods[pod] = true
}

// SetLogs records a container's log (previous: its last terminated instance).
func (k *Kubelet) SetLogs(pod cluster.PodRef, container string, previous bool, lines []LogLine) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods[pod] = true
	k.logs[logKey{pod, container, previous}] = lines
}

// Serve answers connections forwarded to pod:port with h, on a loopback
// listener of its own.
func (k *Kubelet) Serve(pod cluster.PodRef, port int32, h http.Handler) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go s.Serve(ln)
	k.mu.Lock()
	old := k.servers[portKey{pod, port}]
	k.pods[pod] = true
	k.ports[portKey{pod, port}] = ln.Addr().String()
	k.servers[portKey{pod, port}] = s
	k.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Forward sends connections to pod:port on to addr (a real istiod, say),
// closing a simulator that served that port before.
func (k *Kubelet) Forward(pod cluster.PodRef, port int32, addr string) {
	k.mu.Lock()
	old := k.servers[portKey{pod, port}]
	delete(k.servers, portKey{pod, port})
	k.pods[pod] = true
	k.ports[portKey{pod, port}] = addr
	k.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// SetExec replaces the command runner (default: pilot-agent request GET
// against the pod's port 15000).
func (k *Kubelet) SetExec(f ExecFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.exec = f
}

// SetClock sets the kubelet's "now" for sinceSeconds (nil: the wall
// clock). A replayed recording freezes it at the recording's end, as the
// in-memory scenario does, so a since window keeps the same lines.
func (k *Kubelet) SetClock(now func() time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now == nil {
		now = time.Now
	}
	k.clock = now
}

// Requests returns how many requests of kind the kubelet has served.
func (k *Kubelet) Requests(kind string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.requests[kind]
}

func (k *Kubelet) count(kind string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.requests[kind]++
}

func (k *Kubelet) known(pod cluster.PodRef) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods[pod]
}

func (k *Kubelet) address(pod cluster.PodRef, port int32) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	addr, ok := k.ports[portKey{pod, port}]
	return addr, ok
}

func podOf(r *http.Request) cluster.PodRef {
	return cluster.PodRef{Namespace: r.PathValue("ns"), Name: r.PathValue("pod")}
}

// serveLogs implements GET /containerLogs with the kubelet's query
// parameters: previous, sinceSeconds, sinceTime, tailLines, timestamps,
// limitBytes (follow ends at the end of what was recorded).
func (k *Kubelet) serveLogs(w http.ResponseWriter, r *http.Request) {
	k.count("logs")
	pod, container := podOf(r), r.PathValue("container")
	q := r.URL.Query()
	previous := q.Get("previous") == "true"
	k.mu.Lock()
	knownPod := k.pods[pod]
	lines, ok := k.logs[logKey{pod, container, previous}]
	now := k.clock()
	k.mu.Unlock()
	if !knownPod {
		http.Error(w, fmt.Sprintf("pod %q not found", pod.String()), http.StatusNotFound)
		return
	}
	if !ok && previous {
		http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod.Name), http.StatusBadRequest)
		return
	}
	var since time.Time
	if s := q.Get("sinceSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			http.Error(w, "sinceSeconds must be a positive integer", http.StatusBadRequest)
			return
		}
		since = now.Add(-time.Duration(n) * time.Second)
	}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			http.Error(w, "sinceTime: "+err.Error(), http.StatusBadRequest)
			return
		}
		since = t
	}
	var kept []LogLine
	for _, l := range lines {
		if since.IsZero() || !l.Time.Before(since) {
			kept = append(kept, l)
		}
	}
	if s := q.Get("tailLines"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "tailLines must be a non-negative integer", http.StatusBadRequest)
			return
		}
		if n < len(kept) {
			kept = kept[len(kept)-n:]
		}
	}
	var buf bytes.Buffer
	for _, l := range kept {
		if q.Get("timestamps") == "true" {
			buf.WriteString(l.Time.UTC().Format(time.RFC3339Nano) + " ")
		}
		buf.WriteString(l.Text)
	}
	out := buf.Bytes()
	if s := q.Get("limitBytes"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			http.Error(w, "limitBytes must be a positive integer", http.StatusBadRequest)
			return
		}
		if n < int64(len(out)) {
			out = out[:n]
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write(out)
}

// servePortForward implements the kubelet's port-forward endpoint: SPDY
// (portforward.k8s.io: a data and an error stream per request ID, the port
// in a header) or, if the API server sends one, a websocket (v4 channel
// protocol: the ports in the query, two channels per port).
func (k *Kubelet) servePortForward(w http.ResponseWriter, r *http.Request) {
	pod := podOf(r)
	if !k.known(pod) {
		http.Error(w, fmt.Sprintf("pod %q not found", pod.String()), http.StatusNotFound)
		return
	}
	if wsstream.IsWebSocketRequest(r) {
		k.count("portforward-ws")
		k.portForwardWebsocket(w, r, pod)
		return
	}
	k.count("portforward")
	if _, err := httpstream.Handshake(r, w, []string{PortForwardProtocol}); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	streams := make(chan httpstream.Stream)
	closing := make(chan struct{})
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		if _, err := streamPort(s.Headers()); err != nil {
			return err
		}
		switch t := s.Headers().Get(corev1.StreamType); t {
		case corev1.StreamTypeData, corev1.StreamTypeError:
		default:
			return fmt.Errorf("invalid stream type %q", t)
		}
		select {
		case streams <- s:
			return nil
		case <-closing:
			return errors.New("connection closing")
		}
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	defer close(closing)
	conn.SetIdleTimeout(10 * time.Minute)

	type pair struct{ data, errs httpstream.Stream }
	pairs := map[string]*pair{}
	for {
		select {
		case <-conn.CloseChan():
			return
		case s := <-streams:
			id := s.Headers().Get(corev1.PortForwardRequestIDHeader)
			if id == "" {
				// Old clients: the error stream's ID names the pair, the
				// data stream follows it two IDs later.
				n := int(s.Identifier())
				if s.Headers().Get(corev1.StreamType) == corev1.StreamTypeData {
					n -= 2
				}
				id = strconv.Itoa(n)
			}
			p := pairs[id]
			if p == nil {
				p = &pair{}
				pairs[id] = p
			}
			if s.Headers().Get(corev1.StreamType) == corev1.StreamTypeData {
				p.data = s
			} else {
				p.errs = s
			}
			if p.data != nil && p.errs != nil {
				delete(pairs, id)
				port, _ := streamPort(p.data.Headers())
				go k.forward(conn.CloseChan(), pod, port, p.data, p.errs)
			}
		}
	}
}

func streamPort(h http.Header) (int32, error) {
	s := h.Get(corev1.PortHeader)
	if s == "" {
		return 0, fmt.Errorf("%q header is required", corev1.PortHeader)
	}
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil || p < 1 {
		return 0, fmt.Errorf("invalid port %q", s)
	}
	return int32(p), nil
}

// forward copies between a forwarded stream and the (pod, port) listener
// until either side ends or the client's connection closes. A port nothing
// listens on is reported on the error stream, as the kubelet does.
func (k *Kubelet) forward(closed <-chan bool, pod cluster.PodRef, port int32, data io.ReadWriteCloser, errs io.WriteCloser) {
	defer data.Close()
	defer errs.Close()
	local, err := k.dial(pod, port)
	if err != nil {
		fmt.Fprintf(errs, "error forwarding port %d to pod %s: %v", port, pod, err)
		return
	}
	defer local.Close()
	go func() {
		io.Copy(local, data)
		if tc, ok := local.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	copied := make(chan struct{})
	go func() {
		io.Copy(data, local)
		close(copied)
	}()
	select {
	case <-copied:
	case <-closed:
	}
}

func (k *Kubelet) dial(pod cluster.PodRef, port int32) (net.Conn, error) {
	addr, ok := k.address(pod, port)
	if !ok {
		return nil, fmt.Errorf("failed to connect to localhost:%d inside namespace %q: connection refused", port, pod.Namespace)
	}
	return net.DialTimeout("tcp", addr, 5*time.Second)
}

func (k *Kubelet) portForwardWebsocket(w http.ResponseWriter, r *http.Request, pod cluster.PodRef) {
	var ports []int32
	for _, v := range r.URL.Query()[corev1.PortHeader] {
		for _, s := range strings.Split(v, ",") {
			p, err := strconv.ParseUint(s, 10, 16)
			if err != nil || p < 1 {
				http.Error(w, fmt.Sprintf("invalid port %q", s), http.StatusBadRequest)
				return
			}
			ports = append(ports, int32(p))
		}
	}
	if len(ports) == 0 {
		http.Error(w, `query parameter "port" is required`, http.StatusBadRequest)
		return
	}
	channels := make([]wsstream.ChannelType, 0, 2*len(ports))
	for range ports {
		channels = append(channels, wsstream.ReadWriteChannel, wsstream.WriteChannel)
	}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		"": {Binary: true, Channels: channels},
		"v4." + wsstream.ChannelWebSocketProtocol:       {Binary: true, Channels: channels},
		"v4." + wsstream.Base64ChannelWebSocketProtocol: {Binary: false, Channels: channels},
	})
	conn.SetIdleTimeout(10 * time.Minute)
	_, streams, err := conn.Open(w, r)
	if err != nil {
		return
	}
	defer conn.Close()
	var wg sync.WaitGroup
	never := make(chan bool)
	for i, port := range ports {
		data, errs := streams[2*i], streams[2*i+1]
		// Each channel opens with the port it carries, little-endian.
		portBytes := binary.LittleEndian.AppendUint16(nil, uint16(port))
		data.Write(portBytes)
		errs.Write(portBytes)
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.forward(never, pod, port, data, errs)
		}()
	}
	wg.Wait()
}

// serveExec implements the kubelet's exec endpoint over SPDY (remotecommand
// v4 down to v1): streams for error, stdout, stderr and stdin as the query
// asks, the command's exit status as a metav1.Status on the error stream.
func (k *Kubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	k.count("exec")
	pod, container := podOf(r), r.PathValue("container")
	if !k.known(pod) {
		http.Error(w, fmt.Sprintf("pod %q not found", pod.String()), http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	command := q[corev1.ExecCommandParam]
	stdin, stdout, stderr, tty := q.Get(corev1.ExecStdinParam) == "1", q.Get(corev1.ExecStdoutParam) == "1", q.Get(corev1.ExecStderrParam) == "1", q.Get(corev1.ExecTTYParam) == "1"
	if tty {
		stderr = false
	}
	if !stdin && !stdout && !stderr {
		http.Error(w, "you must specify at least 1 of stdin, stdout, stderr", http.StatusBadRequest)
		return
	}
	if wsstream.IsWebSocketRequest(r) {
		http.Error(w, "the lab kubelet serves exec over SPDY only", http.StatusBadRequest)
		return
	}
	protocol, err := httpstream.Handshake(r, w, remotecommandconsts.SupportedStreamingProtocols)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	type arrived struct {
		s     httpstream.Stream
		reply <-chan struct{}
	}
	streams := make(chan arrived)
	closing := make(chan struct{})
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, reply <-chan struct{}) error {
		select {
		case streams <- arrived{s, reply}:
			return nil
		case <-closing:
			return errors.New("connection closing")
		}
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	defer close(closing)

	want := 1
	for _, on := range []bool{stdin, stdout, stderr, tty && protocol != remotecommandconsts.StreamProtocolV2Name && protocol != remotecommandconsts.StreamProtocolV1Name && protocol != ""} {
		if on {
			want++
		}
	}
	var errStream, outStream, errOutStream httpstream.Stream
	expired := time.After(30 * time.Second)
	for got := 0; got < want; {
		select {
		case a := <-streams:
			switch a.s.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeError:
				errStream = a.s
			case corev1.StreamTypeStdout:
				outStream = a.s
			case corev1.StreamTypeStderr:
				errOutStream = a.s
			case corev1.StreamTypeStdin, corev1.StreamTypeResize:
				// pilot-agent request reads no input.
			}
			select {
			case <-a.reply:
			case <-expired:
				return
			}
			got++
		case <-conn.CloseChan():
			return
		case <-expired:
			return
		}
	}
	var outW, errW io.Writer = io.Discard, io.Discard
	if outStream != nil {
		outW = outStream
	}
	if errOutStream != nil {
		errW = errOutStream
	}
	k.mu.Lock()
	run := k.exec
	k.mu.Unlock()
	code := run(r.Context(), pod, container, command, outW, errW)
	if outStream != nil {
		outStream.Close()
	}
	if errOutStream != nil {
		errOutStream.Close()
	}
	if errStream != nil {
		writeExecStatus(errStream, protocol, code)
		errStream.Close()
	}
}

// writeExecStatus reports the exit code: v4 as a JSON metav1.Status
// (success included), older protocols as an error text only on failure.
func writeExecStatus(w io.Writer, protocol string, code int) {
	msg := fmt.Sprintf("command terminated with non-zero exit code: exit status %d", code)
	if protocol != remotecommandconsts.StreamProtocolV4Name {
		if code != 0 {
			io.WriteString(w, msg)
		}
		return
	}
	st := metav1.Status{Status: metav1.StatusSuccess}
	if code != 0 {
		st = metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  remotecommandconsts.NonZeroExitCodeReason,
			Message: msg,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
				Type:    remotecommandconsts.ExitCodeCauseType,
				Message: strconv.Itoa(code),
			}}},
		}
	}
	b, _ := json.Marshal(st)
	w.Write(b)
}

// pilotAgent answers `pilot-agent request GET <path>` in istio-proxy the way
// the real one does: an HTTP GET to the proxy's Envoy admin on 15000, the
// body on stdout, exit 1 on a non-200 answer or a failed connection.
func (k *Kubelet) pilotAgent(ctx context.Context, pod cluster.PodRef, container string, command []string, stdout, stderr io.Writer) int {
	if len(command) == 0 || command[0] != "pilot-agent" {
		fmt.Fprintf(stderr, "exec: %q: executable file not found in $PATH\n", strings.Join(command, " "))
		return 127
	}
	if container != mesh.ProxyContainer || len(command) != 4 || command[1] != "request" || command[2] != http.MethodGet {
		fmt.Fprintf(stderr, "Error: the lab's pilot-agent only runs `request GET <path>` in %s, not %q\n", mesh.ProxyContainer, strings.Join(command[1:], " "))
		return 1
	}
	conn, err := k.dial(pod, cluster.EnvoyAdminPort)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	path := "/" + strings.TrimLeft(command[3], "/")
	client := &http.Client{
		Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }},
		Timeout:   30 * time.Second,
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://localhost:15000"+path, nil)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		fmt.Fprintf(stderr, "Error: received %d status: %s\n", resp.StatusCode, strings.TrimSpace(string(body)))
		return 1
	}
	io.Copy(stdout, resp.Body)
	return 0
}

func selfSignedCert(name string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
