package probes

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podfacts"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
	"istio.io/api/annotation"
	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
)

// TargetProbe resolves the Service and the pods it selects, and whether those
// pods carry a sidecar: every other probe's reading depends on these.
type TargetProbe struct{}

func (TargetProbe) Meta() Meta {
	return Meta{
		ID:    "target",
		Title: "Service, selector and selected pods",
		Reads: []string{"services", "pods", "namespaces", "endpointslices of the Service in every cluster (--remote-contexts)"},
		Facts: []FactSpec{
			{"target_service_found", FactBool, "the Service exists"},
			{"target_selector_empty", FactBool, "the Service has no selector (endpoints managed by hand)"},
			{"target_pods_selected", FactInt, "pods matched by the Service selector"},
			{"target_endpoints", FactInt, "endpoint addresses the Service's EndpointSlices (or Endpoints) hold: the EndpointSlice controller empties a Service whose selector matches no pod, so endpoints without a selected pod mean an input that lacks its pods"},
			{"target_remotes_given", FactBool, "other clusters were given to read (--remote-contexts): the Service's pods may be there"},
			{"target_remote_endpoints", FactInt, "endpoint addresses the Service's EndpointSlices hold in the other clusters given (istiod merges them into the Service in a multi-cluster mesh); 0 when none was given; absent when one could not be read"},
			{"target_pods_with_sidecar", FactInt, "selected pods with an istio-proxy (classic container or native sidecar init container)"},
			{"target_pods_without_sidecar", FactInt, "selected pods without an istio-proxy"},
			{"target_namespace_injection", FactString, "namespace injection setting: enabled, disabled, revision=<rev> or none (absent when the namespace cannot be read)"},
			{"target_ports", FactList, "service ports as port/targetPort/protocol"},
			{"target_port_found", FactBool, "the port named with --port is a port of the Service (true when no port was named)"},
			{"target_source_named", FactBool, "a source pod was named with --from"},
			{"target_source_found", FactBool, "the source pod named with --from exists (false when none was named)"},
			{"target_source_has_sidecar", FactBool, "the source pod carries an istio-proxy (false when none was named)"},
			{"target_source_gateway", FactBool, "the source pod is an Istio gateway: its istio-proxy runs `proxy router` (istio-ingressgateway, an egress gateway, a Gateway API Gateway's Deployment); false when none was named"},
		},
	}
}

type targetInput struct {
	// NamespaceFound is false only when the API said the namespace does not
	// exist; NamespaceProblem is set when it could not be read at all.
	NamespaceFound   bool
	Namespace        *corev1.Namespace
	NamespaceProblem string

	Service *corev1.Service // nil: the Service does not exist
	Pods    []corev1.Pod
	// Endpoints counts the addresses of the Service's slices; -1 when
	// they could not be read.
	Endpoints int
	// RemotesGiven: other clusters were given; RemoteEndpoints counts the
	// addresses of the Service's slices there (-1 when one could not be
	// read: RemoteProblem says which).
	RemotesGiven    bool
	RemoteEndpoints int
	RemoteProblem   string

	// Source is nil when no source was named, or it does not exist
	// (SourceFound false), or it could not be read (SourceProblem).
	Source        *corev1.Pod
	SourceFound   bool
	SourceProblem string
}

func (p TargetProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchTarget(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = targetCommands(t, nil)
		return r
	}
	return evaluateTarget(t, in)
}

// fetchTarget fails only when the Service or its pods cannot be read; a
// namespace or source pod it cannot read leaves those facts unknown.
func fetchTarget(ctx context.Context, c cluster.Cluster, t cluster.Target) (targetInput, string, error) {
	var in targetInput
	ns, err := c.GetNamespace(ctx, t.Namespace)
	switch {
	case err == nil:
		in.NamespaceFound, in.Namespace = true, ns
	case apierrors.IsNotFound(err) && !cluster.IsMissingKind(err):
		return in, "", nil
	default:
		// Namespace-scoped on-call roles often cannot get namespaces; the
		// Service is still worth reading.
		in.NamespaceFound = true
		in.NamespaceProblem = cluster.AccessProblem("get namespace "+t.Namespace, err)
	}

	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
	default:
		in.Service = svc
		var (
			pods           []corev1.Pod
			slices         []discoveryv1.EndpointSlice
			podErr, epsErr error
			g              readgroup.Group
		)
		if len(svc.Spec.Selector) > 0 {
			g.Go(func() { pods, podErr = c.ListPods(ctx, t.Namespace, svc.Spec.Selector) })
		}
		// The endpoints probe's read: the cache serves it to both.
		g.Go(func() { slices, epsErr = c.EndpointSlices(ctx, t.Namespace, t.Service) })
		g.Wait()
		if podErr != nil {
			return in, fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)), podErr
		}
		in.Pods, in.Endpoints = pods, -1
		if epsErr == nil {
			in.Endpoints = mesh.SliceAddresses(slices)
		}
	}

	in.RemotesGiven, in.RemoteEndpoints, in.RemoteProblem = remoteEndpointCount(ctx, c, t)

	if t.Source != nil {
		pod, err := c.GetPod(ctx, t.Source.Namespace, t.Source.Name)
		switch {
		case err == nil:
			in.Source, in.SourceFound = pod, true
		case apierrors.IsNotFound(err):
		default:
			in.SourceProblem = cluster.AccessProblem("get pod "+t.Source.String(), err)
		}
	}
	return in, "", nil
}

// remoteEndpointCount counts the addresses of the Service's
// EndpointSlices in the other clusters given: in a multi-cluster mesh a
// selector that matches no pod here is no cause while they hold some.
func remoteEndpointCount(ctx context.Context, c cluster.Cluster, t cluster.Target) (given bool, count int, problem string) {
	remotes, unread := cluster.RemoteClusters(c)
	if unread != "" {
		return false, 0, ""
	}
	counts := make([]int, len(remotes))
	problems := make([]string, len(remotes))
	var g readgroup.Group
	for i, r := range remotes {
		g.Go(func() {
			slices, err := r.Cluster.EndpointSlices(ctx, t.Namespace, t.Service)
			if err != nil {
				problems[i] = r.Context + ": " + cluster.AccessProblem("list the EndpointSlices of "+t.Namespace+"/"+t.Service, err)
				return
			}
			counts[i] = mesh.SliceAddresses(slices)
		})
	}
	g.Wait()
	var missing []string
	for i := range remotes {
		count += counts[i]
		if problems[i] != "" {
			missing = append(missing, problems[i])
		}
	}
	if len(missing) > 0 {
		return true, -1, strings.Join(missing, "; ")
	}
	return true, count, ""
}

func evaluateTarget(t cluster.Target, in targetInput) Result {
	r := Result{Status: StatusPass, Facts: Facts{}, Commands: targetCommands(t, in.Service)}
	var raw []string

	if !in.NamespaceFound || in.Service == nil {
		r.Status = StatusFail
		r.Facts["target_service_found"] = false
		r.Facts["target_pods_selected"] = 0
		if !in.NamespaceFound {
			r.Summary = fmt.Sprintf("namespace %s not found", t.Namespace)
			r.Commands = []string{"kubectl get namespaces"}
		} else {
			r.Summary = fmt.Sprintf("service %s not found in namespace %s", t.Service, t.Namespace)
			r.Commands = []string{"kubectl get services -n " + t.Namespace}
		}
		return r
	}

	svc := in.Service
	selector := svc.Spec.Selector
	r.Facts["target_service_found"] = true
	r.Facts["target_selector_empty"] = len(selector) == 0
	r.Facts["target_ports"] = servicePortStrings(svc)
	portFound := t.Port == 0
	for _, sp := range svc.Spec.Ports {
		if sp.Port == t.Port {
			portFound = true
		}
	}
	r.Facts["target_port_found"] = portFound

	raw = append(raw, fmt.Sprintf("service %s/%s type %s clusterIP %s selector %s ports %s",
		svc.Namespace, svc.Name, svc.Spec.Type, wording.Dash(svc.Spec.ClusterIP),
		wording.Dash(labels.SelectorFromSet(selector).String()), strings.Join(servicePortStrings(svc), ",")))

	nsInjection := ""
	if in.NamespaceProblem != "" {
		raw = append(raw, in.NamespaceProblem+": namespace injection unknown")
	} else {
		nsInjection = mesh.NamespaceInjection(in.Namespace)
		r.Facts["target_namespace_injection"] = nsInjection
		raw = append(raw, fmt.Sprintf("namespace %s injection: %s", t.Namespace, nsInjection))
	}

	pods := append([]corev1.Pod(nil), in.Pods...)
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	withSidecar, withoutSidecar := 0, 0
	r.Evidence.Columns = []string{"pod", "phase", "ready", "sidecar", "node", "ip", "injection"}
	for i := range pods {
		pod := &pods[i]
		kind := mesh.PodSidecar(pod)
		if kind == mesh.SidecarNone {
			withoutSidecar++
		} else {
			withSidecar++
		}
		ready, _ := mesh.PodReady(pod)
		injection := "unknown (namespace unreadable)"
		if in.NamespaceProblem == "" {
			injection = podInjection(nsInjection, pod)
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{
			pod.Name, string(pod.Status.Phase), wording.YesNo(ready), string(kind), wording.Dash(pod.Spec.NodeName), wording.Dash(pod.Status.PodIP), injection,
		})
	}
	r.Facts["target_pods_selected"] = len(pods)
	if in.Endpoints >= 0 {
		r.Facts["target_endpoints"] = in.Endpoints
	}
	r.Facts["target_remotes_given"] = in.RemotesGiven
	if in.RemoteEndpoints >= 0 {
		r.Facts["target_remote_endpoints"] = in.RemoteEndpoints
	}
	if in.RemotesGiven {
		if in.RemoteProblem != "" {
			raw = append(raw, "endpoints in the other clusters given: not known: "+in.RemoteProblem)
		} else {
			raw = append(raw, fmt.Sprintf("endpoints in the other clusters given: %d", in.RemoteEndpoints))
		}
	}
	r.Facts["target_pods_with_sidecar"] = withSidecar
	r.Facts["target_pods_without_sidecar"] = withoutSidecar

	var problems, warnings []string
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		warnings = append(warnings, "ExternalName service (DNS alias of "+svc.Spec.ExternalName+"): no pods or endpoints behind it")
	case len(selector) == 0:
		warnings = append(warnings, "service has no selector: its endpoints are managed by hand")
	case len(pods) == 0 && in.Endpoints > 0:
		warnings = append(warnings, fmt.Sprintf("selector %s matches no pod in the input, yet the Service has %d endpoints: the input may not hold its pods", labels.SelectorFromSet(selector), in.Endpoints))
	case len(pods) == 0 && in.RemoteEndpoints > 0:
		warnings = append(warnings, fmt.Sprintf("selector %s matches no pod in this cluster; the other clusters given hold %d endpoints of the Service", labels.SelectorFromSet(selector), in.RemoteEndpoints))
	case len(pods) == 0 && in.RemoteEndpoints < 0:
		warnings = append(warnings, fmt.Sprintf("selector %s matches no pod in this cluster, and the other clusters' endpoints are not known (%s)", labels.SelectorFromSet(selector), in.RemoteProblem))
	case len(pods) == 0:
		problems = append(problems, fmt.Sprintf("selector %s matches no pods", labels.SelectorFromSet(selector)))
	}
	if !portFound {
		problems = append(problems, fmt.Sprintf("service has no port %d (ports %s)", t.Port, strings.Join(servicePortStrings(svc), ",")))
	}
	if withoutSidecar > 0 {
		warnings = append(warnings, fmt.Sprintf("%d of %d pods without istio-proxy", withoutSidecar, len(pods)))
	}

	r.Facts["target_source_named"] = t.Source != nil
	r.Facts["target_source_found"] = false
	r.Facts["target_source_has_sidecar"] = false
	r.Facts["target_source_gateway"] = false
	switch {
	case t.Source == nil:
		raw = append(raw, "no source pod named (--from): source facts are false, not measured")
	case in.SourceProblem != "":
		// Unknown is not "absent": leave the source facts out.
		delete(r.Facts, "target_source_found")
		delete(r.Facts, "target_source_has_sidecar")
		delete(r.Facts, "target_source_gateway")
		warnings = append(warnings, in.SourceProblem)
		raw = append(raw, in.SourceProblem)
	case !in.SourceFound:
		problems = append(problems, fmt.Sprintf("source pod %s not found", t.Source))
		raw = append(raw, fmt.Sprintf("source pod %s not found", t.Source))
	default:
		kind := mesh.PodSidecar(in.Source)
		r.Facts["target_source_found"] = true
		r.Facts["target_source_has_sidecar"] = kind != mesh.SidecarNone
		raw = append(raw, fmt.Sprintf("source pod %s: phase %s, sidecar %s", t.Source, in.Source.Status.Phase, kind))
		gateway, why := mesh.GatewayPod(in.Source)
		r.Facts["target_source_gateway"] = gateway
		if gateway {
			raw = append(raw, fmt.Sprintf("source pod %s is an Istio gateway (%s): Gateways and the VirtualServices bound to them route its requests", t.Source, why))
		}
		if kind == mesh.SidecarNone {
			warnings = append(warnings, fmt.Sprintf("source %s has no istio-proxy", t.Source))
		}
	}
	if in.NamespaceProblem != "" {
		warnings = append(warnings, in.NamespaceProblem)
	}

	head := fmt.Sprintf("svc/%s: %s selected, %d with sidecar", t.Service, wording.CountNoun(len(pods), "pod"), withSidecar)
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: warnings, FailWithWarnings: true}.judge()
	r.Evidence.Raw = strings.Join(raw, "\n")
	return r
}

// servicePortStrings renders each port as port/targetPort/protocol; an unset
// targetPort means the port itself, as Kubernetes defaults it.
func servicePortStrings(svc *corev1.Service) []string {
	out := []string{}
	for _, sp := range svc.Spec.Ports {
		proto := sp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		tp := podfacts.ServiceTargetPort(sp)
		out = append(out, fmt.Sprintf("%d/%s/%s", sp.Port, tp.String(), proto))
	}
	return out
}

// podInjection says whether the injector would give pod a sidecar, following
// Istio's documented policy: if either the namespace or the pod says
// disabled, no; if either says enabled, yes; otherwise no. The pod's
// sidecar.istio.io/inject label takes precedence over the deprecated
// annotation of the same name; a pod istio.io/rev label opts in to that
// revision.
func podInjection(nsInjection string, pod *corev1.Pod) string {
	podSetting, from := "", ""
	if v, ok := pod.Labels[label.SidecarInject.Name]; ok {
		podSetting, from = v, "pod label"
	} else if v, ok := pod.Annotations[annotation.SidecarInject.Name]; ok {
		podSetting, from = v, "pod annotation"
	}
	podOff, podOn := false, false
	if from != "" {
		b, err := strconv.ParseBool(podSetting)
		podOff = err == nil && !b
		// Only the label opts a pod in where the namespace is unlabelled: the
		// webhook's object selector reads labels, so the annotation can only
		// opt out.
		podOn = err == nil && b && from == "pod label"
	}
	podRev := pod.Labels[label.IoIstioRev.Name]
	switch {
	case nsInjection == "disabled":
		return "off (namespace disabled)"
	case podOff:
		return fmt.Sprintf("off (%s %s=%s)", from, label.SidecarInject.Name, podSetting)
	case nsInjection == "enabled" || strings.HasPrefix(nsInjection, "revision="):
		return "on (namespace " + nsInjection + ")"
	case podOn:
		return fmt.Sprintf("on (%s %s=%s)", from, label.SidecarInject.Name, podSetting)
	case podRev != "":
		return fmt.Sprintf("on (pod label %s=%s)", label.IoIstioRev.Name, podRev)
	}
	return "off (no injection label)"
}

func targetCommands(t cluster.Target, svc *corev1.Service) []string {
	cmds := []string{
		fmt.Sprintf("kubectl get service -n %s %s -o yaml", t.Namespace, t.Service),
		fmt.Sprintf("kubectl get namespace %s --show-labels", t.Namespace),
	}
	if svc != nil && len(svc.Spec.Selector) > 0 {
		cmds = append(cmds, fmt.Sprintf("kubectl get pods -n %s -l %s -o wide", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)))
	}
	if t.Source != nil {
		cmds = append(cmds, fmt.Sprintf("kubectl get pod -n %s %s -o jsonpath='{.spec.initContainers[*].name} {.spec.containers[*].name}'", t.Source.Namespace, t.Source.Name))
	}
	return cmds
}
