package probes

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// MTLSProbe reads, from the config model, what the caller's proxy sends to
// each endpoint of the target (DestinationRule tls mode, auto mTLS, or
// nothing when the caller has no sidecar or no config for the Service) and
// what each endpoint accepts (PeerAuthentication mesh, namespace, workload
// and port level). A PERMISSIVE upstream accepts ISTIO_MUTUAL: that pair is
// not a mismatch.
type MTLSProbe struct{}

func (MTLSProbe) Meta() Meta {
	return Meta{
		ID:    "mtls",
		Title: "mTLS: what the client sends vs what the upstream accepts",
		Reads: []string{"peerauthentications", "destinationrules", "virtualservices", "sidecars", "serviceentries", "configmaps (mesh config)", "pods", "services", "endpointslices"},
		Facts: []FactSpec{
			{"mtls_upstream_mode", FactString, "effective PeerAuthentication mode of the upstream endpoint judged: STRICT, PERMISSIVE, DISABLE"},
			{"mtls_upstream_mode_source", FactString, "which policy decided it: mesh, namespace, workload, port, default"},
			{"mtls_client_tls_mode", FactString, "DestinationRule tls mode that applies to the client (DISABLE, SIMPLE, MUTUAL, ISTIO_MUTUAL) or none"},
			{"mtls_auto", FactBool, "mesh config enableAutoMtls (default true)"},
			{"mtls_client_sends", FactString, "what the client sidecar originates: mtls, plaintext, tls (SIMPLE/MUTUAL origination)"},
			{"mtls_upstream_sidecar", FactBool, "every upstream endpoint's pod has a sidecar"},
			{"mtls_source_sidecar", FactBool, "the client's requests go through a sidecar: it has one (true when no source pod is named) and its app does not run as the proxy's UID or GID, which istio-iptables lets out around it"},
			{"mtls_mismatch", FactString, "none, plaintext-to-strict, mtls-to-no-sidecar, double-tls, mtls-to-disabled"},
			{"mtls_client_config", FactString, "how the client reaches the Service: visible (its proxy has the Service's config), passthrough or blackhole (it has none: the Service is hidden from it), no-sidecar (none, or its app sends around it)"},
			{"mtls_undecided", FactInt, "endpoints whose TLS verdict is undecided: their pod is not known (a targetRef to a pod not found or not read, an address no pod was found for), so neither what auto mTLS sends them nor what their side accepts can be judged; while no other endpoint mismatches, mtls_mismatch and mtls_upstream_sidecar are then unknown"},
		},
	}
}

// Values of mtls_mismatch.
const (
	MismatchNone            = mesh.MismatchNone
	MismatchPlaintextStrict = mesh.MismatchPlaintextStrict
	MismatchMTLSNoSidecar   = mesh.MismatchMTLSNoSidecar
	MismatchDoubleTLS       = mesh.MismatchDoubleTLS
	MismatchMTLSDisabled    = mesh.MismatchMTLSDisabled
)

func (p MTLSProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	cv, what, err := callerview.Fetch(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = mtlsCommands(t)
		return r
	}
	return evaluateMTLS(t, cv)
}

// clientConfig says how the caller reaches the Service, as mtls_client_config spells it.
func clientConfig(v *mesh.View) string {
	switch {
	case !v.Caller.Sidecar, v.Caller.Bypass != "":
		return "no-sidecar"
	case v.Visibility.Visible:
		return "visible"
	case v.Visibility.Fallback == mesh.BlackHoleCluster:
		return "blackhole"
	}
	return "passthrough"
}

// judgedEndpoint is one endpoint of one cluster of one port's view.
type judgedEndpoint struct {
	view    *mesh.View
	cluster *mesh.Cluster
	ep      mesh.EndpointTLS
}

func evaluateMTLS(t cluster.Target, cv callerview.View) Result {
	res := Result{Commands: mtlsCommands(t), Facts: Facts{}}
	var all []judgedEndpoint
	// undecided counts the endpoints not judged: a cluster's endpoints
	// whose pod is not known (istiod holds back one whose targetRef pod
	// it has not seen, so the cluster may or may not have it), and the
	// judged ones whose pod is not known.
	undecided, undecidedWhy := 0, []string{}
	for _, v := range cv.Views {
		for _, name := range sortedClusterNames(v) {
			cl := v.Clusters[name]
			if cl.Mirror || !cl.Exists || cl.Bypassed {
				continue
			}
			for _, e := range cl.Endpoints {
				all = append(all, judgedEndpoint{view: v, cluster: cl, ep: e})
				if e.Mismatch == mesh.MismatchUnknown {
					undecided++
					undecidedWhy = append(undecidedWhy, e.Address+": "+cmp.Or(e.PodUnknown, "no pod has this address"))
				}
			}
			if cl.Undecided > 0 {
				undecided += cl.Undecided
				undecidedWhy = append(undecidedWhy, cl.Unknown...)
			}
		}
	}
	first := cv.Views[0]
	withSidecar := 0
	chosen := -1
	for i, j := range all {
		if j.ep.Sidecar != mesh.SidecarNone {
			withSidecar++
		}
		if chosen < 0 && j.ep.Mismatch != mesh.MismatchNone && j.ep.Mismatch != mesh.MismatchUnknown {
			chosen = i
		}
	}
	// The first mismatching endpoint decides the facts: a triage is about
	// what fails, and the evidence table shows every endpoint. Without
	// one, the first judged endpoint speaks for the others.
	for i, j := range all {
		if chosen < 0 && j.ep.Mismatch != mesh.MismatchUnknown {
			chosen = i
		}
	}
	res.Evidence.Columns = []string{"port", "cluster", "endpoint", "client sends", "why", "upstream accepts", "decided by", "mismatch"}
	for _, j := range all {
		res.Evidence.Rows = append(res.Evidence.Rows, []string{
			fmt.Sprint(j.view.Port), j.cluster.Name, j.ep.Address + " " + wording.Dash(j.ep.Pod), j.ep.Sends, j.ep.SendsWhy, j.ep.Accepts.Mode, j.ep.Accepts.From, j.ep.Mismatch,
		})
	}
	var raw []string
	for _, v := range cv.Views {
		raw = append(raw, v.Chain()...)
	}
	if !cv.CallerNamed {
		raw = append(raw, "no source pod named: judged for a meshed pod in "+t.Namespace+" (use --from pod/NAME)")
	}
	res.Evidence.Raw = strings.Join(raw, "\n")

	mode, modeFrom, clientTLS, sends, mismatch, port := mesh.ModePermissive, "default", "none", mesh.SendsPlaintext, mesh.MismatchNone, first.Port
	view := first
	if chosen >= 0 {
		j := all[chosen]
		view, port = j.view, j.view.Port
		mode, modeFrom, sends, mismatch = j.ep.Accepts.Mode, j.ep.Accepts.From, j.ep.Sends, j.ep.Mismatch
		if j.cluster.TLS.Mode != "" {
			clientTLS = j.cluster.TLS.Mode
		}
	}
	res.Facts = Facts{
		"mtls_upstream_mode":        mode,
		"mtls_upstream_mode_source": modeFrom,
		"mtls_client_tls_mode":      clientTLS,
		"mtls_auto":                 cv.Config.Mesh.EnableAutoMtls(),
		"mtls_client_sends":         sends,
		"mtls_upstream_sidecar":     len(all) > 0 && withSidecar == len(all),
		"mtls_source_sidecar":       cv.Caller.Sidecar && cv.Caller.Bypass == "",
		"mtls_mismatch":             mismatch,
		"mtls_client_config":        clientConfig(view),
	}
	why := ""
	if chosen >= 0 {
		why = all[chosen].ep.SendsWhy
	}
	res.Facts["mtls_undecided"] = undecided
	if undecided > 0 && mismatch == MismatchNone {
		// No endpoint judged mismatches, and some could not be judged:
		// "compatible" would be a guess.
		delete(res.Facts, "mtls_mismatch")
		delete(res.Facts, "mtls_upstream_sidecar")
		res.Status = StatusWarn
		res.Summary = fmt.Sprintf("port %d: the TLS verdict is undecided for %s whose pod is not known (%s)", port, wording.CountNoun(undecided, "endpoint"), undecidedWhy[0])
		if judged := len(all) - countMismatch(all, mesh.MismatchUnknown); judged > 0 {
			res.Summary += fmt.Sprintf("; %d judged: client sends %s, upstream accepts %s", judged, sends, mode)
		}
		return res
	}
	switch {
	case len(all) == 0 && mesh.ExternalNameOf(first.Service) != "":
		res.Status = StatusPass
		res.Summary = fmt.Sprintf("port %d: ExternalName alias of %s: no endpoint of the Service to judge", port, mesh.ExternalNameOf(first.Service))
	case len(all) == 0:
		res.Status = StatusPass
		res.Summary = fmt.Sprintf("port %d: no endpoint to judge (nothing serves the Service)", port)
	case mismatch == MismatchNone:
		res.Status = StatusPass
		res.Summary = fmt.Sprintf("port %d: client sends %s, upstream accepts %s: compatible", port, sends, mode)
	case mismatch == MismatchPlaintextStrict:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("port %d: client sends plaintext to a STRICT upstream (%s)", port, why)
		if !view.Visibility.Visible && view.Caller.Sidecar {
			res.Summary = fmt.Sprintf("port %d: the client's proxy has no config for the Service (%s), so it sends plaintext through %s to a STRICT upstream", port, view.Visibility.HiddenBy, view.Visibility.Fallback)
		}
	case mismatch == MismatchMTLSNoSidecar:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("port %d: client sends mTLS but %d of %d upstream endpoints have no sidecar to terminate it", port, len(all)-withSidecar, len(all))
	case mismatch == MismatchDoubleTLS:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("port %d: DestinationRule originates TLS %s toward a meshed upstream (double TLS)", port, clientTLS)
	case mismatch == MismatchMTLSDisabled:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("port %d: client sends mTLS (%s) but the upstream's PeerAuthentication is DISABLE (%s)", port, why, modeFrom)
	}
	return res
}

func countMismatch(all []judgedEndpoint, mismatch string) int {
	n := 0
	for _, j := range all {
		if j.ep.Mismatch == mismatch {
			n++
		}
	}
	return n
}

func sortedClusterNames(v *mesh.View) []string {
	names := make([]string, 0, len(v.Clusters))
	for n := range v.Clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func mtlsCommands(t cluster.Target) []string {
	cmds := []string{
		"kubectl get peerauthentication -A",
		fmt.Sprintf("kubectl get destinationrule -n %s -o yaml", t.Namespace),
		fmt.Sprintf("istioctl x describe service %s -n %s", t.Service, t.Namespace),
	}
	if t.Source != nil {
		cmds = append(cmds, fmt.Sprintf("istioctl proxy-config cluster %s.%s --fqdn %s -o json", t.Source.Name, t.Source.Namespace, t.Host()))
	}
	return cmds
}
