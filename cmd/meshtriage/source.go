package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// inputFlags say what a triage reads instead of the live cluster: check
// and the terminal UI take the same ones, so they triage the same input.
type inputFlags struct {
	manifests  []string // files, directories, "-" for stdin
	recording  string   // a capture's archive or folder
	bugReports []string // istioctl bug-report archives, one a cluster
	scenario   string
}

func (o *inputFlags) add(f *pflag.FlagSet) {
	f.StringSliceVarP(&o.manifests, "manifests", "f", nil, "run on saved Kubernetes objects (YAML or JSON, as get -o yaml prints them) instead of a cluster: `FILE|DIR|-` (a directory recursively, - for stdin); repeatable")
	f.StringVar(&o.recording, "recording", "", "run on a recording made by meshtriage capture instead of a cluster: its `FILE.tar.gz|DIR`")
	f.StringArrayVar(&o.bugReports, "bug-report", nil, "run on an istioctl bug-report archive instead of a cluster: its `FILE.tar.gz|DIR`; -f adds objects it lacks. Repeat it for a mesh of several clusters, one archive a cluster: the first is the target's, each further one a remote cluster named by the context in its cluster/cluster-context")
	f.StringVar(&o.scenario, "scenario", "", "run on the embedded recorded scenario `NAME` (meshtriage demo lists them)")
}

// offline reports whether a source other than the live cluster is given.
func (o *inputFlags) offline() bool {
	return len(o.manifests) > 0 || o.recording != "" || len(o.bugReports) > 0 || o.scenario != ""
}

// source picks what to read (live, --manifests, --recording, --bug-report
// or --scenario) and the target.
func (o *inputFlags) source(ctx context.Context, g *globalOptions, tf targetFlags, args []string) (triage.Source, cluster.Target, error) {
	var t cluster.Target
	var given []string
	for _, s := range []struct {
		flag string
		set  bool
	}{
		// -f adds to a bug report what it lacks; with any other source it
		// is a source of its own.
		{"--manifests", len(o.manifests) > 0 && len(o.bugReports) == 0},
		{"--recording", o.recording != ""},
		{"--bug-report", len(o.bugReports) > 0},
		{"--scenario", o.scenario != ""},
	} {
		if s.set {
			given = append(given, s.flag)
		}
	}
	if len(given) > 1 {
		return triage.Source{}, t, fmt.Errorf("%s are different sources: give one", strings.Join(given, " and "))
	}
	if len(given) == 1 && len(g.remoteContexts) > 0 {
		// The contexts would be read live beside a triage that is not. A
		// recording names its clusters itself (a capture with
		// --remote-contexts holds the remote ones); the other inputs hold
		// one cluster.
		held := given[0] + " holds one cluster"
		switch given[0] {
		case "--recording":
			held = "--recording replays the clusters it names (capture --remote-contexts records the remote ones in it)"
		case "--bug-report":
			held = "--bug-report is one cluster an archive (repeat it, one istioctl bug-report a cluster)"
		}
		return triage.Source{}, t, fmt.Errorf("%s reads live clusters; %s: give one or the other", triage.RemoteContextsFlag, held)
	}
	switch {
	case o.scenario != "":
		src, err := triage.Scenario(o.scenario)
		if err != nil {
			return src, t, err
		}
		t, err = o.recordedTarget(g, tf, src.Target, args)
		return src, t, err
	case o.recording != "":
		src, err := triage.Recording(o.recording, g.namespace())
		if err != nil {
			return src, t, err
		}
		t, err = o.recordedTarget(g, tf, src.Target, args)
		return src, t, err
	case len(o.bugReports) > 0:
		t, err := parseTarget(g.namespace(), args, tf)
		if err != nil {
			return triage.Source{}, t, err
		}
		src, err := triage.BugReports(o.bugReports, t.Namespace, o.manifests, g.streams.In)
		return src, t, err
	case len(o.manifests) > 0:
		t, err := parseTarget(g.namespace(), args, tf)
		if err != nil {
			return triage.Source{}, t, err
		}
		src, err := triage.Manifests(o.manifests, manifests.Options{Namespace: t.Namespace, Stdin: g.streams.In}, cluster.ClusterInfo{
			Context: "manifests", Server: strings.Join(o.manifests, ","), ControlPlaneNamespace: g.controlPlaneNamespace,
		})
		return src, t, err
	default:
		// Parse before connecting: a typo should not wait on the network.
		t, err := parseTarget(g.namespace(), args, tf)
		if err != nil {
			return triage.Source{}, t, err
		}
		// The caller is known before connecting: its Envoy admin and
		// istiod's port-forwards open alongside the reachability check.
		opts := liveOptions(g)
		opts.Warmup = &live.Warmup{Caller: t.Source}
		src, err := liveSourceWith(ctx, g, opts)
		return src, t, err
	}
}

// recordedTarget is the target of a recorded source: the recorded one,
// which an argument (svc/NAME, with -n) replaces and --port and --from
// adjust. A recording that names none needs the argument.
func (o *inputFlags) recordedTarget(g *globalOptions, tf targetFlags, recorded *cluster.Target, args []string) (cluster.Target, error) {
	if len(args) > 0 || recorded == nil {
		ns := g.namespace()
		if recorded != nil && !namespaceGiven(g) {
			ns = recorded.Namespace
		}
		if len(args) == 0 {
			return cluster.Target{}, errors.New("the recording names no target: give svc/NAME (and -n NAMESPACE)")
		}
		return parseTarget(ns, args, tf)
	}
	t := *recorded
	return t, applyTargetFlags(&t, tf)
}

func namespaceGiven(g *globalOptions) bool {
	return g.kube.Namespace != nil && *g.kube.Namespace != ""
}
