package recorded

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// A recording of a mesh that spans clusters (capture --remote-contexts)
// keeps the current context's reads at its top, as a recording of one
// cluster does, and each remote cluster's under clusters/DIR/, in the same
// layout (manifests, envoy, logs, istiod, its own scenario.yaml with its
// failed reads). The top scenario.yaml lists the remote clusters: each
// one's kubeconfig context and the folder it is in, so that a replay
// gives the multi-cluster probes each remote under the context it was
// read through. A recording without that list holds one cluster, and
// says so (cluster.RemotesNotRecorded), as it always has.

// ClustersDir is the folder of a recording that holds the remote
// clusters' recordings.
const ClustersDir = "clusters"

// RemoteScenario is the recording of one remote cluster: what was read
// through its kubeconfig context.
type RemoteScenario struct {
	Context string
	*Scenario
}

// remoteEntry is a remote cluster in scenario.yaml's clusters list.
type remoteEntry struct {
	Context       string `json:"context"`
	Dir           string `json:"dir"`
	ServerVersion string `json:"serverVersion,omitempty"`
	ControlPlane  string `json:"controlPlaneNamespace,omitempty"`
}

// maxDirName bounds the folder a context is written in: file systems
// refuse names past 255 bytes, and a context escaped byte by byte may
// triple in length.
const maxDirName = 100

// ContextDir is the folder name, under clusters/, of the kubeconfig
// context name: a context may be any string (an EKS ARN holds ':' and
// '/', others '@'), and its folder must be one path element that stays
// inside the recording on every file system. Letters, digits, '-', '_'
// and '.' are kept; every other byte is written %XX; a name of dots only
// ("." and "..") is escaped whole. A name too long for a file system is
// cut and made unique by the hash of the whole. scenario.yaml names the
// context itself, so the folder needs no decoding.
func ContextDir(context string) string {
	var b strings.Builder
	for i := 0; i < len(context); i++ {
		c := context[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	dir := b.String()
	if strings.Trim(dir, ".") == "" {
		dir = strings.Repeat("%2E", len(dir))
	}
	if dir == "" {
		dir = "%"
	}
	if len(dir) > maxDirName {
		sum := sha256.Sum256([]byte(context))
		dir = dir[:maxDirName-17] + "~" + hex.EncodeToString(sum[:8])
	}
	return dir
}

// remoteDirs are the folders of remotes, in order: ContextDir of each
// context, made unique where two would fold to one folder on a
// case-insensitive file system (contexts "Prod" and "prod").
func remoteDirs(remotes []RemoteScenario) []string {
	taken := map[string]bool{}
	dirs := make([]string, len(remotes))
	for i, r := range remotes {
		base := ContextDir(r.Context)
		dir := base
		for n := 2; taken[strings.ToLower(dir)]; n++ {
			dir = fmt.Sprintf("%s~%d", base, n)
		}
		taken[strings.ToLower(dir)] = true
		dirs[i] = path.Join(ClustersDir, dir)
	}
	return dirs
}

// remotesFiles lays out each remote's recording under its folder and
// returns the entries of scenario.yaml's clusters list.
func (s *Scenario) remotesFiles(out Files, redact func(string) string) ([]remoteEntry, error) {
	var entries []remoteEntry
	seen := map[string]bool{}
	for i, dir := range remoteDirs(s.Remotes) {
		r := s.Remotes[i]
		if r.Context == "" {
			return nil, errors.New("a remote cluster of the recording has no context name")
		}
		if seen[r.Context] {
			return nil, fmt.Errorf("remote cluster %q recorded twice", r.Context)
		}
		seen[r.Context] = true
		if len(r.Remotes) > 0 {
			return nil, fmt.Errorf("remote cluster %q: a remote's recording holds no remotes of its own", r.Context)
		}
		files, err := r.Scenario.Files(redact)
		if err != nil {
			return nil, fmt.Errorf("remote cluster %s: %w", r.Context, err)
		}
		for name, data := range files {
			out[path.Join(dir, name)] = data
		}
		entries = append(entries, remoteEntry{Context: r.Context, Dir: dir, ServerVersion: r.ServerVersion, ControlPlane: r.ControlPlaneNamespace})
	}
	return entries, nil
}

// loadRemotes reads the remote clusters scenario.yaml lists, each from its
// folder under clusters/. A folder there that the list does not name is
// an error, never a cluster silently left out of the triage.
func loadRemotes(fsys fs.FS, entries []remoteEntry, source, namespace string) ([]RemoteScenario, error) {
	named := map[string]bool{}
	contexts := map[string]bool{}
	var remotes []RemoteScenario
	for _, e := range entries {
		if e.Context == "" {
			return nil, fmt.Errorf("%s: a clusters entry names no context", HeaderFile)
		}
		if contexts[e.Context] {
			return nil, fmt.Errorf("%s: clusters names context %q twice", HeaderFile, e.Context)
		}
		contexts[e.Context] = true
		dir, ok := strings.CutPrefix(e.Dir, ClustersDir+"/")
		if !ok || dir == "" || dir == "." || dir == ".." || strings.ContainsAny(dir, `/\`) || !fs.ValidPath(e.Dir) {
			return nil, fmt.Errorf("%s: cluster %q: dir %q is not a folder of %s/", HeaderFile, e.Context, e.Dir, ClustersDir)
		}
		if named[dir] {
			return nil, fmt.Errorf("%s: clusters names folder %s twice", HeaderFile, e.Dir)
		}
		named[dir] = true
		sub, err := fs.Sub(fsys, e.Dir)
		if err != nil {
			return nil, err
		}
		if st, err := fs.Stat(fsys, e.Dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("cluster %q: no folder %s in the recording", e.Context, e.Dir)
		}
		r, err := loadRecording(sub, source+" cluster "+e.Context, namespace, false)
		if err != nil {
			return nil, err
		}
		r.Context = e.Context
		if r.ServerVersion == "" {
			r.ServerVersion = e.ServerVersion
		}
		if r.ControlPlaneNamespace == "" {
			r.ControlPlaneNamespace = e.ControlPlane
		}
		remotes = append(remotes, RemoteScenario{Context: e.Context, Scenario: r.Scenario})
	}
	dirs, err := fs.ReadDir(fsys, ClustersDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, d := range dirs {
		if !named[d.Name()] {
			return nil, fmt.Errorf("%s/%s: a remote cluster's folder that %s's clusters list does not name (each entry: context, dir)", ClustersDir, d.Name(), HeaderFile)
		}
	}
	return remotes, nil
}

// RemoteClusters are the remote clusters the recording holds, each served
// under the context it was read through; a recording of one cluster says
// that no other was read, as it always has.
func (c *Cluster) RemoteClusters() ([]cluster.Remote, string) {
	if len(c.remotes) == 0 {
		return nil, cluster.RemotesNotRecorded
	}
	return c.remotes, ""
}

var _ cluster.RemoteReader = (*Cluster)(nil)

// RemoteClusters are the remote clusters of the cluster recorded, each
// behind a recorder of its own, so that what the probes read of them is
// recorded too; none when the cluster has none (unread says why).
func (r *Recorder) RemoteClusters() ([]cluster.Remote, string) {
	if len(r.remotes) == 0 {
		return nil, r.remotesUnread
	}
	return r.remotes, ""
}

var _ cluster.RemoteReader = (*Recorder)(nil)
