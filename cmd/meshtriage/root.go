package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// Exit codes of the check contract (ARCHITECTURE.md).
const (
	exitOK       = 0
	exitTriage   = 1 // could not triage: bad input, cluster unreachable
	exitFindings = 3 // a finding, or open hypotheses: not an all-clear
	// exitInterrupted is a shell's 128+SIGINT: the report printed holds
	// what had finished.
	exitInterrupted = 130
)

// exitError carries an exit code out of a command's RunE.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// globalOptions are the flags every command shares: kubectl's own
// connection flags, so --kubeconfig, --context, -n and KUBECONFIG behave as
// the on-call expects.
type globalOptions struct {
	kube    *live.ConfigFlags
	streams genericiooptions.IOStreams
	// controlPlaneNamespace is where istiod and the `istio` mesh ConfigMap live.
	controlPlaneNamespace string
	// remoteContexts are the kubeconfig contexts of the mesh's other
	// clusters (istioctl's --remote-contexts); the target and its caller
	// are in the current context.
	remoteContexts []string
}

// validateRemoteContexts refuses a --remote-contexts entry the kubeconfig
// lacks (naming it), the current context named again, and a context
// given twice: each is one cluster, read once.
func (g *globalOptions) validateRemoteContexts() error {
	if len(g.remoteContexts) == 0 {
		return nil
	}
	if err := g.kube.CheckContexts(g.remoteContexts, triage.RemoteContextsFlag); err != nil {
		return err
	}
	current := ""
	if g.kube.Context != nil {
		current = *g.kube.Context
	}
	if current == "" {
		if raw, err := g.kube.ToRawKubeConfigLoader().RawConfig(); err == nil {
			current = raw.CurrentContext
		}
	}
	seen := map[string]bool{}
	for _, name := range g.remoteContexts {
		switch {
		case name == current:
			return fmt.Errorf("%s: %q is the current context, where the target is: name only the other clusters", triage.RemoteContextsFlag, name)
		case seen[name]:
			return fmt.Errorf("%s: context %q is named twice", triage.RemoteContextsFlag, name)
		}
		seen[name] = true
	}
	return nil
}

// namespace is -n, or else the kubeconfig context's namespace, or "default",
// as kubectl resolves it.
func (g *globalOptions) namespace() string {
	if g.kube.Namespace != nil && *g.kube.Namespace != "" {
		return *g.kube.Namespace
	}
	if ns, _, err := g.kube.ToRawKubeConfigLoader().Namespace(); err == nil && ns != "" {
		return ns
	}
	return "default"
}

// pluginName is how the binary is invoked: kubectl runs a plugin as
// kubectl-meshtriage, and its help must then say "kubectl meshtriage".
func pluginName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if strings.HasPrefix(base, "kubectl-") {
		// kubectl maps dashes in the plugin name to spaces, underscores to dashes.
		return "kubectl " + strings.ReplaceAll(strings.TrimPrefix(base, "kubectl-"), "_", "-")
	}
	return "meshtriage"
}

func newRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCmdAs(os.Args[0], streams)
}

func newRootCmdAs(argv0 string, streams genericiooptions.IOStreams) *cobra.Command {
	root, _ := newRoot(argv0, streams)
	return root
}

// newRoot is the root command and the options of the terminal UI it runs
// without a subcommand (a test resolves its input as the UI would).
func newRoot(argv0 string, streams genericiooptions.IOStreams) (*cobra.Command, *tuiOptions) {
	g := &globalOptions{
		kube:    live.NewConfigFlags(),
		streams: streams,
	}
	name := pluginName(argv0)
	root := &cobra.Command{
		// Use stays one word: cobra takes a command's name from Use's first
		// word, and "kubectl" would then name every subcommand's path.
		Use:   "meshtriage",
		Short: "Triage Envoy 503s in an Istio mesh, step by step",
		Long: "Runs read-only probes against the cluster, shows the evidence and walks a runbook\n" +
			"from an Envoy 503 to its root cause, fix directions and verification steps.",
		Example: fmt.Sprintf("  %[1]s check -n shop svc/payments --from pod/web-7d9c\n"+
			"  %[1]s demo", name),
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: name},
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("meshtriage {{.Version}}\n")
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	g.kube.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVar(&g.controlPlaneNamespace, "istio-namespace", cluster.DefaultControlPlane,
		"Namespace of the Istio control plane (istiod and the istio mesh ConfigMap)")
	root.PersistentFlags().StringSliceVar(&g.remoteContexts, "remote-contexts", nil,
		"kubeconfig contexts of the mesh's other clusters, read for the target Service's endpoints there (as istioctl's --remote-contexts; not to be confused with --context, the target's cluster); repeatable or comma-separated")
	registerFlagCompletions(root, g)
	ui := addTUI(root, g) // no subcommand: the terminal UI (tui.go)
	root.AddCommand(
		newCaptureCmd(g),
		newCheckCmd(g),
		newDemoCmd(g),
		newLogCmd(g),
		newVersionCmd(g),
		newWatchCmd(g),
	)
	return root, ui
}

// execute runs the CLI and maps errors to exit codes with a one-line message.
func execute(streams genericiooptions.IOStreams, args []string) int {
	return executeAs(os.Args[0], streams, args)
}

// executeAs is execute for a binary invoked as argv0 (meshtriage or
// kubectl-meshtriage).
func executeAs(argv0 string, streams genericiooptions.IOStreams, args []string) int {
	root := newRootCmdAs(argv0, streams)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.code == exitInterrupted && isTerminal(streams.ErrOut) {
			// The terminal echoed ^C where this line would start: end
			// that line first, as a shell does before its prompt.
			fmt.Fprintln(streams.ErrOut)
		}
		if ee.err != nil {
			fmt.Fprintln(streams.ErrOut, "meshtriage:", oneLine(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintln(streams.ErrOut, "meshtriage:", oneLine(err.Error()))
	return exitTriage
}

// oneLine keeps an error to the single line the contract promises on stderr.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
