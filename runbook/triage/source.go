package triage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/cluster"
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
	// Extra goes into session_started: the scenario's name, so that `log
	// resume` can reopen it.
	Extra map[string]string

	live *live.Cluster
}

// cached is the read cache of one session; a live cluster's Envoy admin and
// istiod reads then share its pod reads too.
func (s Source) cached() *cluster.Cache {
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
	lc, err := live.New(flags, opts)
	var noContext *live.ContextNotFoundError
	switch {
	case errors.Is(err, live.ErrNoKubeconfig):
		return Source{}, errors.New("no kubeconfig: set KUBECONFIG or --kubeconfig, or try `meshtriage demo`")
	case errors.As(err, &noContext):
		return Source{}, noContext
	case err != nil:
		return Source{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	if err := CheckReachable(rctx, lc); err != nil {
		return Source{}, err
	}
	return LiveSource(lc), nil
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

// Manifests serves `kubectl get -o yaml` files from dir: objects only, so
// the probes that need Envoy admin, logs or istiod report that nothing was
// recorded.
func Manifests(dir string, info cluster.ClusterInfo) (Source, error) {
	objects, err := manifests.LoadDir(dir)
	if err != nil {
		return Source{}, err
	}
	s := recorded.FromObjects(dir, objects)
	if info.Server == "" {
		info.Server = s.Source
	}
	c, err := recorded.NewClusterWithInfo(s, info)
	if err != nil {
		return Source{}, err
	}
	return Source{Cluster: c, Label: info.Context}, nil
}
