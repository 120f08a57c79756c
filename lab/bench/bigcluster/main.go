// Command bigcluster measures one `meshtriage check` on a large generated
// cluster in the mesh lab, and `istioctl analyze` on the same cluster: wall
// time, CPU time, API requests (from the audit log), bytes read from the API
// server (through a counting proxy) and peak RSS, at each cluster size.
// lab/bench/bigcluster.sh builds the binaries and runs it; BENCHMARKS.md has
// the figures.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/lab"
	"github.com/meshtriage/meshtriage/lab/bench"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

type options struct {
	sizes      []int
	namespaces int
	workers    int
	runs       int
	scenario   string
	meshtriage string
	istioctl   string
	waitFor    time.Duration
	out        string
}

// Run is one measured run of one tool.
type Run struct {
	WallMS   float64        `json:"wall_ms"`
	CPUMS    float64        `json:"cpu_ms,omitempty"`
	MaxRSSMB float64        `json:"max_rss_mb,omitempty"`
	Requests int            `json:"requests"`
	ByVerb   map[string]int `json:"by_resource"`
	URIs     []string       `json:"uris"`
	BytesIn  int64          `json:"bytes_from_apiserver"`
	BytesOut int64          `json:"bytes_to_apiserver"`
	Exit     int            `json:"exit"`
	Outcome  string         `json:"outcome"`
	Load     float64        `json:"load1"`
}

// Size is every measurement at one cluster size.
type Size struct {
	Pods, Services, Namespaces int
	Objects                    int64   `json:"objects_created"`
	SetupS                     float64 `json:"setup_s"`
	SetupLoad                  float64 `json:"setup_load1"`
	Tools                      map[string][]Run
}

func main() {
	var o options
	var sizes string
	flag.StringVar(&sizes, "sizes", "1000,10000", "generated pod counts to measure at, ascending")
	flag.IntVar(&o.namespaces, "namespaces", 50, "namespaces the generated services spread over (the target's is one)")
	flag.IntVar(&o.workers, "workers", 16, "concurrent creators")
	flag.IntVar(&o.runs, "runs", 3, "runs of each tool at each size")
	flag.StringVar(&o.scenario, "scenario", "healthy", "embedded scenario that holds the target")
	flag.StringVar(&o.meshtriage, "meshtriage", "", "meshtriage binary (required)")
	flag.StringVar(&o.istioctl, "istioctl", "", "istioctl binary (empty: skip istioctl analyze)")
	flag.DurationVar(&o.waitFor, "wait-istioctl", 0, "wait this long for the -istioctl binary to appear (a build still running) before the first measurement")
	flag.StringVar(&o.out, "out", "", "also write the results as JSON to FILE")
	flag.Parse()
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fatalf("-sizes %q: %v", sizes, err)
		}
		o.sizes = append(o.sizes, n)
	}
	if o.meshtriage == "" {
		fatalf("-meshtriage is required")
	}
	if err := run(context.Background(), o); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bigcluster: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s load %.2f  %s\n", time.Now().Format("15:04:05"), bench.LoadAvg(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) error {
	s, err := recorded.Load(assets.FS, o.scenario)
	if err != nil {
		return err
	}
	l, err := lab.Start(ctx, lab.Options{Logf: logf})
	if err != nil {
		return err
	}
	defer l.Stop()
	if _, err := lab.Apply(ctx, l, s); err != nil {
		return err
	}
	logf("scenario %s applied: target %s", s.Name, s.Target)

	proxy, err := bench.NewCountingProxy(strings.TrimPrefix(l.Server, "https://"))
	if err != nil {
		return err
	}
	defer proxy.Close()
	kubeconfig := filepath.Join(l.Dir, "kubeconfig-via-proxy")
	if err := bench.WriteKubeconfigVia(l, proxy.Addr, kubeconfig); err != nil {
		return err
	}

	pop, err := newPopulator(l, s.Target.Namespace, o.namespaces, o.workers)
	if err != nil {
		return err
	}
	if err := pop.namespaces(ctx); err != nil {
		return err
	}
	m := &measurer{lab: l, proxy: proxy, kubeconfig: kubeconfig, scenario: s}
	var results []Size
	for _, pods := range o.sizes {
		logf("growing to %d pods (%d services) with %d workers", pods, pods/podsPerService, o.workers)
		before := pop.created.Load()
		stop := make(chan struct{})
		go pop.progress(logf, stop)
		start := time.Now()
		err := pop.growTo(ctx, pods)
		close(stop)
		if err != nil {
			return err
		}
		size := Size{
			Pods: pods, Services: pods / podsPerService, Namespaces: o.namespaces,
			Objects: pop.created.Load() - before, SetupS: time.Since(start).Seconds(), SetupLoad: bench.LoadAvg(),
			Tools: map[string][]Run{},
		}
		logf("grew to %d pods: %d objects in %.1f s (%.0f/s)", pods, size.Objects, size.SetupS, float64(size.Objects)/size.SetupS)
		if o.istioctl != "" {
			if err := waitExecutable(ctx, o.istioctl, o.waitFor); err != nil {
				return err
			}
		}
		args := checkArgs(s)
		for range o.runs {
			size.Tools["meshtriage check"] = append(size.Tools["meshtriage check"],
				m.binary(ctx, o.meshtriage, append([]string{"--kubeconfig", kubeconfig, "check"}, args...), isMeshtriage))
			size.Tools["meshtriage check --metrics-window 0"] = append(size.Tools["meshtriage check --metrics-window 0"],
				m.binary(ctx, o.meshtriage, append([]string{"--kubeconfig", kubeconfig, "check", "--metrics-window", "0"}, args...), isMeshtriage))
			size.Tools["meshtriage check, in-process, metrics wait 0"] = append(size.Tools["meshtriage check, in-process, metrics wait 0"],
				m.inProcess(ctx, time.Millisecond))
			if o.istioctl != "" {
				size.Tools["istioctl analyze"] = append(size.Tools["istioctl analyze"],
					m.binary(ctx, o.istioctl, []string{"--kubeconfig", kubeconfig, "analyze", "-n", s.Target.Namespace}, isOther))
			}
		}
		printSize(size)
		results = append(results, size)
	}
	if o.out != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		return os.WriteFile(o.out, b, 0o644)
	}
	return nil
}

func waitExecutable(ctx context.Context, path string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for logged := false; ; logged = true {
		if st, err := os.Stat(path); err == nil && st.Mode()&0o111 != 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not there after %s", path, wait)
		}
		if !logged {
			logf("waiting up to %s for %s", wait, path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
}

func checkArgs(s *recorded.Scenario) []string {
	t := s.Target
	args := []string{"-n", t.Namespace, "svc/" + t.Service, "-o", "json"}
	if t.Port != 0 {
		args = append(args, "--port", strconv.Itoa(int(t.Port)))
	}
	if t.Source != nil {
		args = append(args, "--from", t.Source.Namespace+"/pod/"+t.Source.Name)
	}
	if s.ControlPlaneNamespace != "" {
		args = append(args, "--istio-namespace", s.ControlPlaneNamespace)
	}
	return args
}

const inProcessUserAgent = "meshtriage-bench/in-process"

func isMeshtriage(ua string) bool { return strings.HasPrefix(ua, "meshtriage/") }

// isOther keeps every client but the bench's own and the API server's
// loopback one: during a measured run nothing else talks to the lab.
func isOther(ua string) bool {
	return !strings.HasPrefix(ua, benchUserAgent) && !strings.HasPrefix(ua, "kube-apiserver") && !strings.HasPrefix(ua, inProcessUserAgent)
}

type measurer struct {
	lab        *lab.Lab
	proxy      *bench.CountingProxy
	kubeconfig string
	scenario   *recorded.Scenario
}

func (m *measurer) binary(ctx context.Context, bin string, args []string, keep func(string) bool) Run {
	mark, err := bench.MarkAudit(m.lab)
	if err != nil {
		return Run{Outcome: err.Error()}
	}
	load := bench.LoadAvg()
	m.proxy.Reset()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+m.kubeconfig)
	u, err := bench.Run(cmd)
	down, up, _ := m.proxy.Counts()
	r := Run{
		WallMS: ms(u.Wall), CPUMS: ms(u.CPU), MaxRSSMB: float64(u.MaxRSSKB) / 1024,
		BytesIn: down, BytesOut: up, Exit: u.Exit, Load: load,
	}
	if err != nil {
		r.Outcome = err.Error()
		return r
	}
	r.Outcome = outcome(filepath.Base(bin), u)
	req, err := bench.RequestsSince(m.lab, mark, keep)
	if err != nil {
		r.Outcome += "; audit: " + err.Error()
	}
	r.Requests, r.ByVerb, r.URIs = req.Total, req.ByResource, req.URIs
	logf("%s %s: %.0f ms wall, %.0f ms CPU, %.0f MB RSS, %d requests (%s), %d bytes in, exit %d: %s",
		filepath.Base(bin), args[2], r.WallMS, r.CPUMS, r.MaxRSSMB, r.Requests, req.Top(6), r.BytesIn, r.Exit, r.Outcome)
	return r
}

// outcome is a one-line account of what the tool said, so a figure is never
// reported for a run that failed.
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
		var causes []string
		for _, f := range rep.Findings {
			causes = append(causes, f.Cause)
		}
		return fmt.Sprintf("findings %v, steps %v", causes, status)
	}
	out := strings.TrimSpace(string(u.Stdout) + "\n" + string(u.Stderr))
	lines := strings.Split(out, "\n")
	if len(lines) > 3 {
		lines = append(lines[:3], fmt.Sprintf("(+%d lines)", len(lines)-3))
	}
	return strings.Join(lines, " | ")
}

// inProcess runs the triage check runs, in this process, with the metrics
// probe's wait between its two samples set to wait: what the triage costs
// apart from the fixed sampling window.
func (m *measurer) inProcess(ctx context.Context, wait time.Duration) Run {
	mark, err := bench.MarkAudit(m.lab)
	if err != nil {
		return Run{Outcome: err.Error()}
	}
	r := Run{Load: bench.LoadAvg()}
	m.proxy.Reset()
	start := time.Now()
	findings, err := inProcessCheck(ctx, m.kubeconfig, m.scenario, wait)
	r.WallMS = ms(time.Since(start))
	time.Sleep(200 * time.Millisecond) // bytes still in flight on kept-alive connections
	r.BytesIn, r.BytesOut, _ = m.proxy.Counts()
	if err != nil {
		r.Outcome = err.Error()
	} else {
		r.Outcome = fmt.Sprintf("findings %v", findings)
	}
	req, aerr := bench.RequestsSince(m.lab, mark, func(ua string) bool { return strings.HasPrefix(ua, inProcessUserAgent) })
	if aerr != nil {
		r.Outcome += "; audit: " + aerr.Error()
	}
	r.Requests, r.ByVerb, r.URIs = req.Total, req.ByResource, req.URIs
	logf("in-process check (metrics wait %s): %.0f ms wall, %d requests (%s), %d bytes in: %s", wait, r.WallMS, r.Requests, req.Top(6), r.BytesIn, r.Outcome)
	return r
}

// inProcessCheck is what `meshtriage check` does against a live cluster, with the
// metrics probe's interval replaced.
func inProcessCheck(ctx context.Context, kubeconfig string, s *recorded.Scenario, wait time.Duration) ([]string, error) {
	flags := live.NewConfigFlags()
	flags.KubeConfig = &kubeconfig
	c, err := live.New(flags, live.Options{ControlPlaneNamespace: s.ControlPlaneNamespace, UserAgent: inProcessUserAgent})
	if err != nil {
		return nil, err
	}
	if _, err := c.ServerVersion(ctx); err != nil {
		return nil, err
	}
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: wait}
	tr, err := triage.Open(ctx, triage.LiveSource(c), s.Target, triage.Options{
		Mode: runbook.ModeAuto, Probes: reg, ProbeTimeout: probes.DefaultTimeout, User: "bench",
	})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	sess := tr.Session
	findings, err := sess.Auto(ctx)
	sess.End("completed")
	if err != nil {
		return nil, err
	}
	causes := []string{}
	for _, f := range findings {
		causes = append(causes, f.Cause)
	}
	return causes, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func printSize(s Size) {
	fmt.Printf("\n## %d pods, %d services, %d namespaces (setup: %d objects in %.1f s, %.0f/s, load %.2f)\n\n",
		s.Pods, s.Services, s.Namespaces, s.Objects, s.SetupS, float64(s.Objects)/s.SetupS, s.SetupLoad)
	fmt.Println("| tool | wall ms (median; runs) | CPU ms | peak RSS MB | API requests | bytes from API server | load1 | outcome |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, name := range []string{"meshtriage check", "meshtriage check --metrics-window 0", "meshtriage check, in-process, metrics wait 0", "istioctl analyze"} {
		runs := s.Tools[name]
		if len(runs) == 0 {
			continue
		}
		var wall, cpu, rss, load []float64
		var reqs []int
		var bytesIn []int64
		for _, r := range runs {
			wall, cpu, rss, load = append(wall, r.WallMS), append(cpu, r.CPUMS), append(rss, r.MaxRSSMB), append(load, r.Load)
			reqs, bytesIn = append(reqs, r.Requests), append(bytesIn, r.BytesIn)
		}
		// In-process runs share the process with the lab's fake kubelet:
		// their CPU and RSS are not the triage's own.
		cpuCol, rssCol := "n/a", "n/a"
		if bench.Median(rss) > 0 {
			cpuCol, rssCol = fmt.Sprintf("%.0f", bench.Median(cpu)), fmt.Sprintf("%.0f", bench.Median(rss))
		}
		fmt.Printf("| %s | %.0f; %s | %s | %s | %d | %d | %.1f | %s |\n", name,
			bench.Median(wall), joinF(wall), cpuCol, rssCol, bench.Median(reqs), bench.Median(bytesIn),
			bench.Median(load), runs[len(runs)-1].Outcome)
	}
}

func joinF(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'f', 0, 64))
	}
	return strings.Join(s, ", ")
}
