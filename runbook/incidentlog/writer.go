// Package incidentlog records a triage session as an append-only JSON Lines
// file, one runbook.Event a line, and renders such a file as the incident
// record on-call teams paste into a postmortem.
//
// The log is written for the worst case: the laptop dies or the on-call hits
// kill -9 mid-incident. Every event is redacted, written with one write call
// and fsynced before Write returns, so the file holds every event but at most
// the one being written, and the reader skips a torn last line.
package incidentlog

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/meshtriage/meshtriage/runbook"
)

// The log names pods, services, server URLs and access-log excerpts: only the
// on-call may read it.
const (
	filePerm = 0o600
	dirPerm  = 0o700
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("incident log is closed")

// logFile is the part of *os.File the writer uses; tests wrap it to watch
// the fsync.
type logFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Close() error
}

// Writer appends events to an incident log. It is a runbook.Sink and is safe
// for concurrent use: concurrent probes each get whole lines.
type Writer struct {
	path string

	mu     sync.Mutex
	f      logFile
	closed bool
	// torn is set when a write failed part-way: the next line starts with a
	// newline so that one torn line does not swallow the next event.
	torn bool
	// lazy: the file is created at the first Write.
	lazy bool
}

var _ runbook.Sink = (*Writer)(nil)

// Open opens the log at path for appending, creating its parent
// directories. A log that does not exist yet is created at the first event:
// a session quit before anything happened (at the symptom question) leaves
// no empty file behind. Open checks at once that the file can be created
// there, so a triage does not start with a log it cannot write.
func Open(path string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return nil, fmt.Errorf("incident log: %w", err)
	}
	if _, err := os.Stat(path); err == nil {
		f, err := openFile(path)
		if err != nil {
			return nil, err
		}
		w := newWriter(path, f)
		// Appending to a log whose last line was torn by a crash (a
		// resumed session): start on a fresh line, or the torn line
		// swallows the first new event.
		w.torn = endsTorn(path)
		return w, nil
	}
	probe, err := os.CreateTemp(filepath.Dir(path), ".meshtriage-probe-*")
	if err != nil {
		return nil, fmt.Errorf("incident log: cannot create %s: %w", path, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return &Writer{path: path, lazy: true}, nil
}

// openFile opens path for appending with the log's permissions.
func openFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("incident log: %w", err)
	}
	// An existing file keeps its mode on open; a log others can read would
	// leak cluster details, so tighten it.
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(filePerm); err != nil {
			f.Close()
			return nil, fmt.Errorf("incident log: %s is readable by others and cannot be restricted: %w", path, err)
		}
	}
	return f, nil
}

// endsTorn reports whether the file at path is non-empty and does not end
// with a newline.
func endsTorn(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return false
	}
	return last[0] != '\n'
}

func newWriter(path string, f logFile) *Writer {
	return &Writer{path: path, f: f}
}

// Path is the file the writer appends to, for the UI to show.
func (w *Writer) Path() string { return w.path }

// Write redacts ev, appends it as one line and fsyncs. The caller's event is
// not modified.
func (w *Writer) Write(ev runbook.Event) error {
	line, err := marshalLine(RedactEvent(ev))
	if err != nil {
		return fmt.Errorf("incident log: encode %s event: %w", ev.Kind, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.lazy {
		f, err := openFile(w.path)
		if err != nil {
			return err
		}
		w.f, w.lazy = f, false
	}
	if w.torn {
		line = append([]byte{'\n'}, line...)
	}
	n, err := w.f.Write(line)
	if err != nil {
		w.torn = n > 0
		return fmt.Errorf("incident log: write %s: %w", w.path, err)
	}
	w.torn = false
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("incident log: fsync %s: %w", w.path, err)
	}
	return nil
}

// Close closes the file. Events are already on disk; Close only releases it.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.f == nil {
		return nil // nothing was written: no file
	}
	return w.f.Close()
}

// marshalLine encodes ev as one JSON line. HTML escaping is off so the log
// reads and greps as written ("<none>", "a && b").
func marshalLine(ev runbook.Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DefaultDir is where logs go unless --log says otherwise:
// $XDG_STATE_HOME/meshtriage, or ~/.local/state/meshtriage.
func DefaultDir() (string, error) {
	// The XDG spec says a relative XDG_STATE_HOME is invalid and is ignored.
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "meshtriage"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory for the incident log (set XDG_STATE_HOME or use --log): %w", err)
	}
	return filepath.Join(home, ".local", "state", "meshtriage"), nil
}

// DefaultPath names the log of a session started at now, e.g.
// ~/.local/state/meshtriage/2026-12-02T0304-3f9a0c12.jsonl. The time is UTC,
// like the rendered timeline, so files sort in incident order across zones.
func DefaultPath(now time.Time, sessionID string) (string, error) {
	dir, err := DefaultDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, FileName(now, sessionID)), nil
}

// DefaultLog picks the log of a session started at now: DefaultPath, or,
// when that directory cannot be written (a read-only HOME, a state
// directory on a full disk), a private directory under the system's
// temporary one, else the working directory. fallback says, in one line
// for the on-call, where the log went instead and why, naming --log and
// XDG_STATE_HOME; it is "" when the default held. The triage starts
// either way: a log in /tmp beats no triage.
func DefaultLog(now time.Time, sessionID string) (path, fallback string, err error) {
	name := FileName(now, sessionID)
	var why string
	dir, derr := DefaultDir()
	if derr == nil {
		if werr := writableDir(dir); werr == nil {
			return filepath.Join(dir, name), "", nil
		} else {
			why = fmt.Sprintf("cannot write the incident log under %s (%v)", dir, werr)
		}
	} else {
		why = derr.Error()
	}
	candidates := []string{filepath.Join(os.TempDir(), fmt.Sprintf("meshtriage-%d", os.Getuid()))}
	if wd, err := os.Getwd(); err == nil {
		candidates = append(candidates, wd)
	}
	for _, d := range candidates {
		if writableDir(d) == nil {
			path = filepath.Join(d, name)
			return path, fmt.Sprintf("%s; writing it to %s instead (choose the file with --log FILE, or the directory with XDG_STATE_HOME)", why, path), nil
		}
	}
	return "", "", fmt.Errorf("%s, nor in %s: give --log FILE in a directory you can write, or set XDG_STATE_HOME", why, strings.Join(candidates, " or "))
}

// writableDir creates dir (private) if needed and checks that a file can be
// created in it.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return unwrapPath(err)
	}
	f, err := os.CreateTemp(dir, ".meshtriage-probe-*")
	if err != nil {
		return unwrapPath(err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// unwrapPath keeps a *PathError's reason: the path is said already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", pe.Op, pe.Path, pe.Err)
	}
	return err
}

// FileName is the base name DefaultPath uses.
func FileName(now time.Time, sessionID string) string {
	name := now.UTC().Format("2006-01-02T1504")
	if id := safeID(sessionID); id != "" {
		name += "-" + id
	}
	return name + ".jsonl"
}

// safeID keeps a session ID usable as part of a file name.
func safeID(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return -1
	}, id)
}

// NewSessionID returns a short random ID (8 hex digits): enough to tell the
// sessions of one incident apart, short enough to say on a call.
func NewSessionID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
