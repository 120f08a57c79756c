// Command dumpcmp parses one generated 100 MB Envoy config_dump (20,000
// clusters, probes/parse/envoy.GenerateConfigDump) with meshtriage's streaming
// decoder and with `istioctl proxy-config cluster -f`, each in a child
// process so wall time, CPU time and peak RSS are the process's own.
//
//	go run ./lab/bench/dumpcmp -istioctl "$(go run ./lab/bench/istioctlbin)"
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/lab"
	"github.com/meshtriage/meshtriage/lab/bench"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
)

const (
	clusters = 20_000
	size     = 100 << 20
	// target is one generated cluster's host, the one probes/parse/envoy's
	// benchmark matches.
	target = "svc-12345.ns-26.svc.cluster.local"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "decode" {
		os.Exit(decode(os.Args[2]))
	}
	istioctl := flag.String("istioctl", "", "istioctl binary (empty: meshtriage only)")
	runs := flag.Int("runs", 3, "runs of each")
	keep := flag.String("dump", "", "write the dump to FILE and keep it (default: a temp file, removed)")
	flag.Parse()
	if err := run(*istioctl, *runs, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "dumpcmp:", err)
		os.Exit(1)
	}
}

// decode is the child: meshtriage's streaming decode of the file, as the
// envoy-config probe runs it on a port-forwarded /config_dump body.
func decode(path string) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	d, err := envoy.StreamConfigDump(bufio.NewReaderSize(f, 64<<10), envoy.TargetMatcher(target, 0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%d dynamic clusters, %d matching %s\n", d.DynamicClusters, len(d.Clusters), target)
	if d.DynamicClusters != clusters || len(d.Clusters) != 1 {
		return 1
	}
	return 0
}

func run(istioctl string, runs int, keep string) error {
	ctx := context.Background()
	root, err := lab.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	data, err := envoy.GenerateConfigDump(filepath.Join(root, "probes", "envoy", "testdata"), clusters, size)
	if err != nil {
		return err
	}
	path := keep
	if path == "" {
		dir, err := os.MkdirTemp("", "dumpcmp-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "config_dump.json")
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	fileMB := float64(len(data)) / (1 << 20)
	data = nil
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dump: %s, %.1f MB, %d clusters; machine %d cores\n", path, fileMB, clusters, runtime.NumCPU())

	tools := []struct {
		name string
		argv []string
	}{
		{"meshtriage StreamConfigDump (one target)", []string{self, "decode", path}},
	}
	if istioctl != "" {
		tools = append(tools,
			struct {
				name string
				argv []string
			}{"istioctl proxy-config cluster -f (all clusters)", []string{istioctl, "proxy-config", "cluster", "-f", path}},
			struct {
				name string
				argv []string
			}{"istioctl proxy-config cluster -f --fqdn (one target)", []string{istioctl, "proxy-config", "cluster", "-f", path, "--fqdn", target}},
		)
	}
	type row struct {
		wall, cpu, rss, load []float64
		outcome              string
	}
	rows := make([]row, len(tools))
	// Interleaved, so load swings hit every tool alike.
	for i := range runs {
		for t, tool := range tools {
			load := bench.LoadAvg()
			cmd := exec.Command(tool.argv[0], tool.argv[1:]...)
			// istioctl -f reads no cluster; an empty kubeconfig makes sure.
			cmd.Env = append(os.Environ(), "KUBECONFIG="+os.DevNull)
			u, err := bench.Run(cmd)
			if err != nil {
				return fmt.Errorf("%s: %w", tool.name, err)
			}
			r := &rows[t]
			r.wall, r.cpu, r.rss, r.load = append(r.wall, ms(u.Wall)), append(r.cpu, ms(u.CPU)), append(r.rss, float64(u.MaxRSSKB)/1024), append(r.load, load)
			r.outcome = summary(u)
			fmt.Fprintf(os.Stderr, "run %d %s: %.0f ms wall, %.0f ms CPU, %.0f MB RSS, load %.2f, exit %d: %s\n",
				i+1, tool.name, ms(u.Wall), ms(u.CPU), float64(u.MaxRSSKB)/1024, load, u.Exit, r.outcome)
		}
	}
	fmt.Printf("\n## %.0f MB config_dump, %d clusters (%d runs each, interleaved)\n\n", fileMB, clusters, runs)
	fmt.Println("| tool | wall ms (median; runs) | CPU ms (median; runs) | peak RSS MB | RSS / file | load1 | output |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for t, tool := range tools {
		r := rows[t]
		fmt.Printf("| %s | %.0f; %s | %.0f; %s | %.0f | %.2fx | %.1f | %s |\n", tool.name,
			bench.Median(r.wall), join(r.wall), bench.Median(r.cpu), join(r.cpu), bench.Median(r.rss),
			bench.Median(r.rss)/fileMB, bench.Median(r.load), r.outcome)
	}
	if len(tools) > 1 {
		base := rows[0]
		fmt.Println()
		for t := 1; t < len(tools); t++ {
			r := rows[t]
			fmt.Printf("- %s vs meshtriage: wall %.1fx, CPU %.1fx, peak RSS %.1fx\n", tools[t].name,
				bench.Median(r.wall)/bench.Median(base.wall), bench.Median(r.cpu)/bench.Median(base.cpu), bench.Median(r.rss)/bench.Median(base.rss))
		}
	}
	return nil
}

func summary(u bench.Usage) string {
	out := strings.TrimSpace(string(u.Stdout))
	lines := strings.Split(out, "\n")
	s := fmt.Sprintf("%d lines", len(lines))
	if len(lines) > 0 {
		s += ": " + strings.Join(strings.Fields(lines[0]), " ")
	}
	if u.Exit != 0 {
		s = "exit " + strconv.Itoa(u.Exit) + ": " + strings.TrimSpace(string(u.Stderr)) + " " + s
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func join(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'f', 0, 64))
	}
	return strings.Join(s, ", ")
}
