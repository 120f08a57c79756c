package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/progress"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/meshtriage/meshtriage/probes"
	pactions "github.com/meshtriage/meshtriage/probes/actions"
	"github.com/meshtriage/meshtriage/tui/actions"
	"github.com/meshtriage/meshtriage/tui/cause"
	"github.com/meshtriage/meshtriage/tui/checklist"
	"github.com/meshtriage/meshtriage/tui/common"
	"github.com/meshtriage/meshtriage/tui/detail"
	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/helpscreen"
	"github.com/meshtriage/meshtriage/tui/notes"
	"github.com/meshtriage/meshtriage/tui/picker"
	"github.com/meshtriage/meshtriage/tui/statusbar"
	"github.com/meshtriage/meshtriage/tui/symptom"
)

// screen is which page fills the body.
type screen int

const (
	screenLoading screen = iota
	screenPicker
	screenSymptom
	screenMain
	screenCause
)

// mode is how the checklist lists the runbook.
type mode int

const (
	// modeGuided shows the path taken and the engine's next step.
	modeGuided mode = iota
	// modeFree lists every step and cause in runbook order.
	modeFree
)

func (m mode) String() string {
	if m == modeFree {
		return "free"
	}
	return "guided"
}

// batchConcurrency bounds "run all remaining": probes are independent, but
// each may hold a port-forward open.
const batchConcurrency = 4

// Minimum usable terminal.
const (
	minWidth  = 40
	minHeight = 10
)

// Model is the root model. It owns the engine and routes messages: window
// sizes to every component, keys to the active one.
type Model struct {
	opts   Options
	common *common.Common
	eng    engine.Engine
	// The runbook does not change during a session: its steps and causes
	// are read once, so rendering never calls the engine.
	steps     []engine.Step
	causes    []engine.Cause
	stepByID  map[string]engine.Step
	causeByID map[string]engine.Cause

	screen    screen
	mode      mode
	showHelp  bool
	quitAsked bool
	quitting  bool
	started   bool
	ended     bool
	fatal     string

	picker    *picker.Model
	symptom   *symptom.Model
	checklist *checklist.Model
	detail    *detail.Model
	cause     *cause.Model
	status    *statusbar.Model
	notes     *notes.Model
	helpView  *helpscreen.Model
	help      help.Model
	spinner   spinner.Model
	spinning  bool
	progress  progress.Model

	// actions is built on the first T or D of a session that has its
	// deps; nil before.
	actions *actions.Model

	snap      snapshot
	ranOrder  []string
	runs      map[string]*run
	cancelled map[string]bool
	nextToken int
	batch     *batch
	verifying context.CancelFunc

	message string
	copied  []copiedBlock
	osc52   bool
	noColor bool
}

type run struct {
	token  int
	cancel context.CancelFunc
}

type batch struct {
	id    int
	ch    chan batchItemMsg
	total int
	done  int
	// cancelledN counts results that came back after esc.
	cancelledN int
	cancel     context.CancelFunc
	steps      map[string]bool // still running
}

type copiedBlock struct{ what, text string }

// snapshot is the engine's state as of the last command that touched it;
// View reads only this, never the engine.
type snapshot struct {
	results  map[string]probes.Result
	proposal engine.Proposal
	findings []engine.Finding
	// undecided are the open hypotheses: causes no rule could decide.
	undecided []engine.Undecided
	verdicts  map[string]engine.Verdict
	logErr    error
}

func takeSnapshot(e engine.Engine) snapshot {
	s := snapshot{results: map[string]probes.Result{}}
	for _, st := range e.Steps() {
		if r, ok := e.Result(st.ID); ok {
			s.results[st.ID] = r
		}
	}
	s.proposal = e.Proposal()
	s.findings = e.Findings()
	s.undecided = e.Undecided()
	s.verdicts = e.Hypotheses()
	s.logErr = e.LogError()
	return s
}

// Messages of the root model's commands.
type (
	engineReadyMsg struct {
		eng engine.Engine
		// label replaces the status bar's context (a demo's scenario).
		label string
		err   error
	}
	startedMsg struct {
		snap snapshot
		err  error
	}
	stepDoneMsg struct {
		step  string
		token int
		res   probes.Result
		snap  snapshot
	}
	batchItemMsg struct {
		batch int
		step  string
		res   probes.Result
		snap  snapshot
	}
	batchDoneMsg struct {
		batch int
		snap  snapshot
	}
	// recordedMsg follows a note, hypothesis, choice or fix being written to
	// the session.
	recordedMsg struct {
		snap    snapshot
		message string
		err     error
	}
	verifyDoneMsg struct {
		cause   string
		results []engine.VerifyResult
		err     error
	}
	endedMsg  struct{ err error }
	clockMsg  time.Time
	clearMsg  struct{ message string }
	openCause struct{ id string }
)

// New builds the root model; Run runs it. Tests drive it with teatest.
func New(ctx context.Context, opts Options) *Model {
	if ctx == nil {
		ctx = context.Background()
	}
	noColor := envSet(opts.Environ, "NO_COLOR")
	c := common.New(ctx, opts.Now, noColor)
	m := &Model{
		opts:      opts,
		common:    c,
		eng:       opts.Engine,
		picker:    newPicker(c, opts),
		checklist: checklist.New(c),
		detail:    detail.New(c),
		cause:     cause.New(c),
		status:    statusbar.New(c),
		notes:     notes.New(c),
		helpView:  helpscreen.New(c),
		help:      help.New(),
		spinner:   spinner.New(spinner.WithSpinner(spinner.MiniDot)),
		runs:      map[string]*run{},
		cancelled: map[string]bool{},
		osc52:     osc52Likely(opts.Environ),
		noColor:   noColor,
		snap:      snapshot{results: map[string]probes.Result{}},
	}
	m.help.Styles = c.Styles.Help
	m.progress = m.newProgress()
	m.status.Context = opts.Context
	m.status.LogPath = opts.LogPath
	m.screen = screenPicker
	if m.eng != nil {
		m.screen = screenLoading
	}
	return m
}

// newPicker asks for the target, or, for a demo, for the recorded incident.
func newPicker(c *common.Common, opts Options) *picker.Model {
	if opts.Scenarios != nil {
		return picker.NewScenarios(c, opts.Scenarios)
	}
	return picker.New(c, opts.Catalog, opts.Namespace)
}

func (m *Model) newProgress() progress.Model {
	s := m.common.Styles
	return progress.New(progress.WithColors(s.ProgressFull), progress.WithoutPercentage(),
		progress.WithFillCharacters('█', '░'))
}

// Init asks the terminal for its background and starts the session or the
// picker.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tea.RequestBackgroundColor, m.tickClock()}
	if m.eng != nil {
		cmds = append(cmds, m.engineReady())
	} else {
		cmds = append(cmds, m.picker.Init())
	}
	return tea.Batch(cmds...)
}

func (m *Model) tickClock() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return clockMsg(t) })
}

// engineReady moves on from a known engine: ask the symptom, or start.
func (m *Model) engineReady() tea.Cmd {
	m.steps, m.causes = m.eng.Steps(), m.eng.Causes()
	m.stepByID, m.causeByID = map[string]engine.Step{}, map[string]engine.Cause{}
	for _, st := range m.steps {
		m.stepByID[st.ID] = st
	}
	for _, c := range m.causes {
		m.causeByID[c.ID] = c
	}
	m.status.SetTarget(m.eng.Target())
	m.status.Started = m.common.Now()
	if m.opts.Resumed {
		return m.start("")
	}
	symptoms := m.eng.Symptoms()
	sym := m.opts.Symptom
	if sym == "" && len(symptoms) == 1 {
		sym = symptoms[0].ID
	}
	if sym == "" && len(symptoms) > 1 {
		m.symptom = symptom.New(m.common, m.eng.Question(), symptoms)
		m.screen = screenSymptom
		m.layout()
		return nil
	}
	return m.start(sym)
}

func (m *Model) start(sym string) tea.Cmd {
	m.screen = screenLoading
	eng, ctx, resumed := m.eng, m.common.Ctx, m.opts.Resumed
	return func() tea.Msg {
		var err error
		if !resumed {
			err = eng.Start(ctx, sym)
		}
		return startedMsg{snap: takeSnapshot(eng), err: err}
	}
}

// Update routes a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.common.SetSize(msg.Width, msg.Height)
		m.layout()
		return m, nil
	case tea.BackgroundColorMsg:
		m.common.Styles = common.NewStyles(msg.IsDark(), m.noColor)
		m.help.Styles = m.common.Styles.Help
		m.progress = m.newProgress()
		m.picker.RefreshStyles()
		m.refresh()
		return m, nil
	case clockMsg:
		return m, m.tickClock()
	case spinner.TickMsg:
		if !m.busy() {
			m.spinning = false
			return m, nil
		}
		var cmd tea.Cmd
		m.spinner, cmd = m.spinner.Update(msg)
		m.checklist.SetSpinner(m.spinner.View())
		m.cause.SetSpinner(m.spinner.View())
		return m, cmd
	case clearMsg:
		if m.message == msg.message {
			m.message = ""
		}
		return m, nil
	case tea.KeyPressMsg:
		return m, m.handleKey(msg)
	}
	return m, m.handleResult(msg)
}

// handleResult folds the outcome of a command into the model.
func (m *Model) handleResult(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case picker.ChosenMsg:
		m.screen = screenLoading
		if msg.Scenario != "" {
			open, ctx, name := m.opts.OpenScenario, m.common.Ctx, msg.Scenario
			return func() tea.Msg {
				if open == nil {
					return engineReadyMsg{err: fmt.Errorf("no way to open scenario %s", name)}
				}
				e, label, err := open(ctx, name)
				return engineReadyMsg{eng: e, label: label, err: err}
			}
		}
		m.status.SetTarget(msg.Target)
		build, ctx, t := m.opts.NewEngine, m.common.Ctx, msg.Target
		return func() tea.Msg {
			if build == nil {
				return engineReadyMsg{err: fmt.Errorf("no way to start a session for %s", t)}
			}
			e, err := build(ctx, t)
			return engineReadyMsg{eng: e, err: err}
		}
	case engineReadyMsg:
		if msg.err != nil {
			m.fatal = "cannot start the session: " + msg.err.Error()
			m.screen = screenLoading
			return nil
		}
		if msg.label != "" {
			m.status.Context = msg.label
		}
		m.eng = msg.eng
		return m.engineReady()
	case symptom.ChosenMsg:
		return m.start(msg.ID)
	case startedMsg:
		if msg.err != nil {
			m.fatal = "cannot start the session: " + msg.err.Error()
			return nil
		}
		m.started = true
		m.snap = msg.snap
		for _, st := range m.steps {
			if _, ok := m.snap.results[st.ID]; ok {
				m.ranOrder = append(m.ranOrder, st.ID)
			}
		}
		m.screen = screenMain
		m.layout()
		m.selectProposal()
		note := m.eng.Callers()
		if m.opts.Notice != "" {
			note = strings.TrimPrefix(m.opts.Notice+" · "+note, " · ")
			note = strings.TrimSuffix(note, " · ")
		}
		if note != "" {
			return m.flash(note)
		}
		return nil
	case stepDoneMsg:
		if r, ok := m.runs[msg.step]; ok && r.token == msg.token {
			delete(m.runs, msg.step)
		}
		m.noteRan(msg.step)
		return m.takeSnap(msg.snap)
	case batchItemMsg:
		if m.batch == nil || msg.batch != m.batch.id {
			return nil
		}
		if m.cancelled[msg.step] {
			m.batch.cancelledN++
		} else {
			m.batch.done++
		}
		delete(m.batch.steps, msg.step)
		m.noteRan(msg.step)
		return tea.Batch(m.takeSnap(msg.snap), waitBatch(m.eng, m.batch.id, m.batch.ch))
	case batchDoneMsg:
		if m.batch != nil && msg.batch == m.batch.id {
			b := m.batch
			b.cancel()
			m.batch = nil
			m.snap = msg.snap
			m.refresh()
			note := fmt.Sprintf("ran %d of %d remaining steps", b.done, b.total)
			if b.cancelledN > 0 {
				note += fmt.Sprintf("; %d cancelled", b.cancelledN)
			}
			return m.flash(note)
		}
		return nil
	case recordedMsg:
		if msg.err != nil {
			return m.flash("not recorded: " + msg.err.Error())
		}
		m.snap = msg.snap
		m.refresh()
		if msg.message != "" {
			return m.flash(msg.message)
		}
		return nil
	case verifyDoneMsg:
		if msg.cause != m.cause.CauseID() {
			return nil
		}
		m.verifying = nil
		if msg.err != nil {
			m.cause.SetVerifying(false)
			return m.flash(msg.err.Error())
		}
		m.cause.SetVerifyResults(msg.results)
		return m.flash(verifySummary(msg.results))
	case openCause:
		m.openCause(msg.id)
		return nil
	case cause.BackMsg:
		m.screen = screenMain
		m.layout()
		m.refresh()
		return nil
	case cause.CopyMsg:
		return m.copy(msg.What, msg.Text)
	case cause.ChooseFixMsg:
		m.cause.SetChosenFix(msg.Fix)
		return m.record(fmt.Sprintf("fix %q chosen for %s", msg.Fix, msg.Cause), func(e engine.Engine) error {
			return e.ChooseFix(msg.Cause, msg.Fix)
		})
	case cause.VerifyMsg:
		return m.verify(msg.Cause)
	case cause.NoticeMsg:
		return m.flash(string(msg))
	case notes.SubmitMsg:
		return m.submitNote(msg)
	case notes.DiscardMsg:
		return m.flash("discarded")
	case actions.ClosedMsg:
		return nil
	case endedMsg:
		m.ended = true
		return tea.Quit
	}
	// Anything else (cursor blinks, list filtering) goes to the active
	// component, and to the actions panel: its results and debug-window
	// timers arrive whatever has the keys.
	active := m.active()
	cmd := active.Update(msg)
	if m.actions != nil && active != common.Component(m.actions) {
		cmd = tea.Batch(cmd, m.actions.Update(msg))
	}
	return cmd
}

// takeSnap adopts a newer snapshot and says so when it reaches a cause the
// on-call has not seen yet.
func (m *Model) takeSnap(next snapshot) tea.Cmd {
	before := map[string]bool{}
	for _, id := range m.foundCauses() {
		before[id] = true
	}
	m.snap = next
	m.refresh()
	var fresh []string
	for _, id := range m.foundCauses() {
		if !before[id] {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	return m.flash(common.IconCause + " cause reached: " + strings.Join(fresh, ", ") + " · o opens it")
}

func (m *Model) noteRan(step string) {
	if !slices.Contains(m.ranOrder, step) {
		m.ranOrder = append(m.ranOrder, step)
	}
}

// active is the component that receives keys.
func (m *Model) active() common.Component {
	switch {
	case m.notes.IsOpen():
		return m.notes
	case m.actions != nil && m.actions.IsOpen():
		return m.actions
	case m.showHelp:
		return nopComponent{m.helpView}
	}
	switch m.screen {
	case screenPicker:
		return m.picker
	case screenSymptom:
		return m.symptom
	case screenCause:
		return m.cause
	case screenMain:
		return m.checklist
	}
	return nopComponent{m.helpView}
}

// nopComponent stands in where nothing takes input.
type nopComponent struct{ help.KeyMap }

func (nopComponent) SetSize(int, int)       {}
func (nopComponent) Update(tea.Msg) tea.Cmd { return nil }
func (nopComponent) View() string           { return "" }

func (m *Model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	if m.quitAsked {
		switch {
		case key.Matches(k, keys.Yes), key.Matches(k, keys.ForceQuit):
			return m.quit("quit")
		case key.Matches(k, keys.No):
			m.quitAsked = false
		}
		return nil
	}
	if m.quitting {
		return nil
	}
	// ctrl+c always reaches the quit dialog, even from the note box (which
	// keeps its text if the on-call stays).
	if key.Matches(k, keys.ForceQuit) {
		m.quitAsked = true
		return nil
	}
	if m.notes.IsOpen() {
		return m.notes.Update(k)
	}
	if m.actions != nil && m.actions.IsOpen() {
		return m.actions.Update(k)
	}
	capturing := m.screen == screenPicker && m.picker.Capturing()
	switch {
	case capturing:
		return m.picker.Update(k)
	case m.showHelp:
		if key.Matches(k, keys.Help) || key.Matches(k, keys.Back) {
			m.showHelp = false
		} else if key.Matches(k, keys.Quit) {
			m.quitAsked = true
		}
		return nil
	case key.Matches(k, keys.Help):
		m.showHelp = true
		return nil
	case key.Matches(k, keys.Quit):
		m.quitAsked = true
		return nil
	}
	switch m.screen {
	case screenMain:
		return m.mainKey(k)
	case screenCause:
		return m.causeKey(k)
	case screenLoading:
		return nil
	}
	return m.active().Update(k)
}

func (m *Model) mainKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	row, hasRow := m.checklist.Selected()
	switch {
	case key.Matches(k, keys.Cancel):
		return m.cancelRuns()
	case key.Matches(k, keys.Accept):
		return m.accept(row, hasRow)
	case key.Matches(k, keys.Rerun):
		if hasRow && row.Kind == checklist.KindStep {
			return m.runStep(row.ID, "")
		}
		return nil
	case key.Matches(k, keys.RunAll):
		return m.runAll()
	case key.Matches(k, keys.ToggleMode):
		if m.mode == modeGuided {
			m.mode = modeFree
		} else {
			m.mode = modeGuided
		}
		m.refresh()
		return m.flash(m.mode.String() + " mode")
	case key.Matches(k, keys.OpenCause):
		if id := m.currentCause(row, hasRow); id != "" {
			m.openCause(id)
		}
		return nil
	case key.Matches(k, keys.Note):
		step := ""
		if hasRow && row.Kind == checklist.KindStep {
			step = row.ID
		}
		title := "Note for the incident log"
		if step != "" {
			title += " (step " + step + ")"
		}
		return m.notes.Open(notes.Purpose{Step: step}, title, "what you saw, did or decided")
	case key.Matches(k, keys.Confirm), key.Matches(k, keys.RuleOut):
		return m.askVerdict(k, m.currentCause(row, hasRow))
	case key.Matches(k, keys.PageUp), key.Matches(k, keys.PageDown), key.Matches(k, keys.Left), key.Matches(k, keys.Right):
		return m.detail.Update(k)
	case key.Matches(k, keys.CopyByHand):
		return m.copyByHand(row, hasRow)
	case key.Matches(k, keys.TestRequest):
		return m.openAction(actions.TestRequest)
	case key.Matches(k, keys.DebugLogging):
		return m.openAction(actions.DebugLogging)
	}
	cmd := m.checklist.Update(k)
	m.showSelected()
	return cmd
}

func (m *Model) causeKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	switch {
	case key.Matches(k, keys.Cancel) && m.verifying != nil:
		m.verifying()
		m.verifying = nil
		m.cause.SetVerifying(false)
		return m.flash("verification cancelled")
	case key.Matches(k, keys.Confirm), key.Matches(k, keys.RuleOut):
		return m.askVerdict(k, m.cause.CauseID())
	case key.Matches(k, keys.Note):
		return m.notes.Open(notes.Purpose{}, "Note for the incident log ("+m.cause.CauseID()+")", "what you saw, did or decided")
	}
	return m.cause.Update(k)
}

// copyByHand copies the commands the detail pane shows for the selected
// row: a step's "By hand", an open hypothesis's "What would settle it",
// one a line, whole, as they are run.
func (m *Model) copyByHand(row checklist.Row, ok bool) tea.Cmd {
	if !ok {
		return nil
	}
	var cmds []string
	what := ""
	switch row.Kind {
	case checklist.KindStep:
		cmds, what = m.snap.results[row.ID].Commands, row.ID+" by hand"
	case checklist.KindCause:
		if u := m.undecided(row.ID); u != nil && m.finding(row.ID) == nil {
			cmds, what = u.Settle, row.ID+": what would settle it"
		} else if m.finding(row.ID) != nil {
			return m.flash("o opens the cause: y copies its fix's blocks there")
		}
	}
	if len(cmds) == 0 {
		return m.flash("no command to copy here")
	}
	return m.copy(what, strings.Join(cmds, "\n"))
}

// currentCause is the cause hypothesis the on-call is looking at: the
// selected cause row, else the first cause the engine reached.
func (m *Model) currentCause(row checklist.Row, ok bool) string {
	if ok && row.Kind == checklist.KindCause {
		return row.ID
	}
	if found := m.foundCauses(); len(found) > 0 {
		return found[0]
	}
	return ""
}

func (m *Model) askVerdict(k tea.KeyPressMsg, causeID string) tea.Cmd {
	if causeID == "" {
		return m.flash("no cause reached yet: select a cause (free mode lists them all)")
	}
	v, verb := engine.Confirmed, "confirmed"
	if key.Matches(k, m.common.Keys.RuleOut) {
		v, verb = engine.RuledOut, "ruled out"
	}
	return m.notes.Open(notes.Purpose{Verdict: v, Cause: causeID},
		fmt.Sprintf("Why is %s %s?", causeID, verb), "the evidence (optional)")
}

// accept is enter on the checklist: run the proposal, or the selected step.
func (m *Model) accept(row checklist.Row, ok bool) tea.Cmd {
	if !ok {
		return nil
	}
	if row.Kind == checklist.KindCause {
		m.openCause(row.ID)
		// Reading a cause the facts do not support (to rule it out) is not
		// a move through the runbook; taking a reached one is.
		if !row.Reached {
			return nil
		}
		by := engine.ByUser
		if row.ID == m.snap.proposal.Next {
			by = engine.ByEngine
		}
		return m.record("", func(e engine.Engine) error { return e.Choose(row.ID, by) })
	}
	_, ran := m.snap.results[row.ID]
	if row.ID != m.snap.proposal.Next && (!ran || m.runs[row.ID] != nil) {
		if m.runs[row.ID] != nil {
			return m.flash(row.ID + " is already running")
		}
		return m.runStep(row.ID, engine.ByUser)
	}
	// On the proposed step, or on one already read: take the proposal.
	p := m.snap.proposal
	switch {
	case p.Next == "":
		return m.flash("the runbook has nothing more to propose: m lists every step")
	case p.IsCause:
		m.openCause(p.Next)
		return m.record("", func(e engine.Engine) error { return e.Choose(p.Next, engine.ByEngine) })
	case m.runs[p.Next] != nil:
		return m.flash(p.Next + " is already running")
	}
	m.checklist.Select(checklist.KindStep, p.Next)
	return m.runStep(p.Next, engine.ByEngine)
}

// causeNode is the runbook's cause id, or a bare one for an ID the runbook
// does not know (a resumed log from another version).
func (m *Model) causeNode(id string) engine.Cause {
	if c, ok := m.causeByID[id]; ok {
		return c
	}
	// A failed step no cause explains is a finding without a cause node:
	// its title and what to look at next come with the finding.
	if f := m.finding(id); f != nil {
		return engine.Cause{ID: id, Title: f.Title, Fixes: f.Fixes, Verify: f.Verify}
	}
	return engine.Cause{ID: id, Title: id}
}

// undecided is the open hypothesis on cause id, if there is one.
func (m *Model) undecided(id string) *engine.Undecided {
	for i := range m.snap.undecided {
		if m.snap.undecided[i].Cause == id {
			return &m.snap.undecided[i]
		}
	}
	return nil
}

// openAction opens the actions panel on k's confirmation, building it from
// the session's deps the first time they are there.
func (m *Model) openAction(k actions.Kind) tea.Cmd {
	if m.actions == nil {
		var deps actions.Deps
		ok := false
		if m.opts.ActionDeps != nil {
			deps, ok = m.opts.ActionDeps()
		}
		if !ok {
			return m.flash("the " + k.String() + " cannot run here: " + pactions.ErrNeedsLive.Error())
		}
		m.actions = actions.New(m.common, deps)
		m.actions.SetSize(m.common.Width, m.common.Height)
	}
	return m.actions.Open(k)
}

// closeActions reverts debug logging if it is on. It runs before the
// session's End so that the revert is in the incident log before
// session_ended.
func (m *Model) closeActions() {
	if m.actions != nil {
		m.actions.Close()
	}
}
