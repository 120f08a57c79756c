package incidentlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/meshtriage/meshtriage/runbook"
)

// Problem is a line of the log that could not be used. Reading goes on past
// it: an incident record with one event missing beats none.
type Problem struct {
	Line int    `json:"line"` // 1-based; 0 when the problem is not one line's
	Msg  string `json:"problem"`
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.Msg
	}
	return fmt.Sprintf("line %d: %s", p.Line, p.Msg)
}

// Read parses an incident log. It never fails: a truncated last line (the
// process died mid-write), a corrupt line anywhere, an event whose payload
// does not match its kind, or a read error all become Problems and the
// events around them are kept.
func Read(r io.Reader) ([]runbook.Event, []Problem) {
	var (
		events   []runbook.Event
		problems []Problem
	)
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		// ReadBytes, unlike a Scanner, has no line-length limit: one event
		// can carry a large evidence excerpt.
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 { // a blank line loses no event
			complete := line[len(line)-1] == '\n'
			if ev, msg := parseLine(line); msg == "" {
				events = append(events, ev)
			} else {
				if !complete {
					msg = "truncated"
				}
				problems = append(problems, Problem{Line: n, Msg: msg + ", skipped"})
			}
		}
		if errors.Is(err, io.EOF) {
			return events, problems
		}
		if err != nil {
			problems = append(problems, Problem{Line: n, Msg: "read error: " + err.Error() + "; the rest of the log is missing"})
			return events, problems
		}
	}
}

// parseLine decodes one line; msg says why it is unusable.
func parseLine(line []byte) (ev runbook.Event, msg string) {
	if err := json.Unmarshal(bytes.TrimSpace(line), &ev); err != nil {
		var syntax *json.SyntaxError
		switch {
		case errors.As(err, &syntax) && strings.Contains(err.Error(), "unexpected end of JSON input"):
			// A write torn by a crash, followed by a later session's events.
			return ev, "truncated"
		case errors.As(err, &syntax):
			return ev, "corrupt (" + err.Error() + ")"
		}
		return ev, "not an event (" + err.Error() + ")"
	}
	if ev.Kind == "" {
		return ev, "not an event (no kind)"
	}
	if missing := missingPayload(ev); missing != "" {
		return ev, fmt.Sprintf("%s event without its %q payload", ev.Kind, missing)
	}
	return ev, ""
}

// missingPayload names the payload field a known kind requires but lacks,
// so the renderer can trust that a probe_ran event has a Probe. Unknown
// kinds (a newer writer) are kept; the renderer lists them plainly.
func missingPayload(ev runbook.Event) string {
	var ok bool
	var field string
	switch ev.Kind {
	case runbook.EventSessionStarted:
		ok, field = ev.Started != nil, "started"
	case runbook.EventProbeRan:
		ok, field = ev.Probe != nil, "probe"
	case runbook.EventBranchTaken:
		ok, field = ev.Branch != nil, "branch"
	case runbook.EventNote:
		ok, field = ev.Note != nil, "note"
	case runbook.EventHypothesis:
		ok, field = ev.Hypothesis != nil, "hypothesis"
	case runbook.EventFixChosen:
		ok, field = ev.Fix != nil, "fix"
	case runbook.EventVerification:
		ok, field = ev.Verification != nil, "verification"
	case runbook.EventAction:
		ok, field = ev.Action != nil, "action"
	case runbook.EventSessionEnded:
		ok, field = ev.Ended != nil, "ended"
	case runbook.EventRuleSkipped:
		ok, field = ev.Skipped != nil, "skipped"
	default:
		return ""
	}
	if ok {
		return ""
	}
	return field
}
