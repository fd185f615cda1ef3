package screen

// Mark starts a new revision with no changed rows and returns it. The
// application-log follower uses it so that a capture cursor also orders
// log lines that arrived while the screen did not change (see
// orchestrator/applog). Waiters wake as for any revision.
func (s *Screen) Mark() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.rev
	}
	s.bump(s.text.end())
	return s.rev
}
