package tui

import (
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/tui/checklist"
	"github.com/meshtriage/meshtriage/tui/detail"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// selectProposal puts the cursor on the engine's next step.
func (m *Model) selectProposal() {
	m.refresh()
	p := m.snap.proposal
	kind := checklist.KindStep
	if p.IsCause {
		kind = checklist.KindCause
	}
	if p.Next != "" && m.checklist.Select(kind, p.Next) {
		m.showSelected()
	}
}

// refresh rebuilds what the screens show from the snapshot.
func (m *Model) refresh() {
	if m.eng == nil {
		return
	}
	// A step may run as another's dependency (its facts feed the rules):
	// it joins the path when its result shows up.
	for _, st := range m.steps {
		if _, ok := m.snap.results[st.ID]; ok {
			m.noteRan(st.ID)
		}
	}
	m.checklist.SetTitle("Runbook · " + m.mode.String())
	m.checklist.SetRows(m.rows())
	m.showSelected()
	if m.screen == screenCause {
		id := m.cause.CauseID()
		c := m.causeNode(id)
		m.cause.Open(c, m.finding(id), m.snap.verdicts[id])
	}
}

// rows lays the runbook out for the checklist. Guided: the steps read so
// far in the order they ran, the proposed one, the causes reached, then the
// other steps dimmed (any can still be chosen). Free: every step and every
// cause in runbook order.
func (m *Model) rows() []checklist.Row {
	steps := m.steps
	p := m.snap.proposal
	reached := map[string]bool{}
	var causeIDs []string
	addCause := func(id string) {
		if !reached[id] {
			reached[id] = true
			causeIDs = append(causeIDs, id)
		}
	}
	for _, id := range p.Causes {
		addCause(id)
	}
	for _, f := range m.snap.findings {
		addCause(f.Cause)
	}
	stepRow := func(st engine.Step, dim bool) checklist.Row {
		r := checklist.Row{Kind: checklist.KindStep, ID: st.ID, Title: st.Title, Dim: dim}
		if res, ok := m.snap.results[st.ID]; ok {
			r.Status, r.Duration = res.Status, res.Duration
			if r.Status == "" {
				r.Status = probes.StatusSkipped
			}
		}
		r.Running = m.runs[st.ID] != nil || (m.batch != nil && m.batch.steps[st.ID])
		r.Cancelled = m.cancelled[st.ID] && !r.Running
		r.Proposed = !p.IsCause && p.Next == st.ID
		return r
	}
	undecided := map[string]bool{}
	for _, u := range m.snap.undecided {
		undecided[u.Cause] = true
	}
	causeRow := func(id string, dim bool) checklist.Row {
		title := m.causeNode(id).Title
		return checklist.Row{Kind: checklist.KindCause, ID: id, Title: title, Verdict: m.snap.verdicts[id],
			Proposed: p.IsCause && p.Next == id, Dim: dim, Reached: reached[id], Undecided: !reached[id] && undecided[id]}
	}
	var rows []checklist.Row
	if m.mode == modeFree {
		rows = append(rows, checklist.Row{Kind: checklist.KindSection, Title: "Steps"})
		for _, st := range steps {
			rows = append(rows, stepRow(st, false))
		}
		rows = append(rows, checklist.Row{Kind: checklist.KindSection, Title: "Causes"})
		for _, id := range causeIDs {
			rows = append(rows, causeRow(id, false))
		}
		for _, c := range m.causes {
			if !reached[c.ID] {
				rows = append(rows, causeRow(c.ID, m.snap.verdicts[c.ID] == ""))
			}
		}
		return rows
	}
	byID := map[string]engine.Step{}
	for _, st := range steps {
		byID[st.ID] = st
	}
	shown := map[string]bool{}
	for _, id := range m.ranOrder {
		if st, ok := byID[id]; ok {
			rows = append(rows, stepRow(st, false))
			shown[id] = true
		}
	}
	for _, st := range steps {
		if !shown[st.ID] && (m.runs[st.ID] != nil || (m.batch != nil && m.batch.steps[st.ID])) {
			rows = append(rows, stepRow(st, false))
			shown[st.ID] = true
		}
	}
	if st, ok := byID[p.Next]; ok && !p.IsCause && !shown[p.Next] {
		rows = append(rows, stepRow(st, false))
		shown[p.Next] = true
	}
	if len(causeIDs) > 0 {
		rows = append(rows, checklist.Row{Kind: checklist.KindSection, Title: "Causes reached"})
		for _, id := range causeIDs {
			rows = append(rows, causeRow(id, false))
		}
	}
	// Causes the evidence could neither confirm nor rule out: "no cause"
	// is not the answer while these are open.
	var open []checklist.Row
	for _, u := range m.snap.undecided {
		if !reached[u.Cause] {
			open = append(open, causeRow(u.Cause, false))
		}
	}
	if len(open) > 0 {
		rows = append(rows, checklist.Row{Kind: checklist.KindSection, Title: "Open hypotheses · could not decide"})
		rows = append(rows, open...)
	}
	var others []checklist.Row
	for _, st := range steps {
		if !shown[st.ID] {
			others = append(others, stepRow(st, true))
		}
	}
	if len(others) > 0 {
		rows = append(rows, checklist.Row{Kind: checklist.KindSection, Title: "Other steps"})
		rows = append(rows, others...)
	}
	return rows
}

// showSelected fills the detail pane for the checklist's selection.
func (m *Model) showSelected() {
	row, ok := m.checklist.Selected()
	if !ok || m.eng == nil {
		m.detail.Show("", "Detail", "")
		return
	}
	width := m.detail.InnerWidth()
	s := m.common.Styles
	if row.Kind == checklist.KindCause {
		c := m.causeNode(row.ID)
		f := m.finding(row.ID)
		if u := m.undecided(row.ID); f == nil && u != nil {
			m.detail.Show("cause/"+row.ID, "Hypothesis", detail.RenderUndecided(s, width, c, *u, m.snap.verdicts[row.ID]))
			return
		}
		m.detail.Show("cause/"+row.ID, "Cause", detail.RenderCause(s, width, c, f, m.snap.verdicts[row.ID]))
		return
	}
	st := m.stepByID[row.ID]
	res, ran := m.snap.results[row.ID]
	p := m.snap.proposal
	state := detail.StepState{
		Ran:       ran,
		Running:   row.Running,
		Cancelled: row.Cancelled,
		Proposed:  row.Proposed,
		Reason:    p.Reason,
	}
	// Before a step runs every rule is undecided; after, an undecided rule
	// means a probe could not read what it needed, which the on-call must see.
	if p.From == row.ID && ran {
		state.Undecided = p.Undecided
	}
	m.detail.Show("step/"+row.ID, "Detail · "+row.ID, detail.RenderStep(s, width, st, res, state))
}
