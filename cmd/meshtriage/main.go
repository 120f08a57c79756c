// Command meshtriage walks an on-call engineer through the first ten minutes
// of an Envoy 503 incident in an Istio mesh. Installed as kubectl-meshtriage it
// is also a kubectl plugin.
package main

import (
	"io"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
)

func main() {
	// client-go reports stray connection errors through klog, which writes to
	// stderr and would tear through the terminal UI; meshtriage reports every
	// failure itself, in the probe result that met it.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(execute(streams, os.Args[1:]))
}
