package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/runbook/report"
	"github.com/meshtriage/meshtriage/tui"
	"github.com/meshtriage/meshtriage/tui/engine"
)

func newDemoCmd(g *globalOptions) *cobra.Command {
	var logPath string
	cmd := &cobra.Command{
		Use:   "demo [SCENARIO]",
		Short: "Triage a recorded incident: no cluster needed",
		Long: `demo runs the triage on an embedded scenario: a recorded incident (Kubernetes
and Istio objects, Envoy admin output, proxy and app logs, istiod sync status)
served from memory, so every probe runs as it would against a cluster.

With no argument it lists the scenarios and asks which one to open.`,
		Example: "  meshtriage demo\n  meshtriage demo startup-race",
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
			} else {
				picked, err := pickScenario(g.streams.In, g.streams.Out)
				if err != nil || picked == "" {
					return err
				}
				name = picked
			}
			return runDemo(ctx, g, name, logPath)
		},
	}
	cmd.Flags().StringVar(&logPath, "log", "", "incident log file (default: a new file under the meshtriage state directory)")
	return cmd
}

// pickScenario lists the scenarios; on a terminal it asks for one, otherwise
// it says how to name one and returns "".
func pickScenario(in io.Reader, out io.Writer) (string, error) {
	list, err := demoScenarios()
	if err != nil {
		return "", err
	}
	fmt.Fprintln(out, "Recorded incidents to triage (no cluster needed):")
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for i, s := range list {
		fmt.Fprintf(tw, "  %2d\t%s\t%s\n", i+1, s.Name, s.Title)
		story := s.Summary
		if story == "" {
			story = firstSentence(s.Description, 96)
		}
		fmt.Fprintf(tw, "  \t\t%s\n", story)
	}
	tw.Flush()
	fmt.Fprintln(out)
	if !isTerminal(in) {
		example := list[0].Name
		for _, s := range list {
			if s.Name == "startup-race" {
				example = s.Name
			}
		}
		fmt.Fprintln(out, "Open one with: meshtriage demo", example)
		return "", nil
	}
	br := bufio.NewReader(in)
	for {
		fmt.Fprintf(out, "Scenario [1-%d or name, empty to quit]: ", len(list))
		line, err := br.ReadString('\n')
		answer := strings.TrimSpace(line)
		if answer == "" {
			if err != nil && err != io.EOF {
				return "", err
			}
			return "", nil
		}
		if n, convErr := strconv.Atoi(answer); convErr == nil && n >= 1 && n <= len(list) {
			return list[n-1].Name, nil
		}
		for _, s := range list {
			if s.Name == answer {
				return s.Name, nil
			}
		}
		fmt.Fprintf(out, "no scenario %q\n", answer)
		if err != nil {
			return "", nil
		}
	}
}

// firstSentence is the opening of a scenario's story, cut to max runes.
func firstSentence(text string, max int) string {
	text = strings.Join(strings.Fields(text), " ")
	if i := strings.Index(text, ". "); i >= 0 {
		text = text[:i+1]
	}
	if r := []rune(text); len(r) > max {
		text = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return text
}

func demoScenarios() ([]*recorded.Scenario, error) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("this build embeds no scenarios")
	}
	var out []*recorded.Scenario
	for _, n := range names {
		s, err := recorded.Load(assets.FS, n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// runDemo opens the scenario in the TUI; without a terminal (a pipe, CI) it
// runs the unattended check instead and prints what it found.
func runDemo(ctx context.Context, g *globalOptions, name, logPath string) error {
	s, err := loadScenario(name)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	cluster, err := recorded.NewCluster(s)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	interactive := isTerminal(g.streams.In) && isTerminal(g.streams.Out)
	mode := runbook.ModeGuided
	if !interactive {
		mode = runbook.ModeAuto
	}
	sess, logw, err := newScenarioSession(s, cluster, mode, logPath)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	defer logw.Close()
	if interactive {
		return tui.Run(ctx, tui.Options{
			Engine:  engine.FromSession(sess),
			Context: cluster.Info().Context + " (scenario " + s.Name + ")",
			LogPath: logw.Path(),
		})
	}
	findings, err := sess.Auto(ctx)
	sess.End("completed")
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	if err := printDemoReport(g.streams.Out, s, sess, logw.Path()); err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	if len(findings) > 0 {
		return &exitError{code: exitFindings}
	}
	return nil
}

// newScenarioSession builds the runbook session for a scenario, recording to
// an incident log like a live triage.
func newScenarioSession(s *recorded.Scenario, c cluster.Cluster, mode runbook.Mode, logPath string) (*runbook.Session, *incidentlog.Writer, error) {
	graph, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		return nil, nil, err
	}
	id := incidentlog.NewSessionID()
	if logPath == "" {
		if logPath, err = incidentlog.DefaultPath(time.Now(), id); err != nil {
			return nil, nil, err
		}
	}
	logw, err := incidentlog.Open(logPath)
	if err != nil {
		return nil, nil, err
	}
	sess, err := runbook.NewSession(runbook.Config{
		Graph:     graph,
		Cluster:   c,
		Target:    s.Target,
		Probes:    probes.ByID(),
		Sinks:     []runbook.Sink{logw},
		User:      demoUser(),
		Mode:      mode,
		SessionID: id,
		Started: runbook.SessionStarted{
			KubeContext:   c.Info().Context,
			Server:        c.Info().Server,
			ServerVersion: s.ServerVersion,
			Tool:          version,
			Extra:         map[string]string{"scenario": s.Name},
		},
	})
	if err != nil {
		logw.Close()
		return nil, nil, err
	}
	return sess, logw, nil
}

func printDemoReport(out io.Writer, s *recorded.Scenario, sess *runbook.Session, logPath string) error {
	fmt.Fprintf(out, "scenario %s: %s\n\n", s.Name, s.Title)
	if err := report.Text(out, report.FromSession(sess)); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nincident log: %s\n(run in a terminal for the guided triage UI)\n", logPath)
	return nil
}

func demoUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// isTerminal reports whether f is an interactive terminal (not a pipe, a
// file or /dev/null).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}
