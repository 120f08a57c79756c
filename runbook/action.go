package runbook

// RecordAction records an explicit, confirmed change to the cluster (or a
// test request) and its undo in the session's event stream, so the incident
// log says what was done and whether it was reverted. Actions after End are
// still recorded: a revert on the way out must not go missing.
func (s *Session) RecordAction(a Action) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit(Event{Kind: EventAction, Action: &a})
}
