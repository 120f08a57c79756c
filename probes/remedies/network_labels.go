package remedies

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// remoteNotSimulated says why a patch of a remote cluster's object is not
// proven: the triaged world is the current context's, and the fix
// prover patches that world only.
func remoteNotSimulated(ctx string) string {
	return "it patches an object of cluster " + ctx + " (--remote-contexts), which the fix prover's world (the current context) does not hold: run check again with --remote-contexts " + ctx + " once it is applied"
}

// networkDisagreements re-reads every cluster as the multicluster step
// did and returns the model's disagreements of kind, with the caller.
func networkDisagreements(ctx context.Context, in *Input, kind string) ([]mesh.NetworkDisagreement, error) {
	caller := mesh.Caller{Sidecar: true, NetworkUnknown: "no caller named (--from)"}
	if in.Target.Source != nil {
		p, err := in.Cluster.GetPod(ctx, in.Target.Source.Namespace, in.Target.Source.Name)
		if err != nil {
			return nil, fmt.Errorf("the caller %s could not be read: %v", in.Target.Source, err)
		}
		caller = mesh.CallerFromPod(p)
	}
	clusters := callerview.ReadClusters(ctx, in.Cluster, in.Target)
	if clusters.RemotesUnread != "" {
		return nil, fmt.Errorf("%s", clusters.RemotesUnread)
	}
	mc := mesh.MultiClusterEndpoints(caller, clusters.Mesh.Networks, clusters.Reads)
	var out []mesh.NetworkDisagreement
	for _, d := range mc.Disagreements(caller, clusters.Reads) {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out, nil
}

// LabelRemoteNetwork labels a remote cluster's control-plane namespace
// with the network its own east-west gateway Service names: istiod gives
// that network to every pod of the cluster that names none
// (setNetworkFromNamespace), and then sends the caller to the gateway
// instead of the pod IPs.
type LabelRemoteNetwork struct{}

func (LabelRemoteNetwork) Meta() Meta {
	return Meta{
		ID:     "label-remote-network",
		Causes: []string{"multicluster.network-label-missing"},
		Does:   "labels a remote cluster's control-plane namespace topology.istio.io/network with the network its gateway Service names (merge patch, --context)",
		Reads:  []string{"each --remote-contexts cluster's control-plane namespace and network-labelled Services"},
	}
}

func (LabelRemoteNetwork) Compute(ctx context.Context, in *Input) Output {
	ds, err := networkDisagreements(ctx, in, mesh.NetworkLabelMissing)
	if err != nil {
		return unpatchable("%v", err)
	}
	var patches []patch.Patch
	var notes, contexts []string
	done := map[string]bool{}
	for _, d := range ds {
		if d.Namespace == nil || done[d.Context] {
			continue // a namespace not found is not patched: it would be created
		}
		done[d.Context] = true
		p, err := labelPatch(objectOf(coreV1, "Namespace", d.Namespace), d.Namespace, d.GatewayNetwork)
		if err != nil {
			return unpatchable("the change of namespace %s in %s does not apply: %v", d.Namespace.Name, d.Context, err)
		}
		p.Context = d.Context
		patches = append(patches, p)
		contexts = append(contexts, d.Context)
		notes = append(notes, fmt.Sprintf("labels namespace %s of %s %s=%s, the network its Service %s/%s names", d.Namespace.Name, d.Context, mesh.LabelNetwork, d.GatewayNetwork, d.Gateway.Namespace, d.Gateway.Name))
	}
	if len(patches) == 0 {
		return unpatchable("no remote cluster read has a control-plane namespace without a network label beside a gateway Service that names one")
	}
	return Output{Patches: patches, NotSimulated: remoteNotSimulated(strings.Join(contexts, ",")),
		Note: "The patch " + strings.Join(notes, "; ") + ": the pods that name no network of their own take it, and the caller goes through that cluster's gateway."}
}

// AlignNetworkLabels makes a remote cluster's two network labels agree:
// its endpoints' network (its control-plane namespace's label) and the
// one its east-west gateway Service names. The odd one out is patched:
// the namespace when its network is the caller's own (the remote pods
// then look local), else the gateway Service, to the network the pods
// are on. Pods labelled by the injector are not patched: their label
// comes from values.global.network and needs a restart.
type AlignNetworkLabels struct{}

func (AlignNetworkLabels) Meta() Meta {
	return Meta{
		ID:     "align-network-labels",
		Causes: []string{"multicluster.network-label-disagrees"},
		Does:   "sets the odd topology.istio.io/network label of a remote cluster (its control-plane namespace's or its gateway Service's) to the other's value (merge patch, --context)",
		Reads:  []string{"each --remote-contexts cluster's control-plane namespace and network-labelled Services"},
	}
}

func (AlignNetworkLabels) Compute(ctx context.Context, in *Input) Output {
	ds, err := networkDisagreements(ctx, in, mesh.NetworkLabelDisagrees)
	if err != nil {
		return unpatchable("%v", err)
	}
	callerNetwork := ""
	if in.Target.Source != nil {
		if p, err := in.Cluster.GetPod(ctx, in.Target.Source.Namespace, in.Target.Source.Name); err == nil {
			callerNetwork = mesh.CallerFromPod(p).Network
		}
	}
	var patches []patch.Patch
	var notes, contexts, why []string
	for _, d := range ds {
		fromNamespace := d.Namespace != nil && strings.HasPrefix(d.EndpointNetworkFrom, "namespace ")
		switch {
		case !fromNamespace:
			why = append(why, fmt.Sprintf("in %s the pods carry network %s themselves (%s): the injector writes it from values.global.network, which only a reinstall and a restart change", d.Context, d.EndpointNetwork, d.EndpointNetworkFrom))
			continue
		case d.EndpointNetwork == callerNetwork:
			p, err := labelPatch(objectOf(coreV1, "Namespace", d.Namespace), d.Namespace, d.GatewayNetwork)
			if err != nil {
				return unpatchable("the change of namespace %s in %s does not apply: %v", d.Namespace.Name, d.Context, err)
			}
			p.Context = d.Context
			patches = append(patches, p)
			notes = append(notes, fmt.Sprintf("labels namespace %s of %s with network %s, its gateway's (it named the caller's own network %s)", d.Namespace.Name, d.Context, d.GatewayNetwork, d.EndpointNetwork))
		default:
			p, err := labelPatch(objectOf(coreV1, "Service", d.Gateway), d.Gateway, d.EndpointNetwork)
			if err != nil {
				return unpatchable("the change of Service %s/%s in %s does not apply: %v", d.Gateway.Namespace, d.Gateway.Name, d.Context, err)
			}
			p.Context = d.Context
			patches = append(patches, p)
			notes = append(notes, fmt.Sprintf("labels Service %s/%s of %s with network %s, its pods' (it named %s)", d.Gateway.Namespace, d.Gateway.Name, d.Context, d.EndpointNetwork, d.GatewayNetwork))
		}
		contexts = append(contexts, d.Context)
	}
	if len(patches) == 0 {
		if len(why) > 0 {
			return unpatchable("%s", strings.Join(why, "; "))
		}
		return unpatchable("no remote cluster read has network labels that disagree")
	}
	return Output{Patches: patches, NotSimulated: remoteNotSimulated(strings.Join(contexts, ",")),
		Note: "The patch " + strings.Join(notes, "; ") + "."}
}

// AddGatewayPort adds Istio's gateway port to an east-west gateway
// Service that lacks it: istiod takes a network-labelled Service for a
// gateway only with port 15443 (or its networking.istio.io/gatewayPort
// label's) or 15008, and a sidecar can use only the first.
type AddGatewayPort struct{}

func (AddGatewayPort) Meta() Meta {
	return Meta{
		ID:     "add-gateway-port",
		Causes: []string{"multicluster.gateway-unusable"},
		Does:   "adds {name: tls, port: 15443, targetPort: 15443} to a remote cluster's network gateway Service that lacks it (JSON patch, --context)",
		Reads:  []string{"each --remote-contexts cluster's network-labelled Services"},
	}
}

func (AddGatewayPort) Compute(ctx context.Context, in *Input) Output {
	ds, err := networkDisagreements(ctx, in, mesh.GatewayUnusable)
	if err != nil {
		return unpatchable("%v", err)
	}
	var patches []patch.Patch
	var notes, contexts, why []string
	for _, d := range ds {
		if !d.PortMissing {
			why = append(why, fmt.Sprintf("Service %s/%s of %s: %s; its address is the load balancer's or the nodes', in no object read", d.Gateway.Namespace, d.Gateway.Name, d.Context, d.Why))
			continue
		}
		if v := d.Gateway.Labels["networking.istio.io/gatewayPort"]; v != "" && v != "15443" {
			why = append(why, fmt.Sprintf("Service %s/%s of %s names gateway port %s: which port its pods serve that on is not read", d.Gateway.Namespace, d.Gateway.Name, d.Context, v))
			continue
		}
		port := corev1.ServicePort{Name: "tls", Protocol: corev1.ProtocolTCP, Port: mesh.DefaultNetworkGatewayPort, TargetPort: intstr.FromInt32(mesh.DefaultNetworkGatewayPort)}
		p, err := change(objectOf(coreV1, "Service", d.Gateway), d.Gateway,
			patch.Test(patch.Pointer("spec", "ports"), d.Gateway.Spec.Ports), patch.Add("/spec/ports/-", port))
		if err != nil {
			return unpatchable("the change of Service %s/%s in %s does not apply: %v", d.Gateway.Namespace, d.Gateway.Name, d.Context, err)
		}
		p.Context = d.Context
		patches = append(patches, p)
		contexts = append(contexts, d.Context)
		notes = append(notes, fmt.Sprintf("adds port 15443 (tls) to Service %s/%s of %s", d.Gateway.Namespace, d.Gateway.Name, d.Context))
	}
	if len(patches) == 0 {
		if len(why) > 0 {
			return unpatchable("%s", strings.Join(why, "; "))
		}
		return unpatchable("no remote cluster read has a network gateway Service that lacks its port")
	}
	return Output{Patches: patches, NotSimulated: remoteNotSimulated(strings.Join(contexts, ",")),
		Note: "The patch " + strings.Join(notes, "; ") + ": istiod then takes it for its network's gateway; the gateway's pods must serve 15443 (an AUTO_PASSTHROUGH Gateway server), as istio's east-west gateway does."}
}

// labelPatch sets one network label on an object as read.
func labelPatch(obj patch.Object, typed interface {
	GetLabels() map[string]string
}, network string) (patch.Patch, error) {
	ops := []patch.Op{patch.Add(patch.Pointer("metadata", "labels", mesh.LabelNetwork), network)}
	if typed.GetLabels() == nil {
		ops = []patch.Op{patch.Add(patch.Pointer("metadata", "labels"), map[string]string{mesh.LabelNetwork: network})}
	}
	return change(obj, typed, ops...)
}
