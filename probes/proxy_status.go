package probes

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/envoy"
	corev1 "k8s.io/api/core/v1"
)

// ProxyStatusProbe asks istiod (/debug/syncz) whether the source proxy is
// SYNCED for each xDS type, as istioctl proxy-status does.
type ProxyStatusProbe struct{}

func (ProxyStatusProbe) Meta() Meta {
	return Meta{
		ID:    "proxy-status",
		Title: "istiod sync status of the source proxy",
		Reads: []string{"pods", "pods (istiod)", "pods/portforward (istiod :15014 /debug/syncz)"},
		Facts: []FactSpec{
			{"xds_proxy_known", FactBool, "istiod lists the source proxy"},
			{"xds_stale_types", FactList, "xDS types (CDS EDS LDS RDS) that are STALE, plus CDS or LDS NOT SENT (a connected sidecar always gets both); EDS or RDS NOT SENT only means istiod had nothing to send"},
			{"xds_cds", FactString, "SYNCED, STALE or NOT SENT (UNKNOWN when istiod does not list the proxy)"},
			{"xds_eds", FactString, "SYNCED, STALE or NOT SENT (UNKNOWN when istiod does not list the proxy)"},
			{"xds_lds", FactString, "SYNCED, STALE or NOT SENT (UNKNOWN when istiod does not list the proxy)"},
			{"xds_rds", FactString, "SYNCED, STALE or NOT SENT (UNKNOWN when istiod does not list the proxy)"},
			{"xds_istiod_replicas", FactInt, "running istiod pods (app=istiod) in the control-plane namespace: syncz lists only the proxies connected to the replica asked, so with more than one a proxy it does not list may be connected to another"},
			{"xds_istiod_version", FactString, "the Istio version syncz reports for the proxy (current istiod: the proxy's own ISTIO_VERSION; xDS-shaped output: istiod's)"},
		},
	}
}

const (
	synczPath  = "/debug/syncz"
	xdsUnknown = "UNKNOWN"
)

type proxyStatusInput struct {
	// Skip says why there is no proxy to ask about ("" when there is).
	Skip    string
	Proxies []envoy.ProxySync
	// IstiodReplicas counts running istiod pods; -1 when they could not be
	// listed.
	IstiodReplicas int
}

// istiodLabels select istiod pods of every revision, as the live Cluster
// picks the one it asks.
var istiodLabels = map[string]string{"app": "istiod"}

func (p ProxyStatusProbe) Run(ctx context.Context, c Cluster, t Target) Result {
	in, what, err := fetchProxyStatus(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = proxyStatusCommands(t)
		return r
	}
	return evaluateProxyStatus(t, in)
}

func fetchProxyStatus(ctx context.Context, c Cluster, t Target) (in proxyStatusInput, what string, err error) {
	// A pod without a sidecar is not an xDS client: istiod not listing it
	// says nothing about staleness.
	if in.Skip, what, err = readSourceProxy(ctx, c, t); err != nil || in.Skip != "" {
		return in, what, err
	}
	body, err := c.Istiod(ctx, synczPath)
	if err != nil {
		return in, "read istiod " + synczPath, err
	}
	if in.Proxies, err = envoy.ParseSyncz(body); err != nil {
		return in, "parse istiod " + synczPath, err
	}
	in.IstiodReplicas = -1
	if pods, err := c.ListPods(ctx, controlPlane(c), istiodLabels); err == nil {
		in.IstiodReplicas = 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				in.IstiodReplicas++
			}
		}
	}
	return in, "", nil
}

func evaluateProxyStatus(t Target, in proxyStatusInput) Result {
	if in.Skip != "" {
		return skippedResult(in.Skip, proxyStatusCommands(t))
	}
	src := *t.Source
	id := src.Name + "." + src.Namespace
	stale := 0
	for _, p := range in.Proxies {
		if len(staleTypes(p)) > 0 {
			stale++
		}
	}
	fleet := fmt.Sprintf("%d of %d proxies on this istiod are not in sync", stale, len(in.Proxies))

	p, known := envoy.FindProxy(in.Proxies, src.Name, src.Namespace)
	if !known {
		why := "the proxy is not connected to this istiod (with several istiod replicas it may be connected to another"
		if in.IstiodReplicas > 1 {
			why = fmt.Sprintf("%d istiod replicas run and this one was asked: the proxy is likely connected to another (istioctl proxy-status asks them all", in.IstiodReplicas)
		}
		r := Result{
			Status:  StatusWarn,
			Summary: fmt.Sprintf("istiod does not list %s: %s; %s)", id, why, fleet),
			Evidence: Evidence{Columns: []string{"proxy", "CDS", "LDS", "EDS", "RDS", "version"}, Rows: [][]string{{id, "-", "-", "-", "-", "-"}},
				Raw: fmt.Sprintf("%d proxies listed, %s not among them", len(in.Proxies), id)},
			Facts: Facts{
				"xds_proxy_known": false, "xds_stale_types": []string{},
				"xds_cds": xdsUnknown, "xds_eds": xdsUnknown, "xds_lds": xdsUnknown, "xds_rds": xdsUnknown,
				"xds_istiod_version": "",
			},
			Commands: proxyStatusCommands(t),
		}
		if in.IstiodReplicas >= 0 {
			r.Facts["xds_istiod_replicas"] = in.IstiodReplicas
		}
		return r
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

	var raw []string
	for _, tv := range p.Types() {
		raw = append(raw, fmt.Sprintf("%s %s", tv[0], p.Detail[tv[0]]))
	}
	r := Result{
		Status:  status,
		Summary: summary,
		Evidence: Evidence{
			Columns: []string{"proxy", "CDS", "LDS", "EDS", "RDS", "version"},
			Rows:    [][]string{{p.ProxyID, p.CDS, p.LDS, p.EDS, p.RDS, dash(p.IstioVersion)}},
			Raw:     strings.Join(raw, "\n"),
		},
		Facts: Facts{
			"xds_proxy_known":    true,
			"xds_stale_types":    nonNil(types),
			"xds_cds":            p.CDS,
			"xds_eds":            p.EDS,
			"xds_lds":            p.LDS,
			"xds_rds":            p.RDS,
			"xds_istiod_version": p.IstioVersion,
		},
		Commands: proxyStatusCommands(t),
	}
	if in.IstiodReplicas >= 0 {
		r.Facts["xds_istiod_replicas"] = in.IstiodReplicas
	}
	return r
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

func proxyStatusCommands(t Target) []string {
	cmds := []string{"istioctl proxy-status"}
	if t.Source != nil {
		cmds = append(cmds, fmt.Sprintf("istioctl proxy-status %s.%s", t.Source.Name, t.Source.Namespace))
	}
	return cmds
}
