// Package triage is the one way in: it opens a triage session from a source
// (a live cluster, manifests, a recorded scenario), a target and options,
// with the runbook loaded, the probes registered, a read cache in front of
// the cluster and the incident log attached. check, the terminal UI, demo,
// log resume and the benchmarks all open their sessions here, so they
// cannot differ in how a triage starts.
//
// The engine (package runbook) knows nothing about Istio; this package is
// where the Istio runbook, the probes and a cluster meet.
package triage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"sync"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/remedies"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
	"github.com/meshtriage/meshtriage/runbook/report"
)

// Runbook loads and validates the embedded Envoy 503 runbook against the
// probes' facts and the cause catalogue.
func Runbook() (*runbook.Graph, error) {
	cat := runbook.CatalogueOf(probes.All(), assets.Causes).WithRemedies(remedies.IDs(), remedies.VarDocs)
	g, err := runbook.LoadFS(assets.FS, assets.Runbook503, cat)
	if err != nil {
		return nil, fmt.Errorf("runbook: %w", err)
	}
	return g, nil
}

// Options say how to run the session.
type Options struct {
	Mode runbook.Mode
	// Probes is the registry the steps run; probes.ByID() when nil.
	Probes map[string]probes.Probe
	// ProbeTimeout bounds each probe; probes.DefaultTimeout when zero.
	ProbeTimeout time.Duration
	// LogPath is the incident log file. When empty, DefaultLog writes a
	// new file under the meshtriage state directory; otherwise no log.
	LogPath    string
	DefaultLog bool
	// SessionID names the session; a new one when empty.
	SessionID string
	// Tool is meshtriage's version, for session_started.
	Tool string
	// User is who triages; the OS user when empty.
	User string
	// Sinks receive every event besides the incident log (a test's
	// recorder, a timeline).
	Sinks []runbook.Sink
}

// Triage is an open session over its source.
type Triage struct {
	Session *runbook.Session
	// Cluster is the session's read cache over the source: what the probes
	// and the actions' reads go through.
	Cluster cluster.Cluster
	Source  Source
	Target  cluster.Target
	// Search and Callers are set by SearchCallers: the caller search of a
	// triage without a named caller, and a session from each caller read.
	Search  *probes.CallerSearchResult
	Callers []report.CallerRun
	log     *incidentlog.Writer
	cfg     runbook.Config
}

// Open starts a session on src for target. It does not run a probe.
func Open(ctx context.Context, src Source, target cluster.Target, opts Options) (*Triage, error) {
	return open(ctx, src, target, opts, nil)
}

// Resume reopens the session recorded in history, appending to the log at
// path: the session goes on where the log stopped.
func Resume(ctx context.Context, src Source, path string, history []runbook.Event, opts Options) (*Triage, error) {
	started, err := Started(path, history)
	if err != nil {
		return nil, err
	}
	opts.LogPath, opts.DefaultLog = path, false
	t, err := open(ctx, src, started.Target, opts, &resumed{started: *started, history: history})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Started is the first session_started of a log's history at path: what
// was triaged, against what.
func Started(path string, history []runbook.Event) (*runbook.SessionStarted, error) {
	for _, ev := range history {
		if ev.Kind == runbook.EventSessionStarted && ev.Started != nil {
			return ev.Started, nil
		}
	}
	return nil, fmt.Errorf("%s has no session_started event: nothing says what was triaged", path)
}

type resumed struct {
	started runbook.SessionStarted
	history []runbook.Event
}

func open(ctx context.Context, src Source, target cluster.Target, opts Options, from *resumed) (*Triage, error) {
	if src.Cluster == nil {
		return nil, errors.New("triage: no cluster to read")
	}
	graph, err := Runbook()
	if err != nil {
		return nil, err
	}
	if from != nil && from.started.Runbook != "" && from.started.Runbook != graph.ID {
		return nil, fmt.Errorf("the log was recorded with runbook %q; this meshtriage has %q", from.started.Runbook, graph.ID)
	}
	reg := opts.Probes
	if reg == nil {
		reg = probes.ByID()
	}
	if opts.User == "" {
		opts.User = osUser()
	}
	id := opts.SessionID
	if id == "" && from == nil {
		id = incidentlog.NewSessionID()
	}
	var log *incidentlog.Writer
	path := opts.LogPath
	if path == "" && opts.DefaultLog {
		if path, err = incidentlog.DefaultPath(time.Now(), id); err != nil {
			return nil, fmt.Errorf("incident log: %w", err)
		}
	}
	sinks := append([]runbook.Sink(nil), opts.Sinks...)
	if path != "" {
		if log, err = incidentlog.Open(path); err != nil {
			return nil, fmt.Errorf("incident log: %w", err)
		}
		sinks = append(sinks, log)
	}
	t := &Triage{Cluster: src.cached(), Source: src, Target: target, log: log}
	if opener, ok := t.Cluster.(interface{ OpenEnvoyAdmin(cluster.PodRef) }); ok && target.Source != nil {
		// The caller's Envoy admin is the longest chain of round trips of a
		// triage (a port-forward's connection, TLS and upgrade): it starts
		// now, not after the probes' first reads.
		opener.OpenEnvoyAdmin(*target.Source)
	}
	cfg := runbook.Config{
		Graph:        graph,
		Cluster:      t.Cluster,
		Target:       target,
		Probes:       reg,
		Sinks:        sinks,
		User:         opts.User,
		Mode:         opts.Mode,
		SessionID:    id,
		ProbeTimeout: opts.ProbeTimeout,
		Started:      src.started(ctx, opts.Tool),
		// Each found cause's fixes are computed from the evidence and
		// proven on the configuration read before they are shown.
		Fixes: newProver(graph, t.Cluster, opts.ProbeTimeout),
	}
	t.cfg = cfg
	if from == nil {
		t.Session, err = runbook.NewSession(cfg)
	} else {
		cfg.Started = from.started
		t.Session, err = runbook.Resume(cfg, from.history)
		if err == nil {
			err = t.recordResume(from.started, opts)
		}
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// SearchCallers looks for the target's callers when none is named (--from)
// and opens a session from each caller it reads, over the same read cache,
// so what does not depend on the caller is read once. Auto then runs them
// with the service-side session. The search and whom it read go into the
// incident log.
func (t *Triage) SearchCallers(ctx context.Context, s probes.CallerSearch) (probes.CallerSearchResult, error) {
	if t.Target.Source != nil {
		return probes.CallerSearchResult{}, errors.New("the caller is named: nothing to search")
	}
	if t.Search != nil {
		return *t.Search, errors.New("the callers were searched already")
	}
	res := probes.FindCallers(ctx, t.Cluster, t.Target, s)
	t.Search = &res
	for _, c := range res.Callers {
		cfg := t.cfg
		cfg.Target.Source = &cluster.PodRef{Namespace: c.Pod.Namespace, Name: c.Pod.Name}
		// The incident log is the service-side session's; each caller's
		// outcome is noted there once it has run.
		cfg.Sinks, cfg.SessionID = nil, t.Session.ID()+"/"+c.Pod.String()
		sess, err := runbook.NewSession(cfg)
		if err != nil {
			return res, fmt.Errorf("triage from caller %s: %w", c.Pod, err)
		}
		if opener, ok := t.Cluster.(interface{ OpenEnvoyAdmin(cluster.PodRef) }); ok && c.Sidecar {
			opener.OpenEnvoyAdmin(c.Pod)
		}
		t.Callers = append(t.Callers, report.CallerRun{Caller: c, Session: sess})
	}
	return res, nil
}

// Auto runs the unattended triage: the service-side session and, after
// SearchCallers, the session from every caller read, all at once. The
// service side's error is the triage's; a caller whose triage fails is
// noted in the log and left out.
func (t *Triage) Auto(ctx context.Context) error {
	errs := make([]error, len(t.Callers))
	var wg sync.WaitGroup
	for i, run := range t.Callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = run.Session.Auto(ctx)
		}()
	}
	_, err := t.Session.Auto(ctx)
	wg.Wait()
	if t.Search != nil {
		// After the session started: session_started stays the log's first
		// event.
		t.Session.Note("", "caller search (no --from): "+t.Search.Summary())
	}
	kept := t.Callers[:0]
	for i, run := range t.Callers {
		name := run.Caller.Pod.String()
		if errs[i] != nil {
			t.Session.Note("", fmt.Sprintf("triage from caller %s could not run: %v", name, errs[i]))
			continue
		}
		kept = append(kept, run)
		var found []string
		for _, f := range run.Session.Findings() {
			id := f.Cause
			if f.Cause == runbook.Unexplained {
				id += " (" + f.Step + ")"
			}
			found = append(found, fmt.Sprintf("%s (%s)", id, f.Confidence))
		}
		if len(found) == 0 {
			found = []string{"no finding"}
		}
		t.Session.Note("", fmt.Sprintf("triage from caller %s: %s", name, strings.Join(found, ", ")))
	}
	t.Callers = kept
	return err
}

// Report is the report of the triage: the service side's, merged with every
// caller's when the callers were searched.
func (t *Triage) Report() report.Report {
	if t.Search == nil {
		return report.FromSession(t.Session)
	}
	return report.FromSessions(t.Session, *t.Search, t.Callers)
}

// recordResume writes a second session_started: the record shows when, by
// whom and against what the session went on ("Session resumed").
func (t *Triage) recordResume(started runbook.SessionStarted, opts Options) error {
	again := started
	again.User, again.Mode, again.Tool = opts.User, string(t.Session.Mode()), opts.Tool
	info := t.Cluster.Info()
	again.KubeContext, again.Server = info.Context, info.Server
	if t.log == nil {
		return nil
	}
	return t.log.Write(runbook.Event{Time: time.Now(), Kind: runbook.EventSessionStarted, Session: t.Session.ID(), Started: &again})
}

// LogPath is where the incident log is written, "" when there is none.
func (t *Triage) LogPath() string {
	if t.log == nil {
		return ""
	}
	return t.log.Path()
}

// Record adds an action to the session's incident log: the recorder the
// confirm-first actions report to.
func (t *Triage) Record(a actions.Record) { t.Session.RecordAction(runbook.Action(a)) }

// Close lets the session's connections into pods go (a live cluster's
// port-forwards) and closes the incident log.
func (t *Triage) Close() error {
	if c, ok := t.Cluster.(io.Closer); ok {
		_ = c.Close()
	}
	if t.log == nil {
		return nil
	}
	return t.log.Close()
}

func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// ReachTimeout bounds the /version check before a triage starts: an on-call
// pointed at the wrong cluster should know in seconds.
const ReachTimeout = 5 * time.Second

// serverVersion asks the cluster for its version with a short deadline;
// unknown is not an error.
func serverVersion(ctx context.Context, c cluster.Cluster) string {
	vctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	v, err := c.ServerVersion(vctx)
	if err != nil {
		return ""
	}
	return v
}
