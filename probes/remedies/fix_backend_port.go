package remedies

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// FixBackendPort points each backendRef that names a port its Service
// does not have at the Service port meant: the one whose targetPort is
// the port written (the pod's port, written where the Service's belongs:
// istiod's own hint for a listener), else the Service's only port. A
// Service with several ports, none targeting it, leaves the choice to the
// team.
type FixBackendPort struct{}

func (FixBackendPort) Meta() Meta {
	return Meta{
		ID:     "fix-backend-port",
		Causes: []string{"gateway.backend-port-missing"},
		Does:   "replaces a backendRef's port with the Service port that targets it, or the Service's only port (JSON patch)",
	}
}

func (FixBackendPort) Compute(ctx context.Context, in *Input) Output {
	cfg, api, routes, forMesh, why := apiRoutesFor(ctx, in)
	if why != "" {
		return unpatchable("%s", why)
	}
	var out Output
	var notes []string
	for _, rv := range routesWithBrokenBackendsOf(in, api, routes) {
		obj, ref, ok := routeObject(cfg, rv.Route)
		if !ok {
			continue
		}
		var ops []patch.Op
		for _, b := range rv.InvalidBackends(forMesh) {
			if b.Invalid != mesh.BackendPortMissing {
				continue
			}
			sd := cfg.Services[mesh.ServiceHost(b.Name, b.Namespace)]
			if sd == nil || sd.Service == nil {
				continue
			}
			port, how := meantPort(sd, b.Port)
			if port == 0 {
				return unpatchable("Service %s/%s has ports %s, none targeting %d: which one %s rule %d means is the team's call", b.Namespace, b.Name, servicePortList(sd), b.Port, rv.Route, b.Rule)
			}
			ops = append(ops, patch.Test(backendRefPath(b.Rule, b.Ref, "port"), b.Port), patch.Replace(backendRefPath(b.Rule, b.Ref, "port"), port))
			notes = append(notes, fmt.Sprintf("sets the port of backendRef %s/%s in %s rule %d from %d to %d (%s)", b.Namespace, b.Name, rv.Route, b.Rule, b.Port, port, how))
		}
		if len(ops) == 0 {
			continue
		}
		p, err := change(ref, obj, ops...)
		if err != nil {
			return unpatchable("the change of %s does not apply: %v", rv.Route, err)
		}
		out.Patches = append(out.Patches, p)
	}
	if len(out.Patches) == 0 {
		return unpatchable("no route the triage judged names a port its Service lacks")
	}
	out.Note = "The patch " + strings.Join(notes, "; ") + "."
	return out
}

// meantPort is the Service port a backendRef's port means: the one whose
// targetPort is it, else the only one.
func meantPort(sd *mesh.ServiceData, written int32) (int32, string) {
	var targeting []int32
	for _, p := range sd.Service.Spec.Ports {
		if p.TargetPort.IntValue() == int(written) {
			targeting = append(targeting, p.Port)
		}
	}
	switch {
	case len(targeting) == 1:
		return targeting[0], fmt.Sprintf("the Service port whose targetPort is %d", written)
	case len(targeting) == 0 && len(sd.Service.Spec.Ports) == 1:
		return sd.Service.Spec.Ports[0].Port, "the Service's only port"
	}
	return 0, ""
}

func servicePortList(sd *mesh.ServiceData) string {
	var out []string
	for _, p := range sd.Service.Spec.Ports {
		out = append(out, fmt.Sprintf("%d→%s", p.Port, p.TargetPort.String()))
	}
	return strings.Join(out, ", ")
}
