package probes

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/ambientpath"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/ztunnel"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// ZtunnelProbe reads ambient mode's node proxies where the traffic passes:
// the ztunnel pods (app=ztunnel in the control-plane namespace) on the
// caller's node and on the nodes of the Service's and its waypoint's pods.
// Their access logs say which connections to the Service failed and why,
// in ztunnel's words (the NetworkPolicy hint on 15008, a policy rejection
// naming the policy, 401 from the destination); the config_dump of the
// caller's ztunnel says how it sees the Service (its waypoint) and the
// Service's pods (HBONE, or plaintext TCP for a pod not in ambient).
type ZtunnelProbe struct{}

func (ZtunnelProbe) Meta() Meta {
	return Meta{
		ID:    "ztunnel",
		Title: "ztunnel on the caller's and the Service's nodes: access log and config",
		Reads: []string{"pods (app=ztunnel: control-plane namespace, else every namespace)", "pods/log (ztunnel)", "pods/portforward (ztunnel admin 15000 /config_dump)", "services", "namespaces"},
		Facts: []FactSpec{
			{"ztunnel_pods", FactInt, "ztunnel pods read, one per node the traffic passes"},
			{"ztunnel_nodes_without", FactList, "nodes with a pod in ambient on the path but no Running, Ready ztunnel: their pods' traffic goes nowhere"},
			{"ztunnel_entries", FactInt, "ztunnel access entries about the Service (its hostname, its pods' or its waypoint's addresses)"},
			{"ztunnel_completed", FactInt, "of those, connections that completed without an error"},
			{"ztunnel_hbone_timeouts", FactInt, "connects to a pod's HBONE port 15008 that timed out (ztunnel: \"maybe a NetworkPolicy is blocking HBONE port 15008\")"},
			{"ztunnel_rejections", FactInt, "connections the destination's ztunnel closed by policy (\"connection closed due to policy rejection\")"},
			{"ztunnel_strict_rejections", FactInt, "of the rejections, those of STRICT PeerAuthentication (istio_converted_static_strict): plaintext from a caller outside the mesh or not enrolled"},
			{"ztunnel_sidecar_rejections", FactInt, "of the rejections, those of connections from pods with a sidecar (which never go through a Service's waypoint)"},
			{"ztunnel_unauthorized", FactInt, "connections the caller's ztunnel saw refused with 401 by the destination (how a rejection looks from the caller's side)"},
			{"ztunnel_denied_by", FactList, "the policies rejections name (\"explicitly denied by: NS/NAME\"), most frequent first, as NAME=COUNT"},
			{"ztunnel_rejected_sources", FactList, "workloads (else addresses) whose connections failed, as NAME=COUNT"},
			{"ztunnel_refused", FactInt, "connections to the app's port refused (nothing listens)"},
			{"ztunnel_refused_tunnel_ips", FactList, "pod IPs whose HBONE port 15008 refused the caller's ztunnel (os error 111: nothing listens there any more, as when the pod has ended), most refused first"},
			{"ztunnel_drained", FactInt, "connections ztunnel closed by a drain (ClosedFromDrain, DrainTimeOut): the pod or its ztunnel shutting down"},
			{"ztunnel_failures", FactList, "failed connections by kind, as KIND=COUNT"},
			{"ztunnel_unexplained", FactList, "failed connections whose error (ztunnel's Error variant, on the caller's or the destination's ztunnel) the vocabulary knows no cause of the catalogue for, as LINE=COUNT"},
			{"ztunnel_config_read", FactBool, "the config_dump of a ztunnel on the path was read"},
			{"ztunnel_service_waypoint", FactString, "the Service's waypoint as that ztunnel holds it (\"\" when none): where it sends the Service's traffic"},
			{"ztunnel_started_before_ready", FactList, "pods of the path in ambient (the caller, the Service's) whose app started before their node's ztunnel was Ready, and no earlier than ztunnelStartWindow before that ztunnel's pod started (the node's start, not a later ztunnel upgrade); unset when a pod's or its ztunnel's times are not known"},
			{"ztunnel_started_before_ready_restarted", FactList, "of ztunnel_started_before_ready, the pods whose app containers restarted since"},
			{"ztunnel_target_plaintext", FactInt, "pods of the Service that ztunnel reaches as plaintext TCP (not in ambient, no HBONE)"},
		},
	}
}

type ztunnelLog struct {
	Pod     cluster.PodRef
	Node    string
	Summary ztunnel.Summary
	Problem string
}

type ztunnelInput struct {
	ambientpath.Input
	// Ztunnels are the Running, Ready ztunnel pods of the nodes the
	// traffic passes, by node; NotReady says, by node, why the ztunnel
	// that runs there without one Ready does not count; Nodes are those
	// nodes, with what runs there. StatusUnknown names, by node, the
	// ztunnel the input holds without a status (a dump of specs): whether
	// it runs is not known.
	Ztunnels      map[string]*corev1.Pod
	NotReady      map[string]string
	StatusUnknown map[string]string
	Nodes         map[string][]string
	// NodesNeedZtunnel: nodes with a pod of the path that only ztunnel
	// there carries: enrolled, or pending (captured and held until a
	// ztunnel proxies it).
	NodesNeedZtunnel map[string]bool
	ListProblem      string
	Logs             []ztunnelLog
	Dump             *ztunnel.Dump
	DumpFrom         string
	DumpProblem      string
	// SidecarRejected counts the policy rejections of connections from
	// pods with a sidecar (resolved from the lines' source pods, at most
	// maxRejectedSources of them); SidecarKnown is false when none could
	// be read.
	SidecarRejected int
	SidecarKnown    bool
}

// maxRejectedSources bounds the source pods read to tell sidecars apart.
const maxRejectedSources = 5

func (p ZtunnelProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	base, what, err := ambientpath.Fetch(ctx, c, t)
	if err != nil {
		return ErrorResult(what, err)
	}
	in := ztunnelInput{Input: base, Ztunnels: map[string]*corev1.Pod{}, NotReady: map[string]string{}, StatusUnknown: map[string]string{}, Nodes: map[string][]string{}, NodesNeedZtunnel: map[string]bool{}}
	if !base.OnPath() {
		return evaluateZtunnel(t, in)
	}
	// The nodes the traffic passes, and what of the path runs there.
	addNode := func(p *corev1.Pod, role string, ns *corev1.Namespace) {
		// A pod that carries no traffic (terminating on a dead node,
		// evicted, done) needs no ztunnel.
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return
		}
		in.Nodes[p.Spec.NodeName] = append(in.Nodes[p.Spec.NodeName], role+" "+p.Name)
		if d := mesh.DataPlaneOf(p, ns); d.Enrolled() || d.Pending() {
			in.NodesNeedZtunnel[p.Spec.NodeName] = true
		}
	}
	if base.Source != nil {
		addNode(base.Source, "caller", base.SourceNamespace)
	}
	for i := range base.Pods {
		addNode(&base.Pods[i], "target", base.Namespace)
	}
	for i := range base.WaypointPods {
		addNode(&base.WaypointPods[i], "waypoint", nil)
	}
	pods, problem, err := ambientpath.ListZtunnels(ctx, c, base.ControlPlane)
	if err != nil {
		r := ErrorResult("list ztunnel pods in "+base.ControlPlane, err)
		r.Commands = ztunnelCommands(t, in)
		return r
	}
	in.ListProblem = problem
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for i := range pods {
		zp := &pods[i]
		node := zp.Spec.NodeName
		if _, on := in.Nodes[node]; on && zp.DeletionTimestamp == nil && zp.Status.Phase == "" && len(zp.Status.Conditions) == 0 {
			in.StatusUnknown[node] = zp.Name
			continue
		}
		if _, on := in.Nodes[node]; !on || zp.Status.Phase != corev1.PodRunning || zp.DeletionTimestamp != nil {
			continue
		}
		// Not Ready: it does not carry the node's pods (yet).
		if ready, why := mesh.PodReady(zp); !ready {
			if in.NotReady[node] == "" {
				in.NotReady[node] = zp.Name + " not ready: " + wording.Dash(why)
			}
			continue
		}
		if in.Ztunnels[node] == nil {
			in.Ztunnels[node] = zp
		}
	}
	nodes := sortedNodeNames(in.Ztunnels)
	in.Logs = make([]ztunnelLog, len(nodes))
	keep := ztunnelKeep(t, base)
	var g readgroup.Group
	for i, node := range nodes {
		zp := in.Ztunnels[node]
		ref := cluster.PodRef{Namespace: zp.Namespace, Name: zp.Name}
		in.Logs[i] = ztunnelLog{Pod: ref, Node: node}
		g.Go(func() {
			data, err := proxylog.NewestProxyLog(ctx, c, ref, proxylog.ZtunnelTailLines)
			if err != nil {
				in.Logs[i].Problem = cluster.AccessProblem("read the log of "+ref.String(), err)
				return
			}
			in.Logs[i].Summary, _ = ztunnel.Tally(bytes.NewReader(data), keep)
		})
	}
	// One config_dump: the caller's ztunnel's (what the caller's traffic
	// meets), else that of the first node of the Service's pods.
	dumpNode := ""
	if base.Source != nil && in.Ztunnels[base.Source.Spec.NodeName] != nil {
		dumpNode = base.Source.Spec.NodeName
	} else if len(nodes) > 0 {
		dumpNode = nodes[0]
	}
	if dumpNode != "" {
		zp := in.Ztunnels[dumpNode]
		ref := cluster.PodRef{Namespace: zp.Namespace, Name: zp.Name}
		in.DumpFrom = ref.String()
		g.Go(func() {
			data, err := c.EnvoyAdmin(ctx, ref, "/config_dump")
			if err != nil {
				in.DumpProblem = cluster.AccessProblem("GET /config_dump from ztunnel "+ref.String(), err)
				return
			}
			d, err := ztunnel.ParseConfigDump(data)
			if err != nil {
				in.DumpProblem = fmt.Sprintf("ztunnel %s: %v", ref, err)
				return
			}
			in.Dump = &d
		})
	}
	g.Wait()
	in.SidecarRejected, in.SidecarKnown = sidecarRejections(ctx, c, in.Logs)
	return evaluateZtunnel(t, in)
}

// sidecarRejections reads the pods whose connections were rejected, most
// rejected first, and counts the rejections of those with a sidecar. A
// waypoint's pod has an istio-proxy too, but it is the path sidecars go
// around: a rejection of its identity is a policy's (ambient.authz-rejected).
func sidecarRejections(ctx context.Context, c cluster.Cluster, logs []ztunnelLog) (int, bool) {
	var all ztunnel.Summary
	for _, l := range logs {
		all.Merge(l.Summary)
	}
	if len(all.RejectedPods) == 0 {
		return 0, true
	}
	keys := ztunnel.Keys(all.RejectedPods)
	n, known := 0, false
	for i, k := range keys {
		if i == maxRejectedSources {
			break
		}
		ref, _, _ := strings.Cut(k, "=")
		ns, name, _ := strings.Cut(ref, "/")
		pod, err := c.GetPod(ctx, ns, name)
		if err != nil {
			continue
		}
		known = true
		if mesh.PodSidecar(pod) != mesh.SidecarNone && !mesh.IsWaypointPod(pod) {
			n += all.RejectedPods[ref]
		}
	}
	return n, known
}

// ztunnelKeep keeps the entries about the Service: its hostname, or an
// address of its pods or of its waypoint's pods.
func ztunnelKeep(t cluster.Target, in ambientpath.Input) func(*ztunnel.Entry) bool {
	ips := map[string]bool{}
	for i := range in.Pods {
		if ip := in.Pods[i].Status.PodIP; ip != "" {
			ips[ip] = true
		}
	}
	for i := range in.WaypointPods {
		if ip := in.WaypointPods[i].Status.PodIP; ip != "" {
			ips[ip] = true
		}
	}
	host := t.Host()
	return func(e *ztunnel.Entry) bool {
		return e.DstService == host || ips[e.TargetIP()] || ips[e.DstIP()]
	}
}

func sortedNodeNames(m map[string]*corev1.Pod) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func evaluateZtunnel(t cluster.Target, in ztunnelInput) Result {
	r := Result{Status: StatusPass, Facts: Facts{}, Commands: ztunnelCommands(t, in)}
	if !in.OnPath() {
		r.Status = StatusSkipped
		r.Summary = "nothing on the path is in ambient: no ztunnel carries this traffic"
		return r
	}
	var problems, notes, raw []string
	without, whys := []string{}, []string{}
	unknown := 0
	for _, node := range pathNodes(in.Nodes) {
		if in.NodesNeedZtunnel[node] && in.Ztunnels[node] == nil {
			if zp := in.StatusUnknown[node]; zp != "" {
				notes = append(notes, fmt.Sprintf("ztunnel %s on %s has no status in the input: whether it runs is not known", zp, node))
				unknown++
				continue
			}
			without = append(without, node)
			why := node
			if nr := in.NotReady[node]; nr != "" {
				why += " (" + nr + ")"
			}
			whys = append(whys, why)
		}
	}
	r.Facts["ztunnel_pods"] = len(in.Ztunnels)
	switch {
	case in.ListProblem != "":
		notes = append(notes, in.ListProblem)
	case unknown > 0 && len(without) == 0:
		// Every node we could judge has one; the others are not known.
	default:
		r.Facts["ztunnel_nodes_without"] = without
	}
	if len(without) > 0 && in.ListProblem == "" {
		problems = append(problems, fmt.Sprintf("no Running, Ready ztunnel on %s, where pods of the path are enrolled or pending (held until a ztunnel proxies them)", strings.Join(whys, ", ")))
	}

	if early, known := startedBeforeZtunnel(in); known {
		r.Facts["ztunnel_started_before_ready"] = nonNil(early.pods)
		r.Facts["ztunnel_started_before_ready_restarted"] = nonNil(early.restarted)
		if len(early.pods) > 0 {
			notes = append(notes, fmt.Sprintf("%s started before their node's ztunnel was Ready (%s restarted since): their first connections had no ztunnel to carry them",
				wording.CountNoun(len(early.pods), "ambient pod"), wording.CountNoun(len(early.restarted), "pod")))
			raw = append(raw, "# ambient pods started before their node's ztunnel was Ready")
			raw = append(raw, early.lines...)
		}
	}

	var all ztunnel.Summary
	read := 0
	r.Evidence.Columns = []string{"ztunnel", "node", "on the node", "entries", "completed", "failed"}
	for _, l := range in.Logs {
		if l.Problem != "" {
			notes = append(notes, l.Problem)
			r.Evidence.Rows = append(r.Evidence.Rows, []string{l.Pod.String(), l.Node, strings.Join(in.Nodes[l.Node], ", "), "?", "?", l.Problem})
			continue
		}
		read++
		all.Merge(l.Summary)
		failed := l.Summary.Entries - l.Summary.Completed
		r.Evidence.Rows = append(r.Evidence.Rows, []string{l.Pod.String(), l.Node, strings.Join(in.Nodes[l.Node], ", "),
			fmt.Sprint(l.Summary.Entries), fmt.Sprint(l.Summary.Completed), strings.Join(ztunnel.Keys(l.Summary.Failures), " ") + dashIfNone(failed)})
	}
	if read > 0 {
		r.Facts["ztunnel_entries"] = all.Entries
		r.Facts["ztunnel_completed"] = all.Completed
		r.Facts["ztunnel_hbone_timeouts"] = all.Failures[ztunnel.FailureHBONETimeout]
		r.Facts["ztunnel_rejections"] = all.Failures[ztunnel.FailurePolicyRejected] + all.Failures[ztunnel.FailurePolicyChange]
		r.Facts["ztunnel_unauthorized"] = all.Failures[ztunnel.FailureUnauthorized]
		strict := 0
		for by, n := range all.DeniedBy {
			if strings.HasSuffix(by, "/"+mesh.StaticStrictPolicy) {
				strict += n
			}
		}
		r.Facts["ztunnel_strict_rejections"] = strict
		if in.SidecarKnown {
			r.Facts["ztunnel_sidecar_rejections"] = in.SidecarRejected
		}
		r.Facts["ztunnel_refused"] = all.Failures[ztunnel.FailureRefused]
		r.Facts["ztunnel_refused_tunnel_ips"] = nonNil(countKeysOnly(all.RefusedTunnels))
		r.Facts["ztunnel_drained"] = all.Drained
		r.Facts["ztunnel_denied_by"] = nonNil(ztunnel.Keys(all.DeniedBy))
		r.Facts["ztunnel_rejected_sources"] = nonNil(ztunnel.Keys(all.FailedSources))
		r.Facts["ztunnel_failures"] = nonNil(ztunnel.Keys(all.Failures))
		reading := proxylog.NewReading()
		reading.AddZtunnel(all.Errors)
		r.Facts["ztunnel_unexplained"] = nonNil(reading.Unexplained())
		if failed := all.Entries - all.Completed; failed > 0 {
			p := fmt.Sprintf("%d of %d connections to svc/%s failed: %s", failed, all.Entries, t.Service, strings.Join(ztunnel.Keys(all.Failures), ", "))
			if u := reading.Summary(); u != "" {
				p += "; " + u
			}
			problems = append(problems, p)
		}
		raw = append(raw, all.Samples...)
		raw = append(raw, reading.Raw()...)
	}

	r.Facts["ztunnel_config_read"] = in.Dump != nil
	if in.Dump != nil {
		svc, ok := in.Dump.ServiceByHost(t.Host())
		if ok {
			r.Facts["ztunnel_service_waypoint"] = svc.Waypoint
		}
		plaintext := 0
		for i := range in.Pods {
			w, found := in.Dump.WorkloadByIP(in.Pods[i].Status.PodIP)
			switch {
			case !found:
				raw = append(raw, fmt.Sprintf("ztunnel %s does not know pod %s (%s)", in.DumpFrom, in.Pods[i].Name, wording.Dash(in.Pods[i].Status.PodIP)))
			case w.Protocol == "TCP":
				plaintext++
				raw = append(raw, fmt.Sprintf("ztunnel %s reaches pod %s in plaintext TCP: it is not in ambient", in.DumpFrom, in.Pods[i].Name))
			default:
				raw = append(raw, fmt.Sprintf("ztunnel %s reaches pod %s by %s%s", in.DumpFrom, in.Pods[i].Name, w.Protocol, waypointNote(w.Waypoint)))
			}
		}
		r.Facts["ztunnel_target_plaintext"] = plaintext
		if ok {
			raw = append(raw, fmt.Sprintf("ztunnel %s holds svc %s with waypoint %s", in.DumpFrom, t.Host(), wording.Dash(svc.Waypoint)))
		} else {
			raw = append(raw, fmt.Sprintf("ztunnel %s holds no service %s", in.DumpFrom, t.Host()))
		}
	} else if in.DumpProblem != "" {
		notes = append(notes, in.DumpProblem)
	}

	head := fmt.Sprintf("%d ztunnel(s) read", read)
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: notes,
		Pass: fmt.Sprintf("%s: %d connections to svc/%s, none failed", head, all.Entries, t.Service)}.judge()
	if r.Status == StatusPass && read == 0 && len(in.Ztunnels) == 0 {
		// Nothing failed because nothing was read.
		r.Status, r.Summary = StatusWarn, "no ztunnel pod on the nodes of the path"
	}
	r.Evidence.Raw = strings.Join(raw, "\n")
	return r
}

// ztunnelStartWindow bounds how long before its node's ztunnel pod started
// a pod's app may have started and still have raced the node's start: a
// pod much older than its ztunnel saw the ztunnel replaced (an upgrade, a
// restart of the DaemonSet), which ztunnel's in-pod mode carries running
// pods through, not a node that came up.
const ztunnelStartWindow = 5 * time.Minute

// earlyStarts are the ambient pods of the path that started before their
// node's ztunnel was Ready (istiod's untaint controller frees a node when
// its istio-cni pod is Ready, not ztunnel: istio/istio#53843).
type earlyStarts struct {
	pods, restarted, lines []string
}

// startedBeforeZtunnel judges the caller and the Service's pods in ambient
// on nodes with a Ready ztunnel; known is false when a pod's or its
// ztunnel's times are not in what was read and no pod was found.
func startedBeforeZtunnel(in ztunnelInput) (earlyStarts, bool) {
	var out earlyStarts
	unknown := 0
	judge := func(p *corev1.Pod, ns *corev1.Namespace) {
		if p == nil || p.DeletionTimestamp != nil || !mesh.DataPlaneOf(p, ns).Enrolled() {
			return
		}
		zp := in.Ztunnels[p.Spec.NodeName]
		if zp == nil {
			return // no Ready ztunnel: the ztunnel-unavailable question
		}
		readyAt := readySince(zp)
		appStart, restarts := appFirstStart(p)
		if readyAt.IsZero() || zp.Status.StartTime == nil || appStart.IsZero() {
			unknown++
			return
		}
		if !appStart.Before(readyAt) || appStart.Before(zp.Status.StartTime.Add(-ztunnelStartWindow)) {
			return
		}
		name := p.Namespace + "/" + p.Name
		out.pods = append(out.pods, name)
		if restarts > 0 {
			out.restarted = append(out.restarted, name)
		}
		out.lines = append(out.lines, fmt.Sprintf("%s on %s: app started %s, %d restart(s) since; ztunnel %s started %s, Ready %s",
			name, p.Spec.NodeName, appStart.UTC().Format(time.RFC3339), restarts, zp.Name,
			zp.Status.StartTime.UTC().Format(time.RFC3339), readyAt.UTC().Format(time.RFC3339)))
	}
	judge(in.Source, in.SourceNamespace)
	for i := range in.Pods {
		judge(&in.Pods[i], in.Namespace)
	}
	return out, unknown == 0 || len(out.pods) > 0
}

// readySince is when the pod last became Ready, zero when it is not Ready
// or the input holds no such time.
func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// appFirstStart is the earliest start the pod's app containers report (the
// previous run's when one restarted) and their restarts; zero when none
// reports one.
func appFirstStart(p *corev1.Pod) (time.Time, int) {
	var first time.Time
	restarts := 0
	for _, c := range mesh.AppContainers(p) {
		st, ok := mesh.ContainerStatus(p, c.Name)
		if !ok {
			continue
		}
		restarts += int(st.RestartCount)
		var s time.Time
		switch {
		case st.LastTerminationState.Terminated != nil && !st.LastTerminationState.Terminated.StartedAt.IsZero():
			s = st.LastTerminationState.Terminated.StartedAt.Time
		case st.State.Running != nil:
			s = st.State.Running.StartedAt.Time
		case st.State.Terminated != nil:
			s = st.State.Terminated.StartedAt.Time
		}
		if !s.IsZero() && (first.IsZero() || s.Before(first)) {
			first = s
		}
	}
	return first, restarts
}

// countKeysOnly lists a count map's keys, most frequent first, without the
// counts: values a rule compares with other facts' (pod IPs).
func countKeysOnly(m map[string]int) []string {
	out := ztunnel.Keys(m)
	for i, k := range out {
		out[i] = k[:strings.LastIndexByte(k, '=')]
	}
	return out
}

func waypointNote(wp string) string {
	if wp == "" {
		return ""
	}
	return " behind waypoint " + wp
}

func dashIfNone(n int) string {
	if n == 0 {
		return "-"
	}
	return ""
}

func pathNodes(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func ztunnelCommands(t cluster.Target, in ztunnelInput) []string {
	ns := in.ControlPlane
	if ns == "" {
		ns = cluster.DefaultControlPlane
	}
	cmds := []string{
		fmt.Sprintf("kubectl get pods -n %s -l app=ztunnel -o wide", ns),
		fmt.Sprintf("istioctl ztunnel-config service --service-namespace %s", t.Namespace),
		"istioctl ztunnel-config workloads",
	}
	// The log of each ztunnel found on the path's nodes, by name; none
	// found, the listing above is where to look for them.
	for _, node := range sortedNodeNames(in.Ztunnels) {
		zp := in.Ztunnels[node]
		cmds = append(cmds, fmt.Sprintf("kubectl logs -n %s %s --since=30m | grep -E 'dst.service=\"%s\"|error'   # node %s", zp.Namespace, zp.Name, t.Host(), node))
	}
	return cmds
}
