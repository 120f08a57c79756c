package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is meshtriage's version, shown by --version and `meshtriage
// version`, sent as the User-Agent and recorded in the incident log's
// session_started. A release build sets it with -ldflags
// "-X main.version=vX.Y.Z" (.goreleaser.yaml); any
// other build leaves it empty and init takes it from the build information
// the go command stamped into the binary.
var version string

func init() { version = resolveVersion(version) }

// resolveVersion keeps a version set by -ldflags and otherwise reads this
// binary's build information.
func resolveVersion(stamped string) string {
	if stamped != "" {
		return stamped
	}
	info, _ := debug.ReadBuildInfo()
	return versionFromBuildInfo(info)
}

// develVersion is what a binary with no version information reports: `go
// run`, `go test` and -buildvcs=false stamp neither a module version nor a
// commit.
const develVersion = "devel"

// versionFromBuildInfo is the version the go command recorded in a binary.
// `go install github.com/meshtriage/meshtriage/cmd/meshtriage@vX` records vX
// (@latest the newest tag, @main a pseudo-version naming the commit). A build
// in a checkout records the version Go derives from git: the tag when HEAD is
// tagged, else a pseudo-version ending in the commit's first 12 hex digits,
// with "+dirty" when the tree had uncommitted changes. A binary whose module
// version is "(devel)" (no version derived) falls back to the VCS revision
// itself, so an incident log still names the commit it was built from.
func versionFromBuildInfo(info *debug.BuildInfo) string {
	if info == nil {
		return develVersion
	}
	var revision string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		if revision == "" {
			return develVersion
		}
		v = develVersion + "-" + shortRevision(revision)
	}
	// A dirty tree is stated once, whoever added the suffix.
	if modified && !strings.HasSuffix(v, "+dirty") {
		v += "+dirty"
	}
	return v
}

// shortRevision is a commit's first 12 hex digits, as Go's pseudo-versions
// name it; git accepts it wherever it accepts the full hash.
func shortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// versionOptions are `meshtriage version`'s: the version, then unless
// --client the cluster the connection flags point at, as `kubectl version`.
type versionOptions struct {
	g          *globalOptions
	clientOnly bool
}

func newVersionCmd(g *globalOptions) *cobra.Command {
	o := &versionOptions{g: g}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the meshtriage version and, unless --client, the cluster it would talk to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.clientOnly, "client", false, "Print the meshtriage version only; do not contact the cluster")
	return cmd
}

// Complete has nothing to resolve: the connection flags are read in Run,
// and only when the cluster is asked.
func (o *versionOptions) Complete() error { return nil }

// Validate has nothing to check: the command takes no arguments (cobra
// enforces that) and --client is a switch.
func (o *versionOptions) Validate() error { return nil }

func (o *versionOptions) Run(ctx context.Context) error {
	fmt.Fprintf(o.g.streams.Out, "meshtriage %s\n", version)
	if o.clientOnly {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	src, err := liveSource(ctx, o.g)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	c := src.Cluster
	info := c.Info()
	v, err := c.ServerVersion(ctx)
	if err != nil {
		return &exitError{code: exitTriage, err: fmt.Errorf("server %s: %w", info.Server, err)}
	}
	fmt.Fprintf(o.g.streams.Out, "kubernetes %s at %s (context %s)\n", v, info.Server, info.Context)
	return nil
}
