package probes

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// MultiClusterProbe reads the target Service in every cluster of a
// multi-cluster mesh (the current context and --remote-contexts: the
// same namespace and name, as istiod merges them) and says, endpoint by
// endpoint, its cluster and network and what a sidecar caller in the
// current cluster gets: the pod IP directly, the east-west gateway's
// ADDR:PORT, or nothing. It reads what istiod reads for that
// (pilot's EndpointsByNetworkFilter over NetworkManager's gateways):
// each cluster's EndpointSlices and pods, its control-plane namespace's
// topology.istio.io/network label and its network-labelled Services. It
// also says where those disagree: a remote cluster whose endpoints go to
// the caller as pod IPs while its gateway Service names a network (the
// label on its control-plane namespace missing or different), and a
// gateway Service istiod cannot use (a hostname only, no 15443, no
// address). The config alone says what istiod would push, not what it
// did: istiod's own word (endpointShardz, networkz) is not read here.
type MultiClusterProbe struct{}

func (MultiClusterProbe) Meta() Meta {
	return Meta{
		ID:    "multicluster",
		Title: "The Service's endpoints in every cluster, and how the caller reaches each",
		Reads: []string{"endpointslices", "pods", "namespaces (the control plane's)", "services (labelled topology.istio.io/network)", "configmaps (istio: meshNetworks)", "each --remote-contexts cluster: the same"},
		Facts: []FactSpec{
			{"mc_remotes_given", FactBool, "remote clusters were given to read (--remote-contexts); false for one cluster, or an input (recording, scenario, dump) that holds one: the other clusters of the mesh, if any, were then not read"},
			{"mc_remotes_read", FactInt, "remote clusters (--remote-contexts) whose endpoints of the Service were read"},
			{"mc_remotes_unread", FactList, "remote clusters that could not be read, as CONTEXT: why (their endpoints undecided, never absent)"},
			{"mc_endpoints", FactList, "every endpoint, as CONTEXT: ADDRESS (pod) network N: what a sidecar caller in the current cluster gets"},
			{"mc_remote_direct", FactList, "endpoints of a remote cluster the caller gets as pod IPs, as CONTEXT: ADDRESS (network N)"},
			{"mc_via_gateway", FactInt, "endpoints of another network the caller reaches through a network gateway"},
			{"mc_dropped", FactList, "endpoints istiod gives the caller nothing for, as CONTEXT: ADDRESS: why"},
			{"mc_undecided", FactList, "endpoints whose path cannot be told from what was read, as CONTEXT: ADDRESS: why"},
			{"mc_label_missing", FactList, "remote clusters whose endpoints are on no network (no pod label, no label on the control-plane namespace, no meshNetworks) while their gateway Service names one, as CONTEXT: NAMESPACE=NETWORK (the value the gateway Service carries)"},
			{"mc_label_disagrees", FactList, "remote clusters whose endpoints' network differs from the one their gateway Service names, as CONTEXT: endpoints on X (from where), gateway Service NS/NAME on Y"},
			{"mc_gateway_hostname", FactList, "network gateways known only by a hostname (a load balancer's), which istiod resolves with its own DNS, as CONTEXT: NS/NAME HOSTNAME"},
			{"mc_gateway_unusable", FactList, "Services labelled with a network that istiod takes for no gateway while endpoints of that network go to the caller as pod IPs, as CONTEXT: NS/NAME: why"},
			{"mc_gateway_port_missing", FactList, "of those, the ones that lack the gateway port (15443, or their networking.istio.io/gatewayPort label's) and 15008, as CONTEXT NS/NAME"},
		},
	}
}

func (MultiClusterProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	if _, unread := cluster.RemoteClusters(c); unread != "" {
		// Known, and said: no other cluster was given to read. Nothing is
		// judged of other clusters (the causes arise only when one was).
		return Result{Status: StatusPass, Summary: unread, Facts: Facts{"mc_remotes_given": false}}
	}
	caller := mesh.Caller{Sidecar: true, NetworkUnknown: "no caller named (--from)"}
	if t.Source != nil {
		p, err := c.GetPod(ctx, t.Source.Namespace, t.Source.Name)
		if err != nil {
			caller.NetworkUnknown = cluster.AccessProblem("the caller "+t.Source.String(), err)
		} else {
			caller = mesh.CallerFromPod(p)
			if !caller.Sidecar || caller.Gateway {
				return skippedResult("the caller "+t.Source.String()+" is not a sidecar: the split-horizon endpoints of other clusters are modelled for sidecars", nil)
			}
		}
	}
	return evaluateMultiCluster(t, caller, callerview.ReadClusters(ctx, c, t))
}

func evaluateMultiCluster(t cluster.Target, caller mesh.Caller, in callerview.Clusters) Result {
	var unknown []string
	if in.MeshUnknown != "" {
		unknown = append(unknown, in.MeshUnknown)
	}
	mc := mesh.MultiClusterEndpoints(caller, in.Mesh.Networks, in.Reads)
	r := Result{Facts: Facts{}}
	r.Evidence.Columns = []string{"CLUSTER", "ADDRESS", "POD", "READY", "NETWORK", "CALLER GETS", "WHY"}
	var all, direct, dropped, undecided []string
	via := 0
	for _, e := range mc.Endpoints {
		gets := e.Gets
		if e.Gets == mesh.GetsGateway {
			var addrs []string
			for _, g := range e.Via {
				addrs = append(addrs, net.JoinHostPort(g.Address, strconv.Itoa(int(g.Port))))
			}
			gets = "via gateway " + strings.Join(addrs, ", ")
			via++
		}
		network := wording.Dash(e.Network)
		if e.NetworkFrom != "" && e.NetworkFrom != "none" {
			network += " (" + e.NetworkFrom + ")"
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{e.Context, e.Address, wording.Dash(e.Pod), strconv.FormatBool(e.Ready), network, gets, e.Why})
		all = append(all, fmt.Sprintf("%s network %s: %s", e, wording.Dash(e.Network), gets))
		switch {
		case e.Gets == mesh.GetsDirect && !e.Local:
			direct = append(direct, fmt.Sprintf("%s: %s (network %s)", e.Context, e.Address, wording.Dash(e.Network)))
		case e.Gets == mesh.GetsDropped:
			dropped = append(dropped, e.String()+": "+e.Why)
		case e.Gets == mesh.GetsUndecided:
			undecided = append(undecided, e.String()+": "+e.Why)
		}
	}
	remotesRead := 0
	for _, cr := range in.Reads {
		if !cr.Local && cr.SlicesUnknown == "" {
			remotesRead++
		}
	}
	signs := multiClusterSigns(caller, in.Reads, mc)
	r.Facts["mc_remotes_given"] = true
	r.Facts["mc_remotes_read"] = remotesRead
	r.Facts["mc_remotes_unread"] = nonNil(mc.Unread)
	r.Facts["mc_endpoints"] = nonNil(all)
	r.Facts["mc_remote_direct"] = nonNil(direct)
	r.Facts["mc_via_gateway"] = via
	r.Facts["mc_dropped"] = nonNil(dropped)
	r.Facts["mc_undecided"] = nonNil(undecided)
	r.Facts["mc_label_missing"] = nonNil(signs.labelMissing)
	r.Facts["mc_label_disagrees"] = nonNil(signs.labelDisagrees)
	r.Facts["mc_gateway_hostname"] = nonNil(signs.hostname)
	r.Facts["mc_gateway_unusable"] = nonNil(signs.unusable)
	r.Facts["mc_gateway_port_missing"] = nonNil(signs.portMissing)

	var gws []string
	for _, g := range mc.Gateways {
		gws = append(gws, g.String())
	}
	var raw strings.Builder
	fmt.Fprintf(&raw, "caller network: %s\n", callerNetwork(caller))
	fmt.Fprintf(&raw, "network gateways (istiod's NetworkManager, merged from every cluster): %s\n", wording.Dash(strings.Join(gws, "; ")))
	for _, cr := range in.Reads {
		fmt.Fprintf(&raw, "cluster %s: %s\n", cr.Context, describeClusterRead(cr))
	}
	for _, u := range append(unknown, mc.Unknown...) {
		fmt.Fprintf(&raw, "not known: %s\n", u)
	}
	r.Evidence.Raw = raw.String()
	for _, cr := range in.Reads {
		ctxFlag := ""
		if !cr.Local {
			ctxFlag = " --context " + cr.Context
		}
		r.Commands = append(r.Commands, fmt.Sprintf("kubectl get endpointslices%s -n %s -l kubernetes.io/service-name=%s -o wide", ctxFlag, t.Namespace, t.Service),
			fmt.Sprintf("kubectl get namespace%s %s -L %s", ctxFlag, systemNamespaceName(cr), mesh.LabelNetwork),
			fmt.Sprintf("kubectl get services%s -A -l %s -o wide", ctxFlag, mesh.LabelNetwork))
	}

	v := verdict{Head: fmt.Sprintf("%s in %s", wording.CountNoun(len(mc.Endpoints), "endpoint"), wording.CountNoun(len(in.Reads), "cluster"))}
	v.Problems = append(v.Problems, signs.labelMissing...)
	v.Problems = append(v.Problems, signs.labelDisagrees...)
	v.Problems = append(v.Problems, signs.unusable...)
	v.Warnings = append(v.Warnings, signs.hostname...)
	v.Warnings = append(v.Warnings, mc.Unread...)
	if len(undecided) > 0 {
		v.Warnings = append(v.Warnings, wording.CountNoun(len(undecided), "endpoint")+" undecided")
	}
	r.Status, r.Summary = v.judge()
	return r
}

func callerNetwork(c mesh.Caller) string {
	if c.NetworkUnknown != "" {
		return "not known (" + c.NetworkUnknown + ")"
	}
	return wording.Dash(c.Network)
}

func systemNamespaceName(cr mesh.ClusterRead) string {
	if cr.SystemNamespace != nil && cr.SystemNamespace.Name != "" {
		return cr.SystemNamespace.Name
	}
	return cluster.DefaultControlPlane
}

func describeClusterRead(cr mesh.ClusterRead) string {
	if cr.SlicesUnknown != "" {
		return "not read: " + cr.SlicesUnknown
	}
	id := cr.ClusterID
	if id == "" {
		id = "not known (" + cr.ClusterIDUnknown + ")"
	}
	ns := "not read (" + cr.SystemNamespaceUnknown + ")"
	switch {
	case cr.SystemNamespace == nil && cr.SystemNamespaceUnknown == "":
		ns = "absent"
	case cr.SystemNamespace != nil:
		ns = cr.SystemNamespace.Name + " " + mesh.LabelNetwork + "=" + wording.Dash(cr.SystemNamespace.Labels[mesh.LabelNetwork])
	}
	gws := "not read (" + cr.GatewaysUnknown + ")"
	if cr.GatewaysUnknown == "" {
		var names []string
		for _, s := range cr.GatewayServices {
			names = append(names, s.Namespace+"/"+s.Name+" "+mesh.LabelNetwork+"="+s.Labels[mesh.LabelNetwork])
		}
		gws = wording.Dash(strings.Join(names, ", "))
	}
	return fmt.Sprintf("cluster ID %s; namespace %s; network-labelled Services %s", id, ns, gws)
}

type mcSigns struct {
	labelMissing, labelDisagrees, hostname, unusable, portMissing []string
}

// multiClusterSigns words the model's disagreements between what a
// remote cluster's objects say of its network and what istiod makes of
// them, for the endpoints that reach the caller as pod IPs.
func multiClusterSigns(caller mesh.Caller, reads []mesh.ClusterRead, mc mesh.MultiCluster) mcSigns {
	var s mcSigns
	for _, d := range mc.Disagreements(caller, reads) {
		ref := ""
		if d.Gateway != nil {
			ref = d.Gateway.Namespace + "/" + d.Gateway.Name
		}
		ns := cluster.DefaultControlPlane
		if d.Namespace != nil && d.Namespace.Name != "" {
			ns = d.Namespace.Name
		}
		switch d.Kind {
		case mesh.NetworkLabelMissing:
			s.labelMissing = append(s.labelMissing, fmt.Sprintf("%s: %s=%s (%s of the Service on no network go to the caller as pod IPs; Service %s names network %s)",
				d.Context, ns, d.GatewayNetwork, wording.CountNoun(len(d.Endpoints), "endpoint"), ref, d.GatewayNetwork))
		case mesh.NetworkLabelDisagrees:
			s.labelDisagrees = append(s.labelDisagrees, fmt.Sprintf("%s: %s on network %s (%s), gateway Service %s on %s",
				d.Context, wording.CountNoun(len(d.Endpoints), "endpoint"), d.EndpointNetwork, d.EndpointNetworkFrom, ref, d.GatewayNetwork))
		case mesh.GatewayUnusable:
			s.unusable = append(s.unusable, fmt.Sprintf("%s: %s: %s, and %s of network %s go to the caller as pod IPs", d.Context, ref, d.Why, wording.CountNoun(len(d.Endpoints), "endpoint"), d.EndpointNetwork))
			if d.PortMissing {
				s.portMissing = append(s.portMissing, d.Context+" "+ref)
			}
		case mesh.GatewayHostname:
			s.hostname = append(s.hostname, fmt.Sprintf("%s %s (network %s)", d.Why, d.Hostname, d.GatewayNetwork))
		}
	}
	for _, l := range [][]string{s.labelMissing, s.labelDisagrees, s.hostname, s.unusable, s.portMissing} {
		sort.Strings(l)
	}
	return s
}
