package actions

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/curl/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseCurlNamesTheFlagOfEnvoysLocalReply(t *testing.T) {
	cases := []struct {
		file       string
		status     int
		flags      string
		local      bool
		reasonPart string
	}{
		{"503-uf-retried.out", 503, "UF,URX", true, "delayed connect error: 111"},
		{"503-uh.out", 503, "UH", true, "no healthy upstream"},
		{"503-uo.out", 503, "UO", true, "reset reason: overflow"},
		{"503-app.out", 503, "", false, ""},
		{"200-continue.out", 200, "", false, ""},
		{"404-nr.out", 404, "NR", true, "no route"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			var r TestResponse
			parseCurl(&r, recorded(t, c.file), nil)
			if r.Status != c.status || r.Flags != c.flags || r.LocalReply != c.local || !strings.Contains(r.Reason, c.reasonPart) {
				t.Errorf("got status %d flags %q local %v reason %q; want %d %q %v %q", r.Status, r.Flags, r.LocalReply, r.Reason, c.status, c.flags, c.local, c.reasonPart)
			}
			if r.Total <= 0 || r.Connect <= 0 || r.RemoteIP != "10.96.12.7" {
				t.Errorf("timing %+v", r)
			}
			if strings.Contains(r.Body, writeOutMarker) {
				t.Errorf("the -w line leaked into the body: %q", r.Body)
			}
		})
	}
	var ok TestResponse
	parseCurl(&ok, recorded(t, "200-continue.out"), nil)
	if ok.Body != "ok" || ok.Headers.Get("X-Envoy-Upstream-Service-Time") != "7" || ok.Proto != "HTTP/1.1" {
		t.Errorf("the final response after 100 Continue: %+v", ok)
	}
}

func TestSendTestRequestRunsCurlInTheAppContainer(t *testing.T) {
	c := newFakeCluster()
	r := &fakeRunner{exec: func(string, []string) ([]byte, []byte, error) { return recorded(t, "503-uf-retried.out"), nil, nil }}
	var recs records
	resp, err := SendTestRequest(context.Background(), c, r, TestRequest{Source: webPod, URL: "http://orders.shop.svc.cluster.local:8080/healthz"}, recs.rec())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.execs) != 1 || r.execs[0][0] != "web" || r.execs[0][1] != "curl" || r.execs[0][len(r.execs[0])-1] != "http://orders.shop.svc.cluster.local:8080/healthz" {
		t.Fatalf("exec = %q: curl must run in the app container, whose traffic the sidecar intercepts", r.execs)
	}
	if !resp.ThroughSidecar || resp.Container != "web" {
		t.Errorf("through sidecar: %+v", resp)
	}
	got := recs.all()
	if len(got) != 1 || got[0].Name != TestRequestAction || got[0].Undo != "" || got[0].Error != "" ||
		!strings.Contains(got[0].Done, "HTTP 503 UF,URX from the sidecar (local reply)") || !strings.Contains(got[0].Output, "server: envoy") {
		t.Errorf("recorded %+v", got)
	}
	if !strings.Contains(got[0].Target, "web/web-1 -> http://orders") {
		t.Errorf("target %q", got[0].Target)
	}

	// From istio-proxy the request bypasses the sidecar (UID 1337 is not
	// intercepted): allowed, but said.
	resp, err = SendTestRequest(context.Background(), c, r, TestRequest{Source: webPod, Container: mesh.ProxyContainer, URL: "http://orders.shop.svc.cluster.local:8080/"}, nil)
	if err != nil || resp.ThroughSidecar || !strings.Contains(resp.Summary(), "not through a sidecar") {
		t.Errorf("from istio-proxy: %v %q", err, resp.Summary())
	}
}

func TestSendTestRequestFailuresAreClear(t *testing.T) {
	c := newFakeCluster()
	url := "http://orders.shop.svc.cluster.local:8080/"
	cases := []struct {
		name string
		exec func(string, []string) ([]byte, []byte, error)
		want string
		resp bool
	}{
		{"distroless", func(string, []string) ([]byte, []byte, error) {
			return nil, nil, errors.New(`Internal error occurred: error executing command in container: failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: exec: "curl": executable file not found in $PATH: unknown`)
		}, "has no curl (a distroless image?): send the request from a debug container that shares the pod's network, e.g. kubectl debug -n web web-1 -it --image=curlimages/curl -- curl -sv 'http://orders.shop.svc.cluster.local:8080/'", false},
		{"timeout", func(string, []string) ([]byte, []byte, error) {
			return recorded(t, "timeout.out"), recorded(t, "timeout.err"), errExit
		}, "curl: (28) Operation timed out", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var recs records
			resp, err := SendTestRequest(context.Background(), c, &fakeRunner{exec: tc.exec}, TestRequest{Source: webPod, URL: url}, recs.rec())
			got := recs.all()
			if len(got) != 1 {
				t.Fatalf("records %+v", got)
			}
			if tc.resp {
				if err != nil || resp.Status != 0 || !strings.Contains(resp.Summary(), tc.want) || !strings.Contains(got[0].Done, "no response") {
					t.Errorf("%v %q %+v", err, resp.Summary(), got[0])
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || got[0].Error == "" || strings.Contains(err.Error(), "\n") {
				t.Errorf("err %v, record %+v", err, got[0])
			}
		})
	}

	_, err := SendTestRequest(context.Background(), c, &fakeRunner{}, TestRequest{Source: cluster.PodRef{Namespace: "web", Name: "gone"}, URL: url}, nil)
	if err == nil || !strings.Contains(err.Error(), "get pod web/gone: not found") {
		t.Errorf("absent pod: %v", err)
	}
}

func TestTestURLAndCurlCommand(t *testing.T) {
	c := newFakeCluster()
	c.svc = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}}
	target := cluster.Target{Namespace: "shop", Service: "orders"}
	u, err := TestURL(context.Background(), c, target, "/healthz?deep=1")
	if err != nil || u != "http://orders.shop.svc.cluster.local:8080/healthz?deep=1" {
		t.Errorf("%q %v", u, err)
	}
	c.svc.Spec.Ports = append(c.svc.Spec.Ports, corev1.ServicePort{Port: 9090})
	if _, err := TestURL(context.Background(), c, target, "/"); err == nil || !strings.Contains(err.Error(), "give --port") {
		t.Errorf("two ports: %v", err)
	}
	target.Port = 9090
	if u, _ := TestURL(context.Background(), c, target, ""); u != "http://orders.shop.svc.cluster.local:9090/" {
		t.Errorf("default path: %q", u)
	}
	for _, bad := range []string{"healthz", "/a b"} {
		if _, err := TestURL(context.Background(), c, target, bad); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
	cmd := CurlCommand("http://x:1/", 0)
	if !slices.Contains(cmd, "20") || !slices.Contains(cmd, "-D") || cmd[0] != "curl" {
		t.Errorf("cmd %q", cmd)
	}
	if cmd := CurlCommand("http://x:1/", 5*time.Second); !slices.Contains(cmd, "5") {
		t.Errorf("timeout: %q", cmd)
	}
}
