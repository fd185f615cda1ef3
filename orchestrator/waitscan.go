package orchestrator

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
)

// A text or regex wait follows the node's text log instead of re-reading
// it: each turn appends only the text logged since the last turn to the
// wait's own buffer, masks the echoes of input found in it (echoMask),
// and searches the new text plus the part of the old text a match could
// still begin in — the last len(text)-1 bytes for a text wait, the last
// (unfinished) line for a regex that cannot match across a line end, and
// everything for a regex that can (those are searched from the baseline
// every turn, as before). Earlier text was searched already and found
// wanting, and a match there cannot begin to exist by text appended after
// it, so the result is the one a search of the whole text would give.
//
// When the baseline's text is no longer all in the log (a flood passed
// it) or a seed painted rows that never went through the log, the rows
// changed since the baseline (or the whole screen) are searched too, with
// the inputs' echoes masked, as before.

// wholeMax bounds the text a multi-line regex wait keeps (and searches
// every turn): the text log's default bound.
const wholeMax = screen.DefaultTextLog

// textScan is one wait's view of the text since its baseline. Only the
// waiting goroutine uses it.
type textScan struct {
	c        *compiled
	baseline uint64
	started  bool
	logOff   uint64 // the screen's text-log offset read up to
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

func newTextScan(c *compiled, baseline uint64) *textScan {
	s := &textScan{c: c, baseline: baseline}
	if c.re != nil {
		s.whole = !lineLocal(c.re.String())
		s.lit = []byte(requiredLiteral(c.re.String()))
	}
	return s
}

// end is the scan offset of the end of the text read so far.
func (s *textScan) end() int { return s.bufAt + len(s.buf) }

// match reports whether the wait's condition holds for the output after
// the baseline, and what matched.
//
// rc, if not nil, shares the screen rows searched between the scans that
// take their turns together (evalScans).
func (s *textScan) match(n *node, rc *rowsCache) (bool, string) {
	if !s.started {
		off, complete, err := n.scr.TextStart(s.baseline)
		s.logOff, s.complete, s.started = off, complete && err == nil, true
	}
	var from uint64
	prev := s.logOff
	s.buf, from, s.logOff = n.scr.AppendTextFrom(s.buf, prev, s.end() == 0)
	if from > prev {
		s.complete = false // the log dropped text before this turn read it
	}
	s.echo.add(n.inputsAfter(s.baseline, s.echo.seq))
	masked := s.echo.find(s.buf, s.bufAt)
	ws := s.windowStart(min(s.searched, masked))
	s.searched = s.end()
	if ok, m := s.search(s.buf[ws-s.bufAt:]); ok {
		return true, m
	}
	s.trim()
	n.mu.Lock()
	seeded := n.seedRev > s.baseline
	n.mu.Unlock()
	if !s.complete || seeded {
		return s.matchRows(n, rc)
	}
	return false, ""
}

// windowStart is the scan offset from which text changed at or after at
// (new text, or old text masked this turn) must be searched again.
func (s *textScan) windowStart(at int) int {
	switch {
	case s.whole:
		return s.bufAt // everything kept is searched
	case s.c.re == nil:
		at -= len(s.c.Text) - 1
	default:
		// The start of the line holding at: a match is on one line.
		at = s.bufAt + bytes.LastIndexByte(s.buf[:max(at-s.bufAt, 0)], '\n') + 1
	}
	return max(at, s.bufAt)
}

func (s *textScan) search(b []byte) (bool, string) {
	if s.c.re != nil && len(s.lit) > 0 {
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
	if s.c.re != nil {
		if loc := s.c.re.FindIndex(b); loc != nil {
			return true, string(b[loc[0]:loc[1]])
		}
		return false, ""
	}
	if bytes.Contains(b, []byte(s.c.Text)) {
		return true, s.c.Text
	}
	return false, ""
}

// trim drops the text no later turn needs: before the next window's start
// and before where the echoes still looked for may begin.
func (s *textScan) trim() {
	if s.whole {
		// Searched whole every turn: bounded as the node's text log is
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

// matchRows searches the rows changed since the baseline (all rows if
// the history does not reach back that far), with echoes masked.
func (s *textScan) matchRows(n *node, rc *rowsCache) (bool, string) {
	if rc == nil {
		rc = &rowsCache{}
	}
	return s.search(rc.rows(n, s.baseline))
}

// rowsCache keeps the masked rows of one baseline for the scans that take
// their turns together: the union of up to a history's worth of changed
// rows is built once, not once per wait.
type rowsCache struct {
	baseline uint64
	text     []byte
	ok       bool
}

func (rc *rowsCache) rows(n *node, baseline uint64) []byte {
	if rc.ok && rc.baseline == baseline {
		return rc.text
	}
	var b strings.Builder
	if ch, err := n.scr.ChangesSince(baseline); err == nil {
		for _, r := range ch.Rows {
			b.WriteString(r.Text)
			b.WriteByte('\n')
		}
	} else {
		b.WriteString(strings.Join(n.scr.Rows(), "\n"))
	}
	rc.baseline, rc.ok = baseline, true
	rc.text = []byte(maskEcho(b.String(), n.inputsSince(baseline)))
	return rc.text
}

// lineLocal reports whether every match of the pattern lies within one
// line: nothing in it matches a line end, and it does not use \A or \z,
// whose meaning depends on where the searched text starts and ends.
func lineLocal(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	var local func(*syntax.Regexp) bool
	local = func(re *syntax.Regexp) bool {
		switch re.Op {
		case syntax.OpAnyChar, syntax.OpBeginText, syntax.OpEndText:
			return false
		case syntax.OpLiteral:
			if strings.ContainsRune(string(re.Rune), '\n') {
				return false
			}
		case syntax.OpCharClass:
			for i := 0; i+1 < len(re.Rune); i += 2 {
				if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
					return false
				}
			}
		}
		for _, sub := range re.Sub {
			if !local(sub) {
				return false
			}
		}
		return true
	}
	return local(re)
}

// requiredLiteral returns the longest literal string that every match of
// the pattern contains, or "" (case-folded literals do not count).
func requiredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	var best func(*syntax.Regexp) string
	best = func(re *syntax.Regexp) string {
		switch re.Op {
		case syntax.OpLiteral:
			if re.Flags&syntax.FoldCase != 0 {
				return ""
			}
			return string(re.Rune)
		case syntax.OpCapture:
			return best(re.Sub[0])
		case syntax.OpPlus:
			return best(re.Sub[0]) // at least once
		case syntax.OpRepeat:
			if re.Min >= 1 {
				return best(re.Sub[0])
			}
		case syntax.OpConcat:
			var out string
			for _, sub := range re.Sub {
				if l := best(sub); len(l) > len(out) {
					out = l
				}
			}
			return out
		}
		return "" // alternations, optional parts, classes: nothing certain
	}
	return best(re)
}

// echoMask finds, in text that arrives in pieces, the echo of each line
// of each input sent after the baseline, in order: each line's echo is
// its first occurrence (exact, or broken by the line editor's wrapping)
// after the end of the echo found before it; a line not seen yet is
// looked for again in later text, the lines after it independently. Found
// echoes are blanked (NUL) in place.
type echoMask struct {
	seq     uint64      // the node's input sequence number consumed
	pending []*echoLine // lines whose echo has not been seen, in order
	from    int         // scan offset of the end of the last echo found
}

type echoLine struct {
	text  string
	re    *regexp.Regexp // wrap-aware search; compiled on first use
	to    int            // scan offset up to which it was looked for
	fresh bool           // never looked for
}

// add queues the lines of new inputs.
func (m *echoMask) add(inputs []string, seq uint64) {
	if seq <= m.seq {
		return
	}
	m.seq = seq
	for _, in := range inputs {
		for _, line := range strings.Split(strings.ReplaceAll(in, "\r", "\n"), "\n") {
			if line != "" {
				m.pending = append(m.pending, &echoLine{text: line, fresh: true})
			}
		}
	}
}

// lookback is how far before the end of the text already searched an
// echo of l may begin and still be cut by it. A wrapped echo carries line
// ends and padding between its characters: up to three bytes of it per
// byte of the line plus a row's padding are allowed for.
func (l *echoLine) lookback() int {
	if len(l.text) > maxWrapAware {
		return len(l.text) - 1
	}
	return 4*len(l.text) + 512
}

// keepFrom is the oldest scan offset a later search for a pending echo
// may read (end: the end of the text so far).
func (m *echoMask) keepFrom(end int) int {
	keep := end
	for _, l := range m.pending {
		keep = min(keep, max(m.from, end-l.lookback()))
	}
	return keep
}

// find looks for the pending echoes in buf (scan offset bufAt), blanks
// those found and returns the scan offset of the first byte blanked, or
// the end of buf.
func (m *echoMask) find(buf []byte, bufAt int) int {
	end := bufAt + len(buf)
	first := end
	kept := m.pending[:0]
	for _, l := range m.pending {
		start := m.from
		if !l.fresh {
			start = max(start, l.to-l.lookback())
		}
		start = max(start, bufAt)
		i, j := l.findIn(buf[start-bufAt:])
		if i < 0 {
			l.to, l.fresh = end, false
			kept = append(kept, l)
			continue
		}
		clear(buf[start-bufAt+i : start-bufAt+j])
		first = min(first, start+i)
		m.from = start + j
	}
	clear(m.pending[len(kept):])
	m.pending = kept
	return first
}

// findIn finds l's echo in b, exactly or with wrap points inserted.
func (l *echoLine) findIn(b []byte) (int, int) {
	if i := bytes.Index(b, []byte(l.text)); i >= 0 {
		return i, i + len(l.text)
	}
	if len(l.text) > maxWrapAware {
		return -1, -1
	}
	if l.re == nil {
		re, err := regexp.Compile(wrapPattern(l.text))
		if err != nil {
			return -1, -1
		}
		l.re = re
	}
	if loc := l.re.FindIndex(b); loc != nil {
		return loc[0], loc[1]
	}
	return -1, -1
}
