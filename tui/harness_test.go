package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/meshtriage/meshtriage/tui/enginetest"
)

// frames wraps the root model and keeps the last rendered screen as plain
// text, so a test can wait for what the on-call would see.
type frames struct {
	m     *Model
	mu    sync.Mutex
	last  string
	count int
}

func (f *frames) Init() tea.Cmd { return f.m.Init() }

func (f *frames) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := f.m.Update(msg)
	return f, cmd
}

func (f *frames) View() tea.View {
	v := f.m.View()
	f.mu.Lock()
	f.last = ansi.Strip(v.Content)
	f.count++
	f.mu.Unlock()
	return v
}

func (f *frames) screen() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

var epoch = time.Date(2025, 3, 14, 3, 7, 0, 0, time.UTC)

type harness struct {
	t       *testing.T
	tm      *teatest.TestModel
	f       *frames
	eng     *enginetest.Engine
	builder *builder
}

func backspace() tea.KeyPressMsg { return tea.KeyPressMsg{Code: tea.KeyBackspace} }

// start runs the UI on a scripted engine (nil: the picker builds one) at
// w x h with a pinned clock and no colours.
func start(t *testing.T, eng *enginetest.Engine, w, h int, opts Options) *harness {
	t.Helper()
	if eng != nil {
		opts.Engine = eng
	}
	hs := startEngine(t, opts, w, h)
	hs.eng = eng
	return hs
}

// startEngine runs the UI with opts as given (opts.Engine may be a real
// session).
func startEngine(t *testing.T, opts Options, w, h int) *harness {
	t.Helper()
	if opts.LogPath == "" {
		opts.LogPath = "/var/tmp/meshtriage/2025-03-14T03-07-00-reviews.jsonl"
	}
	if opts.Context == "" {
		opts.Context = "kind-shop"
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return epoch }
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &frames{m: New(ctx, opts)}
	tm := teatest.NewTestModel(t, f,
		teatest.WithInitialTermSize(w, h),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	h0 := &harness{t: t, tm: tm, f: f}
	t.Cleanup(func() { _ = tm.Quit() })
	return h0
}

// waitLimit bounds a wait for the screen: it costs nothing when the screen
// comes, and a machine at load 17 on 2 cores (48 scenario walks side by
// side) took over 5 s to draw one.
const waitLimit = 30 * time.Second

// waitFor waits until the screen contains every one of want.
func (h *harness) waitFor(want ...string) string {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		s := h.f.screen()
		ok := true
		for _, w := range want {
			if !strings.Contains(s, w) {
				ok = false
				break
			}
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("screen never showed %q; last screen:\n%s", want, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until the screen no longer contains s.
func (h *harness) waitGone(s string) string {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		cur := h.f.screen()
		if !strings.Contains(cur, s) {
			return cur
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("screen still shows %q:\n%s", s, cur)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) key(k string) {
	switch k {
	case "enter":
		h.tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	case "esc":
		h.tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	case "tab":
		h.tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	case "down":
		h.tm.Send(tea.KeyPressMsg{Code: tea.KeyDown})
	case "up":
		h.tm.Send(tea.KeyPressMsg{Code: tea.KeyUp})
	case "left":
		h.tm.Send(tea.KeyPressMsg{Code: tea.KeyLeft})
	case "right":
		h.tm.Send(tea.KeyPressMsg{Code: tea.KeyRight})
	case "ctrl+c":
		h.tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	default:
		h.tm.Type(k)
	}
}

// quiet waits for the renderer to settle so a golden is taken from a still
// screen.
func (h *harness) quiet() string {
	h.t.Helper()
	prev := ""
	for i := 0; i < 100; i++ {
		time.Sleep(40 * time.Millisecond)
		s := h.f.screen()
		if s == prev && s != "" {
			return s
		}
		prev = s
	}
	return prev
}
