package runbook_test

import (
	"testing"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/runbooktest"
)

var (
	healthy        = runbooktest.Healthy
	with           = runbooktest.With
	newRecorded    = runbooktest.NewRecorded
	newClock       = runbooktest.NewClock
	causeIDs       = runbooktest.CauseIDs
	ambientHealthy = runbooktest.AmbientHealthy
	testTarget     = runbooktest.Target
)

type memSink = runbooktest.Sink

func newSession(t *testing.T, g *runbook.Graph, r *runbooktest.Recorded, mode runbook.Mode, sinks ...runbook.Sink) *runbook.Session {
	t.Helper()
	s, err := runbook.NewSession(runbook.Config{
		Graph: g, Target: testTarget, Probes: probes.ByID(), Run: r.Run,
		Clock: newClock().Now, User: "oncall", Mode: mode, SessionID: "test-session", Sinks: sinks,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
