package record

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"

	"github.com/termsprawl/termsprawl/tools"
)

// Keyframes written at record time (issue 27). The engine's mirror holds
// the screen the recorded output makes: every recKeyframeEvery bytes of
// output it hands that screen to Keyframe, and the writer notes it in
// events.jsonl as a line of type "keyframe" with the number of cast
// events it follows. A trace starts a replay at the nearest such
// keyframe instead of at the cast's start, so the first trace_frame_at
// near the end of a long recording replays at most recKeyframeEvery bytes.
//
// A recorded keyframe holds what tools.Screen holds (rows, cursor, modes,
// title) and the mouse encoding; the state a screen does not show (scroll
// region, saved cursors, character sets, tab stops) is restored as a
// fresh terminal has it, as after a reseed. So the engine takes none on
// the alternate screen (the primary one behind it is not in the value)
// or with the cursor on the last column (a pending wrap does not show
// either), and the builder's own keyframes (replay.go) go on being taken
// wherever a replay passes. Recordings without keyframes replay as before.

// recKeyframeEvery is the recorded output between two keyframes (tests
// make it small).
var recKeyframeEvery = 128 << 10

// WantsKeyframe says whether recKeyframeEvery bytes of output were recorded
// since the last keyframe (the caller then calls Keyframe with the
// screen those bytes made).
func (r *Recorder) WantsKeyframe() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.stopped && !r.closed && (r.sinceKF >= recKeyframeEvery || r.kfAgain.Load())
}

// Keyframe notes that s (and mouseSGR, the SGR mouse encoding) is the
// screen after all the output given to Output so far. A screen on the
// alternate screen or not of the recording's size is not kept, and the
// next try is recKeyframeEvery bytes later; one with the cursor on or past
// the last column is not kept either, and the next output tries again.
func (r *Recorder) Keyframe(s tools.Screen, mouseSGR bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.closed {
		return
	}
	if s.Columns >= 1 && s.Rows >= 1 && (s.Cursor.X >= s.Columns-1 || s.Cursor.Y >= s.Rows) {
		// A cursor on the last column is a moment of the output (the
		// middle of a long line, a pending wrap), not a state of the
		// screen: the next output tries again, however the program's
		// output happens to be cut into chunks.
		return
	}
	r.sinceKF = 0
	r.kfAgain.Store(false)
	if s.Modes.AltScreen || s.Columns < 1 || s.Rows < 1 || len(s.Lines) > s.Rows {
		return
	}
	s.Revision = 0
	line, err := json.Marshal(Event{Type: "keyframe", Screen: &s, MouseSGR: mouseSGR})
	if err != nil {
		return
	}
	r.q = appendRecord(r.q, recKey, r.stamp(), line)
	r.kick()
}

// countCast counts a cast event line written (writer goroutine).
func (r *Recorder) countCast() {
	if r.nCast >= 0 {
		r.nCast++
	}
}

// encodeKeyframe turns a keyframe record into its events.jsonl line, with
// the number of cast events written before it. Output held back (a last
// character) makes it wait for the next output; if the count is not known
// (after Resume) it is dropped (writer goroutine).
func (r *Recorder) encodeKeyframe(us int64, data []byte) {
	if r.npend > 0 {
		// Held-back output (a character a combining mark may follow)
		// is in the screen but not yet in the cast: writing it now
		// would cut the cluster the hold keeps whole. The next output
		// tries again.
		r.kfAgain.Store(true)
		return
	}
	if r.inSeq {
		// The output so far ends inside an escape sequence: a replay
		// starting here would begin with a parser in its ground state.
		r.kfAgain.Store(true)
		return
	}
	if r.nCast < 0 {
		return
	}
	var e Event
	if json.Unmarshal(data, &e) != nil || e.Screen == nil {
		return
	}
	e.TMS = us / 1000
	e.CastEvents = r.nCast
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	r.kfBuf = append(append(r.kfBuf, line...), '\n')
}

// trackSeq follows whether the output ends inside an escape sequence
// (writer goroutine, every output in order). From an ESC on, x/ansi's
// parser goes the same way whatever state it was in, so only the bytes
// from the output's last ESC are stepped, or all of them while a
// sequence without one goes on; other output costs a search for ESC. seqEnd says the output's last byte ended a sequence (its
// final byte is not a character a combining mark could join, so it is
// not held back). Bytes that are not UTF-8 are U+FFFD in the cast, so a C1
// control cannot start a sequence there.
func (r *Recorder) trackSeq(p []byte) {
	// IndexByte is vectorised: output without ESC (a log flood) costs
	// one fast pass; from the first ESC on, the last one is looked for.
	i := bytes.IndexByte(p, 0x1b)
	if i >= 0 {
		i += bytes.LastIndexByte(p[i:], 0x1b)
	}
	r.seqEnd = false
	if i < 0 && !r.inSeq {
		return
	}
	if r.vp == nil {
		r.vp = ansi.NewParser()
		r.vp.SetDataSize(256)
	}
	if i >= 0 {
		r.vp.Reset()
		p = p[i:]
	}
	var a parser.Action
	for _, b := range p {
		a = r.vp.Advance(b)
	}
	st := r.vp.State()
	r.inSeq = st != parser.GroundState && st != parser.Utf8State
	r.seqEnd = st == parser.GroundState && a == parser.DispatchAction
}

// recordedKeyframes turns events.jsonl's keyframe lines into keyframes
// of c, in cast order; lines that do not fit the cast (past its end, a
// size out of range, rows that do not fit) are skipped.
func recordedKeyframes(c *parsedCast, events []Event) []*keyframe {
	var kfs []*keyframe
	for _, e := range events {
		s := e.Screen
		if e.Type != "keyframe" || s == nil || e.CastEvents < 1 || e.CastEvents > len(c.events) {
			continue
		}
		if s.Columns < 1 || s.Rows < 1 || s.Columns > maxCols || s.Rows > maxRows || len(s.Lines) > s.Rows ||
			s.Cursor.X < 0 || s.Cursor.Y < 0 || s.Cursor.X >= s.Columns || s.Cursor.Y >= s.Rows || s.Modes.AltScreen {
			continue
		}
		if len(kfs) > 0 && kfs[len(kfs)-1].ev >= e.CastEvents {
			continue
		}
		snap := *s
		snap.Revision = uint64(e.CastEvents)
		for len(snap.Lines) < snap.Rows {
			snap.Lines = append(snap.Lines, "")
		}
		kfs = append(kfs, &keyframe{ev: e.CastEvents, snap: snap, mouseSGR: e.MouseSGR,
			tk: newTracker(snap.Columns, snap.Rows), recorded: true})
	}
	return kfs
}

// jump moves the builder to the latest keyframe at or before target
// when that is ahead of it (a recorded one: the builder's own are all
// behind it), so that it replays from there.
func (t *Trace) jump(target int) {
	i := sort.Search(len(t.kfs), func(i int) bool { return t.kfs[i].ev > target }) - 1
	if i < 0 || t.kfs[i].ev <= t.b.ev {
		return
	}
	f, err := restore(t.c, t.kfs[i], true, nil)
	if err != nil {
		return
	}
	t.b.close()
	f.jumped = true
	t.b = f
	t.sinceKF, t.nextKF = 0, t.kfEvery
}

// addKeyframe keeps k in cast order (a builder behind a recorded keyframe
// takes its own before it); one at an event that has one already is not
// kept.
func (t *Trace) addKeyframe(k *keyframe) bool {
	i := sort.Search(len(t.kfs), func(i int) bool { return t.kfs[i].ev >= k.ev })
	if i < len(t.kfs) && t.kfs[i].ev == k.ev {
		return false
	}
	t.kfs = append(t.kfs, nil)
	copy(t.kfs[i+1:], t.kfs[i:])
	t.kfs[i] = k
	return true
}
