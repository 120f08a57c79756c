package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
)

// fakeConn is a podconn.Dialer whose tunnel reaches a local server and
// whose exec is a test double.
type fakeConn struct {
	addr       string
	forwardErr error
	closed     atomic.Int32
	exec       func(ctx context.Context, pod cluster.PodRef, container string, cmd []string, out io.Writer) (string, error)
}

func (f *fakeConn) Forward(context.Context, cluster.PodRef, int) (podconn.Tunnel, error) {
	if f.forwardErr != nil {
		return podconn.Tunnel{}, f.forwardErr
	}
	return podconn.Tunnel{Addr: f.addr, Close: func() { f.closed.Add(1) }}, nil
}

func (f *fakeConn) Exec(ctx context.Context, pod cluster.PodRef, container string, cmd []string, out io.Writer) (string, error) {
	if f.exec == nil {
		return "", errors.New("no exec in this test")
	}
	return f.exec(ctx, pod, container, cmd, out)
}

// onePod answers GetPod with a Running pod that has an app container and a
// classic istio-proxy, counting the reads.
type onePod struct{ reads *atomic.Int32 }

func (p onePod) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p.reads != nil {
		p.reads.Add(1)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "istio-proxy"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}, nil
}

// loggingAdmin answers /logging as Envoy does: POST only.
func loggingAdmin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "This endpoint requires POST", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path != "/logging" {
			http.NotFound(w, r)
			return
		}
		if r.URL.RawQuery == "nope=debug" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "error: unknown logger name\n\nusage: ...\n")
			return
		}
		_, _ = io.WriteString(w, "active loggers:\n  connection: "+strings.TrimPrefix(r.URL.RawQuery, "connection=")+"\n")
	})
}

func forbidden(resource string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-1",
		fmt.Errorf(`User "u" cannot create resource %q in API group "" in the namespace "web"`, resource))
}

func TestEnvoyAdminPostThroughPortForward(t *testing.T) {
	srv := httptest.NewServer(loggingAdmin())
	defer srv.Close()
	conn := &fakeConn{addr: srv.Listener.Addr().String()}
	k := Kube{Conn: conn, Pods: onePod{}}

	body, err := k.EnvoyAdminPost(context.Background(), webPod, "/logging?connection=debug")
	if err != nil || !strings.Contains(string(body), "connection: debug") {
		t.Fatalf("%q %v", body, err)
	}
	_, err = k.EnvoyAdminPost(context.Background(), webPod, "logging?nope=debug")
	if err == nil || !strings.Contains(err.Error(), "POST /logging?nope=debug: HTTP 404: error: unknown logger name") {
		t.Errorf("404: %v", err)
	}
	if conn.closed.Load() != 2 {
		t.Errorf("tunnel closed %d times, want 2", conn.closed.Load())
	}
}

func TestEnvoyAdminPostFallsBackToPilotAgentPost(t *testing.T) {
	var got []string
	conn := &fakeConn{forwardErr: forbidden("pods/portforward"), exec: func(_ context.Context, _ cluster.PodRef, container string, cmd []string, out io.Writer) (string, error) {
		got = append([]string{container}, cmd...)
		_, _ = io.WriteString(out, "active loggers:\n  connection: debug\n")
		return "", nil
	}}
	body, err := Kube{Conn: conn, Pods: onePod{}}.EnvoyAdminPost(context.Background(), webPod, "/logging?connection=debug")
	if err != nil || !strings.Contains(string(body), "connection: debug") {
		t.Fatalf("%q %v", body, err)
	}
	if strings.Join(got, " ") != "istio-proxy pilot-agent request POST logging?connection=debug" {
		t.Errorf("exec = %q", got)
	}
}

func TestExecRunsInTheNamedContainer(t *testing.T) {
	var got []string
	conn := &fakeConn{exec: func(_ context.Context, _ cluster.PodRef, container string, cmd []string, out io.Writer) (string, error) {
		got = append([]string{container}, cmd...)
		if cmd[0] == "fail" {
			return "", errors.New(`unable to upgrade connection: pods "web-1" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "web"`)
		}
		_, _ = io.WriteString(out, "HTTP/1.1 200 OK\r\n\r\n")
		return "curl: warning", errors.New("command terminated with exit code 1")
	}}
	k := Kube{Conn: conn, Pods: onePod{}}
	stdout, stderr, err := k.Exec(context.Background(), webPod, "app", []string{"curl", "http://x/"})
	if string(stdout) != "HTTP/1.1 200 OK\r\n\r\n" || string(stderr) != "curl: warning" || err == nil || got[0] != "app" {
		t.Errorf("%q %q %v %q", stdout, stderr, err, got)
	}
	if _, _, err := k.Exec(context.Background(), webPod, "sidecar", []string{"true"}); err == nil || !strings.Contains(err.Error(), "no container sidecar") {
		t.Errorf("unknown container: %v", err)
	}
	if _, _, err := k.Exec(context.Background(), webPod, "app", []string{"fail"}); !cluster.IsForbidden(err) {
		t.Errorf("refused exec is not Forbidden: %v", err)
	}
}

// Each change reads the pod as it is now: Kube keeps no pod between calls.
func TestEveryChangeReadsThePodAgain(t *testing.T) {
	srv := httptest.NewServer(loggingAdmin())
	defer srv.Close()
	var reads atomic.Int32
	k := Kube{Conn: &fakeConn{addr: srv.Listener.Addr().String()}, Pods: onePod{reads: &reads}}
	for range 2 {
		if _, err := k.EnvoyAdminPost(context.Background(), webPod, "/logging?connection=debug"); err != nil {
			t.Fatal(err)
		}
	}
	if reads.Load() != 2 {
		t.Errorf("%d pod reads for 2 changes, want 2", reads.Load())
	}
}
