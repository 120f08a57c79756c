package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// triageEngine adapts a whole triage: its Session is the one walked and
// recorded, and, after a caller search (triage.Guide), every step the
// on-call runs runs in the triage's other sessions too (the service side,
// the other callers found), so that the findings and hypotheses shown are
// the triage's Report: the very merge check prints.
type triageEngine struct {
	sessionEngine
	tr *triage.Triage
}

// FromTriage adapts tr. The UI then shows what check would report on the
// same input once the same steps have run.
func FromTriage(tr *triage.Triage) Engine {
	return &triageEngine{sessionEngine: sessionEngine{s: tr.Session}, tr: tr}
}

func (e *triageEngine) others() []*runbook.Session { return e.tr.Sessions()[1:] }

// each runs f on the walked session and, at once, on every other one; the
// walked session's error is the answer.
func (e *triageEngine) each(f func(*runbook.Session) error) error {
	var wg sync.WaitGroup
	for _, o := range e.others() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = f(o)
		}()
	}
	err := f(e.s)
	wg.Wait()
	return err
}

func (e *triageEngine) Start(_ context.Context, symptom string) error {
	err := e.each(func(s *runbook.Session) error { return s.Start(symptom) })
	if note := e.Callers(); err == nil && note != "" {
		// Whom the walk follows is part of the record, as the tool's own
		// remark, not the on-call's note.
		e.s.Remark(note)
	}
	return err
}

func (e *triageEngine) RunStep(ctx context.Context, step string) probes.Result {
	var res probes.Result
	err := e.each(func(s *runbook.Session) error {
		r, err := s.RunStep(ctx, step)
		if s == e.s {
			res = r
		}
		return err
	})
	if err != nil {
		return probes.Result{Status: probes.StatusError, Summary: err.Error(), Facts: probes.Facts{}}
	}
	return res
}

func (e *triageEngine) RunRemaining(ctx context.Context, step string) probes.Result {
	var res probes.Result
	err := e.each(func(s *runbook.Session) error {
		r, err := s.RunRemaining(ctx, step)
		if s == e.s {
			res = r
		}
		return err
	})
	if err != nil {
		return probes.Result{Status: probes.StatusError, Summary: err.Error(), Facts: probes.Facts{}}
	}
	return res
}

// Findings are the triage's report's: one per cause over its sessions, at
// the highest confidence, with the fix the on-call chose.
func (e *triageEngine) Findings() []Finding {
	var out []Finding
	for _, f := range e.tr.Report().Findings {
		out = append(out, e.finding(f.Cause, f.Step, f.Title, string(f.Confidence), f.Summary,
			f.Fix.Directions, f.Verify, e.s.ChosenFix(f.Cause), f.Evidence))
	}
	return out
}

// Undecided are the triage's report's open hypotheses.
func (e *triageEngine) Undecided() []Undecided { return undecided(e.tr.Report().Hypotheses) }

// End closes every session of the triage, the record's last.
func (e *triageEngine) End(reason string) error {
	e.tr.End(reason)
	return e.s.SinkErr()
}

func (e *triageEngine) Callers() string {
	search := e.tr.Search
	if search == nil {
		return ""
	}
	// A caller found in a remote cluster is not walked from (the probes
	// read the caller through the current cluster): said, with the check
	// that triages from its side.
	remote, remoteFirst := search.RemoteNote()
	if !e.tr.Guided() {
		line := "no caller named, none found (" + strings.Join(search.Searched, "; ") + "): the Envoy checks have no caller to read; name one with --from pod/NAME"
		if remote != "" {
			line = "no caller named, none found in the current cluster (" + strings.Join(search.Searched, "; ") + "): the Envoy checks have no caller to read here; " + remote
		}
		return line
	}
	top := e.tr.Callers[0].Caller
	likely := "the most likely"
	if remoteFirst {
		likely = "the most likely in the current cluster"
	}
	line := fmt.Sprintf("no caller named: walking from %s, %s (%s)", top.Pod, likely, top.Why)
	if n := len(e.tr.Callers) - 1; n > 0 {
		line += fmt.Sprintf("; %d more caller(s) and the service side run beside it", n)
	} else {
		line += "; the service side runs beside it"
	}
	if remote != "" {
		line += "; " + remote
	}
	return line
}
