package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/runbook/report"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// checkOptions are the flags of `meshtriage check`.
type checkOptions struct {
	g            *globalOptions
	target       targetFlags
	inputFlags   // --manifests, --recording, --bug-report, --scenario (source.go)
	logPath      string
	output       string
	probeTimeout time.Duration
	// metricsWindow bounds the triage's wall time from below: every other
	// probe runs inside it (BENCHMARKS.md, latency).
	metricsWindow time.Duration
	// metricsWindowSet: --metrics-window was given; else a recording's
	// own sampling interval is used.
	metricsWindowSet bool
	// maxCallers bounds the caller search of a check without --from.
	maxCallers int
	verify     verifyFlags // --prometheus, --test-request, --debug-logging (watch.go)
}

func newCheckCmd(g *globalOptions) *cobra.Command {
	o := &checkOptions{g: g, output: "text", probeTimeout: probes.DefaultTimeout, maxCallers: callersearch.DefaultMax}
	cmd := &cobra.Command{
		Use:   "check svc/NAME [--port P] [--from pod/NAME]",
		Short: "Run the 503 runbook unattended and print the findings",
		Long: `check runs every probe of the 503 runbook against the target (read-only),
walks the runbook from every symptom and prints the causes the evidence
supports, with their evidence, fix directions and verification steps.

Without --from, check looks for the callers whose sidecars see the 503s
(Prometheus with --prometheus, the target's inbound access log, the target's
own pods when their calls fail, then meshed pods in the namespaces whose
rules name the host), triages from at most --max-callers of them as well as
from the service side, and says which callers each finding holds for.

Exit status: 0 the path was judged and found clean; 3 at least one finding
(including a failed step no cause explains), or no finding while
hypotheses are open (the checks that decide them could not run: the
report says what would settle them); 1 could not triage (bad input,
cluster unreachable, target unreadable); 130 interrupted (Ctrl-C), after
printing what had finished.`,
		Example: `  meshtriage check -n shop svc/payments --from pod/web-7d9c -o md
  meshtriage check -n shop svc/payments --port 8080 -f ./dump/ -f vs.yaml
  kubectl get -n shop all,endpointslices -o yaml | meshtriage check -n shop svc/payments -f -
  meshtriage check --recording capture.tar.gz
  meshtriage check -n shop svc/payments --from pod/web-7d9c --bug-report bug-report.tar.gz
  meshtriage check --scenario healthy -o json`,
		ValidArgsFunction: completeServices(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.metricsWindowSet = cmd.Flags().Changed("metrics-window")
			return o.run(cmd.Context(), args)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.target.port, "port", 0, "Service port the 503s are on (default: every port)")
	f.StringVar(&o.target.from, "from", "", "the calling pod whose sidecar reports the 503s: pod/NAME or NAMESPACE/pod/NAME (default: search for callers)")
	f.IntVar(&o.maxCallers, "max-callers", o.maxCallers, "without --from, triage from at most this many callers found by the search (0: none, the service side only)")
	o.inputFlags.add(f)
	f.StringVar(&o.logPath, "log", "", "also write the incident log (JSON Lines) to FILE")
	f.StringVarP(&o.output, "output", "o", o.output, "report format: "+strings.Join(report.Formats, ", "))
	f.DurationVar(&o.probeTimeout, "probe-timeout", o.probeTimeout, "deadline of each probe")
	f.DurationVar(&o.metricsWindow, "metrics-window", probes.ShortMetricsWindow, "time between the two samples of the sidecar's counters that give the current 503 rate, taken while the other checks run; longer sees a quiet service's rate, 0 skips the sampling (its rules stay undecided)")
	o.verify.add(f)
	_ = cmd.RegisterFlagCompletionFunc("from", completePods(g))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(report.Formats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func triageErr(format string, args ...any) error {
	return &exitError{code: exitTriage, err: fmt.Errorf(format, args...)}
}

func (o *checkOptions) run(ctx context.Context, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if !validReportFormat(o.output) {
		return triageErr("unknown output format %q (one of %s)", o.output, strings.Join(report.Formats, ", "))
	}
	if o.probeTimeout <= 0 {
		return triageErr("--probe-timeout must be positive")
	}
	if o.maxCallers < 0 {
		return triageErr("--max-callers must be 0 or more")
	}
	src, target, err := o.inputFlags.source(ctx, o.g, o.target, args)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	for _, line := range src.Skipped {
		fmt.Fprintln(o.g.streams.ErrOut, "meshtriage:", line)
	}
	if src.SamplesApart > 0 && !o.metricsWindowSet {
		o.metricsWindow = src.SamplesApart
	}
	if err := o.verify.validate(target, src.Runner); err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	ctx, interrupted, stop := notifyInterrupt(ctx)
	defer stop()
	tr, err := triage.Open(ctx, src, target, triage.Options{
		Mode:         runbook.ModeAuto,
		Probes:       o.probeRegistry(),
		ProbeTimeout: o.probeTimeout,
		LogPath:      o.logPath,
		Tool:         version,
	})
	if err != nil {
		return triageErr("%w", err)
	}
	defer tr.Close()
	if target.Source == nil && o.maxCallers > 0 {
		search := callersearch.Options{Max: o.maxCallers, Window: o.verify.prometheus.window}
		search.Prometheus.URL = o.verify.prometheus.url
		if _, err := tr.SearchCallers(ctx, search); err != nil && !interrupted() {
			tr.End("could not triage")
			return triageErr("%w", err)
		}
	}
	err = o.verify.run(ctx, depsOf(tr), o.g.streams.ErrOut, tr.Auto)
	if err != nil && !interrupted() {
		tr.End("could not triage")
		return &exitError{code: exitTriage, err: err}
	}
	rep := tr.Report()
	if o.metricsWindow == 0 {
		// Not sampled by choice: its rules stay undecided, and that is
		// what the on-call asked for.
		rep.Judge("metrics")
	}
	rep.Interrupted = interrupted()
	if rep.Interrupted {
		tr.End("interrupted")
	} else {
		tr.End("completed")
	}
	// The report is pasted into tickets and chats: it gets the same
	// redaction as the incident log.
	var out strings.Builder
	if err := report.Write(&out, rep, o.output); err != nil {
		return triageErr("write report: %w", err)
	}
	if _, err := io.WriteString(o.g.streams.Out, incidentlog.Redact(out.String())); err != nil {
		return triageErr("write report: %w", err)
	}
	if err := tr.Session.SinkErr(); err != nil {
		fmt.Fprintf(o.g.streams.ErrOut, "meshtriage: incident log %s: %v\n", tr.LogPath(), err)
	}
	if rep.Interrupted {
		// As a shell or kubectl does on SIGINT; the report above is what
		// had finished.
		return &exitError{code: exitInterrupted, err: errors.New("interrupted: the report holds the checks that had finished")}
	}
	notRun := report.ChecksNotRun(rep)
	ran := 0
	for _, n := range notRun {
		ran += n.Of - len(n.Steps)
	}
	if ran == 0 && len(rep.Findings) == 0 {
		return triageErr("no check could run: %s", rep.Steps[0].Summary)
	}
	if rep.Verdict == report.VerdictFindings {
		return &exitError{code: exitFindings}
	}
	// "No finding" is a claim about the checks that ran; at 3 a.m. it must
	// not hide the ones that could not.
	for _, n := range notRun {
		if len(n.Steps) == 0 {
			continue
		}
		who := "the service side"
		switch {
		case n.Caller != "":
			who = "caller " + n.Caller
		case rep.CallerSearch == nil:
			who = "this triage"
		}
		fmt.Fprintf(o.g.streams.ErrOut, "meshtriage: from %s, %d of %d checks of the path could not run: %s\n",
			who, len(n.Steps), n.Of, strings.Join(n.Steps, ", "))
	}
	if rep.Verdict == report.VerdictUndecided {
		// The path was not judged: that is no all-clear.
		return &exitError{code: exitFindings, err: fmt.Errorf("no finding, but %d open hypotheses: the checks that decide them could not run (the report says what would settle them)", len(rep.Hypotheses))}
	}
	return nil
}

// notifyInterrupt cancels ctx on the first SIGINT or SIGTERM and lets a
// second one kill the process as usual; interrupted says whether it came.
func notifyInterrupt(parent context.Context) (ctx context.Context, interrupted func() bool, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			got.Store(true)
			signal.Stop(sigs) // a second Ctrl-C kills at once
			cancel()
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, got.Load, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel()
		})
	}
}

func validReportFormat(f string) bool {
	for _, x := range report.Formats {
		if x == f {
			return true
		}
	}
	return false
}

// probeRegistry is the probes of this run, with the metrics window and the
// Prometheus server the flags give.
func (o *checkOptions) probeRegistry() map[string]probes.Probe {
	reg := o.verify.registry()
	window := o.metricsWindow
	if window == 0 {
		window = -1
	}
	reg["metrics"] = probes.MetricsProbe{Interval: window}
	return reg
}
