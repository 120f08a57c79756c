package cluster

// Remote is another cluster of a multi-cluster mesh, read through a
// kubeconfig context of its own (--remote-contexts, as istioctl names
// the flag). The triage's target and caller are in the current context;
// a remote gives only what istiod reads from a remote cluster (Services,
// EndpointSlices, pods, namespaces), read-only, through its own client.
type Remote struct {
	// Context is the kubeconfig context the cluster was read through: the
	// name every object and endpoint read from it carries in the evidence.
	Context string
	Cluster Cluster
}

// RemoteReader is a source that knows the remote clusters of the triage:
// a live client given --remote-contexts. unread says why none are given
// (no context was named), so that "not given" is never taken for "no
// other cluster".
type RemoteReader interface {
	RemoteClusters() (remotes []Remote, unread string)
}

// RemotesNotRecorded is what a source of one cluster says of remote
// clusters: an input (a recording, a scenario, a dump, a bug report) holds
// one, and a live client was given no --remote-contexts. One sentence for
// both, so that a triage reads the same live and replayed; whether the
// mesh spans other clusters is not in it.
const RemotesNotRecorded = "one cluster read: no other was given (--remote-contexts) or held in the input, so the mesh's other clusters, if any, were not read"

// RemoteClusters are the remote clusters c reads through, looked for
// through the caches and wrappers in front of the source; a source that
// cannot carry them says so (RemotesNotRecorded).
func RemoteClusters(c Cluster) (remotes []Remote, unread string) {
	for c != nil {
		if r, ok := c.(RemoteReader); ok {
			return r.RemoteClusters()
		}
		u, ok := c.(interface{ Unwrap() Cluster })
		if !ok {
			break
		}
		c = u.Unwrap()
	}
	return nil, RemotesNotRecorded
}
