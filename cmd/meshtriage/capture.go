package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// captureOptions are the flags of `meshtriage capture`.
type captureOptions struct {
	g             *globalOptions
	target        targetFlags
	output        string
	logPath       string
	probeTimeout  time.Duration
	metricsWindow time.Duration
	maxCallers    int

	// resolved by complete
	targetRef cluster.Target
	outPath   string
}

func newCaptureCmd(g *globalOptions) *cobra.Command {
	o := &captureOptions{g: g, probeTimeout: probes.DefaultTimeout, metricsWindow: probes.DefaultMetricsInterval, maxCallers: callersearch.DefaultMax}
	cmd := &cobra.Command{
		Use:   "capture svc/NAME [--port P] [--from pod/NAME] -o FILE.tar.gz",
		Short: "Triage unattended and keep what the probes read, to triage it again offline",
		Long: `capture runs check's triage against the cluster (read-only) and writes
everything its probes read into FILE.tar.gz: the objects, the Envoy admin
output of the calling pod's sidecar, bounded container logs, istiod's sync
status, and the reads that were refused. With --remote-contexts, what the
triage read of each remote cluster is recorded too, under
clusters/CONTEXT/ in the same layout, so that the replay reads the same
clusters. Credentials are redacted as in the
incident log. Anyone can then triage the same evidence offline, to the same
findings, with ` + "`meshtriage check --recording FILE.tar.gz`" + ` (or demo
--recording in the terminal UI). The layout is documented in the README,
so that a recording can also be assembled by hand.

Exit status: 0 the capture was written (whatever the triage found: its
findings are printed); 1 bad input, cluster unreachable, or the triage
stopped (the reads made until then are still written, and replay to the
same stop).`,
		Example: `  meshtriage capture -n shop svc/payments --from pod/web-7d9c -o payments-503.tar.gz
  meshtriage capture -n shop svc/orders --remote-contexts west -o orders-503.tar.gz
  meshtriage check --recording payments-503.tar.gz`,
		ValidArgsFunction: completeServices(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if err := o.complete(args); err != nil {
				return &exitError{code: exitTriage, err: err}
			}
			if err := o.validate(); err != nil {
				return &exitError{code: exitTriage, err: err}
			}
			return o.run(ctx)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.target.port, "port", 0, "Service port the 503s are on (default: every port)")
	f.StringVar(&o.target.from, "from", "", "the calling pod whose sidecar reports the 503s: pod/NAME or NAMESPACE/pod/NAME (default: search for callers, as check does)")
	f.IntVar(&o.maxCallers, "max-callers", o.maxCallers, "without --from, triage from at most this many callers found by the search; their reads are captured too")
	f.StringVarP(&o.output, "output", "o", "", "the recording to write: FILE.tar.gz (must not exist)")
	f.StringVar(&o.logPath, "log", "", "incident log file (default: a new file under the meshtriage state directory)")
	f.DurationVar(&o.probeTimeout, "probe-timeout", o.probeTimeout, "deadline of each probe")
	f.DurationVar(&o.metricsWindow, "metrics-window", o.metricsWindow, "time between the two samples of the sidecar's counters (both are recorded)")
	_ = cmd.RegisterFlagCompletionFunc("from", completePods(g))
	return cmd
}

// complete parses the target and resolves the output path.
func (o *captureOptions) complete(args []string) error {
	t, err := parseTarget(o.g.namespace(), args, o.target)
	if err != nil {
		return err
	}
	o.targetRef = t
	if o.output == "" {
		return errors.New("-o FILE.tar.gz: where to write the recording")
	}
	if o.outPath, err = filepath.Abs(o.output); err != nil {
		return fmt.Errorf("-o %s: %w", o.output, err)
	}
	return nil
}

// validate refuses, before any cluster read, what would fail after the
// whole triage: a recording is never written over a file.
func (o *captureOptions) validate() error {
	if !strings.HasSuffix(o.outPath, ".tar.gz") && !strings.HasSuffix(o.outPath, ".tgz") {
		return fmt.Errorf("-o %s: a recording is written as FILE.tar.gz", o.output)
	}
	if _, err := os.Stat(o.outPath); err == nil {
		return fmt.Errorf("-o %s: the file exists; a capture never replaces one (pick another name)", o.output)
	}
	if st, err := os.Stat(filepath.Dir(o.outPath)); err != nil || !st.IsDir() {
		return fmt.Errorf("-o %s: no folder %s to write it in", o.output, filepath.Dir(o.outPath))
	}
	if o.probeTimeout <= 0 {
		return errors.New("--probe-timeout must be positive")
	}
	if o.maxCallers < 0 {
		return errors.New("--max-callers must be 0 or more")
	}
	if o.metricsWindow <= 0 {
		return errors.New("--metrics-window must be positive: a capture records both samples of the counters")
	}
	return nil
}

func (o *captureOptions) run(ctx context.Context) error {
	// The output folder is checked to be writable before the triage.
	tmp, err := os.CreateTemp(filepath.Dir(o.outPath), ".meshtriage-capture-*.tar.gz")
	if err != nil {
		return triageErr("-o %s: %w", o.output, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()

	liveSrc, err := liveSource(ctx, o.g)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	src, rec := triage.Capture(liveSrc)
	src.Extra = map[string]string{"capture": o.outPath}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: o.metricsWindow}
	tr, err := triage.Open(ctx, src, o.targetRef, triage.Options{
		Mode:         runbook.ModeAuto,
		Probes:       reg,
		ProbeTimeout: o.probeTimeout,
		LogPath:      o.logPath,
		DefaultLog:   o.logPath == "",
		Tool:         version,
	})
	if err != nil {
		return triageErr("%w", err)
	}
	defer tr.Close()
	sess := tr.Session
	if o.targetRef.Source == nil && o.maxCallers > 0 {
		// The search's reads are recorded like the probes': a replay
		// without --from finds the same callers.
		if _, err := tr.SearchCallers(ctx, callersearch.Options{Max: o.maxCallers}); err != nil {
			return triageErr("%w", err)
		}
	}
	autoErr := tr.Auto(ctx)
	var found []string
	if autoErr == nil {
		for _, f := range tr.Report().Findings {
			found = append(found, f.Cause)
		}
	}

	// What was read is written even when the triage stopped (an
	// interrupt, a target that does not exist): it is the evidence of how
	// far it got, and replays to the same stop.
	s := rec.Scenario(o.targetRef, found)
	if err := o.write(tmp, s); err != nil {
		sess.End("capture not written")
		if autoErr != nil {
			return &exitError{code: exitTriage, err: fmt.Errorf("%w; and the capture could not be written: %v", autoErr, err)}
		}
		return &exitError{code: exitTriage, err: err}
	}
	if autoErr != nil {
		reason := "could not triage"
		if ctx.Err() != nil {
			reason = "interrupted"
		}
		sess.End(reason)
		return &exitError{code: exitTriage, err: fmt.Errorf("%w (the reads made until then are in %s)", autoErr, o.output)}
	}
	sess.End("completed")

	out, errOut := o.g.streams.Out, o.g.streams.ErrOut
	for _, u := range rec.Unrecorded() {
		fmt.Fprintf(errOut, "meshtriage: not in the recording (its layout has no file for it): %s\n", u)
	}
	if err := sess.SinkErr(); err != nil {
		fmt.Fprintf(errOut, "meshtriage: incident log %s: %v\n", tr.LogPath(), err)
	}
	fmt.Fprintf(out, "captured %s (context %s): %s\n", o.targetRef, tr.Cluster.Info().Context, summarizeCapture(s))
	for _, r := range s.Remotes {
		fmt.Fprintf(out, "captured remote cluster %s: %s\n", r.Context, summarizeCapture(r.Scenario))
	}
	fmt.Fprintf(out, "wrote %s (redacted)\n", o.output)
	if len(found) == 0 {
		fmt.Fprintln(out, "findings: none")
	} else {
		fmt.Fprintln(out, "findings:", strings.Join(found, ", "))
	}
	fmt.Fprintf(out, "triage it offline: meshtriage check --recording %s\n", o.output)
	if p := tr.LogPath(); p != "" {
		fmt.Fprintf(out, "incident log: %s\n", p)
	}
	return nil
}

// write writes s, redacted, to tmp and links it to the output path: a
// file that appeared there meanwhile is not replaced.
func (o *captureOptions) write(tmp *os.File, s *recorded.Scenario) error {
	files, err := s.Files(incidentlog.Redact)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	top := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(o.outPath), ".tar.gz"), ".tgz")
	if err := recorded.WriteArchive(tmp, top, files, time.Now()); err != nil {
		return fmt.Errorf("write %s: %w", o.output, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", o.output, err)
	}
	if err := os.Link(tmp.Name(), o.outPath); err != nil {
		return fmt.Errorf("write %s: %w", o.output, err)
	}
	return nil
}

// summarizeCapture counts what a recording holds.
func summarizeCapture(s *recorded.Scenario) string {
	envoy := 0
	for _, byPath := range s.Envoy {
		envoy += len(byPath)
	}
	istiod := len(s.Istiod)
	for _, byPath := range s.IstiodReplicas {
		istiod += len(byPath)
	}
	parts := []string{
		countOf(len(s.Objects), "object"),
		countOf(envoy, "Envoy admin response"),
		countOf(len(s.Logs), "container log"),
		countOf(istiod, "istiod response"),
	}
	if n := len(s.Failures); n > 0 {
		parts = append(parts, countOf(n, "refused or failed read")+" (recorded: they fail the same way offline)")
	}
	return strings.Join(parts, ", ")
}

func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
