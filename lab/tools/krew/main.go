// Command krew is the kubectl plugin manager, built from the Go module proxy
// in a module of its own. The lab's release test installs meshtriage's krew
// manifest with it, so krew's own parser, validation, platform matching and
// checksum check judge the manifest (lab/release_integration_test.go).
package main

import "sigs.k8s.io/krew/cmd/krew/cmd"

func main() { cmd.Execute() }
