package screen

// LogText appends output to the text log without applying it to the
// emulator, for output the caller skips (a backlog it replaces with a
// reseed): text waits still see it. It bumps the revision if text was
// added.
func (s *Screen) LogText(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(p) == 0 {
		return
	}
	start := s.text.end()
	if s.text.write(p) {
		s.bump(start)
	}
}
