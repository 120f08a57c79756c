package tui

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/enginetest"
	"github.com/meshtriage/meshtriage/tui/picker"
)

// Benchmarks of issue 7 (figures in BENCHMARKS.md):
//
//	go test -run XXX -bench 'FirstFrame|ViewEvidence' -benchtime 20x -count 3 ./tui

// firstFrame wraps the root model and notes when it first renders a
// non-empty screen (the renders before the window size are empty).
type firstFrame struct {
	m    *Model
	once sync.Once
	at   chan time.Time
}

func (f *firstFrame) Init() tea.Cmd { return f.m.Init() }

func (f *firstFrame) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := f.m.Update(msg)
	return f, cmd
}

func (f *firstFrame) View() tea.View {
	v := f.m.View()
	if v.Content != "" {
		f.once.Do(func() { f.at <- time.Now() })
	}
	return v
}

// firstWrite notes when the renderer first writes to the terminal.
type firstWrite struct {
	once sync.Once
	at   chan time.Time
}

func (w *firstWrite) Write(b []byte) (int, error) {
	if len(b) > 0 {
		w.once.Do(func() { w.at <- time.Now() })
	}
	return len(b), nil
}

// program runs model on a terminal that never types (a pipe kept open) and
// discards the output into out.
func program(ctx context.Context, model tea.Model, out io.Writer, w, h int) (*tea.Program, func()) {
	in, inW := io.Pipe()
	p := tea.NewProgram(model,
		tea.WithContext(ctx),
		tea.WithInput(in),
		tea.WithOutput(out),
		tea.WithWindowSize(w, h),
		tea.WithColorProfile(colorprofile.Ascii),
		tea.WithEnvironment([]string{"TERM=xterm-256color"}),
		tea.WithoutSignalHandler(),
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = p.Run()
	}()
	return p, func() {
		p.Quit()
		<-done
		inW.Close()
	}
}

// heldScript is the outlier incident with every probe hung, as on a cluster
// whose API server has not answered yet.
func heldScript() enginetest.Script {
	s := outlierScript()
	for _, st := range s.Steps {
		s.Hold[st.ID] = true
	}
	return s
}

// BenchmarkFirstFrame measures launch to first frame, before any probe
// answers: from building the root model to its first non-empty View, and
// to the renderer's first write to the terminal. Goal: under 150 ms.
func BenchmarkFirstFrame(b *testing.B) {
	cases := []struct {
		name string
		opts func() Options
		// The first screen shows one of these ("" none).
		want []string
	}{
		// `meshtriage -n shop svc/reviews`: the symptom question.
		{"target", func() Options { return Options{Engine: enginetest.New(heldScript())} }, []string{"What are the callers seeing?"}},
		// With the symptom given, the session starts in a command: the
		// first screen says so, or already shows the checklist with the
		// guided walk's first probe left running.
		{"target-symptom", func() Options {
			return Options{Engine: enginetest.New(heldScript()), Symptom: "callers-503"}
		}, []string{"starting the session", "Service and selected pods"}},
		// `meshtriage` alone: the picker, its namespace list not answered.
		{"picker", func() Options {
			return Options{Catalog: hungCatalog{}, NewEngine: func(context.Context, cluster.Target) (engine.Engine, error) {
				return nil, fmt.Errorf("not reached")
			}}
		}, []string{"namespace"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var toView, toWrite []time.Duration
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				out := &firstWrite{at: make(chan time.Time, 1)}
				start := time.Now()
				opts := c.opts()
				opts.Context, opts.LogPath, opts.Now = "kind-shop", "/var/tmp/meshtriage/bench.jsonl", func() time.Time { return epoch }
				f := &firstFrame{m: New(ctx, opts), at: make(chan time.Time, 1)}
				_, stop := program(ctx, f, out, 120, 40)
				var viewAt, writeAt time.Time
				for viewAt.IsZero() || writeAt.IsZero() {
					select {
					case viewAt = <-f.at:
					case writeAt = <-out.at:
					case <-time.After(10 * time.Second):
						b.Fatal("no first frame within 10 s")
					}
				}
				screen := ansi.Strip(f.m.render())
				stop()
				cancel()
				if !slices.ContainsFunc(c.want, func(w string) bool { return strings.Contains(screen, w) }) {
					b.Fatalf("first screen shows none of %q:\n%s", c.want, screen)
				}
				toView, toWrite = append(toView, viewAt.Sub(start)), append(toWrite, writeAt.Sub(start))
			}
			b.ReportMetric(msOf(median(toView)), "ms-to-view")
			b.ReportMetric(msOf(median(toWrite)), "ms-to-write")
			b.ReportMetric(msOf(maxOf(toWrite)), "max-ms-to-write")
		})
	}
}

// hungCatalog never answers, as an API server that is not there yet.
type hungCatalog struct{}

func (hungCatalog) Namespaces(ctx context.Context) ([]picker.NamespaceSummary, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hungCatalog) Services(ctx context.Context, _ string) ([]picker.ServiceSummary, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hungCatalog) Pods(ctx context.Context, _ string) ([]picker.PodSummary, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// BenchmarkViewEvidence measures the root model's View with the detail pane
// showing a probe result of 5,000 evidence rows (Envoy upstream hosts of a
// big service), and of 50 for scale. Goal: under 5 ms at 5,000.
func BenchmarkViewEvidence(b *testing.B) {
	for _, c := range []struct{ rows, w, h int }{{50, 80, 24}, {5000, 80, 24}, {5000, 200, 60}} {
		b.Run(fmt.Sprintf("rows=%d/%dx%d", c.rows, c.w, c.h), func(b *testing.B) {
			s := outlierScript()
			r := s.Results["envoy-clusters"]
			r.Evidence.Rows = nil
			for i := range c.rows {
				r.Evidence.Rows = append(r.Evidence.Rows, []string{
					fmt.Sprintf("10.244.%d.%d:9080", i/250, i%250+2), "failed_outlier_check", fmt.Sprint(i % 97),
				})
			}
			s.Results["envoy-clusters"] = r
			m := walkedToEnvoy(b, enginetest.New(s), c.w, c.h)
			screen := m.render()
			if !strings.Contains(screen, "10.244.0.2:9080") {
				b.Fatalf("detail pane does not show the evidence:\n%s", screen)
			}
			b.ReportAllocs()
			// The machine is shared: CPU time says more than wall time.
			cpu := processCPU()
			for b.Loop() {
				_ = m.View()
			}
			b.ReportMetric(msOf(processCPU()-cpu)/float64(b.N), "cpu-ms/op")
		})
	}
}

// walkedToEnvoy drives the UI with enter alone until the detail pane shows
// the envoy-clusters result, then stops the program and returns the model,
// so View is timed without the program's goroutine touching it.
func walkedToEnvoy(b *testing.B, eng *enginetest.Engine, w, h int) *Model {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	f := &frames{m: New(ctx, Options{Engine: eng, Context: "kind-shop", LogPath: "/var/tmp/meshtriage/bench.jsonl", Now: func() time.Time { return epoch }})}
	p, stop := program(ctx, f, io.Discard, w, h)
	waitScreen := func(want string) {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(f.screen(), want) {
			if time.Now().After(deadline) {
				stop()
				b.Fatalf("screen never showed %q:\n%s", want, f.screen())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	enter := tea.KeyPressMsg{Code: tea.KeyEnter}
	waitScreen("What are the callers seeing?")
	for _, next := range []string{"next: Service and selected pods", "next: Kubernetes endpoints", "next: Envoy upstream hosts", "next: DestinationRule traffic policy"} {
		p.Send(enter)
		waitScreen(next)
	}
	stop()
	return f.m
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// processCPU is the process's user+system time; with the program stopped
// nothing but the benchmark loop (and its GC) runs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
