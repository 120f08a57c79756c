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
	switch format {
	case FormatMarkdown, "markdown", "":
		_, err := io.WriteString(w, Markdown(events, problems))
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

// Markdown renders the incident record.
func Markdown(events []runbook.Event, problems []Problem) string {
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
	r.symptoms(&b)
	r.ruledOut(&b)
	r.notChecked(&b)
	r.rootCause(&b)
	r.fix(&b)
	r.verification(&b)
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// record is what the sections need, gathered in one pass over the events.
type record struct {
	events  []runbook.Event
	started *runbook.Event // the first session_started
	ended   *runbook.Event // the last session_ended
	// found are the causes the session reported, in the order first found;
	// verdicts hold the on-call's latest verdict per cause.
	found    []string
	foundSet map[string]bool
	verdicts map[string]runbook.Hypothesis
	// symptomTitle is the start option's title from the first branch.
	symptomTitle string
}

func newRecord(events []runbook.Event) *record {
	r := &record{events: events, foundSet: map[string]bool{}, verdicts: map[string]runbook.Hypothesis{}}
	addFound := func(c string) {
		if c != "" && !r.foundSet[c] {
			r.foundSet[c] = true
			r.found = append(r.found, c)
		}
	}
	for i := range events {
		ev := &events[i]
		switch ev.Kind {
		case runbook.EventSessionStarted:
			if r.started == nil {
				r.started = ev
			}
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
	if st := r.started; st != nil {
		s := st.Started
		item("On-call", text(s.User))
		item("Kube context", code(s.KubeContext))
		cluster := text(s.Server)
		if s.ServerVersion != "" {
			cluster = strings.TrimSpace(cluster + " (Kubernetes " + text(s.ServerVersion) + ")")
		}
		item("Cluster", cluster)
		item("Target", code(s.Target.String()))
		item("Symptom", r.symptom())
		mode := text(s.Runbook)
		if s.Mode != "" {
			mode = strings.TrimSpace(mode + ", " + text(s.Mode) + " mode")
		}
		item("Runbook", mode)
	} else {
		b.WriteString("- **Warning:** the log has no session_started event; who, where and what are unknown.\n")
	}
	if t := r.start(); !t.IsZero() {
		item("Started", stamp(t))
	}
	var last time.Time
	if len(r.events) > 0 {
		last = r.events[len(r.events)-1].Time
	}
	if r.ended != nil {
		end := stamp(r.ended.Time)
		if reason := r.ended.Ended.Reason; reason != "" {
			end += " (" + text(reason) + ")"
		}
		item("Ended", end)
	} else if !last.IsZero() {
		item("Ended", "not recorded: the session did not end cleanly; last event "+stamp(last))
	}
	if start := r.start(); !start.IsZero() && !last.IsZero() {
		item("Duration", last.Sub(start).Round(time.Second).String())
	}
	if causes := r.rootCauses(); len(causes) > 0 {
		item("Root cause", codeList(causes))
	} else {
		item("Root cause", "none found")
	}
	if st := r.started; st != nil {
		id := code(st.Session)
		if st.Started.Tool != "" {
			id += ", meshtriage " + text(st.Started.Tool)
		}
		item("Session", id)
	}
	b.WriteString("\n")
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

func (r *record) timeline(b *strings.Builder) {
	b.WriteString("## Timeline\n\nAll times UTC.\n\n")
	prevDay := r.start().UTC().Format("2006-01-02")
	for i := range r.events {
		ev := &r.events[i]
		at := ev.Time.UTC().Format("15:04")
		if day := ev.Time.UTC().Format("2006-01-02"); day != prevDay {
			at = day + " " + at
			prevDay = day
		}
		fmt.Fprintf(b, "- **%s** %s\n", at, r.line(i))
		switch ev.Kind {
		case runbook.EventProbeRan:
			writeIndented(b, evidenceBlock(ev.Probe), "  ")
		case runbook.EventAction:
			writeIndented(b, outputBlock(ev.Action), "  ")
		}
		if ev.Kind == runbook.EventNote {
			if rest := noteRest(ev.Note.Text); rest != "" {
				b.WriteString("\n")
				writeIndented(b, noHTML(rest)+"\n", "  ")
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("\n")
}

// line is event i as one timeline entry.
func (r *record) line(i int) string {
	ev := &r.events[i]
	switch ev.Kind {
	case runbook.EventSessionStarted:
		s := ev.Started
		verb := "Session started"
		if ev != r.started {
			verb = "Session resumed"
		}
		out := verb
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
	case runbook.EventProbeRan:
		p := ev.Probe
		verb := "Ran"
		if p.Rerun {
			verb = "Re-ran"
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
		if ev.Note.Step != "" {
			out += " at " + code(ev.Note.Step)
		}
		return out + ": " + text(noteFirst(ev.Note.Text))
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

func (r *record) symptoms(b *strings.Builder) {
	b.WriteString("## Symptoms\n\n")
	n := 0
	if s := r.symptom(); s != "" {
		fmt.Fprintf(b, "- Reported: %s\n", s)
		n++
	}
	for _, ev := range r.events {
		if ev.Kind != runbook.EventProbeRan || ev.Probe.Rerun {
			continue
		}
		if p := ev.Probe; p.Status == probes.StatusFail || p.Status == probes.StatusWarn {
			fmt.Fprintf(b, "- **%s** %s: %s\n", p.Status, code(p.Probe), text(p.Summary))
			n++
		}
	}
	if n == 0 {
		b.WriteString("No symptom was recorded and no check failed.\n")
	}
	b.WriteString("\n")
}

// ruledOut lists the causes the on-call ruled out, the causes whose checks
// passed without the session finding them, and the other passing checks.
func (r *record) ruledOut(b *strings.Builder) {
	b.WriteString("## What we ruled out\n\n")
	n := 0
	seen := map[string]bool{}
	for _, ev := range r.events {
		if ev.Kind != runbook.EventHypothesis {
			continue
		}
		c := ev.Hypothesis.Cause
		if h := r.verdicts[c]; h.Verdict == runbook.VerdictRuledOut && !seen[c] {
			seen[c] = true
			fmt.Fprintf(b, "- %s: ruled out by the on-call", code(c))
			if h.Why != "" {
				fmt.Fprintf(b, " — %s", text(h.Why))
			}
			b.WriteString("\n")
			n++
		}
	}
	for _, ev := range r.events {
		if ev.Kind != runbook.EventProbeRan || ev.Probe.Rerun || ev.Probe.Status != probes.StatusPass {
			continue
		}
		p := ev.Probe
		var causes []string
		for _, c := range p.Causes {
			if !seen[c] && !r.foundSet[c] {
				seen[c] = true
				causes = append(causes, c)
			}
		}
		switch {
		case len(causes) > 0:
			fmt.Fprintf(b, "- %s: %s passed — %s\n", codeList(causes), code(p.Probe), text(p.Summary))
			n++
		case len(p.Causes) == 0:
			fmt.Fprintf(b, "- %s passed — %s\n", code(p.Probe), text(p.Summary))
			n++
		}
	}
	if n == 0 {
		b.WriteString("Nothing was ruled out.\n")
	}
	b.WriteString("\n")
}

// notChecked lists what the session could not see: a probe that errored or
// was skipped, a rule that could not decide. An unchecked cause is not a
// ruled-out cause, and the postmortem should say so.
func (r *record) notChecked(b *strings.Builder) {
	var lines []string
	for _, ev := range r.events {
		switch {
		case ev.Kind == runbook.EventProbeRan && (ev.Probe.Status == probes.StatusError || ev.Probe.Status == probes.StatusSkipped):
			p := ev.Probe
			line := fmt.Sprintf("- %s **%s**: %s", code(p.Probe), p.Status, text(p.Summary))
			if len(p.Causes) > 0 {
				line += " (so not ruled out: " + codeList(p.Causes) + ")"
			}
			lines = append(lines, line)
		case ev.Kind == runbook.EventRuleSkipped:
			s := ev.Skipped
			lines = append(lines, fmt.Sprintf("- rule at %s [when %s]: %s", code(s.Step), code(s.When), text(skipWhy(s.Why))))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## Could not check\n\n")
	b.WriteString(strings.Join(dedupe(lines), "\n"))
	b.WriteString("\n\n")
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
		var evidence []string
		for i, ev := range r.events {
			if ev.Kind != runbook.EventBranchTaken || !ev.Branch.IsCause || ev.Branch.To != c {
				continue
			}
			br := ev.Branch
			line := fmt.Sprintf("- At %s UTC from %s (%s)", ev.Time.UTC().Format("15:04"), code(br.From), text(br.ChosenBy))
			if br.Reason != "" {
				line += ": " + text(br.Reason)
			}
			if br.When != "" {
				line += " [when " + code(br.When) + "]"
			}
			b.WriteString(line + "\n")
			if p := r.lastRunOf(br.From, i); p != nil {
				evidence = append(evidence, evidenceBlock(p))
			}
		}
		if !r.foundByBranch(c) && r.ended != nil && contains(r.ended.Ended.Findings, c) {
			b.WriteString("- Reported as a finding when the session ended.\n")
		}
		for _, e := range dedupe(evidence) {
			b.WriteString(e)
		}
		if len(evidence) == 0 {
			b.WriteString("\n")
		}
	}
}

func (r *record) has(kind runbook.EventKind) bool {
	for _, ev := range r.events {
		if ev.Kind == kind {
			return true
		}
	}
	return false
}

func (r *record) foundByBranch(c string) bool {
	for _, ev := range r.events {
		if ev.Kind == runbook.EventBranchTaken && ev.Branch.IsCause && ev.Branch.To == c {
			return true
		}
	}
	return false
}

// lastRunOf is the latest run of step before event index before.
func (r *record) lastRunOf(step string, before int) *runbook.ProbeRan {
	for i := before - 1; i >= 0; i-- {
		if ev := r.events[i]; ev.Kind == runbook.EventProbeRan && ev.Probe.Step == step {
			return ev.Probe
		}
	}
	return nil
}

func (r *record) fix(b *strings.Builder) {
	b.WriteString("## The fix\n\n")
	var fixes, changes []string
	for _, ev := range r.events {
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
	b.WriteString("\n")
}

func (r *record) verification(b *strings.Builder) {
	b.WriteString("## Verification\n\n")
	n := 0
	for _, ev := range r.events {
		if ev.Kind == runbook.EventVerification {
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
