package probes

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podfacts"
	"github.com/meshtriage/meshtriage/probes/wording"
	"istio.io/api/annotation"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PortExclusionProbe reports what the target and source pods exclude from
// traffic capture: the istio-iptables arguments of the injected init
// container, which merge the traffic.sidecar.istio.io annotations with the
// injector's mesh-wide values, or the annotations alone (CNI without a
// validation container). That traffic bypasses the sidecar and mTLS.
type PortExclusionProbe struct{}

func (PortExclusionProbe) Meta() Meta {
	return Meta{
		ID:    "port-exclusion",
		Title: "Ports excluded from interception",
		Reads: []string{"services", "pods"},
		Facts: []FactSpec{
			{"exclusion_outbound_ports", FactList, "excludeOutboundPorts on the source pod (on the target pods when no source is named)"},
			{"exclusion_inbound_ports", FactList, "excludeInboundPorts on the target pods"},
			{"exclusion_target_port_bypassed", FactBool, "the target's port (service port or targetPort) or address is excluded from interception on the source or a target pod"},
		},
	}
}

// exclusionSecurityNote is said whenever traffic to the target bypasses a
// sidecar: it is a finding to fix, never a fix to recommend.
const exclusionSecurityNote = "traffic that bypasses the sidecar skips mTLS, AuthorizationPolicy and telemetry: treat an exclusion as a security exception, never as the fix for a 503"

type portExclusionInput struct {
	Service *corev1.Service
	Pods    []corev1.Pod
	Source  *corev1.Pod // nil when no source was named
}

func (p PortExclusionProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchPortExclusion(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = exclusionCommands(t, in.Service)
		return r
	}
	return evaluatePortExclusion(t, in)
}

func fetchPortExclusion(ctx context.Context, c cluster.Cluster, t cluster.Target) (portExclusionInput, string, error) {
	var in portExclusionInput
	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	if err != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
	}
	in.Service = svc
	if len(svc.Spec.Selector) > 0 {
		if in.Pods, err = c.ListPods(ctx, t.Namespace, svc.Spec.Selector); err != nil {
			return in, fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)), err
		}
	}
	if t.Source != nil {
		if in.Source, err = c.GetPod(ctx, t.Source.Namespace, t.Source.Name); err != nil {
			return in, "get pod " + t.Source.String(), err
		}
	}
	return in, "", nil
}

// interception is what one pod's traffic capture excludes and includes. A
// nil include list means the setting is absent: Istio then captures
// everything ("*").
type interception struct {
	excludeOut, excludeIn, includeOut []string // ports
	includeIn                         *[]string
	excludeOutRanges                  []string
	includeOutRanges                  *[]string
	// from names the injected init container whose istio-iptables
	// arguments these came from; "" when they are the pod's annotations.
	from string
}

// source names where one setting was read, for the evidence table.
func (ic interception) source(ann annotation.Instance, flag string) string {
	if ic.from == "" {
		return ann.Name
	}
	return fmt.Sprintf("%s %s (%s)", ic.from, flag, strings.TrimPrefix(ann.Name, "traffic.sidecar.istio.io/"))
}

func annotationList(pod *corev1.Pod, name string) (list []string, set bool) {
	v, ok := pod.Annotations[name]
	if !ok {
		return nil, false
	}
	return splitList(v), true
}

// istioOwnInboundPorts are excluded by every injected pod (Prometheus
// merge, health, Envoy stats): they say nothing about the app's traffic.
var istioOwnInboundPorts = map[string]bool{"15020": true, "15021": true, "15090": true}

// iptablesArgs finds the istio-iptables command line of the injected init
// container (istio-init, or istio-validation under the CNI plugin): the
// annotations merged with the injector's mesh-wide values, as the pod's
// iptables actually apply them. Flags are the injector's short ones with
// their value in the next argument.
func iptablesArgs(pod *corev1.Pod) (flags map[string]string, from string, ok bool) {
	for _, c := range pod.Spec.InitContainers {
		if c.Name != "istio-init" && c.Name != "istio-validation" {
			continue
		}
		argv := append(append([]string(nil), c.Command...), c.Args...)
		if !slices.ContainsFunc(argv, func(a string) bool { return a == "istio-iptables" || strings.HasSuffix(a, "/istio-iptables") }) {
			continue
		}
		flags = map[string]string{}
		for i := 0; i+1 < len(argv); i++ {
			if a := argv[i]; len(a) == 2 && a[0] == '-' {
				flags[a] = argv[i+1]
				i++
			}
		}
		return flags, c.Name, true
	}
	return nil, "", false
}

// splitList reads a comma-separated setting, blanks dropped.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func readInterception(pod *corev1.Pod) interception {
	var ic interception
	if flags, from, ok := iptablesArgs(pod); ok {
		ic.from = from
		ic.excludeOut = splitList(flags["-o"])
		for _, p := range splitList(flags["-d"]) {
			if !istioOwnInboundPorts[p] {
				ic.excludeIn = append(ic.excludeIn, p)
			}
		}
		ic.includeOut = splitList(flags["-q"])
		if v, ok := flags["-b"]; ok {
			l := splitList(v)
			ic.includeIn = &l
		}
		ic.excludeOutRanges = splitList(flags["-x"])
		if v, ok := flags["-i"]; ok {
			l := splitList(v)
			ic.includeOutRanges = &l
		}
		return ic
	}
	ic.excludeOut, _ = annotationList(pod, annotation.SidecarTrafficExcludeOutboundPorts.Name)
	ic.excludeIn, _ = annotationList(pod, annotation.SidecarTrafficExcludeInboundPorts.Name)
	ic.includeOut, _ = annotationList(pod, annotation.SidecarTrafficIncludeOutboundPorts.Name)
	if l, ok := annotationList(pod, annotation.SidecarTrafficIncludeInboundPorts.Name); ok {
		ic.includeIn = &l
	}
	ic.excludeOutRanges, _ = annotationList(pod, annotation.SidecarTrafficExcludeOutboundIPRanges.Name)
	if l, ok := annotationList(pod, annotation.SidecarTrafficIncludeOutboundIPRanges.Name); ok {
		ic.includeOutRanges = &l
	}
	return ic
}

func portListed(list []string, port int32) bool {
	for _, p := range list {
		if p == "*" || p == strconv.Itoa(int(port)) {
			return true
		}
	}
	return false
}

// addrInRanges reports whether addr falls in one of the CIDRs; "*" covers all.
func addrInRanges(ranges []string, addr string) bool {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	for _, r := range ranges {
		if r == "*" {
			return true
		}
		if p, err := netip.ParsePrefix(r); err == nil && p.Contains(ip) {
			return true
		}
	}
	return false
}

func evaluatePortExclusion(t cluster.Target, in portExclusionInput) Result {
	r := Result{Status: StatusPass, Facts: Facts{}, Commands: exclusionCommands(t, in.Service)}
	svc := in.Service
	var ports []corev1.ServicePort
	for _, sp := range svc.Spec.Ports {
		if t.Port == 0 || sp.Port == t.Port {
			ports = append(ports, sp)
		}
	}
	pods := append([]corev1.Pod(nil), in.Pods...)
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })

	r.Evidence.Columns = []string{"pod", "role", "setting", "value", "effect on the target"}
	row := func(pod *corev1.Pod, role, ann string, list []string, effect string) {
		r.Evidence.Rows = append(r.Evidence.Rows, []string{pod.Name, role, ann, strings.Join(list, ","), effect})
	}
	var bypasses []string
	outbound := map[string]bool{}
	inbound := map[string]bool{}

	// Client side: the source's iptables see the Service's ClusterIP and
	// port (or, for a headless service, the pod IP and targetPort).
	if in.Source != nil {
		ic := readInterception(in.Source)
		meshed := mesh.PodSidecar(in.Source) != mesh.SidecarNone
		for _, p := range ic.excludeOut {
			outbound[p] = true
		}
		var hit []string
		for _, sp := range ports {
			if portListed(ic.excludeOut, sp.Port) {
				hit = append(hit, strconv.Itoa(int(sp.Port)))
			}
			for i := range pods {
				if tp := podfacts.ResolvedTargetPort(sp, &pods[i]); tp != 0 && tp != sp.Port && portListed(ic.excludeOut, tp) && svc.Spec.ClusterIP == corev1.ClusterIPNone {
					hit = append(hit, strconv.Itoa(int(tp)))
				}
			}
		}
		hit = wording.UniqueNonEmpty(hit...)
		if len(ic.excludeOut) > 0 {
			effect := "none"
			if len(hit) > 0 && meshed {
				effect = "bypasses the source sidecar for port " + strings.Join(hit, ",")
				bypasses = append(bypasses, fmt.Sprintf("%s excludes outbound port %s", in.Source.Name, strings.Join(hit, ",")))
			}
			row(in.Source, "source", ic.source(annotation.SidecarTrafficExcludeOutboundPorts, "-o"), ic.excludeOut, effect)
		}
		addrs := []string{svc.Spec.ClusterIP}
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			addrs = nil
			for i := range pods {
				addrs = append(addrs, pods[i].Status.PodIP)
			}
		}
		forcedPort := false
		for _, sp := range ports {
			forcedPort = forcedPort || portListed(ic.includeOut, sp.Port)
		}
		if forcedPort && (len(ic.excludeOutRanges) > 0 || ic.includeOutRanges != nil) {
			row(in.Source, "source", ic.source(annotation.SidecarTrafficIncludeOutboundPorts, "-q"), ic.includeOut, "captures the service port whatever the IP ranges say")
		}
		for _, a := range addrs {
			if a == "" || forcedPort {
				continue
			}
			if len(ic.excludeOutRanges) > 0 && addrInRanges(ic.excludeOutRanges, a) && meshed {
				bypasses = append(bypasses, fmt.Sprintf("%s excludes outbound range covering %s", in.Source.Name, a))
				row(in.Source, "source", ic.source(annotation.SidecarTrafficExcludeOutboundIPRanges, "-x"), ic.excludeOutRanges, "covers "+a+": bypasses the source sidecar")
			}
			if ic.includeOutRanges != nil && !addrInRanges(*ic.includeOutRanges, a) && meshed {
				bypasses = append(bypasses, fmt.Sprintf("%s captures only outbound ranges %s, not %s", in.Source.Name, wording.Dash(strings.Join(*ic.includeOutRanges, ",")), a))
				row(in.Source, "source", ic.source(annotation.SidecarTrafficIncludeOutboundIPRanges, "-i"), *ic.includeOutRanges, "does not cover "+a+": bypasses the source sidecar")
			}
		}
	}

	// Server side: a target pod's iptables see the pod port (targetPort).
	for i := range pods {
		pod := &pods[i]
		ic := readInterception(pod)
		meshed := mesh.PodSidecar(pod) != mesh.SidecarNone
		for _, p := range ic.excludeIn {
			inbound[p] = true
		}
		if in.Source == nil {
			for _, p := range ic.excludeOut {
				outbound[p] = true
			}
			if len(ic.excludeOut) > 0 {
				row(pod, "target", ic.source(annotation.SidecarTrafficExcludeOutboundPorts, "-o"), ic.excludeOut, "its own outbound calls only")
			}
		}
		var excluded, notIncluded []string
		for _, sp := range ports {
			tp := podfacts.ResolvedTargetPort(sp, pod)
			if tp == 0 {
				continue
			}
			if portListed(ic.excludeIn, tp) {
				excluded = append(excluded, strconv.Itoa(int(tp)))
			}
			if ic.includeIn != nil && !portListed(*ic.includeIn, tp) {
				notIncluded = append(notIncluded, strconv.Itoa(int(tp)))
			}
		}
		if len(ic.excludeIn) > 0 {
			effect := "none"
			if len(excluded) > 0 && meshed {
				effect = "bypasses this pod's sidecar for port " + strings.Join(excluded, ",")
				bypasses = append(bypasses, fmt.Sprintf("%s excludes inbound port %s", pod.Name, strings.Join(excluded, ",")))
			}
			row(pod, "target", ic.source(annotation.SidecarTrafficExcludeInboundPorts, "-d"), ic.excludeIn, effect)
		}
		if ic.includeIn != nil && len(notIncluded) > 0 && meshed {
			bypasses = append(bypasses, fmt.Sprintf("%s captures only inbound ports %s, not %s", pod.Name, wording.Dash(strings.Join(*ic.includeIn, ",")), strings.Join(notIncluded, ",")))
			row(pod, "target", ic.source(annotation.SidecarTrafficIncludeInboundPorts, "-b"), *ic.includeIn, "port "+strings.Join(notIncluded, ",")+" not captured")
		}
		if len(ic.excludeOutRanges) > 0 && in.Source == nil {
			row(pod, "target", ic.source(annotation.SidecarTrafficExcludeOutboundIPRanges, "-x"), ic.excludeOutRanges, "its own outbound calls only")
		}
	}

	setList := func(m map[string]bool) []string {
		out := []string{}
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	r.Facts["exclusion_outbound_ports"] = setList(outbound)
	r.Facts["exclusion_inbound_ports"] = setList(inbound)
	r.Facts["exclusion_target_port_bypassed"] = len(bypasses) > 0

	var raw []string
	if in.Source == nil {
		raw = append(raw, "no source pod named (--from): client-side exclusions not checked")
	} else if mesh.PodSidecar(in.Source) == mesh.SidecarNone {
		raw = append(raw, in.Source.Name+" has no sidecar: nothing it sends is intercepted, exclusions or not")
	}
	for i := range pods {
		if mesh.PodSidecar(&pods[i]) == mesh.SidecarNone {
			raw = append(raw, pods[i].Name+" has no sidecar: its annotations have no effect")
		}
	}
	switch {
	case len(bypasses) > 0:
		r.Status = StatusWarn
		r.Summary = "traffic to the target bypasses the sidecar: " + strings.Join(bypasses, "; ")
		raw = append(raw, exclusionSecurityNote)
	case len(r.Evidence.Rows) > 0:
		r.Summary = "interception exclusions present, none covers the target's port"
	default:
		r.Summary = "no interception exclusions on the source or target pods"
	}
	r.Evidence.Raw = strings.Join(raw, "\n")
	return r
}

func exclusionCommands(t cluster.Target, svc *corev1.Service) []string {
	var cmds []string
	jsonpath := `-o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.metadata.annotations}{"\n"}{end}' | grep traffic.sidecar.istio.io`
	if svc != nil && len(svc.Spec.Selector) > 0 {
		cmds = append(cmds, fmt.Sprintf("kubectl get pods -n %s -l %s %s", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector), jsonpath))
	}
	if t.Source != nil {
		cmds = append(cmds, fmt.Sprintf("kubectl get pod -n %s %s -o jsonpath='{.metadata.annotations}'", t.Source.Namespace, t.Source.Name),
			fmt.Sprintf(`kubectl get pod -n %s %s -o jsonpath='{.spec.initContainers[?(@.name=="istio-init")].args}'`, t.Source.Namespace, t.Source.Name))
	}
	return cmds
}
