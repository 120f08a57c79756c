// Command kubectl is upstream kubectl as Kubernetes v1.34.4 ships it (the
// k8s.io/kubectl module at v0.34.4 is that release's staging copy), built
// from the Go module proxy in a module of its own so it never enters the
// project's main go.mod. The benchmarks compare meshtriage's binary with it
// (lab/bench/binsize, BENCHMARKS.md).
package main

import (
	"os"

	// The client auth plugins upstream's kubectl links.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// The verbosity is set before the command is built, as upstream's main
	// does, so building it (plugins, .kuberc) logs at the asked level.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
