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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/probes/callersearch"
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
	Search  *callersearch.Result
	Callers []report.CallerRun
	// LogFallback says where the log went instead of the default
	// directory, and why; "" when it went there.
	LogFallback string
	// service is the session from the service side (no caller): Session,
	// unless Guide made the most likely caller's the session walked.
	service *runbook.Session
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
	var fallback string
	if path == "" && opts.DefaultLog {
		if path, fallback, err = incidentlog.DefaultLog(time.Now(), id); err != nil {
			return nil, fmt.Errorf("incident log: %w", err)
		}
	}
	sinks := append([]runbook.Sink(nil), opts.Sinks...)
	if path != "" {
		if log, err = incidentlog.Open(path); err != nil {
			return nil, err // it says "incident log: ..."
		}
		sinks = append(sinks, log)
	}
	t := &Triage{Cluster: src.cached(), Source: src, Target: target, log: log, LogFallback: fallback}
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
		t.service = t.Session
	} else {
		cfg.Started = from.started
		t.Session, err = runbook.Resume(cfg, from.history)
		t.service = t.Session
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
// with the service-side session. Each caller's session writes to the
// incident log as part of the triage's record (session_started names the
// triage's session as its parent).
func (t *Triage) SearchCallers(ctx context.Context, s callersearch.Options) (callersearch.Result, error) {
	if t.Target.Source != nil {
		return callersearch.Result{}, errors.New("the caller is named: nothing to search")
	}
	if t.Search != nil {
		return *t.Search, errors.New("the callers were searched already")
	}
	res := callersearch.Find(ctx, t.Cluster, t.Target, s)
	t.Search = &res
	for _, c := range res.Callers {
		sess, err := t.subSession(&cluster.PodRef{Namespace: c.Pod.Namespace, Name: c.Pod.Name}, c.Pod.String())
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

// subSession is a session of the triage from source (nil: the service
// side): it reads through the triage's cache and writes to its incident
// log, under its own ID, as part of the triage's record.
func (t *Triage) subSession(source *cluster.PodRef, name string) (*runbook.Session, error) {
	cfg := t.cfg
	cfg.Target.Source = source
	cfg.Sinks, cfg.SessionID = nil, t.Session.ID()+"/"+name
	if t.log != nil {
		cfg.Sinks = []runbook.Sink{t.log}
	}
	cfg.Started.Parent = t.Session.ID()
	return runbook.NewSession(cfg)
}

// Guide prepares the guided triage of a target without a named caller (the
// terminal UI): it searches for the callers as check does and, when it
// finds one, walks from the most likely: that caller's session becomes
// Session, the one the on-call drives and the log records, while the
// service side and the other callers run beside it (Sessions) and their
// findings merge into Report as check's do. Call it before Start.
func (t *Triage) Guide(ctx context.Context, s callersearch.Options) (callersearch.Result, error) {
	res, err := t.SearchCallers(ctx, s)
	if err != nil || len(t.Callers) == 0 {
		return res, err
	}
	top := t.Callers[0].Caller.Pod
	cfg := t.cfg
	cfg.Target.Source = &cluster.PodRef{Namespace: top.Namespace, Name: top.Name}
	main, err := runbook.NewSession(cfg)
	if err != nil {
		return res, err
	}
	service, err := t.subSession(nil, "service-side")
	if err != nil {
		return res, err
	}
	t.Session, t.service = main, service
	t.Callers[0].Session = main
	t.Target = cfg.Target
	return res, nil
}

// Sessions are every session of the triage: Session first, then the
// service side's (when Guide moved it) and the other callers'.
func (t *Triage) Sessions() []*runbook.Session {
	out := []*runbook.Session{t.Session}
	if t.service != nil && t.service != t.Session {
		out = append(out, t.service)
	}
	for _, run := range t.Callers {
		if run.Session != t.Session {
			out = append(out, run.Session)
		}
	}
	return out
}

// Guided reports whether Guide chose a caller to walk from.
func (t *Triage) Guided() bool { return t.service != nil && t.service != t.Session }

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
	_, err := t.service.Auto(ctx)
	wg.Wait()
	if t.Search != nil {
		// After the session started: session_started stays the log's first
		// event.
		t.Session.Remark("caller search (no --from): " + t.Search.Summary())
	}
	kept := t.Callers[:0]
	for i, run := range t.Callers {
		name := run.Caller.Pod.String()
		if errs[i] != nil && ctx.Err() == nil {
			t.Session.Remark(fmt.Sprintf("triage from caller %s could not run: %v", name, errs[i]))
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
		t.Session.Remark(fmt.Sprintf("triage from caller %s: %s", name, strings.Join(found, ", ")))
	}
	t.Callers = kept
	return err
}

// Report is the report of the triage: the service side's, merged with every
// caller's when the callers were searched. check prints it; the terminal UI
// shows its findings and hypotheses: one merge for both.
func (t *Triage) Report() report.Report {
	if t.Search == nil {
		return report.FromSession(t.Session)
	}
	return report.FromSessions(t.service, *t.Search, t.Callers)
}

// Causes is where the triage left every cause: the session's own
// assessment, or, after a caller search, the merge of its sessions', as
// Report merges findings and hypotheses (the callers read settle what the
// service side could not see for want of one).
func (t *Triage) Causes() []runbook.CauseState {
	if t.Search == nil {
		return t.Session.Assess()
	}
	rank := map[string]int{runbook.CauseFound: 4, runbook.CauseOpen: 3, runbook.CauseNotChecked: 2, runbook.CauseRuledOut: 1}
	byCause := map[string]*runbook.CauseState{}
	var order []string
	add := func(states []runbook.CauseState, who string, openToo bool) {
		for _, st := range states {
			if st.State == runbook.CauseOpen && !openToo {
				continue
			}
			steps := st.Steps
			if who != "" {
				steps = nil
				for _, s := range st.Steps {
					steps = append(steps, s+" (from "+who+")")
				}
			}
			cur := byCause[st.Cause]
			if cur == nil {
				byCause[st.Cause] = &runbook.CauseState{Cause: st.Cause, State: st.State, Steps: steps, Reasons: st.Reasons}
				order = append(order, st.Cause)
				continue
			}
			switch {
			case rank[st.State] > rank[cur.State]:
				cur.State, cur.Steps, cur.Reasons = st.State, steps, st.Reasons
			case st.State == cur.State:
				cur.Steps = append(cur.Steps, steps...)
				for _, r := range st.Reasons {
					if !slices.Contains(cur.Reasons, r) {
						cur.Reasons = append(cur.Reasons, r)
					}
				}
			}
		}
	}
	add(t.service.Assess(), "the service side", len(t.Callers) == 0)
	for _, run := range t.Callers {
		add(run.Session.Assess(), run.Caller.Pod.String(), true)
	}
	out := make([]runbook.CauseState, 0, len(order))
	for _, c := range order {
		out = append(out, *byCause[c])
	}
	return out
}

// End closes every session of the triage, the sessions beside it first, so
// that the record's session_ended is its last event and carries the
// triage's findings and cause states.
func (t *Triage) End(reason string) {
	rep := t.Report()
	causes := t.Causes()
	for _, s := range t.Sessions()[1:] {
		s.End(reason)
	}
	findings := []string{}
	for _, f := range rep.Findings {
		findings = append(findings, f.Cause)
	}
	t.Session.EndWith(reason, findings, causes)
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
