package screen

import (
	"strings"
	"unicode/utf8"
)

// stripper turns a terminal output byte stream into plain text: escape
// sequences (CSI, OSC, DCS, SOS, PM, APC, two-byte ESC) are removed, CR, LF
// and CR LF become "\n", tab is kept, other controls are dropped and UTF-8 is
// kept. Its state survives between writes, so sequences and runes split
// across writes are handled. A rune still incomplete at the end of a write is
// held back, so the text of each revision ends on a rune boundary.
type stripper struct {
	state   stripState
	cr      bool    // a CR was seen and not yet emitted
	pend    [4]byte // bytes of an incomplete UTF-8 rune
	npend   int
	needLen int // total length of the pending rune
}

type stripState uint8

const (
	stGround    stripState = iota
	stEsc                  // after ESC
	stEscInter             // ESC followed by intermediates
	stCSI                  // inside CSI
	stString               // inside OSC/DCS/SOS/PM/APC
	stStringEsc            // ESC inside a string (maybe ST)
)

func (s *stripper) reset() { *s = stripper{} }

// flushPend emits an incomplete rune as is (it becomes U+FFFD on output).
func (s *stripper) flushPend(dst []byte) []byte {
	if s.npend > 0 {
		dst = append(dst, s.pend[:s.npend]...)
		s.npend, s.needLen = 0, 0
	}
	return dst
}

// text emits a text byte, first emitting a pending CR as a newline.
func (s *stripper) text(dst []byte, b byte) []byte {
	if s.cr {
		dst = append(dst, '\n')
		s.cr = false
	}
	if b < 0x80 {
		dst = s.flushPend(dst)
		return append(dst, b)
	}
	if b >= 0xC0 { // a lead byte
		dst = s.flushPend(dst)
		n := 0
		switch {
		case b < 0xE0:
			n = 2
		case b < 0xF0:
			n = 3
		case b < 0xF8:
			n = 4
		default:
			return append(dst, b) // invalid: pass through
		}
		s.pend[0], s.npend, s.needLen = b, 1, n
		return dst
	}
	// continuation byte
	if s.npend == 0 {
		return append(dst, b) // stray: pass through
	}
	s.pend[s.npend] = b
	s.npend++
	if s.npend == s.needLen {
		dst = append(dst, s.pend[:s.npend]...)
		s.npend, s.needLen = 0, 0
	}
	return dst
}

// feed appends the plain text of p to dst.
func (s *stripper) feed(dst, p []byte) []byte {
	for _, b := range p {
		if b == 0x18 || b == 0x1a { // CAN, SUB: abort any sequence
			s.state = stGround
			continue
		}
		switch s.state {
		case stGround:
			switch {
			case b == 0x1b:
				dst = s.flushPend(dst)
				s.state = stEsc
			case b == '\r':
				dst = s.flushPend(dst)
				s.cr = true
			case b == '\n':
				dst = s.flushPend(dst)
				s.cr = false
				dst = append(dst, '\n')
			case b == '\t':
				dst = s.text(dst, b)
			case b < 0x20 || b == 0x7f:
				dst = s.flushPend(dst) // other controls: dropped
			default:
				dst = s.text(dst, b)
			}
		case stEsc:
			switch {
			case b == '[':
				s.state = stCSI
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				s.state = stString
			case b == 0x1b:
				// stay
			case b >= 0x20 && b <= 0x2f:
				s.state = stEscInter
			case b < 0x20:
				// control inside an escape: ignored
			default:
				s.state = stGround
			}
		case stEscInter:
			if b == 0x1b {
				s.state = stEsc
			} else if b >= 0x30 && b <= 0x7e {
				s.state = stGround
			}
		case stCSI:
			if b == 0x1b {
				s.state = stEsc
			} else if b >= 0x40 && b <= 0x7e {
				s.state = stGround
			}
		case stString:
			switch b {
			case 0x07:
				s.state = stGround
			case 0x1b:
				s.state = stStringEsc
			}
		case stStringEsc:
			if b == '\\' {
				s.state = stGround
			} else {
				s.state = stEsc
				dst = s.feed(dst, []byte{b})
			}
		}
	}
	return dst
}

// textLog is a bounded log of plain output text addressed by absolute
// offsets. Guarded by Screen.mu.
type textLog struct {
	buf   []byte
	start uint64 // absolute offset of buf[0]
	max   int    // keep at least the last max bytes
	strip stripper
}

func (l *textLog) end() uint64 { return l.start + uint64(len(l.buf)) }

// write appends the plain text of p and reports whether any was added.
func (l *textLog) write(p []byte) bool {
	n := len(l.buf)
	l.buf = l.strip.feed(l.buf, p)
	added := len(l.buf) > n
	// Trim in batches (at max+max/4) so the cost stays amortised O(1) a byte.
	if len(l.buf) > l.max+l.max/4 {
		drop := len(l.buf) - l.max
		copy(l.buf, l.buf[drop:])
		l.buf = l.buf[:l.max]
		l.start += uint64(drop)
	}
	return added
}

// since returns the text from absolute offset off to the end. ok is false if
// off was dropped.
func (l *textLog) since(off uint64) (string, bool) {
	if off < l.start {
		return "", false
	}
	b := l.buf[off-l.start:]
	// The bound may have cut a rune: skip a leading partial one.
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), true
}
