package tui

import (
	"slices"
	"testing"

	"github.com/meshtriage/meshtriage/tui/checklist"
	"github.com/meshtriage/meshtriage/tui/engine"
)

// o opens the root cause the runbook reached, not an unexplained/ finding
// a probe reported before it: on a loaded machine the access log's
// unexplained line came first and o opened it (circuit-breaker-template).
func TestOOpensTheCauseBeforeAnUnexplainedFinding(t *testing.T) {
	m := &Model{}
	m.snap.findings = []engine.Finding{
		{Cause: "unexplained/access-log"},
		{Cause: "circuit-breaker.template"},
		{Cause: "unexplained/ztunnel"},
		{Cause: "outlier.all-ejected"},
	}
	want := []string{"circuit-breaker.template", "outlier.all-ejected", "unexplained/access-log", "unexplained/ztunnel"}
	if got := m.foundCauses(); !slices.Equal(got, want) {
		t.Errorf("found causes %v, want %v", got, want)
	}
	if got := m.currentCause(checklist.Row{}, false); got != "circuit-breaker.template" {
		t.Errorf("o opens %q, want circuit-breaker.template", got)
	}
}
