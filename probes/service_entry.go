package probes

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/wording"
	"istio.io/api/annotation"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
)

// ServiceEntryProbe checks external hosts the source reaches under
// outboundTrafficPolicy REGISTRY_ONLY: without a ServiceEntry visible to the
// source namespace, Envoy sends them to BlackHoleCluster.
type ServiceEntryProbe struct{}

func (ServiceEntryProbe) Meta() Meta {
	return Meta{
		ID:    "service-entry",
		Title: "ServiceEntry for external hosts (REGISTRY_ONLY)",
		Reads: []string{"serviceentries", "sidecars", "configmaps (mesh config)", "pods", "pods/log (istio-proxy)"},
		Facts: []FactSpec{
			{"se_registry_only", FactBool, "outboundTrafficPolicy is REGISTRY_ONLY for the source: the mesh config, or a Sidecar that selects the source"},
			{"se_unregistered_hosts", FactList, "external hosts sent to BlackHoleCluster with no ServiceEntry"},
			{"se_hidden_hosts", FactList, "hosts whose ServiceEntry exportTo hides it from the source namespace"},
			{"se_rules_partial", FactString, "why the ServiceEntries read are not every namespace's (listing them across all namespaces was refused); empty when they are: \"no ServiceEntry\" and \"hidden by exportTo\" are then not certain"},
			{"se_in_cluster_hosts", FactList, "in-cluster Service hosts (NAME.NAMESPACE.svc[.DOMAIN]) sent to BlackHoleCluster: a Sidecar egress list or the Service's exportTo hides them, a ServiceEntry is not the fix"},
		},
	}
}

type seInput struct {
	Mesh mesh.MeshConfig
	// Sidecar is the Sidecar resource that applies to the source, if any.
	Sidecar *networkingv1.Sidecar
	// Hosts are the BlackHoleCluster destinations in the source's proxy log.
	Hosts   []proxylog.Blackholed
	Entries int // access-log entries read
	SEs     []*networkingv1.ServiceEntry
	// Partial lists reads that failed without making the result worthless.
	Partial []string
	// RulesPartial says why the ServiceEntries read are not every
	// namespace's ("" when they are): an absence is then not certain.
	RulesPartial string
}

func (p ServiceEntryProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchServiceEntry(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = seCommands(t, istioconfig.ControlPlane(c), in.Mesh.RootNamespace(istioconfig.ControlPlane(c)))
		return r
	}
	r := evaluateServiceEntry(t, in)
	r.Commands = seCommands(t, istioconfig.ControlPlane(c), in.Mesh.RootNamespace(istioconfig.ControlPlane(c)))
	return r
}

func fetchServiceEntry(ctx context.Context, c cluster.Cluster, t cluster.Target) (seInput, string, error) {
	var in seInput
	var err error
	if in.Mesh, err = istioconfig.ReadMeshConfig(ctx, c); err != nil {
		return in, "read the mesh config", err
	}
	if t.Source == nil {
		return in, "", nil
	}
	src := *t.Source
	pod, err := c.GetPod(ctx, src.Namespace, src.Name)
	if err != nil {
		return in, "get pod " + src.String(), err
	}
	root := in.Mesh.RootNamespace(istioconfig.ControlPlane(c))
	// The rules as the config model reads them (every namespace's, one
	// list a kind, shared through the read cache): a ServiceEntry of any
	// namespace may be exported to the caller.
	rules, what, err := istioconfig.ReadRules(ctx, c, wording.UniqueNonEmpty(src.Namespace, t.Namespace, root), func(ns string) bool { return ns != src.Namespace })
	if err != nil {
		return in, what, err
	}
	in.Partial = append(in.Partial, rules.Unknown...)
	in.RulesPartial = rules.Partial()
	cfg := &mesh.Config{Mesh: in.Mesh, RootNamespace: root, Sidecars: rules.Sidecars}
	in.Sidecar, _ = cfg.SidecarFor(mesh.CallerFromPod(pod))
	if mesh.PodSidecar(pod) == mesh.SidecarNone {
		// No Envoy sends anything of this caller to BlackHoleCluster: an
		// ambient pod's ztunnel, or a pod outside the mesh, applies no
		// outbound traffic policy.
		return in, "", nil
	}

	log, err := proxylog.NewestLog(ctx, c, src, proxylog.ProxyOptions(proxylog.BlackholeWindow, proxylog.AccessLogTailLines))
	if err != nil {
		return in, fmt.Sprintf("read the %s log of %s", mesh.ProxyContainer, src), err
	}
	// The mesh's own access-log format: a JSON log under its keys is no
	// entry to the built-in layouts.
	formats, problems := istioconfig.AccessLogFormats(in.Mesh)
	in.Partial = append(in.Partial, problems...)
	in.Hosts, in.Entries = proxylog.ParseBlackholed(log, formats)
	if len(in.Hosts) == 0 {
		return in, "", nil
	}
	in.SEs = rules.ServiceEntries
	return in, "", nil
}

func sePorts(se *networkingv1.ServiceEntry) []int {
	var out []int
	for _, p := range se.Spec.GetPorts() {
		out = append(out, int(p.GetNumber()))
	}
	return out
}

func evaluateServiceEntry(t cluster.Target, in seInput) Result {
	r := Result{Status: StatusPass, Facts: Facts{}}
	cfg := &mesh.Config{Mesh: in.Mesh, ServiceEntries: in.SEs}
	registryOnly, modeFrom := cfg.OutboundPolicy(in.Sidecar)
	mode := "ALLOW_ANY"
	if registryOnly {
		mode = "REGISTRY_ONLY"
	}
	r.Facts["se_registry_only"] = registryOnly
	r.Facts["se_rules_partial"] = in.RulesPartial
	unregistered, hidden, inCluster := []string{}, []string{}, []string{}
	r.Facts["se_unregistered_hosts"] = unregistered
	r.Facts["se_hidden_hosts"] = hidden
	r.Facts["se_in_cluster_hosts"] = inCluster
	raw := []string{fmt.Sprintf("outboundTrafficPolicy %s (%s)", mode, modeFrom)}

	if t.Source == nil {
		r.Status = StatusSkipped
		r.Summary = fmt.Sprintf("outbound policy %s; name the calling pod with --from to check external hosts", mode)
		r.Evidence.Raw = strings.Join(raw, "\n")
		return r
	}
	srcNS := t.Source.Namespace
	r.Evidence.Columns = []string{"host", "ports", "requests", "service entry", "verdict"}
	var visibleButBlocked []string
	for _, b := range in.Hosts {
		var matching, visible []*networkingv1.ServiceEntry
		for _, se := range in.SEs {
			if !mesh.ServiceEntryDeclares(se, b.Host) {
				continue
			}
			matching = append(matching, se)
			if cfg.ServiceEntryExportedTo(se, srcNS) {
				visible = append(visible, se)
			}
		}
		var verdict string
		switch {
		case len(matching) == 0 && isInClusterHost(b.Host):
			inCluster = append(inCluster, b.Host)
			verdict = fmt.Sprintf("in-cluster Service: a Sidecar egress list or its %s annotation hides it from %s", annotation.NetworkingExportTo.Name, srcNS)
		case len(matching) == 0:
			unregistered = append(unregistered, b.Host)
			verdict = "no ServiceEntry"
		case len(visible) == 0:
			hidden = append(hidden, b.Host)
			verdict = fmt.Sprintf("exportTo %s hides it from %s", strings.Join(matching[0].Spec.GetExportTo(), ","), srcNS)
		default:
			// Declared and visible, yet refused: the port is not declared,
			// the entry is newer than these log lines, or a Sidecar egress
			// list leaves it out.
			verdict = "declared and visible"
			var missing []string
			for _, p := range b.Ports {
				if !slices.Contains(sePorts(visible[0]), p) {
					missing = append(missing, strconv.Itoa(p))
				}
			}
			if len(missing) > 0 {
				verdict += fmt.Sprintf("; port %s not among its ports %s", strings.Join(missing, ","), intsString(sePorts(visible[0])))
			} else {
				verdict += "; refused anyway: entry newer than the log, or a Sidecar egress list excludes it"
			}
			visibleButBlocked = append(visibleButBlocked, b.Host)
		}
		names := make([]string, 0, len(matching))
		for _, se := range matching {
			names = append(names, se.Namespace+"/"+se.Name)
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{b.Host, intsString(b.Ports), strconv.Itoa(b.Count), wording.Dash(strings.Join(names, ",")), verdict})
		raw = append(raw, b.Sample)
	}
	r.Facts["se_unregistered_hosts"] = unregistered
	r.Facts["se_hidden_hosts"] = hidden
	r.Facts["se_in_cluster_hosts"] = inCluster
	raw = append(raw, fmt.Sprintf("%d access-log entries in the last %s of %s's %s log", in.Entries, proxylog.BlackholeWindow, t.Source, mesh.ProxyContainer))
	raw = append(raw, in.Partial...)
	if in.RulesPartial != "" {
		raw = append(raw, "the rule set is partial: "+in.RulesPartial+": a ServiceEntry there, exported to "+srcNS+", may declare a host listed as unregistered or hidden")
	}
	r.Evidence.Raw = strings.Join(raw, "\n")

	var problems []string
	if len(unregistered) > 0 {
		problems = append(problems, "no ServiceEntry for "+strings.Join(unregistered, ", "))
	}
	if len(hidden) > 0 {
		problems = append(problems, "ServiceEntry not exported to "+srcNS+" for "+strings.Join(hidden, ", "))
	}
	inClusterNote := ""
	if len(inCluster) > 0 {
		inClusterNote = fmt.Sprintf("in-cluster %s sent to BlackHoleCluster: not a ServiceEntry case; read the Sidecar egress hosts of %s and the Service's %s",
			strings.Join(inCluster, ", "), srcNS, annotation.NetworkingExportTo.Name)
	}
	switch {
	case len(problems) > 0:
		r.Status = StatusFail
		r.Summary = fmt.Sprintf("%s: %s sent to BlackHoleCluster; %s", mode, wording.CountNoun(len(in.Hosts)-len(inCluster), "external host"), strings.Join(problems, "; "))
		if inClusterNote != "" {
			r.Summary += "; " + inClusterNote
		}
	case len(visibleButBlocked) > 0:
		r.Status = StatusWarn
		r.Summary = fmt.Sprintf("%s: %s sent to BlackHoleCluster though a visible ServiceEntry declares them", mode, strings.Join(visibleButBlocked, ", "))
	case len(inCluster) > 0:
		r.Status = StatusWarn
		r.Summary = mode + ": " + inClusterNote
	default:
		// What could not be read warns a pass.
		r.Status, r.Summary = verdict{Head: fmt.Sprintf("outbound policy %s; no BlackHoleCluster traffic in %s's proxy log", mode, t.Source), Warnings: in.Partial}.judge()
	}
	return r
}

// isInClusterHost says whether host names a Kubernetes Service,
// NAME.NAMESPACE.svc followed by the cluster domain or not: istiod knows
// those from the Service itself, so a ServiceEntry for one is the wrong fix.
// The fixed third label keeps an external api.svc.example.com out.
func isInClusterHost(host string) bool {
	labels := strings.Split(host, ".")
	return len(labels) >= 3 && labels[2] == "svc" && labels[0] != "" && labels[1] != ""
}

func intsString(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return wording.Dash(strings.Join(s, ","))
}

func seCommands(t cluster.Target, controlPlaneNS, root string) []string {
	cmds := []string{fmt.Sprintf("kubectl get configmap -n %s %s -o jsonpath='{.data.mesh}'", controlPlaneNS, mesh.MeshConfigMap)}
	if t.Source == nil {
		return cmds
	}
	src := t.Source
	cmds = append(cmds,
		fmt.Sprintf("kubectl logs -n %s %s -c %s --since=30m | grep -E 'BlackHoleCluster|block_all'", src.Namespace, src.Name, mesh.ProxyContainer),
		fmt.Sprintf("kubectl get serviceentries,sidecars -n %s", src.Namespace),
		fmt.Sprintf("kubectl get serviceentries -n %s", root),
		fmt.Sprintf("istioctl proxy-config cluster %s.%s | grep -v '\\.svc\\.cluster\\.local'", src.Name, src.Namespace),
	)
	return cmds
}
