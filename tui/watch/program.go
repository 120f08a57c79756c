package watch

import (
	"context"
	"fmt"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	pwatch "github.com/meshtriage/meshtriage/probes/watch"
	"github.com/meshtriage/meshtriage/tui/common"
)

// program is the rollout screen on its own, for `meshtriage watch` on a
// terminal: it ends when the watch does, so the command's exit status
// still gates a pipeline.
type program struct {
	common *common.Common
	screen *Model
	help   help.Model
	cfg    pwatch.Config
	final  *DoneMsg
}

func (p *program) Init() tea.Cmd {
	return tea.Batch(p.screen.Start(p.cfg), tea.RequestBackgroundColor)
}

func (p *program) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		p.common.SetSize(msg.Width, msg.Height)
		p.screen.SetSize(msg.Width, max(0, msg.Height-1))
		p.help.SetWidth(msg.Width)
		return p, nil
	case tea.BackgroundColorMsg:
		p.common.Styles = common.NewStyles(msg.IsDark(), p.common.Styles.NoColor)
		p.help.Styles = p.common.Styles.Help
		return p, nil
	case tea.KeyPressMsg:
		if key.Matches(msg, p.common.Keys.Quit) || key.Matches(msg, p.common.Keys.Cancel) {
			p.screen.Stop()
			return p, nil
		}
	case DoneMsg:
		cmd := p.screen.Update(msg)
		p.final = &msg
		return p, tea.Batch(cmd, tea.Quit)
	}
	return p, p.screen.Update(msg)
}

func (p *program) View() tea.View {
	body := lipgloss.JoinVertical(lipgloss.Left, p.screen.View(), p.help.View(p))
	v := tea.NewView(body)
	v.AltScreen = true
	return v
}

func (p *program) ShortHelp() []key.Binding {
	return []key.Binding{key.NewBinding(key.WithKeys("q", "esc", "ctrl+c"), key.WithHelp("q", "stop watching"))}
}

func (p *program) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }

// Run shows the rollout screen until the watch ends and returns its outcome,
// as pwatch.Watch does.
func Run(ctx context.Context, cfg pwatch.Config, noColor bool, opts ...tea.ProgramOption) (pwatch.Report, error) {
	c := common.New(ctx, nil, noColor)
	p := &program{common: c, screen: New(c), help: help.New(), cfg: cfg}
	p.help.Styles = c.Styles.Help
	final, err := tea.NewProgram(p, append([]tea.ProgramOption{tea.WithContext(ctx)}, opts...)...).Run()
	if err != nil && final == nil {
		return pwatch.Report{}, fmt.Errorf("rollout screen: %w", err)
	}
	if fp, ok := final.(*program); ok && fp.final != nil {
		return fp.final.Report, fp.final.Err
	}
	// The program ended before the watch did (its context ended).
	p.screen.Stop()
	return p.screen.Report(), ctx.Err()
}
