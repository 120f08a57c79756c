package remedies

import (
	"context"
	"fmt"

	"github.com/meshtriage/meshtriage/probes/patch"
)

// SidecarEgress adds the Service, as namespace/host, to the egress hosts
// of the caller's Sidecar resource when those leave it out: to the egress
// listener for the Service's port, else the one without a port.
type SidecarEgress struct{}

func (SidecarEgress) Meta() Meta {
	return Meta{
		ID:     "sidecar-egress",
		Causes: []string{"config.not-visible"},
		Does:   "adds namespace/host to the caller's Sidecar egress hosts (JSON patch)",
	}
}

func (SidecarEgress) Compute(ctx context.Context, in *Input) Output {
	_, caller, views, err := in.Model(ctx)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	for _, v := range views {
		sc := v.Visibility.Sidecar
		if v.Visibility.Visible || sc == nil {
			continue
		}
		entry := in.Target.Namespace + "/" + in.Target.Host()
		index := -1
		for i, eg := range sc.Spec.GetEgress() {
			if p := eg.GetPort(); p != nil && int32(p.GetNumber()) == v.Port {
				index = i
				break
			}
			if eg.GetPort() == nil && index < 0 {
				index = i
			}
		}
		if index < 0 {
			return unpatchable("Sidecar %s/%s has no egress listener for port %d or for every port: add one with the Service's host", sc.Namespace, sc.Name, v.Port)
		}
		p, err := change(objectOf(istioNetworking, "Sidecar", sc), sc, patch.Add(patch.Pointer("spec", "egress", index, "hosts", "-"), entry))
		if err != nil {
			return unpatchable("the change of Sidecar %s/%s does not apply: %v", sc.Namespace, sc.Name, err)
		}
		return Output{Patches: []patch.Patch{p}, Note: fmt.Sprintf("The patch adds %s to egress[%d] hosts of Sidecar %s/%s, which applies to %s.", entry, index, sc.Namespace, sc.Name, caller)}
	}
	return unpatchable("no Sidecar resource scopes the caller's egress: the Service's exportTo hides it (the direction before)")
}
