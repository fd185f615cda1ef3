package screen

import "unicode/utf8"

// Readers that follow the text log as it grows (the orchestrator's text
// and regex waits) address it by absolute offset: TextStart says where
// the text after a revision begins, AppendTextFrom hands out what was
// logged from an offset on, so each turn reads only the new text.

// TextStart returns the text-log offset at which the text of the output
// applied after revision rev begins. If that text is no longer all kept
// (rev is older than the kept revisions, or its text was trimmed from the
// bounded log), off is the oldest offset whose text is known to come
// after rev and complete is false. rev newer than the current revision is
// an ErrFutureRevision error.
func (s *Screen) TextStart(rev uint64) (off uint64, complete bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev > s.rev {
		return 0, false, &RevisionError{Requested: rev, Oldest: s.hist.oldest(s.rev), Current: s.rev, Err: ErrFutureRevision}
	}
	complete = true
	if oldest := s.hist.oldest(s.rev); rev < oldest {
		// Every revision after the oldest kept one came after rev.
		rev, complete = oldest, false
	}
	off = s.text.end()
	if rev < s.rev {
		off = s.hist.entry(rev + 1).textStart
	}
	if off < s.text.start {
		off, complete = s.text.start, false
	}
	return off, complete, nil
}

// AppendTextFrom appends the text logged from offset off to the end of
// the log to dst (as TextSince: plain text, invalid UTF-8 as U+FFFD) and
// returns it with the offset of the end, to pass as off next time. If the
// log no longer holds off, the text starts at the oldest byte it holds,
// whose offset is from (from > off); otherwise from is off. first says
// this read starts a text, as TextSince's does: a partial rune at its
// start is skipped.
func (s *Screen) AppendTextFrom(dst []byte, off uint64, first bool) (out []byte, from, end uint64) {
	return s.AppendTextRange(dst, off, ^uint64(0), first)
}

// AppendTextRange is AppendTextFrom that stops at offset to (or the end
// of the log, if that comes first; before the rune to would cut): a reader that must know where in the
// text a given offset falls (the position of an input) reads up to it,
// then on from it.
func (s *Screen) AppendTextRange(dst []byte, off, to uint64, first bool) (out []byte, from, end uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from = max(off, s.text.start)
	end = min(s.text.end(), max(to, from))
	// Not inside a rune: a range ends before the rune that to cuts.
	for k := 0; k < utf8.UTFMax-1 && end > from && end < s.text.end() && !utf8.RuneStart(s.text.buf[end-s.text.start]); k++ {
		end--
	}
	if from >= end {
		return dst, from, end
	}
	b := s.text.buf[from-s.text.start : end-s.text.start]
	if from > off || first {
		// The bound may have cut a rune: skip a leading partial one.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	if utf8.Valid(b) {
		return append(dst, b...), from, end
	}
	// A run of invalid bytes that began before off was replaced then.
	inRun := false
	if from == off && from > s.text.start {
		r, size := utf8.DecodeLastRune(s.text.buf[:from-s.text.start])
		inRun = r == utf8.RuneError && size == 1
	}
	return appendValidUTF8(dst, b, inRun), from, end
}

// appendValidUTF8 appends b with each run of invalid bytes replaced by
// U+FFFD, as strings.ToValidUTF8 does; invalid says a run is already
// under way (its U+FFFD was appended before).
func appendValidUTF8(dst, b []byte, invalid bool) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			if !invalid {
				dst = append(dst, "\uFFFD"...)
				invalid = true
			}
			b = b[1:]
			continue
		}
		invalid = false
		dst = append(dst, b[:size]...)
		b = b[size:]
	}
	return dst
}
