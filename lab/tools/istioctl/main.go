// Command istioctl is upstream istioctl, built from the Go module proxy in a
// module of its own so istio.io/istio never enters the project's main go.mod.
// The benchmarks run it side by side with meshtriage (see BENCHMARKS.md).
package main

import (
	"fmt"
	"os"

	// Same client auth plugins as upstream's istioctl main.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"istio.io/istio/istioctl/cmd"
	"istio.io/istio/pkg/log"
)

func main() {
	if err := cmd.ConfigAndEnvProcessing(); err != nil {
		fmt.Fprintf(os.Stderr, "Could not initialize: %v\n", err)
		os.Exit(cmd.GetExitCode(err))
	}
	rootCmd := cmd.GetRootCmd(os.Args[1:])
	log.EnableKlogWithCobra()
	if err := rootCmd.Execute(); err != nil {
		os.Exit(cmd.GetExitCode(err))
	}
}
