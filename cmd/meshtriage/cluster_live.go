package main

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// completionTimeout keeps a shell's TAB from hanging on a slow cluster.
const completionTimeout = 3 * time.Second

// liveOptions are the live client's options from the global flags.
func liveOptions(g *globalOptions) live.Options {
	return live.Options{ControlPlaneNamespace: g.controlPlaneNamespace, UserAgent: "meshtriage/" + version}
}

// liveSource connects to the cluster the kubeconfig flags select and checks
// that its API server answers; every failure is one line the on-call can
// act on.
func liveSource(ctx context.Context, g *globalOptions) (triage.Source, error) {
	return liveSourceWith(ctx, g, liveOptions(g))
}

// liveSourceWith is liveSource with the client's options; every command
// that reads a live cluster comes here, so --remote-contexts is
// validated and read by each.
func liveSourceWith(ctx context.Context, g *globalOptions, opts live.Options) (triage.Source, error) {
	if err := g.validateRemoteContexts(); err != nil {
		return triage.Source{}, err
	}
	return triage.LiveWithRemotes(ctx, g.kube, g.remoteContexts, opts)
}

// registerFlagCompletions completes the connection flags from the kubeconfig
// and the cluster, as kubectl does.
func registerFlagCompletions(root *cobra.Command, g *globalOptions) {
	_ = root.RegisterFlagCompletionFunc("namespace", completeNamespaces(g))
	_ = root.RegisterFlagCompletionFunc("istio-namespace", completeNamespaces(g))
	contexts := func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		raw, err := g.kube.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for n := range raw.Contexts {
			names = append(names, n)
		}
		sort.Strings(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	_ = root.RegisterFlagCompletionFunc("context", contexts)
	_ = root.RegisterFlagCompletionFunc("remote-contexts", contexts)
}

func completeNamespaces(g *globalOptions) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeFromCluster(g, func(ctx context.Context, c *live.Cluster) ([]string, error) {
			l, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var names []string
			for _, ns := range l.Items {
				names = append(names, ns.Name)
			}
			return withPrefix("", names, toComplete), nil
		})
	}
}

// completeServices completes a `svc/NAME` argument with the Services of the
// -n namespace; commands taking a target use it as ValidArgsFunction.
func completeServices(g *globalOptions) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeFromCluster(g, func(ctx context.Context, c *live.Cluster) ([]string, error) {
			l, err := c.Kube.CoreV1().Services(g.namespace()).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var names []string
			for _, s := range l.Items {
				names = append(names, s.Name)
			}
			return withPrefix("svc/", names, toComplete), nil
		})
	}
}

// completePods completes a `pod/NAME` flag value (the calling pod) with the
// pods of the -n namespace.
func completePods(g *globalOptions) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeFromCluster(g, func(ctx context.Context, c *live.Cluster) ([]string, error) {
			l, err := c.Kube.CoreV1().Pods(g.namespace()).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var names []string
			for _, p := range l.Items {
				names = append(names, p.Name)
			}
			return withPrefix("pod/", names, toComplete), nil
		})
	}
}

// completeFromCluster runs list against the live cluster with a short
// deadline; an error yields no completions rather than a stuck shell.
func completeFromCluster(g *globalOptions, list func(context.Context, *live.Cluster) ([]string, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := live.New(g.kube, liveOptions(g))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	names, err := list(ctx, c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// withPrefix returns kind+name for the names that match what the user typed,
// with or without the kind prefix.
func withPrefix(kind string, names []string, toComplete string) []string {
	typed := toComplete
	if i := strings.IndexByte(typed, '/'); i >= 0 {
		typed = typed[i+1:]
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, typed) {
			out = append(out, kind+n)
		}
	}
	sort.Strings(out)
	return out
}
