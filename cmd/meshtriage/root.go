package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes of the check contract (architecture.md).
const (
	exitOK       = 0
	exitTriage   = 1 // could not triage: bad input, cluster unreachable
	exitFindings = 3
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

// globalOptions are the flags every command shares: kubectl's own
// connection flags, so --kubeconfig, --context, -n and KUBECONFIG behave as
// the on-call expects.
type globalOptions struct {
	kube    *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
}

func newRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	g := &globalOptions{
		kube:    genericclioptions.NewConfigFlags(true),
		streams: streams,
	}
	name := "meshtriage"
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		name = "kubectl meshtriage"
	}
	root := &cobra.Command{
		Use:           name,
		Short:         "Triage Envoy 503s in an Istio mesh, step by step",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	g.kube.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newCheckCmd(g),
		newDemoCmd(g),
		newLogCmd(g),
	)
	return root
}

// execute runs the CLI and maps errors to exit codes with a one-line message.
func execute(streams genericiooptions.IOStreams, args []string) int {
	root := newRootCmd(streams)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(streams.ErrOut, "meshtriage:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(streams.ErrOut, "meshtriage:", err)
	return exitTriage
}
