package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/runbook/triage"
	"github.com/meshtriage/meshtriage/tui"
	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/picker"
)

// demoOptions are the flags of `meshtriage demo`.
type demoOptions struct {
	g       *globalOptions
	logPath string
	// recording is a capture to open instead of an embedded scenario.
	recording string
}

func newDemoCmd(g *globalOptions) *cobra.Command {
	o := &demoOptions{g: g}
	cmd := &cobra.Command{
		Use:   "demo [SCENARIO]",
		Short: "Triage a recorded incident: no cluster needed",
		Long: `demo runs the triage on an embedded scenario: a recorded incident (Kubernetes
and Istio objects, Envoy admin output, proxy and app logs, istiod sync status)
served from memory, so every probe runs as it would against a cluster.

In a terminal it opens the guided triage; with no argument it first asks which
recorded incident to open. Without a terminal it prints what
` + "`meshtriage check --scenario SCENARIO`" + ` prints, or the list of scenarios.`,
		Example: "  meshtriage demo\n  meshtriage demo startup-race\n  meshtriage demo --recording payments-503.tar.gz",
		Args:    cobra.MaximumNArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			names, _ := recorded.Names(assets.FS)
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return o.run(ctx, name)
		},
	}
	cmd.Flags().StringVar(&o.logPath, "log", "", "incident log file (default: a new file under the meshtriage state directory)")
	cmd.Flags().StringVar(&o.recording, "recording", "", "open a recording made by meshtriage capture instead of an embedded scenario: its `FILE.tar.gz|DIR`")
	return cmd
}

func (o *demoOptions) run(ctx context.Context, name string) error {
	if o.recording != "" && name != "" {
		return triageErr("give a scenario name or --recording, not both")
	}
	if !isTerminal(o.g.streams.In) || !isTerminal(o.g.streams.Out) {
		if o.recording != "" {
			return o.unattended(ctx, "")
		}
		if name == "" {
			return listScenarios(o.g.streams.Out)
		}
		return o.unattended(ctx, name)
	}
	id := incidentlog.NewSessionID()
	logPath, notice, err := chooseLog(o.logPath, id, o.g.streams.ErrOut)
	if err != nil {
		return err
	}
	d := &demoSessions{opts: triage.Options{Mode: runbook.ModeGuided, LogPath: logPath, SessionID: id, Tool: version}, recording: o.recording, namespace: o.g.namespace()}
	defer d.close()
	opts := tui.Options{LogPath: logPath, OpenScenario: d.open, Context: "demo", Notice: notice}
	if name != "" || o.recording != "" {
		eng, label, err := d.open(ctx, name)
		if err != nil {
			return &exitError{code: exitTriage, err: err}
		}
		opts.Engine, opts.Context = eng, label
	} else {
		list, err := triage.Scenarios()
		if err != nil {
			return &exitError{code: exitTriage, err: err}
		}
		for _, s := range list {
			opts.Scenarios = append(opts.Scenarios, picker.ScenarioSummary{Name: s.Name, Title: s.Title, Summary: s.Summary})
		}
	}
	if err := tui.Run(ctx, opts); err != nil {
		return triageErr("%w", err)
	}
	return nil
}

// unattended is `check --scenario NAME`: demo's report without a terminal
// is check's, with the incident log demo always writes.
func (o *demoOptions) unattended(ctx context.Context, name string) error {
	logPath, _, err := chooseLog(o.logPath, incidentlog.NewSessionID(), o.g.streams.ErrOut)
	if err != nil {
		return err
	}
	c := &checkOptions{g: o.g, inputFlags: inputFlags{scenario: name, recording: o.recording}, logPath: logPath, output: "text",
		probeTimeout: probes.DefaultTimeout, metricsWindow: probes.DefaultMetricsInterval}
	err = c.run(ctx, nil)
	if _, statErr := os.Stat(logPath); statErr == nil {
		fmt.Fprintf(o.g.streams.ErrOut, "meshtriage: incident log: %s (run in a terminal for the guided triage)\n", logPath)
	}
	return err
}

// demoSessions opens the chosen scenario's triage and closes its incident
// log after the UI.
type demoSessions struct {
	opts triage.Options
	// recording, when set, is opened instead of a scenario; objects that
	// name no namespace take namespace.
	recording, namespace string

	mu sync.Mutex
	tr *triage.Triage
}

func (d *demoSessions) open(ctx context.Context, name string) (engine.Engine, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tr != nil {
		return nil, "", fmt.Errorf("a session is already open")
	}
	var src triage.Source
	var err error
	if d.recording != "" {
		src, err = triage.Recording(d.recording, d.namespace)
		if err == nil && src.Target == nil {
			err = fmt.Errorf("%s names no target (no scenario.yaml): triage it with `meshtriage check --recording %s -n NAMESPACE svc/NAME`", d.recording, d.recording)
		}
	} else {
		src, err = triage.Scenario(name)
	}
	if err != nil {
		return nil, "", err
	}
	tr, eng, err := openGuided(ctx, src, *src.Target, d.opts)
	if err != nil {
		return nil, "", err
	}
	d.tr = tr
	return eng, src.Label, nil
}

func (d *demoSessions) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tr != nil {
		d.tr.Close()
	}
}

// listScenarios prints the scenarios and how to open one: without a
// terminal there is nobody to ask.
func listScenarios(out io.Writer) error {
	list, err := triage.Scenarios()
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	fmt.Fprintln(out, "Recorded incidents to triage (no cluster needed):")
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	example := list[0].Name
	for _, s := range list {
		fmt.Fprintf(tw, "  %s\t%s\n", s.Name, s.Summary)
		if s.Name == "startup-race" {
			example = s.Name
		}
	}
	tw.Flush()
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Open one with: meshtriage demo", example)
	return nil
}

// isTerminal reports whether f is an interactive terminal (not a pipe, a
// file or /dev/null).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}
