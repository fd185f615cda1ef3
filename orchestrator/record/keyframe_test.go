package record

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// stepClock returns a clock that moves by step at every reading; the
// Recorder reads it from its caller and from its writer goroutine.
func stepClock(step time.Duration) func() time.Time {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	var n atomic.Int64
	return func() time.Time { return t0.Add(time.Duration(n.Add(1)) * step) }
}

// recordWithMirror records evs as the engine does: each output through
// a mirror (a screen.Screen) and the Recorder, a keyframe from the mirror
// whenever the Recorder wants one. It returns the recording's directory.
func recordWithMirror(tb testing.TB, cols, rows int, evs []castEv) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "rec")
	r, err := start(dir, Meta{Node: "t", Columns: cols, Rows: rows}, stepClock(time.Microsecond))
	if err != nil {
		tb.Fatal(err)
	}
	mirror := screen.New(cols, rows)
	defer mirror.Close()
	for _, e := range evs {
		switch e.code {
		case 'o':
			if err := mirror.Write([]byte(e.data)); err != nil {
				tb.Fatal(err)
			}
			r.Output([]byte(e.data))
			if r.WantsKeyframe() {
				r.Keyframe(mirror.Snapshot(), mirror.Modes().MouseSGR)
				// As slow as a terminal: the writer has seen it before
				// the next output (a dropped one is retried then).
				r.mu.Lock()
				r.awaitWriteLocked()
				r.mu.Unlock()
			}
		case 'r':
			var c, h int
			fmt.Sscanf(e.data, "%dx%d", &c, &h)
			mirror.Resize(c, h)
			r.Resize(c, h)
		case 'm':
			r.Mark(e.data)
		}
	}
	if err := r.Close(); err != nil {
		tb.Fatal(err)
	}
	return dir
}

func keyframeLines(tb testing.TB, dir string) int {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Count(string(b), `"type":"keyframe"`)
}

// TestRecordedKeyframesMatchPlainReplay: a recording with keyframes from
// the live mirror gives, at every moment, the screen a plain replay of
// its cast gives, and a frame near the end starts at a recorded keyframe.
func TestRecordedKeyframesMatchPlainReplay(t *testing.T) {
	old := recKeyframeEvery
	recKeyframeEvery = 2 << 10
	defer func() { recKeyframeEvery = old }()
	for _, seed := range []uint64{27, 28, 29} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkRecordedKeyframes(t, seed) })
	}
}

func checkRecordedKeyframes(t *testing.T, seed uint64) {
	// Output only, and no U+FE0F or combining mark: the recorder holds an
	// output's last rune, so a "✔\uFE0F" (or "e\u0301") that ends an
	// output lands in the cast as "✔" and "\uFE0F…" in two events, and a marker or a resize writes a
	// held character as an event of its own; the cast's plain replay then
	// shows narrower what the mirror saw whole (a recorded keyframe shows
	// it as the mirror did).
	var evs []castEv
	for _, e := range genEvents(seed, 40, 10, 3000, 0, false) {
		if e.code == 'o' {
			e.data = strings.NewReplacer("\uFE0F", "", "\u0301", "").Replace(e.data)
			evs = append(evs, e)
		}
	}
	dir := recordWithMirror(t, 40, 10, evs)
	if n := keyframeLines(t, dir); n < 3 {
		t.Fatalf("%d keyframe lines in %s, want at least 3", n, EventsFile)
	}
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	recorded := 0
	for _, k := range tr.kfs {
		if k.recorded {
			recorded++
		}
	}
	if recorded < 3 {
		t.Fatalf("%d recorded keyframes read, want at least 3", recorded)
	}
	want := plainFrames(t, tr.c)
	last := len(tr.c.events)
	s, err := tr.frame(last)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffScreens(s, want[last]); d != "" {
		t.Fatalf("the end: %s", d)
	}
	if !tr.b.jumped {
		t.Fatal("the first frame at the end replayed from the start, not from a recorded keyframe")
	}
	for i := last - 1; i >= 0; i -= 7 {
		s, err := tr.frame(i)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffScreens(s, want[i]); d != "" {
			t.Fatalf("after %d events: %s", i, d)
		}
	}
}

// TestRecordedKeyframeIsWhereTheReplayStarts: a keyframe that says the
// screen is something the cast before it does not make shows through,
// so the replay started there; a trace of the same cast without
// events.jsonl replays from the start.
func TestRecordedKeyframeIsWhereTheReplayStarts(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	r, err := start(dir, Meta{Node: "t", Columns: 20, Rows: 4}, stepClock(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	r.Output([]byte("cast text\r\n"))
	r.Keyframe(tools.Screen{Columns: 20, Rows: 4, Cursor: tools.Cursor{X: 3, Y: 2, Visible: true}, Lines: []string{"keyframe", "", "abc", ""}}, false)
	r.Output([]byte("d\x1b[4;1Hend"))
	// Refused: the alternate screen, a cursor on the last column.
	r.Keyframe(tools.Screen{Columns: 20, Rows: 4, Modes: tools.Modes{AltScreen: true}, Lines: []string{"alt"}}, false)
	r.Keyframe(tools.Screen{Columns: 20, Rows: 4, Cursor: tools.Cursor{X: 19}, Lines: []string{"wrap"}}, false)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := keyframeLines(t, dir); n != 1 {
		t.Fatalf("%d keyframe lines, want 1", n)
	}
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	s, _, err := tr.FrameAt(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Lines, "|"); got != "keyframe||abcd|end" {
		t.Fatalf("frame at the end: %q, want the keyframe's rows and the output after it", got)
	}
	if err := os.Remove(filepath.Join(dir, EventsFile)); err != nil {
		t.Fatal(err)
	}
	tr2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	s, _, err = tr2.FrameAt(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Lines, "|"); !strings.HasPrefix(got, "cast text|") || !strings.HasSuffix(got, "|end") {
		t.Fatalf("frame at the end without keyframes: %q", got)
	}
}

// A keyframe after output that ends in a sequence's final byte is kept
// (that byte is not held back); one inside a sequence, or after a held
// character, is not, and the next output's try is.
func TestKeyframeWhereTheOutputEnds(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	r, err := start(dir, Meta{Node: "t", Columns: 20, Rows: 4}, stepClock(time.Microsecond))
	if err != nil {
		t.Fatal(err)
	}
	scr := tools.Screen{Columns: 20, Rows: 4, Lines: []string{"x"}}
	try := func(out string) bool {
		t.Helper()
		r.Output([]byte(out))
		r.Keyframe(scr, false)
		r.mu.Lock()
		r.awaitWriteLocked()
		r.mu.Unlock()
		return r.WantsKeyframe() // true: dropped, to be tried again
	}
	if try("\x1b[?25l\x1b[1;1Hx\x1b[?25h") {
		t.Error("a keyframe after a sequence's final byte was dropped")
	}
	if !try("abc\x1b]2;ti\r") { // a title going on; a control ends the output (nothing held)
		t.Error("a keyframe inside a sequence was not dropped")
	}
	if try("tle\x07") {
		t.Error("a keyframe after the sequence ended was dropped")
	}
	if !try("tail") {
		t.Error("a keyframe after a held character was not dropped")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := keyframeLines(t, dir); n != 2 {
		t.Fatalf("%d keyframe lines, want 2", n)
	}
}

// A keyframe refused because the cursor was on the last column (a moment
// inside a long line) is tried again at the next output, not a whole
// keyframe spacing later: whether a recording gets keyframes does not
// depend on where the program's output happened to be cut into chunks.
func TestKeyframeAtTheLastColumnIsRetried(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	r, err := start(dir, Meta{Node: "t", Columns: 20, Rows: 4}, stepClock(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	r.Output([]byte(strings.Repeat("x", recKeyframeEvery) + "\r\n"))
	if !r.WantsKeyframe() {
		t.Fatalf("no keyframe wanted after %d bytes", recKeyframeEvery)
	}
	r.Keyframe(tools.Screen{Columns: 20, Rows: 4, Cursor: tools.Cursor{X: 19, Y: 3}, Lines: []string{"xxxxxxxxxxxxxxxxxxxx"}}, false)
	if !r.WantsKeyframe() {
		t.Fatal("a keyframe refused for its cursor on the last column is not tried again at the next output")
	}
	r.Keyframe(tools.Screen{Columns: 20, Rows: 4, Cursor: tools.Cursor{X: 0, Y: 3}, Lines: []string{"xxxxxxxxxxxxxxxxxxxx"}}, false)
	if r.WantsKeyframe() {
		t.Fatal("a keyframe is still wanted after one was taken")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := keyframeLines(t, dir); n != 1 {
		t.Fatalf("%d keyframe lines, want 1", n)
	}
}
