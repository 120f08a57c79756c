package live

// The roles assets/rbac ships, as ClusterRoles and as namespaced Roles, by
// the name the error messages tell an on-call to bind.
const (
	// ReadOnlyRole grants the reads of a triage, Envoy admin and istiod
	// through port-forward included, and nothing that can change a pod.
	ReadOnlyRole = "meshtriage-readonly"
	// ExecRole grants pods/exec: the confirm-first actions run through it,
	// and so does the Envoy admin read's fallback where port-forward is
	// refused. It is optional, and bound on top of ReadOnlyRole.
	ExecRole = "meshtriage-exec"
)
