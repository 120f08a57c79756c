package mesh

import (
	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
)

// NamespaceInjection is the namespace's sidecar injection setting as the
// target_namespace_injection fact spells it (enabled, disabled,
// revision=<rev> or none). It reads the namespace's injection labels the way Istio's
// webhooks select them: istio-injection wins over istio.io/rev (the revision
// webhooks require istio-injection to be absent).
func NamespaceInjection(ns *corev1.Namespace) string {
	if ns == nil {
		return "none"
	}
	switch v, ok := ns.Labels[NamespaceInjectionName]; {
	case ok && v == "enabled":
		return "enabled"
	case ok:
		return "disabled"
	}
	if rev := ns.Labels[label.IoIstioRev.Name]; rev != "" {
		return "revision=" + rev
	}
	return "none"
}
