package lab

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// These tests talk to the fake kubelet directly with client-go's own
// port-forward and exec clients, as the API server's proxy would; they need
// neither etcd nor kube-apiserver.

var webPod = cluster.PodRef{Namespace: "shop", Name: "web-1"}

func startTestKubelet(t *testing.T) *Kubelet {
	t.Helper()
	k, err := StartKubelet()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

func kubeletURL(k *Kubelet, path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", k.Port, path)
}

func insecureClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
}

func getLogs(t *testing.T, k *Kubelet, container, query string) (int, string) {
	t.Helper()
	resp, err := insecureClient().Get(kubeletURL(k, "/containerLogs/shop/web-1/"+container+"?"+query))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestKubeletLogs(t *testing.T) {
	k := startTestKubelet(t)
	now := time.Now()
	k.SetLogs(webPod, "istio-proxy", false, []LogLine{
		{Time: now.Add(-2 * time.Hour), Text: "old line\n"},
		{Time: now.Add(-30 * time.Second), Text: "recent 1\n"},
		{Time: now.Add(-time.Second), Text: "recent 2\n"},
	})
	k.SetLogs(webPod, "app", true, LinesAt([]byte("crashed: connection refused\n"), now))

	cases := []struct {
		name, container, query string
		code                   int
		want                   string
	}{
		{"whole log", "istio-proxy", "", 200, "old line\nrecent 1\nrecent 2\n"},
		{"sinceSeconds drops older lines", "istio-proxy", "sinceSeconds=60", 200, "recent 1\nrecent 2\n"},
		{"limitBytes keeps the first bytes", "istio-proxy", "limitBytes=12", 200, "old line\nrec"},
		{"since then limit", "istio-proxy", "sinceSeconds=60&limitBytes=9", 200, "recent 1\n"},
		{"tailLines", "istio-proxy", "tailLines=1", 200, "recent 2\n"},
		{"previous instance", "app", "previous=true", 200, "crashed: connection refused\n"},
		{"no previous instance", "istio-proxy", "previous=true", 400, "previous terminated container \"istio-proxy\" in pod \"web-1\" not found\n"},
		{"container that wrote nothing", "app", "", 200, ""},
		{"bad limit", "istio-proxy", "limitBytes=0", 400, "limitBytes must be a positive integer\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := getLogs(t, k, c.container, c.query)
			if code != c.code || body != c.want {
				t.Errorf("GET %s?%s = %d %q, want %d %q", c.container, c.query, code, body, c.code, c.want)
			}
		})
	}

	code, body := getLogs(t, k, "istio-proxy", "timestamps=true&tailLines=1")
	wantPrefix := now.Add(-time.Second).UTC().Format(time.RFC3339Nano) + " "
	if code != 200 || !strings.HasPrefix(body, wantPrefix) || !strings.HasSuffix(body, " recent 2\n") {
		t.Errorf("timestamps=true: %d %q, want prefix %q", code, body, wantPrefix)
	}

	resp, err := insecureClient().Get(kubeletURL(k, "/containerLogs/shop/unknown/app"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown pod: %s, want 404", resp.Status)
	}
}

// adminSim answers like an Envoy admin: the path and query it was asked.
func adminSim() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.Error(w, "invalid path", http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, "envoy %s", r.URL.RequestURI())
	})
}

func restConfig(k *Kubelet) *rest.Config {
	return &rest.Config{Host: kubeletURL(k, ""), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

// forwardSPDY port-forwards to pod:port through the kubelet with client-go's
// SPDY dialer and returns the local port.
func forwardSPDY(t *testing.T, k *Kubelet, pod cluster.PodRef, port int) (uint16, func()) {
	t.Helper()
	rt, upgrader, err := spdy.RoundTripperFor(restConfig(k))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(kubeletURL(k, "/portForward/"+pod.Namespace+"/"+pod.Name))
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut bytes.Buffer
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("port-forward not ready")
	}
	ports, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	return ports[0].Local, func() {
		close(stop)
		<-done
	}
}

func TestKubeletPortForwardSPDY(t *testing.T) {
	k := startTestKubelet(t)
	if err := k.Serve(webPod, 15000, adminSim()); err != nil {
		t.Fatal(err)
	}
	local, stop := forwardSPDY(t, k, webPod, 15000)
	defer stop()
	client := &http.Client{Timeout: 10 * time.Second}
	// Several requests over one forward: each opens a new stream pair.
	for _, path := range []string{"/clusters?format=json", "/stats?filter=upstream_rq", "/config_dump"} {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", local, path))
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "envoy "+path {
			t.Errorf("GET %s through the forward = %q", path, body)
		}
	}
	if n := k.Requests("portforward"); n != 1 {
		t.Errorf("portforward upgrades = %d, want 1", n)
	}
}

func TestKubeletPortForwardRefused(t *testing.T) {
	k := startTestKubelet(t)
	k.AddPod(webPod) // runs, but nothing listens on 15000 (no sidecar)
	local, stop := forwardSPDY(t, k, webPod, 15000)
	defer stop()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/clusters", local))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET through a forward to a closed port succeeded: %s", resp.Status)
	}
}

func TestKubeletPortForwardWebsocket(t *testing.T) {
	k := startTestKubelet(t)
	if err := k.Serve(webPod, 15014, adminSim()); err != nil {
		t.Fatal(err)
	}
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Subprotocols: []string{"v4.channel.k8s.io"}}
	conn, _, err := d.Dial(fmt.Sprintf("wss://127.0.0.1:%d/portForward/shop/web-1?port=15014", k.Port), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	// Channel 0 is data, 1 is errors; each opens with the port, little-endian.
	req := "GET /debug/syncz HTTP/1.1\r\nHost: istiod\r\nConnection: close\r\n\r\n"
	if err := conn.WriteMessage(websocket.BinaryMessage, append([]byte{0}, req...)); err != nil {
		t.Fatal(err)
	}
	var data bytes.Buffer
	headers := map[byte]bool{}
	for !strings.Contains(data.String(), "envoy /debug/syncz") {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v (data so far %q)", err, data.String())
		}
		if len(msg) == 0 {
			continue
		}
		ch, payload := msg[0], msg[1:]
		if !headers[ch] {
			headers[ch] = true
			if len(payload) < 2 || binary.LittleEndian.Uint16(payload) != 15014 {
				t.Fatalf("channel %d opened with %v, want port 15014", ch, payload)
			}
			payload = payload[2:]
		}
		if ch == 0 {
			data.Write(payload)
		} else if len(payload) > 0 {
			t.Fatalf("error channel: %q", payload)
		}
	}
	if !strings.HasPrefix(data.String(), "HTTP/1.1 200 OK") {
		t.Errorf("response through websocket forward: %q", data.String())
	}
}

func execIn(t *testing.T, k *Kubelet, container string, command ...string) (string, string, error) {
	t.Helper()
	// The kubelet's query names, as the API server sends them.
	q := url.Values{corev1.ExecStdoutParam: {"1"}, corev1.ExecStderrParam: {"1"}, corev1.ExecCommandParam: command}
	u, _ := url.Parse(kubeletURL(k, "/exec/shop/web-1/"+container+"?"+q.Encode()))
	ex, err := remotecommand.NewSPDYExecutor(restConfig(k), http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

func TestKubeletExecPilotAgent(t *testing.T) {
	k := startTestKubelet(t)
	if err := k.Serve(webPod, 15000, adminSim()); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := execIn(t, k, "istio-proxy", "pilot-agent", "request", "GET", "clusters?format=json")
	if err != nil || out != "envoy /clusters?format=json" || errOut != "" {
		t.Errorf("pilot-agent request GET clusters: out %q err %q: %v", out, errOut, err)
	}

	_, errOut, err = execIn(t, k, "istio-proxy", "pilot-agent", "request", "GET", "/missing")
	var exitErr exec.CodeExitError
	if !errors.As(err, &exitErr) || exitErr.Code != 1 || !strings.Contains(errOut, "404") {
		t.Errorf("non-200 from Envoy: err %v (%T), stderr %q; want exit code 1 and the status", err, err, errOut)
	}

	_, _, err = execIn(t, k, "app", "sh", "-c", "id")
	if !errors.As(err, &exitErr) || exitErr.Code != 127 {
		t.Errorf("unknown command: %v, want exit code 127", err)
	}
}

func TestKubeletExecWithoutProxyListener(t *testing.T) {
	k := startTestKubelet(t)
	k.AddPod(webPod)
	_, errOut, err := execIn(t, k, "istio-proxy", "pilot-agent", "request", "GET", "/clusters")
	var exitErr exec.CodeExitError
	if !errors.As(err, &exitErr) || exitErr.Code != 1 || !strings.Contains(errOut, "connection refused") {
		t.Errorf("pilot-agent with Envoy down: %v, stderr %q", err, errOut)
	}
}
