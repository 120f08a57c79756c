package remedies

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meshtriage/meshtriage/probes/patch"
)

// DeclareTCP declares a server-first port's protocol TCP on the Service:
// appProtocol "tcp", which istiod reads before the port's name
// (ConvertProtocol), so nothing that names the port (a VirtualService's
// port, a targetPort by name, a monitoring rule) changes. The sidecars
// then proxy the port with tcp_proxy and let the server speak first.
type DeclareTCP struct{}

func (DeclareTCP) Meta() Meta {
	return Meta{
		ID:     "declare-tcp",
		Causes: []string{"protocol.server-first"},
		Does:   "sets appProtocol tcp on the Service ports whose server speaks first (JSON patch of the Service)",
	}
}

func (DeclareTCP) Compute(ctx context.Context, in *Input) Output {
	ports, _ := in.Facts["portproto_server_first_ports"].([]string)
	if len(ports) == 0 {
		return unpatchable("the port-protocol step names no server-first port")
	}
	_, sd, err := in.ServiceData(ctx)
	if err != nil {
		return unpatchable("%v", err)
	}
	svc := sd.Service
	var ops []patch.Op
	var notes []string
	for i, sp := range svc.Spec.Ports {
		if !slices.Contains(ports, strconv.Itoa(int(sp.Port))) {
			continue
		}
		ops = append(ops, patch.Test(patch.Pointer("spec", "ports", i, "port"), sp.Port), patch.Add(patch.Pointer("spec", "ports", i, "appProtocol"), "tcp"))
		was := "its name " + strconv.Quote(sp.Name)
		if sp.AppProtocol != nil {
			was = "appProtocol " + strconv.Quote(*sp.AppProtocol)
		}
		notes = append(notes, fmt.Sprintf("declares port %d TCP (istiod read %s)", sp.Port, was))
	}
	if len(ops) == 0 {
		return unpatchable("no port of %s/%s is numbered %s", svc.Namespace, svc.Name, strings.Join(ports, ", "))
	}
	p, err := change(objectOf(coreV1, "Service", svc), svc, ops...)
	if err != nil {
		return unpatchable("the change of Service %s/%s does not apply: %v", svc.Namespace, svc.Name, err)
	}
	return Output{Patches: []patch.Patch{p}, Note: "The patch " + strings.Join(notes, "; ") + "; appProtocol wins over the name, so nothing that names the port changes."}
}
