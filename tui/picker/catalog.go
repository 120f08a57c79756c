package picker

import (
	"context"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Catalog is what the picker lists. probes.Cluster reads by name only, on
// purpose; choosing a target needs a few lists, so they are a separate,
// optional interface that the live cluster and the scenario cluster
// implement. Each call is one narrow read (one namespace at a time).
type Catalog interface {
	Namespaces(ctx context.Context) ([]NamespaceSummary, error)
	Services(ctx context.Context, namespace string) ([]ServiceSummary, error)
	Pods(ctx context.Context, namespace string) ([]PodSummary, error)
}

// NamespaceSummary is one namespace with its sidecar injection setting.
type NamespaceSummary struct {
	Name string
	// Injection is "enabled", "disabled", "revision=<rev>" or "none", as the
	// target probe's target_namespace_injection fact spells it.
	Injection string
}

// ServiceSummary is one Service with the pods it selects.
type ServiceSummary struct {
	Name  string
	Ports []string // as port/protocol, e.g. "80/TCP"
	// Pods is how many pods the selector matches; WithSidecar how many of
	// them carry an istio-proxy.
	Pods        int
	WithSidecar int
	// NoSelector marks a Service whose endpoints are managed by hand.
	NoSelector bool
}

// CallerCatalog ranks the target's likely callers across namespaces: the
// caller search `check` runs without --from. Optional; without it the
// picker lists the target namespace's pods.
type CallerCatalog interface {
	Callers(ctx context.Context, namespace, service string) ([]PodSummary, error)
}

// PodSummary is one pod that could be the caller reporting the 503s.
type PodSummary struct {
	// Namespace is the pod's, when it is not the target's (a caller found
	// across namespaces).
	Namespace string
	// Why says why the caller search thinks it calls the target; empty for
	// a pod merely listed.
	Why     string
	Name    string
	Ready   bool
	Sidecar mesh.SidecarKind
	// App is the app or app.kubernetes.io/name label, to recognise callers.
	App string
}
