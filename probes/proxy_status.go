package probes

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/wording"
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
			{"xds_istiod_replicas", FactInt, "running istiod pods (app=istiod) in the control-plane namespace: syncz lists only the proxies connected to the replica asked, so the probe asks each until one lists the source proxy"},
			{"xds_istiod_asked", FactInt, "istiod replicas whose syncz was read; fewer than xds_istiod_replicas when the proxy was found early or a replica did not answer"},
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
}

// istiodLabels select istiod pods of every revision, as the live Cluster
// picks the one it asks.
var istiodLabels = map[string]string{"app": "istiod"}

func (p ProxyStatusProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchProxyStatus(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = proxyStatusCommands(t)
		return r
	}
	return evaluateProxyStatus(t, in)
}

// fetchProxyStatus asks each running istiod replica in turn, as istioctl
// proxy-status asks them all: syncz lists only the proxies connected to the
// replica asked, so the first replica that lists the source ends the search.
func fetchProxyStatus(ctx context.Context, c cluster.Cluster, t cluster.Target) (in proxyStatusInput, what string, err error) {
	// A pod without a sidecar is not an xDS client: istiod not listing it
	// says nothing about staleness.
	if in.Skip, what, err = envoyadmin.CheckSource(ctx, c, t); err != nil || in.Skip != "" {
		return in, what, err
	}
	in.IstiodReplicas = -1
	var replicas []string
	if pods, err := c.ListPods(ctx, istioconfig.ControlPlane(c), istiodLabels); err == nil {
		running := cluster.OrderIstiods(pods)
		in.IstiodReplicas = len(running)
		for _, p := range running {
			replicas = append(replicas, p.Name)
		}
	}
	if len(replicas) == 0 {
		replicas = []string{""} // the Cluster picks one, and says why it cannot
	}
	var firstErr error
	for _, replica := range replicas {
		proxies, doing, err := readSyncz(ctx, c, replica)
		if err != nil {
			if firstErr == nil {
				firstErr, what = err, doing
			}
			in.Unanswered = append(in.Unanswered, fmt.Sprintf("%s: %s", replica, wording.FirstLine(err.Error())))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		in.Asked++
		in.Proxies = append(in.Proxies, proxies...)
		if _, found := envoy.FindProxy(proxies, t.Source.Name, t.Source.Namespace); found {
			break
		}
	}
	if in.Asked == 0 {
		return in, what, firstErr
	}
	return in, "", nil
}

// readSyncz reads and parses one replica's syncz; doing says which step
// failed.
func readSyncz(ctx context.Context, c cluster.Cluster, replica string) (proxies []envoy.ProxySync, doing string, err error) {
	of := ""
	if replica != "" {
		of = " of " + replica
	}
	body, err := c.Istiod(ctx, replica, synczPath)
	if err != nil {
		return nil, "read istiod " + synczPath + of, err
	}
	if proxies, err = envoy.ParseSyncz(body); err != nil {
		return nil, "parse istiod " + synczPath + of, err
	}
	return proxies, "", nil
}

func evaluateProxyStatus(t cluster.Target, in proxyStatusInput) Result {
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
				"xds_proxy_known": false, "xds_stale_types": []string{},
				"xds_cds": xdsUnknown, "xds_eds": xdsUnknown, "xds_lds": xdsUnknown, "xds_rds": xdsUnknown,
				"xds_istiod_version": "",
			}),
			Commands: proxyStatusCommands(t),
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
	return Result{
		Status:  status,
		Summary: summary,
		Evidence: Evidence{
			Columns: []string{"proxy", "CDS", "LDS", "EDS", "RDS", "version"},
			Rows:    [][]string{{p.ProxyID, p.CDS, p.LDS, p.EDS, p.RDS, wording.Dash(p.IstioVersion)}},
			Raw:     strings.Join(raw, "\n"),
		},
		Facts: replicaFacts(Facts{
			"xds_proxy_known":    true,
			"xds_stale_types":    nonNil(types),
			"xds_cds":            p.CDS,
			"xds_eds":            p.EDS,
			"xds_lds":            p.LDS,
			"xds_rds":            p.RDS,
			"xds_istiod_version": p.IstioVersion,
		}),
		Commands: proxyStatusCommands(t),
	}
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

func proxyStatusCommands(t cluster.Target) []string {
	cmds := []string{"istioctl proxy-status"}
	if t.Source != nil {
		cmds = append(cmds, fmt.Sprintf("istioctl proxy-status %s.%s", t.Source.Name, t.Source.Namespace))
	}
	return cmds
}
