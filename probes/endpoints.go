package probes

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podfacts"
	"github.com/meshtriage/meshtriage/probes/wording"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// EndpointsProbe reads the Service's EndpointSlices (core Endpoints as a
// fallback) and checks targetPort against the selected pods' containerPorts.
type EndpointsProbe struct{}

func (EndpointsProbe) Meta() Meta {
	return Meta{
		ID:    "endpoints",
		Title: "Kubernetes endpoints and targetPort",
		Reads: []string{"endpointslices", "endpoints", "services", "pods"},
		Facts: []FactSpec{
			{"endpoints_ready", FactInt, "ready endpoint addresses"},
			{"endpoints_not_ready", FactInt, "endpoint addresses not ready (and not terminating)"},
			{"endpoints_terminating", FactInt, "endpoint addresses that are terminating"},
			{"endpoints_not_ready_pods", FactList, "not-ready pods with their readiness condition reason"},
			{"endpoints_port_mismatch", FactBool, "a service targetPort (number or name) matches no containerPort of a selected pod"},
			{"endpoints_mismatched_ports", FactList, "service ports whose targetPort matches no containerPort, as port->targetPort"},
			{"endpoints_declared_ports", FactList, "for a targetPort that matches no containerPort, what the selected pods declare instead, as port->targetPort (the pods declare NAME=PORT,...): the value to align the Service with"},
			{"endpoints_total", FactInt, "endpoint addresses of any state (0: the Service has no endpoint at all)"},
			{"endpoints_external_name", FactBool, "the Service is of type ExternalName: a DNS alias with no endpoints by design, which istiod routes as the host it names"},
			{"endpoints_source", FactString, "EndpointSlice or Endpoints: which API the counts came from; pods when the input holds neither and the selected pods stand in; none when there is nothing"},
		},
	}
}

type endpointsInput struct {
	Service *corev1.Service
	Slices  []discoveryv1.EndpointSlice
	// Pods are the pods the selector matches, plus pods named by not-ready
	// endpoints that the selector no longer matches.
	Pods map[string]*corev1.Pod
	// Selected are the names of the pods the selector matches.
	Selected []string
	// PodProblems says why a not-ready endpoint's pod could not be read.
	PodProblems map[string]string
	// InputLacksEndpoints: the source is an input with no EndpointSlice
	// or Endpoints at all, so a selector-less Service's endpoints are
	// unknown, not none.
	InputLacksEndpoints bool
}

func (p EndpointsProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchEndpoints(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = endpointsCommands(t, in.Service, nil)
		return r
	}
	return evaluateEndpoints(t, in)
}

func fetchEndpoints(ctx context.Context, c cluster.Cluster, t cluster.Target) (endpointsInput, string, error) {
	in := endpointsInput{Pods: map[string]*corev1.Pod{}, PodProblems: map[string]string{}}
	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	if err != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
	}
	in.Service = svc
	in.InputLacksEndpoints = cluster.InputLacksEndpoints(c)
	if in.Slices, err = c.EndpointSlices(ctx, t.Namespace, t.Service); err != nil {
		return in, fmt.Sprintf("list endpointslices of %s/%s", t.Namespace, t.Service), err
	}
	if len(svc.Spec.Selector) > 0 {
		pods, err := c.ListPods(ctx, t.Namespace, svc.Spec.Selector)
		if err != nil {
			return in, fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)), err
		}
		for i := range pods {
			in.Pods[pods[i].Name] = &pods[i]
			in.Selected = append(in.Selected, pods[i].Name)
		}
	}
	for _, s := range in.Slices {
		for _, ep := range s.Endpoints {
			ref := ep.TargetRef
			if endpointState(ep) != "not-ready" || ref == nil || ref.Kind != "Pod" || in.Pods[ref.Name] != nil {
				continue
			}
			ns := ref.Namespace
			if ns == "" {
				ns = t.Namespace
			}
			pod, err := c.GetPod(ctx, ns, ref.Name)
			switch {
			case err == nil:
				in.Pods[pod.Name] = pod
			case apierrors.IsNotFound(err):
				in.PodProblems[ref.Name] = "pod gone"
			default:
				in.PodProblems[ref.Name] = cluster.AccessProblem("get pod "+ns+"/"+ref.Name, err)
			}
		}
	}
	return in, "", nil
}

// convertedSliceName is how objects.Reader names slices it builds from core
// Endpoints.
var convertedSliceName = regexp.MustCompile(`-endpoints-\d+$`)

// endpointsAPI tells which API the slices came from. The EndpointSlice
// controllers (and the mirroring controller for hand-made Endpoints) always
// set the managed-by label; a slice the Reader converted from core Endpoints
// has none and is named "<svc>-endpoints-N". Hand-made slices without the
// label but with another name still count as EndpointSlice.
func endpointsAPI(svc string, slices []discoveryv1.EndpointSlice) string {
	if len(slices) == 0 {
		return "none"
	}
	for _, s := range slices {
		if _, managed := s.Labels[discoveryv1.LabelManagedBy]; managed {
			return "EndpointSlice"
		}
		if !strings.HasPrefix(s.Name, svc) || !convertedSliceName.MatchString(s.Name) {
			return "EndpointSlice"
		}
	}
	return "Endpoints"
}

// endpointState follows the EndpointConditions docs: a nil ready means
// ready, terminating wins over ready (publishNotReadyAddresses can keep a
// terminating endpoint ready).
func endpointState(ep discoveryv1.Endpoint) string {
	switch {
	case ep.Conditions.Terminating != nil && *ep.Conditions.Terminating:
		return "terminating"
	case ep.Conditions.Ready == nil || *ep.Conditions.Ready:
		return "ready"
	}
	return "not-ready"
}

func evaluateEndpoints(t cluster.Target, in endpointsInput) Result {
	r := Result{Status: StatusPass, Facts: Facts{}}
	svc := in.Service
	source := endpointsAPI(t.Service, in.Slices)
	if source == "none" && len(svc.Spec.Selector) > 0 && len(in.Selected) > 0 {
		source = "pods"
	}
	r.Facts["endpoints_source"] = source

	// The model lists what istiod sees: EndpointSlices, else Endpoints,
	// else (an input without either) the selected pods. One pod appears
	// once per address family (dual-stack) and sometimes in two slices
	// during an update: count each pod (or bare address) once.
	type seenEndpoint struct {
		state, addr, node, pod, why string
	}
	seen := map[string]*seenEndpoint{}
	var order []string
	for _, ep := range modelEndpoints(in) {
		key := "addr/" + ep.Address
		if ep.Pod != "" {
			key = "pod/" + ep.Pod
		}
		if e, ok := seen[key]; ok {
			if !strings.Contains(e.addr, ep.Address) {
				e.addr += "," + ep.Address
			}
			continue
		}
		state := "ready"
		switch {
		case ep.ReadyUnknown != "":
			state = "unknown"
		case ep.Terminating:
			state = "terminating"
		case !ep.Ready:
			state = "not-ready"
		}
		seen[key] = &seenEndpoint{state: state, addr: ep.Address, node: ep.Node, pod: ep.Pod}
		order = append(order, key)
	}
	sort.Strings(order)

	ready, notReady, terminating, readyUnknown := 0, 0, 0, 0
	notReadyPods := []string{}
	r.Evidence.Columns = []string{"address", "pod", "node", "state", "why"}
	for _, key := range order {
		e := seen[key]
		switch e.state {
		case "unknown":
			readyUnknown++
			e.why = "no Ready condition in the input"
		case "ready":
			ready++
		case "terminating":
			terminating++
		default:
			notReady++
			e.why = notReadyReason(e.pod, in)
			if e.pod != "" {
				notReadyPods = append(notReadyPods, e.pod+": "+e.why)
			} else {
				notReadyPods = append(notReadyPods, e.addr+": "+e.why)
			}
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{e.addr, wording.Dash(e.pod), wording.Dash(e.node), e.state, wording.Dash(e.why)})
	}
	r.Facts["endpoints_total"] = len(order)
	r.Facts["endpoints_ready"] = ready
	r.Facts["endpoints_not_ready"] = notReady
	r.Facts["endpoints_terminating"] = terminating
	r.Facts["endpoints_not_ready_pods"] = notReadyPods
	if readyUnknown > 0 {
		// Some pods' readiness is not in the input: the counts are not
		// known, and neither is "none ready".
		delete(r.Facts, "endpoints_ready")
		delete(r.Facts, "endpoints_not_ready")
	}

	mismatched, declared, portNotes := checkTargetPorts(t, svc, in)
	r.Facts["endpoints_port_mismatch"] = len(mismatched) > 0
	r.Facts["endpoints_mismatched_ports"] = mismatched
	r.Facts["endpoints_declared_ports"] = declared

	raw := []string{fmt.Sprintf("source: %s (%d slices)", source, len(in.Slices))}
	if source == "pods" {
		raw = append(raw, "the input holds no EndpointSlice or Endpoints for the Service: its endpoints are its selected pods, as the EndpointSlice controller would list them")
	}
	externalName := mesh.ExternalNameOf(svc)
	r.Facts["endpoints_external_name"] = externalName != ""
	if externalName != "" {
		raw = append(raw, "ExternalName service: DNS CNAME to "+externalName+", it never has endpoints; istiod builds no cluster for it and routes its host as "+externalName+"'s")
	}
	if svc.Spec.PublishNotReadyAddresses {
		raw = append(raw, "service sets publishNotReadyAddresses: endpoints are marked ready whatever the pods' readiness")
	}
	raw = append(raw, portNotes...)
	r.Evidence.Raw = strings.Join(raw, "\n")

	var problems, warnings []string
	if len(mismatched) > 0 {
		problems = append(problems, "targetPort matches no containerPort: "+strings.Join(declared, ", "))
	}
	unknownEndpoints := len(order) == 0 && len(svc.Spec.Selector) == 0 && externalName == "" && in.InputLacksEndpoints
	if unknownEndpoints {
		// Unknown is not none: the rules that read these stay undecided.
		for _, f := range []string{"endpoints_total", "endpoints_ready", "endpoints_not_ready", "endpoints_terminating"} {
			delete(r.Facts, f)
		}
		raw = append(raw, "the input holds no EndpointSlice or Endpoints at all (kubectl get all leaves them out): the endpoints of a Service without selector are not known")
		r.Evidence.Raw = strings.Join(raw, "\n")
	}
	switch {
	case readyUnknown > 0:
		warnings = append(warnings, fmt.Sprintf("the readiness of %s is not in the input (no EndpointSlice, no Ready condition)", wording.CountNoun(readyUnknown, "pod")))
	case externalName != "":
		// No endpoints by design: not a problem of this step.
	case unknownEndpoints:
		warnings = append(warnings, "the Service has no selector and the input holds no EndpointSlice or Endpoints: its endpoints are unknown (add `kubectl get endpointslices -o yaml` to the input)")
	case ready == 0 && len(in.Selected) > 0:
		problems = append(problems, fmt.Sprintf("no ready endpoint though %s selected", wording.CountNoun(len(in.Selected), "pod")))
	case len(order) == 0 && len(svc.Spec.Selector) == 0 && svc.Spec.Type != corev1.ServiceTypeExternalName:
		problems = append(problems, "the Service has no selector and no endpoint at all: nobody wrote its EndpointSlices or Endpoints, so every caller gets 503 UH")
	case ready == 0:
		problems = append(problems, "no ready endpoint")
	}
	if notReady > 0 {
		warnings = append(warnings, fmt.Sprintf("%d not ready", notReady))
	}
	if terminating > 0 {
		warnings = append(warnings, fmt.Sprintf("%d terminating", terminating))
	}
	head := fmt.Sprintf("%d ready endpoints", ready)
	switch {
	case externalName != "":
		head = "ExternalName Service: a DNS alias of " + externalName + ", no endpoints by design"
	case ready == 1:
		head = "1 ready endpoint"
	}
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: warnings,
		FailWithWarnings: true, FailWithoutHead: true, WarnSep: ", "}.judge()
	var notReadyNames []string
	for _, key := range order {
		if e := seen[key]; e.state == "not-ready" && e.pod != "" {
			notReadyNames = append(notReadyNames, e.pod)
		}
	}
	r.Commands = endpointsCommands(t, svc, notReadyNames)
	if source == "Endpoints" {
		r.Commands = append(r.Commands, fmt.Sprintf("kubectl get endpoints -n %s %s -o yaml", t.Namespace, t.Service))
	}
	return r
}

// notReadyReason says why pod's endpoint is not ready: the pod's Ready
// condition, then the first app or proxy container that is not ready and
// what state it is in.
func notReadyReason(pod string, in endpointsInput) string {
	if pod == "" {
		return "no pod behind this address"
	}
	if p := in.PodProblems[pod]; p != "" {
		return p
	}
	po := in.Pods[pod]
	if po == nil {
		return "pod not read"
	}
	return podfacts.NotReadyReason(po)
}

// checkTargetPorts compares each service port's targetPort (or only the
// target's port) with the selected pods' containerPorts.
//
// A named targetPort is resolved by Kubernetes against the pod's container
// port names (and protocol): a pod without that name gets no port in the
// EndpointSlice, so a missing name is always a mismatch. A numeric targetPort
// is used as is whether or not a container declares it (containerPort is
// informational), so the number alone proves nothing: it is reported as a
// mismatch only when the pod's app containers declare ports and none is that
// number, the shape of "the app moved to 8081 and the Service still says 8080".
func checkTargetPorts(t cluster.Target, svc *corev1.Service, in endpointsInput) (mismatched, declaredInstead, notes []string) {
	mismatched, declaredInstead = []string{}, []string{}
	if len(in.Selected) == 0 {
		notes = append(notes, "no selected pods: targetPort not checked")
		return mismatched, declaredInstead, notes
	}
	names := append([]string(nil), in.Selected...)
	sort.Strings(names)
	for _, sp := range svc.Spec.Ports {
		if t.Port != 0 && sp.Port != t.Port {
			continue
		}
		tp := podfacts.ServiceTargetPort(sp)
		proto := sp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		var bad, undeclared, instead []string
		for _, name := range names {
			pod := in.Pods[name]
			switch tp.Type {
			case intstr.String:
				if !podHasNamedPort(pod, tp.StrVal, proto) {
					d := wording.Dash(declaredPorts(pod, true))
					bad = append(bad, fmt.Sprintf("%s (declares %s)", name, d))
					instead = appendDeclared(instead, d)
				}
			default:
				declared := declaredPorts(pod, false)
				switch {
				case declared == "":
					undeclared = append(undeclared, name)
				case !podAppHasPortNumber(pod, tp.IntVal):
					bad = append(bad, fmt.Sprintf("%s (declares %s)", name, declared))
					instead = appendDeclared(instead, declared)
				}
			}
		}
		pair := fmt.Sprintf("%d->%s", sp.Port, tp.String())
		if len(bad) > 0 {
			mismatched = append(mismatched, pair)
			declaredInstead = append(declaredInstead, pair+" (the pods declare "+strings.Join(instead, " or ")+")")
			notes = append(notes, fmt.Sprintf("port %s matches no containerPort on: %s", pair, strings.Join(bad, ", ")))
		} else {
			notes = append(notes, fmt.Sprintf("port %s matches a containerPort on every selected pod", pair))
		}
		if len(undeclared) > 0 {
			notes = append(notes, fmt.Sprintf("port %s: %s declare no containerPort; Kubernetes forwards to the number anyway, so this is not proof of a mismatch",
				pair, strings.Join(undeclared, ", ")))
		}
	}
	return mismatched, declaredInstead, notes
}

func appendDeclared(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// podHasNamedPort resolves a named port the way Kubernetes does: any regular
// container (or native sidecar) port with that name and protocol.
func podHasNamedPort(pod *corev1.Pod, name string, proto corev1.Protocol) bool {
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...) {
		for _, p := range c.Ports {
			pp := p.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if p.Name == name && pp == proto {
				return true
			}
		}
	}
	return false
}

func podAppHasPortNumber(pod *corev1.Pod, n int32) bool {
	for _, c := range mesh.AppContainers(pod) {
		for _, p := range c.Ports {
			if p.ContainerPort == n {
				return true
			}
		}
	}
	return false
}

// declaredPorts lists the app containers' ports ("http=8080"); withAll
// lists every container's, as a named-port lookup sees them.
func declaredPorts(pod *corev1.Pod, withAll bool) string {
	containers := mesh.AppContainers(pod)
	if withAll {
		containers = append(append([]corev1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...)
	}
	var out []string
	for _, c := range containers {
		for _, p := range c.Ports {
			if p.Name != "" {
				out = append(out, fmt.Sprintf("%s=%d", p.Name, p.ContainerPort))
			} else {
				out = append(out, fmt.Sprint(p.ContainerPort))
			}
		}
	}
	return strings.Join(out, ",")
}

func endpointsCommands(t cluster.Target, svc *corev1.Service, notReadyPods []string) []string {
	cmds := []string{
		fmt.Sprintf("kubectl get endpointslices -n %s -l %s=%s -o wide", t.Namespace, discoveryv1.LabelServiceName, t.Service),
		fmt.Sprintf("kubectl get service -n %s %s -o jsonpath='{.spec.ports}'", t.Namespace, t.Service),
	}
	if svc != nil && len(svc.Spec.Selector) > 0 {
		cmds = append(cmds, fmt.Sprintf("kubectl get pods -n %s -l %s -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.containers[*].ports}{\"\\n\"}{end}'",
			t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)))
	}
	for i, p := range notReadyPods {
		if i == 3 {
			break
		}
		cmds = append(cmds, fmt.Sprintf("kubectl describe pod -n %s %s", t.Namespace, p))
	}
	return cmds
}

// modelEndpoints are the Service's endpoints on every port, as the config
// model lists them.
func modelEndpoints(in endpointsInput) []mesh.Endpoint {
	sd := &mesh.ServiceData{Service: in.Service, Slices: in.Slices, Pods: map[string]*corev1.Pod{}}
	for _, name := range in.Selected {
		sd.Pods[name] = in.Pods[name]
	}
	for name, p := range in.Pods {
		sd.Pods[name] = p
	}
	cfg := &mesh.Config{}
	var out []mesh.Endpoint
	for _, sp := range in.Service.Spec.Ports {
		out = append(out, cfg.Endpoints(sd, sp.Port)...)
	}
	if len(in.Service.Spec.Ports) == 0 {
		// A headless Service without ports: its slices' addresses as they are.
		for _, sl := range in.Slices {
			for _, ep := range sl.Endpoints {
				for _, a := range ep.Addresses {
					e := mesh.Endpoint{Address: a, Ready: ep.Conditions.Ready == nil || *ep.Conditions.Ready, Terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating}
					if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
						e.Pod = ep.TargetRef.Name
					}
					out = append(out, e)
				}
			}
		}
	}
	return out
}
