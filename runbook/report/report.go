// Package report renders a finished check run as JSON (the contract in
// ARCHITECTURE.md, for scripts and alerting), Markdown (for the incident
// channel or ticket) or plain text (for the terminal).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/callersearch"
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
	// CallerSearch is set when no caller was named and check looked for
	// them: who was read, why, and what the search could not see.
	CallerSearch *callersearch.Result `json:"caller_search,omitempty"`
	// Verdict is the run's outcome: VerdictFindings, VerdictUndecided (no
	// finding, but the checks that decide the path did not all run: the
	// hypotheses are open) or VerdictClean (the path was judged, and
	// nothing found). check exits 3 on the first two, 0 on the last.
	Verdict string `json:"verdict"`
	// Unread are the checks behind the open hypotheses that could not read
	// what they needed, each with why: the input that settles them.
	Unread []string `json:"unread,omitempty"`
	// Interrupted: the run was stopped (Ctrl-C) before every check
	// reported; the report holds what had finished.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Run verdicts (Report.Verdict).
const (
	VerdictFindings  = "findings"
	VerdictUndecided = "undecided"
	VerdictClean     = "clean"
)

// Step verdicts: the runbook's, one system with the findings. The probe's
// own status stays beside it as what the probe saw.
const (
	VerdictCause       = "cause"       // a cause was reached at this step
	VerdictUnexplained = "unexplained" // the step failed and no cause explains it
	VerdictExplained   = "explained"   // the step failed because of a cause found elsewhere
	VerdictBenign      = "benign"      // the step failed in a way the runbook says needs no cause
	VerdictClear       = "clear"       // nothing found here
	VerdictNotRun      = "not-run"     // the probe errored or was skipped: nothing ruled out
	VerdictOffPath     = "off-path"    // the facts say the traffic does not cross what it reads: it judges nothing
)

// Step is one step's probe run.
type Step struct {
	ID string `json:"id"`
	// Caller is the caller whose triage this step's result is from, when
	// it differs from the service-side run's (a check without --from).
	Caller string        `json:"caller,omitempty"`
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
	// Callers are the callers (found by the caller search, not named with
	// --from) from whose sidecar the finding holds; ServiceSide says it
	// holds without one, whoever calls.
	Callers     []string `json:"callers,omitempty"`
	ServiceSide bool     `json:"service_side,omitempty"`
}

// Fix is a finding's fix directions and the things that make it worse.
// Each direction that changes objects carries its patches and their
// simulation; Unpatchable says why, when no direction has a patch (an
// image that does not pull, a node without ztunnel, a stuck istiod).
type Fix struct {
	Directions  []runbook.Fix     `json:"directions"`
	Warnings    []runbook.Warning `json:"warnings,omitempty"`
	Unpatchable string            `json:"unpatchable,omitempty"`
}

// fixOf is a finding's fix: its directions, and, when none has a patch,
// why (the first direction's reason: the runbook lists the main one first),
// which names the object, followed by the direction's first command, the
// one that shows the problem.
func fixOf(f runbook.Finding) Fix {
	fix := Fix{Directions: f.Fixes, Warnings: f.Warnings}
	for _, d := range f.Fixes {
		if len(d.Patches) > 0 {
			return fix
		}
	}
	for _, d := range f.Fixes {
		if d.Unpatchable != "" {
			fix.Unpatchable = d.Unpatchable
			if len(d.Commands) > 0 {
				why := strings.TrimSpace(fix.Unpatchable)
				if !strings.HasSuffix(why, ".") {
					why += "."
				}
				fix.Unpatchable = why + " It shows in `" + d.Commands[0] + "`."
			}
			break
		}
	}
	return fix
}

// FromSession builds the report of a session that has run: every step whose
// probe ran, in runbook order, and the findings.
func FromSession(s *runbook.Session) Report {
	r := Report{Target: s.Target(), Runbook: s.Graph().ID, Findings: []Finding{}}
	findings := s.Findings()
	r.Steps = steps(s, findings, "")
	for _, f := range findings {
		r.Findings = append(r.Findings, finding(f))
	}
	r.Hypotheses = s.Undecided()
	r.Skipped = s.Skipped()
	r.settle()
	return r
}

// Judge sets the verdict again, with the probes the on-call chose not to
// run (check --metrics-window 0): a hypothesis open only for want of those
// is listed, and does not keep the path from being judged.
func (r *Report) Judge(chosen ...string) {
	r.Verdict = VerdictClean
	if len(r.Findings) > 0 {
		r.Verdict = VerdictFindings
		return
	}
	for _, h := range r.Hypotheses {
		for _, p := range h.Probes {
			if !containsString(chosen, p) {
				r.Verdict = VerdictUndecided
				return
			}
		}
	}
}

// settle sets the verdict and the checks behind the open hypotheses.
func (r *Report) settle() {
	r.Judge()
	r.Unread = nil
	needed := map[string]bool{}
	for _, h := range r.Hypotheses {
		for _, p := range h.Probes {
			needed[p] = true
		}
	}
	// With callers read, their open hypotheses are the triage's: what
	// stands in their way is their steps' (a caller's own, else the service
	// side's it shares).
	for _, st := range r.effectiveSteps() {
		// Not run, or ran and could not read all it reads (a ztunnel
		// whose log was unreadable: warn, the facts missing).
		if !needed[st.Probe] || st.Verdict == VerdictOffPath || st.Status == probes.StatusPass {
			continue
		}
		line := st.ID + " " + string(st.Status) + ": " + st.Summary
		if st.Caller != "" {
			line = "from " + st.Caller + ": " + line
		}
		if !containsString(r.Unread, line) {
			r.Unread = append(r.Unread, line)
		}
	}
}

// effectiveSteps are the service side's steps, or, once callers were read,
// each caller's: its own result where it differs, the service side's where
// it does not (Caller set either way).
func (r *Report) effectiveSteps() []Step {
	if r.CallerSearch == nil || len(r.CallerSearch.Callers) == 0 {
		return r.Steps
	}
	var out []Step
	for _, c := range r.CallerSearch.Callers {
		name := c.Pod.String()
		own := map[string]Step{}
		for _, st := range r.Steps {
			if st.Caller == name {
				own[st.ID] = st
			}
		}
		for _, st := range r.Steps {
			if st.Caller != "" {
				continue
			}
			if o, ok := own[st.ID]; ok {
				st = o
			}
			st.Caller = name
			out = append(out, st)
		}
	}
	return out
}

// NotRun are the checks of the path that could not run, per triage: the
// service side's ("" when a caller was named), then each caller's.
type NotRun struct {
	Caller string   `json:"caller,omitempty"`
	Steps  []string `json:"steps"`
	// Of is how many checks of its path the triage had.
	Of int `json:"of"`
}

// ChecksNotRun lists, for the service side and for each caller read, the
// checks on its path that errored or were skipped: "no finding" is a claim
// about the checks that ran.
func ChecksNotRun(r Report) []NotRun {
	service := NotRun{}
	serviceStep := map[string]Step{}
	for _, st := range r.Steps {
		if st.Caller != "" {
			continue
		}
		serviceStep[st.ID] = st
		if st.Verdict == VerdictOffPath {
			continue
		}
		service.Of++
		if st.Verdict == VerdictNotRun {
			service.Steps = append(service.Steps, st.ID)
		}
	}
	out := []NotRun{service}
	if r.CallerSearch == nil {
		return out
	}
	for _, c := range r.CallerSearch.Callers {
		name := c.Pod.String()
		own := map[string]Step{}
		for _, st := range r.Steps {
			if st.Caller == name {
				own[st.ID] = st
			}
		}
		n := NotRun{Caller: name}
		for _, st := range r.Steps {
			if st.Caller != "" {
				continue
			}
			if o, ok := own[st.ID]; ok {
				st = o
			}
			if st.Verdict == VerdictOffPath {
				continue
			}
			n.Of++
			if st.Verdict == VerdictNotRun {
				n.Steps = append(n.Steps, st.ID)
			}
		}
		out = append(out, n)
	}
	return out
}

// CallerRun is the triage from one caller the caller search read.
type CallerRun struct {
	Caller  callersearch.Caller
	Session *runbook.Session
}

// FromSessions builds the report of a check without --from: the
// service-side session and one session per caller the search read. A cause
// found from several is one finding, at the highest confidence, with the
// evidence of each and the callers it holds for; a step whose result from
// a caller differs from the service side's is listed again for that caller.
func FromSessions(service *runbook.Session, search callersearch.Result, runs []CallerRun) Report {
	r := FromSession(service)
	r.CallerSearch = &search
	index := map[string]int{}
	for i := range r.Findings {
		r.Findings[i].ServiceSide = true
		index[findingKey(r.Findings[i])] = i
	}
	serviceResult := map[string]Step{}
	for _, st := range r.Steps {
		serviceResult[st.ID] = st
	}
	found := map[string]bool{}
	var callerHypotheses []runbook.Undecided
	for _, run := range runs {
		name := run.Caller.Pod.String()
		findings := run.Session.Findings()
		for _, f := range findings {
			nf := finding(f)
			nf.Callers = []string{name}
			k := findingKey(nf)
			found[nf.Cause] = true
			i, ok := index[k]
			if !ok {
				index[k] = len(r.Findings)
				r.Findings = append(r.Findings, nf)
				continue
			}
			merged := &r.Findings[i]
			merged.Callers = append(merged.Callers, name)
			if nf.Confidence.Rank() > merged.Confidence.Rank() {
				merged.Confidence, merged.Summary = nf.Confidence, nf.Summary
			}
			for _, ev := range nf.Evidence {
				if !hasEvidence(merged.Evidence, ev) {
					merged.Evidence = append(merged.Evidence, ev)
				}
			}
		}
		for _, st := range steps(run.Session, findings, name) {
			if sv, ok := serviceResult[st.ID]; ok && sv.Status == st.Status && sv.Summary == st.Summary {
				continue
			}
			r.Steps = append(r.Steps, st)
		}
		for _, h := range run.Session.Undecided() {
			callerHypotheses = appendHypothesis(callerHypotheses, h)
		}
	}
	if len(runs) > 0 {
		// The callers read settle what the service side could not see
		// for want of a caller (the caller's Envoy, its data plane): their
		// open hypotheses are the triage's.
		r.Hypotheses = callerHypotheses
	}
	for _, f := range r.Findings {
		found[f.Cause] = true
	}
	kept := r.Hypotheses[:0]
	for _, h := range r.Hypotheses {
		if !found[h.Cause] {
			kept = append(kept, h)
		}
	}
	r.Hypotheses = kept
	sort.SliceStable(r.Findings, func(i, j int) bool {
		return r.Findings[i].Confidence.Rank() > r.Findings[j].Confidence.Rank()
	})
	r.settle()
	return r
}

// findingKey: one finding per cause; unexplained failures one per step.
func findingKey(f Finding) string { return f.Cause + "\x00" + f.Step }

func hasEvidence(list []runbook.Evidence, ev runbook.Evidence) bool {
	for _, e := range list {
		if e.Step == ev.Step && e.Reason == ev.Reason && e.When == ev.When {
			return true
		}
	}
	return false
}

func appendHypothesis(list []runbook.Undecided, h runbook.Undecided) []runbook.Undecided {
	for i := range list {
		if list[i].Cause == h.Cause {
			if h.Confidence.Rank() > list[i].Confidence.Rank() {
				list[i] = h
			}
			return list
		}
	}
	return append(list, h)
}

func finding(f runbook.Finding) Finding {
	return Finding{
		Cause: f.Cause, Step: f.Step, Title: f.Title, Severity: f.Severity, Confidence: f.Confidence,
		Summary: f.Summary, Evidence: f.Evidence,
		Fix:    fixOf(f),
		Verify: f.Verify, ConsequenceOf: f.ConsequenceOf,
	}
}

// steps are the session's steps whose probe ran, in runbook order, with the
// runbook's verdict on each.
func steps(s *runbook.Session, findings []runbook.Finding, caller string) []Step {
	out := []Step{}
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
		case !s.OnPath(st.ID):
			verdict = VerdictOffPath
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
		out = append(out, Step{
			ID: st.ID, Caller: caller, Title: st.Title, Probe: st.Probe, Status: res.Status, Verdict: verdict, Summary: res.Summary,
			Facts: facts, DurationMS: res.Duration.Milliseconds(),
		})
	}
	return out
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
