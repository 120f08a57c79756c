package incidentlog

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/runbook"
)

func lines(t *testing.T, events ...runbook.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range events {
		line, err := marshalLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(line))
	}
	return out
}

func TestReadTruncatedLastLine(t *testing.T) {
	l := lines(t, noteEvent(0, "one"), noteEvent(1, "two"), noteEvent(2, "three"))
	// The process died while writing the third line.
	log := l[0] + l[1] + l[2][:len(l[2])/2]
	events, problems := Read(strings.NewReader(log))
	if len(events) != 2 || events[0].Note.Text != "one" || events[1].Note.Text != "two" {
		t.Errorf("events = %+v", events)
	}
	if len(problems) != 1 || problems[0].String() != "line 3: truncated, skipped" {
		t.Errorf("problems = %v", problems)
	}
}

func TestReadCompleteLastLineWithoutNewline(t *testing.T) {
	l := lines(t, noteEvent(0, "one"), noteEvent(1, "two"))
	events, problems := Read(strings.NewReader(l[0] + strings.TrimSuffix(l[1], "\n")))
	if len(events) != 2 || len(problems) != 0 {
		t.Errorf("events %d, problems %v", len(events), problems)
	}
}

func TestReadSkipsCorruptLinesAnywhere(t *testing.T) {
	l := lines(t, noteEvent(0, "one"), noteEvent(1, "two"), noteEvent(2, "three"))
	log := l[0] +
		"\x00\x00\x00 garbage from a bad disk\n" +
		l[1] +
		"\n" + // a blank line loses nothing and is not a problem
		`{"ts":"2026-12-02T03:04:05Z","kind":"probe_ran","session":"s1"}` + "\n" +
		`["not","an","event"]` + "\n" +
		`{"ts":"2026-12-02T03:04:05Z","session":"s1"}` + "\n" +
		l[2]
	events, problems := Read(strings.NewReader(log))
	var texts []string
	for _, ev := range events {
		texts = append(texts, ev.Note.Text)
	}
	if strings.Join(texts, ",") != "one,two,three" {
		t.Errorf("events = %v", texts)
	}
	want := []string{
		"line 2: corrupt (invalid character '\\x00' looking for beginning of value), skipped",
		`line 5: probe_ran event without its "probe" payload, skipped`,
		"line 6: not an event (json: cannot unmarshal array into Go value of type runbook.Event), skipped",
		"line 7: not an event (no kind), skipped",
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A line far longer than any buffer (a config_dump excerpt) still parses.
func TestReadLongLine(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	l := lines(t, noteEvent(0, big), noteEvent(1, "after"))
	events, problems := Read(strings.NewReader(l[0] + l[1]))
	if len(problems) > 0 || len(events) != 2 || len(events[0].Note.Text) != len(big) {
		t.Errorf("events %d, problems %v", len(events), problems)
	}
}

type failingReader struct {
	data io.Reader
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.data.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errors.New("read /mnt/usb/log.jsonl: input/output error")
	}
	return n, err
}

func TestReadErrorKeepsWhatWasRead(t *testing.T) {
	l := lines(t, noteEvent(0, "one"), noteEvent(1, "two"))
	events, problems := Read(&failingReader{bytes.NewReader([]byte(l[0] + l[1]))})
	if len(events) != 2 {
		t.Errorf("events = %d", len(events))
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Msg, "input/output error") {
		t.Errorf("problems = %v", problems)
	}
}
