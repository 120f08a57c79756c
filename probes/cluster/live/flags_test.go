package live

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The connection flags an on-call types after kubectl's: every one must
// parse and reach the client configuration, as kubectl's would.
func TestConfigFlagsAreKubectls(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: "https://prod.example:6443"}
- name: dr
  cluster: {server: "https://dr.example:6443"}
contexts:
- name: prod
  context: {cluster: prod, user: oncall, namespace: shop}
- name: dr
  context: {cluster: dr, user: oncall}
current-context: prod
users:
- name: oncall
  user: {token: from-kubeconfig}
`), 0o600); err != nil {
		t.Fatal(err)
	}

	f := NewConfigFlags()
	fs := pflag.NewFlagSet("meshtriage", pflag.ContinueOnError)
	f.AddFlags(fs)
	for _, name := range []string{
		"kubeconfig", "context", "namespace", "server", "request-timeout", "cluster", "user",
		"token", "as", "as-group", "as-uid", "username", "password", "client-certificate",
		"client-key", "certificate-authority", "insecure-skip-tls-verify", "tls-server-name",
		"proxy-url", "disable-compression",
	} {
		if fs.Lookup(name) == nil {
			t.Errorf("no --%s", name)
		}
	}
	for short, long := range map[string]string{"n": "namespace", "s": "server"} {
		if fl := fs.ShorthandLookup(short); fl == nil || fl.Name != long {
			t.Errorf("-%s is not --%s", short, long)
		}
	}

	err := fs.Parse([]string{
		"--kubeconfig", kubeconfig, "--context", "dr", "-n", "payments",
		"--token", "from-flag", "--as", "oncall-readonly", "--as-group", "sre", "--as-group", "viewers",
		"--request-timeout", "7s", "--insecure-skip-tls-verify",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://dr.example:6443" {
		t.Errorf("--context dr: host %s", cfg.Host)
	}
	if cfg.BearerToken != "from-flag" || cfg.Impersonate.UserName != "oncall-readonly" ||
		!slices.Equal(cfg.Impersonate.Groups, []string{"sre", "viewers"}) {
		t.Errorf("credentials: token %q, impersonate %+v", cfg.BearerToken, cfg.Impersonate)
	}
	if cfg.Timeout != 7*time.Second || !cfg.Insecure {
		t.Errorf("timeout %v, insecure %v", cfg.Timeout, cfg.Insecure)
	}
	if ns, _, err := f.ToRawKubeConfigLoader().Namespace(); err != nil || ns != "payments" {
		t.Errorf("-n payments: namespace %q, %v", ns, err)
	}

	// A context set afterwards through the field (as `meshtriage log`
	// resumes a recorded one) is read when the configuration is loaded.
	prod := "prod"
	f.Context = &prod
	if cfg, err = f.ToRESTConfig(); err != nil || cfg.Host != "https://prod.example:6443" {
		t.Errorf("Context pointed at prod: host %s, %v", cfg.Host, err)
	}
	// --server wins over the context's cluster.
	server := "https://override.example"
	f.APIServer = &server
	if cfg, err = f.ToRESTConfig(); err != nil || cfg.Host != server {
		t.Errorf("--server: host %s, %v", cfg.Host, err)
	}
}
