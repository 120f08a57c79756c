package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
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
	root.Args = cobra.MaximumNArgs(1)
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
	_ = root.RegisterFlagCompletionFunc("from", completePods(g))
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
		err    error
	)
	if len(args) == 1 {
		// Parse before connecting: a typo should not wait on the network.
		if target, err = parseTarget(o.g.namespace(), args, o.target); err != nil {
			return &exitError{code: exitTriage, err: err}
		}
	}
	lc, err := openLive(o.g)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	rctx, cancel := context.WithTimeout(ctx, reachTimeout)
	err = checkReachable(rctx, lc)
	cancel()
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	graph, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		return triageErr("runbook: %w", err)
	}
	id := incidentlog.NewSessionID()
	logPath := o.logPath
	if logPath == "" {
		if logPath, err = incidentlog.DefaultPath(time.Now(), id); err != nil {
			return triageErr("incident log: %w", err)
		}
	}
	b := &liveSessions{o: o, cluster: lc, graph: graph, id: id, logPath: logPath}
	defer b.close()
	opts := tui.Options{Context: lc.Info().Context, LogPath: logPath, ActionDeps: b.actionDeps}
	if len(args) == 1 {
		eng, err := b.build(ctx, target)
		if err != nil {
			return &exitError{code: exitTriage, err: err}
		}
		opts.Engine = eng
	} else {
		opts.Catalog = picker.KubeCatalog{Kube: lc.Kube}
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

// liveSessions builds the session once the target is known (at once, or
// when the picker has it) and closes its incident log after the UI.
type liveSessions struct {
	o       *tuiOptions
	cluster *live.Cluster
	graph   *runbook.Graph
	id      string
	logPath string

	mu   sync.Mutex
	log  *incidentlog.Writer
	sess *runbook.Session
	// cached is the session's read cache over the live cluster, and
	// target its target: what the TUI's actions run against.
	cached cluster.Cluster
	target cluster.Target
}

func (b *liveSessions) build(ctx context.Context, t cluster.Target) (engine.Engine, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sess != nil {
		return nil, fmt.Errorf("a session is already open")
	}
	w, err := incidentlog.Open(b.logPath)
	if err != nil {
		return nil, fmt.Errorf("incident log: %w", err)
	}
	info := b.cluster.Info()
	started := runbook.SessionStarted{KubeContext: info.Context, Server: info.Server, Tool: version}
	vctx, cancel := context.WithTimeout(ctx, reachTimeout)
	if v, err := b.cluster.ServerVersion(vctx); err == nil {
		started.ServerVersion = v
	}
	cancel()
	cache := live.NewCache(b.cluster)
	sess, err := runbook.NewSession(runbook.Config{
		Graph:        b.graph,
		Cluster:      cache,
		Target:       t,
		Probes:       probes.ByID(),
		Sinks:        []runbook.Sink{w},
		User:         demoUser(),
		Mode:         runbook.ModeGuided,
		SessionID:    b.id,
		ProbeTimeout: b.o.probeTimeout,
		Started:      started,
	})
	if err != nil {
		w.Close()
		return nil, err
	}
	b.log, b.sess, b.cached, b.target = w, sess, cache, t
	return engine.FromSession(sess), nil
}

// actionDeps hands the TUI's actions panel the open session's cluster (the
// cache unwraps to the live cluster, which runs them), target and recorder;
// false before the picker has built the session.
func (b *liveSessions) actionDeps() (actions.Deps, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sess == nil {
		return actions.Deps{}, false
	}
	return actions.Deps{Cluster: b.cached, Target: b.target, Record: b.sess.RecordAction}, true
}

func (b *liveSessions) sinkErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sess == nil {
		return nil
	}
	return b.sess.SinkErr()
}

func (b *liveSessions) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.log != nil {
		b.log.Close()
	}
}
