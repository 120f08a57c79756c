// Package tui is meshtriage's terminal UI: guided triage of an Envoy 503 as
// a navigable checklist. The root model (model.go) routes messages to the
// components in the sibling packages and does all session and cluster work
// in tea.Cmds; the decisions come from the engine (tui/engine).
package tui

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/tui/actions"
	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/picker"
)

// Catalog lists namespaces, services and pods for the target picker; see
// picker.Catalog.
type Catalog = picker.Catalog

// Options configure a TUI session. Either Engine is set (the target is
// known: `meshtriage -n NS svc/NAME`, `meshtriage demo NAME`, `meshtriage
// log resume FILE`), or Catalog and NewEngine are, and the picker asks for
// the target first, or Scenarios and OpenScenario are (`meshtriage demo`),
// and the picker asks for a recorded incident.
type Options struct {
	// Engine is the session to drive; see FromSession for a runbook.Session.
	Engine engine.Engine
	// NewEngine builds the session once the picker has chosen a target.
	NewEngine func(ctx context.Context, t cluster.Target) (engine.Engine, error)
	// Catalog feeds the picker.
	Catalog Catalog
	// Namespace starts the picker at this namespace's services (-n).
	Namespace string
	// Scenarios are the recorded incidents a demo offers; OpenScenario
	// opens the one chosen and names it for the status bar.
	Scenarios    []picker.ScenarioSummary
	OpenScenario func(ctx context.Context, name string) (eng engine.Engine, label string, err error)

	// Symptom answers the runbook's start question up front; empty asks
	// when the runbook offers more than one.
	Symptom string
	// Resumed says the session already started (a resumed incident log):
	// Start is not called again.
	Resumed bool

	// ActionDeps gives the actions panel (T, D) the session's cluster,
	// target and action recorder once a session is open; false until then.
	// Nil (a scenario, a resumed log) makes the keys say the actions need a
	// live cluster.
	ActionDeps func() (actions.Deps, bool)

	// Notice is flashed when the session opens: where the incident log
	// went when the default directory could not be written.
	Notice string

	// Context is the kube context name for the status bar.
	Context string
	// LogPath is where the incident log is written, shown in the status bar
	// and printed on exit.
	LogPath string

	// Input and Output default to the terminal; tests set both.
	Input  io.Reader
	Output io.Writer
	// Environ is read for NO_COLOR and the colour profile; default
	// os.Environ().
	Environ []string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ProgramOptions are appended to the program's options (tests pin the
	// window size and colour profile with them).
	ProgramOptions []tea.ProgramOption
}

// Run runs the UI until the on-call quits, then prints where the incident
// log was written and any blocks they copied (the fallback for terminals
// without OSC 52 clipboard support).
func Run(ctx context.Context, opts Options) error {
	if opts.Engine == nil && opts.NewEngine == nil && opts.OpenScenario == nil {
		return fmt.Errorf("tui: no session and no way to build one")
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	out := opts.Output
	if out == nil {
		out = os.Stdout
	}
	m := New(ctx, opts)
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithEnvironment(opts.Environ)}
	if opts.Input != nil {
		popts = append(popts, tea.WithInput(opts.Input))
	}
	if opts.Output != nil {
		popts = append(popts, tea.WithOutput(opts.Output))
	}
	popts = append(popts, opts.ProgramOptions...)
	final, err := tea.NewProgram(m, popts...).Run()
	fm, _ := final.(*Model)
	if fm == nil {
		fm = m
	}
	// A session that did not end through the quit dialog (killed, context
	// cancelled) still gets its closing event.
	fm.endIfOpen("interrupted")
	fmt.Fprint(out, fm.Farewell())
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// Farewell is what Run prints after the program exits.
func (m *Model) Farewell() string {
	var b strings.Builder
	for _, c := range m.copied {
		fmt.Fprintf(&b, "# %s\n%s\n\n", c.what, c.text)
	}
	switch {
	case !m.started:
	case m.opts.LogPath != "":
		fmt.Fprintf(&b, "incident log: %s\n", m.opts.LogPath)
	default:
		b.WriteString("incident log: not recorded\n")
	}
	return b.String()
}
