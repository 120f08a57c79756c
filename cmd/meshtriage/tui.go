package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/runbook/triage"
	"github.com/meshtriage/meshtriage/tui"
	"github.com/meshtriage/meshtriage/tui/actions"
	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/picker"
)

// tuiOptions are the root command's own flags: `meshtriage -n NS svc/NAME`
// opens the guided triage; `meshtriage` alone opens the target picker.
type tuiOptions struct {
	g            *globalOptions
	target       targetFlags
	input        inputFlags // the same offline inputs as check's
	logPath      string
	probeTimeout time.Duration
}

// addTUI makes the root command run the terminal UI when no subcommand is
// given. Its flags are local to the root, so they do not shadow the
// subcommands' flags of the same names.
func addTUI(root *cobra.Command, g *globalOptions) {
	o := &tuiOptions{g: g, probeTimeout: probes.DefaultTimeout}
	root.Example = "  meshtriage -n shop svc/payments --from pod/web-7d9c   # guided triage\n" +
		"  meshtriage                                             # pick the target\n" + root.Example
	root.Args = rootArgs
	root.ValidArgsFunction = completeServices(g)
	root.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		return o.run(ctx, args)
	}
	f := root.Flags()
	f.IntVar(&o.target.port, "port", 0, "Service port the 503s are on (default: every port)")
	f.StringVar(&o.target.from, "from", "", "the calling pod whose sidecar reports the 503s: pod/NAME or NAMESPACE/pod/NAME")
	f.StringVar(&o.logPath, "log", "", "incident log file (default: a new file under the meshtriage state directory)")
	f.DurationVar(&o.probeTimeout, "probe-timeout", o.probeTimeout, "deadline of each probe")
	o.input.add(f)
	_ = root.RegisterFlagCompletionFunc("from", completePods(g))
}

// rootArgs takes at most the target. A first word that is no target but
// reads like a subcommand mistyped (meshtriage chek) is an unknown command
// with cobra's suggestion, not a Service named chek.
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 && !strings.Contains(args[0], "/") {
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra's own default
		}
		if sugg := cmd.SuggestionsFor(args[0]); len(sugg) > 0 {
			return fmt.Errorf("unknown command %q for %q; did you mean %q? (a Service to triage is svc/%s)",
				args[0], cmd.CommandPath(), sugg[0], args[0])
		}
		if len(args) > 1 {
			return fmt.Errorf("unknown command %q for %q (run %s --help; a Service to triage is svc/NAME)", args[0], cmd.CommandPath(), cmd.CommandPath())
		}
	}
	return cobra.MaximumNArgs(1)(cmd, args)
}

func (o *tuiOptions) run(ctx context.Context, args []string) error {
	if !isTerminal(o.g.streams.In) || !isTerminal(o.g.streams.Out) {
		return triageErr("the guided triage needs a terminal; for a report run: meshtriage check -n NAMESPACE svc/NAME")
	}
	if o.probeTimeout <= 0 {
		return triageErr("--probe-timeout must be positive")
	}
	var (
		target cluster.Target
		src    triage.Source
		err    error
	)
	if o.input.offline() {
		// Manifests, a recording, a bug report or a scenario: read as
		// check reads them, the target from the arguments or the input.
		if src, target, err = o.input.source(ctx, o.g, o.target, args); err != nil {
			return &exitError{code: exitTriage, err: err}
		}
		for _, line := range src.Skipped {
			fmt.Fprintln(o.g.streams.ErrOut, "meshtriage:", line)
		}
		if len(args) == 0 {
			args = []string{"svc/" + target.Service}
		}
	} else {
		if len(args) == 1 {
			// Parse before connecting: a typo should not wait on the network.
			if target, err = parseTarget(o.g.namespace(), args, o.target); err != nil {
				return &exitError{code: exitTriage, err: err}
			}
		}
		if src, err = liveSource(ctx, o.g); err != nil {
			return &exitError{code: exitTriage, err: err}
		}
	}
	id := incidentlog.NewSessionID()
	logPath, notice, err := chooseLog(o.logPath, id, o.g.streams.ErrOut)
	if err != nil {
		return err
	}
	b := &liveSessions{src: src, opts: triage.Options{
		Mode: runbook.ModeGuided, ProbeTimeout: o.probeTimeout, LogPath: logPath, SessionID: id, Tool: version,
	}}
	defer b.close()
	opts := tui.Options{Context: src.Label, LogPath: logPath, ActionDeps: b.actionDeps, Notice: notice}
	if len(args) == 1 {
		eng, err := b.build(ctx, target)
		if err != nil {
			return &exitError{code: exitTriage, err: err}
		}
		opts.Engine = eng
	} else {
		if lc, ok := src.Cluster.(*live.Cluster); ok {
			opts.Catalog = picker.SearchCatalog{KubeCatalog: picker.KubeCatalog{Kube: lc.Kube}, Cluster: lc}
		}
		opts.NewEngine = b.build
		if o.g.kube.Namespace != nil && *o.g.kube.Namespace != "" {
			opts.Namespace = *o.g.kube.Namespace
		}
	}
	if err := tui.Run(ctx, opts); err != nil {
		return triageErr("%w", err)
	}
	if err := b.sinkErr(); err != nil {
		return triageErr("incident log %s: %w", logPath, err)
	}
	return nil
}

// liveSessions opens the triage once the target is known (at once, or
// when the picker has it) and closes its incident log after the UI.
type liveSessions struct {
	src  triage.Source
	opts triage.Options

	mu sync.Mutex
	tr *triage.Triage
}

func (b *liveSessions) build(ctx context.Context, t cluster.Target) (engine.Engine, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tr != nil {
		return nil, fmt.Errorf("a session is already open")
	}
	tr, eng, err := openGuided(ctx, b.src, t, b.opts)
	if err != nil {
		return nil, err
	}
	b.tr = tr
	return eng, nil
}

// openGuided opens the guided triage of t: without a named caller it
// searches for the callers as check does and walks from the most likely,
// the service side and the other callers beside it, so the UI shows what
// check reports on the same input.
func openGuided(ctx context.Context, src triage.Source, t cluster.Target, opts triage.Options) (*triage.Triage, engine.Engine, error) {
	tr, err := triage.Open(ctx, src, t, opts)
	if err != nil {
		return nil, nil, err
	}
	if t.Source == nil {
		if _, err := tr.Guide(ctx, callersearch.Options{Max: callersearch.DefaultMax}); err != nil {
			tr.Close()
			return nil, nil, fmt.Errorf("caller search: %w", err)
		}
	}
	return tr, engine.FromTriage(tr), nil
}

// actionDeps hands the TUI's actions panel the open triage's reads,
// runner, target and recorder; false before the picker has built it.
func (b *liveSessions) actionDeps() (actions.Deps, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tr == nil {
		return actions.Deps{}, false
	}
	return tuiActionDeps(b.tr), true
}

// tuiActionDeps is what the TUI's actions panel needs of an open triage.
func tuiActionDeps(tr *triage.Triage) actions.Deps {
	return actions.Deps{Cluster: tr.Cluster, Runner: tr.Source.Runner, Target: tr.Target, Record: tr.Record}
}

func (b *liveSessions) sinkErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tr == nil {
		return nil
	}
	return b.tr.Session.SinkErr()
}

func (b *liveSessions) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tr != nil {
		b.tr.Close()
	}
}
