package probes

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	istiodparse "github.com/meshtriage/meshtriage/probes/parse/istiod"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// MultiClusterHBONEProbe looks for a network gateway that istiod hands a
// sidecar caller on its HBONE port (double HBONE, which a sidecar cannot
// originate). For a sidecar, istiod's split-horizon EDS keeps the network
// gateways whose mTLS port is not 0 and emits GW.Addr:GW.Port with
// tlsMode istio (pilot/pkg/xds/endpoints/ep_filters.go
// selectNetworkGateways: "Sidecar proxies cannot talk to ambient E/W
// gateway ... we filter it out", by Port == 0; EndpointsByNetworkFilter's
// non-ambient branch). istiod at the lab's pin gives a Gateway API
// gateway's HBONE listener as both Port and HBONEPort
// (serviceregistry/kube/controller/network.go handleGatewayResource,
// istio/istio#61618), so an ambient east-west gateway (istio-east-west,
// listener 15008 HBONE) passes that filter and the sidecar sends its
// SNI-routed mTLS to an HBONE listener: 503 UF/UC (#57878, #61725). The
// facts are istiod's own: the gateway from /debug/networkz, and the
// endpoint pushed, from the caller's Envoy /clusters.
type MultiClusterHBONEProbe struct{}

func (MultiClusterHBONEProbe) Meta() Meta {
	return Meta{
		ID:    "multicluster-hbone",
		Title: "No network gateway is handed to the sidecar caller on its HBONE port",
		Reads: []string{"the caller pod", "istiod (current cluster): /debug/networkz", "the caller's Envoy /clusters"},
		Facts: []FactSpec{
			{"mchbone_networkz_read", FactBool, "istiod's /debug/networkz was read"},
			{"mchbone_gateways", FactList, "network gateways istiod lists with their HBONE port as their mTLS port (a sidecar is handed ADDR:PORT for SNI-routed mTLS), as NETWORK: ADDR:PORT (cluster C); absent when networkz was not read"},
			{"mchbone_clusters_read", FactBool, "the caller's Envoy /clusters was read"},
			{"mchbone_caller_endpoints", FactList, "endpoints of the target's outbound clusters in the caller's Envoy at such a gateway's ADDR:PORT, as CLUSTER: ADDR:PORT (network N); absent when networkz or /clusters was not read"},
			{"mchbone_unknown", FactList, "what could not be read, with why"},
		},
	}
}

// hboneInput is what the probe reads; each part with why it was not.
type hboneInput struct {
	Gateways        []istiodparse.NetworkGateway
	GatewaysUnknown string
	Clusters        []envoy.Cluster
	ClustersUnknown string
}

func (MultiClusterHBONEProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	// Walked only in a triage of several clusters, as the other
	// multi-cluster steps: a triage of one cluster (or an input, which
	// holds one) says so and reads no istiod for it.
	if _, unread := cluster.RemoteClusters(c); unread != "" {
		return skippedResult(unread, nil)
	}
	skip, what, err := envoyadmin.CheckSource(ctx, c, t)
	if err != nil {
		return ErrorResult(what, err)
	}
	if skip != "" {
		return skippedResult(skip, nil)
	}
	if p, err := c.GetPod(ctx, t.Source.Namespace, t.Source.Name); err == nil {
		if caller := mesh.CallerFromPod(p); !caller.Sidecar || caller.Gateway {
			return skippedResult("the caller "+t.Source.String()+" is not a sidecar: only a sidecar is handed a gateway's mTLS port for a remote network (non-sidecars get double HBONE)", nil)
		}
	}
	var in hboneInput
	gws, err := cluster.IstiodNetworkGateways(ctx, c, "")
	if err != nil {
		in.GatewaysUnknown = "istiod's " + istiodparse.NetworkzPath + " not read: " + wording.FirstLine(err.Error())
	} else {
		in.Gateways = gws
	}
	body, err := c.EnvoyAdmin(ctx, *t.Source, envoyadmin.ClustersPath)
	if err == nil {
		in.Clusters, err = envoy.ParseClusters(body)
	}
	if err != nil {
		in.ClustersUnknown = cluster.AccessProblem("read Envoy "+envoyadmin.ClustersPath+" of "+t.Source.String(), err)
	}
	return evaluateMultiClusterHBONE(t, in)
}

func evaluateMultiClusterHBONE(t cluster.Target, in hboneInput) Result {
	r := Result{Facts: Facts{}}
	r.Evidence.Columns = []string{"GATEWAY (networkz)", "NETWORK", "CLUSTER", "mTLS PORT", "HBONE PORT", "CALLER'S ENDPOINTS THERE"}
	var unknown []string
	r.Facts["mchbone_networkz_read"] = in.GatewaysUnknown == ""
	r.Facts["mchbone_clusters_read"] = in.ClustersUnknown == ""
	if in.GatewaysUnknown != "" {
		unknown = append(unknown, in.GatewaysUnknown)
	}
	if in.ClustersUnknown != "" {
		unknown = append(unknown, in.ClustersUnknown)
	}
	// hbone: each gateway whose mTLS port is its HBONE port, by ADDR:PORT.
	hbone := map[string]istiodparse.NetworkGateway{}
	var gateways []string
	for _, g := range in.Gateways {
		if g.Port == 0 || g.Port != g.HBONEPort {
			continue
		}
		addr := net.JoinHostPort(g.Addr, strconv.Itoa(int(g.Port)))
		hbone[addr] = g
		gateways = append(gateways, fmt.Sprintf("%s: %s (cluster %s)", g.Network, addr, wording.Dash(g.Cluster)))
	}
	sort.Strings(gateways)
	var pushed []string
	byGateway := map[string][]string{}
	if in.ClustersUnknown == "" && in.GatewaysUnknown == "" {
		for _, c := range in.Clusters {
			if !envoy.IsTargetCluster(c.Name, t.Host(), t.Port) {
				continue
			}
			for _, h := range c.Hosts {
				if g, ok := hbone[h.Address]; ok {
					pushed = append(pushed, fmt.Sprintf("%s: %s (network %s)", c.Name, h.Address, g.Network))
					byGateway[h.Address] = append(byGateway[h.Address], c.Name)
				}
			}
		}
		sort.Strings(pushed)
		r.Facts["mchbone_caller_endpoints"] = nonNil(pushed)
	}
	if in.GatewaysUnknown == "" {
		r.Facts["mchbone_gateways"] = nonNil(gateways)
	}
	r.Facts["mchbone_unknown"] = nonNil(unknown)
	for _, g := range in.Gateways {
		addr := net.JoinHostPort(g.Addr, strconv.Itoa(int(g.Port)))
		there := "-"
		switch {
		case in.ClustersUnknown != "":
			there = "not read"
		case len(byGateway[addr]) > 0 && g.Port == g.HBONEPort:
			there = strings.Join(byGateway[addr], ", ")
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{g.Addr, g.Network, wording.Dash(g.Cluster), strconv.Itoa(int(g.Port)), strconv.Itoa(int(g.HBONEPort)), there})
	}
	r.Commands = []string{
		"kubectl exec -n istio-system deploy/istiod -- curl -s localhost:15014" + istiodparse.NetworkzPath,
		envoyadmin.PilotAgentRequest(*t.Source, "clusters") + " | grep -F '" + t.Host() + "'",
	}
	v := verdict{Head: wording.CountNoun(len(in.Gateways), "network gateway") + " listed by istiod"}
	switch {
	case len(pushed) > 0:
		v.Problems = append(v.Problems, "the caller's sidecar holds endpoints at a gateway's HBONE port, which it cannot tunnel to: "+strings.Join(pushed, "; "))
	case len(gateways) > 0 && in.ClustersUnknown != "":
		v.Problems = append(v.Problems, "istiod lists gateways whose mTLS port is their HBONE port, which it hands sidecars for their networks' endpoints: "+strings.Join(gateways, "; "))
	}
	v.Warnings = append(v.Warnings, unknown...)
	r.Status, r.Summary = v.judge()
	return r
}
