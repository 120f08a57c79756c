package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/runbook/triage"
	"github.com/meshtriage/meshtriage/tui"
	"github.com/meshtriage/meshtriage/tui/engine"
)

func newLogCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Render, find or resume incident logs",
		Long: `Every triage writes an incident log: one JSON event a line, fsynced as it
happens, with credentials redacted. These commands turn a log into the
Markdown record for the postmortem, say where logs are kept, and reopen a
session where it stopped.`,
		Example: "  meshtriage log path\n" +
			"  meshtriage log render ~/.local/state/meshtriage/2026-12-02T0304-3f9a0c12.jsonl > incident.md\n" +
			"  meshtriage log resume ~/.local/state/meshtriage/2026-12-02T0304-3f9a0c12.jsonl",
	}
	cmd.AddCommand(newLogRenderCmd(g), newLogPathCmd(g), newLogResumeCmd(g))
	return cmd
}

func newLogRenderCmd(g *globalOptions) *cobra.Command {
	format := incidentlog.FormatMarkdown
	full := false
	cmd := &cobra.Command{
		Use:   "render FILE",
		Short: "Print an incident log as a Markdown incident record (or JSON)",
		Long: `render prints the log as the incident record on-call teams paste into a
postmortem, short enough to read in two minutes: the summary, a timeline of
what the on-call did and decided, the root cause with its evidence, the fix
and its verification, what was not checked and what was ruled out. --full
adds the appendix: every event (the engine's own reads and each caller's
triage too) with its evidence. FILE "-" reads standard input. Lines a crash
tore or corrupted are skipped with a warning on stderr.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !validFormat(format) {
				return &exitError{code: exitTriage, err: fmt.Errorf("unknown output format %q (one of %s)", format, strings.Join(incidentlog.Formats, ", "))}
			}
			log, err := readLog(g, args[0])
			if err != nil {
				return err
			}
			if err := incidentlog.RenderWith(log.events, log.problems, g.streams.Out, format, full); err != nil {
				return &exitError{code: exitTriage, err: fmt.Errorf("render %s: %w", args[0], err)}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", format, "output format: "+strings.Join(incidentlog.Formats, "|"))
	cmd.Flags().BoolVar(&full, "full", false, "add the appendix: every event with its evidence (tables, raw output, facts, commands)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(incidentlog.Formats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func validFormat(f string) bool {
	for _, known := range incidentlog.Formats {
		if f == known {
			return true
		}
	}
	return false
}

func newLogPathCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "path",
		Short: "Print the directory incident logs are written to",
		Long:  "path prints $XDG_STATE_HOME/meshtriage (default ~/.local/state/meshtriage); --log overrides it per session.",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			dir, err := incidentlog.DefaultDir()
			if err != nil {
				return &exitError{code: exitTriage, err: err}
			}
			fmt.Fprintln(g.streams.Out, dir)
			return nil
		},
	}
}

func newLogResumeCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "resume FILE",
		Short: "Reopen a session from its incident log in the terminal UI",
		Long: `resume rebuilds a session from its log (the probe results, the current step,
verdicts and the fix chosen) and reopens it in the terminal UI; new events
are appended to the same log. A live session reconnects to the kube context
it was recorded on unless --context says otherwise; a demo session reopens
its scenario.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return resumeLog(ctx, g, args[0])
		},
	}
}

// readResult is a log as read: its events and the lines that were skipped.
type readResult struct {
	events   []runbook.Event
	problems []incidentlog.Problem
}

// readLog reads the log at path ("-" for stdin), warning on stderr about
// every skipped line. An unreadable file, or one without a single event, is
// an error.
func readLog(g *globalOptions, path string) (readResult, error) {
	var r io.Reader
	name := path
	if path == "-" {
		r, name = g.streams.In, "stdin"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return readResult{}, &exitError{code: exitTriage, err: fmt.Errorf("cannot read incident log: %w", err)}
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return readResult{}, &exitError{code: exitTriage, err: fmt.Errorf("%s is a directory, not an incident log (the logs in it: ls %s)", path, path)}
		}
		r = f
	}
	if f, ok := r.(*os.File); ok && path != "-" {
		if st, err := f.Stat(); err == nil && st.Size() == 0 {
			return readResult{}, &exitError{code: exitTriage, err: fmt.Errorf("%s is empty: its session ended before anything was recorded (meshtriage no longer leaves such files)", path)}
		}
	}
	events, problems := incidentlog.Read(r)
	for _, p := range problems {
		fmt.Fprintf(g.streams.ErrOut, "meshtriage: warning: %s: %s\n", name, p)
	}
	if len(events) == 0 {
		return readResult{}, &exitError{code: exitTriage, err: fmt.Errorf("%s holds no incident log events", name)}
	}
	return readResult{events, problems}, nil
}

// resumeLog reopens the session recorded at path in the TUI.
func resumeLog(ctx context.Context, g *globalOptions, path string) error {
	if path == "-" {
		return &exitError{code: exitTriage, err: errors.New("resume needs the log file itself: new events are appended to it")}
	}
	log, err := readLog(g, path)
	if err != nil {
		return err
	}
	if !isTerminal(g.streams.In) || !isTerminal(g.streams.Out) {
		return &exitError{code: exitTriage, err: fmt.Errorf("resume opens the terminal UI and needs a terminal; to read the log, run: meshtriage log render %s", path)}
	}
	tr, err := prepareResume(ctx, g, path, log.events)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	defer tr.Close()
	if err := tui.Run(ctx, tui.Options{
		Engine:  engine.FromTriage(tr),
		Resumed: true,
		Context: tr.Source.Label,
		LogPath: tr.LogPath(),
	}); err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	if err := tr.Session.SinkErr(); err != nil {
		return &exitError{code: exitTriage, err: fmt.Errorf("incident log %s: %w", path, err)}
	}
	return nil
}

// prepareResume rebuilds the session from history, reconnecting to what it
// triaged: the embedded scenario of a demo, the recording or bug report of
// an offline triage, else the live cluster of the recorded kube context
// (unless --context overrides it). New events go on into the same file.
func prepareResume(ctx context.Context, g *globalOptions, path string, history []runbook.Event) (*triage.Triage, error) {
	started, err := triage.Started(path, history)
	if err != nil {
		return nil, err
	}
	var src triage.Source
	switch {
	case started.Extra["scenario"] != "":
		src, err = triage.Scenario(started.Extra["scenario"])
	case started.Extra["recording"] != "":
		// An offline session reopens its recording, never the cluster the
		// recording was taken from.
		src, err = triage.Recording(started.Extra["recording"], started.Target.Namespace)
	case started.Extra["bug-report"] != "":
		var paths []string
		if paths, err = triage.BugReportPaths(started.Extra); err == nil {
			src, err = triage.BugReports(paths, started.Target.Namespace, nil, nil)
		}
	default:
		if (g.kube.Context == nil || *g.kube.Context == "") && started.KubeContext != "" {
			g.kube.Context = &started.KubeContext
		}
		src, err = liveSource(ctx, g)
	}
	if err != nil {
		return nil, err
	}
	mode := runbook.Mode(started.Mode)
	if mode == runbook.ModeAuto || mode == "" {
		mode = runbook.ModeGuided // the UI walks with the on-call, not unattended
	}
	return triage.Resume(ctx, src, path, history, triage.Options{Mode: mode, Tool: version})
}

// chooseLog is the incident log of a session: --log, else the default
// directory, else a fallback that is said on errOut (and returned as the
// notice the UI shows): a read-only HOME must not stop a triage.
func chooseLog(flag, sessionID string, errOut io.Writer) (path, notice string, err error) {
	if flag != "" {
		return flag, "", nil
	}
	path, notice, err = incidentlog.DefaultLog(time.Now(), sessionID)
	if err != nil {
		return "", "", triageErr("incident log: %w", err)
	}
	if notice != "" {
		fmt.Fprintln(errOut, "meshtriage: "+notice)
	}
	return path, notice, nil
}
