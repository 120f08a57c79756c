package lab

import "context"

// KrewVersion is the sigs.k8s.io/krew version lab/tools/krew builds; the
// cached binary is named after it so a version bump rebuilds.
const KrewVersion = "v0.4.3"

// KrewBinary returns the path of a krew of KrewVersion, building it from
// lab/tools/krew the first time and caching it with the lab's other
// binaries.
func KrewBinary(ctx context.Context) (string, error) {
	return cachedToolBuild(ctx, "krew", "krew-"+KrewVersion, "")
}
