package probes

import "testing"

// Every shape a probe's summary takes, from the one rule.
func TestVerdictProblemsFailWarningsWarnElsePass(t *testing.T) {
	p, w := []string{"p1", "p2"}, []string{"w1", "w2"}
	for _, c := range []struct {
		name    string
		v       verdict
		status  Status
		summary string
	}{
		{"problems", verdict{Head: "h", Problems: p, Warnings: w}, StatusFail, "h; p1; p2"},
		{"problems then warnings", verdict{Head: "h", Problems: p, Warnings: w, FailWithWarnings: true}, StatusFail, "h; p1; p2; w1; w2"},
		{"problems alone", verdict{Head: "h", Problems: p, Warnings: w, FailWithWarnings: true, FailWithoutHead: true}, StatusFail, "p1; p2; w1; w2"},
		{"warnings", verdict{Head: "h", Warnings: w, Pass: "fine"}, StatusWarn, "h; w1; w2"},
		{"warnings by comma", verdict{Head: "h", Warnings: w, WarnSep: ", "}, StatusWarn, "h, w1, w2"},
		{"pass", verdict{Head: "h"}, StatusPass, "h"},
		{"pass of its own", verdict{Head: "h", Pass: "h: all fine"}, StatusPass, "h: all fine"},
	} {
		status, summary := c.v.judge()
		if status != c.status || summary != c.summary {
			t.Errorf("%s: %s %q, want %s %q", c.name, status, summary, c.status, c.summary)
		}
	}
	// The caller's slices stay as they were.
	verdict{Head: "h", Problems: p[:1], Warnings: w, FailWithWarnings: true}.judge()
	if p[1] != "p2" {
		t.Errorf("Judge wrote into the problems: %q", p)
	}
}
