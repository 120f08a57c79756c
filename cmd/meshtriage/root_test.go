package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/runbook/triage"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// run executes the CLI in-process as the binary argv0 and returns exit
// code, stdout and stderr.
func run(t *testing.T, argv0 string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := executeAs(argv0, streams, args)
	return code, out.String(), errOut.String()
}

// noAmbientCluster keeps the developer's own kubeconfig and any in-cluster
// service account out of a test.
func noAmbientCluster(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: %q}
contexts:
- name: kind-lab
  context: {cluster: lab, user: oncall, namespace: shop}
- name: staging
  context: {cluster: lab, user: oncall}
current-context: kind-lab
users:
- name: oncall
  user: {token: t0ken}
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeAPIServer answers /version and lists namespaces and services.
func fakeAPIServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]string{"gitVersion": "v1.31.2"})
	})
	mux.HandleFunc("GET /api/v1/namespaces", func(w http.ResponseWriter, _ *http.Request) {
		l := corev1.NamespaceList{TypeMeta: metav1.TypeMeta{Kind: "NamespaceList", APIVersion: "v1"}}
		for _, n := range []string{"shop", "istio-system", "bank"} {
			l.Items = append(l.Items, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		reply(w, l)
	})
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/services", func(w http.ResponseWriter, r *http.Request) {
		l := corev1.ServiceList{TypeMeta: metav1.TypeMeta{Kind: "ServiceList", APIVersion: "v1"}}
		names := map[string][]string{"shop": {"payments", "web", "pricing"}, "bank": {"ledger"}}[r.PathValue("ns")]
		for _, n := range names {
			l.Items = append(l.Items, corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: r.PathValue("ns"), Name: n}})
		}
		reply(w, l)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestVersionFlagAndCommand(t *testing.T) {
	old := version
	version = "v0.4.2"
	defer func() { version = old }()
	for _, args := range [][]string{{"--version"}, {"version", "--client"}} {
		code, out, errOut := run(t, "meshtriage", args...)
		if code != exitOK || out != "meshtriage v0.4.2\n" || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestVersionReportsTheCluster(t *testing.T) {
	noAmbientCluster(t)
	srv := fakeAPIServer(t)
	code, out, errOut := run(t, "meshtriage", "version", "--kubeconfig", writeKubeconfig(t, srv.URL))
	want := fmt.Sprintf("meshtriage %s\nkubernetes v1.31.2 at %s (context kind-lab)\n", version, srv.URL)
	if code != exitOK || out != want {
		t.Errorf("exit %d, stdout %q (want %q), stderr %q", code, out, want, errOut)
	}
}

func TestNoKubeconfigSaysWhatToDo(t *testing.T) {
	noAmbientCluster(t)
	code, _, errOut := run(t, "meshtriage", "version")
	if code != exitTriage {
		t.Errorf("exit %d, want %d", code, exitTriage)
	}
	if want := "meshtriage: no kubeconfig: set KUBECONFIG or --kubeconfig, or try `meshtriage demo`\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

func TestUnknownContextListsTheKnownOnes(t *testing.T) {
	noAmbientCluster(t)
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "https://127.0.0.1:6443"))
	code, _, errOut := run(t, "meshtriage", "version", "--context", "prod")
	if code != exitTriage {
		t.Errorf("exit %d", code)
	}
	if want := "meshtriage: context \"prod\" not found in kubeconfig (contexts: kind-lab, staging)\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

func TestUnreachableAPIServerNamesItsURL(t *testing.T) {
	noAmbientCluster(t)
	// A port that was just free: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := "https://" + l.Addr().String()
	_ = l.Close()
	start := time.Now()
	code, _, errOut := run(t, "meshtriage", "version", "--kubeconfig", writeKubeconfig(t, server))
	if code != exitTriage {
		t.Errorf("exit %d", code)
	}
	prefix := fmt.Sprintf("meshtriage: cannot reach the API server at %s (context kind-lab): ", server)
	if !strings.HasPrefix(errOut, prefix) || !strings.Contains(errOut, "connection refused") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting %q", errOut, prefix)
	}
	if d := time.Since(start); d > triage.ReachTimeout+time.Second {
		t.Errorf("took %v", d)
	}
}

func TestRequestTimeoutBoundsTheReachabilityCheck(t *testing.T) {
	noAmbientCluster(t)
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	start := time.Now()
	code, _, errOut := run(t, "meshtriage", "version", "--kubeconfig", writeKubeconfig(t, srv.URL), "--request-timeout", "300ms")
	if code != exitTriage || !strings.Contains(errOut, "cannot reach the API server at "+srv.URL) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("--request-timeout 300ms took %v", d)
	}
}

func TestOpenLiveClusterUsesTheIstioNamespace(t *testing.T) {
	noAmbientCluster(t)
	srv := fakeAPIServer(t)
	path := writeKubeconfig(t, srv.URL)
	ctxName := "staging"
	flags := live.NewConfigFlags()
	flags.KubeConfig, flags.Context = &path, &ctxName
	src, err := liveSource(context.Background(), &globalOptions{kube: flags, controlPlaneNamespace: "istio-prod"})
	if err != nil {
		t.Fatal(err)
	}
	if info := src.Cluster.Info(); info.Context != "staging" || info.Server != srv.URL || info.ControlPlaneNamespace != "istio-prod" {
		t.Errorf("Info = %+v", info)
	}

	// The flag reaches globalOptions with its documented default.
	root := newRootCmdAs("meshtriage", genericiooptions.NewTestIOStreamsDiscard())
	if f := root.PersistentFlags().Lookup("istio-namespace"); f == nil || f.DefValue != "istio-system" {
		t.Errorf("--istio-namespace flag = %+v", f)
	}
}

func TestKubectlPluginNamesItself(t *testing.T) {
	code, out, _ := run(t, "/usr/local/bin/kubectl-meshtriage", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"kubectl meshtriage [command]", "kubectl meshtriage check -n shop svc/payments", "Use \"kubectl meshtriage [command] --help\""} {
		if !strings.Contains(out, want) {
			t.Errorf("plugin help lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = run(t, "kubectl-meshtriage", "version", "--help")
	if !strings.Contains(out, "kubectl meshtriage version [flags]") {
		t.Errorf("subcommand usage does not say kubectl meshtriage:\n%s", out)
	}

	_, out, _ = run(t, "/opt/bin/meshtriage", "--help")
	if strings.Contains(out, "kubectl") || !strings.Contains(out, "meshtriage [command]") {
		t.Errorf("plain binary help mentions kubectl or lacks its name:\n%s", out)
	}
	if got := pluginName("kubectl-mesh_triage.exe"); got != "kubectl mesh-triage" {
		t.Errorf("pluginName = %q", got)
	}
}

func TestCompletionOfNamespacesAndServices(t *testing.T) {
	noAmbientCluster(t)
	srv := fakeAPIServer(t)
	t.Setenv("KUBECONFIG", writeKubeconfig(t, srv.URL))

	code, out, _ := run(t, "meshtriage", "__complete", "version", "-n", "")
	if code != exitOK || !strings.HasPrefix(out, "bank\nistio-system\nshop\n:4\n") {
		t.Errorf("-n completion: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "meshtriage", "__complete", "version", "--context", "")
	if code != exitOK || !strings.HasPrefix(out, "kind-lab\nstaging\n:4\n") {
		t.Errorf("--context completion: exit %d\n%s", code, out)
	}

	// Services of the -n namespace, or of the context's when -n is absent.
	flags := live.NewConfigFlags()
	g := &globalOptions{kube: flags}
	complete := completeServices(g)
	got, directive := complete(&cobra.Command{}, nil, "svc/p")
	if strings.Join(got, ",") != "svc/payments,svc/pricing" || directive != cobra.ShellCompDirectiveNoFileComp {
		t.Errorf("svc/p in the context's namespace (shop): %v %v", got, directive)
	}
	ns := "bank"
	flags.Namespace = &ns
	if got, _ := complete(&cobra.Command{}, nil, ""); strings.Join(got, ",") != "svc/ledger" {
		t.Errorf("-n bank: %v", got)
	}
	if got, _ := complete(&cobra.Command{}, []string{"svc/ledger"}, ""); len(got) != 0 {
		t.Errorf("a second target was offered: %v", got)
	}
}

func TestCompletionWithoutAClusterOffersNothingQuickly(t *testing.T) {
	noAmbientCluster(t)
	start := time.Now()
	got, directive := completeServices(&globalOptions{kube: live.NewConfigFlags()})(&cobra.Command{}, nil, "")
	if len(got) != 0 || directive != cobra.ShellCompDirectiveNoFileComp || time.Since(start) > completionTimeout {
		t.Errorf("got %v %v after %v", got, directive, time.Since(start))
	}
}

// KUBECONFIG set to a file that is not there: the message says so, not
// "set KUBECONFIG".
func TestKubeconfigThatDoesNotExist(t *testing.T) {
	noAmbientCluster(t)
	t.Setenv("KUBECONFIG", "/nonexistent")
	code, _, errOut := run(t, "meshtriage", "check", "-n", "shop", "svc/web")
	if code != exitTriage {
		t.Errorf("exit %d, want %d", code, exitTriage)
	}
	if !strings.Contains(errOut, "KUBECONFIG=/nonexistent: the file does not exist") || strings.Contains(errOut, "set KUBECONFIG") {
		t.Errorf("stderr %q", errOut)
	}
	code, _, errOut = run(t, "meshtriage", "check", "--kubeconfig", "/nonexistent/config", "-n", "shop", "svc/web")
	if code != exitTriage || !strings.Contains(errOut, "/nonexistent/config") || !strings.Contains(errOut, "does not exist") {
		t.Errorf("--kubeconfig: exit %d, stderr %q", code, errOut)
	}
}

// A mistyped subcommand gets cobra's suggestion, not "accepts at most 1
// arg(s)" nor a triage of a Service named chek.
func TestMistypedCommandIsSuggested(t *testing.T) {
	noAmbientCluster(t)
	for _, args := range [][]string{{"chek"}, {"chek", "-n", "shop", "svc/orders"}} {
		code, _, errOut := run(t, "meshtriage", args...)
		if code != exitTriage || !strings.Contains(errOut, `unknown command "chek"`) || !strings.Contains(errOut, `did you mean "check"?`) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// Flag help names each flag's argument with a word, not with the text a
// backtick happened to quote (pflag's UnquoteUsage): "--recording
// meshtriage capture" reads as a command line.
func TestFlagArgumentNamesAreNames(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if strings.Contains(name, " ") {
				t.Errorf("%s --%s: argument named %q", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmdAs("meshtriage", genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}))
}
