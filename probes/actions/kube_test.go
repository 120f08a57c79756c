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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
)

// fakeConn is a podconn.Dialer whose exec is a test double and whose
// port-forward only counts that it was asked: no action may use one.
type fakeConn struct {
	forwards atomic.Int32
	exec     func(ctx context.Context, pod cluster.PodRef, container string, cmd []string, out io.Writer) (string, error)
}

func (f *fakeConn) Forward(context.Context, cluster.PodRef, int) (podconn.Tunnel, error) {
	f.forwards.Add(1)
	return podconn.Tunnel{}, errors.New("an action asked for a port-forward")
}

func (f *fakeConn) Exec(ctx context.Context, pod cluster.PodRef, container string, cmd []string, out io.Writer) (string, error) {
	if f.exec == nil {
		return "", errors.New("no exec in this test")
	}
	return f.exec(ctx, pod, container, cmd, out)
}

// pilotAgent is the exec of `pilot-agent request METHOD PATH` in front of
// an Envoy admin handler, as pilot-agent is in front of Envoy.
func pilotAgent(t *testing.T, admin http.Handler, calls *[]string) func(context.Context, cluster.PodRef, string, []string, io.Writer) (string, error) {
	return func(_ context.Context, _ cluster.PodRef, container string, cmd []string, out io.Writer) (string, error) {
		*calls = append(*calls, container+" "+strings.Join(cmd, " "))
		if len(cmd) != 4 || cmd[0] != "pilot-agent" || cmd[1] != "request" {
			t.Errorf("exec %q, want pilot-agent request METHOD PATH", cmd)
			return "", errors.New("command terminated with exit code 1")
		}
		rec := httptest.NewRecorder()
		admin.ServeHTTP(rec, httptest.NewRequest(cmd[2], "/"+cmd[3], nil))
		if rec.Code != http.StatusOK {
			// pilot-agent prints Envoy's answer and exits non-zero.
			return fmt.Sprintf("%d %s", rec.Code, podconn.FirstLine(rec.Body.String())), errors.New("command terminated with exit code 1")
		}
		_, _ = out.Write(rec.Body.Bytes())
		return "", nil
	}
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

// A change to Envoy goes through pilot-agent in istio-proxy (pods/exec),
// never through a port-forward, which is what the read-only role grants.
func TestEnvoyAdminPostRunsPilotAgentAndNeverPortForwards(t *testing.T) {
	var calls []string
	conn := &fakeConn{}
	conn.exec = pilotAgent(t, loggingAdmin(), &calls)
	k := Kube{Conn: conn, Pods: onePod{}}

	body, err := k.EnvoyAdminPost(context.Background(), webPod, "/logging?connection=debug")
	if err != nil || !strings.Contains(string(body), "connection: debug") {
		t.Fatalf("%q %v", body, err)
	}
	_, err = k.EnvoyAdminPost(context.Background(), webPod, "logging?nope=debug")
	if err == nil || !strings.Contains(err.Error(), "404 error: unknown logger name") {
		t.Errorf("Envoy's refusal is not in the error: %v", err)
	}
	want := []string{"istio-proxy pilot-agent request POST logging?connection=debug", "istio-proxy pilot-agent request POST logging?nope=debug"}
	if strings.Join(calls, "|") != strings.Join(want, "|") {
		t.Errorf("execs = %q, want %q", calls, want)
	}
	if n := conn.forwards.Load(); n != 0 {
		t.Errorf("%d port-forwards for a change", n)
	}
}

// Under the read-only role every action is refused, and the refusal says
// which role to bind: it stays a Forbidden, so AccessProblem keeps the hint.
func TestARefusedExecNamesTheRoleToBind(t *testing.T) {
	refused := func(context.Context, cluster.PodRef, string, []string, io.Writer) (string, error) {
		return "", errors.New(`unable to upgrade connection: pods "web-1" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "web"`)
	}
	k := Kube{Conn: &fakeConn{exec: refused}, Pods: onePod{}}
	_, postErr := k.EnvoyAdminPost(context.Background(), webPod, "/logging?connection=debug")
	_, _, execErr := k.Exec(context.Background(), webPod, "app", []string{"curl", "http://orders:8080/"})
	for name, err := range map[string]error{"EnvoyAdminPost": postErr, "Exec": execErr} {
		if !cluster.IsForbidden(err) {
			t.Errorf("%s: %v is not a Forbidden", name, err)
			continue
		}
		msg := cluster.AccessProblem("change Envoy logging of web/web-1", err)
		for _, want := range []string{`User "u" cannot create resource "pods/exec"`, "meshtriage-exec", "meshtriage-readonly", "assets/rbac/meshtriage-exec.yaml"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %q", name, msg, want)
			}
		}
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
	var reads atomic.Int32
	var calls []string
	conn := &fakeConn{}
	conn.exec = pilotAgent(t, loggingAdmin(), &calls)
	k := Kube{Conn: conn, Pods: onePod{reads: &reads}}
	for range 2 {
		if _, err := k.EnvoyAdminPost(context.Background(), webPod, "/logging?connection=debug"); err != nil {
			t.Fatal(err)
		}
	}
	if reads.Load() != 2 {
		t.Errorf("%d pod reads for 2 changes, want 2", reads.Load())
	}
}
