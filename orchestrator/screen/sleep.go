package screen

// Sleep releases the emulator (the largest part of a Screen's memory) for a
// pane nobody observes. The published state (rows, cursor, modes, title,
// revision and history) stays readable; Write then only logs text and
// returns ErrNeedReseed, and the next Seed builds a fresh emulator.
func (s *Screen) Sleep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.t.emu == nil {
		return
	}
	s.t.stop()
	s.t = &term{poisoned: true} // no emulator until the next Seed
}

// Asleep reports whether the Screen has no emulator (after Sleep, until
// the next Seed).
func (s *Screen) Asleep() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && s.t.emu == nil
}
