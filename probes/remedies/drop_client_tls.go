package remedies

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/patch"
)

// DropClientTLS removes the DestinationRule tls setting that makes the
// caller's sidecar send what the upstream cannot take, so that auto mTLS
// decides per endpoint: ISTIO_MUTUAL toward pods without a sidecar
// (sidecar.missing-upstream), DISABLE toward a STRICT upstream
// (mtls.plaintext-to-strict), SIMPLE or MUTUAL origination toward meshed
// pods (mtls.origination-conflict). With auto mTLS off, DISABLE becomes
// ISTIO_MUTUAL instead.
type DropClientTLS struct{}

func (DropClientTLS) Meta() Meta {
	return Meta{
		ID:     "drop-client-tls",
		Causes: []string{"sidecar.missing-upstream", "mtls.plaintext-to-strict", "mtls.origination-conflict"},
		Does:   "removes the DestinationRule tls mode that conflicts with the upstream, so auto mTLS decides",
	}
}

func (DropClientTLS) Compute(ctx context.Context, in *Input) Output {
	var modes []string
	switch in.Cause {
	case "sidecar.missing-upstream":
		modes = []string{"ISTIO_MUTUAL"}
	case "mtls.plaintext-to-strict":
		modes = []string{"DISABLE"}
	default:
		modes = []string{"SIMPLE", "MUTUAL"}
	}
	rules, ports, cfg, err := applyingRules(ctx, in)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	auto := cfg.Mesh.EnableAutoMtls()
	var out Output
	var notes []string
	for _, dr := range rules {
		tps, err := trafficPolicies(dr, ports)
		if err != nil {
			return unpatchable("read DestinationRule %s/%s: %v", dr.Namespace, dr.Name, err)
		}
		var ops []patch.Op
		for _, tp := range tps {
			tls, ok := tp.Policy["tls"].(map[string]any)
			mode, _ := tls["mode"].(string)
			if !ok || !contains(modes, mode) {
				continue
			}
			path := tp.Path + "/tls"
			if mode == "DISABLE" && !auto {
				ops = append(ops, patch.Test(path+"/mode", mode), patch.Replace(path+"/mode", "ISTIO_MUTUAL"))
				notes = append(notes, fmt.Sprintf("sets %s tls mode DISABLE to ISTIO_MUTUAL (auto mTLS is off in this mesh)", tp.Where))
				continue
			}
			ops = append(ops, patch.Test(path+"/mode", mode), patch.Remove(path))
			notes = append(notes, fmt.Sprintf("removes tls mode %s from %s", mode, tp.Where))
		}
		if len(ops) == 0 {
			continue
		}
		p, err := drPatch(dr, ops)
		if err != nil {
			return unpatchable("the change of DestinationRule %s/%s does not apply: %v", dr.Namespace, dr.Name, err)
		}
		out.Patches = append(out.Patches, p)
	}
	if len(out.Patches) == 0 {
		if len(rules) == 0 {
			return unpatchable("no DestinationRule applies to %s: no tls setting of one causes this", in.Target.Host())
		}
		return unpatchable("the DestinationRules that apply (%s) set no tls mode %s: the client's TLS comes from elsewhere (auto mTLS, or the app itself)", ruleNames(rules), strings.Join(modes, " or "))
	}
	out.Note = "The patch " + strings.Join(notes, "; ") + "; auto mTLS then sends each endpoint what it accepts."
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
