package callersearch

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// The caller search across the clusters of a multi-cluster mesh
// (--remote-contexts): the target Service has the same namespace and name
// in every cluster, and a caller's 503s may be logged by a remote
// replica, or come from a pod of another cluster. Each remote is read
// through its own client, and whatever is found there keeps its context:
// the triage's probes read the caller through the current cluster, so a
// remote pod is never read as the triage's caller.

// remoteTarget is the target Service read in one remote cluster.
type remoteTarget struct {
	Context string
	Cluster cluster.Cluster
	// Unread says why the target's pods there could not be read: its
	// callers are then not known, never "none".
	Unread string
	// NoService: the Service is not there (read, and absent).
	NoService bool
	Pods      []corev1.Pod
	// ClusterID is what its pods' proxies name (ISTIO_META_CLUSTER_ID):
	// Prometheus's source_cluster.
	ClusterID string
	// The inbound logs of its pods, read as the current cluster's are.
	logs    [][]byte
	logErrs []error
	logPods []cluster.PodRef
	// LogsRead is how many of those logs were read.
	LogsRead int
	// PodsIn holds its meshed pods listed per namespace (the workloads
	// Prometheus attributed to it).
	PodsIn map[string][]corev1.Pod
	// The namespaces listed for PodsIn, and each list's answer.
	nsListed []string
	nsPods   [][]corev1.Pod
	nsErrs   []error
}

// readRemoteTargets reads the target's pods and their newest proxy logs
// in each remote cluster, at once.
func readRemoteTargets(ctx context.Context, remotes []cluster.Remote, t cluster.Target) []remoteTarget {
	out := make([]remoteTarget, len(remotes))
	var g readgroup.Group
	for i, r := range remotes {
		out[i] = remoteTarget{Context: r.Context, Cluster: r.Cluster, PodsIn: map[string][]corev1.Pod{}}
		g.Go(func() { readRemoteTarget(ctx, &out[i], t) })
	}
	g.Wait()
	return out
}

func readRemoteTarget(ctx context.Context, rt *remoteTarget, t cluster.Target) {
	c := rt.Cluster
	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	switch {
	case apierrors.IsNotFound(err):
		rt.NoService = true
		return
	case err != nil:
		rt.Unread = cluster.AccessProblem(fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err)
		return
	}
	if len(svc.Spec.Selector) == 0 {
		return // endpoints by hand: no pods, no inbound logs
	}
	pods, err := c.ListPods(ctx, t.Namespace, svc.Spec.Selector)
	if err != nil {
		rt.Unread = cluster.AccessProblem(fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)), err)
		return
	}
	rt.Pods = pods
	ptrs := make([]*corev1.Pod, len(pods))
	for i := range pods {
		ptrs[i] = &pods[i]
	}
	rt.ClusterID, _ = mesh.ClusterIDOfPods(ptrs)
	readable := proxylog.UpstreamLogPods(pods)
	if len(readable) > proxylog.MaxUpstreamLogs {
		readable = readable[:proxylog.MaxUpstreamLogs]
	}
	rt.logs, rt.logErrs = make([][]byte, len(readable)), make([]error, len(readable))
	var g readgroup.Group
	for i, p := range readable {
		ref := cluster.PodRef{Namespace: p.Namespace, Name: p.Name}
		rt.logPods = append(rt.logPods, ref)
		g.Go(func() { rt.logs[i], rt.logErrs[i] = proxylog.NewestProxyLog(ctx, c, ref, proxylog.AccessLogTailLines) })
	}
	g.Wait()
}

// mergeTargetLogs adds to in what the target pods' logs read in one
// cluster (context "" the current one) say: the inbound peers, and the
// pods whose own outbound calls fail. It says how many logs were read.
func mergeTargetLogs(in *callerSearchInput, formats accesslog.Formats, context string, logs [][]byte, errs []error, pods []cluster.PodRef) int {
	read := 0
	for i, b := range logs {
		name := pods[i].String()
		if context != "" {
			name = context + ": " + name
		}
		if errs[i] != nil {
			in.Problems = append(in.Problems, cluster.AccessProblem(fmt.Sprintf("read the %s log of %s", mesh.ProxyContainer, name), errs[i]))
			continue
		}
		inbound, outbound, _ := formats.Split(bytes.NewReader(b), proxylog.InboundEntry)
		in.Inbound.Merge(inbound)
		for ip := range inbound.Peers.Counts {
			in.PeerSeenIn[ip] = wording.AppendUnique(in.PeerSeenIn[ip], context)
		}
		read++
		if failed := outbound.Status5xx + outbound.BlackHole + outbound.TCPFlags.Total(); failed > 0 {
			in.OwnOutbound = append(in.OwnOutbound, ownOutbound{Pod: pods[i], Context: context, Failed: failed,
				Why: fmt.Sprintf("a target pod whose own outbound calls fail: %d of %d entries (%d 5xx, %d BlackHoleCluster) in its log", failed, outbound.Entries, outbound.Status5xx, outbound.BlackHole)})
		}
	}
	return read
}

// sourceClusterContext attributes Prometheus's source_cluster (the cluster
// ID the calling proxy reports) to a context: "" for the current cluster,
// a remote's context when its pods name that ID. ok is false when the
// label names a cluster the search read through no context: its workload
// is then looked for nowhere, rather than in a cluster it is not in.
// Without the label (or "unknown", Istio's value when the proxy names
// none), or without the current cluster's own ID to compare with, the
// workload is looked for in the current cluster, as before clusters.
func sourceClusterContext(sourceCluster, currentID string, remotes []remoteTarget) (context string, ok bool) {
	if sourceCluster == "" || sourceCluster == "unknown" || sourceCluster == currentID {
		return "", true
	}
	for _, r := range remotes {
		if r.ClusterID != "" && r.ClusterID == sourceCluster {
			return r.Context, true
		}
	}
	if currentID == "" {
		return "", true
	}
	return "", false
}

// triageCommand is the check that triages from a caller found in a remote
// cluster: that cluster's context is the current one there, and the
// triage's own current context joins the other remotes. Built from the
// values read; when the current context has no name (in-cluster
// credentials), it says so instead of naming one.
func triageCommand(t cluster.Target, caller cluster.PodRef, callerContext, currentContext string, remoteContexts []string) string {
	others := []string{}
	if currentContext != "" {
		others = append(others, currentContext)
	}
	for _, r := range remoteContexts {
		if r != callerContext {
			others = append(others, r)
		}
	}
	cmd := "meshtriage check --context " + callerContext
	if len(others) > 0 {
		cmd += " --remote-contexts " + strings.Join(others, ",")
	}
	cmd += fmt.Sprintf(" -n %s svc/%s", t.Namespace, t.Service)
	if t.Port != 0 {
		cmd += fmt.Sprintf(" --port %d", t.Port)
	}
	cmd += fmt.Sprintf(" --from %s/pod/%s", caller.Namespace, caller.Name)
	if currentContext == "" {
		cmd += " (the current context has no name here: add it to --remote-contexts)"
	}
	return cmd
}
