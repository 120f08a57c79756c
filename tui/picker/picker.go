// Package picker chooses the target when meshtriage starts without one:
// a namespace, then a Service (with its pod count and sidecar coverage),
// then optionally the calling pod whose sidecar reports the 503s; or, for
// `meshtriage demo`, one of the recorded incidents. Every list filters with
// "/". Listing runs in tea.Cmds through a Catalog.
package picker

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/list"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/tui/common"
)

// ChosenMsg carries the target once the on-call has picked it, or the
// recorded incident (Scenario) whose own target the triage then takes.
type ChosenMsg struct {
	Target   cluster.Target
	Scenario string
}

// Stage is the question the picker is asking.
type Stage int

const (
	StageNamespace Stage = iota
	StageService
	StageSource
	StageScenario
)

func (s Stage) noun() string {
	return [...]string{"namespace", "service", "source pod", "recorded incident"}[s]
}

// ScenarioSummary is one recorded incident `meshtriage demo` offers.
type ScenarioSummary struct {
	Name  string
	Title string
	// Summary is the story in one line.
	Summary string
}

type loadedMsg struct {
	stage Stage
	ns    string
	items []list.Item
	// ranked counts the callers the search found, listed first after the
	// "(no source pod)" choice: the cursor starts on the most likely.
	ranked int
	err    error
}

// Model is the picker.
type Model struct {
	common  *common.Common
	catalog Catalog
	stage   Stage
	ns      string
	service string
	list    list.Model
	loading bool
	// scenarios are the recorded incidents of a demo picker.
	scenarios []ScenarioSummary
	// typed replaces the list when listing failed (RBAC often allows
	// reading one namespace but not listing them all).
	typed  *textinput.Model
	err    string
	width  int
	height int
}

// New starts at the namespace list, or at the services of namespace when
// the on-call passed -n.
func New(c *common.Common, catalog Catalog, namespace string) *Model {
	d := list.NewDefaultDelegate()
	d.Styles = c.Styles.ListItem
	l := list.New(nil, d, 0, 0)
	l.Styles = c.Styles.List
	l.SetShowHelp(false)
	l.DisableQuitKeybindings()
	l.SetStatusBarItemName("item", "items")
	m := &Model{common: c, catalog: catalog, list: l}
	if namespace != "" {
		m.ns, m.stage = namespace, StageService
	}
	return m
}

// NewScenarios asks which recorded incident to triage (`meshtriage demo`).
func NewScenarios(c *common.Common, scenarios []ScenarioSummary) *Model {
	m := New(c, nil, "")
	m.stage, m.scenarios = StageScenario, scenarios
	return m
}

// Init loads the first list.
func (m *Model) Init() tea.Cmd { return m.load() }

// Stage is the current question.
func (m *Model) Stage() Stage { return m.stage }

// Capturing reports that keys are text (a filter or a typed name), so the
// root model must not treat q or ? as commands.
func (m *Model) Capturing() bool {
	return m.typed != nil || m.list.SettingFilter()
}

// RefreshStyles re-applies the styles after a background change.
func (m *Model) RefreshStyles() {
	d := list.NewDefaultDelegate()
	d.Styles = m.common.Styles.ListItem
	m.list.SetDelegate(d)
	m.list.Styles = m.common.Styles.List
}

func (m *Model) load() tea.Cmd {
	m.loading, m.err, m.typed = true, "", nil
	m.list.Title = "Choose a " + m.stage.noun()
	if m.stage == StageService || m.stage == StageSource {
		m.list.Title += " in " + m.ns
	}
	if _, ranked := m.catalog.(CallerCatalog); ranked && m.stage == StageSource {
		m.list.Title = "Choose the caller · most likely first"
	}
	m.list.ResetFilter()
	m.list.SetItems(nil)
	ctx, cat, stage, ns, svc := m.common.Ctx, m.catalog, m.stage, m.ns, m.service
	if stage == StageScenario {
		// Embedded data: nothing to fetch.
		var items []list.Item
		for _, sc := range m.scenarios {
			items = append(items, scenarioItem{sc})
		}
		return func() tea.Msg { return loadedMsg{stage: stage, items: items} }
	}
	return func() tea.Msg {
		if cat == nil {
			return loadedMsg{stage: stage, ns: ns, err: fmt.Errorf("this cluster cannot list %ss", stage.noun())}
		}
		items, ranked, err := fetch(ctx, cat, stage, ns, svc)
		return loadedMsg{stage: stage, ns: ns, items: items, ranked: ranked, err: err}
	}
}

func fetch(ctx context.Context, cat Catalog, stage Stage, ns, svc string) ([]list.Item, int, error) {
	var items []list.Item
	ranked := 0
	switch stage {
	case StageNamespace:
		nss, err := cat.Namespaces(ctx)
		if err != nil {
			return nil, 0, err
		}
		for _, n := range nss {
			items = append(items, nsItem(n))
		}
	case StageService:
		svcs, err := cat.Services(ctx, ns)
		if err != nil {
			return nil, 0, err
		}
		for _, s := range svcs {
			items = append(items, svcItem(s))
		}
	case StageSource:
		// The source is optional: the first choice is not to name one.
		items = append(items, podItem{none: true})
		listed := map[string]bool{}
		if cc, ok := cat.(CallerCatalog); ok {
			// The callers the search found, across namespaces, most likely
			// first; a failed search still leaves the namespace's pods.
			callers, _ := cc.Callers(ctx, ns, svc)
			for _, p := range callers {
				if p.Namespace == "" {
					p.Namespace = ns
				}
				listed[p.Namespace+"/"+p.Name] = true
				items = append(items, podItem{pod: p})
				if p.Why != "" {
					ranked++
				}
			}
		}
		pods, err := cat.Pods(ctx, ns)
		if err != nil && len(items) == 1 {
			return nil, 0, err
		}
		for _, p := range pods {
			if !listed[ns+"/"+p.Name] {
				items = append(items, podItem{pod: p})
			}
		}
	}
	return items, ranked, nil
}

// SetSize sets the area the picker fills.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.list.SetSize(max(0, width-4), max(0, height-4))
	if m.typed != nil {
		m.typed.SetWidth(m.typedWidth(m.typed.Prompt))
	}
}

// typedWidth is the text width left of the pane after the prompt.
func (m *Model) typedWidth(prompt string) int {
	return max(10, m.width-4-len(prompt)-1)
}

// Update handles loading and the keys.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case loadedMsg:
		if msg.stage != m.stage || msg.ns != m.ns {
			return nil // the on-call moved on before the list arrived
		}
		m.loading = false
		if msg.err != nil {
			m.err = cluster.AccessProblem("list "+m.stage.noun()+"s"+m.where(), msg.err)
			if m.stage == StageSource {
				// Naming no source is always possible.
				return m.list.SetItems([]list.Item{podItem{none: true}})
			}
			ti := textinput.New()
			ti.SetStyles(m.common.Styles.TextInput)
			ti.Prompt = m.stage.noun() + ": "
			ti.SetWidth(m.typedWidth(ti.Prompt))
			m.typed = &ti
			return m.typed.Focus()
		}
		cmd := m.list.SetItems(msg.items)
		if m.stage == StageSource && msg.ranked > 0 {
			// "Most likely first": the cursor is on the most likely caller,
			// not on naming none.
			m.list.Select(1)
		}
		return cmd
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	}
	if m.typed != nil {
		var cmd tea.Cmd
		*m.typed, cmd = m.typed.Update(msg)
		return cmd
	}
	var cmd tea.Cmd
	m.list, cmd = m.list.Update(msg)
	return cmd
}

func (m *Model) where() string {
	if m.stage == StageNamespace || m.stage == StageScenario {
		return ""
	}
	return " in " + m.ns
}

func (m *Model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	if m.typed != nil {
		switch {
		case key.Matches(k, keys.Select):
			if v := strings.TrimSpace(m.typed.Value()); v != "" {
				return m.choose(v, nil)
			}
			return nil
		case key.Matches(k, keys.Back):
			if k.String() == "esc" {
				return m.back()
			}
		}
		var cmd tea.Cmd
		*m.typed, cmd = m.typed.Update(k)
		return cmd
	}
	if m.list.SettingFilter() {
		var cmd tea.Cmd
		m.list, cmd = m.list.Update(k)
		return cmd
	}
	switch {
	case key.Matches(k, keys.Select):
		switch it := m.list.SelectedItem().(type) {
		case nsItem:
			return m.choose(it.Name, nil)
		case svcItem:
			return m.choose(it.Name, nil)
		case podItem:
			if it.none {
				return m.choose("", nil)
			}
			return m.choose(it.pod.Name, &it.pod)
		case scenarioItem:
			return m.choose(it.s.Name, nil)
		}
		return nil
	case k.String() == "esc" && m.list.IsFiltered():
		m.list.ResetFilter()
		return nil
	case key.Matches(k, keys.Back) && k.String() == "esc":
		return m.back()
	}
	var cmd tea.Cmd
	m.list, cmd = m.list.Update(k)
	return cmd
}

func (m *Model) choose(name string, pod *PodSummary) tea.Cmd {
	switch m.stage {
	case StageNamespace:
		m.ns, m.stage = name, StageService
		return m.load()
	case StageService:
		m.service, m.stage = name, StageSource
		return m.load()
	case StageScenario:
		return func() tea.Msg { return ChosenMsg{Scenario: name} }
	}
	t := cluster.Target{Namespace: m.ns, Service: m.service}
	if name != "" {
		t.Source = &cluster.PodRef{Namespace: m.ns, Name: name}
		if pod != nil && pod.Namespace != "" {
			t.Source.Namespace = pod.Namespace
		}
	}
	return func() tea.Msg { return ChosenMsg{Target: t} }
}

func (m *Model) back() tea.Cmd {
	switch m.stage {
	case StageService:
		m.stage = StageNamespace
	case StageSource:
		m.stage = StageService
	default:
		return nil
	}
	return m.load()
}

// View renders the picker.
func (m *Model) View() string {
	if m.width < 4 || m.height < 3 {
		return ""
	}
	s := m.common.Styles
	inner := m.width - 4
	var b strings.Builder
	crumbs := "target: choose a namespace"
	switch {
	case m.stage == StageScenario:
		crumbs = "demo: recorded incidents, no cluster needed"
	case m.ns != "":
		crumbs = "target: ns " + m.ns
	}
	if m.service != "" && m.stage == StageSource {
		crumbs += " › svc/" + m.service
	}
	b.WriteString(s.Label.Render(common.Truncate(crumbs, inner)) + "\n")
	switch {
	case m.loading:
		b.WriteString("\n" + s.Muted.Render("loading "+m.stage.noun()+"s…"))
	case m.typed != nil:
		b.WriteString("\n" + s.ErrorText.Render(common.Wrap(m.err, inner)) + "\n\n")
		b.WriteString(s.Text.Render("Type the "+m.stage.noun()+" name instead:") + "\n")
		b.WriteString(m.typed.View())
	default:
		if m.err != "" {
			b.WriteString(s.ErrorText.Render(common.Truncate(m.err, inner)) + "\n")
		}
		b.WriteString(m.list.View())
	}
	return s.PaneFocused.Width(m.width).Height(m.height).Render(common.FitLines(b.String(), inner, m.height-2))
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.common.Keys
	return []key.Binding{k.Up, k.Down, k.Filter, k.Select, k.Back, k.Quit}
}

func (m *Model) FullHelp() [][]key.Binding {
	k := m.common.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Filter, k.Select, k.Back}, {k.Help, k.Quit}}
}

type nsItem NamespaceSummary

func (i nsItem) Title() string       { return i.Name }
func (i nsItem) FilterValue() string { return i.Name }
func (i nsItem) Description() string {
	if i.Injection == "" {
		return "injection: unknown"
	}
	return "injection: " + i.Injection
}

type svcItem ServiceSummary

func (i svcItem) Title() string       { return i.Name }
func (i svcItem) FilterValue() string { return i.Name }
func (i svcItem) Description() string {
	if i.NoSelector {
		return "no selector (endpoints managed by hand) · " + strings.Join(i.Ports, ",")
	}
	pods := fmt.Sprintf("%d pods", i.Pods)
	if i.Pods == 1 {
		pods = "1 pod"
	}
	side := fmt.Sprintf("%d/%d with sidecar", i.WithSidecar, i.Pods)
	if i.Pods == 0 {
		side = "selects no pods"
	}
	return pods + " · " + side + " · " + strings.Join(i.Ports, ",")
}

type podItem struct {
	none bool
	pod  PodSummary
}

func (i podItem) Title() string {
	if i.none {
		return "(no source pod)"
	}
	if i.pod.Why != "" && i.pod.Namespace != "" {
		return i.pod.Namespace + "/" + i.pod.Name
	}
	return i.pod.Name
}

func (i podItem) FilterValue() string { return i.Title() }

func (i podItem) Description() string {
	if i.none {
		return "name none: search for the callers and triage from each found, beside the service side, as check does"
	}
	if i.pod.Why != "" {
		return i.pod.Why
	}
	ready := "not ready"
	if i.pod.Ready {
		ready = "ready"
	}
	d := ready + " · sidecar " + string(i.pod.Sidecar)
	if i.pod.App != "" {
		d += " · app=" + i.pod.App
	}
	return d
}

type scenarioItem struct{ s ScenarioSummary }

func (i scenarioItem) Title() string       { return i.s.Name + " · " + i.s.Title }
func (i scenarioItem) FilterValue() string { return i.s.Name + " " + i.s.Title }
func (i scenarioItem) Description() string { return i.s.Summary }
