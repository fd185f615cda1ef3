package record

import (
	"errors"
	"slices"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// The replay feeds the cast's output events, one Write per event as they
// were recorded, to an orchestrator/screen Screen. Two shortcuts keep it
// fast, and tests hold both to "same screen as a plain replay":
//
// Squeezing. Scrolling output (lines of text, colours, the odd
// erase-to-end-of-line) at the bottom of the screen leaves nothing of a
// line once screen-height more lines followed it. A run of such bytes
// with the cursor on the bottom row and the whole screen as scroll region
// is fed as: the net effect of its flag-like sequences (modes, character
// sets, title, colours), then only its last screen-height+1 lines, from
// a carriage return on. Every row visible at the end of the run was
// created by a scroll inside what is fed, so the screen is the same. The
// emulator's cost is per byte and per scroll; a 50 MB log then costs a
// few screens.
//
// Keyframes. Every keyframeEvery cast bytes the builder saves the screen
// (rows, cursor, modes, title) and the tracker's hidden state, if that
// state can be restored; a replay to a later moment restores the nearest
// keyframe before it and feeds from there.

const (
	keyframeEvery = 512 << 10 // cast bytes between keyframes
	keyframeRetry = 64 << 10  // cast bytes before trying again where one could not be taken
)

func mkpos(ev, off int) int64 { return int64(ev)<<32 | int64(off) }
func posEv(p int64) int       { return int(p >> 32) }
func posOff(p int64) int      { return int(p & 0xffffffff) }

// lfEntry is a line feed of a run and the carriage return before it (after
// the previous line feed), if any.
type lfEntry struct {
	lf, cr int64
}

// run is the squeezable bytes not yet fed.
type run struct {
	start        int64
	ground       bool  // the parser was in the ground state at start
	bottomAt     int64 // after the run's rows-th line feed (the cursor is on the bottom row from there), or -1
	ring         []lfEntry
	head, n      int
	count        int
	cr           int64
	firstASCII   int64
	lastDefASCII int64
	q            []moveItem
	qHead        int
	arena        []byte // the items' bytes
	sum          summary
}

func (r *run) reset(at int64, ground bool, rows int) {
	r.start, r.ground = at, ground
	if cap(r.ring) < rows+2 {
		r.ring = make([]lfEntry, rows+2)
	}
	r.ring = r.ring[:rows+2]
	r.head, r.n, r.count = 0, 0, 0
	r.cr, r.firstASCII, r.lastDefASCII, r.bottomAt = -1, -1, -1, -1
	r.q, r.qHead = r.q[:0], 0
	r.arena = nil // the summary may still hold slices of the old one
	r.sum.reset()
}

func (r *run) at(i int) *lfEntry { return &r.ring[(r.head+i)%len(r.ring)] }

// addLF records a line feed; an entry that falls out of the ring can no
// longer hold a cut, so the movable items before it are summarised.
func (r *run) addLF(at int64, rows int) {
	e := lfEntry{lf: at, cr: r.cr}
	r.cr = -1
	r.count++
	if r.count == rows {
		r.bottomAt = at + 1
	}
	if r.n == len(r.ring) {
		old := r.at(0)
		r.commit(old.lf)
		r.head = (r.head + 1) % len(r.ring)
		r.n--
	}
	*r.at(r.n) = e
	r.n++
}

// commit summarises the queued movable items before position p (those
// before bottomAt are fed as they are, not summarised).
func (r *run) commit(p int64) {
	for r.qHead < len(r.q) && r.q[r.qHead].pos < p {
		if r.q[r.qHead].pos >= r.bottomAt {
			r.sum.add(&r.q[r.qHead])
		}
		r.qHead++
	}
	if r.qHead > 256 && r.qHead*2 > len(r.q) {
		n := copy(r.q, r.q[r.qHead:])
		r.q, r.qHead = r.q[:n], 0
	}
}

// feeder replays a cast into a Screen.
type feeder struct {
	c          *parsedCast
	scr        *screen.Screen
	tk         tracker
	pri        *capture // the primary screen while the alternate one is shown (nil: unknown)
	cols, rows int
	ev         int   // events applied
	fed        int64 // bytes before this position are in the screen (or squeezed away)
	run        run
	seqStart   int64
	seqUnsafe  bool // an unsafe sequence is in progress: feed it as it comes
	wbuf       []byte
	wbufEv     int
	squeeze    bool
	noSqueeze  int // no squeezing before this event
	tainted    bool
	broken     bool // the emulator failed: reseeded from its own rows, no keyframes
	scratch    []byte
	borrowed   bool           // scr belongs to someone else: close leaves it open
	val        *screen.Screen // reused to check keyframes
	cur        []byte
	curEv      int
	curBuf     []byte
	squeezes   int
	written    int  // bytes written to the screen
	jumped     bool // restored from a recorded keyframe: its colours are not the cast's
}

// newFeeder starts a replay of c on a blank screen of the header's size.
func newFeeder(c *parsedCast, squeeze bool) *feeder {
	cols, rows := c.info.Width, c.info.Height
	f := &feeder{c: c, scr: screen.New(cols, rows), tk: newTracker(cols, rows), cols: cols, rows: rows, squeeze: squeeze, curEv: -1}
	f.run.reset(0, true, rows)
	return f
}

func (f *feeder) close() {
	if f.scr != nil && !f.borrowed {
		f.scr.Close()
	}
	if f.val != nil {
		f.val.Close()
	}
	f.scr, f.val = nil, nil
}

// data returns the decoded data of output event e.
func (f *feeder) data(e int) []byte {
	if e == f.curEv {
		return f.cur
	}
	ce := &f.c.events[e]
	d := f.c.data(ce, f.scratch)
	if !ce.plain {
		f.scratch = d
	}
	return d
}

func (f *feeder) appendW(e int, b []byte) {
	if len(b) == 0 {
		return
	}
	if len(f.wbuf) > 0 && f.wbufEv != e {
		f.flushW()
	}
	f.wbufEv = e
	f.wbuf = append(f.wbuf, b...)
}

func (f *feeder) flushW() {
	if len(f.wbuf) == 0 {
		return
	}
	f.written += len(f.wbuf)
	if err := f.scr.Write(f.wbuf); err != nil {
		f.recoverEmulator()
	}
	f.wbuf = f.wbuf[:0]
}

// recoverEmulator reseeds a failed emulator from its last rows (the same
// thing the live mirror does from tmux). The replay goes on, approximate.
func (f *feeder) recoverEmulator() {
	s := f.scr.Snapshot()
	m := f.scr.Modes()
	_ = f.scr.Seed(screen.SeedState{
		Columns: s.Columns, Rows: s.Rows, CursorX: s.Cursor.X, CursorY: s.Cursor.Y, CursorVisible: s.Cursor.Visible,
		AltScreen: s.Modes.AltScreen, AppCursor: s.Modes.AppCursor, BracketedPaste: s.Modes.BracketedPaste,
		Mouse: s.Modes.Mouse, MouseSGR: m.MouseSGR, Lines: s.Lines, Title: s.Title,
	})
	f.broken = true
	f.squeeze = false
	alt := f.tk.alt
	f.tk.reset()
	f.tk.alt = alt
	f.pri = nil
}

// feedTo feeds the bytes from f.fed to p verbatim.
func (f *feeder) feedTo(p int64) {
	if p <= f.fed {
		return
	}
	from := f.fed
	for e := posEv(from); e <= posEv(p) && e < len(f.c.events); e++ {
		if f.c.events[e].code != 'o' {
			continue
		}
		d := f.data(e)
		lo, hi := 0, len(d)
		if e == posEv(from) {
			lo = min(posOff(from), len(d))
		}
		if e == posEv(p) {
			hi = min(posOff(p), len(d))
		}
		if lo < hi {
			f.appendW(e, d[lo:hi])
		}
	}
	f.fed = p
}

// resetRun starts a new run at p.
func (f *feeder) resetRun(p int64) {
	f.run.reset(p, f.tk.p.state() == psGround, f.rows)
}

// flushRun ends the run at end, squeezing it if it can: the bytes up to
// the run's rows-th line feed as they are (from any row, the cursor is on
// the bottom row after them), the summary of the movable sequences up to
// the cut, then from the cut (a carriage return with rows+1 line feeds
// after it) on.
func (f *feeder) flushRun(end int64) {
	r := &f.run
	if f.squeeze && f.ev >= f.noSqueeze && !f.broken && r.ground && r.bottomAt >= 0 &&
		r.count >= 2*f.rows+2 && r.n == len(r.ring) && end > f.fed &&
		f.tk.cur().regionDefault(f.rows) && !f.tk.lrmDirty {
		j := 0
		if r.at(0).cr < 0 {
			j = 1
		}
		if cut := r.at(j).cr; cut > r.bottomAt && cut > f.fed {
			f.feedTo(r.bottomAt)
			f.flushW()
			r.commit(cut)
			if r.firstASCII >= 0 && r.firstASCII < cut && r.lastDefASCII < cut {
				f.tk.lastCharOK = false
			}
			f.wbuf = r.sum.emit(f.wbuf[:0])
			f.wbufEv = posEv(cut)
			f.fed = cut
			f.feedTo(end)
			f.squeezes++
			f.resetRun(end)
			return
		}
	}
	f.feedTo(end)
	f.resetRun(end)
}

// capture is the screen now (after flushing).
func (f *feeder) capture() *capture {
	f.flushW()
	s := f.scr.Snapshot()
	return &capture{lines: s.Lines, x: s.Cursor.X, y: s.Cursor.Y, visible: s.Cursor.Visible}
}

// unsafe feeds an unsafe event ending at byte i of event e: the run
// before from, then the bytes through i (capturing the screen before the
// last one if asked), and applies it.
func (f *feeder) unsafe(from int64, e, i int, needCapture bool, ev int) {
	f.flushRun(max(from, f.fed))
	if p := &f.tk.p; ev == evCsi && p.final() == 'b' && p.prefix() == 0 && p.inter() == 0 && !f.tk.lastCharOK {
		f.tainted = true // REP repeats a character this replay may not have
	}
	var pre *capture
	if needCapture {
		f.feedTo(mkpos(e, i))
		pre = f.capture()
	}
	f.feedTo(mkpos(e, i+1))
	wasAlt := f.tk.alt
	entered := f.tk.apply(ev, pre)
	switch {
	case entered:
		f.pri = pre
	case !f.tk.alt:
		f.pri = nil
	case wasAlt != f.tk.alt:
		f.pri = nil
	}
	f.resetRun(mkpos(e, i+1))
}

// step applies cast event e.
func (f *feeder) step(e int) {
	ce := &f.c.events[e]
	switch ce.code {
	case 'o':
		d := f.c.data(ce, f.curBuf)
		if !ce.plain {
			f.curBuf = d
		}
		f.cur, f.curEv = d, e
		f.scan(e, d)
	case 'r':
		if ce.sizeOK {
			f.sync(mkpos(e, 0))
			f.resize(int(ce.cols), int(ce.rows))
		}
	}
	f.ev = e + 1
}

// sync makes the screen show everything before p.
func (f *feeder) sync(p int64) {
	f.flushRun(p)
	f.flushW()
}

func (f *feeder) resize(cols, rows int) {
	if cols == f.cols && rows == f.rows {
		return
	}
	f.scr.Resize(cols, rows)
	f.tk.resize(cols, rows)
	f.cols, f.rows = cols, rows
	if f.tk.alt {
		f.pri = nil // the primary was resized too
	}
	f.resetRun(f.fed)
}

// scan runs the tracker over an output event, feeding and squeezing.
func (f *feeder) scan(e int, d []byte) {
	tk := &f.tk
	for i := 0; i < len(d); i++ {
		b := d[i]
		old := tk.p.state()
		if old == psGround && b >= 0x20 && b < 0x7f {
			j := i + 1
			for j < len(d) && d[j] >= 0x20 && d[j] < 0x7f {
				j++
			}
			at := mkpos(e, i)
			if f.run.firstASCII < 0 && f.run.bottomAt >= 0 && at >= f.run.bottomAt {
				f.run.firstASCII = at // the first one that a squeeze may drop
			}
			if j-i >= 2 || j == len(d) || d[j] < 0x80 {
				tk.lastCharOK = true
				f.run.lastDefASCII = at
			}
			tk.gsingle = 0
			i = j - 1
			continue
		}
		ev := tk.p.step(b)
		nw := tk.p.state()
		at := mkpos(e, i)
		if nw >= psCsiEntry && nw <= psApc && (b == 0x1b || b >= 0x80) && ev != evOsc && ev != evString {
			if f.seqUnsafe { // an unsafe sequence was abandoned
				f.feedTo(at)
				f.seqUnsafe = false
				f.resetRun(at)
			}
			f.seqStart = at
		}
		switch ev {
		case evNone:
			if f.seqUnsafe && (nw == psGround || nw == psUtf8) {
				end := mkpos(e, i+1)
				if nw == psUtf8 {
					end = at
				}
				f.feedTo(end)
				f.seqUnsafe = false
				f.resetRun(end)
			}
			continue
		case evPrint:
			tk.apply(ev, nil)
			continue
		}
		if ev == evOsc || ev == evString {
			// A string ends here; if an ESC ended it, a new sequence
			// starts at the ESC.
			cls, _ := tk.classify(ev, false)
			if cls == clMove {
				f.queue(f.seqStart, ev)
			}
			if b == 0x1b {
				f.seqStart = at
			}
			continue
		}
		inSeq := ev == evExecute && old != psGround && old != psUtf8 && nw != psGround
		if ev == evExecute && !inSeq && f.seqUnsafe {
			// An unsafe sequence was abandoned by this control (CAN, SUB):
			// fed through it, so the next run starts where the emulator's
			// parser is in the ground state too.
			f.unsafe(f.fed, e, i, false, ev)
			f.seqUnsafe = false
			continue
		}
		if f.seqUnsafe && ev != evExecute {
			_, need := tk.classify(ev, false)
			f.unsafe(f.fed, e, i, need, ev)
			f.seqUnsafe = false
			continue
		}
		cls, need := tk.classify(ev, inSeq)
		switch cls {
		case clDrop:
			tk.apply(ev, nil)
		case clCR:
			f.run.cr = at
		case clLF:
			f.run.addLF(at, f.rows)
		case clMove:
			tk.apply(ev, nil)
			f.queue(f.seqStart, ev)
		case clUnsafe:
			if inSeq {
				f.unsafe(f.seqStart, e, i, false, ev)
				f.seqUnsafe = true
				continue
			}
			from := f.seqStart
			if ev == evExecute {
				from = at
			}
			f.unsafe(from, e, i, need, ev)
		}
	}
}

// queue records a movable sequence of the run.
func (f *feeder) queue(start int64, ev int) {
	p := &f.tk.p
	r := &f.run
	it := moveItem{pos: start}
	n := len(r.arena)
	switch ev {
	case evEsc:
		it.kind, it.a, it.b = 'e', int(p.final()), int(p.inter())
	case evOsc:
		it.kind, it.a = 'o', p.oscCmd
		r.arena = append(r.arena, p.data...)
	case evCsi:
		it.kind, it.a, it.b = 'c', int(p.final()), int(p.prefix())
		r.arena = encodeParams(r.arena, p.params[:p.paramsLen])
		if it.a == 'm' {
			v := pMissing
			if p.paramsLen > 0 {
				v = p.params[0] & pMask
			}
			it.resets = v == pMissing || v == 0
		}
	default:
		return
	}
	it.buf = r.arena[n:len(r.arena):len(r.arena)]
	r.q = append(r.q, it)
}

// snapshot is the replayed screen now, as the contract's value, with
// revision set to the number of cast events applied.
func (f *feeder) snapshot() tools.Screen {
	s := f.scr.Snapshot()
	s.Revision = uint64(f.ev)
	return s
}

// keyframe is a restorable moment of a replay.
type keyframe struct {
	ev       int // events applied
	snap     tools.Screen
	mouseSGR bool
	tk       tracker
	pri      *capture
	recorded bool // written at record time (keyframe.go)
}

// takeKeyframe saves the current moment (after sync) if it can be
// restored exactly.
func (f *feeder) takeKeyframe() *keyframe {
	tk := &f.tk
	if f.broken || f.seqUnsafe || tk.p.state() != psGround || tk.gsingle != 0 || tk.tabsDirty || tk.lrmDirty {
		return nil
	}
	snap := f.snapshot()
	phantom := snap.Cursor.X >= snap.Columns
	cur := tk.cur()
	switch cur.saved.kind {
	case savedUnknown:
		return nil
	case savedKnown:
		if phantom || cur.saved.x >= f.cols || cur.saved.y >= f.rows {
			return nil
		}
	}
	if tk.alt {
		p := f.pri
		prim := &tk.scr[0]
		if p == nil || !p.visible || !prim.regionDefault(f.rows) || prim.saved.kind != savedKnown ||
			prim.saved.hidden || prim.saved.x != min(p.x, f.cols-1) || prim.saved.y != p.y {
			return nil
		}
	} else {
		a := &tk.scr[1]
		if a.saved.kind == savedUnknown {
			return nil
		}
		if (a.saved.kind == savedKnown || !a.regionDefault(f.rows)) && (phantom || a.saved.x >= f.cols || a.saved.y >= f.rows) {
			return nil
		}
	}
	k := &keyframe{ev: f.ev, snap: snap, mouseSGR: f.scr.Modes().MouseSGR, tk: *tk, pri: f.pri}
	k.tk.p = vtParser{} // taken in the ground state: restore gives it a new parser
	// Check the restore now: a keyframe that does not give back the same
	// screen is not kept.
	if f.val == nil {
		f.val = screen.New(snap.Columns, snap.Rows)
	}
	g, err := restore(f.c, k, f.squeeze, f.val)
	if err != nil {
		f.val.Close()
		f.val = nil
		return nil
	}
	ok := sameScreen(g.snapshot(), snap) && g.scr.Modes().MouseSGR == k.mouseSGR
	g.close()
	if !ok {
		return nil
	}
	return k
}

func sameScreen(a, b tools.Screen) bool {
	return a.Columns == b.Columns && a.Rows == b.Rows && a.Cursor == b.Cursor && a.Modes == b.Modes &&
		a.Title == b.Title && slices.Equal(a.Lines, b.Lines)
}

// size is about the memory k holds.
func (k *keyframe) size() int {
	n := 256
	for _, l := range k.snap.Lines {
		n += len(l) + 16
	}
	if k.pri != nil {
		for _, l := range k.pri.lines {
			n += len(l) + 16
		}
	}
	return n
}

// restore builds a feeder at keyframe k, on scr (reseeded; then the
// feeder borrows it) or, if scr is nil, on a new screen.
func restore(c *parsedCast, k *keyframe, squeeze bool, scr *screen.Screen) (*feeder, error) {
	s := k.snap
	t := k.tk
	borrowed := scr != nil
	if scr == nil {
		scr = screen.New(s.Columns, s.Rows)
	}
	f := &feeder{c: c, scr: scr, borrowed: borrowed, tk: t, cols: s.Columns, rows: s.Rows,
		squeeze: squeeze, curEv: -1, ev: k.ev, fed: mkpos(k.ev, 0), pri: k.pri}
	f.tk.p = newVTParser()
	f.tk.lastCharOK = false
	st := screen.SeedState{
		Columns: s.Columns, Rows: s.Rows, CursorX: s.Cursor.X, CursorY: s.Cursor.Y, CursorVisible: s.Cursor.Visible,
		AltScreen: s.Modes.AltScreen, AppCursor: s.Modes.AppCursor, BracketedPaste: s.Modes.BracketedPaste,
		Mouse: s.Modes.Mouse, MouseSGR: k.mouseSGR, Lines: s.Lines, Title: s.Title,
	}
	cur := t.cur()
	if !cur.regionDefault(s.Rows) {
		st.ScrollTop, st.ScrollBottom = cur.top, cur.bot-1
	}
	if t.alt {
		if k.pri == nil {
			f.close()
			return nil, errors.New("record: keyframe without the primary screen")
		}
		st.PrimaryLines = append([]string{}, k.pri.lines...)
		st.PrimaryCursorX, st.PrimaryCursorY = k.pri.x, k.pri.y
	}
	if err := f.scr.Seed(st); err != nil {
		f.close()
		return nil, err
	}
	var fix []byte
	if a := &t.scr[1]; !t.alt && (a.saved.kind == savedKnown || !a.regionDefault(s.Rows)) {
		fix = append(fix, "\x1b[?1047h"...)
		if !a.regionDefault(s.Rows) {
			fix = appendCSI2(fix, a.top+1, a.bot, 'r')
		}
		if a.saved.kind == savedKnown {
			fix = appendSave(fix, a.saved)
		}
		fix = append(fix, "\x1b[?1047l"...)
	}
	if cur.saved.kind == savedKnown {
		fix = appendSave(fix, cur.saved)
		fix = appendCUP(fix, min(s.Cursor.X, s.Columns-1), s.Cursor.Y)
		fix = appendMode(fix, 25, s.Cursor.Visible)
	}
	for i, cs := range t.charsets {
		if cs != 0 {
			fix = append(fix, 0x1b, '('+byte(i), cs)
		}
	}
	switch t.gl {
	case 2:
		fix = append(fix, 0x1b, 'n')
	case 3:
		fix = append(fix, 0x1b, 'o')
	}
	if t.origin {
		fix = append(fix, "\x1b[?6h"...)
	}
	if t.noWrap {
		fix = append(fix, "\x1b[?7l"...)
	}
	if t.lnm {
		fix = append(fix, "\x1b[20h"...)
	}
	if t.lrmMode {
		fix = append(fix, "\x1b[?69h"...)
	}
	if len(fix) > 0 {
		if err := f.scr.Write(fix); err != nil {
			f.close()
			return nil, err
		}
	}
	f.resetRun(f.fed)
	return f, nil
}

// appendSave saves a cursor at sc's position and visibility.
func appendSave(b []byte, sc savedCursor) []byte {
	b = appendCUP(b, sc.x, sc.y)
	b = appendMode(b, 25, !sc.hidden)
	return append(b, 0x1b, '7')
}

func appendCSI2(b []byte, p1, p2 int, final byte) []byte {
	b = append(b, "\x1b["...)
	b = appendInt(b, p1)
	b = append(b, ';')
	b = appendInt(b, p2)
	return append(b, final)
}

func appendInt(b []byte, n int) []byte {
	if n < 0 {
		n = 0
	}
	return appendDecimal(b, n)
}
