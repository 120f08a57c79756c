package probes

import (
	"context"
	"fmt"
	"strings"

	"istio.io/api/label"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// MultiClusterWaypointProbe compares the target Service's waypoint
// binding in the current cluster with each remote cluster's, when the
// Service is global (ambient multi-network: a GLOBAL
// meshConfig.serviceScopeConfigs entry selects it, services.go
// matchServiceScope). istiod builds each cluster's ServiceInfo with that
// cluster's own istio.io/use-waypoint labels and waypoint Gateways
// (GlobalNestedWorkloadServicesCollection → serviceServiceBuilder →
// fetchWaypointForService over the cluster's waypoints), then merges a
// global Service's ServiceInfos keeping the local cluster's as the base:
// addresses and SANs are merged, the waypoint is not, and nothing
// compares it (multicluster.go mergeServiceInfosWithCluster: "TODO: Do we
// need to merge anything else?"). So each cluster's istiod pushes its own
// cluster's waypoint for the one Service, and traffic crossing clusters
// meets a waypoint in one and none (or another) in the other: the TLS
// errors of istio/istio#60985 ("incorrect setup": keep the configuration
// the same in every cluster, scale a waypoint to zero rather than remove
// it). istiod never acts on the difference itself, so the probe's facts
// are the configuration's word, not istiod's. Scopes are read, and
// Services merged, only when istiod runs with AMBIENT_ENABLE_MULTI_NETWORK
// (mesh.AmbientMultiNetwork): without it every Service is its own
// cluster's, and no binding reaches another cluster's traffic.
type MultiClusterWaypointProbe struct{}

func (MultiClusterWaypointProbe) Meta() Meta {
	return Meta{
		ID:    "multicluster-waypoint",
		Title: "The Service's waypoint is the same in every cluster it is global across",
		Reads: []string{"the Service and its namespace in every cluster (--remote-contexts)", "configmaps istio (the current cluster's: serviceScopeConfigs)", "gateways.gateway.networking.k8s.io of the namespace the waypoint label names, in every cluster"},
		Facts: []FactSpec{
			{"mcwp_istiod_multinetwork", FactBool, "the current cluster's istiod runs with ambient multi-network (" + mesh.EnvAmbientEnableMultiNetwork + "), without which it reads no serviceScopeConfigs and merges no cluster's Service; absent when not known"},
			{"mcwp_clusters_compared", FactInt, "remote clusters where the Service is global, as it is in the current one, whose waypoint binding was compared with the current cluster's"},
			{"mcwp_label_differs", FactList, "remote clusters whose istio.io/use-waypoint (the Service's, else its namespace's) names another waypoint than the current cluster's, or none where it names one, as CONTEXT: what each cluster names"},
			{"mcwp_gateway_missing", FactList, "clusters where the waypoint both clusters name has no Gateway while the other cluster has it, as CONTEXT: waypoint NS/NAME"},
			{"mcwp_unknown", FactList, "what could not be compared, with why (never taken as the same or as different)"},
		},
	}
}

func (MultiClusterWaypointProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	if _, unread := cluster.RemoteClusters(c); unread != "" {
		return skippedResult(unread, nil)
	}
	return evaluateMultiClusterWaypoint(t, callerview.ReadClusterWaypoints(ctx, c, t), callerview.ReadAmbientMultiNetwork(ctx, c))
}

func evaluateMultiClusterWaypoint(t cluster.Target, in callerview.ClusterWaypoints, mn mesh.AmbientMultiNetwork) Result {
	r := Result{Facts: Facts{}}
	r.Evidence.Columns = []string{"CLUSTER", "SCOPE", "USE-WAYPOINT", "WAYPOINT GATEWAY", "BINDING"}
	var differs, missing, unknown []string
	compared := 0
	if in.MeshUnknown != "" {
		unknown = append(unknown, in.MeshUnknown+": the Service's scope is not known")
	}
	if mn.Unknown != "" {
		unknown = append(unknown, "whether istiod merges global Services ("+mesh.EnvAmbientEnableMultiNetwork+"): "+mn.Unknown)
	} else {
		r.Facts["mcwp_istiod_multinetwork"] = mn.On
	}
	multiNetworkOff := mn.Unknown == "" && !mn.On
	var local *callerview.ClusterWaypoint
	for i := range in.Clusters {
		if in.Clusters[i].Local {
			local = &in.Clusters[i]
		}
	}
	scopes := make([]mesh.ServiceScope, len(in.Clusters))
	for i, cw := range in.Clusters {
		switch {
		case cw.ServiceUnknown != "":
			scopes[i] = mesh.ServiceScope{Unknown: cw.ServiceUnknown}
		case cw.ServiceNotFound:
			scopes[i] = mesh.ServiceScope{Why: "no such Service in this cluster"}
		case multiNetworkOff:
			scopes[i] = mesh.ServiceScope{Why: "istiod runs without ambient multi-network (" + mn.Why + "): it reads no serviceScopeConfigs and merges no other cluster's Service"}
		case in.MeshUnknown != "":
			scopes[i] = mesh.ServiceScope{Unknown: in.MeshUnknown}
		default:
			scopes[i] = mesh.ServiceScopeOf(in.Mesh, cw.Service, cw.Namespace)
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{cw.Context, describeScope(scopes[i]), describeUse(cw), describeWaypointGateway(cw), describeBinding(cw)})
	}
	localScope := mesh.ServiceScope{}
	for i := range in.Clusters {
		if in.Clusters[i].Local {
			localScope = scopes[i]
		}
	}
	for i, cw := range in.Clusters {
		if cw.Local || local == nil {
			continue
		}
		s := scopes[i]
		switch {
		case s.Unknown != "":
			unknown = append(unknown, cw.Context+": "+s.Unknown)
			continue
		case localScope.Unknown != "":
			unknown = append(unknown, local.Context+": "+localScope.Unknown)
			continue
		case !s.Global || !localScope.Global:
			// A remote Service that is not global is dropped by istiod,
			// and a local one that is not global is not merged: no
			// cluster's binding reaches the other's traffic.
			continue
		}
		if why := bindingUnknown(*local); why != "" {
			unknown = append(unknown, why)
			continue
		}
		if why := bindingUnknown(cw); why != "" {
			unknown = append(unknown, why)
			continue
		}
		compared++
		lu, ru := local.Binding.Use, cw.Binding.Use
		if lu.Named != ru.Named || lu.Ref != ru.Ref {
			differs = append(differs, fmt.Sprintf("%s: %s, where %s: %s", cw.Context, useText(ru), local.Context, useText(lu)))
			continue
		}
		if !lu.Named {
			continue
		}
		// Both name the same waypoint: its Gateway must exist in both.
		switch {
		case local.Gateway != nil && cw.Gateway == nil:
			missing = append(missing, fmt.Sprintf("%s: waypoint %s (Gateway in %s, none in %s)", cw.Context, ru.Ref, local.Context, cw.Context))
		case local.Gateway == nil && cw.Gateway != nil:
			missing = append(missing, fmt.Sprintf("%s: waypoint %s (Gateway in %s, none in %s)", local.Context, lu.Ref, cw.Context, local.Context))
		}
	}
	r.Facts["mcwp_clusters_compared"] = compared
	r.Facts["mcwp_label_differs"] = nonNil(differs)
	r.Facts["mcwp_gateway_missing"] = nonNil(missing)
	r.Facts["mcwp_unknown"] = nonNil(unknown)
	for _, cw := range in.Clusters {
		cmd := "kubectl get service " + t.Service + " -n " + t.Namespace + " --show-labels"
		if !cw.Local {
			cmd += " --context " + cw.Context
		}
		r.Commands = append(r.Commands, cmd)
	}
	if len(in.Clusters) < 2 {
		return Result{Status: StatusPass, Summary: "no remote cluster read", Facts: r.Facts, Commands: r.Commands}
	}
	v := verdict{Head: wording.CountNoun(compared, "remote cluster") + " where the Service is global compared"}
	v.Problems = append(v.Problems, differs...)
	v.Problems = append(v.Problems, missing...)
	v.Warnings = append(v.Warnings, unknown...)
	r.Status, r.Summary = v.judge()
	return r
}

// bindingUnknown says why a cluster's binding cannot be compared: its
// use-waypoint falls back to a namespace not read, or names a waypoint
// whose Gateways were not read.
func bindingUnknown(cw callerview.ClusterWaypoint) string {
	switch {
	case cw.Binding.Use.NamespaceUnknown:
		return cw.Context + ": " + cw.NamespaceUnknown + ": a namespace-wide waypoint is not known"
	case cw.Binding.Use.Named && cw.GatewaysUnknown != "":
		return cw.Context + ": " + cw.GatewaysUnknown
	}
	return ""
}

func useText(u mesh.WaypointUse) string {
	switch {
	case u.OptedOut:
		return "the Service is labelled " + label.IoIstioUseWaypoint.Name + "=none"
	case !u.Named:
		return "no " + label.IoIstioUseWaypoint.Name + " on the Service or its namespace"
	}
	return "waypoint " + u.Ref.String() + " (" + u.From + ")"
}

func describeScope(s mesh.ServiceScope) string {
	switch {
	case s.Unknown != "":
		return "not known"
	case s.Global:
		return "global"
	}
	return "local: " + s.Why
}

func describeUse(cw callerview.ClusterWaypoint) string {
	switch {
	case cw.Service == nil:
		return "-"
	case cw.Binding.Use.NamespaceUnknown:
		return "not known (namespace not read)"
	}
	return useText(cw.Binding.Use)
}

func describeWaypointGateway(cw callerview.ClusterWaypoint) string {
	switch {
	case cw.Service == nil || !cw.Binding.Use.Named:
		return "-"
	case cw.GatewaysUnknown != "":
		return "not read"
	case cw.Gateway == nil:
		return "none"
	}
	return cw.Gateway.Namespace + "/" + cw.Gateway.Name + " (class " + string(cw.Gateway.Spec.GatewayClassName) + ")"
}

func describeBinding(cw callerview.ClusterWaypoint) string {
	if cw.Service == nil {
		return wording.Dash(strings.TrimSpace(cw.ServiceUnknown))
	}
	return cw.Binding.State
}
