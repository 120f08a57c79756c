package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/prometheus"
	"github.com/meshtriage/meshtriage/probes/watch"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/runbook/triage"
	tuiwatch "github.com/meshtriage/meshtriage/tui/watch"
)

// exitRegressed is watch's "the rollout regressed": the same code as check's
// findings, so a pipeline treats both as "look at this".
const exitRegressed = exitFindings

// watchOptions are the flags of `meshtriage watch`.
type watchOptions struct {
	g          *globalOptions
	service    string
	from       string
	prometheus promFlags
	timeout    time.Duration
	interval   time.Duration
	output     string
	// tui shows the rollout screen; set on a terminal only.
	tui func(ctx context.Context, cfg watch.Config) (watch.Report, error)
}

func newWatchCmd(g *globalOptions) *cobra.Command {
	o := &watchOptions{g: g, timeout: watch.DefaultTimeout, interval: watch.DefaultInterval, output: "text"}
	cmd := &cobra.Command{
		Use:   "watch deploy/NAME [--service svc/NAME] [--from pod/NAME]",
		Short: "Follow a rollout and fail when its new pods or the 503 rate regress",
		Long: `watch follows the new pods of a Deployment during a rollout (read-only: it
polls the Deployment and its pods) and reports, per new pod, the start order
of the app and Envoy, restarts within 60 s of creation and "connection
refused" at startup, and the Service's 503 rate before against during the
rollout (from the --from pod's sidecar, an upstream pod's sidecar, or
--prometheus). Each pod is watched at least 60 s after its creation.

Exit status: 0 no regression, 3 a regression (a pipeline gate), 1 could not
watch (bad input, unreachable cluster, the rollout did not settle within
--timeout).`,
		Example: `  kubectl apply -f orders.yaml && meshtriage watch -n shop deploy/orders --from pod/web-7d9c
  meshtriage watch -n shop deploy/orders --prometheus http://prometheus.istio-system:9090 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if isTerminal(g.streams.In) && isTerminal(g.streams.Out) {
				// The rollout screen while it runs; the report is printed
				// after it all the same, for the scrollback.
				o.tui = func(ctx context.Context, cfg watch.Config) (watch.Report, error) {
					return tuiwatch.Run(ctx, cfg, os.Getenv("NO_COLOR") != "")
				}
			}
			return o.run(ctx, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.service, "service", "", "the Service whose 503 rate is compared (default: the Service named like the Deployment)")
	f.StringVar(&o.from, "from", "", "a calling pod whose sidecar reports the 503s: pod/NAME or NAMESPACE/pod/NAME")
	o.prometheus.add(f, "ask this Prometheus server (http://HOST:9090) for the 503 rate before and during the rollout, instead of a sidecar", false)
	f.DurationVar(&o.timeout, "timeout", o.timeout, "give up when the rollout has not settled after this long")
	f.DurationVar(&o.interval, "interval", o.interval, "time between two polls of the Deployment and its pods")
	f.StringVarP(&o.output, "output", "o", o.output, "report format: text, json")
	_ = cmd.RegisterFlagCompletionFunc("from", completePods(g))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// parseDeployment accepts deploy/NAME, deployment/NAME, deployments/NAME.
func parseDeployment(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return "", fmt.Errorf("target %q: want deploy/NAME", arg)
	}
	switch strings.ToLower(kind) {
	case "deploy", "deployment", "deployments", "deployment.apps", "deployments.apps":
	default:
		return "", fmt.Errorf("target %q: watch follows Deployments, as deploy/NAME", arg)
	}
	if errs := validation.IsDNS1123Subdomain(name); name == "" || len(errs) > 0 {
		return "", fmt.Errorf("target %q: %q is not a Deployment name", arg, name)
	}
	return name, nil
}

func (o *watchOptions) run(ctx context.Context, arg string) error {
	if o.output != "text" && o.output != "json" {
		return triageErr("unknown output format %q (one of text, json)", o.output)
	}
	if o.timeout <= 0 || o.interval <= 0 {
		return triageErr("--timeout and --interval must be positive")
	}
	name, err := parseDeployment(arg)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	ns := o.g.namespace()
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return triageErr("namespace %q: %s", ns, errs[0])
	}
	var source *cluster.PodRef
	if o.from != "" {
		if source, err = parseFrom(ns, o.from); err != nil {
			return &exitError{code: exitTriage, err: err}
		}
	}
	svc := name
	if o.service != "" {
		if svc, err = parseService(o.service); err != nil {
			return &exitError{code: exitTriage, err: err}
		}
	}
	if err := o.prometheus.validate(); err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	src, err := liveSource(ctx, o.g)
	if err != nil {
		return &exitError{code: exitTriage, err: err}
	}
	c := src.Cluster
	deployments, ok := c.(watch.Deployments)
	if !ok {
		return triageErr("watch needs a live cluster")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := watch.Config{Cluster: c, Deployments: deployments, Namespace: ns, Deployment: name, Interval: o.interval, Timeout: o.timeout}
	target := cluster.Target{Namespace: ns, Service: svc, Source: source}
	meter, note := o.meter(ctx, c, target)
	cfg.Rates = meter
	if note != "" {
		fmt.Fprintln(o.g.streams.ErrOut, "meshtriage:", note)
	}

	var rep watch.Report
	if o.tui != nil && o.output == "text" {
		rep, err = o.tui(ctx, cfg)
	} else {
		progress := &progressPrinter{w: o.g.streams.ErrOut}
		cfg.OnReport = progress.print
		rep, err = watch.Watch(ctx, cfg)
	}
	if err != nil && !unsettled(err) {
		return &exitError{code: exitTriage, err: err}
	}
	if werr := writeWatchReport(o.g.streams.Out, rep, o.output); werr != nil {
		return triageErr("write report: %w", werr)
	}
	switch {
	case rep.Regressed():
		return &exitError{code: exitRegressed}
	case errors.Is(err, context.Canceled):
		return triageErr("interrupted before the rollout settled")
	case err != nil:
		return &exitError{code: exitTriage, err: err}
	}
	return nil
}

// unsettled: the watch ran but ended before the rollout settled (timeout,
// Ctrl-C); what it saw is still reported.
func unsettled(err error) bool {
	var te *watch.TimeoutError
	return errors.As(err, &te) || errors.Is(err, context.Canceled)
}

// meter picks how the 503 rate is measured: Prometheus when given, else the
// sidecar metrics of the --from pod or of an upstream pod. No Service, no
// rate: the pods are still judged.
func (o *watchOptions) meter(ctx context.Context, c cluster.Cluster, t cluster.Target) (watch.RateMeter, string) {
	rctx, cancel := context.WithTimeout(ctx, triage.ReachTimeout)
	defer cancel()
	if _, err := c.GetService(rctx, t.Namespace, t.Service); err != nil {
		if apierrors.IsNotFound(err) && o.service == "" {
			return nil, fmt.Sprintf("no Service %s in %s: give --service svc/NAME to compare its 503 rate", t.Service, t.Namespace)
		}
		return nil, "503 rate not measured: " + cluster.AccessProblem("get service "+t.Namespace+"/"+t.Service, err)
	}
	if o.prometheus.url != "" {
		return &watch.PrometheusMeter{Prom: prometheus.Client{URL: o.prometheus.url}, Target: t, Window: o.prometheus.window}, ""
	}
	note := ""
	if t.Source == nil {
		note = "no --from pod: the 503 rate is read from one upstream pod's sidecar, which sees only its share; --from or --prometheus give the callers' view"
	}
	return &watch.SidecarMeter{Cluster: c, Target: t}, note
}

// progressPrinter prints a line when a new pod's verdict or the rollout's
// state changes, so a pipeline log shows the rollout as it goes.
type progressPrinter struct {
	w    io.Writer
	seen map[string]string
}

func (p *progressPrinter) print(r watch.Report) {
	if p.seen == nil {
		p.seen = map[string]string{}
	}
	if msg := r.Rollout.Message; msg != "" && p.seen[""] != msg {
		p.seen[""] = msg
		fmt.Fprintf(p.w, "meshtriage: [%s] %s/%s: %s\n", r.Elapsed, r.Namespace, r.Deployment, msg)
	}
	for _, pod := range r.Pods {
		state := fmt.Sprintf("%s ready=%v restarts=%d %s %s", pod.Phase, pod.Ready, pod.Restarts, pod.StartOrder, pod.Verdict)
		if p.seen[pod.Name] != state {
			p.seen[pod.Name] = state
			fmt.Fprintf(p.w, "meshtriage: [%s] pod %s: %s\n", r.Elapsed, pod.Name, state)
		}
	}
}

func writeWatchReport(w io.Writer, r watch.Report, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rollout of deploy/%s in %s: %s (watched %s)\n", r.Deployment, r.Namespace, r.Rollout.Message, r.Elapsed)
	if r.Rollout.Failed != "" {
		fmt.Fprintf(&b, "  %s\n", r.Rollout.Failed)
	}
	if len(r.Pods) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\nNEW POD\tSIDECAR\tSTART ORDER\tRESTARTS\tEARLY RESTART\tCONN REFUSED\tVERDICT")
		for _, p := range r.Pods {
			name := p.Name
			if p.Gone {
				name += " (gone)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", name, p.Sidecar, p.StartOrder, p.Restarts, yesNo(p.EarlyRestart), yesNo(p.ConnectionRefused), p.Verdict)
		}
		_ = tw.Flush()
	}
	b.WriteString("\n")
	switch {
	case r.Before != nil || r.During != nil:
		fmt.Fprintf(&b, "503 rate: before %s; during %s\n", r.Before, r.During)
	}
	if r.RateProblem != "" {
		fmt.Fprintf(&b, "503 rate: %s\n", r.RateProblem)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	if r.Regressed() {
		b.WriteString("REGRESSED:\n")
		for _, line := range r.Regressions {
			fmt.Fprintf(&b, "  - %s\n", line)
		}
	} else if r.Settled {
		b.WriteString("PASS: no regression\n")
	} else {
		b.WriteString("NOT SETTLED: no regression seen so far\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ---------------------------------------------------------------------------
// Shared with check: --prometheus, and the explicit actions --test-request
// and --debug-logging. check calls verifyFlags.add on its flag set, uses
// registry() for the session's probes and wraps its triage in run().

// promFlags are --prometheus and its windows.
type promFlags struct {
	url    string
	window time.Duration
	before time.Duration
}

// add registers the flags; baseline adds --prometheus-before, which watch
// does not need (its baseline is the rollout's start).
func (p *promFlags) add(f *pflag.FlagSet, usage string, baseline bool) {
	f.StringVar(&p.url, "prometheus", "", usage)
	f.DurationVar(&p.window, "prometheus-window", prometheus.DefaultWindow, "the rate() window of the Prometheus queries")
	p.before = probes.DefaultPrometheusBefore
	if baseline {
		f.DurationVar(&p.before, "prometheus-before", probes.DefaultPrometheusBefore, "how far back the Prometheus baseline is read")
	}
}

func (p *promFlags) validate() error {
	if p.url == "" {
		return nil
	}
	if !strings.HasPrefix(p.url, "http://") && !strings.HasPrefix(p.url, "https://") {
		return fmt.Errorf("--prometheus %q: want an http(s) URL such as http://prometheus.istio-system:9090", p.url)
	}
	if p.window <= 0 || p.before <= 0 {
		return errors.New("--prometheus-window and --prometheus-before must be positive")
	}
	return nil
}

// verifyFlags are check's opt-in flags beyond the read-only triage.
type verifyFlags struct {
	prometheus   promFlags
	testRequest  string
	debugLogging time.Duration
}

func (v *verifyFlags) add(f *pflag.FlagSet) {
	v.prometheus.add(f, "also ask this Prometheus server (http://HOST:9090) the 503 rate, now against --prometheus-before", true)
	f.StringVar(&v.testRequest, "test-request", "", "after the triage, send one GET PATH to the target from the --from pod, through its sidecar, and show status, Envoy flags and timing")
	f.DurationVar(&v.debugLogging, "debug-logging", 0, "after the triage, set the --from pod's Envoy connection/upstream/http loggers to debug for DURATION, show the lines they log, and revert")
}

// registry is the probe registry with the Prometheus probe given its URL.
func (v *verifyFlags) registry() map[string]probes.Probe {
	reg := probes.ByID()
	if v.prometheus.url != "" {
		reg["prometheus"] = probes.PrometheusProbe{URL: v.prometheus.url, Window: v.prometheus.window, Before: v.prometheus.before}
	}
	return reg
}

func (v *verifyFlags) any() bool {
	return v.testRequest != "" || v.debugLogging != 0
}

// validate checks the flags before anything runs: an action needs a source
// pod and a live cluster (a Runner), and a bounded window.
func (v *verifyFlags) validate(t cluster.Target, runner actions.Runner) error {
	if err := v.prometheus.validate(); err != nil {
		return err
	}
	if !v.any() {
		return nil
	}
	if t.Source == nil {
		return errors.New("--test-request and --debug-logging act on the calling pod's sidecar: give --from pod/NAME")
	}
	if v.debugLogging < 0 || v.debugLogging > actions.MaxDebugDuration {
		return fmt.Errorf("--debug-logging %s: want at most %s", v.debugLogging, actions.MaxDebugDuration)
	}
	if runner == nil {
		return fmt.Errorf("--test-request and --debug-logging: %w", actions.ErrNeedsLive)
	}
	return nil
}

// actionDeps is what check's actions need of the open triage.
type actionDeps struct {
	cluster cluster.Cluster // the session's reads
	target  cluster.Target
	runner  actions.Runner
	record  actions.Recorder
	// start makes sure the session is started before an action is
	// recorded, so the log opens with session_started.
	start func()
}

// depsOf is tr's actionDeps.
func depsOf(tr *triage.Triage) actionDeps {
	return actionDeps{cluster: tr.Cluster, target: tr.Target, runner: tr.Source.Runner, record: tr.Record,
		start: func() { _ = tr.Session.Start("") }} // already started by the triage: a no-op error then
}

// run runs triage, then what was asked for beyond it: the Prometheus
// question, and debug logging on the source
// sidecar for its window, with the test request sent inside it so its
// debug lines are captured. The triage runs first so that the debug lines
// do not crowd the access log the probes read. Action failures are printed
// and recorded; they do not fail the triage.
func (v *verifyFlags) run(ctx context.Context, d actionDeps, errOut io.Writer, triage func(context.Context) error) error {
	if err := triage(ctx); err != nil {
		return err
	}
	c, t := d.cluster, d.target
	if v.prometheus.url != "" {
		// The runbook has no step for it yet: shown beside the report.
		res := probes.Run(ctx, v.registry()["prometheus"], c, t)
		fmt.Fprintf(errOut, "meshtriage: prometheus %s: %s\n", res.Status, res.Summary)
		if len(res.Evidence.Rows) > 0 {
			tw := tabwriter.NewWriter(errOut, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  "+strings.Join(res.Evidence.Columns, "\t"))
			for _, row := range res.Evidence.Rows {
				fmt.Fprintln(tw, "  "+strings.Join(row, "\t"))
			}
			_ = tw.Flush()
		}
	}
	if !v.any() {
		return nil
	}
	runner := d.runner
	if runner == nil {
		fmt.Fprintln(errOut, "meshtriage:", actions.ErrNeedsLive)
		return nil
	}
	d.start()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rec := d.record
	uncached := cluster.Uncached(c)
	testRequest := func(ctx context.Context) {
		if v.testRequest == "" {
			return
		}
		url, err := actions.TestURL(ctx, c, t, v.testRequest)
		if err != nil {
			fmt.Fprintln(errOut, "meshtriage: test request:", err)
			return
		}
		resp, err := actions.SendTestRequest(ctx, uncached, runner, actions.TestRequest{Source: *t.Source, URL: url}, rec)
		if err != nil {
			fmt.Fprintln(errOut, "meshtriage: test request:", err)
			return
		}
		fmt.Fprintf(errOut, "meshtriage: test request from %s (container %s): %s\n", t.Source, resp.Container, incidentlog.Redact(resp.Summary()))
		fmt.Fprint(errOut, indent(incidentlog.Redact(resp.Transcript()), "  "))
	}
	if v.debugLogging == 0 {
		testRequest(ctx)
		return nil
	}
	fmt.Fprintf(errOut, "meshtriage: Envoy debug logging on %s for %s (connection, upstream, http); Ctrl-C reverts early\n", t.Source, v.debugLogging)
	capture, err := actions.RunDebugLogging(ctx, uncached, runner, actions.DebugLogging{Pod: *t.Source}, v.debugLogging, rec, testRequest)
	if err != nil {
		fmt.Fprintln(errOut, "meshtriage: debug logging:", oneLine(err.Error()))
		return nil
	}
	printCapture(errOut, capture)
	return nil
}

// shownDebugLines bounds what is printed; the incident log keeps them all.
const shownDebugLines = 200

func printCapture(w io.Writer, c actions.DebugCapture) {
	fmt.Fprintf(w, "meshtriage: debug logging reverted after %s: %d log lines, %d at debug\n", c.Duration, len(c.Lines), c.DebugLines)
	if c.LogProblem != "" {
		fmt.Fprintln(w, "meshtriage:", c.LogProblem)
	}
	lines := c.Lines
	if len(lines) > shownDebugLines {
		fmt.Fprintf(w, "  ... %d earlier lines in the incident log (--log)\n", len(lines)-shownDebugLines)
		lines = lines[len(lines)-shownDebugLines:]
	}
	// Envoy's http logger prints request headers at debug: the terminal
	// gets the incident log's redaction.
	for _, l := range lines {
		fmt.Fprintln(w, "  "+incidentlog.Redact(l))
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}
