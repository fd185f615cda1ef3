package record

import (
	"slices"
	"strconv"
)

// The tracker follows the terminal state that a snapshot (rows, cursor,
// reported modes, title) does not show but that changes what later output
// does: scroll regions, saved cursors, the alternate screen's primary,
// character sets, origin/autowrap/newline modes, margins and tab stops. It
// models x/vt v0.1.0 (as orchestrator/screen drives it). Two uses:
//
//   - keyframes: a snapshot plus this state restores an emulator exactly;
//     when some state cannot be restored, no keyframe is taken there;
//   - squeezing: it classifies every byte as droppable, movable, or
//     unsafe for the squeeze (see feeder).

// Saved-cursor knowledge.
const (
	savedNone    = iota // never saved since the last reset: x/vt's zero cursor
	savedKnown          // saved at a known position and visibility
	savedUnknown        // saved somewhere we could not see
)

type savedCursor struct {
	kind   uint8
	x, y   int
	hidden bool
}

// scrState is one of x/vt's two screens.
type scrState struct {
	top, bot int // scroll region rows [top, bot)
	saved    savedCursor
}

// tracker is the hidden state. It is copied into keyframes (a value
// type but for the parser, which a keyframe drops: it is taken in the
// ground state, and restore starts a new one).
type tracker struct {
	p          vtParser
	cols, rows int
	alt        bool
	scr        [2]scrState
	charsets   [4]byte // 0: US-ASCII; 'A': UK; '0': special drawing
	gl         int
	gsingle    int
	origin     bool
	noWrap     bool
	lnm        bool
	lrmMode    bool
	lrmDirty   bool // left/right margins were set
	tabsDirty  bool
	lastCharOK bool // the emulator's last character (for REP) is the same as in a plain replay
}

func newTracker(cols, rows int) tracker {
	t := tracker{cols: cols, rows: rows, lastCharOK: true}
	t.p = newVTParser()
	t.reset()
	return t
}

// reset is RIS.
func (t *tracker) reset() {
	t.alt = false
	for i := range t.scr {
		t.scr[i] = scrState{top: 0, bot: t.rows}
	}
	t.charsets = [4]byte{}
	t.gl, t.gsingle = 0, 0
	t.origin, t.noWrap, t.lnm, t.lrmMode = false, false, false, false
	t.lrmDirty, t.tabsDirty = false, false
	t.lastCharOK = true // x/vt forgets the last character too
}

// resize is x/vt's Resize (only called when the size changes).
func (t *tracker) resize(cols, rows int) {
	t.cols, t.rows = cols, rows
	for i := range t.scr {
		t.scr[i].top, t.scr[i].bot = 0, rows
	}
	t.lrmDirty = false
	t.tabsDirty = false
}

func (t *tracker) cur() *scrState {
	if t.alt {
		return &t.scr[1]
	}
	return &t.scr[0]
}

func (s *scrState) regionDefault(rows int) bool { return s.top == 0 && s.bot == rows }

// Byte classes for the squeeze.
const (
	clDrop   = iota // no effect that outlives the current row (or none)
	clMove          // a flag-like state change: kept (summarised) when squeezed
	clCR            // carriage return in the ground state
	clLF            // line feed (LF, VT, FF) in the ground state
	clUnsafe        // anything else: ends a squeezable run
)

// capture is the screen as the feeder saw it just before a sequence.
type capture struct {
	lines   []string
	x, y    int
	visible bool
}

// classify says what a dispatched event does, and whether it needs a
// capture of the screen before it takes effect. It changes nothing.
func (t *tracker) classify(ev int, inSeq bool) (class int, needCapture bool) {
	p := &t.p
	switch ev {
	case evPrint, evString, evNone:
		return clDrop, false
	case evExecute:
		switch p.ctl {
		case '\b', '\t', 0x84:
			if inSeq {
				return clUnsafe, false
			}
			return clDrop, false
		case '\n', '\v', '\f':
			if inSeq {
				return clUnsafe, false
			}
			return clLF, false
		case '\r':
			if inSeq {
				return clUnsafe, false
			}
			return clCR, false
		case 0x88, 0x8d, 0x8e, 0x8f:
			return clUnsafe, false
		}
		return clDrop, false
	case evEsc:
		if p.inter() == 0 {
			switch p.final() {
			case '7':
				return clUnsafe, true
			case '8', 'H', 'M', 'c':
				return clUnsafe, false
			case 'n', 'o':
				return clMove, false
			}
			return clDrop, false // '=', '>', 'D', '|', '}', '~' and the unhandled
		}
		if isCharsetEsc(p.inter(), p.final()) {
			return clMove, false
		}
		return clDrop, false
	case evOsc:
		switch p.oscCmd {
		case 0, 2:
			if slices.Contains(p.data, ';') {
				return clMove, false
			}
		case 8:
			return clMove, false
		}
		return clDrop, false
	case evCsi:
		return t.classifyCsi()
	}
	return clUnsafe, false
}

func isCharsetEsc(inter, final byte) bool {
	return inter >= '(' && inter <= '+' && (final == 'A' || final == 'B' || final == '0')
}

func (t *tracker) classifyCsi() (int, bool) {
	p := &t.p
	f, pre, in := p.final(), p.prefix(), p.inter()
	switch {
	case pre == 0 && in == 0:
		switch f {
		case '@', 'C', 'D', 'G', 'I', 'K', 'P', 'X', 'Z', '`', 'a', 'c', 'n':
			return clDrop, false
		case 'm', 'h', 'l':
			return clMove, false
		case 's':
			if t.lrmMode {
				return clUnsafe, false
			}
			return clUnsafe, true // SCOSC saves the cursor
		case 'A', 'B', 'E', 'F', 'H', 'J', 'L', 'M', 'S', 'T', 'b', 'd', 'e', 'f', 'g', 'r':
			return clUnsafe, false
		}
		return clDrop, false
	case pre == '?' && in == 0 && (f == 'h' || f == 'l'):
		for i := range p.paramsLen {
			switch p.param(i, -1) {
			case 1047, 1048, 1049:
				// Entering the alternate screen (the primary is captured)
				// or saving a cursor (its position is captured).
				return clUnsafe, f == 'h'
			}
		}
		return clMove, false
	case pre == '?' && in == 0 && f == 'W':
		if p.paramsLen == 1 && p.params[0] == 5 {
			return clMove, false
		}
		return clDrop, false
	case pre == 0 && in == ' ' && f == 'q': // the cursor's shape
		return clMove, false
	case pre == '?' && in == 0 && f == 'n', pre == 0 && in == '$' && f == 'p',
		pre == '?' && in == '$' && f == 'p', pre == '>' && in == 0 && f == 'c':
		return clDrop, false
	}
	return clDrop, false
}

// apply updates the state for a dispatched event. pre is the capture
// taken before it when classify asked for one (nil otherwise, or when the
// feeder could not take one). It returns true if the event entered the
// alternate screen with pre as the primary.
func (t *tracker) apply(ev int, pre *capture) (enteredAlt bool) {
	p := &t.p
	switch ev {
	case evPrint:
		t.gsingle = 0
	case evExecute:
		switch p.ctl { // x/vt v0.1.0 ignores SO and SI
		case 0x88:
			t.tabsDirty = true
		case 0x8e:
			t.gsingle = 2
		case 0x8f:
			t.gsingle = 3
		}
	case evEsc:
		if p.inter() == 0 {
			switch p.final() {
			case '7':
				t.save(pre)
			case 'H':
				t.tabsDirty = true
			case 'c':
				t.reset()
			case 'n':
				t.gl = 2
			case 'o':
				t.gl = 3
			}
			return false
		}
		if isCharsetEsc(p.inter(), p.final()) {
			set := p.inter() - '('
			if p.final() == 'B' {
				t.charsets[set] = 0
			} else {
				t.charsets[set] = p.final()
			}
		}
	case evCsi:
		return t.applyCsi(pre)
	}
	return false
}

// save records a saved cursor on the current screen.
func (t *tracker) save(pre *capture) {
	s := t.cur()
	if pre == nil {
		s.saved = savedCursor{kind: savedUnknown}
		return
	}
	s.saved = savedCursor{kind: savedKnown, x: min(pre.x, t.cols-1), y: pre.y, hidden: !pre.visible}
}

func (t *tracker) applyCsi(pre *capture) (enteredAlt bool) {
	p := &t.p
	f, prefix, in := p.final(), p.prefix(), p.inter()
	switch {
	case prefix == 0 && in == 0:
		switch f {
		case 'h', 'l':
			for i := range p.paramsLen {
				if v := p.param(i, -1); v == 20 {
					t.lnm = f == 'h'
				}
			}
		case 'g':
			if v := p.param(0, 0); v == 0 || v == 3 {
				t.tabsDirty = true
			}
		case 'r':
			t.decstbm()
		case 's':
			if t.lrmMode {
				t.decslrm()
			} else {
				t.save(pre)
			}
		}
	case prefix == '?' && in == 0 && (f == 'h' || f == 'l'):
		on := f == 'h'
		moved := false // an earlier parameter changed what a capture shows
		for i := range p.paramsLen {
			v := p.param(i, -1)
			switch v {
			case -1:
			case 6:
				t.origin = on
			case 7:
				t.noWrap = !on
			case 69:
				t.lrmMode = on
			case 25:
				moved = true
			case 1047, 1049:
				if on && v == 1049 {
					t.saveAfter(pre, moved)
				}
				if on && !t.alt {
					t.alt = true
					enteredAlt = pre != nil && !moved
				} else if !on {
					t.alt = false
					enteredAlt = false
				}
				moved = true
			case 1048:
				if on {
					t.saveAfter(pre, moved)
				}
				moved = true
			}
		}
	case prefix == '?' && in == 0 && f == 'W':
		if p.paramsLen == 1 && p.params[0] == 5 {
			t.tabsDirty = false
		}
	}
	return enteredAlt
}

func (t *tracker) saveAfter(pre *capture, moved bool) {
	if moved {
		t.cur().saved = savedCursor{kind: savedUnknown}
		return
	}
	t.save(pre)
}

// decstbm is x/vt's DECSTBM behind orchestrator/screen's parameter clamp.
func (t *tracker) decstbm() {
	p := &t.p
	p.clampParam(0, t.rows)
	p.clampParam(1, t.rows)
	top := p.param(0, 1)
	if top < 1 {
		top = 1
	}
	bottom := p.param(1, t.rows)
	if bottom < 1 {
		bottom = t.rows
	}
	if top >= bottom {
		return
	}
	s := t.cur()
	s.top, s.bot = top-1, bottom
}

// decslrm is x/vt's DECSLRM (with DECLRMM set).
func (t *tracker) decslrm() {
	p := &t.p
	p.clampParam(0, t.cols)
	p.clampParam(1, t.cols)
	left := p.param(0, 1)
	if left < 1 {
		left = 1
	}
	right := p.param(1, t.cols)
	if right < 1 {
		right = t.cols
	}
	if left >= right {
		return
	}
	if left != 1 || right != t.cols {
		t.lrmDirty = true
	}
}

// summary is the net effect of the movable sequences of a dropped part of
// a run, in a form that can be written back.
type summary struct {
	dec      map[int]bool // DEC private modes but the mouse tracking ones
	ansi     map[int]bool
	mouse    int // last mouse tracking mode (9, 1000, 1002, 1003) set or reset
	mouseOn  bool
	hasMouse bool
	charsets [4]byte // 0: none seen
	gl       int     // -1: none seen (only ESC n and ESC o change it: x/vt ignores SO and SI)
	st8c     bool
	title    []byte // raw OSC data
	link     []byte
	hasTitle bool
	hasLink  bool
	sgr      [][]byte // SGR parameter strings since the last reset
	sgrReset bool
	shape    []byte // DECSCUSR parameters
	hasShape bool
}

const maxSummarySGR = 64

func (s *summary) reset() {
	clear(s.dec)
	clear(s.ansi)
	s.hasMouse = false
	s.charsets = [4]byte{}
	s.gl = -1
	s.st8c = false
	s.hasTitle, s.hasLink = false, false
	s.title, s.link = s.title[:0], s.link[:0]
	s.sgr = s.sgr[:0]
	s.sgrReset = false
	s.shape, s.hasShape = s.shape[:0], false
}

// moveItem is a movable sequence seen in a run, waiting to be summarised
// (or fed, if the run is not squeezed past it).
type moveItem struct {
	pos    int64
	kind   byte // 'c' CSI, 'e' ESC, 'o' OSC
	a, b   int  // CSI/ESC: final, prefix/inter; OSC: cmd
	resets bool // an SGR that starts with a reset
	buf    []byte
}

// add folds a movable item into the summary.
func (s *summary) add(it *moveItem) {
	switch it.kind {
	case 'e':
		switch {
		case it.b == 0 && it.a == 'n':
			s.gl = 2
		case it.b == 0 && it.a == 'o':
			s.gl = 3
		case isCharsetEsc(byte(it.b), byte(it.a)):
			set := byte(it.b) - '('
			s.charsets[set] = byte(it.a) // 'B' included: written back as such
		}
	case 'o':
		if it.a == 8 {
			s.link, s.hasLink = append(s.link[:0], it.buf...), true
		} else {
			s.title, s.hasTitle = append(s.title[:0], it.buf...), true
		}
	case 'c':
		var params []int
		if byte(it.a) != 'm' {
			params = decodeParams(it.buf)
		}
		switch byte(it.a) {
		case 'm':
			if it.resets {
				s.sgr = s.sgr[:0]
				s.sgrReset = true
			}
			if len(s.sgr) < maxSummarySGR {
				s.sgr = append(s.sgr, it.buf)
			}
		case 'h', 'l':
			on := byte(it.a) == 'h'
			if byte(it.b) == '?' {
				for _, v := range params {
					v &= pMask
					switch {
					case v == pMissing:
					case v == 9 || v == 1000 || v == 1002 || v == 1003:
						s.mouse, s.mouseOn, s.hasMouse = v, on, true
					default:
						if s.dec == nil {
							s.dec = map[int]bool{}
						}
						s.dec[v] = on
					}
				}
			} else {
				for _, v := range params {
					if v &= pMask; v != pMissing {
						if s.ansi == nil {
							s.ansi = map[int]bool{}
						}
						s.ansi[v] = on
					}
				}
			}
		case 'W':
			s.st8c = true
		case 'q':
			s.shape, s.hasShape = append(s.shape[:0], it.buf...), true
		}
	}
}

// emit writes the summary as sequences with the same effect.
func (s *summary) emit(b []byte) []byte {
	mode := func(b []byte, prefix string, v int, on bool) []byte {
		b = append(b, "\x1b["...)
		b = append(b, prefix...)
		b = strconv.AppendInt(b, int64(v), 10)
		if on {
			return append(b, 'h')
		}
		return append(b, 'l')
	}
	for _, v := range sortedKeys(s.dec) {
		b = mode(b, "?", v, s.dec[v])
	}
	if s.hasMouse {
		b = mode(b, "?", s.mouse, s.mouseOn)
	}
	for _, v := range sortedKeys(s.ansi) {
		b = mode(b, "", v, s.ansi[v])
	}
	for i, c := range s.charsets {
		if c != 0 {
			b = append(b, 0x1b, '('+byte(i), c)
		}
	}
	switch s.gl {
	case 2:
		b = append(b, 0x1b, 'n')
	case 3:
		b = append(b, 0x1b, 'o')
	}
	if s.st8c {
		b = append(b, "\x1b[?5W"...)
	}
	if s.hasTitle {
		b = append(b, "\x1b]"...)
		b = append(b, s.title...)
		b = append(b, 0x07)
	}
	if s.hasLink {
		b = append(b, "\x1b]"...)
		b = append(b, s.link...)
		b = append(b, 0x07)
	}
	if s.hasShape {
		b = append(b, "\x1b["...)
		b = append(b, s.shape...)
		b = append(b, " q"...)
	}
	if s.sgrReset && (len(s.sgr) == 0 || !sgrResets(s.sgr[0])) {
		b = append(b, "\x1b[m"...)
	}
	for _, p := range s.sgr {
		b = append(b, "\x1b["...)
		b = append(b, p...)
		b = append(b, 'm')
	}
	return b
}

func sgrResets(params []byte) bool {
	ps := decodeParams(params)
	return len(ps) == 0 || ps[0]&pMask == pMissing || ps[0]&pMask == 0
}

func sortedKeys(m map[int]bool) []int {
	if len(m) == 0 {
		return nil
	}
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// encodeParams writes parsed parameters back as parameter bytes that
// parse to the same values.
func encodeParams(b []byte, params []int) []byte {
	for i, v := range params {
		if i > 0 {
			if params[i-1]&pHasMore != 0 {
				b = append(b, ':')
			} else {
				b = append(b, ';')
			}
		}
		if v&pMask != pMissing {
			b = strconv.AppendInt(b, int64(v&pMask), 10)
		}
	}
	if n := len(params); n > 0 && params[n-1]&pHasMore != 0 {
		b = append(b, ':')
	}
	return b
}

// decodeParams parses parameter bytes written by encodeParams.
func decodeParams(b []byte) []int {
	var out []int
	if len(b) == 0 {
		return out
	}
	cur := pMissing
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if cur == pMissing {
				cur = 0
			}
			cur = cur*10 + int(c-'0')
		case c == ';':
			out = append(out, cur)
			cur = pMissing
		case c == ':':
			out = append(out, cur|pHasMore)
			cur = pMissing
		}
	}
	if b[len(b)-1] != ':' {
		out = append(out, cur)
	}
	return out
}
