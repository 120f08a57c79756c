package tui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/notes"
)

// runStep runs one step's probe in a command; by records the move first
// (empty for a re-run, which is not a move).
func (m *Model) runStep(step string, by engine.ChosenBy) tea.Cmd {
	if m.runs[step] != nil || (m.batch != nil && m.batch.steps[step]) {
		return m.flash(step + " is already running")
	}
	ctx, cancel := context.WithCancel(m.common.Ctx)
	m.nextToken++
	token := m.nextToken
	m.runs[step] = &run{token: token, cancel: cancel}
	delete(m.cancelled, step)
	m.refresh()
	eng := m.eng
	work := func() tea.Msg {
		defer cancel()
		if by != "" {
			_ = eng.Choose(step, by)
		}
		res := eng.RunStep(ctx, step)
		return stepDoneMsg{step: step, token: token, res: res, snap: takeSnapshot(eng)}
	}
	return tea.Batch(work, m.spin())
}

// runAll runs every step that has not run, concurrently, reporting each as
// it finishes.
func (m *Model) runAll() tea.Cmd {
	if m.batch != nil {
		return m.flash("already running all remaining steps")
	}
	var ids []string
	for _, st := range m.steps {
		if _, ran := m.snap.results[st.ID]; !ran && m.runs[st.ID] == nil {
			ids = append(ids, st.ID)
		}
	}
	if len(ids) == 0 {
		return m.flash("every step has run: r re-runs the selected one")
	}
	ctx, cancel := context.WithCancel(m.common.Ctx)
	m.nextToken++
	b := &batch{id: m.nextToken, ch: make(chan batchItemMsg, len(ids)), total: len(ids), cancel: cancel, steps: map[string]bool{}}
	for _, id := range ids {
		b.steps[id] = true
		delete(m.cancelled, id)
	}
	m.batch = b
	m.refresh()
	eng := m.eng
	start := func() tea.Msg {
		eng.RunAll(ids)
		go produceBatch(ctx, eng, b.id, ids, b.ch)
		return waitBatch(eng, b.id, b.ch)()
	}
	return tea.Batch(start, m.spin())
}

func produceBatch(ctx context.Context, eng engine.Engine, id int, steps []string, ch chan<- batchItemMsg) {
	sem := make(chan struct{}, batchConcurrency)
	done := make(chan struct{})
	pending := 0
	for _, st := range steps {
		select {
		case <-ctx.Done():
		case sem <- struct{}{}:
		}
		if ctx.Err() != nil {
			// Steps that had not started are not run at all, so the
			// incident log holds no fake cancelled runs.
			break
		}
		pending++
		go func(st string) {
			defer func() { <-sem; done <- struct{}{} }()
			ch <- batchItemMsg{batch: id, step: st, res: eng.RunRemaining(ctx, st)}
		}(st)
	}
	for ; pending > 0; pending-- {
		<-done
	}
	close(ch)
}

// waitBatch delivers the next result of a batch, re-issued until the batch
// closes its channel.
func waitBatch(eng engine.Engine, id int, ch <-chan batchItemMsg) tea.Cmd {
	return func() tea.Msg {
		it, ok := <-ch
		if !ok {
			return batchDoneMsg{batch: id, snap: takeSnapshot(eng)}
		}
		it.snap = takeSnapshot(eng)
		return it
	}
}

// cancelRuns is esc on the checklist: every running probe's context ends;
// the UI moves on at once and the late results land when they come.
func (m *Model) cancelRuns() tea.Cmd {
	n := 0
	for id, r := range m.runs {
		r.cancel()
		m.cancelled[id] = true
		delete(m.runs, id)
		n++
	}
	if m.batch != nil {
		m.batch.cancel()
		for id := range m.batch.steps {
			m.cancelled[id] = true
			n++
		}
		m.batch.steps = map[string]bool{}
	}
	if n == 0 {
		return nil
	}
	m.refresh()
	return m.flash(fmt.Sprintf("cancelled %d running probe(s)", n))
}

func (m *Model) busy() bool {
	return len(m.runs) > 0 || (m.batch != nil && len(m.batch.steps) > 0) || m.verifying != nil
}

func (m *Model) spin() tea.Cmd {
	if m.spinning {
		return nil
	}
	m.spinning = true
	return m.spinner.Tick
}

func (m *Model) verify(causeID string) tea.Cmd {
	if m.verifying != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(m.common.Ctx)
	m.verifying = cancel
	m.cause.SetVerifying(true)
	eng := m.eng
	work := func() tea.Msg {
		defer cancel()
		res, err := eng.Verify(ctx, causeID)
		switch {
		case ctx.Err() != nil:
			return verifyDoneMsg{cause: causeID, err: fmt.Errorf("verification cancelled")}
		case err != nil:
			return verifyDoneMsg{cause: causeID, err: fmt.Errorf("verification: %w", err)}
		}
		return verifyDoneMsg{cause: causeID, results: res}
	}
	return tea.Batch(work, m.spin())
}

func verifySummary(rs []engine.VerifyResult) string {
	passed, failed, manual := 0, 0, 0
	for _, r := range rs {
		switch {
		case r.Manual:
			manual++
		case r.Passed:
			passed++
		default:
			failed++
		}
	}
	s := fmt.Sprintf("verification: %d passed, %d failed", passed, failed)
	if manual > 0 {
		s += fmt.Sprintf(", %d to check by hand", manual)
	}
	return s
}

// record writes to the session in a command and refreshes from it.
func (m *Model) record(done string, write func(engine.Engine) error) tea.Cmd {
	eng := m.eng
	return func() tea.Msg {
		if err := write(eng); err != nil {
			return recordedMsg{err: err}
		}
		return recordedMsg{snap: takeSnapshot(eng), message: done}
	}
}

func (m *Model) submitNote(msg notes.SubmitMsg) tea.Cmd {
	p := msg.Purpose
	if p.Verdict != "" {
		verb := "confirmed"
		if p.Verdict == engine.RuledOut {
			verb = "ruled out"
		}
		return m.record(p.Cause+" "+verb, func(e engine.Engine) error {
			return e.Hypothesis(p.Cause, p.Verdict, msg.Text)
		})
	}
	if msg.Text == "" {
		return m.flash("empty note: nothing recorded")
	}
	return m.record("note recorded at "+m.common.Now().Format("15:04:05"), func(e engine.Engine) error {
		return e.Note(p.Step, msg.Text)
	})
}

// copy puts a block on the clipboard through OSC 52 and keeps it to print
// after exit, for terminals that ignore OSC 52.
func (m *Model) copy(what, text string) tea.Cmd {
	m.copied = append(m.copied, copiedBlock{what: what, text: text})
	note := "copied " + what + " (OSC 52); it is printed again when you quit"
	if !m.osc52 {
		note = "this terminal may not take OSC 52: " + what + " is printed when you quit"
	}
	return tea.Batch(tea.SetClipboard(text), m.flash(note))
}

func (m *Model) quit(reason string) tea.Cmd {
	m.quitAsked = false
	m.quitting = true
	for _, r := range m.runs {
		r.cancel()
	}
	if m.batch != nil {
		m.batch.cancel()
	}
	if m.verifying != nil {
		m.verifying()
	}
	// Blocks for the revert (bounded by the revert's own deadline): it must
	// be recorded before the session ends and the program exits.
	m.closeActions()
	if m.eng == nil || !m.started || m.ended {
		m.ended = true
		return tea.Quit
	}
	eng := m.eng
	return func() tea.Msg { return endedMsg{err: eng.End(reason)} }
}

// endIfOpen closes a session that was not ended through the quit dialog.
func (m *Model) endIfOpen(reason string) {
	m.closeActions()
	if m.eng != nil && m.started && !m.ended {
		_ = m.eng.End(reason)
		m.ended = true
	}
}

// flash shows a message for a few seconds.
func (m *Model) flash(s string) tea.Cmd {
	m.message = s
	return tea.Tick(6*time.Second, func(time.Time) tea.Msg { return clearMsg{message: s} })
}

func (m *Model) openCause(id string) {
	c := m.causeNode(id)
	m.cause.Open(c, m.finding(id), m.snap.verdicts[id])
	m.screen = screenCause
	m.layout()
}

func (m *Model) finding(id string) *engine.Finding {
	for i := range m.snap.findings {
		if m.snap.findings[i].Cause == id {
			return &m.snap.findings[i]
		}
	}
	return nil
}
