package callersearch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/ambientpath"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/ztunnel"
	"github.com/meshtriage/meshtriage/probes/proxylog"
)

// ByZtunnelLog: a caller seen in the access lines of the ztunnels
// on the target's nodes (src.workload of connections to the target): how
// an ambient caller, which has no sidecar and no Envoy log, is found.
const ByZtunnelLog = "ztunnel-log"

// ztunnelCaller is a pod the target's ztunnels saw connect to it.
type ztunnelCaller struct {
	Pod           *corev1.Pod
	Failed, Total int
}

// ztunnelCallers reads the ztunnel logs of the target pods' nodes and
// returns the pods whose connections to the target they logged, most
// failures first. It never fails: what it cannot read is in problems.
func ztunnelCallers(ctx context.Context, c cluster.Cluster, t cluster.Target, targetPods []corev1.Pod) (out []ztunnelCaller, problems []string) {
	enrolled := map[string]bool{}
	ips := map[string]bool{}
	for i := range targetPods {
		if mesh.DataPlaneOf(&targetPods[i], nil).Enrolled() {
			enrolled[targetPods[i].Spec.NodeName] = true
			ips[targetPods[i].Status.PodIP] = true
		}
	}
	if len(enrolled) == 0 {
		return nil, nil // no ztunnel terminates the target's connections
	}
	ns := istioconfig.ControlPlane(c)
	zs, problem, err := ambientpath.ListZtunnels(ctx, c, ns)
	if err != nil {
		return nil, []string{cluster.AccessProblem("list ztunnel pods in "+ns, err)}
	}
	if problem != "" {
		problems = append(problems, problem)
	}
	type peer struct{ failed, total int }
	peers := map[[2]string]*peer{}
	host := t.Host()
	for i := range zs {
		if !enrolled[zs[i].Spec.NodeName] {
			continue
		}
		ref := cluster.PodRef{Namespace: zs[i].Namespace, Name: zs[i].Name}
		data, err := proxylog.NewestProxyLog(ctx, c, ref, proxylog.ZtunnelTailLines)
		if err != nil {
			problems = append(problems, cluster.AccessProblem("read the log of "+ref.String(), err))
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			e, ok := ztunnel.ParseLine(sc.Text())
			if !ok || e.Opened() || e.SrcWorkload == "" || e.SrcNamespace == "" || !(e.DstService == host || ips[e.TargetIP()]) {
				continue
			}
			k := [2]string{e.SrcNamespace, e.SrcWorkload}
			if peers[k] == nil {
				peers[k] = &peer{}
			}
			peers[k].total++
			if e.Failure() != "" {
				peers[k].failed++
			}
		}
	}
	for k, p := range peers {
		pod, err := c.GetPod(ctx, k[0], k[1])
		if err != nil {
			continue // gone since: nothing to read
		}
		if mesh.IsWaypointPod(pod) {
			continue // a hop of ambient callers' requests, not a caller
		}
		out = append(out, ztunnelCaller{Pod: pod, Failed: p.failed, Total: p.total})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Failed != out[j].Failed {
			return out[i].Failed > out[j].Failed
		}
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Pod.Name < out[j].Pod.Name
	})
	return out, problems
}

// addZtunnelCallers adds the callers the target's ztunnels saw.
func addZtunnelCallers(in callerSearchInput, add func(pod *corev1.Pod, by, why string, errs, reqs float64)) []string {
	if !in.ZtunnelSearched {
		return nil
	}
	for _, zc := range in.ZtunnelCallers {
		why := fmt.Sprintf("%d connections to the target in its ztunnels' logs", zc.Total)
		if zc.Failed > 0 {
			why = fmt.Sprintf("%d failed of %d connections to the target in its ztunnels' logs", zc.Failed, zc.Total)
		}
		add(zc.Pod, ByZtunnelLog, why, float64(zc.Failed), float64(zc.Total))
	}
	return []string{"the ztunnel logs of the target's nodes"}
}
