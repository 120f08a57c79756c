package runbook_test

import (
	"testing"

	"github.com/meshtriage/meshtriage/runbook"
)

func TestRecordActionReachesTheLogEvenAfterEnd(t *testing.T) {
	sink := &memSink{}
	s := newSession(t, load503(t), newRecorded(healthy()), runbook.ModeGuided, sink)
	if err := s.Start("callers-see-503"); err != nil {
		t.Fatal(err)
	}
	s.RecordAction(runbook.Action{Name: "envoy-debug-logging", Target: "web/web-1", Done: "connection=debug", Undo: "istioctl ..."})
	s.End("quit")
	s.RecordAction(runbook.Action{Name: "envoy-debug-logging", Target: "web/web-1", Done: "restored connection=info", Reverted: true, Output: "line 1\n"})
	var actions []runbook.Action
	for _, ev := range sink.Events() {
		if ev.Kind == runbook.EventAction {
			if ev.Action == nil || ev.Session != "test-session" {
				t.Fatalf("malformed action event %+v", ev)
			}
			actions = append(actions, *ev.Action)
		}
	}
	if len(actions) != 2 || actions[0].Reverted || !actions[1].Reverted || actions[1].Output != "line 1\n" {
		t.Errorf("actions = %+v", actions)
	}
}
