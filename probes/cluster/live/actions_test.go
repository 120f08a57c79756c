package live

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/clientset"
)

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

func TestEnvoyAdminPostThroughPortForward(t *testing.T) {
	srv := httptest.NewServer(loggingAdmin())
	defer srv.Close()
	ft := &fakeTunnel{addr: srv.Listener.Addr().String()}
	c := seamCluster(t, ft, noExec(t), Options{})

	body, err := c.EnvoyAdminPost(context.Background(), webPod, "/logging?connection=debug")
	if err != nil || !strings.Contains(string(body), "connection: debug") {
		t.Fatalf("%q %v", body, err)
	}
	_, err = c.EnvoyAdminPost(context.Background(), webPod, "logging?nope=debug")
	if err == nil || !strings.Contains(err.Error(), "POST /logging?nope=debug: HTTP 404: error: unknown logger name") {
		t.Errorf("404: %v", err)
	}
	if ft.closed.Load() != 2 {
		t.Errorf("tunnel closed %d times, want 2", ft.closed.Load())
	}
}

func TestEnvoyAdminPostFallsBackToPilotAgentPost(t *testing.T) {
	ft := &fakeTunnel{err: forbidden("pods/portforward", "web-1", "shop")}
	var got []string
	exec := func(_ context.Context, _ cluster.PodRef, container string, cmd []string, out io.Writer) (string, error) {
		got = append([]string{container}, cmd...)
		_, _ = io.WriteString(out, "active loggers:\n  connection: debug\n")
		return "", nil
	}
	c := seamCluster(t, ft, exec, Options{})
	body, err := c.EnvoyAdminPost(context.Background(), webPod, "/logging?connection=debug")
	if err != nil || !strings.Contains(string(body), "connection: debug") {
		t.Fatalf("%q %v", body, err)
	}
	if strings.Join(got, " ") != "istio-proxy pilot-agent request POST logging?connection=debug" {
		t.Errorf("exec = %q", got)
	}
}

func TestExecRunsInTheNamedContainer(t *testing.T) {
	var got []string
	exec := func(_ context.Context, _ cluster.PodRef, container string, cmd []string, out io.Writer) (string, error) {
		got = append([]string{container}, cmd...)
		if cmd[0] == "fail" {
			return "", errors.New(`unable to upgrade connection: pods "web-1" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "shop"`)
		}
		_, _ = io.WriteString(out, "HTTP/1.1 200 OK\r\n\r\n")
		return "curl: warning", errors.New("command terminated with exit code 1")
	}
	c := seamCluster(t, &fakeTunnel{}, exec, Options{})
	stdout, stderr, err := c.Exec(context.Background(), webPod, "app", []string{"curl", "http://x/"})
	if string(stdout) != "HTTP/1.1 200 OK\r\n\r\n" || string(stderr) != "curl: warning" || err == nil || got[0] != "app" {
		t.Errorf("%q %q %v %q", stdout, stderr, err, got)
	}
	if _, _, err := c.Exec(context.Background(), webPod, "sidecar", []string{"true"}); err == nil || !strings.Contains(err.Error(), "no container sidecar") {
		t.Errorf("unknown container: %v", err)
	}
	if _, _, err := c.Exec(context.Background(), webPod, "app", []string{"fail"}); !cluster.IsForbidden(err) {
		t.Errorf("refused exec is not Forbidden: %v", err)
	}
}

func TestGetDeployment(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
	c := newCluster(clientset.Reader{Kube: fake.NewClientset(d)}, &rest.Config{Host: "https://lab:6443"}, Options{})
	got, err := c.GetDeployment(context.Background(), "shop", "orders")
	if err != nil || got.Name != "orders" {
		t.Errorf("%v %v", got, err)
	}
	if _, err := c.GetDeployment(context.Background(), "shop", "nope"); err == nil {
		t.Error("absent deployment found")
	}
}
