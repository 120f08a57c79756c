package actions

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// DebugLoggingAction names the action in the incident log.
const DebugLoggingAction = "envoy-debug-logging"

// DefaultDebugLoggers are the Envoy loggers that explain a 503: connection
// setup and resets, the upstream (cluster, host selection, outlier), and the
// HTTP codec and router.
var DefaultDebugLoggers = []string{"connection", "upstream", "http"}

const (
	// RevertTimeout bounds the revert, which runs even after the caller's
	// context has ended (Ctrl-C, a cancelled step).
	RevertTimeout = 15 * time.Second
	// MaxDebugDuration keeps debug logging from being left on by a typo:
	// debug logs cost the proxy CPU and can fill the node's disk.
	MaxDebugDuration = 10 * time.Minute
	// maxCaptureBytes caps the log read after the window.
	maxCaptureBytes = 8 << 20
	// maxCaptureLines caps what is kept in the incident log.
	maxCaptureLines = 5000
)

// verbosity orders Envoy's level names (spdlog's), most verbose first.
var verbosity = map[string]int{"trace": 0, "debug": 1, "info": 2, "warning": 3, "warn": 3, "error": 4, "critical": 5, "off": 6}

// DebugLogging says which pod and loggers to turn to debug.
type DebugLogging struct {
	Pod cluster.PodRef
	// Loggers default to DefaultDebugLoggers.
	Loggers []string
}

// DebugSession is debug logging in effect on one proxy. Stop reverts it;
// it is also reverted when the context given to StartDebugLogging ends, so
// a cancelled step, a closed session or Ctrl-C never leave a proxy at debug.
type DebugSession struct {
	cluster cluster.Cluster
	runner  Runner
	rec     Recorder
	pod     cluster.PodRef
	started time.Time
	// previous holds the level of each logger this session changed; loggers
	// already at debug or more verbose are left alone and not reverted.
	previous map[string]string
	changed  []string
	left     []string // loggers already verbose enough
	stopAF   func() bool

	mu      sync.Mutex
	stopped bool
	done    chan struct{}
	capture DebugCapture
	err     error
}

// DebugCapture is what debug logging showed.
type DebugCapture struct {
	Pod cluster.PodRef
	// Lines are the istio-proxy log lines of the window, oldest first.
	Lines []string
	// DebugLines counts those at debug or trace level.
	DebugLines int
	Truncated  bool
	Duration   time.Duration
	// Restored maps each changed logger to the level it was set back to.
	Restored map[string]string
	// LogProblem says why the log could not be read, if it could not.
	LogProblem string
}

// Loggers reads the proxy's logger levels: POST /logging without parameters
// lists them and changes nothing.
func Loggers(ctx context.Context, r Runner, pod cluster.PodRef) (map[string]string, error) {
	b, err := r.EnvoyAdminPost(ctx, pod, "/logging")
	if err != nil {
		return nil, err
	}
	levels := parseLoggers(b)
	if len(levels) == 0 {
		return nil, fmt.Errorf("Envoy admin /logging of %s listed no loggers: %q", pod, firstLine(strings.TrimSpace(string(b))))
	}
	return levels, nil
}

// parseLoggers reads Envoy's "active loggers:\n  admin: info\n ..." list.
func parseLoggers(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, " ") {
			continue
		}
		name, level, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		if _, known := verbosity[level]; known {
			out[name] = level
		}
	}
	return out
}

// setLevel changes one logger. One logger per request: Envoy rejects more
// than one query parameter ("invalid number of parameters"), and the
// paths= form for several is missing from older proxies.
func setLevel(ctx context.Context, r Runner, pod cluster.PodRef, logger, level string) error {
	_, err := r.EnvoyAdminPost(ctx, pod, "/logging?"+url.QueryEscape(logger)+"="+url.QueryEscape(level))
	if err != nil {
		return fmt.Errorf("set Envoy logger %s to %s on %s: %w", logger, level, pod, err)
	}
	return nil
}

// UndoCommand is how the on-call restores the levels by hand if meshtriage
// could not.
func UndoCommand(pod cluster.PodRef, previous map[string]string) string {
	var parts []string
	for _, n := range sortedNames(previous) {
		parts = append(parts, n+":"+previous[n])
	}
	return fmt.Sprintf("istioctl proxy-config log %s.%s --level %s", pod.Name, pod.Namespace, strings.Join(parts, ","))
}

// StartDebugLogging sets the loggers to debug on d.Pod and records it. On
// any failure the loggers already changed are set back before it returns.
// The levels are reverted when ctx ends, or by Stop, whichever is first.
func StartDebugLogging(ctx context.Context, c cluster.Cluster, r Runner, d DebugLogging, rec Recorder) (*DebugSession, error) {
	loggers := d.Loggers
	if len(loggers) == 0 {
		loggers = DefaultDebugLoggers
	}
	target := d.Pod.String() + " " + mesh.ProxyContainer
	fail := func(err error) (*DebugSession, error) {
		rec.record(Record{Name: DebugLoggingAction, Target: target, Done: "set Envoy loggers " + strings.Join(loggers, ", ") + " to debug", Error: err.Error()})
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	levels, err := Loggers(ctx, r, d.Pod)
	if err != nil {
		return fail(err)
	}
	s := &DebugSession{cluster: c, runner: r, rec: rec, pod: d.Pod, previous: map[string]string{}, done: make(chan struct{})}
	var missing []string
	for _, l := range loggers {
		level, ok := levels[l]
		switch {
		case !ok:
			missing = append(missing, l)
		case verbosity[level] <= verbosity["debug"]:
			s.left = append(s.left, l+"="+level)
		default:
			s.previous[l] = level
		}
	}
	if len(missing) == len(loggers) {
		return fail(fmt.Errorf("Envoy on %s has no logger %s (it lists %d others): a proxy with fine-grain logging names loggers by file", d.Pod, strings.Join(missing, ", "), len(levels)))
	}
	s.started = time.Now()
	for _, l := range sortedNames(s.previous) {
		if err := setLevel(ctx, r, d.Pod, l, "debug"); err != nil {
			// The failed request may still have reached Envoy (a lost
			// answer): set that logger back too.
			s.changed = append(s.changed, l)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RevertTimeout)
			revertErr := s.revert(rctx)
			cancel()
			if revertErr != nil {
				err = fmt.Errorf("%w; and the revert failed: %v (undo by hand: %s)", err, revertErr, UndoCommand(d.Pod, s.previous))
			}
			return fail(err)
		}
		s.changed = append(s.changed, l)
	}
	done := "set Envoy loggers " + strings.Join(s.changed, ", ") + " to debug (were " + levelList(s.previous, s.changed) + ")"
	if len(s.left) > 0 {
		done += "; left " + strings.Join(s.left, ", ")
	}
	if len(missing) > 0 {
		done += "; no logger " + strings.Join(missing, ", ")
	}
	rec.record(Record{Name: DebugLoggingAction, Target: target, Done: done, Undo: UndoCommand(d.Pod, s.previous)})
	s.stopAF = context.AfterFunc(ctx, func() { _, _ = s.Stop(context.WithoutCancel(ctx)) })
	return s, nil
}

// Changed lists the loggers this session set to debug.
func (s *DebugSession) Changed() []string { return append([]string(nil), s.changed...) }

// Undo is the command that restores the levels by hand.
func (s *DebugSession) Undo() string { return UndoCommand(s.pod, s.previous) }

// Started is when debug logging took effect.
func (s *DebugSession) Started() time.Time { return s.started }

// Done is closed once the levels are reverted (or the revert failed).
func (s *DebugSession) Done() <-chan struct{} { return s.done }

// Stop reverts the loggers to their previous levels, reads the proxy's log
// of the window and records both. It is safe to call more than once and
// from several goroutines: the first call does the work, every call returns
// its outcome. ctx may already be cancelled; the revert then runs on its own
// deadline.
func (s *DebugSession) Stop(ctx context.Context) (DebugCapture, error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.done
		return s.capture, s.err
	}
	s.stopped = true
	s.mu.Unlock()
	if s.stopAF != nil {
		s.stopAF()
	}

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RevertTimeout)
	defer cancel()
	elapsed := time.Since(s.started)
	err := s.revert(rctx)
	capture := s.read(rctx, elapsed)
	capture.Duration = elapsed.Round(time.Second)
	if err == nil {
		capture.Restored = map[string]string{}
		for _, l := range s.changed {
			capture.Restored[l] = s.previous[l]
		}
	}
	target := s.pod.String() + " " + mesh.ProxyContainer
	a := Record{Name: DebugLoggingAction, Target: target, Output: strings.Join(capture.Lines, "\n")}
	if err != nil {
		a.Done = fmt.Sprintf("debug logging on for %s; the revert failed", capture.Duration)
		a.Undo = UndoCommand(s.pod, s.previous)
		a.Error = err.Error()
	} else {
		a.Reverted = true
		a.Done = fmt.Sprintf("restored %s after %s; captured %d log lines (%d at debug)", levelList(s.previous, s.changed), capture.Duration, len(capture.Lines), capture.DebugLines)
		if capture.Truncated {
			a.Done += fmt.Sprintf(", truncated at %d lines or %d MiB", maxCaptureLines, maxCaptureBytes>>20)
		}
	}
	if capture.LogProblem != "" {
		a.Done += "; " + capture.LogProblem
	}
	s.rec.record(a)

	s.mu.Lock()
	s.capture, s.err = capture, err
	s.mu.Unlock()
	close(s.done)
	return capture, err
}

// revert sets every changed logger back, trying all of them even when one
// fails.
func (s *DebugSession) revert(ctx context.Context) error {
	var errs []error
	for _, l := range s.changed {
		if err := setLevel(ctx, s.runner, s.pod, l, s.previous[l]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// read fetches the istio-proxy log lines written since debug logging began.
func (s *DebugSession) read(ctx context.Context, elapsed time.Duration) DebugCapture {
	capture := DebugCapture{Pod: s.pod}
	if s.cluster == nil {
		return capture
	}
	// Since counts whole seconds on the node's clock: one more second keeps
	// the first lines of the window.
	since := time.Duration(math.Ceil(elapsed.Seconds())+1) * time.Second
	b, err := s.cluster.Logs(ctx, s.pod, cluster.LogOptions{Container: mesh.ProxyContainer, Since: since, LimitBytes: maxCaptureBytes})
	if err != nil {
		capture.LogProblem = cluster.AccessProblem("read the istio-proxy log of "+s.pod.String(), err)
		return capture
	}
	// pods/log keeps the first bytes of the window: at the cap the end of
	// the window is missing.
	capture.Truncated = len(b) >= maxCaptureBytes
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(capture.Lines) == maxCaptureLines {
			capture.Truncated = true
			break
		}
		capture.Lines = append(capture.Lines, line)
		if isDebugLine(line) {
			capture.DebugLines++
		}
	}
	return capture
}

// isDebugLine recognises Envoy's level field in Istio's log format
// ("2025-12-02T03:00:00.123456Z\tdebug\tenvoy connection ...").
func isDebugLine(line string) bool {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return false
	}
	level := strings.Trim(fields[1], "[]")
	return level == "debug" || level == "trace"
}

// RunDebugLogging turns debug logging on for d, runs during (a test
// request, the probes) while it is on, waits until d elapsed or ctx ends,
// and reverts. The revert happens on every path: after the window, on
// error, on ctx's end (Ctrl-C).
func RunDebugLogging(ctx context.Context, c cluster.Cluster, r Runner, d DebugLogging, window time.Duration, rec Recorder, during func(context.Context)) (DebugCapture, error) {
	if window <= 0 || window > MaxDebugDuration {
		return DebugCapture{}, fmt.Errorf("debug logging duration %s: want more than 0 and at most %s", window, MaxDebugDuration)
	}
	s, err := StartDebugLogging(ctx, c, r, d, rec)
	if err != nil {
		return DebugCapture{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	func() {
		// A panic in during must not leave the proxy at debug.
		defer func() {
			if p := recover(); p != nil {
				_, _ = s.Stop(ctx)
				panic(p)
			}
		}()
		if during != nil {
			during(wctx)
		}
	}()
	<-wctx.Done()
	return s.Stop(ctx)
}

func levelList(levels map[string]string, names []string) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, n+"="+levels[n])
	}
	return strings.Join(parts, ", ")
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
