package mesh

import (
	"fmt"
	"slices"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
)

// GatewayServiceOf is the network-labelled Service, among those read in
// every cluster, that gave istiod the network gateway g (its network, one
// of its addresses and its gateway port), with the read of its cluster;
// nil when none read did (a meshNetworks gateway, or a cluster not read).
func GatewayServiceOf(reads []ClusterRead, g NetworkGateway) (*ClusterRead, *corev1.Service) {
	for i := range reads {
		for _, svc := range reads[i].GatewayServices {
			if svc.Labels[LabelNetwork] != g.Network || !slices.Contains(externalAddresses(svc), g.Address) {
				continue
			}
			if gw, ok := gatewayPorts(svc); ok && gw.Port == g.Port {
				return &reads[i], svc
			}
		}
	}
	return nil, nil
}

// Passthrough is what an east-west gateway's Istio Gateways make of its
// gateway port: the server that forwards the target's mTLS by SNI
// (AUTO_PASSTHROUGH), or why none does.
type Passthrough struct {
	// ListenerPort is the port the gateway pod listens on for the
	// Service's gateway port (its targetPort).
	ListenerPort int32
	// Server names the AUTO_PASSTHROUGH server that covers the target;
	// "" when none does.
	Server string
	// Near are the servers on that port, selecting the pods, that do not
	// serve the target, each with why.
	Near []string
	// WrongMode are the servers on that port, selecting the pods, whose
	// hosts cover the target and whose tls mode alone is not
	// AUTO_PASSTHROUGH: the one field to change.
	WrongMode []GatewayServerRef
	// Unknown says why it cannot be told (the listener port not known).
	Unknown string
}

// GatewayServerRef is one server of a Gateway as read, and its tls mode
// ("" without tls).
type GatewayServerRef struct {
	Gateway *networkingv1.Gateway
	Index   int
	Mode    string
}

// PassthroughInput is what istiod reads for an east-west gateway's
// listener on its gateway port.
type PassthroughInput struct {
	// Service is the gateway Service and Port its gateway port (15443, or
	// its networking.istio.io/gatewayPort label's).
	Service *corev1.Service
	Port    int32
	// Pods are the pods the Service selects.
	Pods []*corev1.Pod
	// Gateways are the Istio Gateways of the cluster whose istiod serves
	// the pods; ScopeToNamespace is PILOT_SCOPE_GATEWAY_TO_NAMESPACE.
	Gateways         []*networkingv1.Gateway
	ScopeToNamespace bool
	// Host and Namespace are the target Service's.
	Host, Namespace string
}

// EastWestPassthrough finds the Gateway server istiod turns into the
// gateway's SNI filter chains for the target (gateway.go
// builtAutoPassthroughFilterChains): a server of a Gateway selecting the
// gateway's pod, whose port leads to the listener the Service's gateway
// port targets (a label-selected Gateway's port is translated to the
// targetPort of the Service port of that number), in tls mode
// AUTO_PASSTHROUGH, with a host covering the target's. The Services
// selecting the pod are taken to be the gateway Service alone.
func EastWestPassthrough(in PassthroughInput) Passthrough {
	var out Passthrough
	if len(in.Pods) == 0 {
		out.Unknown = "no pod of Service " + in.Service.Namespace + "/" + in.Service.Name + " was read: which Gateways select it is not known"
		return out
	}
	var sp *corev1.ServicePort
	for i := range in.Service.Spec.Ports {
		if in.Service.Spec.Ports[i].Port == in.Port {
			sp = &in.Service.Spec.Ports[i]
		}
	}
	if sp == nil {
		out.Unknown = fmt.Sprintf("Service %s/%s has no port %d", in.Service.Namespace, in.Service.Name, in.Port)
		return out
	}
	pod := in.Pods[0]
	caller := CallerFromPod(pod)
	tp, why := targetPortOn(in.Service, *sp, caller)
	if why != "" {
		out.Unknown = why
		return out
	}
	out.ListenerPort = tp
	services := []*corev1.Service{in.Service}
	for _, gw := range in.Gateways {
		if in.ScopeToNamespace && gw.Namespace != pod.Namespace {
			continue
		}
		if ok, _ := GatewaySelects(gw, caller); !ok {
			continue
		}
		for i, s := range gw.Spec.GetServers() {
			if s.GetPort() == nil {
				continue
			}
			number := int32(s.GetPort().GetNumber())
			if lp, _ := listenerPort(number, services, caller); lp != tp {
				continue
			}
			ref := fmt.Sprintf("%s/%s servers[%d] (port %d)", gw.Namespace, gw.Name, i, number)
			mode := ""
			if s.GetTls() != nil {
				mode = s.GetTls().GetMode().String()
			}
			covers := serverCoversHost(sanitizeServerHosts(s.GetHosts(), gw.Namespace), in.Host, in.Namespace)
			switch {
			case mode != "AUTO_PASSTHROUGH":
				out.Near = append(out.Near, ref+": tls mode "+orNone(mode)+", not AUTO_PASSTHROUGH")
				if covers {
					out.WrongMode = append(out.WrongMode, GatewayServerRef{Gateway: gw, Index: i, Mode: mode})
				}
			case !covers:
				out.Near = append(out.Near, ref+": hosts "+strings.Join(s.GetHosts(), ", ")+" do not cover "+in.Host)
			case out.Server == "":
				out.Server = ref
			}
		}
	}
	return out
}

// serverCoversHost: a server host, "ns/host" or "host", covers the target
// when the namespace is the target's and the host takes its name.
func serverCoversHost(hosts []string, host, ns string) bool {
	for _, h := range hosts {
		if before, after, ok := strings.Cut(h, "/"); ok {
			if before == ns && hostSubsetOf(host, after) {
				return true
			}
			continue
		}
		if hostSubsetOf(host, h) {
			return true
		}
	}
	return false
}
