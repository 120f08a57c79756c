package probes

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	apinetworking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
)

// The inbound refusals of real logs (../shared/fixtures, read in place):
// istio/istio#51267's inbound|8080||, the tanjunchen post's inbound|5000||,
// the gateway blog's inbound|80|| without a transport failure, and the TCP
// passthrough to an undeclared port; none of them counts on another port
// or another pod's address.
func TestInboundRefusedOnRealLogs(t *testing.T) {
	log := realworldFile(t, "accesslog/text.log")
	for _, c := range []struct {
		podIP string
		port  int32
		want  int
	}{
		{"100.72.2.83", 8080, 1},
		{"10.1.2.31", 5000, 1},
		{"10.28.0.19", 80, 1},
		{"100.72.2.95", 7801, 1},
		{"100.72.2.95", 7802, 0},
		{"10.9.9.9", 7801, 0},
	} {
		matched, _, _ := accesslog.Split(bytes.NewReader(log), inboundRefusedOn(c.podIP, c.port))
		if matched.Entries != c.want {
			t.Errorf("%s:%d: %d refusals, want %d", c.podIP, c.port, matched.Entries, c.want)
		}
	}
}

func TestListenFromLog(t *testing.T) {
	for _, c := range []struct {
		name, log string
		port      int32
		want      string
	}{
		{"uvicorn default", "INFO:     Started server process [1]\nINFO:     Waiting for application startup.\nINFO:     Uvicorn running on http://127.0.0.1:8080 (Press CTRL+C to quit)\n", 8080, listenLoopback},
		{"uvicorn on another port", "INFO:     Uvicorn running on http://127.0.0.1:9000 (Press CTRL+C to quit)\n", 8080, ""},
		{"flask default", " * Serving Flask app 'app'\n * Debug mode: off\n * Running on http://127.0.0.1:5000\nPress CTRL+C to quit\n", 5000, listenLoopback},
		// Flask with host 0.0.0.0 names loopback first, then the pod.
		{"flask all addresses", " * Running on all addresses (0.0.0.0)\n * Running on http://127.0.0.1:5000\n * Running on http://10.244.1.17:5000\n", 5000, listenPod},
		{"pod address after loopback", "Listening on 127.0.0.1:5000\nListening on 10.244.1.17:5000\n", 5000, listenPod},
		{"go wildcard", "2026/12/03 10:08:04 listening on :8080\n", 8080, listenPod},
		{"ipv6 loopback", "server listening at http://[::1]:3000\n", 3000, listenLoopback},
		{"localhost", "Server listening at http://localhost:3000\n", 3000, listenLoopback},
		{"gunicorn wildcard", "[2026-12-03 10:08:04 +0000] [1] [INFO] Listening at: http://0.0.0.0:8000 (1)\n", 8000, listenPod},
		// A clock is no port; a line with no listen word says nothing.
		{"clock", "10:08:04 listening for jobs\n", 8, ""},
		{"no listen word", "connected to redis at 127.0.0.1:8080\n", 8080, ""},
	} {
		if got, _ := listenFromLog([]byte(c.log), c.port); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestListenFromSpec(t *testing.T) {
	for _, c := range []struct {
		name string
		c    corev1.Container
		want string
	}{
		{"uvicorn --host", corev1.Container{Command: []string{"uvicorn", "app:app", "--host", "127.0.0.1", "--port", "8080"}}, listenLoopback},
		{"gunicorn --bind=", corev1.Container{Args: []string{"--bind=127.0.0.1:8080"}}, listenLoopback},
		{"bind on another port", corev1.Container{Args: []string{"--bind=127.0.0.1:9090"}}, ""},
		{"wildcard", corev1.Container{Args: []string{"--host", "0.0.0.0"}}, listenPod},
		{"env", corev1.Container{Env: []corev1.EnvVar{{Name: "APP_HOST", Value: "localhost"}}}, listenLoopback},
		{"unrelated env", corev1.Container{Env: []corev1.EnvVar{{Name: "REDIS_URL", Value: "redis://127.0.0.1:8080"}}}, ""},
	} {
		if got, _ := listenFromSpec(c.c, 8080); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

var appListenTarget = cluster.Target{Namespace: "shop", Service: "orders", Port: 8080}

func listeningPod(annotations map[string]string) *corev1.Pod {
	p := probedPod("orders-1", annotations, "")
	return &p
}

// The finding needs the app's own word; a Sidecar whose ingress sends the
// port to loopback serves it, and the probe says so.
func TestEvaluateAppListen(t *testing.T) {
	pod := listeningPod(nil)
	uvicorn := []byte("INFO:     Uvicorn running on http://127.0.0.1:8080 (Press CTRL+C to quit)\n")
	in := appListenInput{Pods: []appListenPod{{Pod: pod, Port: 8080, AppLogs: map[string][]byte{"orders": uvicorn}, Refused: 12, ProxyLogRead: true}}}
	r := evaluateAppListen(appListenTarget, in)
	if r.Status != StatusFail {
		t.Errorf("status %s: %s", r.Status, r.Summary)
	}
	want := Facts{"applisten_pods": 1, "applisten_loopback": []string{"orders-1 orders: INFO:     Uvicorn running on http://127.0.0.1:8080 (Press CTRL+C to quit)"},
		"applisten_loopback_from_spec": []string{}, "applisten_inbound_refused": 12, "applisten_sidecar_loopback": []string{}, "applisten_sidecars_read": true}
	if !reflect.DeepEqual(r.Facts, want) {
		t.Errorf("facts\n%v\nwant\n%v", r.Facts, want)
	}

	in.Sidecars = []*networkingv1.Sidecar{{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: apinetworking.Sidecar{WorkloadSelector: &apinetworking.WorkloadSelector{Labels: map[string]string{"app": "orders"}},
			Ingress: []*apinetworking.IstioIngressListener{{Port: &apinetworking.SidecarPort{Number: 8080, Protocol: "HTTP", Name: "http"}, DefaultEndpoint: "127.0.0.1:8080"}}}}}
	r = evaluateAppListen(appListenTarget, in)
	if got := r.Facts["applisten_sidecar_loopback"]; !reflect.DeepEqual(got, []string{"shop/orders 8080->127.0.0.1:8080"}) || r.Status == StatusFail {
		t.Errorf("served by a Sidecar: %v, %s %s", got, r.Status, r.Summary)
	}

	// Not read is not absent.
	in.Sidecars, in.SidecarsErr = nil, "list sidecars in shop: forbidden"
	if r = evaluateAppListen(appListenTarget, in); r.Facts["applisten_sidecars_read"] != false {
		t.Errorf("sidecars not read: %v", r.Facts)
	}

	// Wildcard in the log: nothing to say, whatever the refusals.
	in.Pods[0].AppLogs["orders"] = []byte("INFO:     Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)\n")
	if r = evaluateAppListen(appListenTarget, in); len(r.Facts["applisten_loopback"].([]string)) != 0 {
		t.Errorf("wildcard: %v", r.Facts)
	}
}

// netstatLoopback is `netstat -natpw` in an orders pod's istio-proxy as an
// istioctl bug-report holds it: Flask on 127.0.0.1:8080 (PID "-", the
// app's UID), Envoy's and pilot-agent's own sockets.
const netstatLoopback = `Active Internet connections (servers and established)
Proto Recv-Q Send-Q Local Address           Foreign Address         State       PID/Program name
tcp        0      0 127.0.0.1:8080          0.0.0.0:*               LISTEN      -
tcp        0      0 0.0.0.0:15021           0.0.0.0:*               LISTEN      16/envoy
tcp        0      0 0.0.0.0:15006           0.0.0.0:*               LISTEN      16/envoy
tcp        0      0 127.0.0.1:15000         0.0.0.0:*               LISTEN      16/envoy
tcp6       0      0 :::15020                :::*                    LISTEN      1/pilot-agent
`

// A bug report's netstat is the kernel's word on where the app listens:
// app-localhost-bound with its apps' start-up lines gone (an app that
// says nothing) is still read as loopback only, from the pods' LISTEN
// rows; a netstat that lists the wildcard overrides a log that says
// loopback; a source with no netstat leaves the log to speak.
func TestAppListenReadsABugReportsNetstat(t *testing.T) {
	s, err := recorded.Load(assets.FS, "app-localhost-bound")
	if err != nil {
		t.Fatal(err)
	}
	s.Netstat = map[cluster.PodRef][]byte{}
	for k := range s.Logs {
		if k.Container == "orders" {
			s.Logs[k] = []byte("2026-12-03T09:22:54.100Z INFO orders 3.1.0\n")
			s.Netstat[k.Pod] = []byte(netstatLoopback)
		}
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	r := AppListenProbe{}.Run(context.Background(), cluster.NewCache(c), s.Target)
	got, _ := r.Facts["applisten_loopback"].([]string)
	if len(got) != 3 || !strings.HasSuffix(got[0], " netstat: tcp        0      0 127.0.0.1:8080          0.0.0.0:*               LISTEN      -") || r.Status != StatusFail {
		t.Fatalf("loopback %q, status %s: %s", got, r.Status, r.Summary)
	}
	if fromSpec := r.Facts["applisten_loopback_from_spec"].([]string); len(fromSpec) != 0 {
		t.Errorf("from spec %q: netstat is no spec", fromSpec)
	}

	in := appListenInput{Pods: []appListenPod{{Pod: listeningPod(nil), Port: 8080,
		AppLogs: map[string][]byte{"orders": []byte(" * Running on http://127.0.0.1:8080\n")},
		Netstat: []byte(strings.Replace(netstatLoopback, "127.0.0.1:8080 ", "0.0.0.0:8080   ", 1))}}}
	if r := evaluateAppListen(appListenTarget, in); len(r.Facts["applisten_loopback"].([]string)) != 0 {
		t.Errorf("netstat's wildcard against the log's loopback: %v", r.Facts["applisten_loopback"])
	}
	in.Pods[0].Netstat = nil
	if r := evaluateAppListen(appListenTarget, in); len(r.Facts["applisten_loopback"].([]string)) != 1 {
		t.Errorf("no netstat, the log's loopback: %v", r.Facts["applisten_loopback"])
	}
}
