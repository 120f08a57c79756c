package probes

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/istioversion"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// ProxyStatusProbe asks istiod (/debug/syncz) whether the source proxy is
// SYNCED for each xDS type, as istioctl proxy-status does, and what istiod
// itself recorded of it: the error of the proxy's last NACK of a type, the
// proxy's Istio version against istiod's own (/version of the replica the
// proxy is connected to), and the endpoints istiod would send it now for
// the target (/debug/edsz?proxyID=).
type ProxyStatusProbe struct{}

func (ProxyStatusProbe) Meta() Meta {
	return Meta{
		ID:    "proxy-status",
		Title: "istiod sync status of the source proxy",
		Reads: []string{"pods", "pods (istiod)", "pods/portforward (istiod :15014 /debug/syncz, /version, /debug/edsz?proxyID=)"},
		Facts: []FactSpec{
			{"xds_proxy_known", FactBool, "istiod lists the source proxy"},
			{"xds_stale_types", FactList, "xDS types (CDS EDS LDS RDS) that are STALE, plus CDS or LDS NOT SENT (a connected sidecar always gets both); EDS or RDS NOT SENT only means istiod had nothing to send"},
			{"xds_cds", FactString, "SYNCED, STALE or NOT SENT (UNKNOWN when istiod does not list the proxy)"},
			{"xds_eds", FactString, "SYNCED, STALE or NOT SENT (UNKNOWN when istiod does not list the proxy)"},
			{"xds_lds", FactString, "SYNCED, STALE or NOT SENT (UNKNOWN when istiod does not list the proxy)"},
			{"xds_rds", FactString, "SYNCED, STALE or NOT SENT (UNKNOWN when istiod does not list the proxy)"},
			{"xds_istiod_replicas", FactInt, "running istiod pods (app=istiod) in the control-plane namespace: syncz lists only the proxies connected to the replica asked, so the probe asks each until one lists the source proxy"},
			{"xds_istiod_asked", FactInt, "istiod replicas whose syncz was read; fewer than xds_istiod_replicas when the proxy was found early or a replica did not answer"},
			{"xds_rejected_types", FactList, "xDS types whose last push the proxy rejected (NACKed), as istiod records it (syncz resources.<type>.lastError, the xDS shape's ERROR): the proxy runs the config it accepted before"},
			{"xds_last_error", FactString, "the errors of those NACKs, as TYPE: ERROR, first line each (\"\" when none)"},
			{"xds_proxy_version", FactString, "the proxy's own Istio version (the ISTIO_VERSION it sends, which syncz reports as istio_version; \"\" when not reported)"},
			{"xds_istiod_version", FactString, "istiod's version: /version of the replica the proxy is connected to (its build, 1.24.2-SHA-Clean), else the xDS-shaped syncz's control plane, else that replica's image tag (\"\" when none of them is known)"},
			{"xds_version_skew", FactInt, "istiod's minor version minus the proxy's (same major): 0 or 1 is Istio's supported skew (the control plane may be one minor ahead), above 1 or below 0 (the proxy ahead) is not; absent when either version is unknown or they differ in major"},
			{"xds_skew_supported", FactBool, "xds_version_skew is within Istio's supported skew (0 or 1); absent when it is"},
			{"xds_edsz_endpoints", FactInt, "endpoints istiod would send the proxy now for the target's default cluster (outbound|PORT||HOST; all its ports without --port), from /debug/edsz?proxyID= of the replica it is connected to; absent when that could not be read"},
		},
	}
}

const (
	versionPath = "/version"
	xdsUnknown  = "UNKNOWN"
)

// supportedSkew is how many minor versions istiod may be ahead of a
// proxy: "The Istio control plane can be one version ahead of the data
// plane. The data plane cannot be ahead of the control plane."
// (istio.io docs/releases/supported-releases, control plane/data plane
// skew).
const supportedSkew = 1

type proxyStatusInput struct {
	// ControlPlane is istiod's namespace.
	ControlPlane string
	// Skip says why there is no proxy to ask about ("" when there is).
	Skip string
	// Proxies are the proxies listed by the replicas asked, in the order
	// asked; the source's is among the last replica's when it was found.
	Proxies []envoy.ProxySync
	// IstiodReplicas counts running istiod pods; -1 when they could not be
	// listed.
	IstiodReplicas int
	// Asked counts the replicas whose syncz was read; Unanswered says why
	// the others asked did not answer.
	Asked      int
	Unanswered []string
	// Replica is the istiod pod whose syncz lists the source ("" when the
	// Cluster picked one); ReplicaImage is its discovery container's
	// image.
	Replica, ReplicaImage string
	// Version is that replica's /version ("" unread; VersionProblem says
	// why). Edsz is its /debug/edsz for the source ("" unread;
	// EdszProblem says why).
	Version, VersionProblem string
	Edsz                    []byte
	EdszProblem             string
}

func (p ProxyStatusProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchProxyStatus(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = proxyStatusCommands(t, in.ControlPlane)
		return r
	}
	return evaluateProxyStatus(t, in)
}

// fetchProxyStatus asks each running istiod replica in turn, as istioctl
// proxy-status asks them all: syncz lists only the proxies connected to the
// replica asked, so the first replica that lists the source ends the search.
func fetchProxyStatus(ctx context.Context, c cluster.Cluster, t cluster.Target) (in proxyStatusInput, what string, err error) {
	in.ControlPlane = istioconfig.ControlPlane(c)
	// A pod without a sidecar is not an xDS client: istiod not listing it
	// says nothing about staleness.
	if in.Skip, what, err = envoyadmin.CheckSource(ctx, c, t); err != nil || in.Skip != "" {
		return in, what, err
	}
	search := cluster.FindIstiodOf(ctx, c, in.ControlPlane, *t.Source)
	in.IstiodReplicas, in.Proxies, in.Asked, in.Unanswered = search.Replicas, search.Proxies, search.Asked, search.Unanswered
	if search.Found {
		in.Replica = search.Replica
		for _, p := range search.Running {
			if p.Name == in.Replica {
				in.ReplicaImage = istioversion.IstiodImage(&p)
			}
		}
		readReplica(ctx, c, t, &in)
	}
	if in.Asked == 0 {
		return in, search.What, search.Err
	}
	return in, "", nil
}

// readReplica reads, of the replica that lists the source, its version
// and the endpoints it would send the source: istiod's own word on both.
// Either may fail (an older istiod without edsz, a replica gone since)
// without failing the probe: the facts that need them stay unknown.
func readReplica(ctx context.Context, c cluster.Cluster, t cluster.Target, in *proxyStatusInput) {
	if b, err := c.Istiod(ctx, in.Replica, versionPath); err != nil {
		in.VersionProblem = wording.FirstLine(err.Error())
	} else {
		in.Version = strings.TrimSpace(string(b))
	}
	id := t.Source.Name + "." + t.Source.Namespace
	if b, err := c.Istiod(ctx, in.Replica, envoy.EdszPath+"?proxyID="+id); err != nil {
		in.EdszProblem = wording.FirstLine(err.Error())
	} else {
		in.Edsz = b
	}
}

func evaluateProxyStatus(t cluster.Target, in proxyStatusInput) Result {
	cp := in.ControlPlane
	if in.Skip != "" {
		return skippedResult(in.Skip, proxyStatusCommands(t, cp))
	}
	src := *t.Source
	id := src.Name + "." + src.Namespace
	stale := 0
	for _, p := range in.Proxies {
		if len(staleTypes(p)) > 0 {
			stale++
		}
	}
	fleet := fmt.Sprintf("%d of %d proxies on the %s asked are not in sync", stale, len(in.Proxies), wording.CountNoun(in.Asked, "istiod replica"))
	var raw []string
	if len(in.Unanswered) > 0 {
		raw = append(raw, "istiod replicas that did not answer: "+strings.Join(in.Unanswered, "; "))
	}
	replicaFacts := func(f Facts) Facts {
		f["xds_istiod_asked"] = in.Asked
		if in.IstiodReplicas >= 0 {
			f["xds_istiod_replicas"] = in.IstiodReplicas
		}
		return f
	}

	p, known := envoy.FindProxy(in.Proxies, src.Name, src.Namespace)
	if !known {
		var why string
		switch {
		case in.IstiodReplicas < 0:
			why = "istiod's pods could not be listed, so only the replica the Cluster picked was asked; with several replicas the proxy may be connected to another"
		case in.Asked < in.IstiodReplicas:
			why = fmt.Sprintf("%d of %d istiod replicas answered; the proxy may be connected to one that did not", in.Asked, in.IstiodReplicas)
		case in.IstiodReplicas == 1:
			why = "the only istiod replica does not list it: the proxy is not connected to istiod"
		default:
			why = fmt.Sprintf("none of the %d istiod replicas lists it: the proxy is not connected to istiod", in.IstiodReplicas)
		}
		raw = append(raw, fmt.Sprintf("%d proxies listed, %s not among them", len(in.Proxies), id))
		return Result{
			Status:  StatusWarn,
			Summary: fmt.Sprintf("istiod does not list %s: %s; %s", id, why, fleet),
			Evidence: Evidence{Columns: []string{"proxy", "CDS", "LDS", "EDS", "RDS", "version"}, Rows: [][]string{{id, "-", "-", "-", "-", "-"}},
				Raw: strings.Join(raw, "\n")},
			Facts: replicaFacts(Facts{
				"xds_proxy_known": false, "xds_stale_types": []string{}, "xds_rejected_types": []string{}, "xds_last_error": "",
				"xds_cds": xdsUnknown, "xds_eds": xdsUnknown, "xds_lds": xdsUnknown, "xds_rds": xdsUnknown,
				"xds_istiod_version": "", "xds_proxy_version": "",
			}),
			Commands: proxyStatusCommands(t, cp),
		}
	}

	types := staleTypes(p)
	status := StatusPass
	summary := id + " is SYNCED with istiod for CDS, LDS, EDS and RDS"
	if len(types) > 0 {
		status = StatusFail
		var parts []string
		for _, ty := range types {
			parts = append(parts, ty+" "+p.Detail[ty])
		}
		summary = fmt.Sprintf("%s is not in sync with istiod: %s", id, strings.Join(parts, ", "))
	} else if notSent := notSentTypes(p); len(notSent) > 0 {
		summary = fmt.Sprintf("%s is SYNCED with istiod (%s NOT SENT: istiod had nothing to send)", id, strings.Join(notSent, ", "))
	}
	summary += "; " + fleet

	for _, tv := range p.Types() {
		raw = append(raw, fmt.Sprintf("%s %s", tv[0], p.Detail[tv[0]]))
	}
	rejected := p.RejectedTypes()
	var lastErrors []string
	for _, ty := range rejected {
		lastErrors = append(lastErrors, ty+": "+p.Rejected[ty])
	}
	facts := Facts{
		"xds_proxy_known":    true,
		"xds_stale_types":    nonNil(types),
		"xds_rejected_types": nonNil(rejected),
		"xds_last_error":     strings.Join(lastErrors, "; "),
		"xds_cds":            p.CDS,
		"xds_eds":            p.EDS,
		"xds_lds":            p.LDS,
		"xds_rds":            p.RDS,
		"xds_proxy_version":  p.ProxyIstioVersion,
	}
	istiod, from := in.istiodVersion(p)
	facts["xds_istiod_version"] = istiod
	if istiod != "" {
		raw = append(raw, fmt.Sprintf("istiod %s (%s)", istiod, from))
	} else if in.VersionProblem != "" {
		raw = append(raw, "istiod's version unknown: "+in.VersionProblem)
	}
	if skew, ok := istioversion.MinorSkew(istiod, p.ProxyIstioVersion); ok {
		facts["xds_version_skew"] = skew
		facts["xds_skew_supported"] = skew >= 0 && skew <= supportedSkew
		within := "within Istio's supported skew (istiod at most one minor ahead)"
		switch {
		case skew > supportedSkew:
			within = fmt.Sprintf("outside Istio's supported skew: istiod is %d minors ahead, at most %d is supported", skew, supportedSkew)
		case skew < 0:
			within = "outside Istio's supported skew: the proxy is ahead of istiod, which is never supported"
		}
		raw = append(raw, fmt.Sprintf("proxy %s, istiod %s: %s", p.ProxyIstioVersion, istiod, within))
	}
	if n, cl, ok := edszEndpoints(t, in); ok {
		facts["xds_edsz_endpoints"] = n
		raw = append(raw, fmt.Sprintf("istiod would send %s for %s now (/debug/edsz)", wording.CountNoun(n, "endpoint"), wording.Dash(strings.Join(cl, ", "))))
	} else if in.EdszProblem != "" {
		raw = append(raw, "istiod's endpoints for the proxy unknown: "+in.EdszProblem)
	}
	return Result{
		Status:  status,
		Summary: summary,
		Evidence: Evidence{
			Columns: []string{"proxy", "CDS", "LDS", "EDS", "RDS", "version"},
			Rows:    [][]string{{p.ProxyID, p.CDS, p.LDS, p.EDS, p.RDS, wording.Dash(p.ProxyIstioVersion)}},
			Raw:     strings.Join(raw, "\n"),
		},
		Facts:    replicaFacts(facts),
		Commands: proxyStatusCommands(t, cp),
	}
}

// istiodVersion is the version of the istiod the proxy is connected to,
// and where it was read: its own /version, else the xDS-shaped syncz's
// control plane, else its image tag.
func (in proxyStatusInput) istiodVersion(p envoy.ProxySync) (version, from string) {
	switch {
	case in.Version != "":
		return in.Version, in.Replica + " /version"
	case p.ControlPlaneVersion != "":
		return p.ControlPlaneVersion, "syncz's control plane"
	case istioversion.ImageTag(in.ReplicaImage) != "":
		return istioversion.ImageTag(in.ReplicaImage), in.Replica + "'s image " + in.ReplicaImage
	}
	return "", ""
}

// edszEndpoints counts the endpoints istiod's /debug/edsz holds for the
// target's default cluster (its port, or all its ports), and names the
// clusters; false when edsz was not read or does not parse.
func edszEndpoints(t cluster.Target, in proxyStatusInput) (int, []string, bool) {
	if in.Edsz == nil {
		return 0, nil, false
	}
	host := t.Host()
	eps, err := envoy.ParseEdsz(in.Edsz, func(name string) bool {
		n, ok := envoy.ParseClusterName(name)
		return ok && envoy.IsTargetCluster(name, host, t.Port) && n.Subset == ""
	})
	if err != nil {
		return 0, nil, false
	}
	total := 0
	var names []string
	for _, e := range eps {
		total += e.Total
		names = append(names, e.Cluster)
	}
	return total, names, true
}

// staleTypes are the xDS types the proxy is out of sync for. istioctl's
// NOT SENT means istiod sent nothing, usually because it had nothing to
// send: normal for RDS of a TCP-only proxy or EDS without EDS clusters,
// but a connected sidecar always gets clusters and listeners.
func staleTypes(p envoy.ProxySync) []string {
	var out []string
	for _, tv := range p.Types() {
		switch {
		case tv[1] == envoy.Stale:
			out = append(out, tv[0])
		case tv[1] == envoy.NotSent && (tv[0] == "CDS" || tv[0] == "LDS"):
			out = append(out, tv[0])
		}
	}
	return out
}

func notSentTypes(p envoy.ProxySync) []string {
	var out []string
	for _, tv := range p.Types() {
		if tv[1] == envoy.NotSent {
			out = append(out, tv[0])
		}
	}
	return out
}

// proxyStatusCommands are istioctl's view and the same reads of istiod by
// hand (pilot-discovery request GETs its own monitoring port): its
// version, the proxy's syncz entry with the NACK errors, the endpoints it
// would send the proxy.
func proxyStatusCommands(t cluster.Target, controlPlane string) []string {
	cmds := []string{"istioctl proxy-status"}
	if t.Source != nil {
		id := t.Source.Name + "." + t.Source.Namespace
		istiod := fmt.Sprintf("kubectl exec -n %s deploy/istiod -c %s -- pilot-discovery request GET", controlPlane, istioversion.IstiodContainer)
		cmds = append(cmds,
			istiod+" /version",
			fmt.Sprintf("%s /debug/syncz | jq '.[] | select(.proxy==\"%s\")'", istiod, id),
			fmt.Sprintf("%s '/debug/edsz?proxyID=%s' | jq '.configs[] | select(.clusterName | endswith(\"|%s\"))'", istiod, id, t.Host()),
			fmt.Sprintf("istioctl proxy-status %s", id))
	}
	return cmds
}
