package main

import (
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
)

// --remote-contexts names the other clusters as istioctl's flag does: a
// list of kubeconfig contexts, repeatable or comma-separated; each gets a
// client of its own from the same kubeconfig, and the target's cluster
// stays the current context.
func TestRemoteContextsBuildOneClientEach(t *testing.T) {
	noAmbientCluster(t)
	srv := fakeAPIServer(t)
	path := writeKubeconfig(t, srv.URL)
	g := parseGlobals(t, "--kubeconfig", path, "--remote-contexts", "staging")
	src, err := liveSource(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	if got := src.Cluster.Info().Context; got != "kind-lab" {
		t.Errorf("the target's cluster is context %q, want the current one, kind-lab", got)
	}
	remotes, unread := cluster.RemoteClusters(cluster.NewCache(src.Cluster))
	if unread != "" || len(remotes) != 1 || remotes[0].Context != "staging" {
		t.Fatalf("remotes through the session cache = %+v (unread %q), want one for staging", remotes, unread)
	}
	if info := remotes[0].Cluster.Info(); info.Context != "staging" || info.Server != srv.URL {
		t.Errorf("remote client = %+v, want context staging at %s", info, srv.URL)
	}
}

func TestRemoteContextsAreValidated(t *testing.T) {
	path := writeKubeconfig(t, "https://127.0.0.1:1")
	for _, c := range []struct {
		args []string
		want string // "" = valid
	}{
		{[]string{"--remote-contexts", "staging"}, ""},
		{[]string{"--remote-contexts", "staging,prod-eu"}, `--remote-contexts: context "prod-eu" not found in kubeconfig (contexts: kind-lab, staging)`},
		{[]string{"--remote-contexts", "staging", "--remote-contexts", "nope"}, `context "nope" not found`},
		{[]string{"--remote-contexts", "kind-lab"}, `"kind-lab" is the current context`},
		{[]string{"--context", "staging", "--remote-contexts", "staging"}, `"staging" is the current context`},
		{[]string{"--context", "staging", "--remote-contexts", "kind-lab"}, ""},
		{[]string{"--remote-contexts", "staging,staging"}, `"staging" is named twice`},
	} {
		err := parseGlobals(t, append([]string{"--kubeconfig", path}, c.args...)...).validateRemoteContexts()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: error %v, want it to say %q", c.args, err, c.want)
		}
	}
}

// A recorded input holds one cluster: remote contexts beside it would be
// read live next to a triage that is not.
func TestRemoteContextsRefusedWithAnInput(t *testing.T) {
	path := writeKubeconfig(t, "https://127.0.0.1:1")
	code, _, stderr := run(t, "meshtriage", "check", "--kubeconfig", path, "--remote-contexts", "staging", "--scenario", "mtls-plaintext-to-strict", "-o", "json")
	if code != exitTriage || !strings.Contains(stderr, "--remote-contexts reads live clusters; --scenario holds one cluster") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// The current context's server and credentials overrides are its own:
// a remote context is reached at its own server.
func TestRemoteContextTakesItsOwnServer(t *testing.T) {
	path := writeKubeconfig(t, "https://lab.example:6443")
	flags := live.NewConfigFlags()
	server := "https://override.example:6443"
	flags.KubeConfig, flags.APIServer = &path, &server
	cfg, err := flags.ForContext("staging").ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://lab.example:6443" || cfg.BearerToken != "t0ken" {
		t.Errorf("remote config = %s token %q, want staging's own server and user", cfg.Host, cfg.BearerToken)
	}
}

// parseGlobals parses args as the root command's persistent flags.
func parseGlobals(t *testing.T, args ...string) *globalOptions {
	t.Helper()
	root, ui := newRoot("meshtriage", genericiooptions.NewTestIOStreamsDiscard())
	if err := root.PersistentFlags().Parse(args); err != nil {
		t.Fatal(err)
	}
	return ui.g
}

// check reads a live cluster through the same way in as every command:
// an unknown remote context is refused before the triage, by name.
func TestCheckRefusesAnUnknownRemoteContext(t *testing.T) {
	srv := fakeAPIServer(t)
	path := writeKubeconfig(t, srv.URL)
	code, _, stderr := run(t, "meshtriage", "check", "--kubeconfig", path, "--remote-contexts", "prod-eu", "svc/orders", "-o", "json")
	if code != exitTriage || !strings.Contains(stderr, `--remote-contexts: context "prod-eu" not found in kubeconfig`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// capture records remote clusters: --remote-contexts goes the way in
// every live command goes, a context the kubeconfig lacks refused by name
// before any read (it was refused whole, as not recorded).
func TestCaptureTakesRemoteContexts(t *testing.T) {
	path := writeKubeconfig(t, "https://127.0.0.1:1")
	out := t.TempDir() + "/incident.tar.gz"
	code, _, stderr := run(t, "meshtriage", "capture", "--kubeconfig", path, "--remote-contexts", "prod-eu", "svc/orders", "-o", out)
	if code != exitTriage || !strings.Contains(stderr, `--remote-contexts: context "prod-eu" not found in kubeconfig`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// A recording names its clusters: remote contexts beside it are refused,
// saying so.
func TestRemoteContextsRefusedWithARecording(t *testing.T) {
	path := writeKubeconfig(t, "https://127.0.0.1:1")
	code, _, stderr := run(t, "meshtriage", "check", "--kubeconfig", path, "--remote-contexts", "staging", "--recording", t.TempDir(), "-o", "json")
	if code != exitTriage || !strings.Contains(stderr, "--remote-contexts reads live clusters; --recording replays the clusters it names") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
