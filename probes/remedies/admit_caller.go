package remedies

import (
	"context"
	"fmt"
	"strings"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// AdmitCaller adds one rule to the ALLOW policy that ztunnel enforces at
// the Service's pods: from the caller's identity (its service account's
// principal), and nothing else. A DENY policy that matches the caller is a
// decision of the team's, and is said so.
type AdmitCaller struct{}

func (AdmitCaller) Meta() Meta {
	return Meta{
		ID:     "admit-caller",
		Causes: []string{"ambient.authz-rejected", "ambient.sidecar-bypasses-waypoint"},
		Does:   "adds a rule admitting the caller's principal to the ALLOW policy at the Service's pods (JSON patch)",
		Reads:  []string{"authorizationpolicies", "pods (the caller)"},
	}
}

func (AdmitCaller) Compute(ctx context.Context, in *Input) Output {
	if by, _ := in.Facts["authz_denied_by"].(string); by != "" {
		return unpatchable("DENY policy %s matches the caller: narrowing it is a security decision, not a fix to compute", by)
	}
	if denied, _ := in.Facts["authz_denied"].(bool); !denied {
		return unpatchable("ztunnel at the Service's pods admits the caller: a waypoint's policy refuses it (its HTTP rules are the team's to change)")
	}
	if in.Target.Source == nil {
		return unpatchable("no caller was named (--from): whose identity to admit is not known")
	}
	pod, err := in.Cluster.GetPod(ctx, in.Target.Source.Namespace, in.Target.Source.Name)
	if err != nil {
		return unpatchable("the caller pod could not be read: %v", err)
	}
	td := "cluster.local"
	if cfg, _, _, err := in.Model(ctx); err == nil {
		td = cfg.Mesh.TrustDomain()
	}
	principal := mesh.SPIFFEPrincipal(td, pod.Namespace, pod.Spec.ServiceAccountName)
	policies, _ := in.Facts["authz_policies"].([]string)
	for _, entry := range policies {
		action, ref, ok := strings.Cut(entry, " ")
		if !ok || action != "ALLOW" {
			continue
		}
		ns, name, ok := splitRef(ref)
		if !ok {
			continue
		}
		list, err := cluster.AuthorizationPolicies(ctx, in.Cluster, ns)
		if err != nil {
			return unpatchable("the AuthorizationPolicies of %s could not be read again: %v", ns, err)
		}
		var ap *securityv1.AuthorizationPolicy
		for _, p := range list {
			if p.Name == name {
				ap = p
			}
		}
		if ap == nil {
			continue
		}
		rule := map[string]any{"from": []any{map[string]any{"source": map[string]any{"principals": []string{principal}}}}}
		op := patch.Add("/spec/rules/-", rule)
		if len(ap.Spec.GetRules()) == 0 {
			op = patch.Add("/spec/rules", []any{rule})
		}
		p, err := change(objectOf(istioSecurity, "AuthorizationPolicy", ap), ap, op)
		if err != nil {
			return unpatchable("the change of AuthorizationPolicy %s does not apply: %v", ref, err)
		}
		return Output{Patches: []patch.Patch{p}, Note: fmt.Sprintf("The patch adds to ALLOW policy %s a rule admitting %s (the caller %s runs as service account %s); its other rules stay.",
			ref, principal, pod.Name, dashIfEmptySA(pod.Spec.ServiceAccountName))}
	}
	return unpatchable("no ALLOW policy the ambient-policy step names (%s) was read", strings.Join(policies, ", "))
}

func dashIfEmptySA(sa string) string {
	if sa == "" {
		return "default"
	}
	return sa
}
