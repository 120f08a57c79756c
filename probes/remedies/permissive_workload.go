package remedies

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/patch"
)

// PermissiveWorkload lets plaintext in to the Service's pods only, for a
// migration: the workload's own PeerAuthentication set to PERMISSIVE when
// one decides STRICT, else a new one that selects the Service's pods. A
// namespace- or mesh-wide policy stays STRICT for everything else.
type PermissiveWorkload struct{}

func (PermissiveWorkload) Meta() Meta {
	return Meta{
		ID:     "permissive-workload",
		Causes: []string{"mtls.plaintext-to-strict"},
		Does:   "makes the Service's pods PERMISSIVE with a workload PeerAuthentication (its own, or a new one)",
	}
}

func (PermissiveWorkload) Compute(ctx context.Context, in *Input) Output {
	cfg, sd, err := in.ServiceData(ctx)
	if err != nil {
		return unpatchable("%v", err)
	}
	svc := sd.Service
	if len(svc.Spec.Selector) == 0 {
		return unpatchable("the Service has no selector: no workload policy can select its pods")
	}
	pods, _ := in.Pods(ctx)
	if len(pods) == 0 {
		return unpatchable("the Service selects no pod the triage read")
	}
	mode := cfg.PeerAuthMode(svc.Namespace, pods[0].Labels, 0)
	if !strings.HasPrefix(mode.From, "workload ") && !strings.HasPrefix(mode.From, "port ") {
		obj := patch.Object{APIVersion: istioSecurity, Kind: "PeerAuthentication", Namespace: svc.Namespace, Name: svc.Name + "-permissive"}
		p, err := patch.CreateObject(obj, newObject(obj, map[string]any{
			"selector": map[string]any{"matchLabels": svc.Spec.Selector},
			"mtls":     map[string]any{"mode": "PERMISSIVE"},
		}))
		if err != nil {
			return unpatchable("%v", err)
		}
		return Output{Patches: []patch.Patch{p}, Note: fmt.Sprintf("STRICT comes from the %s policy; the patch creates %s/%s, PERMISSIVE for the pods the Service selects (%s) only: every other workload stays as it is. Delete it once no plaintext caller is left.",
			mode.From, obj.Namespace, obj.Name, selectorString(svc.Spec.Selector))}
	}
	ref := mode.From[strings.LastIndex(mode.From, " ")+1:]
	for _, pa := range cfg.PeerAuthentications {
		if pa.Namespace+"/"+pa.Name != ref {
			continue
		}
		var ops []patch.Op
		if strings.HasPrefix(mode.From, "port ") {
			var port uint32
			fmt.Sscanf(mode.From, "port %d", &port)
			path := patch.Pointer("spec", "portLevelMtls", port, "mode")
			ops = append(ops, patch.Test(path, "STRICT"), patch.Replace(path, "PERMISSIVE"))
		} else {
			ops = append(ops, patch.Test("/spec/mtls/mode", "STRICT"), patch.Replace("/spec/mtls/mode", "PERMISSIVE"))
		}
		p, err := change(objectOf(istioSecurity, "PeerAuthentication", pa), pa, ops...)
		if err != nil {
			return unpatchable("the change of PeerAuthentication %s does not apply: %v", ref, err)
		}
		return Output{Patches: []patch.Patch{p}, Note: "The patch sets " + mode.From + " from STRICT to PERMISSIVE; set it back once no plaintext caller is left."}
	}
	return unpatchable("the PeerAuthentication that decides STRICT (%s) is not among the objects read", mode.From)
}
