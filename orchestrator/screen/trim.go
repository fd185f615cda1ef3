package screen

// TrimMemory gives back what a burst of output left over in the text
// log: the bytes beyond its TextLog bound that its batched trim lets
// accumulate (up to a quarter more) and the spare capacity append's
// doubling left. The last TextLog bytes are kept, as always. The pump
// calls it when the node's output has gone quiet.
func (s *Screen) TrimMemory() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text.clip()
}

// clip drops what is over max and reallocates the log at its length when
// that drops anything or gives back at least 64 KiB of capacity (a slice
// cut at the front would keep the whole array).
func (l *textLog) clip() {
	drop := max(0, len(l.buf)-l.max)
	if drop == 0 && cap(l.buf)-len(l.buf) < 64<<10 {
		return
	}
	kept := make([]byte, len(l.buf)-drop)
	copy(kept, l.buf[drop:])
	l.buf = kept
	l.start += uint64(drop)
}
