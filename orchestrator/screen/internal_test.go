package screen

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

func TestScrollbackDisabled(t *testing.T) {
	t.Parallel()
	emu := vt.NewEmulator(10, 3)
	if !disableScrollback(emu) {
		t.Fatal("x/vt layout changed: scrollback could not be removed (alternate screen scrollback will grow)")
	}
	scrs := reflect.ValueOf(emu).Elem().FieldByName("scrs")
	for i := range scrs.Len() {
		if !scrs.Index(i).FieldByName("scrollback").IsNil() {
			t.Fatalf("screen %d keeps a scrollback", i)
		}
	}
	// Every path that pushes to scrollback copes with nil.
	_, _ = emu.Write([]byte("a\r\nb\r\nc\r\nd\x1b[2J\x1b[3J\x1b[S\x1b[?1049he\r\nf\r\ng\r\nh\x1b[2J\x1b[3J\x1b[S\x1b[?1049l\x1bc"))
	if emu.ScrollbackLen() != 0 {
		t.Fatalf("scrollback has %d lines", emu.ScrollbackLen())
	}
}

func TestPanicPoisonsUntilSeed(t *testing.T) {
	t.Parallel()
	s := New(10, 3)
	defer s.Close()
	_ = s.Write([]byte("before"))
	s.mu.Lock()
	err := s.run("write", func() { panic("boom") })
	s.mu.Unlock()
	var pe *PanicError
	if !errors.Is(err, ErrNeedReseed) || !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("run: %v", err)
	}
	rev := s.Revision()
	if err := s.Write([]byte("\r\nlost")); !errors.Is(err, ErrNeedReseed) {
		t.Fatalf("Write on a poisoned emulator: %v", err)
	}
	// The screen model is frozen but the text still counts.
	if s.Rows()[0] != "before" || s.Revision() != rev+1 {
		t.Fatalf("rows %q rev %d", s.Rows(), s.Revision())
	}
	if txt, _ := s.TextSince(rev); txt != "\nlost" {
		t.Fatalf("text %q", txt)
	}
	if err := s.Seed(SeedState{Columns: 10, Rows: 3, CursorVisible: true, Lines: []string{"seeded"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write([]byte("\r\nok")); err != nil {
		t.Fatal(err)
	}
	if got := s.Rows(); got[0] != "seeded" || got[1] != "ok" {
		t.Fatalf("after reseed %q", got)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 50 {
		s := New(20, 5)
		_ = s.Write([]byte("x\x1b[c\x1b[6n"))
		_ = s.Seed(SeedState{Columns: 20, Rows: 5})
		s.mu.Lock()
		_ = s.run("write", func() { panic("x") })
		s.mu.Unlock()
		_ = s.Seed(SeedState{Columns: 20, Rows: 5}) // replaces the emulator
		_ = s.Close()
		_ = s.Close()
	}
	testenv.Until(5*time.Second, func() bool { return runtime.NumGoroutine() <= before })
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("goroutines: %d before, %d after", before, n)
	}
}

// fullRows computes every row from the emulator, ignoring touched marks.
func fullRows(s *Screen) []string {
	out := make([]string, s.rows)
	for y := range out {
		out[y] = string(appendRow(nil, s.t.emu, y, s.cols))
	}
	return out
}

var vocabulary = []string{
	"a", "hello ", "日本", "🙂", "e\u0301", "\t", "\r", "\n", "\r\n", "\b", "\x1bM", "\x1bD", "\x1bE",
	"\x1b[H", "\x1b[5;7H", "\x1b[24;80H", "\x1b[2;30H", "\x1b[A", "\x1b[3B", "\x1b[4C", "\x1b[D",
	"\x1b[J", "\x1b[1J", "\x1b[2J", "\x1b[3J", "\x1b[K", "\x1b[1K", "\x1b[2K",
	"\x1b[L", "\x1b[3M", "\x1b[S", "\x1b[2T", "\x1b[@", "\x1b[2P", "\x1b[4X", "\x1b[3b",
	"\x1b[2;5r", "\x1b[r", "\x1b[1;50r", "\x1b[?1049h", "\x1b[?1049l", "\x1b[?1047h", "\x1b[?1047l",
	"\x1b[?47h", "\x1b[?47l", "\x1bc", "\x1b7", "\x1b8", "\x1b[?7l", "\x1b[?7h", "\x1b[?6h", "\x1b[?6l",
	"\x1b[31m", "\x1b[0m", "\x1b[?25l", "\x1b[4h", "\x1b[4l", "\x1b(0lqk\x1b(B", "\x1b[2I", "\x1b[Z",
}

// TestTouchedScanMatchesFullScan checks that comparing touched rows only
// publishes the same rows as a full compare would, over random sequences.
func TestTouchedScanMatchesFullScan(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	s := New(20, 8)
	defer s.Close()
	for step := range 20000 {
		var b []byte
		for range 1 + rng.IntN(6) {
			b = append(b, vocabulary[rng.IntN(len(vocabulary))]...)
		}
		switch rng.IntN(200) {
		case 0:
			s.Resize(10+rng.IntN(20), 3+rng.IntN(8))
		case 1:
			_ = s.Seed(SeedState{Columns: s.cols, Rows: s.rows, CursorVisible: true, Lines: []string{"seed", "\x1b[1mrow"}, AltScreen: rng.IntN(2) == 0})
		}
		if err := s.Write(b); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if got, want := s.Rows(), fullRows(s); !slices.Equal(got, want) {
			t.Fatalf("step %d after %q:\npublished %q\n     full %q", step, b, got, want)
		}
	}
}

func TestParserShrunkAndPhantom(t *testing.T) {
	t.Parallel()
	s := New(10, 3)
	defer s.Close()
	if !shrinkParser(s.t.emu) {
		t.Fatal("x/vt's parser layout changed: shrinkParser no longer applies")
	}
	if !phantomField(s.t.emu).IsValid() {
		t.Fatal("x/vt's pending-wrap flag is gone: the cursor can no longer match tmux's at the right edge")
	}
	// Filling the last column leaves the cursor pending a wrap: tmux
	// reports x == columns then.
	if err := s.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	if c := s.Snapshot().Cursor; c.X != 10 || c.Y != 0 {
		t.Fatalf("cursor after filling a row = %+v, want x=10 y=0", c)
	}
	if err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if c := s.Snapshot().Cursor; c.X != 1 || c.Y != 1 {
		t.Fatalf("cursor after the wrap = %+v, want x=1 y=1", c)
	}
	// A seed with tmux's pending-wrap cursor keeps it.
	if err := s.Seed(SeedState{Columns: 10, Rows: 3, CursorX: 10, CursorY: 2, CursorVisible: true, Lines: []string{"", "", "abcdefghij"}}); err != nil {
		t.Fatal(err)
	}
	if c := s.Snapshot().Cursor; c.X != 10 || c.Y != 2 {
		t.Fatalf("cursor after a pending-wrap seed = %+v", c)
	}
}
