// Command meshlab runs the mesh lab by hand: `meshlab up` starts etcd, a
// kube-apiserver with the Istio CRDs and the fake kubelet, prints the
// kubeconfig to point kubectl or meshtriage at, and keeps running until
// Ctrl-C; `meshlab build` only builds (or finds) the cached kube-apiserver
// and istiod (pilot-discovery).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/lab"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: meshlab up [--dir DIR] [--scenario NAME] [--istiod]
                    start the lab (optionally loaded with a recorded scenario,
                    and with a real istiod),
                    print its kubeconfig, run until Ctrl-C
       meshlab build      build or reuse the cached kube-apiserver and istiod
                    (pilot-discovery), print their paths`)
}

func run(args []string) int {
	if len(args) == 0 {
		usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "build":
		start := time.Now()
		bin, err := lab.APIServerBinary(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "meshlab:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "kube-apiserver %s ready (%s)\n", lab.KubeVersion, time.Since(start).Round(time.Second))
		fmt.Println(bin)
		start = time.Now()
		if bin, err = lab.PilotDiscoveryBinary(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "meshlab:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "istiod (pilot-discovery) %s ready (%s)\n", lab.IstioRelease, time.Since(start).Round(time.Second))
		fmt.Println(bin)
		return 0
	case "up":
		fs := flag.NewFlagSet("up", flag.ContinueOnError)
		dir := fs.String("dir", "", "directory for data, certificates, logs and the kubeconfig (default: a temporary one, removed on exit)")
		name := fs.String("scenario", "", "load this recorded scenario (meshtriage demo lists them)")
		istiod := fs.Bool("istiod", false, "run a real istiod against the lab; with --scenario, its istiod pod is that istiod and its source pod's Envoy serves what istiod pushed")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		return up(ctx, *dir, *name, *istiod)
	default:
		usage()
		return 2
	}
}

func up(ctx context.Context, dir, name string, withIstiod bool) int {
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "meshlab: "+format+"\n", a...) }
	var s *recorded.Scenario
	if name != "" {
		var err error
		if s, err = recorded.Load(assets.FS, name); err != nil {
			fmt.Fprintln(os.Stderr, "meshlab:", err)
			return 1
		}
	}
	l, err := lab.Start(ctx, lab.Options{Dir: dir, Logf: logf})
	if err != nil {
		fmt.Fprintln(os.Stderr, "meshlab:", err)
		return 1
	}
	defer l.Stop()
	if s != nil {
		if _, err := lab.Apply(ctx, l, s); err != nil {
			fmt.Fprintln(os.Stderr, "meshlab:", err)
			return 1
		}
		t := s.Target
		from := ""
		if t.Source != nil {
			from = " --from " + t.Source.Namespace + "/pod/" + t.Source.Name
		}
		logf("scenario %s loaded: meshtriage check -n %s svc/%s%s", s.Name, t.Namespace, t.Service, from)
	}
	if withIstiod {
		i, err := lab.StartIstiod(ctx, l)
		if err != nil {
			fmt.Fprintln(os.Stderr, "meshlab:", err)
			return 1
		}
		defer i.Stop()
		logf("istiod log: %s", i.Log)
		if s != nil {
			sc, err := i.AttachScenario(ctx, s)
			if err != nil {
				fmt.Fprintln(os.Stderr, "meshlab:", err)
				return 1
			}
			if sc != nil {
				defer sc.Close()
				logf("%s's Envoy admin serves what istiod pushed to it", sc.Pod)
			}
		}
	}
	fmt.Printf("export KUBECONFIG=%s\n", l.Kubeconfig)
	logf("audit log: %s", l.AuditLog)
	logf("running; Ctrl-C stops etcd, kube-apiserver and the kubelet")
	<-ctx.Done()
	logf("stopping")
	return 0
}
