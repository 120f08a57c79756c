// Command meshtriage walks an on-call engineer through the first ten minutes
// of an Envoy 503 incident in an Istio mesh. Installed as kubectl-meshtriage it
// is also a kubectl plugin.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(execute(streams, os.Args[1:]))
}
