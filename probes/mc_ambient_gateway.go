package probes

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// MultiClusterAmbientGatewayProbe looks, for an ambient caller (ztunnel
// carries its traffic), for the target's endpoints in remote clusters on
// another network than the caller's, and for the gateway istiod gives
// ztunnel to reach that network. istiod hands ztunnel a remote network's
// workload with a network_gateway only from a gateway whose HBONE port is
// not 0 (pilot/pkg/serviceregistry/ambient/workloads.go
// getNetworkGatewayAddress); without one ztunnel cannot reach the
// workload. Those gateways come from Gateway API Gateways
// (ambient/networks.go): in istiod's own cluster (the caller's) a Gateway
// of class istio-remote labelled topology.istio.io/network, with an
// IPAddress or Hostname address in its status and an HBONE listener,
// whose port becomes the HBONE port (localK8sGatewayToNetworkGateways).
// A remote cluster's istio-east-west Gateway is taken without any port
// (remoteK8sGatewayToNetworkGateways), so ztunnel's lookup skips it, and
// labelled Services are not read for ambient at all. In ambient a pod's
// network is its cluster's: the label on that cluster's control-plane
// namespace. The facts are the configuration's, not istiod's list (its
// networkz does not say which gateway ztunnel is given), so the cause
// stands at medium. All of it holds only when istiod runs with
// AMBIENT_ENABLE_MULTI_NETWORK: without it istiod gives ztunnel no other
// cluster's workload at all (mesh.AmbientMultiNetwork), and a missing
// gateway is not why the remote endpoints are not reached.
type MultiClusterAmbientGatewayProbe struct{}

// The Gateway API class and listener protocol istiod takes for an ambient
// network gateway in its own cluster (pkg/config/constants
// RemoteGatewayClassName; networks.go).
const (
	ambientRemoteGatewayClass = "istio-remote"
	ambientEastWestClass      = "istio-east-west"
	hboneListenerProtocol     = "HBONE"
)

func (MultiClusterAmbientGatewayProbe) Meta() Meta {
	return Meta{
		ID:    "multicluster-ambient-gateway",
		Title: "The ambient caller's ztunnel is given a gateway to the networks of the Service's remote endpoints",
		Reads: []string{"the caller pod", "endpointslices and the control-plane namespace in every cluster (--remote-contexts)", "gateways.gateway.networking.k8s.io of every namespace, in every cluster", "the istiod pods of the caller's cluster (their " + mesh.EnvAmbientEnableMultiNetwork + ")"},
		Facts: []FactSpec{
			{"mcamb_caller_network", FactString, "the ambient caller's network: the topology.istio.io/network label of its cluster's control-plane namespace (\"\" for none)"},
			{"mcamb_remote_endpoints", FactList, "endpoints of the Service in remote clusters on another network than the caller's, as CONTEXT: ADDRESS (pod P) network N"},
			{"mcamb_gateways_read", FactBool, "the Gateway API Gateways of the caller's cluster (istiod's own, the only ones that give ztunnel an HBONE port) were read"},
			{"mcamb_gateways", FactList, "every Gateway API Gateway read that names a network, as CONTEXT: NS/NAME (class C, network N): what istiod gives ztunnel from it"},
			{"mcamb_istiod_multinetwork", FactBool, "the caller's cluster's istiod runs with ambient multi-network (" + mesh.EnvAmbientEnableMultiNetwork + " and " + mesh.EnvEnableAmbient + " true), without which it gives ztunnel no other cluster's workload; absent when not known"},
			{"mcamb_networks_without_gateway", FactList, "networks of those remote endpoints for which no Gateway gives ztunnel a network gateway with an HBONE port, as NETWORK: the endpoints there; absent when the caller's cluster's Gateways or a network were not read, or when istiod runs without ambient multi-network (no gateway would bring them then)"},
			{"mcamb_unknown", FactList, "what could not be read, with why (never taken as absent)"},
		},
	}
}

// ambientGatewayInput is what the probe reads; each part with why it was
// not.
type ambientGatewayInput struct {
	Reads []mesh.ClusterRead
	// Gateways are each context's Gateway API Gateways (every namespace);
	// GatewaysUnknown says, by context, why they were not read.
	Gateways        map[string][]*gatewayv1.Gateway
	GatewaysUnknown map[string]string
	// MultiNetwork is what the caller's cluster's istiod runs with.
	MultiNetwork mesh.AmbientMultiNetwork
}

func (MultiClusterAmbientGatewayProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	remotes, unread := cluster.RemoteClusters(c)
	if unread != "" {
		return skippedResult(unread, nil)
	}
	if t.Source == nil {
		return skippedResult("no caller named (--from): whether it is ambient is not known", nil)
	}
	p, err := c.GetPod(ctx, t.Source.Namespace, t.Source.Name)
	if err != nil {
		return skippedResult("the caller is not known ("+cluster.AccessProblem("get pod "+t.Source.String(), err)+"): whether it is ambient is not known", nil)
	}
	if !mesh.CallerFromPod(p).Ambient {
		return skippedResult("the caller "+t.Source.String()+" is not an ambient pod: a sidecar's endpoints of other networks are the multicluster step's", nil)
	}
	in := ambientGatewayInput{
		Reads:           callerview.ReadClusters(ctx, c, t).Reads,
		Gateways:        map[string][]*gatewayv1.Gateway{},
		GatewaysUnknown: map[string]string{},
	}
	for _, r := range append([]cluster.Remote{{Context: c.Info().Context, Cluster: c}}, remotes...) {
		name := r.Context
		if name == "" {
			name = "(current)" // as callerview names the current context
		}
		gws, err := cluster.GatewayAPIGateways(ctx, r.Cluster, "")
		switch {
		case err == nil:
			in.Gateways[name] = gws
		case cluster.IsMissingKind(err):
			// No Gateway API in the cluster: istiod has no Gateways there.
			in.Gateways[name] = nil
		default:
			in.GatewaysUnknown[name] = cluster.AccessProblem("list gateways.gateway.networking.k8s.io", err)
		}
	}
	in.MultiNetwork = callerview.ReadAmbientMultiNetwork(ctx, c)
	return evaluateMultiClusterAmbientGateway(t, in)
}

// ambientNetworkGateway is what istiod gives ztunnel from one Gateway
// read in the caller's cluster (local) or a remote one: the network and
// ADDR:HBONEPORT, or why it gives none.
func ambientNetworkGateway(gw *gatewayv1.Gateway, local bool) (network, addr, why string) {
	network = gw.Labels[mesh.LabelNetwork]
	switch {
	case network == "":
		return "", "", "no " + mesh.LabelNetwork + " label"
	case !local && string(gw.Spec.GatewayClassName) == ambientEastWestClass:
		return network, "", "a remote cluster's " + ambientEastWestClass + " Gateway: istiod takes it with no HBONE port, and ztunnel is given no gateway from it"
	case !local:
		return network, "", "a remote cluster's Gateway of class " + string(gw.Spec.GatewayClassName) + ": not a network gateway for istiod"
	case string(gw.Spec.GatewayClassName) != ambientRemoteGatewayClass:
		return network, "", "class " + string(gw.Spec.GatewayClassName) + ", not " + ambientRemoteGatewayClass + ": not a network gateway for ztunnel in istiod's own cluster"
	}
	var port int
	for _, l := range gw.Spec.Listeners {
		if string(l.Protocol) == hboneListenerProtocol {
			port = int(l.Port)
			break
		}
	}
	if port == 0 {
		return network, "", "no listener of protocol " + hboneListenerProtocol
	}
	for _, a := range gw.Status.Addresses {
		// istiod skips an address without a type, and any but IPAddress
		// and Hostname.
		if a.Type != nil && (*a.Type == gatewayv1.IPAddressType || *a.Type == gatewayv1.HostnameAddressType) && a.Value != "" {
			return network, net.JoinHostPort(a.Value, strconv.Itoa(port)), ""
		}
	}
	return network, "", "no IPAddress or Hostname address in its status"
}

// clusterNetwork is the network istiod gives every ambient workload of a
// cluster: its control-plane namespace's label; why when not read.
func clusterNetwork(r mesh.ClusterRead) (network, why string) {
	if r.SystemNamespaceUnknown != "" {
		return "", r.SystemNamespaceUnknown
	}
	if r.SystemNamespace == nil {
		return "", ""
	}
	return r.SystemNamespace.Labels[mesh.LabelNetwork], ""
}

func evaluateMultiClusterAmbientGateway(t cluster.Target, in ambientGatewayInput) Result {
	r := Result{Facts: Facts{}}
	r.Evidence.Columns = []string{"CLUSTER", "GATEWAY", "CLASS", "NETWORK", "ZTUNNEL'S GATEWAY"}
	var unknown []string
	mn := in.MultiNetwork
	if mn.Unknown != "" {
		unknown = append(unknown, "whether istiod gives ztunnel other clusters' workloads ("+mesh.EnvAmbientEnableMultiNetwork+"): "+mn.Unknown)
	} else {
		r.Facts["mcamb_istiod_multinetwork"] = mn.On
	}
	multiNetworkOff := mn.Unknown == "" && !mn.On
	callerNetwork, callerKnown, localContext := "", false, ""
	for _, rd := range in.Reads {
		if !rd.Local {
			continue
		}
		localContext = rd.Context
		nw, why := clusterNetwork(rd)
		if why != "" {
			unknown = append(unknown, rd.Context+": the caller's network: "+why)
		} else {
			callerNetwork, callerKnown = nw, true
			r.Facts["mcamb_caller_network"] = nw
		}
	}
	// The endpoints of other networks, by network.
	byNetwork := map[string][]string{}
	var remoteEndpoints []string
	// Every remote endpoint, whatever its network: none reaches ztunnel
	// without ambient multi-network.
	allRemote := 0
	networksKnown := callerKnown
	for _, rd := range in.Reads {
		if rd.Local {
			continue
		}
		if rd.SlicesUnknown != "" {
			unknown = append(unknown, rd.Context+": the Service's endpoints: "+rd.SlicesUnknown)
			continue
		}
		allRemote += mesh.SliceAddresses(rd.Slices)
		nw, why := clusterNetwork(rd)
		if why != "" {
			unknown = append(unknown, rd.Context+": its network: "+why)
			networksKnown = false
			continue
		}
		if !callerKnown || nw == callerNetwork {
			continue
		}
		for _, s := range rd.Slices {
			for _, ep := range s.Endpoints {
				for _, addr := range ep.Addresses {
					e := rd.Context + ": " + addr
					if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
						e += " (pod " + ep.TargetRef.Name + ")"
					}
					remoteEndpoints = append(remoteEndpoints, e+" network "+wording.Dash(nw))
					byNetwork[nw] = append(byNetwork[nw], e)
				}
			}
		}
	}
	sort.Strings(remoteEndpoints)
	if callerKnown {
		r.Facts["mcamb_remote_endpoints"] = nonNil(remoteEndpoints)
		// The table is the Gateways; the endpoints they are for go below.
		r.Evidence.Raw = "endpoints in remote clusters on another network than the caller's (" + wording.Dash(callerNetwork) + "): " + strconv.Itoa(len(remoteEndpoints)) + "\n"
		for _, e := range remoteEndpoints {
			r.Evidence.Raw += "  " + e + "\n"
		}
	}
	switch {
	case mn.Unknown != "":
		r.Evidence.Raw += "istiod's ambient multi-network: not known: " + mn.Unknown + "\n"
	case mn.On:
		r.Evidence.Raw += "istiod's ambient multi-network: on (" + mn.Why + ")\n"
	default:
		r.Evidence.Raw += "istiod's ambient multi-network: off (" + mn.Why + "): it gives ztunnel no other cluster's workload\n"
	}

	// The Gateways, context by context; only the caller's cluster's give
	// ztunnel a gateway.
	usable := map[string][]string{}
	var gateways []string
	contexts := make([]string, 0, len(in.Gateways)+len(in.GatewaysUnknown))
	for ctxName := range in.Gateways {
		contexts = append(contexts, ctxName)
	}
	for ctxName := range in.GatewaysUnknown {
		contexts = append(contexts, ctxName)
	}
	sort.Strings(contexts)
	for _, ctxName := range contexts {
		if why, ok := in.GatewaysUnknown[ctxName]; ok {
			unknown = append(unknown, ctxName+": the Gateways: "+why)
			r.Evidence.Rows = append(r.Evidence.Rows, []string{ctxName, "not read", "-", "-", why})
			continue
		}
		gws := append([]*gatewayv1.Gateway(nil), in.Gateways[ctxName]...)
		sort.Slice(gws, func(i, j int) bool {
			return gws[i].Namespace+"/"+gws[i].Name < gws[j].Namespace+"/"+gws[j].Name
		})
		for _, gw := range gws {
			nw, addr, why := ambientNetworkGateway(gw, ctxName == localContext)
			if nw == "" {
				continue // not a network's gateway: waypoints, ingress
			}
			name := gw.Namespace + "/" + gw.Name
			gives := addr
			if addr != "" {
				usable[nw] = append(usable[nw], ctxName+": "+name+" "+addr)
			} else {
				gives = "none: " + why
			}
			gateways = append(gateways, fmt.Sprintf("%s: %s (class %s, network %s): %s", ctxName, name, gw.Spec.GatewayClassName, nw, gives))
			r.Evidence.Rows = append(r.Evidence.Rows, []string{ctxName, name, string(gw.Spec.GatewayClassName), nw, gives})
		}
	}
	r.Facts["mcamb_gateways"] = nonNil(gateways)
	_, localUnread := in.GatewaysUnknown[localContext]
	if _, read := in.Gateways[localContext]; !read {
		localUnread = true // no read of the caller's cluster at all
	}
	r.Facts["mcamb_gateways_read"] = !localUnread

	var missing []string
	networks := make([]string, 0, len(byNetwork))
	for nw := range byNetwork {
		networks = append(networks, nw)
	}
	sort.Strings(networks)
	for _, nw := range networks {
		if len(usable[nw]) == 0 {
			missing = append(missing, wording.Dash(nw)+": "+strings.Join(byNetwork[nw], ", "))
		}
	}
	if callerKnown && !localUnread && networksKnown && !multiNetworkOff {
		r.Facts["mcamb_networks_without_gateway"] = nonNil(missing)
	}
	r.Facts["mcamb_unknown"] = nonNil(unknown)
	r.Commands = []string{
		"kubectl get gateways.gateway.networking.k8s.io -A -l " + mesh.LabelNetwork + " -o wide",
		"kubectl get endpointslices -n " + t.Namespace + " -l kubernetes.io/service-name=" + t.Service + " (in each --remote-contexts context)",
	}
	v := verdict{Head: wording.CountNoun(len(remoteEndpoints), "endpoint") + " on another network than the ambient caller's (" + wording.Dash(callerNetwork) + ")"}
	switch {
	case multiNetworkOff && allRemote > 0:
		v.Warnings = append(v.Warnings, "istiod runs without ambient multi-network ("+mn.Why+"): it gives the caller's ztunnel none of the "+wording.CountNoun(allRemote, "endpoint")+" in the other clusters, on any network, with or without a gateway; the Service is reached only through the caller's cluster's own endpoints")
	case len(missing) > 0 && !localUnread:
		v.Problems = append(v.Problems, "no Gateway gives ztunnel a network gateway (class "+ambientRemoteGatewayClass+" in the caller's cluster, with an "+hboneListenerProtocol+" listener and a status address) for: "+strings.Join(missing, "; "))
	case len(remoteEndpoints) > 0 && localUnread:
		v.Warnings = append(v.Warnings, "whether ztunnel is given a gateway to them is not known: the caller's cluster's Gateways were not read")
	}
	v.Warnings = append(v.Warnings, unknown...)
	r.Status, r.Summary = v.judge()
	return r
}
