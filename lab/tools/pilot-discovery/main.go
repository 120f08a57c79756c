// Command pilot-discovery is upstream istiod's discovery server, built from
// the Go module proxy in a module of its own so istio.io/istio never enters
// the project's main go.mod. The lab runs it out of cluster against its
// kube-apiserver (lab/istiod.go); it pins the same istio.io/istio version as
// lab/tools/istioctl so the two tools agree on one Istio.
package main

import (
	"os"

	"istio.io/istio/pilot/cmd/pilot-discovery/app"
	"istio.io/istio/pkg/log"
)

func main() {
	log.EnableKlogWithCobra()
	rootCmd := app.NewRootCommand()
	if err := rootCmd.Execute(); err != nil {
		log.Error(err)
		os.Exit(-1)
	}
}
