package record

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// MaxTraceBytes caps the files of one trace (a directory's three files,
// or a zip and what it holds).
const MaxTraceBytes = 128 << 20

// The values of trace_overview, shared with the operation table.
type (
	Overview     = tools.TraceOverview
	Marker       = tools.TraceMarker
	InputSummary = tools.TraceInputs
	Resize       = tools.TraceResize
	ExitInfo     = tools.TraceExit
	Gap          = tools.TraceGap
)

// CastEvent is one event of a cast.
type CastEvent struct {
	TimeUS int64  // microseconds from the start
	Code   string // "o", "r", "m", "i" or another
	Data   string
}

// Trace is an open recording: its files are in memory and screens are
// rebuilt from its cast through orchestrator/screen. Its methods are safe
// for concurrent use.
type Trace struct {
	path     string
	meta     Meta
	c        *parsedCast
	overview Overview
	size     int64
	sem      []Event // semantic tree commits, in time order (semantic.go)

	mu      sync.Mutex
	closed  bool
	b       *feeder     // the builder, replayed up to b.ev
	kfs     []*keyframe // by ev
	sinceKF int         // cast bytes the builder replayed since the last keyframe
	nextKF  int         // ... when it tries the next one
	kfEvery int         // keyframe spacing (tests make it small)
	kfRetry int
	scratch *screen.Screen // reused by replays from keyframes
	retries int            // replays redone without a shortcut (a tainted feeder)
	kfBytes int            // text held by keyframes since the spacing last doubled
	mem     atomic.Int64   // MemoryBytes
}

// maxKeyframeBytes bounds the text the keyframes of one trace hold; past
// it, keyframes are taken twice as far apart.
const maxKeyframeBytes = 32 << 20

// Open reads a recording: a recording directory, a .zip of one, or a bare
// asciicast v2 file. Nothing is extracted to disk.
func Open(p string) (*Trace, error) {
	files, err := readFiles(p)
	if err != nil {
		return nil, err
	}
	return openFiles(p, files)
}

// readFiles reads the files of the recording at p (Open's forms).
func readFiles(p string) (map[string][]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, tools.Errorf(tools.KindNotFound, "trace %s: no such file or directory", p).WithDetails("path", p)
		}
		return nil, tools.Errorf(tools.KindUsage, "trace %s: %w", p, err).WithDetails("path", p)
	}
	switch {
	case st.IsDir():
		return readTraceDir(p)
	case st.Mode().IsRegular() && isZipFile(p):
		return readTraceZip(p, st.Size())
	case st.Mode().IsRegular():
		return readBareCast(p, st.Size())
	}
	return nil, tools.Errorf(tools.KindUsage, "trace %s: not a trace: not a directory, a .zip or a .cast file", p)
}

// filesSize is the bytes the files of the recording at p take on disk
// (a zip's compressed size): what reading them holds at least.
func filesSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	if !st.IsDir() {
		return st.Size()
	}
	var n int64
	for name := range traceFiles {
		if fst, err := os.Stat(filepath.Join(p, name)); err == nil && fst.Mode().IsRegular() {
			n += fst.Size()
		}
	}
	return n
}

// estimateFiles is what openFiles will hold for files, before parsing
// them: the files, the index of the cast's lines and the replay's
// screens of the header's size.
func estimateFiles(files map[string][]byte) int64 {
	var size int64
	for _, b := range files {
		size += int64(len(b))
	}
	raw := files[CastFile]
	cols, rows := 80, 24
	nl := bytes.IndexByte(raw, '\n')
	if nl < 0 {
		nl = len(raw)
	}
	var info castInfo
	if json.Unmarshal(bytes.TrimPrefix(raw[:nl], []byte("\xef\xbb\xbf")), &info) == nil && info.Width > 0 && info.Height > 0 {
		cols, rows = min(info.Width, maxCols), min(info.Height, maxRows)
	}
	return memoryEstimate(size, bytes.Count(raw, []byte{'\n'})+1, cols, rows)
}

func openFiles(p string, files map[string][]byte) (*Trace, error) {
	raw, ok := files[CastFile]
	if !ok {
		return nil, tools.Errorf(tools.KindUsage, "trace %s: not a trace: no %s (a recording holds %s, %s and %s)", p, CastFile, MetaFile, CastFile, EventsFile).WithDetails("path", p)
	}
	c, err := parseCast(raw)
	if err != nil {
		return nil, tools.Errorf(tools.KindUsage, "trace %s: not a trace: %s: %v", p, CastFile, err).WithDetails("path", p)
	}
	t := &Trace{path: p, c: c}
	for _, b := range files {
		t.size += int64(len(b))
	}
	var warnings []string
	if mb, ok := files[MetaFile]; ok {
		if err := json.Unmarshal(mb, &t.meta); err != nil {
			warnings = append(warnings, fmt.Sprintf("%s does not parse (%v): the cast header is used", MetaFile, err))
			t.meta = Meta{}
		}
	}
	if t.meta.Columns < 1 || t.meta.Rows < 1 {
		t.meta.Columns, t.meta.Rows = c.info.Width, c.info.Height
	}
	if t.meta.Start.IsZero() && c.info.Timestamp > 0 {
		t.meta.Start = time.Unix(int64(c.info.Timestamp), 0).UTC()
	}
	if t.meta.Node == "" {
		t.meta.Node = c.info.Title
	}
	if t.meta.Command == nil && c.info.Command != "" {
		t.meta.Command = []string{c.info.Command}
	}
	var events []Event
	if eb, ok := files[EventsFile]; ok {
		events, warnings = parseEvents(eb, warnings)
	}
	t.overview = buildOverview(c, events, t.meta, warnings)
	t.sem = semanticEvents(events)
	t.kfs = recordedKeyframes(c, events)
	t.kfEvery, t.kfRetry = keyframeEvery, keyframeRetry
	t.nextKF = t.kfEvery
	t.mem.Store(memoryEstimate(t.size, cap(c.events), c.info.Width, c.info.Height) + t.overviewBytes())
	for _, k := range t.kfs {
		t.mem.Add(int64(k.size()))
	}
	return t, nil
}

// overviewBytes is what the overview and the semantic trees hold beyond
// the files.
func (t *Trace) overviewBytes() int64 {
	o := &t.overview
	n := int64(len(o.Resizes))*32 + int64(len(o.Gaps))*16 + int64(len(o.Inputs))*48
	for _, m := range o.Markers {
		n += 32 + int64(len(m.Label))
	}
	for _, w := range o.Warnings {
		n += 16 + int64(len(w))
	}
	for _, e := range t.sem {
		n += 256 + int64(len(e.Tree))
	}
	return n
}

// memoryEstimate is what an open trace holds before any keyframe,
// counted from the structures it builds (BenchmarkTraceMemory measures
// it against the process): its files (kept: events point into the cast),
// the index of its events (castEvent each), and the screens a replay
// builds (the builder's, the one checking keyframes, the scratch one for
// replays from a keyframe) with their cell grids.
func memoryEstimate(fileBytes int64, events, cols, rows int) int64 {
	return fileBytes + int64(events)*int64(unsafe.Sizeof(castEvent{})) + replayScreens*screenBytes(cols, rows) + 64<<10
}

// replayScreens is how many screens an open trace's replays hold.
const replayScreens = 3

// screenBytes is what one orchestrator/screen Screen of cols×rows holds:
// the emulator's main and alternate grids (about 112 bytes a cell, and
// the rendered rows), its text log (at most screen.DefaultTextLog) and
// history.
func screenBytes(cols, rows int) int64 {
	return int64(max(cols, 1)*max(rows, 1))*(2*112+16) + screen.DefaultTextLog + 256<<10
}

// MemoryBytes estimates the memory the trace holds: its files, its index
// and its keyframes (which grow as it is replayed).
func (t *Trace) MemoryBytes() int64 { return t.mem.Load() }

// parseEvents reads events.jsonl; lines that do not parse are skipped.
func parseEvents(b []byte, warnings []string) ([]Event, []string) {
	var out []Event
	bad := 0
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var e Event
		if json.Unmarshal(line, &e) != nil {
			bad++
			continue
		}
		out = append(out, e)
	}
	if bad > 0 {
		warnings = append(warnings, fmt.Sprintf("%d lines of %s do not parse: skipped", bad, EventsFile))
	}
	return out, warnings
}

func buildOverview(c *parsedCast, events []Event, m Meta, warnings []string) Overview {
	o := Overview{Markers: []Marker{}, Inputs: []InputSummary{}, Resizes: []Resize{}, Gaps: []Gap{},
		Events: len(c.events), Truncated: c.truncated, OutputBytes: c.output}
	var last int64
	if n := len(c.events); n > 0 {
		last = c.events[n-1].us / 1000
	}
	for i := range c.events {
		e := &c.events[i]
		switch e.code {
		case 'm':
			o.Markers = append(o.Markers, Marker{TMS: e.us / 1000, Label: string(c.data(e, nil))})
		case 'r':
			if e.sizeOK {
				o.Resizes = append(o.Resizes, Resize{TMS: e.us / 1000, Columns: int(e.cols), Rows: int(e.rows)})
			}
		}
	}
	inputs := map[string]*InputSummary{}
	for _, e := range events {
		last = max(last, e.TMS)
		switch e.Type {
		case "input":
			s := inputs[e.Kind]
			if s == nil {
				s = &InputSummary{Kind: e.Kind}
				inputs[e.Kind] = s
			}
			s.Count++
			if e.Bytes != nil {
				s.Bytes += int64(*e.Bytes)
			}
		case "exit":
			o.Exit = &ExitInfo{TMS: e.TMS, ExitCode: e.ExitCode, Signal: e.Signal}
		case "crash":
			o.Crash = e.Crash
		case "gap":
			if e.FromMS != nil && e.ToMS != nil {
				o.Gaps = append(o.Gaps, Gap{FromMS: *e.FromMS, ToMS: *e.ToMS})
				last = max(last, *e.ToMS)
			}
		}
	}
	for _, s := range inputs {
		o.Inputs = append(o.Inputs, *s)
	}
	sort.Slice(o.Inputs, func(i, j int) bool { return o.Inputs[i].Kind < o.Inputs[j].Kind })
	if o.Exit == nil && m.ExitCode != nil {
		o.Exit = &ExitInfo{TMS: last, ExitCode: m.ExitCode, Signal: m.Signal}
	}
	if o.Crash == nil {
		o.Crash = m.Crash
	}
	if !m.End.IsZero() && !m.Start.IsZero() && m.End.After(m.Start) {
		last = max(last, m.End.Sub(m.Start).Milliseconds())
	}
	o.DurationMS = last
	o.Warnings = append(append([]string(nil), c.warnings...), warnings...)
	if m.Error != "" {
		o.Warnings = append(o.Warnings, "recording stopped early: "+m.Error)
	}
	return o
}

// Path is what Open was given.
func (t *Trace) Path() string { return t.path }

// Size is the bytes the trace's files take in memory.
func (t *Trace) Size() int64 { return t.size }

// Meta is meta.json (or what the cast header says, for a bare cast).
func (t *Trace) Meta() Meta {
	m := t.meta
	m.Command = append([]string(nil), m.Command...)
	if m.Crash != nil {
		c := *m.Crash
		m.Crash = &c
	}
	return m
}

// Overview summarises the trace.
func (t *Trace) Overview() Overview {
	o := t.overview
	o.Markers = append([]Marker{}, o.Markers...)
	o.Inputs = append([]InputSummary{}, o.Inputs...)
	o.Resizes = append([]Resize{}, o.Resizes...)
	o.Gaps = append([]Gap{}, o.Gaps...)
	o.Warnings = append([]string(nil), o.Warnings...)
	return o
}

// DurationMS is the length of the recording.
func (t *Trace) DurationMS() int64 { return t.overview.DurationMS }

// Events returns the cast's events in order.
func (t *Trace) Events() iter.Seq[CastEvent] {
	return func(yield func(CastEvent) bool) {
		for i := range t.c.events {
			e := &t.c.events[i]
			code := string([]byte{e.code})
			if e.code == 0 {
				code = "?"
			}
			if !yield(CastEvent{TimeUS: e.us, Code: code, Data: string(t.c.data(e, nil))}) {
				return
			}
		}
	}
}

// Close releases the trace's emulator and keyframes. Later calls fail.
func (t *Trace) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	t.mem.Store(0)
	if t.b != nil {
		t.b.close()
		t.b = nil
	}
	if t.scratch != nil {
		t.scratch.Close()
		t.scratch = nil
	}
	t.kfs = nil
	return nil
}

// resolve turns FrameAt's arguments into a number of cast events to apply
// and the moment (ms) it shows.
func (t *Trace) resolve(timeMS *int64, marker string) (int, int64, error) {
	dur := t.overview.DurationMS
	switch {
	case timeMS != nil && marker != "":
		return 0, 0, tools.Errorf(tools.KindUsage, "give time_ms or marker, not both")
	case marker != "":
		for i := range t.c.events {
			e := &t.c.events[i]
			if e.code == 'm' && string(t.c.data(e, nil)) == marker {
				return i + 1, e.us / 1000, nil
			}
		}
		labels := make([]string, 0, len(t.overview.Markers))
		for _, m := range t.overview.Markers {
			labels = append(labels, fmt.Sprintf("%q", m.Label))
		}
		if len(labels) == 0 {
			return 0, 0, tools.Errorf(tools.KindNotFound, "no marker %q: the recording has no markers", marker).WithDetails("markers", []string{})
		}
		return 0, 0, tools.Errorf(tools.KindNotFound, "no marker %q; markers: %s", marker, strings.Join(labels, ", ")).
			WithDetails("markers", markerLabels(t.overview.Markers))
	case timeMS != nil:
		ms := *timeMS
		if ms < 0 {
			return 0, 0, tools.Errorf(tools.KindUsage, "time_ms %d is negative; the recording runs from 0 to %d ms", ms, dur).WithDetails("duration_ms", dur)
		}
		if ms > dur {
			return 0, 0, tools.Errorf(tools.KindUsage, "time_ms %d is past the end of the recording (duration_ms %d)", ms, dur).WithDetails("duration_ms", dur)
		}
		n := sort.Search(len(t.c.events), func(i int) bool { return t.c.events[i].us/1000 > ms })
		return n, ms, nil
	}
	return len(t.c.events), dur, nil
}

func markerLabels(ms []Marker) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Label
	}
	return out
}

// FrameAt rebuilds the screen at a moment: at time_ms (every event up to
// and including that millisecond), at a marker (every event up to it), or
// with neither at the end. It returns the moment it shows. The screen's
// revision is the number of cast events applied.
func (t *Trace) FrameAt(timeMS *int64, marker string) (tools.Screen, int64, error) {
	target, at, err := t.resolve(timeMS, marker)
	if err != nil {
		return tools.Screen{}, 0, err
	}
	s, err := t.frame(target)
	return s, at, err
}

// WithFrame rebuilds the screen at a moment, as FrameAt does, and calls fn
// with the emulator showing it, for what the snapshot does not carry (the
// screenshot renderer's Screen.Cells: colours and attributes). fn runs
// with the trace locked: it must not call the trace, and must not keep
// the Screen. Unlike FrameAt it never starts from a keyframe (keyframes
// hold text, not colours): a moment at or after the furthest one replayed
// so far costs the replay up to it, an earlier one a replay from the
// start (squeezed: fast for scrolling output, seconds for tens of MB of
// full-screen redraws). It returns the moment shown.
func (t *Trace) WithFrame(timeMS *int64, marker string, fn func(*screen.Screen)) (int64, error) {
	target, at, err := t.resolve(timeMS, marker)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, errClosed
	}
	if t.b == nil {
		t.b = newFeeder(t.c, true)
	}
	if target >= t.b.ev && !t.b.jumped {
		t.extend(target)
		fn(t.b.scr)
		return at, nil
	}
	for _, squeeze := range []bool{true, false} {
		f := newFeeder(t.c, squeeze)
		for f.ev < target && !f.tainted {
			f.step(f.ev)
		}
		f.sync(mkpos(target, 0))
		if !f.tainted || !squeeze {
			fn(f.scr)
			f.close()
			return at, nil
		}
		f.close()
		t.retries++
	}
	return at, nil
}

// Diff returns the rows that differ between the screens at fromMS and
// toMS (every row when the size changed), with their text at toMS, and
// the cursor at toMS: terminal_capture_since's shape. Its revision is the
// number of cast events applied at toMS.
func (t *Trace) Diff(fromMS, toMS int64) (tools.Changes, error) {
	if fromMS > toMS {
		return tools.Changes{}, tools.Errorf(tools.KindUsage, "from_ms %d is after to_ms %d", fromMS, toMS)
	}
	a, _, err := t.FrameAt(&fromMS, "")
	if err != nil {
		return tools.Changes{}, err
	}
	b, _, err := t.FrameAt(&toMS, "")
	if err != nil {
		return tools.Changes{}, err
	}
	ch := tools.Changes{Revision: b.Revision, Rows: []tools.Row{}, Cursor: tools.Position{X: b.Cursor.X, Y: b.Cursor.Y}}
	same := a.Columns == b.Columns && a.Rows == b.Rows
	for i, line := range b.Lines {
		if !same || i >= len(a.Lines) || a.Lines[i] != line {
			ch.Rows = append(ch.Rows, tools.Row{Row: i, Text: line})
		}
	}
	return ch, nil
}

var errClosed = tools.Errorf(tools.KindNotFound, "the trace was closed")

// frame returns the screen after the first target cast events.
func (t *Trace) frame(target int) (tools.Screen, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return tools.Screen{}, errClosed
	}
	if t.b == nil {
		t.b = newFeeder(t.c, true)
	}
	if target >= t.b.ev {
		t.jump(target)
		t.extend(target)
		return t.b.snapshot(), nil
	}
	i := sort.Search(len(t.kfs), func(i int) bool { return t.kfs[i].ev > target }) - 1
	if i >= 0 && t.kfs[i].ev == target {
		s := t.kfs[i].snap
		s.Lines = append([]string(nil), s.Lines...)
		return s, nil
	}
	return t.replayFrom(i, target), nil
}

// Warm replays the whole trace, taking keyframes, so that FrameAt is fast
// anywhere afterwards. It works a slice (about 1 MiB of cast) at a time,
// letting other calls in between, and returns when done or when the trace
// is closed. Run it in a goroutine after Open when the first frame
// should not wait for the replay.
func (t *Trace) Warm() {
	for {
		t.mu.Lock()
		if t.closed || (t.b != nil && t.b.ev >= len(t.c.events)) {
			t.mu.Unlock()
			return
		}
		if t.b == nil {
			t.b = newFeeder(t.c, true)
		}
		target, n := t.b.ev, 0
		for target < len(t.c.events) && n < 1<<20 {
			n += t.c.events[target].span() + 24
			target++
		}
		t.extend(target)
		t.mu.Unlock()
	}
}

// extend replays the builder up to target events, taking keyframes.
func (t *Trace) extend(target int) {
	for t.b.ev < target {
		e := t.b.ev
		t.b.step(e)
		if t.b.tainted {
			t.rebuild(e + 1)
			continue
		}
		ce := &t.c.events[e]
		t.sinceKF += ce.span() + 24
		if t.sinceKF >= t.nextKF && t.b.ev < len(t.c.events) {
			t.b.sync(mkpos(t.b.ev, 0))
			if k := t.b.takeKeyframe(); k != nil && t.addKeyframe(k) {
				t.kfBytes += k.size()
				t.mem.Add(int64(k.size()))
				if t.kfBytes > maxKeyframeBytes {
					t.kfEvery *= 2
					t.kfBytes = 0
				}
				t.sinceKF, t.nextKF = 0, t.kfEvery
			} else {
				t.nextKF = t.sinceKF + t.kfRetry
			}
		}
	}
	t.b.sync(mkpos(target, 0))
	if t.b.tainted {
		t.rebuild(target)
	}
}

// rebuild replaces a tainted builder with one replayed to upTo events
// without squeezing, from the latest keyframe that gives an untainted
// replay (the start always does).
func (t *Trace) rebuild(upTo int) {
	t.retries++
	t.b.close()
	for i := sort.Search(len(t.kfs), func(i int) bool { return t.kfs[i].ev > upTo }) - 1; ; i-- {
		f := t.start(i, false, false)
		f.noSqueeze = upTo
		for f.ev < upTo && !f.tainted {
			f.step(f.ev)
		}
		f.sync(mkpos(upTo, 0))
		if !f.tainted || i < 0 {
			f.squeeze = true
			t.b = f
			return
		}
		f.close()
	}
}

// start returns a feeder at keyframe i (-1: the start), on the trace's
// scratch screen if scratch.
func (t *Trace) start(i int, squeeze, scratch bool) *feeder {
	for ; i >= 0; i-- {
		var scr *screen.Screen
		if scratch {
			if t.scratch == nil {
				t.scratch = screen.New(t.c.info.Width, t.c.info.Height)
			}
			scr = t.scratch
		}
		if f, err := restore(t.c, t.kfs[i], squeeze, scr); err == nil {
			return f
		}
	}
	return newFeeder(t.c, squeeze)
}

// replayFrom replays from keyframe i (-1: the start) to target events on
// a scratch screen: squeezing first, without on a taint, then from
// earlier keyframes.
func (t *Trace) replayFrom(i int, target int) tools.Screen {
	squeeze := true
	for {
		f := t.start(i, squeeze, true)
		for f.ev < target && !f.tainted {
			f.step(f.ev)
		}
		f.sync(mkpos(target, 0))
		if !f.tainted || (i < 0 && !squeeze) {
			s := f.snapshot()
			f.close()
			return s
		}
		f.close()
		t.retries++
		if squeeze {
			squeeze = false
		} else {
			i--
		}
	}
}

// Reading the files.

var traceFiles = map[string]bool{MetaFile: true, CastFile: true, EventsFile: true}

func tooBig(p string, n int64) error {
	return tools.Errorf(tools.KindUsage, "trace %s is %d MB, over the %d MB limit for an open trace", p, (n+(1<<20)-1)>>20, MaxTraceBytes>>20).
		WithDetails("limit_bytes", MaxTraceBytes)
}

func readTraceDir(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	var total int64
	for name := range traceFiles {
		// Opened without blocking and checked as opened: a FIFO named
		// session.cast answers at once instead of holding the call.
		f, st, err := tools.OpenRegular(filepath.Join(dir, name))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if errors.Is(err, tools.ErrNotRegularFile) {
				return nil, tools.Errorf(tools.KindUsage, "trace %s: %s is not a regular file: %w", dir, name, err)
			}
			return nil, tools.Errorf(tools.KindUsage, "trace %s: %w", dir, err)
		}
		if total+st.Size() > MaxTraceBytes {
			f.Close()
			return nil, tooBig(dir, total+st.Size())
		}
		b, err := readAllSized(f, st.Size(), MaxTraceBytes-total)
		f.Close()
		if err != nil {
			return nil, tools.Errorf(tools.KindUsage, "trace %s: read %s: %w", dir, name, err)
		}
		total += int64(len(b))
		if total > MaxTraceBytes {
			return nil, tooBig(dir, total)
		}
		files[name] = b
	}
	return files, nil
}

func readBareCast(p string, size int64) (map[string][]byte, error) {
	if size > MaxTraceBytes {
		return nil, tooBig(p, size)
	}
	f, _, err := tools.OpenRegular(p)
	if err != nil {
		return nil, tools.Errorf(tools.KindUsage, "trace %s: %w", p, err)
	}
	defer f.Close()
	b, err := readAllSized(f, size, MaxTraceBytes)
	if err != nil {
		return nil, tools.Errorf(tools.KindUsage, "trace %s: %w", p, err)
	}
	if len(b) > MaxTraceBytes {
		return nil, tooBig(p, int64(len(b)))
	}
	return map[string][]byte{CastFile: b}, nil
}

// readAllSized reads r, expecting about size bytes, and at most limit+1
// (so the caller sees that it is over the limit).
func readAllSized(r io.Reader, size, limit int64) ([]byte, error) {
	b := make([]byte, 0, min(max(size, 0), limit)+512)
	lr := io.LimitReader(r, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func isZipFile(p string) bool {
	if strings.EqualFold(filepath.Ext(p), ".zip") {
		return true
	}
	f, _, err := tools.OpenRegular(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	return n == 4 && (string(magic[:]) == "PK\x03\x04" || string(magic[:]) == "PK\x05\x06")
}

// zipEntry checks a zip entry's name: a relative, clean path of one of the
// recording's files, at the top or in one directory.
func zipEntry(name string) (dir, base string, isDir bool, err error) {
	switch {
	case name == "":
		return "", "", false, errors.New("an empty name")
	case strings.ContainsRune(name, '\\'):
		return "", "", false, errors.New("a backslash")
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name) || filepath.VolumeName(name) != "" || (len(name) >= 2 && name[1] == ':'):
		return "", "", false, errors.New("an absolute path")
	case strings.ContainsRune(name, 0):
		return "", "", false, errors.New("a NUL byte")
	}
	isDir = strings.HasSuffix(name, "/")
	clean := strings.TrimSuffix(name, "/")
	parts := strings.Split(clean, "/")
	for _, part := range parts {
		if part == ".." {
			return "", "", false, errors.New("a '..' component")
		}
		if part == "" || part == "." {
			return "", "", false, errors.New("a name that is not clean")
		}
	}
	if path.Clean(clean) != clean {
		return "", "", false, errors.New("a name that is not clean")
	}
	if isDir {
		if len(parts) != 1 {
			return "", "", false, errors.New("a nested directory")
		}
		return parts[0], "", true, nil
	}
	switch len(parts) {
	case 1:
		base = parts[0]
	case 2:
		dir, base = parts[0], parts[1]
	default:
		return "", "", false, errors.New("a nested directory")
	}
	if !traceFiles[base] {
		return "", "", false, fmt.Errorf("not one of %s, %s, %s", MetaFile, CastFile, EventsFile)
	}
	return dir, base, false, nil
}

func readTraceZip(p string, size int64) (map[string][]byte, error) {
	if size > MaxTraceBytes {
		return nil, tooBig(p, size)
	}
	zf, st, err := tools.OpenRegular(p)
	if err != nil {
		return nil, tools.Errorf(tools.KindUsage, "trace %s: %w", p, err)
	}
	defer zf.Close()
	if st.Size() > MaxTraceBytes {
		return nil, tooBig(p, st.Size())
	}
	zr, err := zip.NewReader(zf, st.Size())
	if err != nil {
		return nil, tools.Errorf(tools.KindUsage, "trace %s: not a trace: not a readable zip: %v", p, err)
	}
	refuse := func(name string, why error) error {
		return tools.Errorf(tools.KindUsage, "trace %s: zip entry %q is refused: %v", p, name, why).WithDetails("entry", name)
	}
	var declared uint64
	dir := "\x00"
	seen := map[string]bool{}
	for _, f := range zr.File {
		d, base, isDir, err := zipEntry(f.Name)
		if err != nil {
			return nil, refuse(f.Name, err)
		}
		if isDir {
			if !f.Mode().IsDir() && f.Mode()&fs.ModeType != 0 {
				return nil, refuse(f.Name, errors.New("not a directory"))
			}
			continue
		}
		if !f.Mode().IsRegular() {
			return nil, refuse(f.Name, errors.New("not a regular file"))
		}
		if dir == "\x00" {
			dir = d
		} else if d != dir {
			return nil, refuse(f.Name, errors.New("the recording's files are in different directories"))
		}
		if seen[base] {
			return nil, refuse(f.Name, errors.New("a second copy of the file"))
		}
		seen[base] = true
		declared += f.UncompressedSize64
		if declared > MaxTraceBytes {
			return nil, tooBig(p, int64(min(declared, 1<<50)))
		}
	}
	files := map[string][]byte{}
	var total int64
	for _, f := range zr.File {
		_, base, isDir, _ := zipEntry(f.Name)
		if isDir {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, tools.Errorf(tools.KindUsage, "trace %s: zip entry %q: %v", p, f.Name, err)
		}
		b, err := readAllSized(rc, int64(min(f.UncompressedSize64, MaxTraceBytes)), MaxTraceBytes-total)
		rc.Close()
		if err != nil {
			return nil, tools.Errorf(tools.KindUsage, "trace %s: zip entry %q: %v", p, f.Name, err)
		}
		total += int64(len(b))
		if total > MaxTraceBytes {
			return nil, tooBig(p, total)
		}
		files[base] = b
	}
	return files, nil
}
