package screen

import (
	"sync"

	"github.com/termsprawl/termsprawl/tools"
)

// Default bounds of the kept history (see Options).
const (
	DefaultHistory = 4096    // revisions whose changed rows are kept
	DefaultTextLog = 1 << 20 // bytes of plain output text kept (at least)
)

// Options tune a Screen's memory. Zero fields take the defaults.
type Options struct {
	// History is how many revisions' changed-row sets are kept; it bounds
	// how far back ChangesSince and TextSince can go.
	History int
	// TextLog is how many bytes of plain output text are kept at least (up
	// to a quarter more is kept between trims).
	TextLog int
	// BaseRevision is the revision of the blank screen; the first change
	// is BaseRevision+1 and nothing older is in the history. A node
	// mirrored again after an orchestrator restart starts above every
	// revision handed out before, so revisions never repeat.
	BaseRevision uint64
}

// Cursor is the cursor of a snapshot: the contract's type.
type Cursor = tools.Cursor

// Modes are the terminal modes a client needs to talk to the program.
type Modes struct {
	AltScreen      bool `json:"alt_screen"`      // 1049/1047/47
	AppCursor      bool `json:"app_cursor"`      // DECCKM (1)
	BracketedPaste bool `json:"bracketed_paste"` // 2004
	Mouse          bool `json:"mouse"`           // any of 9, 1000, 1002, 1003
	// MouseSGR is the SGR mouse encoding (1006), for encoding mouse events;
	// not part of the contract's JSON.
	MouseSGR bool `json:"-"`
	// MouseTracking is the DECSET number of the tracking mode (9, 1000,
	// 1002, 1003; 0 for none), MouseUTF8 and MouseURXVT the 1005 and 1015
	// encodings: what a mouse report must look like.
	MouseTracking int  `json:"-"`
	MouseUTF8     bool `json:"-"`
	MouseURXVT    bool `json:"-"`
}

// Snapshot is the visible state of the screen: the contract's
// tools.Screen (terminal_snapshot without the node fields).
type Snapshot = tools.Screen

// Row is one changed row and its current text: the contract's type.
type Row = tools.Row

// Changes are the rows changed after a revision, ascending by row, with
// their current text, and the cursor: the contract's
// terminal_capture_since value.
type Changes = tools.Changes

// Screen is a live VT mirror of one tmux pane. It is safe for concurrent use.
// Readers never touch the emulator: they read the copy of the visible state
// taken after each change.
type Screen struct {
	// mu guards every field below, the emulator inside t, and the live state
	// the emulator's callbacks write (they run inside emulator calls, which
	// are made with mu held).
	mu sync.Mutex

	t    *term // nil after Close
	live live  // written by the emulator's callbacks and handlers

	cols, rows int
	rev        uint64
	lines      []string // published row text
	cursor     Cursor
	modes      Modes
	title      string

	hist   history
	text   textLog
	rowBuf []byte
	// stamps is, per row, a number no other row has had: a new one each
	// time a commit finds the row touched (or compares every row: a new
	// emulator's first commit does); a row that only moved with a
	// scroll (scroll.go) takes its stamp along. stamp is the last one
	// given. UpdateCells copies a row again only when its stamp changed,
	// and from its own copy of the row that moved there when it can
	// (cells.go).
	stamps    []uint64
	stamp     uint64
	prevLines []string // commit's copy of the rows before a shift (reused)

	changed chan struct{} // closed at the next revision bump (or Close)
	done    chan struct{} // closed by Close
	closed  bool
}

// New returns a blank Screen of cols x rows (each at least 1) with the
// default Options. Call Close when done: it stops a goroutine and releases
// the emulator.
func New(cols, rows int) *Screen {
	return NewWithOptions(cols, rows, Options{})
}

// NewWithOptions is New with explicit bounds.
func NewWithOptions(cols, rows int, o Options) *Screen {
	cols, rows = max(cols, 1), max(rows, 1)
	if o.History <= 0 {
		o.History = DefaultHistory
	}
	if o.TextLog <= 0 {
		o.TextLog = DefaultTextLog
	}
	s := &Screen{
		cols:    cols,
		rows:    rows,
		lines:   make([]string, rows),
		stamps:  make([]uint64, rows),
		cursor:  Cursor{Visible: true},
		rev:     o.BaseRevision,
		hist:    newHistory(o.History),
		text:    textLog{max: o.TextLog},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.t = newTerm(cols, rows, &s.live)
	return s
}

// Close stops the emulator's drain goroutine and releases the emulator. The
// last state stays readable; Write, Seed and Resize then return ErrClosed (or
// do nothing). Changed and Done channels are closed. Close is idempotent.
func (s *Screen) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.t.stop()
	s.t = nil
	close(s.changed)
	close(s.done)
	return nil
}

// Done is closed when the Screen is closed.
func (s *Screen) Done() <-chan struct{} { return s.done }

// run calls f on the emulator under recover. A panic poisons the emulator.
func (s *Screen) run(op string, f func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.t.poisoned = true
			err = &PanicError{Op: op, Value: v}
		}
	}()
	f()
	return nil
}

// Write applies pane output. It bumps the revision if anything visible
// changed or the output carried text. It never blocks on the program's
// queries. If the emulator panics (now or earlier, until the next Seed) it
// returns an ErrNeedReseed error; the output's text is still logged.
func (s *Screen) Write(p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if len(p) == 0 {
		return nil
	}
	textStart := s.text.end()
	textAdded := s.text.write(p)
	if s.t.poisoned {
		if textAdded {
			s.bump(textStart)
		}
		return ErrNeedReseed
	}
	err := s.run("write", func() { _, _ = s.t.emu.Write(p) })
	if err != nil {
		if textAdded {
			s.bump(textStart)
		}
		return err
	}
	s.commit(textStart, textAdded, false, false)
	return nil
}

// Seed replaces the whole state with tmux's view of the pane: size, rows,
// cursor, scroll region, modes and title. It bumps the revision — always,
// except when it rebuilds the emulator Sleep released and nothing visible
// differs from what was published (a resting or sleeping mirror looked at
// again has not changed); the rows whose text differs are recorded as
// changed. It clears a poisoned
// emulator by building a fresh one. Output written after Seed continues from
// the seeded state; any escape sequence cut by the seed is dropped.
func (s *Screen) Seed(st SeedState) error {
	if err := st.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	resized := st.Columns != s.cols || st.Rows != s.rows
	released := s.t.emu == nil // after Sleep: the published state stands
	if s.t.poisoned {
		s.t.stop()
		s.live = live{}
		s.t = newTerm(st.Columns, st.Rows, &s.live)
	} else if resized {
		if err := s.run("seed", func() { s.t.emu.Resize(st.Columns, st.Rows) }); err != nil {
			return err
		}
	}
	s.setSize(st.Columns, st.Rows)
	data := seedBytes(&st)
	if err := s.run("seed", func() { _, _ = s.t.emu.Write(data) }); err != nil {
		return err
	}
	// tmux puts the cursor one past the last column while a wrap is
	// pending; the CUP above stopped at the last column.
	setPhantom(s.t.emu, st.CursorX >= st.Columns)
	s.live.title = st.Title
	s.text.strip.reset()
	s.commit(s.text.end(), false, resized, !released)
	return nil
}

// Resize sets the screen to the pane's size (each at least 1); every row
// counts as changed. tmux reflows without output, so the caller reseeds
// afterwards.
func (s *Screen) Resize(cols, rows int) {
	cols, rows = max(cols, 1), max(rows, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || (cols == s.cols && rows == s.rows) {
		return
	}
	s.setSize(cols, rows)
	if s.t.poisoned || s.run("resize", func() { s.t.emu.Resize(cols, rows) }) != nil {
		// Rows keep their text; the next Write reports ErrNeedReseed.
		s.bump(s.text.end()).all = true
		return
	}
	s.commit(s.text.end(), false, true, false)
}

// setSize resizes the published rows.
func (s *Screen) setSize(cols, rows int) {
	s.cols = cols
	if rows != s.rows {
		lines := make([]string, rows)
		copy(lines, s.lines)
		s.lines, s.rows = lines, rows
		s.stamps = make([]uint64, rows) // a resized grid is copied whole
	}
}

// commit publishes the emulator's state and bumps the revision if anything
// changed (or force). all marks every row changed.
//
// Only rows the emulator marked touched are compared (its RenderBuffer marks
// every line it writes, scrolls or erases); the marks are then cleared in
// place. When the marks cannot be trusted (live.fullScan) or all is set,
// every row is compared.
func (s *Screen) commit(textStart uint64, textAdded, all, force bool) {
	emu := s.t.emu
	touched := emu.Touched()
	scanAll := all || s.live.fullScan
	shift := s.live.shift
	s.live.shift = 0
	// prev is the rows' text before this commit when the fast line feed
	// moved them (scroll.go): rows that only moved are not read from the
	// emulator again, and a row counts as changed when its text differs
	// from what the row showed before, as without the shift.
	var prev []string
	if shift > 0 && !scanAll {
		prev = append(s.prevLines[:0], s.lines...)
		s.prevLines = prev
		k := min(shift, s.rows)
		copy(s.lines, s.lines[k:])
		clear(s.lines[s.rows-k:])
		copy(s.stamps, s.stamps[k:])
		for y := s.rows - k; y < s.rows; y++ {
			s.stamp++
			s.stamps[y] = s.stamp
		}
	}
	var e *histEntry
	for y := 0; y < s.rows; y++ {
		before := s.lines[y]
		if prev != nil {
			before = prev[y]
		}
		if !scanAll && (y >= len(touched) || touched[y] == nil) {
			if prev != nil && s.lines[y] != before {
				if e == nil {
					e = s.bump(textStart)
				}
				e.set(y) // moved: another row's text is here now
			}
			continue
		}
		s.stamp++
		s.stamps[y] = s.stamp // touched: its cells may differ, styles included
		s.rowBuf = appendRow(s.rowBuf[:0], emu, y, s.cols)
		if string(s.rowBuf) != s.lines[y] {
			s.lines[y] = string(s.rowBuf)
		}
		if s.lines[y] == before && !all {
			continue
		}
		if e == nil {
			e = s.bump(textStart)
		}
		e.set(y)
	}
	clear(touched)
	s.live.fullScan = false
	s.t.shrinkAlt()
	pos := emu.CursorPosition()
	cursor := Cursor{X: pos.X, Y: pos.Y, Visible: !emu.CursorHidden()}
	if pos.X == s.cols-1 && atPhantom(emu) {
		cursor.X = s.cols // pending wrap: as tmux reports it
	}
	modes := Modes{
		AltScreen:      emu.IsAltScreen(),
		AppCursor:      s.live.appCursor,
		BracketedPaste: s.live.bracketedPaste,
		Mouse:          s.live.mouse != 0,
		MouseSGR:       s.live.mouseSGR,
		MouseTracking:  s.live.mouse,
		MouseUTF8:      s.live.mouseUTF8,
		MouseURXVT:     s.live.mouseURXVT,
	}
	meta := cursor != s.cursor || modes != s.modes || s.live.title != s.title
	s.cursor, s.modes, s.title = cursor, modes, s.live.title
	if e == nil && (meta || textAdded || force || all) {
		e = s.bump(textStart)
	}
	if e != nil && all {
		e.all = true
	}
}

// bump starts a new revision and wakes the waiters.
func (s *Screen) bump(textStart uint64) *histEntry {
	s.rev++
	e := s.hist.add(s.rev, s.rows)
	e.textStart = textStart
	close(s.changed)
	s.changed = make(chan struct{})
	return e
}

// Revision returns the current revision (0 for a fresh Screen).
func (s *Screen) Revision() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

// Changed returns a channel closed at the next revision bump (each revision
// has a fresh channel), or when the Screen is closed; after Close it returns
// a closed channel. Take the channel and the revision under one call to
// WaitState to avoid missing a bump in between.
func (s *Screen) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// WaitState returns the current revision and the channel closed at the next
// bump, taken atomically.
func (s *Screen) WaitState() (uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev, s.changed
}

// Rows returns the visible rows, trailing spaces trimmed, a wide character
// counting as one string position.
func (s *Screen) Rows() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// value is the contract's view of the modes.
func (m Modes) value() tools.Modes {
	return tools.Modes{AltScreen: m.AltScreen, AppCursor: m.AppCursor, BracketedPaste: m.BracketedPaste, Mouse: m.Mouse}
}

// Modes returns the current modes.
func (s *Screen) Modes() Modes {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modes
}

// Snapshot returns the visible state.
func (s *Screen) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Snapshot{
		Revision: s.rev,
		Columns:  s.cols,
		Rows:     s.rows,
		Cursor:   s.cursor,
		Modes:    s.modes.value(),
		Title:    s.title,
		Lines:    append([]string(nil), s.lines...),
	}
}

// Dims is the screen's revision and size: Snapshot without the copy of
// its lines (terminal_list reads it for every node).
func (s *Screen) Dims() (rev uint64, cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev, s.cols, s.rows
}

// checkRev validates a base revision against the kept history. Called with
// mu held.
func (s *Screen) checkRev(rev uint64) error {
	if rev > s.rev {
		return &RevisionError{Requested: rev, Oldest: s.hist.oldest(s.rev), Current: s.rev, Err: ErrFutureRevision}
	}
	if rev < s.hist.oldest(s.rev) {
		return &RevisionError{Requested: rev, Oldest: s.hist.oldest(s.rev), Current: s.rev, Err: ErrHistoryTruncated}
	}
	return nil
}

// ChangesSince returns the rows changed after revision rev, with their
// current text, and the current cursor. A row that changed and changed back
// is reported too. rev older than the kept history is an
// ErrHistoryTruncated error, rev newer than the current one an
// ErrFutureRevision error (both *RevisionError).
func (s *Screen) ChangesSince(rev uint64) (Changes, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkRev(rev); err != nil {
		return Changes{}, err
	}
	c := Changes{Revision: s.rev, Rows: []Row{}, Cursor: tools.Position{X: s.cursor.X, Y: s.cursor.Y}}
	if rev == s.rev {
		return c, nil
	}
	union := make([]uint64, (s.rows+63)/64)
	all := false
	for r := rev + 1; r <= s.rev && !all; r++ {
		e := s.hist.entry(r)
		all = e.all
		for i := range min(len(union), len(e.rows)) {
			union[i] |= e.rows[i]
		}
	}
	for y := 0; y < s.rows; y++ {
		if all || union[y/64]&(1<<(y%64)) != 0 {
			c.Rows = append(c.Rows, Row{Row: y, Text: s.lines[y]})
		}
	}
	return c, nil
}

// TextSince returns the plain text of the output applied after revision
// rev: escape sequences stripped, CR, LF and CR LF as "\n", UTF-8 kept
// (invalid bytes become U+FFFD). It fails with ErrHistoryTruncated if rev is
// older than the kept revisions or its text was dropped from the bounded
// log, with ErrFutureRevision if rev is newer than the current revision.
func (s *Screen) TextSince(rev uint64) (string, error) {
	text, _, err := s.TextAfter(rev)
	return text, err
}

// TextAfter is TextSince that also returns the revision the text runs up
// to, for incremental readers: pass it as rev next time.
func (s *Screen) TextAfter(rev uint64) (text string, current uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkRev(rev); err != nil {
		return "", s.rev, err
	}
	off := s.text.end()
	if rev < s.rev {
		off = s.hist.entry(rev + 1).textStart
	}
	text, ok := s.text.since(off)
	if !ok {
		return "", s.rev, &RevisionError{Requested: rev, Oldest: s.oldestText(), Current: s.rev, Err: ErrHistoryTruncated}
	}
	return text, s.rev, nil
}

// oldestText returns the oldest revision whose text is still in the log.
func (s *Screen) oldestText() uint64 {
	for r := s.hist.oldest(s.rev); r < s.rev; r++ {
		if s.hist.entry(r+1).textStart >= s.text.start {
			return r
		}
	}
	return s.rev
}
