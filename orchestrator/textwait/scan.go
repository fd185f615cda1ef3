// Package textwait is the text and regex search of a wait over a
// terminal's output: incremental (each turn reads only the text logged
// since the last), with the terminal's echo of typed input masked where
// the terminal actually echoed it. It knows nothing of nodes or tmux: it
// reads a Source, which the engine implements over a node's mirror and
// its inputs.
package textwait

import (
	"bytes"
	"cmp"
	"math"
	"regexp"
	"slices"
)

// Source is what a scan reads: the text log of a terminal's output, the
// rows of its screen, and the inputs typed into it.
type Source interface {
	// TextStart returns the text-log offset at which the text of the
	// output after revision rev begins; complete is false if that text is
	// no longer all kept (then off is the oldest offset known to follow
	// rev). See screen.Screen.TextStart.
	TextStart(rev uint64) (off uint64, complete bool, err error)
	// AppendTextRange appends the text logged from offset off up to
	// offset to (or the log's end, if that comes first) to dst and
	// returns it with the offset from which it was read (> off if the log
	// dropped text) and the offset of its end. first says the read starts
	// a text: a partial rune at its start is skipped. See
	// screen.Screen.AppendTextRange.
	AppendTextRange(dst []byte, off, to uint64, first bool) (out []byte, from, end uint64)
	// InputsAfter returns the inputs typed at or after revision rev whose
	// Seq is above seq, in order, and the Seq of the last input typed.
	InputsAfter(rev, seq uint64) ([]Input, uint64)
	// SeededAfter reports whether the screen was painted after revision
	// rev by a means that did not go through the text log (a seed).
	SeededAfter(rev uint64) bool
	// RowsSince returns the screen rows changed after revision rev, or all
	// rows if the history does not reach back that far.
	RowsSince(rev uint64) []string
}

// Input is text typed into the terminal.
type Input struct {
	Seq uint64 // its number among the terminal's inputs, from 1
	// At is the text-log offset where it was typed (the log's end then):
	// the output that follows it begins there.
	At uint64
	// Prefix is the text of the cursor's row left of the cursor when it
	// was typed: the prompt it follows.
	Prefix string
	Text   string
}

// Pattern is what a wait looks for: Re if set, else Text. Re is compiled
// with (?m) by the caller (^ and $ match at line ends).
type Pattern struct {
	Text string
	Re   *regexp.Regexp
}

// wholeMax bounds the text a multi-line regex wait keeps (and searches
// every turn): the screen's default text log (screen.DefaultTextLog; a
// test checks they agree).
const wholeMax = 1 << 20

// A text or regex wait follows the terminal's text log instead of
// re-reading it: each turn appends only the text logged since the last
// turn to the wait's own buffer, masks the echoes of input found in it
// (echoMask), and searches the new text plus the part of the old text a
// match could still begin in — the last len(text)-1 bytes for a text
// wait, the last (unfinished) line for a regex that cannot match across a
// line end, and everything for a regex that can (those are searched from
// the baseline every turn). Earlier text was searched already and found
// wanting, and a match there cannot begin to exist by text appended after
// it, so the result is the one a search of the whole text would give.
//
// When the baseline's text is no longer all in the log (a flood passed
// it) or a seed painted rows that never went through the log, the rows
// changed since the baseline (or the whole screen) are searched too, with
// the inputs' echoes masked.

// Scan is one wait's view of the text since its baseline. It is not safe
// for concurrent use: Reg takes turns for the pump and the waiter.
type Scan struct {
	p        Pattern
	baseline uint64
	started  bool
	logOff   uint64 // the text-log offset read up to
	complete bool   // all the text since the baseline passed through buf
	// buf holds the (masked) text from scan offset bufAt on; scan offsets
	// count the bytes appended since the baseline.
	buf      []byte
	bufAt    int
	searched int // scan offset up to which the text was searched
	whole    bool
	// lit is a string every match of the regex contains (empty if none
	// is known): the regex runs only where it occurs.
	lit  []byte
	echo echoMask
}

// New returns the scan of a wait for p in the output after revision
// baseline.
func New(p Pattern, baseline uint64) *Scan {
	s := &Scan{p: p, baseline: baseline}
	if p.Re != nil {
		s.whole = !lineLocal(p.Re.String())
		s.lit = []byte(requiredLiteral(p.Re.String()))
	}
	return s
}

// end is the scan offset of the end of the text read so far.
func (s *Scan) end() int { return s.bufAt + len(s.buf) }

// Match reports whether the wait's condition holds for the output after
// the baseline, and what matched.
//
// rc, if not nil, shares the screen rows searched between the scans that
// take their turns together.
func (s *Scan) Match(src Source, rc *RowsCache) (bool, string) {
	if !s.started {
		off, complete, err := src.TextStart(s.baseline)
		s.logOff, s.complete, s.started = off, complete && err == nil, true
		s.echo.startLog = off
	}
	// The inputs first: every one of them was typed at a log offset the
	// reads below reach. The text is read up to each input's offset, then
	// on from it, so the scan knows where in its text the input was typed.
	ins, seq := src.InputsAfter(s.baseline, s.echo.seq)
	slices.SortStableFunc(ins, func(a, b Input) int { return cmp.Compare(a.At, b.At) })
	for _, in := range ins {
		s.read(src, in.At)
		s.echo.add(in, s.logOff, s.end())
	}
	s.read(src, math.MaxUint64)
	s.echo.seq = max(s.echo.seq, seq)
	masked := s.echo.find(s.buf, s.bufAt)
	ws := s.windowStart(min(s.searched, masked))
	s.searched = s.end()
	if ok, m := s.search(s.buf[ws-s.bufAt:]); ok {
		return true, m
	}
	s.trim()
	if !s.complete || src.SeededAfter(s.baseline) {
		if rc == nil {
			rc = &RowsCache{}
		}
		return s.search(rc.rows(src, s.baseline))
	}
	return false, ""
}

// read appends the text logged up to log offset to.
func (s *Scan) read(src Source, to uint64) {
	if to <= s.logOff {
		return
	}
	var from uint64
	prev := s.logOff
	s.buf, from, s.logOff = src.AppendTextRange(s.buf, prev, to, s.end() == 0)
	if from > prev {
		s.complete = false // the log dropped text before this turn read it
		s.echo.startLog = max(s.echo.startLog, from)
	}
}

// windowStart is the scan offset from which text changed at or after at
// (new text, or old text masked this turn) must be searched again.
func (s *Scan) windowStart(at int) int {
	switch {
	case s.whole:
		return s.bufAt // everything kept is searched
	case s.p.Re == nil:
		at -= len(s.p.Text) - 1
	default:
		// The start of the line holding at: a match is on one line.
		at = s.bufAt + bytes.LastIndexByte(s.buf[:max(at-s.bufAt, 0)], '\n') + 1
	}
	return max(at, s.bufAt)
}

// search looks for the pattern in b.
func (s *Scan) search(b []byte) (bool, string) {
	if s.p.Re != nil && len(s.lit) > 0 {
		// Go's regexp runs its slow engine on long unanchored input;
		// the literal is found at memchr speed. A match holds it, and on
		// a line-local regex no match lies on a line before its first
		// occurrence.
		i := bytes.Index(b, s.lit)
		if i < 0 {
			return false, ""
		}
		if !s.whole {
			b = b[bytes.LastIndexByte(b[:i], '\n')+1:]
		}
	}
	return Search(s.p, b)
}

// Search looks for p in b, as a scan does, and returns what matched.
func Search(p Pattern, b []byte) (bool, string) {
	if p.Re != nil {
		if loc := p.Re.FindIndex(b); loc != nil {
			return true, string(b[loc[0]:loc[1]])
		}
		return false, ""
	}
	if bytes.Contains(b, []byte(p.Text)) {
		return true, p.Text
	}
	return false, ""
}

// trim drops the text no later turn needs: before the next window's start
// and before where the echoes still looked for may begin.
func (s *Scan) trim() {
	if s.whole {
		// Searched whole every turn: bounded as the terminal's text log is
		// (the oldest text then goes, and the screen's rows join in).
		if len(s.buf) > wholeMax+wholeMax/4 {
			drop := len(s.buf) - wholeMax
			s.buf = append(s.buf[:0], s.buf[drop:]...)
			s.bufAt += drop
			s.complete = false
		}
		return
	}
	keep := min(s.windowStart(s.end()), s.echo.keepFrom(s.end()))
	if drop := keep - s.bufAt; drop > 64<<10 && drop > len(s.buf)/2 {
		s.buf = append(s.buf[:0], s.buf[drop:]...)
		s.bufAt = keep
	}
}

// Buffered is how many bytes of text the scan keeps (tests bound it).
func (s *Scan) Buffered() int { return len(s.buf) }

// RowsCache keeps the masked rows of one baseline for the scans that take
// their turns together: the union of up to a history's worth of changed
// rows is built once, not once per wait.
type RowsCache struct {
	baseline uint64
	text     []byte
	ok       bool
}

func (rc *RowsCache) rows(src Source, baseline uint64) []byte {
	if rc.ok && rc.baseline == baseline {
		return rc.text
	}
	ins, _ := src.InputsAfter(baseline, 0)
	rc.baseline, rc.ok = baseline, true
	rc.text = []byte(MaskRows(src.RowsSince(baseline), ins))
	return rc.text
}
