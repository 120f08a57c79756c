// Command latency measures what a remote cluster costs a triage: the lab's
// API server behind a proxy that adds a round-trip time (bench.DelayProxy),
// a full triage with a caller as `meshtriage check --metrics-window 0` runs
// it (in this process, through triage.Live and triage.Open), and, in the
// same run and through the same proxy, `istioctl proxy-config cluster POD`
// and `istioctl x describe pod POD`. lab/bench/latency.sh builds the
// binaries and runs it; BENCHMARKS.md has the figures and how the round
// trips are counted.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/lab"
	"github.com/meshtriage/meshtriage/lab/bench"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// Run is one measured run of one tool at one RTT.
type Run struct {
	WallMS   float64        `json:"wall_ms"`
	Conns    int64          `json:"connections"`
	Requests int            `json:"api_requests"`
	ByVerb   map[string]int `json:"by_resource,omitempty"`
	Exit     int            `json:"exit"`
	Outcome  string         `json:"outcome"`
	Load     float64        `json:"load1"`
}

// Result is every run of every tool, by RTT in milliseconds.
type Result struct {
	RTTs  []int                    `json:"rtts_ms"`
	Tools map[string]map[int][]Run `json:"tools"`
	// Timeline is the last in-process triage at the largest RTT, request
	// by request, as the API server's audit log saw it.
	Timeline []Received `json:"timeline"`
}

// showTimeline prints Result.Timeline.
var showTimeline bool

const (
	inProcess     = "triage with a caller, in-process (check --metrics-window 0)"
	checkBinary   = "meshtriage check (binary, default)"
	checkNoWindow = "meshtriage check --metrics-window 0 (binary)"
	proxyConfig   = "istioctl proxy-config cluster POD"
	describePod   = "istioctl x describe pod POD"

	inProcessUserAgent = "meshtriage-bench/latency"
)

var toolOrder = []string{inProcess, checkNoWindow, checkBinary, proxyConfig, describePod}

func main() {
	var (
		rtts       string
		runs       int
		scenario   string
		meshtriage string
		istioctl   string
		out        string
	)
	flag.StringVar(&rtts, "rtts", "0,50,100", "round-trip times to measure at, in milliseconds")
	flag.IntVar(&runs, "runs", 5, "runs of each tool at each RTT (interleaved)")
	flag.StringVar(&scenario, "scenario", "healthy", "embedded scenario whose target and caller are triaged")
	flag.StringVar(&meshtriage, "meshtriage", "", "meshtriage binary (empty: skip the binary runs)")
	flag.StringVar(&istioctl, "istioctl", "", "istioctl binary (empty: skip istioctl)")
	flag.StringVar(&out, "out", "", "also write every run as JSON to FILE")
	flag.BoolVar(&showTimeline, "timeline", false, "print when the API server received each request of the last in-process triage at the largest RTT")
	flag.Parse()
	var ms []int
	for _, s := range strings.Split(rtts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			fatalf("-rtts %q: %v", rtts, err)
		}
		ms = append(ms, n)
	}
	sort.Ints(ms)
	if len(ms) == 0 || ms[0] != 0 {
		fatalf("-rtts must include 0: the round trips are counted against it")
	}
	res, err := run(context.Background(), ms, runs, scenario, meshtriage, istioctl)
	if err != nil {
		fatalf("%v", err)
	}
	printResult(res)
	if showTimeline {
		printTimeline(res.Timeline)
	}
	if out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(out, b, 0o644); err != nil {
			fatalf("%v", err)
		}
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "latency: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s load %.2f  %s\n", time.Now().Format("15:04:05"), bench.LoadAvg(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, rtts []int, runs int, name, meshtriage, istioctl string) (Result, error) {
	s, err := recorded.Load(assets.FS, name)
	if err != nil {
		return Result{}, err
	}
	if s.Target.Source == nil {
		return Result{}, fmt.Errorf("scenario %s has no caller: the benchmark triages with one", name)
	}
	l, err := lab.Start(ctx, lab.Options{Logf: logf})
	if err != nil {
		return Result{}, err
	}
	defer l.Stop()
	if _, err := lab.Apply(ctx, l, s); err != nil {
		return Result{}, err
	}
	proxy, err := bench.NewDelayProxy(strings.TrimPrefix(l.Server, "https://"))
	if err != nil {
		return Result{}, err
	}
	defer proxy.Close()
	kubeconfig := filepath.Join(l.Dir, "kubeconfig-via-delay")
	if err := bench.WriteKubeconfigVia(l, proxy.Addr, kubeconfig); err != nil {
		return Result{}, err
	}
	m := &measurer{lab: l, proxy: proxy, kubeconfig: kubeconfig, scenario: s}
	res := Result{RTTs: rtts, Tools: map[string]map[int][]Run{}}
	add := func(tool string, rtt int, r Run) {
		if res.Tools[tool] == nil {
			res.Tools[tool] = map[int][]Run{}
		}
		res.Tools[tool][rtt] = append(res.Tools[tool][rtt], r)
	}
	src := s.Target.Source
	// A first, unmeasured triage warms what the runs do not measure
	// either: the API server's caches and this process's first use of the
	// clients.
	proxy.SetRTT(0)
	m.inProcess(ctx)
	for _, rtt := range rtts {
		proxy.SetRTT(time.Duration(rtt) * time.Millisecond)
		logf("RTT %d ms", rtt)
		for range runs {
			add(inProcess, rtt, m.inProcess(ctx))
			if meshtriage != "" {
				add(checkNoWindow, rtt, m.binary(ctx, meshtriage, append([]string{"check", "--metrics-window", "0"}, checkArgs(s)...)))
				add(checkBinary, rtt, m.binary(ctx, meshtriage, append([]string{"check"}, checkArgs(s)...)))
			}
			if istioctl != "" {
				add(proxyConfig, rtt, m.binary(ctx, istioctl, []string{"proxy-config", "cluster", src.Name, "-n", src.Namespace}))
				add(describePod, rtt, m.binary(ctx, istioctl, []string{"x", "describe", "pod", src.Name, "-n", src.Namespace}))
			}
		}
	}
	res.Timeline = m.timeline
	return res, nil
}

func checkArgs(s *recorded.Scenario) []string {
	t := s.Target
	args := []string{"-n", t.Namespace, "svc/" + t.Service, "-o", "json", "--from", t.Source.Namespace + "/pod/" + t.Source.Name}
	if t.Port != 0 {
		args = append(args, "--port", strconv.Itoa(int(t.Port)))
	}
	if s.ControlPlaneNamespace != "" {
		args = append(args, "--istio-namespace", s.ControlPlaneNamespace)
	}
	return args
}

type measurer struct {
	lab        *lab.Lab
	proxy      *bench.DelayProxy
	kubeconfig string
	scenario   *recorded.Scenario
	timeline   []Received // of the last in-process run
}

// inProcess is what `meshtriage check --metrics-window 0` does against a
// live cluster, from connecting to the findings: triage.Live (kubeconfig,
// client, reachability check), triage.Open, the session's one wave of
// probes and the runbook walk.
func (m *measurer) inProcess(ctx context.Context) Run {
	mark, err := bench.MarkAudit(m.lab)
	if err != nil {
		return Run{Outcome: err.Error()}
	}
	r := Run{Load: bench.LoadAvg()}
	m.proxy.ResetConns()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// A check is a new process with new connections; client-go would
	// otherwise hand this process's next triage the kept-alive connection
	// of the last one, whose handshakes were paid at another RTT.
	if err := closeIdleAPIConnections(m.kubeconfig); err != nil {
		return Run{Outcome: err.Error()}
	}
	start := time.Now()
	findings, err := triageOnce(ctx, m.kubeconfig, m.scenario)
	r.WallMS = ms(time.Since(start))
	r.Conns = m.proxy.Conns()
	if err != nil {
		r.Outcome, r.Exit = err.Error(), 1
	} else {
		r.Outcome = fmt.Sprintf("findings %v", findings)
	}
	req, aerr := bench.RequestsSince(m.lab, mark, func(ua string) bool { return strings.HasPrefix(ua, inProcessUserAgent) })
	if aerr != nil {
		r.Outcome += "; audit: " + aerr.Error()
	}
	r.Requests, r.ByVerb = req.Total, req.ByResource
	if m.timeline, aerr = timeline(m.lab, mark, start, inProcessUserAgent); aerr != nil {
		r.Outcome += "; audit: " + aerr.Error()
	}
	logf("in-process triage: %.0f ms, %d connections, %d API requests (%s): %s", r.WallMS, r.Conns, r.Requests, req.Top(8), r.Outcome)
	return r
}

// closeIdleAPIConnections closes the connections of the transport
// client-go shares between the clients of one kubeconfig (it caches
// transports by TLS config).
func closeIdleAPIConnections(kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	// The client's transport is client-go's wrapped round tripper, which
	// http.Client.CloseIdleConnections does not see through.
	utilnet.CloseIdleConnectionsFor(hc.Transport)
	return nil
}

func triageOnce(ctx context.Context, kubeconfig string, s *recorded.Scenario) ([]string, error) {
	flags := live.NewConfigFlags()
	flags.KubeConfig = &kubeconfig
	// As check sets it: the caller is known before connecting.
	src, err := triage.Live(ctx, flags, live.Options{
		ControlPlaneNamespace: s.ControlPlaneNamespace, UserAgent: inProcessUserAgent,
		Warmup: &live.Warmup{Caller: s.Target.Source},
	})
	if err != nil {
		return nil, err
	}
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: -1} // check --metrics-window 0
	tr, err := triage.Open(ctx, src, s.Target, triage.Options{
		Mode: runbook.ModeAuto, Probes: reg, ProbeTimeout: probes.DefaultTimeout, User: "bench",
	})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	findings, err := tr.Session.Auto(ctx)
	tr.Session.End("completed")
	if err != nil {
		return nil, err
	}
	causes := []string{}
	for _, f := range findings {
		causes = append(causes, f.Cause)
	}
	return causes, nil
}

func (m *measurer) binary(ctx context.Context, bin string, args []string) Run {
	mark, err := bench.MarkAudit(m.lab)
	if err != nil {
		return Run{Outcome: err.Error()}
	}
	r := Run{Load: bench.LoadAvg()}
	m.proxy.ResetConns()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", m.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+m.kubeconfig)
	u, err := bench.Run(cmd)
	r.WallMS, r.Conns, r.Exit = ms(u.Wall), m.proxy.Conns(), u.Exit
	if err != nil {
		r.Outcome = err.Error()
		return r
	}
	r.Outcome = outcome(filepath.Base(bin), u)
	req, aerr := bench.RequestsSince(m.lab, mark, func(ua string) bool {
		return !strings.HasPrefix(ua, "kube-apiserver") && !strings.HasPrefix(ua, inProcessUserAgent)
	})
	if aerr != nil {
		r.Outcome += "; audit: " + aerr.Error()
	}
	r.Requests, r.ByVerb = req.Total, req.ByResource
	logf("%s %s: %.0f ms, %d connections, %d API requests (%s), exit %d: %s",
		filepath.Base(bin), strings.Join(args[:2], " "), r.WallMS, r.Conns, r.Requests, req.Top(8), r.Exit, r.Outcome)
	return r
}

// outcome is a one-line account of what the tool said, so that no figure
// is reported for a run that failed.
func outcome(tool string, u bench.Usage) string {
	if strings.HasPrefix(tool, "meshtriage") && (u.Exit == 0 || u.Exit == 3) {
		var rep struct {
			Findings []struct{ Cause string }  `json:"findings"`
			Steps    []struct{ Status string } `json:"steps"`
		}
		if err := json.Unmarshal(u.Stdout, &rep); err != nil {
			return "report is not JSON: " + err.Error()
		}
		status := map[string]int{}
		for _, st := range rep.Steps {
			status[st.Status]++
		}
		causes := []string{}
		for _, f := range rep.Findings {
			causes = append(causes, f.Cause)
		}
		return fmt.Sprintf("findings %v, steps %v", causes, status)
	}
	text := strings.TrimSpace(string(u.Stdout) + "\n" + string(u.Stderr))
	lines := strings.Split(text, "\n")
	if len(lines) > 2 {
		lines = append(lines[:2], fmt.Sprintf("(+%d lines)", len(lines)-2))
	}
	return strings.Join(lines, " | ")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printResult prints one row per tool: the median wall time at each RTT,
// and the round trips on the critical path that the slope gives:
// (median at RTT r - median at 0) / r.
func printResult(res Result) {
	fmt.Println()
	header := "| tool |"
	sep := "|---|"
	for _, rtt := range res.RTTs {
		header += fmt.Sprintf(" wall ms at %d ms RTT (median; runs) |", rtt)
		sep += "---|"
	}
	for _, rtt := range res.RTTs[1:] {
		header += fmt.Sprintf(" round trips at %d ms |", rtt)
		sep += "---|"
	}
	header += " connections | API requests | outcome |"
	sep += "---|---|---|"
	fmt.Println(header)
	fmt.Println(sep)
	for _, tool := range toolOrder {
		byRTT := res.Tools[tool]
		if len(byRTT) == 0 {
			continue
		}
		row := "| " + tool + " |"
		medians := map[int]float64{}
		for _, rtt := range res.RTTs {
			var wall []float64
			for _, r := range byRTT[rtt] {
				wall = append(wall, r.WallMS)
			}
			medians[rtt] = bench.Median(wall)
			row += fmt.Sprintf(" %.0f; %s |", medians[rtt], joinF(wall))
		}
		for _, rtt := range res.RTTs[1:] {
			row += fmt.Sprintf(" %.1f |", (medians[rtt]-medians[0])/float64(rtt))
		}
		last := byRTT[res.RTTs[len(res.RTTs)-1]]
		var conns, reqs []int
		for _, r := range last {
			conns, reqs = append(conns, int(r.Conns)), append(reqs, r.Requests)
		}
		row += fmt.Sprintf(" %d | %d | %s |", bench.Median(conns), bench.Median(reqs), last[len(last)-1].Outcome)
		fmt.Println(row)
	}
}

func joinF(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'f', 0, 64))
	}
	return strings.Join(s, ", ")
}
