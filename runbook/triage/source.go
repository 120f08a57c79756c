package triage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/bugreport"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
)

// Source is what a triage reads: a cluster, and what comes with it.
type Source struct {
	// Cluster serves the probes' reads; Open puts the session's read
	// cache in front of it.
	Cluster cluster.Cluster
	// Runner runs the confirm-first actions; nil when the source cannot
	// (a recording has no pods to exec into).
	Runner actions.Runner
	// Label names the source for the status bar: the kube context, with
	// "(scenario NAME)" for a recorded incident.
	Label string
	// Target is the target a recording was made for; nil for a live
	// cluster and manifests.
	Target *cluster.Target
	// ServerVersion is the Kubernetes version a recording holds; empty
	// asks the cluster.
	ServerVersion string
	// Extra goes into session_started: the scenario's name, or the path
	// of a recording or bug report, so that `log resume` can reopen it.
	Extra map[string]string
	// Skipped are the parts of an offline input that were not read (a
	// document of unknown kind, a file no probe reads), one line each, for
	// stderr: the on-call must know what the triage did not see.
	Skipped []string
	// SamplesApart is how long apart a recording's two samples of the
	// counters were read (0: not known); check waits as long, so that
	// the rates it reports are the capture's.
	SamplesApart time.Duration

	live *live.Cluster
}

// cached is the read cache of one session; a live cluster's Envoy admin and
// istiod reads then share its pod reads too, and one port-forward per pod
// port, which Triage.Close lets go.
func (s Source) cached() cluster.Cluster {
	if s.live != nil {
		return live.NewCache(s.live)
	}
	return cluster.NewCache(s.Cluster)
}

func (s Source) started(ctx context.Context, tool string) runbook.SessionStarted {
	info := s.Cluster.Info()
	st := runbook.SessionStarted{KubeContext: info.Context, Server: info.Server, Tool: tool, ServerVersion: s.ServerVersion, Extra: s.Extra}
	if st.ServerVersion == "" {
		st.ServerVersion = serverVersion(ctx, s.Cluster)
	}
	return st
}

// Live connects to the cluster that flags select, as kubectl would, and
// checks that its API server answers; every failure is one line the
// on-call can act on.
func Live(ctx context.Context, flags *live.ConfigFlags, opts live.Options) (Source, error) {
	return LiveWithRemotes(ctx, flags, nil, opts)
}

// RemoteContextsFlag is the flag that names the remote clusters'
// kubeconfig contexts, istioctl's name for it.
const RemoteContextsFlag = "--remote-contexts"

// LiveWithRemotes is Live for a mesh that spans clusters: the target and
// its caller are in the context the flags select, and each of
// remoteContexts (kubeconfig contexts, istioctl's --remote-contexts) gets
// a client of its own, loaded from the same kubeconfig. A context the
// kubeconfig lacks is refused by name; a remote that does not answer is
// not an error here: what the triage reads from it is then not read, and
// its endpoints undecided.
func LiveWithRemotes(ctx context.Context, flags *live.ConfigFlags, remoteContexts []string, opts live.Options) (Source, error) {
	remotes, err := liveRemotes(flags, remoteContexts, opts)
	if err != nil {
		return Source{}, err
	}
	lc, err := live.New(flags, opts)
	var noContext *live.ContextNotFoundError
	switch {
	case errors.Is(err, live.ErrNoKubeconfig):
		return Source{}, noKubeconfig(flags)
	case errors.As(err, &noContext):
		return Source{}, noContext
	case err != nil:
		return Source{}, err
	}
	if w := lc.Warmup(); w != nil {
		// Before the check, so that the triage's longest chains of round
		// trips (the port-forwards) overlap it.
		lc.Warm(*w)
	}
	rctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	if err := CheckReachable(rctx, lc); err != nil {
		_ = lc.Close()
		return Source{}, err
	}
	lc.SetRemotes(remotes)
	return LiveSource(lc), nil
}

// liveRemotes builds one client per remote context, without contacting
// any: a cluster that does not answer is said by the reads that needed it.
func liveRemotes(flags *live.ConfigFlags, contexts []string, opts live.Options) ([]cluster.Remote, error) {
	if err := flags.CheckContexts(contexts, RemoteContextsFlag); err != nil {
		return nil, err
	}
	opts.Warmup = nil // nothing of a remote is opened before it is read
	var remotes []cluster.Remote
	for _, name := range contexts {
		rc, err := live.New(flags.ForContext(name), opts)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", RemoteContextsFlag, name, err)
		}
		remotes = append(remotes, cluster.Remote{Context: name, Cluster: rc})
	}
	return remotes, nil
}

// LiveSource is a source over an already connected live client.
func LiveSource(lc *live.Cluster) Source {
	return Source{Cluster: lc, Runner: actions.NewKube(lc), Label: lc.Info().Context, live: lc}
}

// CheckReachable asks the API server for /version. A refusal to answer
// /version still proves the server is there; bad credentials do not.
func CheckReachable(ctx context.Context, c cluster.Cluster) error {
	_, err := c.ServerVersion(ctx)
	info := c.Info()
	switch {
	case err == nil, apierrors.IsForbidden(err):
		return nil
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s rejects the credentials of context %s (Unauthorized): log in again or pick another --context", info.Server, info.Context)
	case ctx.Err() != nil:
		return fmt.Errorf("cannot reach the API server at %s (context %s): no answer within %s", info.Server, info.Context, ReachTimeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach the API server at %s (context %s): %s", info.Server, info.Context, oneLine(err.Error()))
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Scenarios are the embedded recorded incidents, in name order.
func Scenarios() ([]*recorded.Scenario, error) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, errors.New("this build embeds no scenarios")
	}
	var out []*recorded.Scenario
	for _, n := range names {
		s, err := recorded.Load(assets.FS, n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Scenario serves an embedded recorded incident; an unknown name lists the
// valid ones, so a typo is one retry away.
func Scenario(name string) (Source, error) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		return Source{}, err
	}
	found := false
	for _, n := range names {
		found = found || n == name
	}
	if !found {
		return Source{}, fmt.Errorf("no scenario %q; the scenarios are: %s", name, strings.Join(names, ", "))
	}
	s, err := recorded.Load(assets.FS, name)
	if err != nil {
		return Source{}, err
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		return Source{}, err
	}
	t := s.Target
	return Source{
		Cluster:       c,
		Label:         c.Info().Context + " (scenario " + s.Name + ")",
		Target:        &t,
		ServerVersion: s.ServerVersion,
		Extra:         map[string]string{"scenario": s.Name},
	}, nil
}

// Manifests serves objects read from files as `kubectl apply -f` takes
// them (files, directories, "-" for stdin): objects only, so the probes
// that need Envoy admin, logs or istiod report that nothing was recorded.
// Objects that name no namespace take opts.Namespace; documents that
// cannot be read are skipped and listed in Source.Skipped.
func Manifests(paths []string, opts manifests.Options, info cluster.ClusterInfo) (Source, error) {
	set, err := manifests.Load(paths, opts)
	if err != nil {
		return Source{}, err
	}
	s := recorded.FromObjects(strings.Join(paths, ","), set.Objects)
	s.ImpliedNamespaces = set.ImpliedNamespaces
	s.Dump = true
	if info.Server == "" {
		info.Server = s.Source
	}
	c, err := recorded.NewClusterWithInfo(s, info)
	if err != nil {
		return Source{}, err
	}
	src := Source{Cluster: c, Label: info.Context}
	for _, sk := range set.Skipped {
		src.Skipped = append(src.Skipped, "skipped "+sk.String())
	}
	return src, nil
}

// Recording serves a recording (`meshtriage capture`'s archive, or a
// folder in its layout assembled by hand) as the cluster it was taken
// from; objects that name no namespace take namespace. Its Target is the
// recorded one, nil when the recording names none.
func Recording(path, namespace string) (Source, error) {
	r, err := recorded.OpenRecording(path, namespace)
	if err != nil {
		return Source{}, err
	}
	return recordingSource(r, "recording", path)
}

// recordingSource serves a recording read from path; kind names it in the
// label and in session_started, so that `log resume` reopens the same
// file.
func recordingSource(r *recorded.Recording, kind, path string) (Source, error) {
	c, err := recorded.NewCluster(r.Scenario)
	if err != nil {
		return Source{}, err
	}
	label := kind + " " + path
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // `log resume` may run from another folder
	}
	if ctx := c.Info().Context; ctx != "" {
		label = ctx + " (" + label + ")"
	}
	src := Source{
		Cluster:       c,
		Label:         label,
		ServerVersion: r.ServerVersion,
		Extra:         map[string]string{kind: path},
		SamplesApart:  r.SamplesApart,
	}
	if r.HasTarget {
		t := r.Target
		src.Target = &t
	}
	for _, sk := range r.Skipped {
		src.Skipped = append(src.Skipped, "skipped "+sk.String())
	}
	return src, nil
}

// BugReport serves an `istioctl bug-report` archive (or its unpacked
// folder) as the cluster it was taken from, with extra manifest files
// (kubectl -f paths) for what it lacks; objects that name no namespace
// take namespace. What the bug report lacks, and what of it was skipped,
// is in Source.Skipped.
func BugReport(path, namespace string, extra []string, stdin io.Reader) (Source, error) {
	return BugReports([]string{path}, namespace, extra, stdin)
}

// bugReportRemotes is the session_started key of the further bug reports
// (a JSON list of their paths), so that `log resume` reopens them all.
const bugReportRemotes = "bug-report-remotes"

// BugReports is BugReport for a mesh that spans clusters, one bug report
// a cluster (repeated --bug-report): the first is the current cluster,
// which extra adds to; each further one a remote cluster, named by the
// context its cluster/cluster-context names (bugreport.OpenMesh).
func BugReports(paths []string, namespace string, extra []string, stdin io.Reader) (Source, error) {
	files := map[string][]byte{}
	if len(extra) > 0 {
		// Read as -f reads them, so that a missing file is one clear error.
		for _, p := range extra {
			data, err := readManifestInput(p, stdin)
			if err != nil {
				return Source{}, err
			}
			for name, d := range data {
				files[name] = d
			}
		}
	}
	if len(paths) == 0 {
		return Source{}, errors.New("no bug report given")
	}
	r, err := bugreport.OpenMesh(paths, namespace, files)
	if err != nil {
		return Source{}, err
	}
	src, err := recordingSource(r.Recording, "bug-report", paths[0])
	if err != nil {
		return Source{}, err
	}
	if len(paths) > 1 {
		var abs []string
		for _, p := range paths[1:] {
			if a, err := filepath.Abs(p); err == nil {
				p = a
			}
			abs = append(abs, p)
		}
		list, err := json.Marshal(abs)
		if err != nil {
			return Source{}, err
		}
		src.Extra[bugReportRemotes] = string(list)
	}
	src.Skipped = r.Notes
	return src, nil
}

// BugReportPaths are the bug reports a session read, from its
// session_started Extra: the current cluster's, then the remote ones'.
func BugReportPaths(extra map[string]string) ([]string, error) {
	paths := []string{extra["bug-report"]}
	if list := extra[bugReportRemotes]; list != "" {
		var more []string
		if err := json.Unmarshal([]byte(list), &more); err != nil {
			return nil, fmt.Errorf("session_started %s: %w", bugReportRemotes, err)
		}
		paths = append(paths, more...)
	}
	return paths, nil
}

// readManifestInput reads the files a -f path names (a file, every
// manifest under a folder, or stdin for "-").
func readManifestInput(p string, stdin io.Reader) (map[string][]byte, error) {
	out := map[string][]byte{}
	if p == manifests.Stdin {
		if stdin == nil {
			return nil, errors.New("- names stdin, but there is no stdin to read")
		}
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		out["stdin"] = data
		return out, nil
	}
	files, err := manifests.Files(p)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out[f] = data
	}
	return out, nil
}

// Capture records every read a triage makes of src, for `meshtriage
// capture`: the source's reads go through the returned recorder. It runs
// no action: a capture is evidence of the cluster as the triage found it.
func Capture(src Source) (Source, *recorded.Recorder) {
	rec := recorded.NewRecorder(src.Cluster)
	return Source{Cluster: rec, Label: src.Label, Target: src.Target, ServerVersion: src.ServerVersion, Extra: src.Extra}, rec
}

// noKubeconfig says why no kubeconfig was found: the files KUBECONFIG or
// --kubeconfig name that do not exist, else that neither is set.
func noKubeconfig(flags *live.ConfigFlags) error {
	if flags.KubeConfig != nil && *flags.KubeConfig != "" {
		if _, err := os.Stat(*flags.KubeConfig); err != nil {
			return fmt.Errorf("no kubeconfig: --kubeconfig %s: the file does not exist; give a kubeconfig that does, or try `meshtriage demo`", *flags.KubeConfig)
		}
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		var missing []string
		for _, p := range filepath.SplitList(env) {
			if _, err := os.Stat(p); p != "" && err != nil {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			what := "the file does not exist"
			if len(missing) > 1 {
				what = "the files do not exist"
			}
			return fmt.Errorf("no kubeconfig: KUBECONFIG=%s: %s (%s); point KUBECONFIG or --kubeconfig at your kubeconfig, or try `meshtriage demo`", env, what, strings.Join(missing, ", "))
		}
		return fmt.Errorf("no kubeconfig: KUBECONFIG=%s holds no cluster; point it or --kubeconfig at your kubeconfig, or try `meshtriage demo`", env)
	}
	return errors.New("no kubeconfig: set KUBECONFIG or --kubeconfig, or try `meshtriage demo`")
}
