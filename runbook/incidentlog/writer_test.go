package incidentlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
)

var t0 = time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)

func noteEvent(i int, text string) runbook.Event {
	return runbook.Event{Time: t0.Add(time.Duration(i) * time.Second), Kind: runbook.EventNote, Session: "s1",
		Note: &runbook.Note{Text: text}}
}

func TestOpenPermissionsAndDirectories(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "meshtriage", "a.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Path() != path {
		t.Errorf("Path() = %q", w.Path())
	}
	if err := w.Write(noteEvent(0, "first")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("log mode %o, want 600", perm)
	}
	for _, d := range []string{filepath.Join(dir, "state"), filepath.Dir(path)} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if perm := st.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s mode %o: others can list it", d, perm)
		}
	}
}

func TestOpenTightensAnExistingReadableLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.jsonl")
	if err := os.WriteFile(path, []byte(`{"ts":"2026-12-02T03:04:05Z","kind":"note","session":"s0","note":{"text":"before"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // umask may have narrowed it
		t.Fatal(err)
	}
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(noteEvent(1, "after")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	st, _ := os.Stat(path)
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode %o after Open, want 600", perm)
	}
	events, problems := readFile(t, path)
	if len(problems) > 0 || len(events) != 2 || events[0].Note.Text != "before" || events[1].Note.Text != "after" {
		t.Errorf("append lost history: %+v %v", events, problems)
	}
}

// Each Write is on disk when it returns, before Close: that is what a
// kill -9 leaves.
func TestWriteIsOnDiskBeforeClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 3 {
		if err := w.Write(noteEvent(i, fmt.Sprintf("note %d", i))); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(data, []byte("\n")); n != i+1 {
			t.Fatalf("after %d writes the file has %d lines", i+1, n)
		}
	}
}

// syncWatcher is a logFile that records the order of writes and syncs.
type syncWatcher struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	ops     []string
	syncErr error
	// tornOnce makes the first write land part of its line and fail, as a
	// full disk does.
	tornOnce bool
}

func (f *syncWatcher) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, "write")
	if f.tornOnce {
		f.tornOnce = false
		f.buf.Write(p[:len(p)/2])
		return len(p) / 2, errors.New("no space left on device")
	}
	return f.buf.Write(p)
}

func (f *syncWatcher) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, "sync")
	return f.syncErr
}

func (f *syncWatcher) Close() error { return nil }

func TestWriteSyncsEveryEventBeforeReturning(t *testing.T) {
	f := &syncWatcher{}
	w := newWriter("watched.jsonl", f)
	for i := range 3 {
		if err := w.Write(noteEvent(i, "x")); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		last := f.ops[len(f.ops)-1]
		f.mu.Unlock()
		if last != "sync" {
			t.Fatalf("Write %d returned before fsync: %v", i, f.ops)
		}
	}
	if got := strings.Join(f.ops, ","); got != "write,sync,write,sync,write,sync" {
		t.Errorf("ops = %s", got)
	}

	f.syncErr = errors.New("input/output error")
	if err := w.Write(noteEvent(9, "x")); err == nil || !strings.Contains(err.Error(), "fsync") {
		t.Errorf("a failed fsync must fail the Write, got %v", err)
	}
}

func TestTornWriteDoesNotSwallowTheNextEvent(t *testing.T) {
	f := &syncWatcher{tornOnce: true}
	w := newWriter("full.jsonl", f)
	if err := w.Write(noteEvent(0, "lost")); err == nil {
		t.Fatal("a short write must be reported")
	}
	if err := w.Write(noteEvent(1, "kept")); err != nil {
		t.Fatal(err)
	}
	events, problems := Read(bytes.NewReader(f.buf.Bytes()))
	if len(events) != 1 || events[0].Note.Text != "kept" {
		t.Errorf("events = %+v", events)
	}
	if len(problems) != 1 || problems[0].Line != 1 {
		t.Errorf("problems = %v, want the torn line 1", problems)
	}
}

func TestWriteAfterClose(t *testing.T) {
	w, err := Open(filepath.Join(t.TempDir(), "c.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(noteEvent(0, "late")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// Concurrent probes write large events at once; every line must stay whole.
func TestConcurrentWritersKeepWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "concurrent.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 12, 20
	// Bigger than a pipe buffer and than bufio's default, so a torn or
	// interleaved write would show.
	bulk := strings.Repeat("upstream connect error or disconnect/reset before headers. reset reason: connection termination\n", 1200)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("g%02d-e%02d", g, i)
				ev := runbook.Event{Time: t0, Kind: runbook.EventProbeRan, Session: "s1", Probe: &runbook.ProbeRan{
					Step: id, Probe: "access-log", Status: probes.StatusFail, Summary: id,
					Evidence: probes.Evidence{Raw: id + "\n" + bulk + id},
				}}
				if err := w.Write(ev); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	events, problems := readFile(t, path)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if len(events) != writers*each {
		t.Fatalf("%d events, want %d", len(events), writers*each)
	}
	seen := map[string]bool{}
	for _, ev := range events {
		id := ev.Probe.Step
		raw := ev.Probe.Evidence.Raw
		if !strings.HasPrefix(raw, id+"\n") || !strings.HasSuffix(raw, bulk+id) {
			t.Fatalf("event %s carries another event's evidence", id)
		}
		seen[id] = true
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct events, want %d", len(seen), writers*each)
	}
}

func TestDefaultPath(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	at := time.Date(2026, 12, 2, 4, 4, 0, 0, time.FixedZone("CET", 3600))
	got, err := DefaultPath(at, "3f9a0c12")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(state, "meshtriage", "2026-12-02T0304-3f9a0c12.jsonl"); got != want {
		t.Errorf("DefaultPath = %s, want %s", got, want)
	}

	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, xdg := range []string{"", "relative/state"} {
		t.Setenv("XDG_STATE_HOME", xdg)
		dir, err := DefaultDir()
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(home, ".local", "state", "meshtriage"); dir != want {
			t.Errorf("XDG_STATE_HOME=%q: DefaultDir = %s, want %s", xdg, dir, want)
		}
	}

	if got := FileName(at, "../../etc/passwd"); got != "2026-12-02T0304-etcpasswd.jsonl" {
		t.Errorf("a session ID must not escape the directory: %s", got)
	}
}

func TestNewSessionID(t *testing.T) {
	a, b := NewSessionID(), NewSessionID()
	if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(a) {
		t.Errorf("session ID %q", a)
	}
	if a == b {
		t.Errorf("two session IDs are both %s", a)
	}
}

func readFile(t *testing.T, path string) ([]runbook.Event, []Problem) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Read(f)
}

// A resumed session appends to a log whose last line a crash tore: the new
// events must not be glued to it.
func TestOpenAfterACrashStartsAFreshLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crashed.jsonl")
	l := lines(t, noteEvent(0, "before"), noteEvent(1, "torn"))
	if err := os.WriteFile(path, []byte(l[0]+l[1][:20]), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(noteEvent(2, "resumed")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	events, problems := readFile(t, path)
	if len(events) != 2 || events[0].Note.Text != "before" || events[1].Note.Text != "resumed" {
		t.Errorf("events = %+v", events)
	}
	if len(problems) != 1 || problems[0].Line != 2 {
		t.Errorf("problems = %v, want the torn line 2 only", problems)
	}
}

// A session that ends before its first event (the on-call quits at the
// symptom question) leaves no file: an empty .jsonl would be a log that
// log render rejects.
func TestNoEventNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quit-early.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a log with no event left a file behind (stat: %v)", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 0 {
		t.Errorf("Open left %d files in the directory", len(entries))
	}
}

// Open fails at once where the log cannot be created, not at the first
// event.
func TestOpenFailsWhereNothingCanBeWritten(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	if _, err := Open(filepath.Join(dir, "x.jsonl")); err == nil {
		t.Fatal("Open succeeded in a read-only directory")
	}
}

// A HOME that cannot hold the state directory (read-only, or not even a
// directory) does not stop the triage: the log goes to a private temporary
// directory, and the notice says where and how to choose.
func TestDefaultLogFallsBackWhenHomeIsUnwritable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", filepath.Join(blocker, "home"))
	t.Setenv("TMPDIR", t.TempDir())
	path, notice, err := DefaultLog(t0, "abc")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, os.Getenv("TMPDIR")) {
		t.Errorf("path %s, want under TMPDIR %s", path, os.Getenv("TMPDIR"))
	}
	for _, want := range []string{"cannot write the incident log under", path, "--log", "XDG_STATE_HOME"} {
		if !strings.Contains(notice, want) {
			t.Errorf("notice %q does not say %q", notice, want)
		}
	}
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(noteEvent(0, "x")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// The default directory, when it can be written, is taken silently.
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	if path, notice, err := DefaultLog(t0, "abc"); err != nil || notice != "" || !strings.HasPrefix(path, os.Getenv("XDG_STATE_HOME")) {
		t.Errorf("default: %s %q %v", path, notice, err)
	}
}
