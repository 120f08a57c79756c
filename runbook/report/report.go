// Package report renders a finished check run as JSON (the contract in
// ARCHITECTURE.md, for scripts and alerting), Markdown (for the incident
// channel or ticket) or plain text (for the terminal).
package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/runbook"
)

// Report is one check run.
type Report struct {
	Target   cluster.Target `json:"target"`
	Runbook  string         `json:"runbook"`
	Steps    []Step         `json:"steps"`
	Findings []Finding      `json:"findings"`
	// Hypotheses are the causes whose evidence could not be read, most
	// likely first, each with what would settle it.
	Hypotheses []runbook.Undecided `json:"hypotheses,omitempty"`
	// Skipped are the rules that could not decide: what this run could not
	// rule out.
	Skipped []runbook.SkippedRule `json:"skipped,omitempty"`
}

// Step verdicts: the runbook's, one system with the findings. The probe's
// own status stays beside it as what the probe saw.
const (
	VerdictCause       = "cause"       // a cause was reached at this step
	VerdictUnexplained = "unexplained" // the step failed and no cause explains it
	VerdictExplained   = "explained"   // the step failed because of a cause found elsewhere
	VerdictBenign      = "benign"      // the step failed in a way the runbook says needs no cause
	VerdictClear       = "clear"       // nothing found here
	VerdictNotRun      = "not-run"     // the probe errored or was skipped: nothing ruled out
)

// Step is one step's probe run.
type Step struct {
	ID     string        `json:"id"`
	Title  string        `json:"-"`
	Probe  string        `json:"probe"`
	Status probes.Status `json:"status"`
	// Verdict is the runbook's reading of the step (VerdictCause, ...).
	Verdict    string       `json:"verdict"`
	Summary    string       `json:"summary"`
	Facts      probes.Facts `json:"facts"`
	DurationMS int64        `json:"duration_ms"`
}

// Finding is a cause with its evidence, what to do and how to check it.
type Finding struct {
	Cause string `json:"cause"`
	// Step is the failed step of an unexplained finding.
	Step       string               `json:"step,omitempty"`
	Title      string               `json:"title"`
	Severity   string               `json:"severity"`
	Confidence runbook.Confidence   `json:"confidence"`
	Summary    string               `json:"summary"`
	Evidence   []runbook.Evidence   `json:"evidence"`
	Fix        Fix                  `json:"fix"`
	Verify     []runbook.VerifyStep `json:"verify"`
	// ConsequenceOf: this finding follows from these others; fix them first.
	ConsequenceOf []string `json:"consequence_of,omitempty"`
}

// Fix is a finding's fix directions and the things that make it worse.
type Fix struct {
	Directions []runbook.Fix     `json:"directions"`
	Warnings   []runbook.Warning `json:"warnings,omitempty"`
}

// FromSession builds the report of a session that has run: every step whose
// probe ran, in runbook order, and the findings.
func FromSession(s *runbook.Session) Report {
	r := Report{Target: s.Target(), Runbook: s.Graph().ID, Steps: []Step{}, Findings: []Finding{}}
	findings := s.Findings()
	causeAt, unexplainedAt := map[string]bool{}, map[string]bool{}
	for _, f := range findings {
		if f.Cause == runbook.Unexplained {
			unexplainedAt[f.Step] = true
			continue
		}
		for _, ev := range f.Evidence {
			causeAt[ev.Step] = true
		}
	}
	for _, st := range s.Graph().Steps {
		res, ok := s.Result(st.ID)
		if !ok {
			continue
		}
		facts := res.Facts
		if facts == nil {
			facts = probes.Facts{}
		}
		verdict := VerdictClear
		switch {
		case causeAt[st.ID]:
			verdict = VerdictCause
		case unexplainedAt[st.ID]:
			verdict = VerdictUnexplained
		case res.Status == probes.StatusError || res.Status == probes.StatusSkipped:
			verdict = VerdictNotRun
		case res.Status == probes.StatusFail && st.BenignFailure != "":
			verdict = VerdictBenign
		case res.Status == probes.StatusFail:
			verdict = VerdictExplained
		}
		r.Steps = append(r.Steps, Step{
			ID: st.ID, Title: st.Title, Probe: st.Probe, Status: res.Status, Verdict: verdict, Summary: res.Summary,
			Facts: facts, DurationMS: res.Duration.Milliseconds(),
		})
	}
	for _, f := range findings {
		r.Findings = append(r.Findings, Finding{
			Cause: f.Cause, Step: f.Step, Title: f.Title, Severity: f.Severity, Confidence: f.Confidence,
			Summary: f.Summary, Evidence: f.Evidence,
			Fix:    Fix{Directions: f.Fixes, Warnings: f.Warnings},
			Verify: f.Verify, ConsequenceOf: f.ConsequenceOf,
		})
	}
	r.Hypotheses = s.Undecided()
	r.Skipped = s.Skipped()
	return r
}

// Formats are the values -o takes.
var Formats = []string{"json", "md", "text"}

// Write renders r in format.
func Write(w io.Writer, r Report, format string) error {
	switch format {
	case "json":
		return JSON(w, r)
	case "md", "markdown":
		return Markdown(w, r)
	case "text", "":
		return Text(w, r)
	}
	return fmt.Errorf("unknown output format %q (one of json, md, text)", format)
}

// JSON writes r as indented JSON.
func JSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
