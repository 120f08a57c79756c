// Command kube-apiserver is the upstream Kubernetes API server, built from the
// Go module proxy in a module of its own so k8s.io/kubernetes never enters the
// project's main go.mod. The mesh lab runs it against a local etcd.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
