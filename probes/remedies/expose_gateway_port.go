package remedies

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// ExposeGatewayPort makes the gateway's listeners reachable. A Gateway
// API listener on a port its Service does not have gets the Service port
// whose targetPort is that port (istiod's own hint: "the service port
// should be specified, not the workload port"). An Istio Gateway server
// no port of the gateway's Service is or targets gets a Service port of
// its own (the port, to the same targetPort), which exposes it.
type ExposeGatewayPort struct{}

func (ExposeGatewayPort) Meta() Meta {
	return Meta{
		ID:     "expose-gateway-port",
		Causes: []string{"gateway.listener-unreachable"},
		Does:   "sets a Gateway API listener's port to the Service port that targets it, or adds the Istio Gateway server's port to the gateway's Service (JSON patch)",
	}
}

func (ExposeGatewayPort) Compute(ctx context.Context, in *Input) Output {
	cfg, caller, v, why := gatewayView(ctx, in)
	if why != "" {
		return unpatchable("%s", why)
	}
	var out Output
	var notes []string
	for _, s := range v.Gateway.Servers {
		ns, name, _ := splitRef(s.Gateway)
		switch {
		case strings.Contains(s.Rejected, "AddressNotUsable"):
			gwName, listener, ok := mesh.ParseInternalGatewayName(name)
			gw := apiGatewayObject(cfg, ns, gwName)
			if !ok || gw == nil {
				continue
			}
			svc, port := serviceTargeting(cfg, gw.Namespace, caller, s.Port)
			if svc == nil {
				return unpatchable("listener %s of Gateway %s/%s is on port %d, which no port of its Service is or targets: add the port to the Service's, or set the listener's to one of them (%s)", listener, ns, gwName, s.Port, s.Rejected)
			}
			i := listenerIndex(gw, listener)
			path := patch.Pointer("spec", "listeners", i, "port")
			p, err := change(objectOf(gatewayAPI, "Gateway", gw), gw, patch.Test(patch.Pointer("spec", "listeners", i, "name"), listener), patch.Test(path, s.Port), patch.Replace(path, port))
			if err != nil {
				return unpatchable("the change of Gateway %s/%s does not apply: %v", ns, gwName, err)
			}
			out.Patches = append(out.Patches, p)
			notes = append(notes, fmt.Sprintf("sets listener %s of Gateway %s/%s to port %d, the port of Service %s/%s whose targetPort is %d", listener, ns, gwName, port, svc.Namespace, svc.Name, s.Port))
		case s.Unreachable != "":
			svc := gatewayServiceOf(cfg, caller)
			if svc == nil {
				return unpatchable("the gateway's Service was not read")
			}
			entry := map[string]any{"name": fmt.Sprintf("%s-%d", strings.ToLower(s.Protocol), s.Port), "port": s.Port, "targetPort": s.ListenerPort, "protocol": "TCP"}
			p, err := change(objectOf(coreV1, "Service", svc), svc, patch.Add(patch.Pointer("spec", "ports", "-"), entry))
			if err != nil {
				return unpatchable("the change of Service %s/%s does not apply: %v", svc.Namespace, svc.Name, err)
			}
			out.Patches = append(out.Patches, p)
			notes = append(notes, fmt.Sprintf("adds port %d (to targetPort %d) to Service %s/%s for %s", s.Port, s.ListenerPort, svc.Namespace, svc.Name, s.Ref()))
		}
	}
	if len(out.Patches) == 0 {
		return unpatchable("no server or listener of the gateway is unreachable")
	}
	out.Note = "The patch " + strings.Join(notes, "; ") + "."
	return out
}

// serviceTargeting is the Service of namespace ns selecting the caller
// with a port whose targetPort is port, and that port.
func serviceTargeting(cfg *mesh.Config, ns string, caller mesh.Caller, port int32) (*corev1.Service, int32) {
	for _, sd := range cfg.Services {
		svc := sd.Service
		if svc == nil || svc.Namespace != ns || len(svc.Spec.Selector) == 0 || !mesh.LabelsMatch(svc.Spec.Selector, caller.Labels) {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if sp.TargetPort.IntValue() == int(port) {
				return svc, sp.Port
			}
		}
	}
	return nil, 0
}

// gatewayServiceOf is the first Service of the caller's namespace that
// selects it (by hostname order).
func gatewayServiceOf(cfg *mesh.Config, caller mesh.Caller) *corev1.Service {
	var best *corev1.Service
	for host, sd := range cfg.Services {
		svc := sd.Service
		if svc == nil || svc.Namespace != caller.Namespace || len(svc.Spec.Selector) == 0 || !mesh.LabelsMatch(svc.Spec.Selector, caller.Labels) {
			continue
		}
		if best == nil || host < mesh.ServiceHost(best.Name, best.Namespace) {
			best = svc
		}
	}
	return best
}
