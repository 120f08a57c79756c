package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/runbook"
)

// Markdown writes r for a ticket or the incident channel.
func Markdown(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# meshtriage check: %s\n\n", r.Target)
	if r.Interrupted {
		b.WriteString("> **Interrupted** before every check reported: this is what had finished.\n\n")
	}
	fmt.Fprintf(&b, "Runbook `%s`: %s.\n", r.Runbook, outcome(r))
	if len(r.Unread) > 0 {
		b.WriteString("\nWhat would settle the open hypotheses, the checks that could not read what they need:\n\n")
		for _, u := range r.Unread {
			fmt.Fprintf(&b, "- %s\n", u)
		}
	}
	if r.CallerSearch != nil {
		fmt.Fprintf(&b, "\nNo caller was named (--from): %s.\n", callerSearchLine(*r.CallerSearch))
		for _, p := range r.CallerSearch.Problems {
			fmt.Fprintf(&b, "- could not read: %s\n", p)
		}
	}
	for i, f := range r.Findings {
		fmt.Fprintf(&b, "\n## %d. `%s`: %s\n\n", i+1, f.Cause, f.Title)
		fmt.Fprintf(&b, "Confidence **%s**", f.Confidence)
		if f.Severity == runbook.SeverityWarning {
			b.WriteString(", severity **warning** (reported, not a root cause by itself)")
		}
		b.WriteString(".")
		if len(f.ConsequenceOf) > 0 {
			fmt.Fprintf(&b, " A consequence of %s: fix that first.", mdCodes(f.ConsequenceOf))
		}
		fmt.Fprintf(&b, "\n\n%s\n", f.Summary)
		if r.CallerSearch != nil {
			fmt.Fprintf(&b, "\nHolds %s.\n", holdsFor(f))
		}

		b.WriteString("\n### Evidence\n\n")
		for _, e := range f.Evidence {
			fmt.Fprintf(&b, "- **%s** (%s): %s\n", e.Step, e.Confidence, e.Reason)
			fmt.Fprintf(&b, "  - rule: `%s`\n", e.When)
			if len(e.Facts) > 0 {
				fmt.Fprintf(&b, "  - facts: %s\n", mdFacts(e.Facts))
			}
			for _, p := range e.Probes {
				fmt.Fprintf(&b, "  - %s %s: %s\n", p.Probe, p.Status, p.Summary)
			}
			if e.Weakened != "" {
				fmt.Fprintf(&b, "  - weakened: %s\n", e.Weakened)
			}
			for _, c := range e.Confirmed {
				fmt.Fprintf(&b, "  - confirmed by: %s\n", c)
			}
			for _, m := range e.Missing {
				fmt.Fprintf(&b, "  - would confirm, could not be read: %s (%s)\n", m.Describe, m.Why)
				for _, c := range m.Commands {
					fmt.Fprintf(&b, "    - `%s`\n", c)
				}
			}
		}

		b.WriteString("\n### Fix directions\n")
		for _, d := range f.Fix.Directions {
			fmt.Fprintf(&b, "\n#### %s (`%s`)\n\n%s\n", d.Title, d.ID, d.Text)
			if len(d.Patches) > 0 {
				fmt.Fprintf(&b, "\nPatch, in this order (%s):\n\n```sh\n%s\n```\n", simulationLine(d), strings.Join(runbook.Commands(d.Patches), "\n"))
			}
			if d.Unpatchable != "" {
				fmt.Fprintf(&b, "\nNo patch: %s\n", d.Unpatchable)
			}
			for _, y := range d.YAML {
				fmt.Fprintf(&b, "\n```yaml\n%s\n```\n", strings.TrimRight(y, "\n"))
			}
			if len(d.Commands) > 0 {
				fmt.Fprintf(&b, "\n```sh\n%s\n```\n", strings.Join(d.Commands, "\n"))
			}
			mdList(&b, "Trade-offs", d.Tradeoffs)
			mdList(&b, "Security", d.Security)
		}

		b.WriteString("\n### Verify\n\n")
		for _, v := range f.Verify {
			switch {
			case v.Probe != "":
				fmt.Fprintf(&b, "- [ ] %s: re-run `%s`, expect `%s`\n", v.Describe, v.Probe, v.Expect)
			default:
				fmt.Fprintf(&b, "- [ ] %s: `%s`\n", v.Describe, v.Command)
			}
		}
		if len(f.Fix.Warnings) > 0 {
			b.WriteString("\n### Things that make it worse\n\n")
			for _, wn := range f.Fix.Warnings {
				fmt.Fprintf(&b, "- **%s.** %s\n", wn.Title, wn.Text)
			}
		}
	}
	if len(r.Hypotheses) > 0 {
		b.WriteString("\n## Hypotheses\n\nCauses the evidence could neither confirm nor rule out, because it could not be read; most likely first, each with what would settle it.\n\n")
		for i, h := range r.Hypotheses {
			fmt.Fprintf(&b, "%d. `%s`: %s (%s). Needs %s: %s\n", i+1, h.Cause, h.Title, h.Confidence, strings.Join(h.Unknown, ", "), h.Why)
			for _, c := range h.Settle {
				fmt.Fprintf(&b, "   - `%s`\n", c)
			}
		}
	}
	b.WriteString("\n## Steps\n\n| step | verdict | probe | status | summary | ms |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d |\n", stepName(s), s.Verdict, s.Probe, s.Status, mdCell(s.Summary), s.DurationMS)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdList(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", title)
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", it)
	}
}

func mdFacts(facts map[string]any) string {
	parts := factPairs(facts)
	for i, p := range parts {
		parts[i] = "`" + p + "`"
	}
	return strings.Join(parts, ", ")
}

func mdCodes(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "`" + id + "`"
	}
	return strings.Join(out, ", ")
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// Text writes r for a terminal: findings first, then the steps.
func Text(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "meshtriage check: %s\n", r.Target)
	if r.Interrupted {
		b.WriteString("INTERRUPTED before every check reported: this is what had finished\n")
	}
	fmt.Fprintf(&b, "runbook %s: %s\n", r.Runbook, outcome(r))
	if len(r.Unread) > 0 {
		b.WriteString("what would settle the open hypotheses (checks that could not read what they need):\n")
		for _, u := range r.Unread {
			fmt.Fprintf(&b, "  - %s\n", u)
		}
	}
	if r.CallerSearch != nil {
		fmt.Fprintf(&b, "no caller named (--from): %s\n", callerSearchLine(*r.CallerSearch))
		for _, p := range r.CallerSearch.Problems {
			fmt.Fprintf(&b, "  could not read: %s\n", p)
		}
	}
	for i, f := range r.Findings {
		sev := ""
		if f.Severity == runbook.SeverityWarning {
			sev = ", warning"
		}
		if f.Cause == runbook.Unexplained {
			fmt.Fprintf(&b, "\nFINDING %d  unexplained failure of step %s\n", i+1, f.Step)
		} else {
			fmt.Fprintf(&b, "\nFINDING %d  %s  (%s confidence%s)\n", i+1, f.Cause, f.Confidence, sev)
		}
		fmt.Fprintf(&b, "  %s\n", f.Title)
		if len(f.ConsequenceOf) > 0 {
			fmt.Fprintf(&b, "  a consequence of %s: fix that first\n", strings.Join(f.ConsequenceOf, ", "))
		}
		fmt.Fprintf(&b, "  %s\n", f.Summary)
		if r.CallerSearch != nil {
			fmt.Fprintf(&b, "  holds %s\n", holdsFor(f))
		}
		b.WriteString("  evidence:\n")
		for _, e := range f.Evidence {
			fmt.Fprintf(&b, "    - %s: %s\n", e.Step, e.Reason)
			if len(e.Facts) > 0 {
				fmt.Fprintf(&b, "      %s\n", strings.Join(factPairs(e.Facts), " "))
			}
			for _, p := range e.Probes {
				fmt.Fprintf(&b, "      %s %s: %s\n", p.Probe, p.Status, p.Summary)
			}
			if e.Weakened != "" {
				fmt.Fprintf(&b, "      weakened: %s\n", e.Weakened)
			}
			for _, c := range e.Confirmed {
				fmt.Fprintf(&b, "      confirmed by: %s\n", c)
			}
			for _, m := range e.Missing {
				fmt.Fprintf(&b, "      would confirm, could not be read: %s\n", m.Describe)
				for _, c := range m.Commands {
					fmt.Fprintf(&b, "        $ %s\n", c)
				}
			}
		}
		b.WriteString("  fix directions:\n")
		for _, d := range f.Fix.Directions {
			fmt.Fprintf(&b, "    * %s [%s]\n", d.Title, d.ID)
			fmt.Fprintf(&b, "      %s\n", d.Text)
			if len(d.Patches) > 0 {
				fmt.Fprintf(&b, "      patch (%s):\n", simulationLine(d))
				for _, c := range runbook.Commands(d.Patches) {
					fmt.Fprintf(&b, "      $ %s\n", strings.ReplaceAll(c, "\n", "\n        "))
				}
			}
			if d.Unpatchable != "" {
				fmt.Fprintf(&b, "      no patch: %s\n", d.Unpatchable)
			}
			for _, c := range d.Commands {
				fmt.Fprintf(&b, "      $ %s\n", c)
			}
			for _, t := range d.Tradeoffs {
				fmt.Fprintf(&b, "      trade-off: %s\n", t)
			}
			for _, s := range d.Security {
				fmt.Fprintf(&b, "      security: %s\n", s)
			}
		}
		b.WriteString("  verify:\n")
		for _, v := range f.Verify {
			if v.Probe != "" {
				fmt.Fprintf(&b, "    [ ] %s (%s: %s)\n", v.Describe, v.Probe, v.Expect)
			} else {
				fmt.Fprintf(&b, "    [ ] %s\n        $ %s\n", v.Describe, v.Command)
			}
		}
		if len(f.Fix.Warnings) > 0 {
			b.WriteString("  things that make it worse:\n")
			for _, wn := range f.Fix.Warnings {
				fmt.Fprintf(&b, "    ! %s\n", wn.Title)
			}
		}
	}
	if len(r.Hypotheses) > 0 {
		b.WriteString("\nHYPOTHESES (evidence could not be read: neither confirmed nor ruled out; most likely first)\n")
		for i, h := range r.Hypotheses {
			fmt.Fprintf(&b, "  %d. %s (%s): %s\n     needs %s: %s\n", i+1, h.Cause, h.Confidence, h.Title, strings.Join(h.Unknown, ", "), h.Why)
			for _, c := range h.Settle {
				fmt.Fprintf(&b, "     $ %s\n", c)
			}
		}
	}
	b.WriteString("\nSTEPS\n")
	idw := 0
	for _, s := range r.Steps {
		idw = max(idw, len(s.ID))
	}
	for _, s := range r.Steps {
		summary := s.Summary
		if s.Probe != s.ID {
			summary = "[" + s.Probe + "] " + summary
		}
		if s.Caller != "" {
			summary = "(from " + s.Caller + ") " + summary
		}
		fmt.Fprintf(&b, "  %-11s %-7s %-*s  %5dms  %s\n", s.Verdict, s.Status, idw, s.ID, s.DurationMS, summary)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// callerSearchLine says who the caller search read, and where it looked.
func callerSearchLine(cs callersearch.Result) string {
	line := callersReadLine(cs)
	if note, first := cs.RemoteNote(); first {
		return note + "; " + line
	} else if note != "" {
		return line + "; " + note
	}
	return line
}

func callersReadLine(cs callersearch.Result) string {
	if len(cs.Callers) == 0 {
		where := ""
		if len(cs.Remote) > 0 {
			where = " in the current cluster"
		}
		return "no caller found" + where + " (searched " + strings.Join(cs.Searched, "; ") + "): Envoy checks ran from the service side only"
	}
	names := make([]string, len(cs.Callers))
	for i, c := range cs.Callers {
		names[i] = c.Pod.String() + " (" + c.Why + ")"
	}
	line := fmt.Sprintf("triaged from the service side and from %d caller(s) found: %s", len(cs.Callers), strings.Join(names, "; "))
	if n := len(cs.Others); n > 0 {
		line += fmt.Sprintf("; %d more candidate(s) not read (--max-callers)", n)
	}
	return line
}

// holdsFor says whom a finding of a check without --from holds for.
func holdsFor(f Finding) string {
	switch {
	case f.ServiceSide && len(f.Callers) > 0:
		return "from the service side and from " + strings.Join(f.Callers, ", ")
	case f.ServiceSide:
		return "from the service side (whoever calls)"
	case len(f.Callers) > 0:
		return "for callers " + strings.Join(f.Callers, ", ")
	}
	return "for no caller read"
}

func stepName(s Step) string {
	if s.Caller == "" {
		return s.ID
	}
	return s.ID + " (from " + s.Caller + ")"
}

// outcome is the run's verdict in words: "no finding" only when the path
// was judged.
func outcome(r Report) string {
	if r.Verdict == VerdictUndecided {
		if len(r.Hypotheses) == 0 {
			return fmt.Sprintf("no finding, but the path could not be judged: no caller was read, and %d %s only a caller's proxy produces could not be checked",
				len(r.CallerNeeded), map[bool]string{true: "cause", false: "causes"}[len(r.CallerNeeded) == 1])
		}
		return fmt.Sprintf("no finding, but the path could not be judged: %d open %s below",
			len(r.Hypotheses), map[bool]string{true: "hypothesis", false: "hypotheses"}[len(r.Hypotheses) == 1])
	}
	return countFindings(len(r.Findings))
}

func countFindings(n int) string {
	switch n {
	case 0:
		return "no finding"
	case 1:
		return "1 finding"
	}
	return fmt.Sprintf("%d findings", n)
}

func factPairs(facts map[string]any) []string {
	parts := make([]string, 0, len(facts))
	for k, v := range facts {
		parts = append(parts, k+"="+runbook.FormatValue(v))
	}
	sort.Strings(parts)
	return parts
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// simulationLine says what the simulation found, or that there was none.
func simulationLine(d runbook.Fix) string {
	if d.Simulation == nil {
		return "not simulated"
	}
	return d.Simulation.Summary
}
