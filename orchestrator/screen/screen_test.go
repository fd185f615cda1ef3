package screen_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// newScreen returns a Screen closed at the end of the test.
func newScreen(t testing.TB, cols, rows int) *screen.Screen {
	t.Helper()
	s := screen.New(cols, rows)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// writeAll writes each input with a deadline: x/vt blocks on queries when
// nobody drains its input pipe, and a test must not hang on that.
func writeAll(t testing.TB, s *screen.Screen, inputs ...string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var first error
		for _, in := range inputs {
			if err := s.Write([]byte(in)); err != nil && first == nil {
				first = err
			}
		}
		done <- first
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("Write blocked on %q", inputs)
		return nil
	}
}

// rows pads want to h rows.
func rows(h int, want ...string) []string {
	out := make([]string, h)
	copy(out, want)
	return out
}

var golden = []struct {
	name   string
	w, h   int
	input  []string
	want   []string // nil: only check that nothing broke
	cur    screen.Cursor
	modes  screen.Modes
	title  string
	anyErr bool // Write may return ErrNeedReseed
}{
	{
		name: "plain text", w: 10, h: 3,
		input: []string{"hello"},
		want:  rows(3, "hello"),
		cur:   screen.Cursor{X: 5, Y: 0, Visible: true},
	},
	{
		name: "CRLF", w: 10, h: 3,
		input: []string{"one\r\ntwo\r\n"},
		want:  rows(3, "one", "two"),
		cur:   screen.Cursor{X: 0, Y: 2, Visible: true},
	},
	{
		name: "bare LF keeps the column", w: 10, h: 3,
		input: []string{"ab\ncd"},
		want:  rows(3, "ab", "  cd"),
		cur:   screen.Cursor{X: 4, Y: 1, Visible: true},
	},
	{
		name: "colors stripped from lines", w: 20, h: 2,
		input: []string{"\x1b[1;31mred\x1b[0m \x1b[38;2;1;2;3mrgb\x1b[m \x1b[44m  \x1b[0m"},
		want:  rows(2, "red rgb"),
		cur:   screen.Cursor{X: 10, Y: 0, Visible: true},
	},
	{
		name: "cursor movement", w: 10, h: 4,
		input: []string{"\x1b[3;5HX", "\x1b[A\x1b[2DY", "\x1b[HZ", "\x1b[10;10H"},
		want:  rows(4, "Z", "   Y", "    X"),
		cur:   screen.Cursor{X: 9, Y: 3, Visible: true},
	},
	{
		name: "clear screen", w: 10, h: 3,
		input: []string{"aaa\r\nbbb\r\nccc", "\x1b[2J\x1b[H", "new"},
		want:  rows(3, "new"),
		cur:   screen.Cursor{X: 3, Y: 0, Visible: true},
	},
	{
		name: "erase line parts", w: 10, h: 2,
		input: []string{"abcdefgh\x1b[1;4H\x1b[K", "\r\nxyz\x1b[2D\x1b[1K"},
		want:  rows(2, "abc", "  z"),
		cur:   screen.Cursor{X: 1, Y: 1, Visible: true},
	},
	{
		name: "scrolling beyond the bottom", w: 10, h: 3,
		input: []string{"1\r\n2\r\n3\r\n4\r\n5"},
		want:  rows(3, "3", "4", "5"),
		cur:   screen.Cursor{X: 1, Y: 2, Visible: true},
	},
	{
		name: "autowrap at the right edge", w: 5, h: 3,
		input: []string{"abcdefg"},
		want:  rows(3, "abcde", "fg"),
		cur:   screen.Cursor{X: 2, Y: 1, Visible: true},
	},
	{
		name: "scroll region", w: 10, h: 4,
		input: []string{"top\x1b[2;3r\x1b[2;1Ha\r\nb\r\nc\x1b[r\x1b[4;1Hbot"},
		want:  rows(4, "top", "b", "c", "bot"),
		cur:   screen.Cursor{X: 3, Y: 3, Visible: true},
	},
	{
		name: "alternate screen enter", w: 10, h: 3,
		input: []string{"main", "\x1b[?1049h", "alt"},
		want:  rows(3, "alt"),
		cur:   screen.Cursor{X: 3, Y: 0, Visible: true},
		modes: screen.Modes{AltScreen: true},
	},
	{
		name: "alternate screen exit restores main and cursor", w: 10, h: 3,
		input: []string{"main", "\x1b[?1049h", "\x1b[2;2Halt", "\x1b[?1049l"},
		want:  rows(3, "main"),
		cur:   screen.Cursor{X: 4, Y: 0, Visible: true},
	},
	{
		name: "alternate screen 1047", w: 10, h: 3,
		input: []string{"main", "\x1b[?1047h", "\x1b[1;5Hx"},
		want:  rows(3, "    x"),
		cur:   screen.Cursor{X: 5, Y: 0, Visible: true},
		modes: screen.Modes{AltScreen: true},
	},
	{
		name: "title OSC 0 BEL", w: 10, h: 2,
		input: []string{"\x1b]0;my title\x07"},
		want:  rows(2),
		cur:   screen.Cursor{Visible: true},
		title: "my title",
	},
	{
		name: "title OSC 2 ST with semicolon, split", w: 10, h: 2,
		input: []string{"\x1b]2;a;", "b\x1b\\"},
		want:  rows(2),
		cur:   screen.Cursor{Visible: true},
		title: "a;b",
	},
	{
		name: "modes DECCKM 2004 1000 1049 25", w: 10, h: 2,
		input: []string{"\x1b[?1h\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b[?1049h\x1b[?25l"},
		want:  rows(2),
		cur:   screen.Cursor{Visible: false},
		modes: screen.Modes{AltScreen: true, AppCursor: true, BracketedPaste: true, Mouse: true, MouseSGR: true, MouseTracking: 1000},
	},
	{
		name: "mouse x10 tracking and utf8 encoding", w: 10, h: 2,
		input: []string{"\x1b[?9h\x1b[?1005h"},
		want:  rows(2),
		cur:   screen.Cursor{Visible: true},
		modes: screen.Modes{Mouse: true, MouseTracking: 9, MouseUTF8: true},
	},
	{
		name: "mouse any-motion replaces button, urxvt encoding", w: 10, h: 2,
		input: []string{"\x1b[?1002h\x1b[?1015h", "\x1b[?1003h"},
		want:  rows(2),
		cur:   screen.Cursor{Visible: true},
		modes: screen.Modes{Mouse: true, MouseTracking: 1003, MouseURXVT: true},
	},
	{
		name: "RIS resets every mouse mode", w: 10, h: 2,
		input: []string{"\x1b[?1003h\x1b[?1005h\x1b[?1015h\x1b[?1006h", "\x1bc"},
		want:  rows(2),
		cur:   screen.Cursor{Visible: true},
	},
	{
		name: "modes reset", w: 10, h: 2,
		input: []string{"\x1b[?1h\x1b[?2004h\x1b[?1003h\x1b[?25l", "\x1b[?1l\x1b[?2004l\x1b[?1000l\x1b[?25h"},
		want:  rows(2),
		cur:   screen.Cursor{Visible: true},
	},
	{
		name: "mouse 1002 then 1006 alone", w: 10, h: 2,
		input: []string{"\x1b[?1002h", "\x1b[?1002l\x1b[?1006h"},
		want:  rows(2),
		cur:   screen.Cursor{Visible: true},
		modes: screen.Modes{MouseSGR: true},
	},
	{
		name: "wide chars CJK and emoji are one position", w: 10, h: 2,
		input: []string{"日本x🙂y"},
		want:  rows(2, "日本x🙂y"),
		cur:   screen.Cursor{X: 8, Y: 0, Visible: true},
	},
	{
		name: "combining characters", w: 10, h: 2,
		input: []string{"e\u0301a\u0308!"},
		want:  rows(2, "e\u0301a\u0308!"),
		cur:   screen.Cursor{X: 3, Y: 0, Visible: true},
	},
	{
		name: "wide char at the right edge does not crash", w: 5, h: 3,
		input: []string{"abcd日", "\x1b[2;5H本x", "\x1b[3;5H🙂🙂"},
		want:  nil,
	},
	{
		name: "split UTF-8 across writes", w: 10, h: 2,
		input: []string{"\xe6", "\x97", "\xa5x\xf0\x9f", "\x99\x82"},
		want:  rows(2, "日x🙂"),
		cur:   screen.Cursor{X: 5, Y: 0, Visible: true},
	},
	{
		name: "queries DA DSR DECRQM OSC 11 do not block", w: 10, h: 2,
		input: []string{"\x1b[c", "\x1b[>c", "\x1b[5n\x1b[6n\x1b[?6n", "\x1b[?2004$p\x1b[4$p", "\x1b]10;?\x07\x1b]11;?\x1b\\\x1b]12;?\x07", "ok"},
		want:  rows(2, "ok"),
		cur:   screen.Cursor{X: 2, Y: 0, Visible: true},
	},
	{
		name: "oversized scroll region then SU", w: 10, h: 24,
		input: []string{"first", "\x1b[1;50r", "\x1b[S", "\x1b[24;1Hlast\n"},
		want:  append(make([]string, 22), "last", ""),
		cur:   screen.Cursor{X: 4, Y: 23, Visible: true},
	},
	{
		name: "huge CHT, CBT, REP and ECH counts are clamped", w: 10, h: 2,
		input: []string{"a\x1b[999999999999b", "\x1b[1;3H\x1b[99999999999X", "\x1b[2;1H\x1b[99999999999I", "\x1b[99999999999Zy"},
		want:  rows(2, "aa", "y"),
		cur:   screen.Cursor{X: 1, Y: 1, Visible: true},
	},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range golden {
		t.Run(tc.name, func(t *testing.T) {
			s := newScreen(t, tc.w, tc.h)
			err := writeAll(t, s, tc.input...)
			if err != nil && !(tc.anyErr && errors.Is(err, screen.ErrNeedReseed)) {
				t.Fatalf("Write: %v", err)
			}
			snap := s.Snapshot()
			if len(snap.Lines) != tc.h || snap.Rows != tc.h || snap.Columns != tc.w {
				t.Fatalf("size %dx%d with %d lines, want %dx%d", snap.Columns, snap.Rows, len(snap.Lines), tc.w, tc.h)
			}
			if tc.want == nil {
				return
			}
			if !slices.Equal(snap.Lines, tc.want) {
				t.Errorf("lines:\n got %q\nwant %q", snap.Lines, tc.want)
			}
			if !slices.Equal(s.Rows(), tc.want) {
				t.Errorf("Rows() = %q", s.Rows())
			}
			if snap.Cursor != tc.cur {
				t.Errorf("cursor = %+v, want %+v", snap.Cursor, tc.cur)
			}
			m := tc.modes
			if snap.Modes != (tools.Modes{AltScreen: m.AltScreen, AppCursor: m.AppCursor, BracketedPaste: m.BracketedPaste, Mouse: m.Mouse}) || s.Modes() != tc.modes {
				t.Errorf("modes = %+v, want %+v", snap.Modes, tc.modes)
			}
			if snap.Title != tc.title {
				t.Errorf("title = %q, want %q", snap.Title, tc.title)
			}
		})
	}
}

func TestOversizedScrollRegionStillUsable(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 80, 24)
	err := writeAll(t, s, "\x1b[1;50r", "\x1b[S", "\x1b[1;50r\x1b[50;1H\n\n\n\x1b[T\x1b[L\x1b[M")
	if err != nil && !errors.Is(err, screen.ErrNeedReseed) {
		t.Fatalf("Write: %v", err)
	}
	if err == nil {
		if err := writeAll(t, s, "\x1b[r\x1b[H\x1b[2Jalive"); err != nil {
			t.Fatal(err)
		}
		if got := s.Rows()[0]; got != "alive" {
			t.Fatalf("row 0 = %q", got)
		}
	}
}

func TestRandomGarbage(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 40, 10)
	all := make([]byte, 0, 256*8)
	for i := range 256 * 8 {
		all = append(all, byte(i*131+i/256*7))
	}
	_ = writeAll(t, s, string(all))
	if n := len(s.Rows()); n != 10 {
		t.Fatalf("%d rows", n)
	}
	// A reseed always brings it back.
	if err := s.Seed(screen.SeedState{Columns: 40, Rows: 10, CursorX: 2, CursorVisible: true, Lines: []string{"ok"}}); err != nil {
		t.Fatal(err)
	}
	if err := writeAll(t, s, "!"); err != nil {
		t.Fatal(err)
	}
	if got := s.Rows()[0]; got != "ok!" {
		t.Fatalf("after reseed row 0 = %q", got)
	}
}

func TestChanged(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 10, 3)
	rev, ch := s.WaitState()
	if rev != 0 {
		t.Fatalf("fresh revision %d", rev)
	}
	// No-ops: nothing visible changes, no text.
	for _, in := range []string{"", "\x1b[m", "\x1b[31m", "\x1b[?2004l", "\x1b[H"} {
		if err := s.Write([]byte(in)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
			t.Fatalf("Changed closed by no-op %q", in)
		default:
		}
	}
	if s.Revision() != 0 {
		t.Fatalf("no-op bumped revision to %d", s.Revision())
	}
	woke := make(chan struct{})
	go func() { <-ch; close(woke) }()
	if err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("Changed not closed by a write")
	}
	if s.Revision() != 1 {
		t.Fatalf("revision %d", s.Revision())
	}
	ch2 := s.Changed()
	select {
	case <-ch2:
		t.Fatal("fresh channel already closed")
	default:
	}
	// A mode change alone bumps too.
	_ = s.Write([]byte("\x1b[?1h"))
	select {
	case <-ch2:
	default:
		t.Fatal("mode change did not bump")
	}
	// Close wakes waiters.
	ch3 := s.Changed()
	_ = s.Close()
	select {
	case <-ch3:
	default:
		t.Fatal("Close did not close Changed")
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed")
	}
	if err := s.Write([]byte("x")); !errors.Is(err, screen.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if got := s.Rows()[0]; got != "x" {
		t.Fatalf("state lost after Close: %q", got)
	}
}

func TestChangesSince(t *testing.T) {
	t.Parallel()
	s := screen.NewWithOptions(10, 4, screen.Options{History: 8})
	defer s.Close()
	_ = s.Write([]byte("a\r\nb\r\nc"))      // rev 1: rows 0-2
	_ = s.Write([]byte("\x1b[2;1HB"))       // rev 2: row 1
	_ = s.Write([]byte("\x1b[4;1Hd\x1b[H")) // rev 3: row 3
	if r := s.Revision(); r != 3 {
		t.Fatalf("revision %d", r)
	}
	c, err := s.ChangesSince(1)
	if err != nil {
		t.Fatal(err)
	}
	want := []screen.Row{{Row: 1, Text: "B"}, {Row: 3, Text: "d"}}
	if c.Revision != 3 || !slices.Equal(c.Rows, want) || c.Cursor.X != 0 || c.Cursor.Y != 0 {
		t.Fatalf("ChangesSince(1) = %+v", c)
	}
	c, _ = s.ChangesSince(0)
	if len(c.Rows) != 4 {
		t.Fatalf("ChangesSince(0) = %+v", c)
	}
	c, _ = s.ChangesSince(3)
	if len(c.Rows) != 0 || c.Revision != 3 {
		t.Fatalf("ChangesSince(current) = %+v", c)
	}
	if _, err := s.ChangesSince(4); !errors.Is(err, screen.ErrFutureRevision) {
		t.Fatalf("future: %v", err)
	}
	for i := range 10 {
		_ = s.Write([]byte{'0' + byte(i)})
	}
	// 13 revisions, 8 kept: base revisions 5..13 are answerable.
	_, err = s.ChangesSince(4)
	var re *screen.RevisionError
	if !errors.Is(err, screen.ErrHistoryTruncated) || !errors.As(err, &re) || re.Oldest != 5 || re.Current != 13 {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := s.ChangesSince(5); err != nil {
		t.Fatal(err)
	}
	// Scrolling changes every row.
	rev := s.Revision()
	_ = s.Write([]byte("\x1b[4;1H\n"))
	c, _ = s.ChangesSince(rev)
	if len(c.Rows) != 4 {
		t.Fatalf("scroll changed %+v", c.Rows)
	}
	// Resize marks every row.
	rev = s.Revision()
	s.Resize(12, 5)
	c, _ = s.ChangesSince(rev)
	if len(c.Rows) != 5 || s.Snapshot().Columns != 12 {
		t.Fatalf("resize changed %+v", c.Rows)
	}
	if s.Revision() != rev+1 {
		t.Fatal("resize did not bump exactly once")
	}
}

func TestTextSince(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 20, 3)
	_ = s.Write([]byte("before\r\n"))
	base := s.Revision()
	inputs := []string{
		"\x1b[1;32mgreen\x1b[0m\r\n",
		"bare\nlf\rcr\r\r\n",
		"\x1b]0;title\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1bP+q544e\x1b\\dcs\x1b(0q\x1b(B",
		"\t日本\xe6",
		"\x97\xa5\x1b[",
		"31mz\x07\x08",
	}
	for _, in := range inputs {
		_ = s.Write([]byte(in))
	}
	got, err := s.TextSince(base)
	if err != nil {
		t.Fatal(err)
	}
	want := "green\nbare\nlf\ncr\nlink dcsq\t日本日z"
	if got != want {
		t.Fatalf("TextSince:\n got %q\nwant %q", got, want)
	}
	all, _ := s.TextSince(0)
	if all != "before\n"+want {
		t.Fatalf("TextSince(0) = %q", all)
	}
	text, cur, err := s.TextAfter(s.Revision())
	if text != "" || cur != s.Revision() || err != nil {
		t.Fatalf("TextAfter(current) = %q %d %v", text, cur, err)
	}
	if _, err := s.TextSince(s.Revision() + 1); !errors.Is(err, screen.ErrFutureRevision) {
		t.Fatalf("future: %v", err)
	}
}

func TestTextSinceBound(t *testing.T) {
	t.Parallel()
	s := screen.NewWithOptions(20, 3, screen.Options{TextLog: 1000, History: 1 << 12})
	defer s.Close()
	line := strings.Repeat("x", 99) + "\n"
	_ = s.Write([]byte(line))
	first := s.Revision()
	for range 30 {
		_ = s.Write([]byte(line))
	}
	if _, err := s.TextSince(0); !errors.Is(err, screen.ErrHistoryTruncated) {
		t.Fatalf("TextSince(0) after 3 KB into a 1 KB log: %v", err)
	}
	if _, err := s.TextSince(first); !errors.Is(err, screen.ErrHistoryTruncated) {
		t.Fatalf("TextSince(first): %v", err)
	}
	rev := s.Revision() - 9
	got, err := s.TextSince(rev)
	if err != nil || got != strings.Repeat(line, 9) {
		t.Fatalf("TextSince(last 9) = %d bytes, %v", len(got), err)
	}
}

func TestSeed(t *testing.T) {
	t.Parallel()
	lines := []string{
		"\x1b[1m\x1b[31mbold red\x1b[0m plain   ",
		"",
		"\x1b[44m  blue bg  \x1b[49m",
		"日本語 and 🙂 wide",
		"exactly twenty chars",
		"this row is longer than twenty",
	}
	st := screen.SeedState{
		Columns: 20, Rows: 7,
		CursorX: 3, CursorY: 5, CursorVisible: false,
		AppCursor: true, BracketedPaste: true, Mouse: true,
		ScrollTop: 1, ScrollBottom: 4,
		Lines: lines,
		Title: "vim; file",
	}
	s := newScreen(t, 10, 3)
	_ = s.Write([]byte("old stuff\x1b[?1049h\x1b]0;old\x07")) // replaced wholesale
	rev := s.Revision()
	if err := s.Seed(st); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	want := rows(7, "bold red plain", "", "  blue bg", "日本語 and 🙂 wide", "exactly twenty chars", "this row is longer t")
	if !slices.Equal(snap.Lines, want) {
		t.Fatalf("lines:\n got %q\nwant %q", snap.Lines, want)
	}
	if snap.Columns != 20 || snap.Rows != 7 {
		t.Fatalf("size %dx%d", snap.Columns, snap.Rows)
	}
	if snap.Cursor != (screen.Cursor{X: 3, Y: 5}) {
		t.Fatalf("cursor %+v", snap.Cursor)
	}
	if snap.Modes != (tools.Modes{AppCursor: true, BracketedPaste: true, Mouse: true}) {
		t.Fatalf("modes %+v", snap.Modes)
	}
	if snap.Title != "vim; file" {
		t.Fatalf("title %q", snap.Title)
	}
	if snap.Revision != rev+1 {
		t.Fatalf("revision %d, want %d", snap.Revision, rev+1)
	}
	// The scroll region is restored: a LF at its bottom scrolls rows 1-4 only.
	_ = s.Write([]byte("\x1b[5;1H\n"))
	got := s.Rows()
	if got[0] != want[0] || got[1] != want[2] || got[4] != "" || got[5] != want[5] {
		t.Fatalf("scroll region not restored: %q", got)
	}
	// Output continues from the seeded state.
	_ = s.Write([]byte("\x1b[7;1Hnext"))
	if s.Rows()[6] != "next" {
		t.Fatalf("row 6 = %q", s.Rows()[6])
	}
}

func TestSeedAltScreen(t *testing.T) {
	t.Parallel()
	st := screen.SeedState{
		Columns: 10, Rows: 3,
		CursorX: 2, CursorY: 1, CursorVisible: true,
		AltScreen:      true,
		Lines:          []string{"\x1b[7m vim \x1b[0m", "~", "~"},
		PrimaryLines:   []string{"$ vim", "", ""},
		PrimaryCursorX: 5, PrimaryCursorY: 0,
	}
	s := newScreen(t, 10, 3)
	if err := s.Seed(st); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if !slices.Equal(snap.Lines, []string{" vim", "~", "~"}) || !snap.Modes.AltScreen ||
		snap.Cursor != (screen.Cursor{X: 2, Y: 1, Visible: true}) {
		t.Fatalf("alt seed: %+v", snap)
	}
	// Leaving the alternate screen shows the seeded main screen and cursor.
	_ = s.Write([]byte("\x1b[?1049l"))
	snap = s.Snapshot()
	if !slices.Equal(snap.Lines, []string{"$ vim", "", ""}) || snap.Modes.AltScreen ||
		snap.Cursor != (screen.Cursor{X: 5, Y: 0, Visible: true}) {
		t.Fatalf("after leaving alt: %+v", snap)
	}
}

func TestSeedChangedRowsAndCutSequence(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 10, 3)
	_ = s.Write([]byte("same\r\nold\x1b]0;unterminated"))
	rev := s.Revision()
	if err := s.Seed(screen.SeedState{Columns: 10, Rows: 3, CursorVisible: true, Lines: []string{"same", "new"}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ChangesSince(rev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Rows, []screen.Row{{Row: 1, Text: "new"}}) {
		t.Fatalf("seed changes %+v", c.Rows)
	}
	// The half-sent OSC does not swallow later output.
	_ = s.Write([]byte("\x1b[3;1Hvisible"))
	if s.Rows()[2] != "visible" {
		t.Fatalf("row 2 = %q", s.Rows()[2])
	}
	if err := s.Seed(screen.SeedState{Columns: 0, Rows: 3}); !errors.Is(err, screen.ErrInvalidSeed) {
		t.Fatalf("invalid seed: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 40, 10)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = s.Snapshot()
			_, _ = s.ChangesSince(s.Revision())
			_, _ = s.TextSince(s.Revision())
			select {
			case <-s.Changed():
			case <-stop:
				return
			}
		}
	}()
	for i := range 2000 {
		_ = s.Write([]byte("line \x1b[6n\r\n"))
		if i%500 == 0 {
			_ = s.Seed(screen.SeedState{Columns: 40, Rows: 10, CursorVisible: true})
			s.Resize(40+i%3, 10)
		}
	}
	close(stop)
	<-done
}

func TestJSONShapes(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 4, 2)
	_ = s.Write([]byte("\x1b]2;t\x07ab"))
	b, err := json.Marshal(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"revision":1,"columns":4,"rows":2,"cursor":{"x":2,"y":0,"visible":true},"modes":{"alt_screen":false,"app_cursor":false,"bracketed_paste":false,"mouse":false},"title":"t","lines":["ab",""]}`
	if string(b) != want {
		t.Fatalf("snapshot JSON\n got %s\nwant %s", b, want)
	}
	c, _ := s.ChangesSince(0)
	b, _ = json.Marshal(c)
	if want := `{"revision":1,"rows":[{"row":0,"text":"ab"}],"cursor":{"x":2,"y":0}}`; string(b) != want {
		t.Fatalf("changes JSON\n got %s\nwant %s", b, want)
	}
	var back screen.Changes
	if err := json.Unmarshal(b, &back); err != nil || back.Cursor.X != 2 || len(back.Rows) != 1 {
		t.Fatalf("round trip %+v %v", back, err)
	}
	c, _ = s.ChangesSince(1)
	if b, _ = json.Marshal(c); !strings.Contains(string(b), `"rows":[]`) {
		t.Fatalf("empty rows JSON %s", b)
	}
}

// A screen created at a base revision counts on from it and refuses
// anything older as history-truncated (a restarted node's old cursors).
func TestBaseRevision(t *testing.T) {
	t.Parallel()
	const base = 3 << 32
	s := screen.NewWithOptions(10, 3, screen.Options{BaseRevision: base})
	defer s.Close()
	if got := s.Revision(); got != base {
		t.Fatalf("revision of a blank screen = %d, want %d", got, base)
	}
	if err := s.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if got := s.Revision(); got != base+1 {
		t.Fatalf("revision after a write = %d, want %d", got, base+1)
	}
	if _, err := s.ChangesSince(base); err != nil {
		t.Fatalf("changes since the base: %v", err)
	}
	if _, err := s.ChangesSince(5); !errors.Is(err, screen.ErrHistoryTruncated) {
		t.Fatalf("changes since a revision below the base: %v, want screen.ErrHistoryTruncated", err)
	}
}
