package incidentlog

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
)

// Output formats of Render.
const (
	FormatMarkdown = "md"
	FormatJSON     = "json"
)

// Formats lists the formats Render accepts, for flag help.
var Formats = []string{FormatMarkdown, FormatJSON}

// Evidence longer than this is cut in the Markdown record: a postmortem
// needs the excerpt, the JSON log keeps the whole text.
const (
	maxRawLines = 200
	maxRawBytes = 32 << 10
	maxRows     = 100
)

// Render writes events as an incident record. "md" is the Markdown on-call
// teams paste into a postmortem; "json" is {"events": [...], "problems": [...]}.
// problems (from Read) are reported in the record, not hidden.
func Render(events []runbook.Event, problems []Problem, w io.Writer, format string) error {
	return RenderWith(events, problems, w, format, false)
}

// RenderWith is Render; full adds to the Markdown record the appendix of
// every event with its evidence (log render --full).
func RenderWith(events []runbook.Event, problems []Problem, w io.Writer, format string, full bool) error {
	switch format {
	case FormatMarkdown, "markdown", "":
		md := Markdown(events, problems)
		if full {
			md = MarkdownFull(events, problems)
		}
		_, err := io.WriteString(w, md)
		return err
	case FormatJSON:
		if events == nil {
			events = []runbook.Event{}
		}
		if problems == nil {
			problems = []Problem{}
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Events   []runbook.Event `json:"events"`
			Problems []Problem       `json:"problems"`
		}{events, problems})
	}
	return fmt.Errorf("unknown format %q (one of %s)", format, strings.Join(Formats, ", "))
}

// Markdown renders the incident record a reviewer reads in two minutes:
// the summary, a timeline of what the on-call did and decided, the root
// cause with its evidence, the fix and its verification, and what was not
// checked or was ruled out. The evidence of every check is in the log, and
// in MarkdownFull's appendix.
func Markdown(events []runbook.Event, problems []Problem) string {
	return markdown(events, problems, false)
}

// MarkdownFull is Markdown with the appendix: every event of the triage
// (the engine's reads, each caller's session) with its evidence.
func MarkdownFull(events []runbook.Event, problems []Problem) string {
	return markdown(events, problems, true)
}

func markdown(events []runbook.Event, problems []Problem, full bool) string {
	r := newRecord(events)
	var b strings.Builder
	r.title(&b)
	r.summary(&b)
	if len(problems) > 0 {
		fmt.Fprintf(&b, "> **Incomplete log:** %d %s could not be read, so this record may miss events:\n", len(problems), plural(len(problems), "line", "lines"))
		for _, p := range problems {
			fmt.Fprintf(&b, "> - %s\n", text(p.String()))
		}
		b.WriteString("\n")
	}
	r.timeline(&b)
	r.rootCause(&b)
	r.fix(&b)
	r.verification(&b)
	r.notChecked(&b)
	r.ruledOut(&b)
	if full {
		r.appendix(&b)
	} else if n := r.count(runbook.EventProbeRan); n > 0 {
		fmt.Fprintf(&b, "## Evidence\n\nThe evidence of the %d %s this triage ran (tables, raw output, facts, the commands to see the same by hand) is in the log: `meshtriage log render --full` prints it as an appendix.\n\n",
			n, plural(n, "check", "checks"))
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// record is what the sections need, gathered in one pass over the events.
type record struct {
	events  []runbook.Event
	started *runbook.Event // the first session_started of the record's own session
	ended   *runbook.Event // its last session_ended
	// main is the record's own session: the one the on-call drove. Events
	// of other sessions (the callers a search read, the service side
	// beside them) are evidence, in the appendix.
	main string
	// labels name the other sessions: "caller shop/web-1", "service side".
	labels map[string]string
	// found are the causes the session reported, in the order first found;
	// verdicts hold the on-call's latest verdict per cause.
	found    []string
	foundSet map[string]bool
	verdicts map[string]runbook.Hypothesis
	// symptomTitle is the start option's title from the first branch.
	symptomTitle string
	// remarks are the tool's own notes (the caller search).
	remarks []string
}

func newRecord(events []runbook.Event) *record {
	r := &record{events: events, foundSet: map[string]bool{}, verdicts: map[string]runbook.Hypothesis{}, labels: map[string]string{}}
	addFound := func(c string) {
		if c != "" && !r.foundSet[c] {
			r.foundSet[c] = true
			r.found = append(r.found, c)
		}
	}
	for i := range events {
		ev := &events[i]
		if ev.Kind == runbook.EventSessionStarted && ev.Started.Parent == "" && r.started == nil {
			r.started, r.main = ev, ev.Session
		}
	}
	if r.started == nil && len(events) > 0 {
		r.main = events[0].Session
	}
	for i := range events {
		ev := &events[i]
		if ev.Kind == runbook.EventSessionStarted && ev.Session != r.main {
			label := "the service side"
			if src := ev.Started.Target.Source; src != nil {
				label = "caller " + src.String()
			}
			r.labels[ev.Session] = label
		}
		if ev.Session != r.main {
			continue
		}
		switch ev.Kind {
		case runbook.EventSessionEnded:
			r.ended = ev
			for _, c := range ev.Ended.Findings {
				addFound(c)
			}
		case runbook.EventBranchTaken:
			if ev.Branch.IsCause {
				addFound(ev.Branch.To)
			}
			if ev.Branch.From == runbook.StartNode && r.symptomTitle == "" && ev.Branch.ChosenBy == runbook.ChosenByUser {
				r.symptomTitle = ev.Branch.Reason
			}
		case runbook.EventHypothesis:
			r.verdicts[ev.Hypothesis.Cause] = *ev.Hypothesis
			if ev.Hypothesis.Verdict == runbook.VerdictConfirmed {
				addFound(ev.Hypothesis.Cause)
			}
		case runbook.EventNote:
			if ev.Note.By != "" {
				r.remarks = append(r.remarks, ev.Note.Text)
			}
		}
	}
	return r
}

func (r *record) start() time.Time {
	if r.started != nil {
		return r.started.Time
	}
	if len(r.events) > 0 {
		return r.events[0].Time
	}
	return time.Time{}
}

func (r *record) count(kind runbook.EventKind) int {
	n := 0
	for _, ev := range r.events {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func (r *record) auto() bool {
	return r.started != nil && r.started.Started.Mode == string(runbook.ModeAuto)
}

func (r *record) title(b *strings.Builder) {
	target := "unknown target"
	if r.started != nil {
		target = r.started.Started.Target.String()
	}
	date := ""
	if t := r.start(); !t.IsZero() {
		date = " — " + t.UTC().Format("2006-01-02")
	}
	fmt.Fprintf(b, "# Incident record: %s%s\n\n", text(target), date)
}

func (r *record) summary(b *strings.Builder) {
	b.WriteString("## Summary\n\n")
	item := func(label, value string) {
		if value != "" {
			fmt.Fprintf(b, "- **%s:** %s\n", label, value)
		}
	}
	item("Outcome", r.outcome())
	if st := r.started; st != nil {
		s := st.Started
		item("On-call", text(s.User))
		item("Target", code(s.Target.String()))
		item("Symptom", r.symptom())
		for _, rm := range r.remarks {
			if strings.HasPrefix(rm, "caller search") || strings.HasPrefix(rm, "no caller named") {
				item("Callers", text(rm))
			}
		}
		cluster := code(s.KubeContext)
		if s.Server != "" {
			cluster = strings.TrimSpace(cluster + " " + text(s.Server))
		}
		if s.ServerVersion != "" {
			cluster += " (Kubernetes " + text(s.ServerVersion) + ")"
		}
		item("Cluster", cluster)
		mode := text(s.Runbook)
		if s.Mode != "" {
			mode = strings.TrimSpace(mode + ", " + text(s.Mode) + " mode")
		}
		item("Runbook", mode)
	} else {
		b.WriteString("- **Warning:** the log has no session_started event; who, where and what are unknown.\n")
	}
	var last time.Time
	if len(r.events) > 0 {
		last = r.events[len(r.events)-1].Time
	}
	when := ""
	if t := r.start(); !t.IsZero() {
		when = stamp(t)
	}
	switch {
	case r.ended != nil:
		when += " to " + r.ended.Time.UTC().Format("15:04 UTC")
		if reason := r.ended.Ended.Reason; reason != "" {
			when += " (" + text(reason) + ")"
		}
	case !last.IsZero():
		when += "; not ended cleanly, last event " + stamp(last)
	}
	if start := r.start(); !start.IsZero() && !last.IsZero() {
		when += ", " + last.Sub(start).Round(time.Second).String()
	}
	item("When", when)
	if st := r.started; st != nil {
		id := code(st.Session)
		if st.Started.Tool != "" {
			id += ", meshtriage " + text(st.Started.Tool)
		}
		item("Session", id)
	}
	b.WriteString("\n")
}

// outcome is the record in one line: the root cause, or why there is none.
func (r *record) outcome() string {
	causes := r.rootCauses()
	if len(causes) > 0 {
		var parts []string
		for _, c := range causes {
			p := code(c)
			if r.verdicts[c].Verdict == runbook.VerdictConfirmed {
				p += " (confirmed by the on-call)"
			} else {
				p += " (found by the runbook, not confirmed)"
			}
			parts = append(parts, p)
		}
		return "root cause " + strings.Join(parts, "; ")
	}
	open := r.causesIn(runbook.CauseOpen)
	switch {
	case len(open) > 0:
		return fmt.Sprintf("no root cause found, and %d %s still open (see What was not checked)", len(open), plural(len(open), "hypothesis", "hypotheses"))
	case r.ended != nil && len(r.ended.Ended.Causes) > 0 && len(r.causesIn(runbook.CauseNotChecked)) == 0:
		return "no root cause found: every check of the path ran and ruled its causes out"
	}
	return "no root cause found"
}

func (r *record) symptom() string {
	if r.started == nil || r.started.Started.Symptom == "" {
		return ""
	}
	id := r.started.Started.Symptom
	if r.symptomTitle != "" {
		return text(r.symptomTitle) + " (" + code(id) + ")"
	}
	return code(id)
}

// causesIn are the causes the session ended with in state, from the
// session's own assessment (session_ended).
func (r *record) causesIn(state string) []runbook.CauseState {
	if r.ended == nil {
		return nil
	}
	var out []runbook.CauseState
	for _, c := range r.ended.Ended.Causes {
		if c.State == state {
			out = append(out, c)
		}
	}
	return out
}

// at is an event's time on the timeline, with the day when it changes.
type clock struct{ day string }

func (c *clock) at(t time.Time) string {
	s := t.UTC().Format("15:04")
	if day := t.UTC().Format("2006-01-02"); day != c.day {
		if c.day != "" {
			s = day + " " + s
		}
		c.day = day
	}
	return s
}

// timeline is what the on-call did and decided, in order: the symptom, each
// step they ran (and why: the runbook's proposal or their own choice), a
// run of all remaining steps as one entry, notes, verdicts, the fix, the
// actions and the verification. What the engine read on its own account
// (a step another needed, a caller's session) is evidence, not an action.
func (r *record) timeline(b *strings.Builder) {
	b.WriteString("## Timeline\n\nAll times UTC. What the on-call did and decided; the engine's own reads are in the evidence.\n\n")
	c := &clock{}
	type move struct{ by, reason string }
	pending := map[string]move{}
	line := func(t time.Time, s string) { fmt.Fprintf(b, "- **%s** %s\n", c.at(t), s) }
	autoDone := false
	for i := 0; i < len(r.events); i++ {
		ev := &r.events[i]
		if ev.Session != r.main {
			continue
		}
		switch ev.Kind {
		case runbook.EventSessionStarted:
			line(ev.Time, r.startLine(ev))
		case runbook.EventBranchTaken:
			br := ev.Branch
			switch {
			case r.auto() && br.ChosenBy == runbook.ChosenByEngine:
			case br.From == runbook.StartNode:
				line(ev.Time, "Symptom: "+text(br.Reason))
			case br.IsCause:
				verb := "Opened the cause the runbook reached,"
				if br.ChosenBy == runbook.ChosenByUser {
					verb = "Chose the cause"
				}
				out := fmt.Sprintf("%s %s at %s", verb, code(br.To), code(br.From))
				if br.Reason != "" {
					out += ": " + text(br.Reason)
				}
				line(ev.Time, out)
			default:
				pending[br.To] = move{by: br.ChosenBy, reason: br.Reason}
			}
		case runbook.EventProbeRan:
			p := ev.Probe
			switch {
			case p.Trigger == runbook.TriggerAuto:
				if !autoDone {
					autoDone = true
					line(ev.Time, "Ran every check unattended: "+r.statusCounts(i, func(q *runbook.ProbeRan) bool { return q.Trigger == runbook.TriggerAuto }))
				}
				continue
			case !runbook.ByOnCall(p.Trigger) || p.Trigger == runbook.TriggerRunAll:
				continue
			}
			verb := "Ran"
			if p.Rerun {
				verb = "Re-ran"
			}
			out := verb + " " + code(p.Step)
			if m, ok := pending[p.Step]; ok {
				delete(pending, p.Step)
				switch {
				case m.by == runbook.ChosenByUser:
					out += " (the on-call's choice)"
				case m.reason != "":
					out += " (the runbook's next step: " + text(m.reason) + ")"
				}
			}
			out += ": **" + string(p.Status) + "**"
			if p.Summary != "" {
				out += " — " + text(p.Summary)
			}
			line(ev.Time, out)
		case runbook.EventRunAll:
			steps := ev.RunAll.Steps
			in := map[string]bool{}
			for _, s := range steps {
				in[s] = true
			}
			out := fmt.Sprintf("Ran all %d remaining %s: ", len(steps), plural(len(steps), "step", "steps"))
			line(ev.Time, out+r.statusCounts(i, func(q *runbook.ProbeRan) bool {
				return in[q.Step] && (q.Trigger == runbook.TriggerRunAll || q.Trigger == runbook.TriggerNeeded)
			}))
		case runbook.EventNote:
			if ev.Note.By != "" {
				continue
			}
			out := "Note"
			if ev.Note.Step != "" {
				out += " at " + code(ev.Note.Step)
			}
			line(ev.Time, out+": "+text(noteFirst(ev.Note.Text)))
			if rest := noteRest(ev.Note.Text); rest != "" {
				b.WriteString("\n")
				writeIndented(b, noHTML(rest)+"\n", "  ")
				b.WriteString("\n")
			}
		case runbook.EventHypothesis:
			h := ev.Hypothesis
			verb := "Confirmed"
			if h.Verdict == runbook.VerdictRuledOut {
				verb = "Ruled out"
			}
			out := verb + " " + code(h.Cause)
			if h.Why != "" {
				out += ": " + text(h.Why)
			}
			line(ev.Time, out)
		case runbook.EventFixChosen:
			f := ev.Fix
			out := "Chose the fix " + code(f.Fix) + " for " + code(f.Cause)
			if f.Text != "" {
				out += ": " + text(f.Text)
			}
			line(ev.Time, out)
		case runbook.EventVerification:
			// One entry per verification run: its checks follow each other.
			cause := ev.Verification.Cause
			j := i
			var passed, failed, manual int
			for ; j < len(r.events) && r.events[j].Kind == runbook.EventVerification && r.events[j].Verification.Cause == cause && r.events[j].Session == r.main; j++ {
				v := r.events[j].Verification
				switch {
				case v.Probe == "":
					manual++
				case v.Passed:
					passed++
				default:
					failed++
				}
			}
			i = j - 1
			out := fmt.Sprintf("Verified the fix of %s: %d passed, %d failed", code(cause), passed, failed)
			if manual > 0 {
				out += fmt.Sprintf(", %d to check by hand", manual)
			}
			line(ev.Time, out)
		case runbook.EventAction:
			line(ev.Time, actionText(ev.Action))
		case runbook.EventSessionEnded:
			e := ev.Ended
			out := "Session ended"
			if e.Reason != "" {
				out += " (" + text(e.Reason) + ")"
			}
			if len(e.Findings) > 0 {
				out += "; findings: " + codeList(e.Findings)
			} else {
				out += "; no findings"
			}
			line(ev.Time, out)
		case runbook.EventRuleSkipped:
		default:
			// Written by a newer meshtriage: listed, not dropped.
			line(ev.Time, code(string(ev.Kind))+" event")
		}
	}
	b.WriteString("\n")
}

// statusCounts sums up the probe runs from event i on that match: "12
// checks: 9 pass, 2 fail (access-log, endpoints), 1 could not run (metrics)".
func (r *record) statusCounts(from int, match func(*runbook.ProbeRan) bool) string {
	last := map[string]*runbook.ProbeRan{}
	var order []string
	for j := from; j < len(r.events); j++ {
		ev := &r.events[j]
		if ev.Session != r.main || ev.Kind != runbook.EventProbeRan || !match(ev.Probe) {
			if ev.Kind == runbook.EventRunAll && j > from {
				break
			}
			continue
		}
		if _, seen := last[ev.Probe.Step]; !seen {
			order = append(order, ev.Probe.Step)
		}
		last[ev.Probe.Step] = ev.Probe
	}
	byStatus := map[probes.Status][]string{}
	for _, s := range order {
		byStatus[last[s].Status] = append(byStatus[last[s].Status], s)
	}
	var parts []string
	for _, st := range []probes.Status{probes.StatusPass, probes.StatusWarn, probes.StatusFail, probes.StatusError, probes.StatusSkipped} {
		steps := byStatus[st]
		if len(steps) == 0 {
			continue
		}
		p := fmt.Sprintf("%d %s", len(steps), st)
		if st != probes.StatusPass {
			p += " (" + strings.Join(steps, ", ") + ")"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "nothing ran"
	}
	return strings.Join(parts, ", ")
}

func (r *record) startLine(ev *runbook.Event) string {
	s := ev.Started
	out := "Triage started"
	if ev != r.started {
		out = "Session resumed"
	}
	if s.User != "" {
		out += " by " + text(s.User)
	}
	if s.KubeContext != "" {
		out += " on " + code(s.KubeContext)
	}
	out += ": " + code(s.Target.String())
	if s.Mode != "" {
		out += ", " + text(s.Mode) + " mode"
	}
	return out
}

// rootCauses are the causes found and not ruled out by the on-call, the
// confirmed ones first.
func (r *record) rootCauses() []string {
	var confirmed, other []string
	for _, c := range r.found {
		switch r.verdicts[c].Verdict {
		case runbook.VerdictConfirmed:
			confirmed = append(confirmed, c)
		case runbook.VerdictRuledOut:
		default:
			other = append(other, c)
		}
	}
	return append(confirmed, other...)
}

// state is the session's own assessment of cause c, if it recorded one.
func (r *record) state(c string) (runbook.CauseState, bool) {
	if r.ended != nil {
		for _, st := range r.ended.Ended.Causes {
			if st.Cause == c {
				return st, true
			}
		}
	}
	return runbook.CauseState{}, false
}

func (r *record) rootCause(b *strings.Builder) {
	b.WriteString("## Root cause\n\n")
	causes := r.rootCauses()
	if len(causes) == 0 {
		b.WriteString("No root cause was found in this session.\n\n")
		return
	}
	for _, c := range causes {
		fmt.Fprintf(b, "### %s\n\n", code(c))
		if h, ok := r.verdicts[c]; ok && h.Verdict == runbook.VerdictConfirmed {
			b.WriteString("- **Confirmed** by the on-call")
			if h.Why != "" {
				b.WriteString(": " + text(h.Why))
			}
			b.WriteString("\n")
		} else {
			b.WriteString("- Found by the runbook; **not confirmed** by the on-call.\n")
		}
		st, assessed := r.state(c)
		reasons := st.Reasons
		var steps []string
		for _, ev := range r.events {
			if ev.Kind != runbook.EventBranchTaken || !ev.Branch.IsCause || ev.Branch.To != c {
				continue
			}
			if !assessed && ev.Branch.Reason != "" && !contains(reasons, ev.Branch.Reason) {
				reasons = append(reasons, ev.Branch.Reason)
			}
			steps = appendNew(steps, ev.Branch.From)
		}
		for _, s := range st.Steps {
			steps = appendNew(steps, s)
		}
		if len(steps) > 0 {
			b.WriteString("- Found at " + codeList(steps) + ".\n")
		}
		for _, reason := range reasons {
			b.WriteString("- " + text(reason) + "\n")
		}
		// The evidence that made it hold: the step's last run, in the
		// session that found it.
		evidence := r.causeEvidence(c, steps)
		for _, e := range evidence {
			b.WriteString(e)
		}
		if len(evidence) == 0 {
			b.WriteString("\n")
		}
	}
}

// causeEvidence is the evidence block of the last run of each step that
// found c, in any session of the record that found it.
func (r *record) causeEvidence(c string, steps []string) []string {
	foundIn := map[string]bool{r.main: true}
	for _, ev := range r.events {
		if ev.Kind == runbook.EventSessionEnded && contains(ev.Ended.Findings, c) {
			foundIn[ev.Session] = true
		}
	}
	var out []string
	for _, s := range steps {
		step := strings.SplitN(s, " (from ", 2)[0]
		var last *runbook.ProbeRan
		for i := len(r.events) - 1; i >= 0; i-- {
			ev := r.events[i]
			if ev.Kind == runbook.EventProbeRan && ev.Probe.Step == step && foundIn[ev.Session] && ev.Probe.Status != probes.StatusPass {
				last = ev.Probe
				break
			}
		}
		if last != nil {
			out = append(out, evidenceBlock(last))
		}
	}
	return dedupe(out)
}

func appendNew(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}

func (r *record) fix(b *strings.Builder) {
	b.WriteString("## The fix\n\n")
	var fixes, changes []string
	for _, ev := range r.events {
		if ev.Session != r.main {
			continue
		}
		at := ev.Time.UTC().Format("15:04")
		switch ev.Kind {
		case runbook.EventFixChosen:
			f := ev.Fix
			line := fmt.Sprintf("- For %s: %s", code(f.Cause), code(f.Fix))
			if f.Text != "" {
				line += " — " + text(f.Text)
			}
			fixes = append(fixes, line+" (chosen "+at+" UTC)")
		case runbook.EventAction:
			changes = append(changes, fmt.Sprintf("- %s (%s UTC)", actionText(ev.Action), at))
		}
	}
	if len(fixes) == 0 {
		b.WriteString("No fix was chosen in this session.\n")
	} else {
		b.WriteString(strings.Join(fixes, "\n") + "\n")
	}
	if len(changes) > 0 {
		b.WriteString("\nActions taken during the triage, with their undo:\n\n")
		b.WriteString(strings.Join(changes, "\n") + "\n")
	}
	blocks := false
	for _, ev := range r.events {
		if ev.Kind == runbook.EventAction && ev.Session == r.main && ev.Action.Output != "" {
			b.WriteString(outputBlock(ev.Action))
			blocks = true
		}
	}
	if !blocks {
		b.WriteString("\n")
	}
}

func (r *record) verification(b *strings.Builder) {
	b.WriteString("## Verification\n\n")
	n := 0
	for _, ev := range r.events {
		if ev.Kind == runbook.EventVerification && ev.Session == r.main {
			v := ev.Verification
			fmt.Fprintf(b, "- %s UTC, %s: %s\n", ev.Time.UTC().Format("15:04"), code(v.Cause), verificationText(v))
			n++
		}
	}
	if n == 0 {
		b.WriteString("No verification was recorded.")
		if r.has(runbook.EventFixChosen) || r.has(runbook.EventAction) {
			b.WriteString(" The fix is not verified.")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// notChecked lists what the triage could not see: the hypotheses still
// open, the causes whose steps did not run, and the checks that could not
// read what they need. An unchecked cause is not a ruled-out one.
func (r *record) notChecked(b *strings.Builder) {
	var lines []string
	if r.ended != nil && r.ended.Ended.Causes != nil {
		for _, st := range r.causesIn(runbook.CauseOpen) {
			lines = append(lines, fmt.Sprintf("- %s: open, its rules at %s could not decide", code(st.Cause), codeList(st.Steps)))
		}
		for _, st := range r.causesIn(runbook.CauseNotChecked) {
			if st.NeedsCaller && len(st.Reasons) > 0 {
				// It waits for a caller: only a caller's proxy produces it.
				lines = append(lines, fmt.Sprintf("- %s: not checked, %s", code(st.Cause), text(st.Reasons[0])))
				continue
			}
			lines = append(lines, fmt.Sprintf("- %s: not checked, %s did not run", code(st.Cause), codeList(st.Steps)))
		}
	} else {
		for _, c := range r.legacyNotChecked() {
			lines = append(lines, fmt.Sprintf("- %s: not ruled out, its check could not run", code(c)))
		}
	}
	seen := map[string]bool{}
	for _, ev := range r.events {
		if ev.Session != r.main || ev.Kind != runbook.EventProbeRan {
			continue
		}
		p := ev.Probe
		if (p.Status == probes.StatusError || p.Status == probes.StatusSkipped) && !seen[p.Step] && r.relevant(p.Step) {
			seen[p.Step] = true
			lines = append(lines, fmt.Sprintf("- %s **%s**: %s", code(p.Step), p.Status, text(p.Summary)))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## What was not checked\n\n")
	b.WriteString(strings.Join(dedupe(lines), "\n"))
	b.WriteString("\n\n")
}

// relevant: a step that could not run matters when a cause the session
// left open or unchecked has its rules there (or, in a log that has no
// assessment, always).
func (r *record) relevant(step string) bool {
	if r.ended == nil || r.ended.Ended.Causes == nil {
		return true
	}
	for _, st := range r.ended.Ended.Causes {
		if st.State == runbook.CauseOpen || st.State == runbook.CauseNotChecked {
			for _, s := range st.Steps {
				if s == step || strings.HasPrefix(s, step+" (from ") {
					return true
				}
			}
		}
	}
	return false
}

// legacyNotChecked are, in a log without the session's assessment, the
// causes of the checks that errored or were skipped.
func (r *record) legacyNotChecked() []string {
	var out []string
	for _, ev := range r.events {
		if ev.Session != r.main || ev.Kind != runbook.EventProbeRan {
			continue
		}
		if p := ev.Probe; p.Status == probes.StatusError || p.Status == probes.StatusSkipped {
			for _, c := range p.Causes {
				if !r.foundSet[c] {
					out = appendNew(out, c)
				}
			}
		}
	}
	return out
}

// ruledOut lists the causes the on-call ruled out, and those every rule of
// the path decided against, with the steps whose rules did not hold. A
// cause open or unchecked is never here.
func (r *record) ruledOut(b *strings.Builder) {
	var lines []string
	seen := map[string]bool{}
	for _, ev := range r.events {
		if ev.Kind != runbook.EventHypothesis || ev.Session != r.main {
			continue
		}
		c := ev.Hypothesis.Cause
		if h := r.verdicts[c]; h.Verdict == runbook.VerdictRuledOut && !seen[c] {
			seen[c] = true
			line := fmt.Sprintf("- %s: by the on-call", code(c))
			if h.Why != "" {
				line += " — " + text(h.Why)
			}
			lines = append(lines, line)
		}
	}
	if r.ended != nil && r.ended.Ended.Causes != nil {
		for _, st := range r.causesIn(runbook.CauseRuledOut) {
			if seen[st.Cause] {
				continue
			}
			seen[st.Cause] = true
			if len(st.Steps) == 0 && len(st.Reasons) > 0 {
				// No data plane of the path produces it.
				lines = append(lines, fmt.Sprintf("- %s: %s", code(st.Cause), text(st.Reasons[0])))
				continue
			}
			lines = append(lines, fmt.Sprintf("- %s: its rules at %s did not hold", code(st.Cause), codeList(st.Steps)))
		}
	} else {
		// An older log: the causes of the passing checks, never one that
		// a check that could not run also covers.
		unsure := map[string]bool{}
		for _, c := range r.legacyNotChecked() {
			unsure[c] = true
		}
		for _, ev := range r.events {
			if ev.Session != r.main || ev.Kind != runbook.EventProbeRan || ev.Probe.Status != probes.StatusPass {
				continue
			}
			var causes []string
			for _, c := range ev.Probe.Causes {
				if !seen[c] && !r.foundSet[c] && !unsure[c] {
					seen[c] = true
					causes = append(causes, c)
				}
			}
			if len(causes) > 0 {
				lines = append(lines, fmt.Sprintf("- %s: %s passed — %s", codeList(causes), code(ev.Probe.Step), text(ev.Probe.Summary)))
			}
		}
	}
	b.WriteString("## What was ruled out\n\n")
	if len(lines) == 0 {
		b.WriteString("Nothing was ruled out.\n\n")
		return
	}
	b.WriteString(strings.Join(lines, "\n") + "\n\n")
}

func (r *record) has(kind runbook.EventKind) bool {
	for _, ev := range r.events {
		if ev.Kind == kind {
			return true
		}
	}
	return false
}

// appendix is every event of the record, the engine's own reads and each
// caller's session included, with the evidence of each check.
func (r *record) appendix(b *strings.Builder) {
	b.WriteString("## Appendix: every event, with its evidence\n\n")
	c := &clock{}
	for i := range r.events {
		ev := &r.events[i]
		entry := r.line(i)
		if label := r.labels[ev.Session]; label != "" {
			entry = "[" + text(label) + "] " + entry
		}
		fmt.Fprintf(b, "- **%s** %s\n", c.at(ev.Time), entry)
		switch ev.Kind {
		case runbook.EventProbeRan:
			writeIndented(b, evidenceBlock(ev.Probe), "  ")
		case runbook.EventAction:
			writeIndented(b, outputBlock(ev.Action), "  ")
		}
	}
	b.WriteString("\n")
}

// line is event i as one appendix entry.
func (r *record) line(i int) string {
	ev := &r.events[i]
	switch ev.Kind {
	case runbook.EventSessionStarted:
		if ev.Session != r.main {
			return "Triage from " + text(r.labels[ev.Session]) + " started, beside the on-call's"
		}
		return r.startLine(ev)
	case runbook.EventProbeRan:
		p := ev.Probe
		verb := "Ran"
		switch {
		case p.Rerun:
			verb = "Re-ran"
		case p.Trigger == runbook.TriggerNeeded:
			verb = "Read (needed by " + code(p.For) + ")"
		case p.Trigger == runbook.TriggerRunAll:
			verb = "Ran (run all)"
		case p.Trigger == runbook.TriggerVerify:
			verb = "Re-read for the verification"
		}
		out := fmt.Sprintf("%s %s", verb, code(p.Probe))
		if p.Step != "" && p.Step != p.Probe {
			out += " (step " + code(p.Step) + ")"
		}
		out += ": **" + string(p.Status) + "**"
		if p.Summary != "" {
			out += " — " + text(p.Summary)
		}
		return out + " (" + duration(p.DurationMS) + ")"
	case runbook.EventBranchTaken:
		return branchLine(ev.Branch)
	case runbook.EventRuleSkipped:
		s := ev.Skipped
		return fmt.Sprintf("Rule at %s could not decide (%s): %s", code(s.Step), code(s.When), text(skipWhy(s.Why)))
	case runbook.EventNote:
		out := "Note"
		if ev.Note.By != "" {
			out = "Remark (" + text(ev.Note.By) + ")"
		}
		if ev.Note.Step != "" {
			out += " at " + code(ev.Note.Step)
		}
		return out + ": " + text(ev.Note.Text)
	case runbook.EventHypothesis:
		h := ev.Hypothesis
		out := "Hypothesis " + code(h.Cause) + " " + verdictText(h.Verdict)
		if h.Why != "" {
			out += ": " + text(h.Why)
		}
		return out
	case runbook.EventFixChosen:
		f := ev.Fix
		out := "Fix chosen for " + code(f.Cause) + ": " + code(f.Fix)
		if f.Text != "" {
			out += " — " + text(f.Text)
		}
		return out
	case runbook.EventVerification:
		return "Verification of " + code(ev.Verification.Cause) + ": " + verificationText(ev.Verification)
	case runbook.EventAction:
		return actionText(ev.Action)
	case runbook.EventRunAll:
		return fmt.Sprintf("Run all remaining: %s", codeList(ev.RunAll.Steps))
	case runbook.EventSessionEnded:
		e := ev.Ended
		out := "Session ended"
		if e.Reason != "" {
			out += " (" + text(e.Reason) + ")"
		}
		if len(e.Findings) > 0 {
			return out + "; findings: " + codeList(e.Findings)
		}
		return out + "; no findings"
	}
	return code(string(ev.Kind)) + " event"
}

func branchLine(br *runbook.BranchTaken) string {
	by := br.ChosenBy
	if by == "" {
		by = "unknown"
	}
	var out string
	switch {
	case br.From == runbook.StartNode && br.ChosenBy == runbook.ChosenByUser:
		out = "Symptom chosen by the user"
		if br.Reason != "" {
			out += ": " + text(br.Reason)
		}
		return out + " → " + code(br.To)
	case br.IsCause:
		out = fmt.Sprintf("Cause %s found at %s (%s)", code(br.To), code(br.From), text(by))
	default:
		out = fmt.Sprintf("Branch %s → %s (%s)", code(br.From), code(br.To), text(by))
	}
	if br.Reason != "" {
		out += ": " + text(br.Reason)
	}
	if br.When != "" {
		out += " [when " + code(br.When) + "]"
	}
	return out
}

func verdictText(v string) string {
	switch v {
	case runbook.VerdictConfirmed:
		return "**confirmed**"
	case runbook.VerdictRuledOut:
		return "**ruled out**"
	}
	return "**" + text(v) + "**"
}

func verificationText(v *runbook.Verification) string {
	var out string
	switch {
	case v.Probe == "":
		out = "**manual**"
		if v.Describe != "" {
			out += " — " + text(v.Describe)
		}
		if v.Command != "" {
			out += "; run " + code(v.Command)
		}
		return out
	case v.Passed:
		out = "**passed** " + code(v.Probe)
	default:
		out = "**failed** " + code(v.Probe)
	}
	if v.Describe != "" {
		out += " — " + text(v.Describe)
	}
	if v.Expect != "" {
		out += " [expect " + code(v.Expect) + "]"
	}
	if v.Detail != "" {
		out += ": " + text(v.Detail)
	}
	return out
}

func actionText(a *runbook.Action) string {
	verb := "Action" // a change, or a test request: the name says which
	if a.Reverted {
		verb = "Reverted"
	}
	out := fmt.Sprintf("%s %s on %s", verb, code(a.Name), code(a.Target))
	if a.Done != "" {
		out += ": " + text(a.Done)
	}
	if a.Undo != "" && !a.Reverted {
		out += "; undo with " + code(a.Undo)
	}
	if a.Error != "" {
		out += "; **error:** " + text(a.Error)
	}
	return out
}

// evidenceBlock is a probe run's evidence collapsed in a <details> block:
// the table, the raw text, the facts the runbook branched on and the
// commands to see the same by hand. Empty when there is nothing to show.
func evidenceBlock(p *runbook.ProbeRan) string {
	ev := p.Evidence
	if len(ev.Rows) == 0 && ev.Raw == "" && len(p.Facts) == 0 && len(p.Commands) == 0 {
		return ""
	}
	var b strings.Builder
	label := "Evidence: " + p.Probe
	if p.Step != "" && p.Step != p.Probe {
		label += " (step " + p.Step + ")"
	}
	fmt.Fprintf(&b, "\n<details><summary>%s</summary>\n\n", html(label))
	if len(ev.Rows) > 0 {
		table(&b, ev)
		b.WriteString("\n")
	}
	if ev.Raw != "" {
		raw, cut := truncate(ev.Raw)
		b.WriteString(fence(raw, "text"))
		if cut != "" {
			b.WriteString("\n" + cut + "\n")
		}
		b.WriteString("\n")
	}
	if len(p.Facts) > 0 {
		b.WriteString("Facts: " + facts(p.Facts) + "\n\n")
	}
	if len(p.Commands) > 0 {
		b.WriteString("By hand:\n\n")
		b.WriteString(fence(strings.Join(p.Commands, "\n"), "sh"))
		b.WriteString("\n")
	}
	b.WriteString("</details>\n\n")
	return b.String()
}

// outputBlock is what an action showed (a test request's transcript, debug
// log lines), collapsed like evidence.
func outputBlock(a *runbook.Action) string {
	if a.Output == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n<details><summary>%s</summary>\n\n", html("Output: "+a.Name))
	out, cut := truncate(a.Output)
	b.WriteString(fence(out, "text"))
	if cut != "" {
		b.WriteString("\n" + cut + "\n")
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

func table(b *strings.Builder, ev probes.Evidence) {
	width := len(ev.Columns)
	for _, row := range ev.Rows {
		width = max(width, len(row))
	}
	cols := make([]string, width)
	copy(cols, ev.Columns)
	b.WriteString("|")
	for _, c := range cols {
		b.WriteString(" " + cell(c) + " |")
	}
	b.WriteString("\n|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for i, row := range ev.Rows {
		if i == maxRows {
			fmt.Fprintf(b, "\n%d more rows in the log.\n", len(ev.Rows)-maxRows)
			return
		}
		b.WriteString("|")
		for j := range width {
			v := ""
			if j < len(row) {
				v = row[j]
			}
			b.WriteString(" " + cell(v) + " |")
		}
		b.WriteString("\n")
	}
}

// truncate cuts raw evidence to what a postmortem can hold and says how
// much was left out.
func truncate(raw string) (string, string) {
	raw = strings.TrimRight(raw, "\n")
	lines := strings.Split(raw, "\n")
	cutLines := 0
	if len(lines) > maxRawLines {
		cutLines = len(lines) - maxRawLines
		lines = lines[:maxRawLines]
	}
	out := strings.Join(lines, "\n")
	if len(out) > maxRawBytes {
		out = strings.ToValidUTF8(out[:maxRawBytes], "")
		if i := strings.LastIndexByte(out, '\n'); i > 0 {
			out = out[:i]
		}
		cutLines = len(strings.Split(raw, "\n")) - len(strings.Split(out, "\n"))
	}
	if cutLines == 0 {
		return out, ""
	}
	return out, fmt.Sprintf("%d more %s in the JSON log.", cutLines, plural(cutLines, "line", "lines"))
}

func facts(f probes.Facts) string {
	names := make([]string, 0, len(f))
	for k := range f {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		v, err := json.Marshal(f[k])
		if err != nil {
			v = []byte(fmt.Sprint(f[k]))
		}
		parts[i] = code(k + "=" + string(v))
	}
	return strings.Join(parts, ", ")
}

// skipWhy drops the engine's "rule skipped: " prefix, which the record's
// wording already says.
func skipWhy(why string) string { return strings.TrimPrefix(why, "rule skipped: ") }

// noteFirst and noteRest split a multi-line note: its first line goes on
// the timeline entry, the rest is a paragraph under it.
func noteFirst(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return first
}

func noteRest(s string) string {
	_, rest, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(rest)
}

func writeIndented(b *strings.Builder, block, indent string) {
	if block == "" {
		return
	}
	for _, line := range strings.SplitAfter(block, "\n") {
		if strings.TrimSpace(line) == "" {
			b.WriteString(strings.TrimLeft(line, " \t"))
			continue
		}
		b.WriteString(indent + line)
	}
}

// text makes s safe as inline Markdown: one line, no raw HTML (a "<" could
// open a tag that hides the rest of the record).
func text(s string) string {
	return noHTML(strings.Join(strings.Fields(s), " "))
}

func noHTML(s string) string { return strings.ReplaceAll(s, "<", "&lt;") }

// cell is text inside a table cell.
func cell(s string) string {
	return strings.ReplaceAll(text(s), "|", `\|`)
}

// html escapes s inside an HTML element (<summary>).
func html(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(strings.Join(strings.Fields(s), " "))
}

// code is s as an inline code span, with a fence longer than any backtick
// run inside it.
func code(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	tick := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return tick + s + tick
}

func codeList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = code(s)
	}
	return strings.Join(out, ", ")
}

// fence is s as a fenced code block whose fence no line of s can close.
func fence(s, lang string) string {
	f := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return f + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + f + "\n"
}

func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

func duration(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func dedupe(items []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range items {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
