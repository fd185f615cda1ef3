package record

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/termsprawl/termsprawl/tools"
)

// Tuning of the writer.
const (
	flushAt     = 64 << 10 // pending cast bytes that wake the writer
	flushEvery  = 100 * time.Millisecond
	maxBacklog  = 64 << 20 // pending bytes the disk may fall behind by
	holdMax     = 50 * time.Millisecond
	spareCap    = 4 << 20 // larger buffers are not kept for reuse
	maxLabelLen = 200
	maxKeys     = 64
)

// inputWriteBound bounds how long Input waits for its event to be written
// (a stuck disk delays an input at most this long).
const inputWriteBound = 2 * time.Second

// Input kinds (events.jsonl "kind").
const (
	InputType   = "type"
	InputPress  = "press"
	InputPaste  = "paste"
	InputSubmit = "submit"
	InputRaw    = "raw"
	InputMouse  = "mouse"
)

var inputKinds = map[string]bool{InputType: true, InputPress: true, InputPaste: true, InputSubmit: true, InputRaw: true, InputMouse: true}

// Event is one line of events.jsonl. Times are milliseconds from
// Meta.Start. Inputs carry their kind and size only (key names for press
// and mouse); the text of typed, pasted or submitted input is never
// written anywhere.
type Event struct {
	TMS      int64    `json:"t_ms"`
	Type     string   `json:"type"` // start, input, resize, marker, exit, crash, gap, reseed
	Kind     string   `json:"kind,omitempty"`
	Bytes    *int     `json:"bytes,omitempty"`
	Keys     []string `json:"keys,omitempty"`
	Columns  int      `json:"columns,omitempty"`
	Rows     int      `json:"rows,omitempty"`
	Label    string   `json:"label,omitempty"`
	ExitCode *int     `json:"exit_code,omitempty"`
	Signal   string   `json:"signal,omitempty"`
	Crash    *Crash   `json:"crash,omitempty"`
	FromMS   *int64   `json:"from_ms,omitempty"`
	ToMS     *int64   `json:"to_ms,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	// Tree and Revision are a semantic commit's (type semantic, CONTRACT §22).
	Tree     json.RawMessage `json:"tree,omitempty"`
	Revision uint64          `json:"revision,omitempty"`
	// CastEvents, Screen and MouseSGR are a keyframe's (type keyframe,
	// keyframe.go): the screen after the first CastEvents cast events.
	CastEvents int           `json:"cast_events,omitempty"`
	Screen     *tools.Screen `json:"screen,omitempty"`
	MouseSGR   bool          `json:"mouse_sgr,omitempty"`
}

// ErrStopped is wrapped by Err when recording stopped because writing
// fell behind or failed.
var ErrStopped = errors.New("record: recording stopped")

// Recorder writes one recording directory. Its methods are safe for
// concurrent use and never block on the disk: the caller's goroutine only
// encodes into memory, and a writer goroutine owned by the Recorder writes
// to the files (no fsync until Close). After a write error the Recorder
// stops: Err reports the error, Failed is closed, and every further call
// is a no-op; the Recorder logs nothing itself.
type Recorder struct {
	dir    string
	castF  *os.File
	eventF *os.File
	origin time.Time // offset 0 (with a monotonic reading when we took it)
	now    func() time.Time

	mu        sync.Mutex
	meta      Meta
	q         []byte // cast records not yet encoded (see appendRecord)
	eventBuf  []byte // events.jsonl lines not yet written
	spareQ    []byte
	spareE    []byte
	lastUS    int64 // time of the last cast record (times never go back)
	metaDirty bool
	err       error
	stopped   bool
	closed    bool // Close was called: further calls are no-ops
	failed    chan struct{}
	// gen counts the batches handed to the writer's next write; written
	// is the last one written, and writtenCh is closed (and replaced)
	// after each write: Input waits on them.
	gen       uint64
	written   uint64
	writtenCh chan struct{}

	// The writer goroutine's own state: it encodes the records.
	enc    []byte
	pend   [8]byte // held-back output: a printable rune and/or an incomplete UTF-8 tail
	npend  int
	pendUS int64 // time of the output that left pend
	nCast  int   // cast events written (keyframes count them; -1: not known, after Resume)
	kfBuf  []byte
	vp     *ansi.Parser // trackSeq's
	inSeq  bool         // the output so far ends inside an escape sequence
	seqEnd bool         // its last byte ended one

	sinceKF int         // output bytes since the last keyframe (under mu)
	kfAgain atomic.Bool // the writer dropped a keyframe that the next output may retry

	wake     chan struct{}
	quit     chan struct{}
	done     chan struct{}
	closeErr error
	closeMu  sync.Mutex
}

// Cast records: what the caller hands to the writer, in order. Each is a
// kind byte, the time (int64 µs) and the length (uint32) of the data, then
// the data. The writer encodes them; so the caller's cost per output byte
// is a copy.
const (
	recOutput = 'o'
	recFrame  = 'f' // a reseeded frame: output that ends any held bytes first
	recResize = 'r'
	recMark   = 'm'
	recKey    = 'k' // a keyframe (keyframe.go): an events.jsonl line, no cast event
	recHead   = 1 + 8 + 4
)

func appendRecord(q []byte, kind byte, us int64, data []byte) []byte {
	q = append(q, kind)
	q = binary.LittleEndian.AppendUint64(q, uint64(us))
	q = binary.LittleEndian.AppendUint32(q, uint32(len(data)))
	return append(q, data...)
}

// Start creates the recording directory dir (mode 0700; its parents are
// created too; dir itself must not exist) and starts recording: meta.json,
// the cast header and a start event are written before it returns.
// m.Columns and m.Rows are the pane's size; m.Start, if zero, is now, and
// offsets are measured from it.
func Start(dir string, m Meta) (*Recorder, error) {
	return start(dir, m, time.Now)
}

func start(dir string, m Meta, now func() time.Time) (*Recorder, error) {
	if m.Columns < 1 || m.Rows < 1 {
		return nil, tools.Errorf(tools.KindUsage, "record: size %dx%d: columns and rows must be at least 1", m.Columns, m.Rows)
	}
	if m.Start.IsZero() {
		m.Start = now()
	}
	origin := m.Start
	m.Start = m.Start.UTC().Round(0) // meta keeps wall time
	m.Format = FormatVersion
	m.End = time.Time{}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("record: recording directory %s already exists: %w", dir, err)
		}
		return nil, fmt.Errorf("record: %w", err)
	}
	castF, err := os.OpenFile(filepath.Join(dir, CastFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	eventF, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		castF.Close()
		return nil, fmt.Errorf("record: %w", err)
	}
	if err := writeMeta(dir, m); err != nil {
		castF.Close()
		eventF.Close()
		return nil, fmt.Errorf("record: %w", err)
	}
	hdr := castHeader{Version: 2, Width: m.Columns, Height: m.Rows, Timestamp: m.Start.Unix(), Title: m.Node}
	if len(m.Command) > 0 {
		hdr.Command = strings.Join(m.Command, " ")
	}
	line, _ := json.Marshal(hdr)
	line = append(line, '\n')
	if _, err := castF.Write(line); err != nil {
		castF.Close()
		eventF.Close()
		return nil, fmt.Errorf("record: %w", err)
	}
	r := newRecorder(dir, castF, eventF, origin, now, m)
	r.mu.Lock()
	r.addEvent(Event{TMS: 0, Type: "start", Columns: m.Columns, Rows: m.Rows})
	r.mu.Unlock()
	go r.run()
	return r, nil
}

func newRecorder(dir string, castF, eventF *os.File, origin time.Time, now func() time.Time, m Meta) *Recorder {
	return &Recorder{
		dir: dir, castF: castF, eventF: eventF, origin: origin, now: now, meta: m,
		failed:    make(chan struct{}),
		writtenCh: make(chan struct{}),
		wake:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
	}
}

// castHeader is the first line of an asciicast v2 file.
type castHeader struct {
	Version   int    `json:"version"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Timestamp int64  `json:"timestamp,omitempty"`
	Command   string `json:"command,omitempty"`
	Title     string `json:"title,omitempty"`
}

// Dir returns the recording directory.
func (r *Recorder) Dir() string { return r.dir }

// Start is the wall-clock time of the recording's offset 0 (Meta.Start).
func (r *Recorder) Start() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.meta.Start
}

// Err returns the error that stopped the recording, or nil.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Failed is closed when the recording stops on an error.
func (r *Recorder) Failed() <-chan struct{} { return r.failed }

// stamp returns the current offset in microseconds, never before the last
// event. Called with mu held.
func (r *Recorder) stamp() int64 { return r.stampAt(r.now()) }

// stampAt is stamp at time t. Called with mu held.
func (r *Recorder) stampAt(t time.Time) int64 {
	us := t.Sub(r.origin).Microseconds()
	if us < r.lastUS {
		us = r.lastUS
	}
	r.lastUS = us
	return us
}

// fail stops the recording. Called with mu held.
func (r *Recorder) fail(err error) {
	if r.stopped || r.closed {
		return
	}
	r.err = fmt.Errorf("%w: %w", ErrStopped, err)
	r.stopped = true
	r.meta.Error = err.Error()
	r.q, r.eventBuf = nil, nil
	close(r.failed)
}

// kick wakes the writer if enough is pending, and stops the recording if
// the disk fell too far behind. Called with mu held.
func (r *Recorder) kick() {
	if len(r.q)+len(r.eventBuf) > maxBacklog {
		r.fail(fmt.Errorf("the disk fell behind by more than %d MiB of recording", maxBacklog>>20))
		return
	}
	if len(r.q) >= flushAt {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// Output records pane output. The bytes are copied; the call never waits
// for the disk. Bytes that are not valid UTF-8 are recorded as U+FFFD; a
// UTF-8 sequence split across calls is joined.
func (r *Recorder) Output(p []byte) {
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	if !r.stopped && !r.closed {
		r.q = appendRecord(r.q, recOutput, r.stamp(), p)
		r.sinceKF += len(p)
		r.kick()
	}
	r.mu.Unlock()
}

// encodeOutput encodes an output record (writer goroutine).
func (r *Recorder) encodeOutput(us int64, p []byte) {
	r.trackSeq(p)
	b := r.enc
	head := len(b)
	b = appendEventHead(b, us, 'o')
	body := len(b)
	used := 0
	if r.npend > 0 {
		b, used = r.joinPending(b, p)
	}
	if q := p[used:]; len(q) > 0 {
		cut := holdCut(q)
		if r.seqEnd {
			cut = len(q) // a sequence's final byte: nothing to hold
		}
		b = appendJSONText(b, q[:cut])
		r.npend = copy(r.pend[:], q[cut:])
	}
	r.pendUS = us
	if len(b) == body {
		b = b[:head]
	} else {
		b = appendEventTail(b)
		r.countCast()
	}
	r.enc = b
}

// joinPending encodes the held-back bytes, completing an incomplete UTF-8
// tail with the first bytes of p, and returns how many bytes of p it used.
// If p is too short to complete the tail, all of p is used and the tail
// stays held (writer goroutine).
func (r *Recorder) joinPending(b, p []byte) (_ []byte, used int) {
	var j [12]byte
	n := copy(j[:], r.pend[:r.npend])
	m := copy(j[n:], p[:min(len(p), 4)])
	s := j[:n+m]
	i := 0
	for i < n {
		c, size := utf8.DecodeRune(s[i:])
		if c == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(s[i:]) && m == len(p) {
				// Still incomplete: keep it for the next output.
				r.npend = copy(r.pend[:], s[i:])
				return b, len(p)
			}
			b = append(b, "\uFFFD"...)
			i++
			continue
		}
		b = appendJSONText(b, s[i:i+size])
		i += size
	}
	r.npend = 0
	return b, i - n
}

// flushPending writes the held-back printable character as its own event
// (an incomplete UTF-8 tail stays held unless final) (writer goroutine).
func (r *Recorder) flushPending(final bool) {
	if r.npend == 0 {
		return
	}
	p := r.pend[:r.npend]
	tail := incompleteTail(p)
	if final {
		tail = len(p)
	}
	if tail == 0 {
		return
	}
	b := appendEventHead(r.enc, r.pendUS, 'o')
	b = appendJSONText(b, p[:tail])
	r.enc = appendEventTail(b)
	r.countCast()
	r.npend = copy(r.pend[:], p[tail:])
}

// encode turns the records of q into cast lines (writer goroutine).
func (r *Recorder) encode(q []byte) {
	for len(q) >= recHead {
		kind := q[0]
		us := int64(binary.LittleEndian.Uint64(q[1:]))
		n := int(binary.LittleEndian.Uint32(q[9:]))
		data := q[recHead : recHead+n]
		q = q[recHead+n:]
		switch kind {
		case recOutput:
			r.encodeOutput(us, data)
		case recFrame:
			r.flushPending(true)
			r.encodeOutput(us, data)
		case recResize, recMark:
			r.flushPending(false)
			b := appendEventHead(r.enc, us, kind)
			b = appendJSONText(b, data)
			r.enc = appendEventTail(b)
			r.countCast()
		case recKey:
			r.encodeKeyframe(us, data)
		}
	}
}

// addEvent appends a line to events.jsonl. Called with mu held.
func (r *Recorder) addEvent(e Event) {
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	r.eventBuf = append(append(r.eventBuf, line...), '\n')
}

func (r *Recorder) nowMS() int64 { return r.stamp() / 1000 }

// Input records an input by kind (type, press, paste, submit, raw, mouse)
// and size. keys are kept for press and mouse only, and only as key
// names (Enter, C-c, M-S-Up): a character is recorded as "char" and other
// text as "text", so typing by key presses leaves no text either. Other
// kinds never keep keys.
//
// Unlike output, an input's event is written before Input returns (write,
// no fsync: it survives a kill -9 of the orchestrator), so an input that
// was answered is in events.jsonl; a disk that does not take it within
// inputWriteBound delays the input no longer.
func (r *Recorder) Input(kind string, size int, keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.closed {
		return
	}
	defer r.awaitWriteLocked()
	if !inputKinds[kind] {
		kind = "other"
	}
	e := Event{TMS: r.nowMS(), Type: "input", Kind: kind, Bytes: &size}
	if kind == InputPress || kind == InputMouse {
		for i, k := range keys {
			if i == maxKeys {
				e.Keys = append(e.Keys, "…")
				break
			}
			e.Keys = append(e.Keys, keyName(k))
		}
	}
	r.addEvent(e)
	r.kick()
}

// awaitWriteLocked wakes the writer and waits until what is queued now
// was written (or the recording stopped, or inputWriteBound passed).
// Called with mu held; it releases mu while it waits.
func (r *Recorder) awaitWriteLocked() {
	if r.stopped || r.closed {
		return
	}
	r.gen++
	mine := r.gen
	select {
	case r.wake <- struct{}{}:
	default:
	}
	timer := time.NewTimer(inputWriteBound)
	defer timer.Stop()
	for r.written < mine && !r.stopped && !r.closed {
		ch := r.writtenCh
		r.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			r.mu.Lock()
			return
		}
		r.mu.Lock()
	}
}

// keyName keeps a key's name when it is one (Enter, C-c, M-S-Up) and
// hides anything else: a character becomes "char", other text "text"
// (tmux sends an unknown key name as literal text).
func keyName(k string) string {
	base := k
	mods := false
	for len(base) > 2 && (base[0] == 'C' || base[0] == 'M' || base[0] == 'S') && base[1] == '-' {
		base, mods = base[2:], true
	}
	switch {
	case tools.IsKeyName(base):
		return k
	case mods && utf8.RuneCountInString(base) == 1 && base > " " && base < "\x7f":
		return k
	case utf8.RuneCountInString(k) <= 1:
		return "char"
	}
	return "text"
}

// Resize records a new pane size.
func (r *Recorder) Resize(cols, rows int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.closed || cols < 1 || rows < 1 {
		return
	}
	us := r.stamp()
	r.q = appendRecord(r.q, recResize, us, sizeBytes(cols, rows))
	r.addEvent(Event{TMS: us / 1000, Type: "resize", Columns: cols, Rows: rows})
	r.kick()
}

// sizeBytes is "WxH".
func sizeBytes(cols, rows int) []byte {
	return appendDecimal(append(appendDecimal(nil, cols), 'x'), rows)
}

func appendDecimal(b []byte, n int) []byte {
	if n >= 10 {
		b = appendDecimal(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// Mark adds a marker (an "m" event in the cast and a marker event) and
// returns its time in milliseconds from the start. Labels are cut to 200
// characters (see ClipLabel).
func (r *Recorder) Mark(label string) (tMS int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.closed {
		return r.nowMS()
	}
	label = ClipLabel(label)
	us := r.stamp()
	r.q = appendRecord(r.q, recMark, us, []byte(label))
	r.addEvent(Event{TMS: us / 1000, Type: "marker", Label: label})
	r.kick()
	return us / 1000
}

// ClipLabel is a marker label as recorded: valid UTF-8, at most 200
// characters.
func ClipLabel(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= maxLabelLen {
		return s
	}
	return string([]rune(s)[:maxLabelLen])
}

// Exit records that the program exited: an exit event, a crash event if
// crash is not nil, and the exit code, signal, crash and end in meta.json
// (rewritten atomically by the writer). Recording goes on until Close.
func (r *Recorder) Exit(code int, signal string, crash *Crash) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.closed {
		return
	}
	ms := r.nowMS()
	c := code
	r.addEvent(Event{TMS: ms, Type: "exit", ExitCode: &c, Signal: signal})
	r.meta.ExitCode = &c
	r.meta.Signal = signal
	// The recording has ended with the program (CONTRACT §18: meta.json
	// carries end once it has); Close moves end to when it closed.
	r.meta.End = r.now().UTC().Round(0)
	if crash != nil {
		cp := *crash
		cp.ScreenTail = append([]string(nil), crash.ScreenTail...)
		r.addEvent(Event{TMS: ms, Type: "crash", Crash: &cp})
		r.meta.Crash = &cp
	}
	r.metaDirty = true
	select {
	case r.wake <- struct{}{}:
	default:
	}
	r.kick()
}

// Reseed paints s as a frame into the cast (an "o" event that clears the
// screen and draws its rows, cursor, modes and title) and records a reseed
// event with reason. Use it when output was lost (a backlog) or after a
// resize that tmux reflowed, so a replay shows the screen as it is.
func (r *Recorder) Reseed(s tools.Screen, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.closed {
		return
	}
	r.reseedLocked(s, reason)
	r.kick()
}

// reseedLocked queues a resize to s's size and the frame. Called with mu
// held.
func (r *Recorder) reseedLocked(s tools.Screen, reason string) {
	us := r.stamp()
	if s.Columns >= 1 && s.Rows >= 1 {
		r.q = appendRecord(r.q, recResize, us, sizeBytes(s.Columns, s.Rows))
	}
	r.q = appendRecord(r.q, recFrame, us, frameBytes(s))
	r.addEvent(Event{TMS: us / 1000, Type: "reseed", Reason: reason, Columns: s.Columns, Rows: s.Rows})
}

// run is the writer goroutine.
func (r *Recorder) run() {
	defer close(r.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		quit := false
		select {
		case <-r.wake:
		case <-tick.C:
		case <-r.quit:
			quit = true
		}
		r.mu.Lock()
		q, events := r.q, r.eventBuf
		taken := r.gen
		r.q, r.eventBuf = r.spareQ[:0], r.spareE[:0]
		r.spareQ, r.spareE = nil, nil
		var meta *Meta
		if r.metaDirty && !r.stopped {
			m := r.meta
			meta = &m
			r.metaDirty = false
		}
		stopped := r.stopped
		r.mu.Unlock()

		var err error
		if !stopped {
			r.enc = r.enc[:0]
			r.encode(q)
			if r.npend > 0 && r.now().Sub(r.origin).Microseconds()-r.pendUS >= holdMax.Microseconds() {
				r.flushPending(false)
			}
			if quit {
				r.flushPending(true)
			}
			if len(r.kfBuf) > 0 {
				events = append(events, r.kfBuf...)
				r.kfBuf = r.kfBuf[:0]
			}
			err = r.write(r.enc, events, meta)
			if cap(r.enc) > spareCap {
				r.enc = nil
			}
		}
		r.mu.Lock()
		if err != nil {
			r.fail(err)
		}
		r.written = taken
		close(r.writtenCh)
		r.writtenCh = make(chan struct{})
		if cap(q) <= spareCap {
			r.spareQ = q[:0]
		}
		if cap(events) <= spareCap {
			r.spareE = events[:0]
		}
		r.mu.Unlock()
		if quit {
			return
		}
	}
}

// write writes pending bytes to the files (writer goroutine only).
func (r *Recorder) write(cast, events []byte, meta *Meta) error {
	if len(cast) > 0 {
		if _, err := r.castF.Write(cast); err != nil {
			return fmt.Errorf("write %s: %w", CastFile, err)
		}
	}
	if len(events) > 0 {
		if _, err := r.eventF.Write(events); err != nil {
			return fmt.Errorf("write %s: %w", EventsFile, err)
		}
	}
	if meta != nil {
		if err := writeMeta(r.dir, *meta); err != nil {
			return fmt.Errorf("write %s: %w", MetaFile, err)
		}
	}
	return nil
}

// Close ends the recording: everything pending is written, the files are
// synced once, and meta.json gets its end time. It returns the error that
// stopped the recording, if any (meta.json then says so too). Close is
// idempotent.
func (r *Recorder) Close() error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return r.closeErr
	}
	r.closed = true
	r.mu.Unlock()
	close(r.quit)
	<-r.done

	r.mu.Lock()
	err := r.err
	stopped := r.stopped
	r.meta.End = r.now().UTC().Round(0)
	m := r.meta
	r.stopped = true
	r.mu.Unlock()

	if !stopped {
		if e := r.castF.Sync(); e != nil && err == nil {
			err = fmt.Errorf("%w: sync %s: %w", ErrStopped, CastFile, e)
		}
		if e := r.eventF.Sync(); e != nil && err == nil {
			err = fmt.Errorf("%w: sync %s: %w", ErrStopped, EventsFile, e)
		}
	}
	if err != nil && m.Error == "" {
		m.Error = err.Error()
	}
	if e := writeMeta(r.dir, m); e != nil && err == nil {
		err = fmt.Errorf("%w: write %s: %w", ErrStopped, MetaFile, e)
	}
	if e := r.castF.Close(); e != nil && err == nil {
		err = e
	}
	if e := r.eventF.Close(); e != nil && err == nil {
		err = e
	}
	r.closeErr = err
	return err
}
