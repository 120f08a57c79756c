package probes

import corev1 "k8s.io/api/core/v1"

// NamespaceInjection is the namespace's sidecar injection setting as the
// target_namespace_injection fact spells it (enabled, disabled,
// revision=<rev> or none), for callers outside the probes, such as the TUI's
// target picker, that must not read the labels differently.
func NamespaceInjection(ns *corev1.Namespace) string { return namespaceInjection(ns) }
