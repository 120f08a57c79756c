package probes

import (
	"context"
	"fmt"
	"strings"

	"istio.io/api/annotation"
	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/probes/ambientpath"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podfacts"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// DataPlaneProbe says which data plane carries the traffic: the caller's
// and the Service's pods each with a sidecar, in ambient (ztunnel on their
// node; enrolled by the CNI or not) or outside the mesh; and, for a
// Service that names a waypoint, whether istiod binds it and whether this
// caller's requests go through it. The runbook's first steps branch on it.
type DataPlaneProbe struct{}

func (DataPlaneProbe) Meta() Meta {
	return Meta{
		ID:    "dataplane",
		Title: "Data plane: sidecar, ambient (ztunnel, waypoint) or none",
		Reads: []string{"services", "pods", "namespaces", "gateways.gateway.networking.k8s.io", "configmaps (kube-system/cilium-config)", "pods (kube-system, k8s-app=aws-node)"},
		Facts: []FactSpec{
			{"dataplane_ambient", FactBool, "ztunnel or a waypoint carries some of the traffic: the caller or a pod of the Service is in ambient (enrolled or meant to be), or the Service names a waypoint"},
			{"dataplane_source", FactString, "the caller's data plane: sidecar, ambient (enrolled: ztunnel carries it), gateway, waypoint (a waypoint's pod: its Envoy is no sidecar), none (outside the mesh, not enrolled, or pending: no ztunnel carries it yet); absent without a caller"},
			{"dataplane_source_not_enrolled", FactBool, "the caller is meant for ambient (istio.io/dataplane-mode on it or its namespace) but the CNI has not captured it (no ambient.istio.io/redirection annotation; pending is captured, see dataplane_pending_pods): its traffic bypasses ztunnel, in plaintext"},
			{"dataplane_target", FactString, "the data plane of the Service's pods: sidecar, ambient, none, or mixed"},
			{"dataplane_target_ambient", FactInt, "pods of the Service enrolled in ambient"},
			{"dataplane_target_not_enrolled", FactInt, "pods of the Service meant for ambient that the CNI has not enrolled"},
			{"dataplane_not_enrolled_pods", FactList, "pods meant for ambient and not enrolled (the caller's marked so), with what put them in ambient"},
			{"dataplane_pending_pods", FactList, "pods of the path the CNI captured that no ztunnel proxies yet (ambient.istio.io/redirection=pending), as NAMESPACE/NAME on NODE (the caller's marked so): their traffic is held, nothing in or out, until ztunnel on their node proxies them; absent when none is pending"},
			{"waypoint_named", FactBool, "istio.io/use-waypoint on the Service or its namespace names a waypoint"},
			{"waypoint_name", FactString, "the waypoint named, NAMESPACE/NAME (\"\" when none)"},
			{"waypoint_state", FactString, "istiod's binding of the Service to its waypoint: none, bound, opted-out, missing (no such Gateway), not-ready (no status address), not-service (waypoint-for excludes service traffic), denied (allowedRoutes refuse the namespace), not-waypoint (the Gateway named is no waypoint: istiod binds it once it has an address, and connections sent there fail)"},
			{"waypoint_ready_pods", FactInt, "Running, Ready pods of the waypoint named (0 when none is named)"},
			{"waypoint_bound_condition", FactString, "the Service's istio.io/WaypointBound status condition as istiod wrote it: True, False: REASON, or \"\" when absent"},
			{"cilium_socket_lb", FactString, "Cilium's socket load-balancing (kube-system/cilium-config, read when ambient is on the path): pod-namespaces (kube-proxy-replacement or bpf-lb-sock on, bpf-lb-sock-hostns-only not \"true\": a connect() to a ClusterIP is rewritten to a pod before ztunnel sees it), host-namespace-only, off, not-cilium (no such ConfigMap); absent when it could not be read"},
			{"eks_sg_strict_unready", FactList, "pods of the Service in ambient with a branch ENI (vpc.amazonaws.com/pod-eni) that are not Ready while the VPC CNI's aws-node runs security groups for pods in strict mode (POD_SECURITY_GROUP_ENFORCING_MODE strict or unset, ENABLE_POD_ENI true), which drops the link-local SNAT of ambient's kubelet probes; [] when no aws-node pod runs, absent when they could not be read"},
			{"waypoint_traversed", FactBool, "the caller's requests to the Service go through a waypoint bound to it (ambient callers do; sidecars do not; gateways only with istio.io/ingress-use-waypoint); false when none is bound"},
		},
	}
}

func (p DataPlaneProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := ambientpath.Fetch(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = dataplaneCommands(t, in)
		return r
	}
	r := evaluateDataPlane(t, in)
	if in.OnPath() {
		cm, err := c.GetConfigMap(ctx, ciliumNamespace, ciliumConfigMap)
		judgeCiliumSocketLB(&r, cm, err)
		awsNode, err := c.ListPods(ctx, awsNodeNamespace, awsNodeSelector)
		judgeEKSSecurityGroups(&r, in.Pods, in.Namespace, awsNode, err)
	}
	return r
}

// The Amazon VPC CNI's agents: the aws-node DaemonSet's pods.
var (
	awsNodeNamespace = "kube-system"
	awsNodeSelector  = map[string]string{"k8s-app": "aws-node"}
)

// podENIAnnotation is what the VPC resource controller writes on a pod
// given its own branch ENI (security groups for pods).
const podENIAnnotation = "vpc.amazonaws.com/pod-eni"

// judgeEKSSecurityGroups: ambient SNATs the kubelet's probes of a pod to
// the link-local 169.254.7.127 (istio-cni's HOST_PROBE_SNAT_IP); the VPC
// CNI in security-groups-for-pods strict mode sends a branch-ENI pod's
// traffic through the VPC, which drops link-local packets, so every
// kubelet probe of such a pod fails (istio/istio#53105,
// aws/amazon-vpc-cni-k8s#2797, Istio's EKS platform prerequisites).
// POD_SECURITY_GROUP_ENFORCING_MODE unset is the VPC CNI's default,
// strict, and is said so. The pods judged are the Service's enrolled in
// ambient that carry a branch ENI and are not Ready.
func judgeEKSSecurityGroups(r *Result, pods []corev1.Pod, ns *corev1.Namespace, awsNode []corev1.Pod, err error) {
	r.Commands = append(r.Commands, "kubectl get daemonset -n kube-system aws-node -o jsonpath='{.spec.template.spec.containers[?(@.name==\"aws-node\")].env}'")
	if err != nil {
		r.Evidence.Raw = strings.TrimLeft(r.Evidence.Raw+"\n"+cluster.AccessProblem("list pods in kube-system matching k8s-app=aws-node", err)+": whether the VPC CNI drops ambient's probe SNAT is unknown", "\n")
		return
	}
	if len(awsNode) == 0 {
		r.Facts["eks_sg_strict_unready"] = []string{}
		return
	}
	var agent *corev1.Container
	for i := range awsNode[0].Spec.Containers {
		if awsNode[0].Spec.Containers[i].Name == "aws-node" {
			agent = &awsNode[0].Spec.Containers[i]
		}
	}
	if agent == nil {
		return
	}
	env := map[string]string{}
	set := map[string]bool{}
	for _, e := range agent.Env {
		env[e.Name], set[e.Name] = e.Value, true
	}
	mode := env["POD_SECURITY_GROUP_ENFORCING_MODE"]
	if !set["POD_SECURITY_GROUP_ENFORCING_MODE"] {
		mode = "strict (unset: the VPC CNI's default)"
	}
	strict := strings.HasPrefix(mode, "strict")
	podENI := strings.EqualFold(env["ENABLE_POD_ENI"], "true")
	line := fmt.Sprintf("aws-node %s (%s): ENABLE_POD_ENI=%q POD_SECURITY_GROUP_ENFORCING_MODE=%s", awsNode[0].Name, agent.Image, env["ENABLE_POD_ENI"], mode)
	r.Evidence.Raw = strings.TrimLeft(r.Evidence.Raw+"\n"+line, "\n")
	unready := []string{}
	for i := range pods {
		pod := &pods[i]
		if !strict || !podENI || pod.Annotations[podENIAnnotation] == "" || !mesh.DataPlaneOf(pod, ns).Enrolled() || podReady(pod) {
			continue
		}
		unready = append(unready, pod.Namespace+"/"+pod.Name)
	}
	r.Facts["eks_sg_strict_unready"] = unready
	if len(unready) > 0 {
		r.Status = worse(r.Status, StatusWarn)
		r.Summary += fmt.Sprintf("; %s in ambient with a branch ENI not ready under the VPC CNI's strict security-group mode, which drops ambient's link-local probe SNAT", wording.CountNoun(len(unready), "pod"))
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Where Cilium keeps its agents' configuration (its Helm chart's
// ConfigMap).
const ciliumNamespace, ciliumConfigMap = "kube-system", "cilium-config"

// Cilium's socket load-balancing, as cilium_socket_lb names it.
const (
	ciliumAbsent        = "not-cilium"
	ciliumSocketLBOff   = "off"
	ciliumHostNSOnly    = "host-namespace-only"
	ciliumPodNamespaces = "pod-namespaces"
)

// ciliumSocketLB reads cilium-config: with kube-proxy replacement (or
// bpf-lb-sock) on, Cilium's socket LB rewrites a connect() to a ClusterIP
// into one to a backend pod in the pod's own network namespace, before
// ztunnel sees it, unless bpf-lb-sock-hostns-only is "true" (Helm
// socketLB.hostNamespaceOnly). Istio's ambient prerequisites for Cilium
// ask for it; without it service-addressed traffic reaches ztunnel
// addressed to a pod, so a Service's waypoint and service-level policy
// are skipped.
func ciliumSocketLB(data map[string]string) string {
	on := func(k string) bool {
		v := strings.ToLower(strings.TrimSpace(data[k]))
		return v == "true" || v == "strict" || v == "enabled"
	}
	if !on("kube-proxy-replacement") && !on("bpf-lb-sock") {
		return ciliumSocketLBOff
	}
	if on("bpf-lb-sock-hostns-only") {
		return ciliumHostNSOnly
	}
	return ciliumPodNamespaces
}

// judgeCiliumSocketLB adds what cilium-config says of socket LB to the
// data-plane result; a ConfigMap not read leaves the fact unknown, not
// "not Cilium".
func judgeCiliumSocketLB(r *Result, cm *corev1.ConfigMap, err error) {
	r.Commands = append(r.Commands, fmt.Sprintf("kubectl get configmap -n %s %s -o jsonpath='{.data.kube-proxy-replacement} {.data.bpf-lb-sock} {.data.bpf-lb-sock-hostns-only}'", ciliumNamespace, ciliumConfigMap))
	switch {
	case apierrors.IsNotFound(err):
		r.Facts["cilium_socket_lb"] = ciliumAbsent
		return
	case err != nil:
		r.Evidence.Raw = strings.TrimLeft(r.Evidence.Raw+"\n"+cluster.AccessProblem("get configmap "+ciliumNamespace+"/"+ciliumConfigMap, err)+": whether Cilium's socket LB bypasses ztunnel is unknown", "\n")
		return
	}
	state := ciliumSocketLB(cm.Data)
	r.Facts["cilium_socket_lb"] = state
	line := fmt.Sprintf("cilium-config: kube-proxy-replacement=%q bpf-lb-sock=%q bpf-lb-sock-hostns-only=%q: socket LB %s", cm.Data["kube-proxy-replacement"], cm.Data["bpf-lb-sock"], cm.Data["bpf-lb-sock-hostns-only"], state)
	r.Evidence.Raw = strings.TrimLeft(r.Evidence.Raw+"\n"+line, "\n")
	if state == ciliumPodNamespaces {
		r.Status = worse(r.Status, StatusWarn)
		r.Summary += "; Cilium's socket LB rewrites ClusterIP connections in the pods' namespaces (bpf-lb-sock-hostns-only is not \"true\"), before ztunnel sees them"
	}
}

func evaluateDataPlane(t cluster.Target, in ambientpath.Input) Result {
	r := Result{Status: StatusPass, Facts: Facts{}, Commands: dataplaneCommands(t, in)}
	var raw, problems, warnings []string
	notEnrolled, pending := []string{}, []string{}

	r.Evidence.Columns = []string{"pod", "role", "data plane", "node", "ip"}
	if in.Source != nil {
		d := mesh.DataPlaneOf(in.Source, in.SourceNamespace)
		kind := ambientpath.CallerKind(in.Source)
		r.Facts["dataplane_source"] = kind
		r.Facts["dataplane_source_not_enrolled"] = d.NotEnrolled()
		r.Evidence.Rows = append(r.Evidence.Rows, []string{in.Source.Namespace + "/" + in.Source.Name, "caller", d.String(), wording.Dash(in.Source.Spec.NodeName), wording.Dash(in.Source.Status.PodIP)})
		if d.NotEnrolled() {
			notEnrolled = append(notEnrolled, fmt.Sprintf("%s/%s (caller): %s", in.Source.Namespace, in.Source.Name, d))
			problems = append(problems, fmt.Sprintf("the caller %s is meant for ambient (%s) but not enrolled", in.Source.Name, d.WantedBy))
		}
		if d.Pending() {
			pending = append(pending, fmt.Sprintf("%s/%s (caller) on %s", in.Source.Namespace, in.Source.Name, wording.Dash(in.Source.Spec.NodeName)))
			problems = append(problems, fmt.Sprintf("the caller %s is pending: its traffic is held until ztunnel on node %s proxies it", in.Source.Name, wording.Dash(in.Source.Spec.NodeName)))
		}
		if in.SourceNSProblem != "" {
			warnings = append(warnings, in.SourceNSProblem)
		}
	} else {
		switch {
		case t.Source == nil:
			raw = append(raw, "no caller named (--from): the caller's data plane is unknown")
		case in.SourceNotFound:
			raw = append(raw, "caller "+t.Source.String()+" not found")
		default:
			warnings = append(warnings, in.SourceProblem)
		}
	}

	modes := map[string]int{}
	ambient, wantedNotEnrolled, targetPending := 0, 0, 0
	for i := range in.Pods {
		pod := &in.Pods[i]
		d := mesh.DataPlaneOf(pod, in.Namespace)
		modes[d.Mode]++
		if d.Enrolled() {
			ambient++
		}
		if d.NotEnrolled() {
			wantedNotEnrolled++
			notEnrolled = append(notEnrolled, fmt.Sprintf("%s/%s: %s", pod.Namespace, pod.Name, d))
		}
		if d.Pending() {
			targetPending++
			pending = append(pending, fmt.Sprintf("%s/%s on %s", pod.Namespace, pod.Name, wording.Dash(pod.Spec.NodeName)))
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{pod.Namespace + "/" + pod.Name, "target", d.String(), wording.Dash(pod.Spec.NodeName), wording.Dash(pod.Status.PodIP)})
	}
	target := mesh.DataPlaneNone
	switch {
	case len(modes) > 1:
		target = "mixed"
	case len(modes) == 1:
		for m := range modes {
			target = m
		}
	}
	r.Facts["dataplane_target"] = target
	r.Facts["dataplane_target_ambient"] = ambient
	r.Facts["dataplane_target_not_enrolled"] = wantedNotEnrolled
	r.Facts["dataplane_not_enrolled_pods"] = notEnrolled
	if wantedNotEnrolled > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d pods of svc/%s are meant for ambient but not enrolled", wantedNotEnrolled, len(in.Pods), t.Service))
	}
	if len(pending) > 0 {
		r.Facts["dataplane_pending_pods"] = pending
	}
	if targetPending > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d pods of svc/%s are pending: their traffic is held until ztunnel on their node proxies them", targetPending, len(in.Pods), t.Service))
	}
	if in.NamespaceProblem != "" {
		warnings = append(warnings, in.NamespaceProblem+": whether its "+label.IoIstioDataplaneMode.Name+" label puts pods in ambient is unknown")
	}

	// The waypoint.
	b := in.Binding
	waypointPodWhy := ""
	r.Facts["waypoint_named"] = b.Use.Named
	r.Facts["waypoint_name"] = ""
	if !b.Use.Named {
		r.Facts["waypoint_ready_pods"] = 0
	}
	if b.Use.Named {
		r.Facts["waypoint_name"] = b.Use.Ref.String()
	}
	if b.State != mesh.WaypointUnknown {
		r.Facts["waypoint_state"] = b.State
	}
	r.Facts["waypoint_bound_condition"] = mesh.WaypointBoundCondition(in.Service)
	raw = append(raw, "waypoint: "+b.Why)
	if cond := mesh.WaypointBoundCondition(in.Service); cond != "" {
		raw = append(raw, "istiod's verdict on the Service (status condition istio.io/WaypointBound): "+cond)
	}
	if b.Use.Named {
		switch {
		case in.WaypointPodsRead:
			ready := podfacts.ReadyPods(in.WaypointPods)
			// A pod without status (a dump without it) is neither ready
			// nor not: none ready among such pods is not known.
			noStatus := 0
			for i := range in.WaypointPods {
				if in.WaypointPods[i].Status.Phase == "" && len(in.WaypointPods[i].Status.Conditions) == 0 {
					noStatus++
				}
			}
			if ready > 0 || noStatus == 0 {
				r.Facts["waypoint_ready_pods"] = ready
			} else {
				warnings = append(warnings, fmt.Sprintf("%d of the %d pods of waypoint %s have no status: whether one is ready is not known", noStatus, len(in.WaypointPods), b.Use.Ref))
			}
			var podWhy []string
			for i := range in.WaypointPods {
				wp := &in.WaypointPods[i]
				ok, _ := mesh.PodReady(wp)
				state := string(wp.Status.Phase)
				if !ok {
					why := podfacts.NotReadyReason(wp)
					state += ", not ready: " + why
					podWhy = append(podWhy, wp.Name+": "+why)
				}
				r.Evidence.Rows = append(r.Evidence.Rows, []string{wp.Namespace + "/" + wp.Name, "waypoint", state, wording.Dash(wp.Spec.NodeName), wording.Dash(wp.Status.PodIP)})
			}
			raw = append(raw, fmt.Sprintf("waypoint %s: %d pods, %d ready", b.Use.Ref, len(in.WaypointPods), ready))
			if ready == 0 && noStatus == 0 && b.State == mesh.WaypointBound {
				problems = append(problems, fmt.Sprintf("waypoint %s is bound but has no ready pod: the traffic sent to it finds no one", b.Use.Ref))
			}
			if ready == 0 && len(podWhy) > 0 {
				// Why the waypoint has no ready pod is what the on-call fixes.
				waypointPodWhy = "waypoint pod " + strings.Join(podWhy, ", ")
			}
		default:
			warnings = append(warnings, in.WaypointProblem)
		}
		if in.GatewaysProblem != "" {
			warnings = append(warnings, in.GatewaysProblem)
		}
		switch b.State {
		case mesh.WaypointMissing, mesh.WaypointNotReady, mesh.WaypointNotService, mesh.WaypointDenied, mesh.WaypointNotAGW:
			problems = append(problems, b.Why)
		}
	}
	switch {
	case b.State == mesh.WaypointBound && in.Source != nil:
		through, why := mesh.TraversesServiceWaypoint(ambientpath.CallerKind(in.Source), in.Service, in.Namespace)
		if ambientpath.CallerKind(in.Source) == mesh.DataPlaneWaypoint {
			through, why = false, "the caller is a waypoint's pod: it sends to the Service's pods directly, with the waypoint's identity"
		}
		r.Facts["waypoint_traversed"] = through
		raw = append(raw, "this caller and the waypoint: "+why)
	case in.Source != nil && b.State != mesh.WaypointUnknown:
		// No waypoint takes the Service's traffic: nobody goes through one.
		r.Facts["waypoint_traversed"] = false
	}
	onPath := in.OnPath()
	r.Facts["dataplane_ambient"] = onPath

	head := fmt.Sprintf("svc/%s: pods %s", t.Service, target)
	if in.Source != nil {
		head = fmt.Sprintf("caller %s, %s", r.Facts["dataplane_source"], head)
	}
	if b.Use.Named {
		head += fmt.Sprintf("; waypoint %s %s", b.Use.Ref, b.State)
	}
	if len(problems) > 0 && waypointPodWhy != "" {
		problems = append(problems, waypointPodWhy)
	}
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: warnings}.judge()
	if !onPath {
		raw = append(raw, "nothing on the path is in ambient: the sidecar steps apply")
	}
	r.Evidence.Raw = strings.Join(raw, "\n")
	return r
}

func dataplaneCommands(t cluster.Target, in ambientpath.Input) []string {
	cmds := []string{
		fmt.Sprintf("kubectl get namespace %s --show-labels", t.Namespace),
		fmt.Sprintf("kubectl get pods -n %s -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,MODE:.metadata.labels.istio\\.io/dataplane-mode,REDIRECTION:.metadata.annotations.ambient\\.istio\\.io/redirection", t.Namespace),
		fmt.Sprintf("kubectl get service %s -n %s -o jsonpath='{.metadata.labels}{\"\\n\"}{.status.conditions}'", t.Service, t.Namespace),
		"istioctl ztunnel-config workloads",
	}
	if in.Binding.Use.Named {
		ref := in.Binding.Use.Ref
		cmds = append(cmds,
			fmt.Sprintf("kubectl get gateways.gateway.networking.k8s.io %s -n %s -o yaml", ref.Name, ref.Namespace),
			fmt.Sprintf("kubectl get pods -n %s -l %s=%s", ref.Namespace, label.IoK8sNetworkingGatewayGatewayName.Name, ref.Name))
	}
	if t.Source != nil {
		cmds = append(cmds, fmt.Sprintf("kubectl get pod %s -n %s -o jsonpath='{.metadata.annotations.%s}'", t.Source.Name, t.Source.Namespace, strings.ReplaceAll(annotation.AmbientRedirection.Name, ".", "\\.")))
	}
	return cmds
}
