package screen

import (
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/vt"
)

func TestAltScreenAllocatedOnlyWhileShown(t *testing.T) {
	t.Parallel()
	s := New(120, 40)
	defer s.Close()
	if s.t.alt == nil {
		t.Fatal("x/vt's screen layout changed: the alternate screen can no longer be dropped (an emulator then holds twice the cells)")
	}
	want := func(step string, cells int) {
		t.Helper()
		if got := s.altCells(); got != cells {
			t.Fatalf("%s: alternate screen holds %d cells, want %d", step, got, cells)
		}
	}
	want("fresh", 1)
	mustWrite(t, s, "main text\r\n\x1b[?1049h")
	want("entered", 120*40)
	mustWrite(t, s, "\x1b[40;1Halt bottom")
	if rows := s.Rows(); rows[39] != "alt bottom" || rows[0] != "" {
		t.Fatalf("alternate screen rows: first %q, last %q", rows[0], rows[39])
	}
	s.Resize(100, 30)
	want("resized while shown", 100*30)
	mustWrite(t, s, "\x1b[?1049l")
	want("left", 1)
	if rows := s.Rows(); rows[0] != "main text" {
		t.Fatalf("main screen after leaving: %q", rows[0])
	}
	s.Resize(80, 24)
	want("resized on main", 1)
	mustWrite(t, s, "\x1b[?47h\x1bc")
	want("full reset in the alternate screen", 1)
	if err := s.Seed(SeedState{Columns: 80, Rows: 24, AltScreen: true, Lines: []string{"seeded alt"}, PrimaryLines: []string{"seeded main"}}); err != nil {
		t.Fatal(err)
	}
	want("seeded alternate", 80*24)
	if rows := s.Rows(); rows[0] != "seeded alt" {
		t.Fatalf("seeded alternate screen: %q", rows[0])
	}
	mustWrite(t, s, "\x1b[?1049l")
	if rows := s.Rows(); rows[0] != "seeded main" {
		t.Fatalf("main screen behind a seeded alternate one: %q", rows[0])
	}
	want("left the seeded alternate", 1)
}

func mustWrite(t *testing.T, s *Screen, p string) {
	t.Helper()
	if err := s.Write([]byte(p)); err != nil {
		t.Fatalf("write %q: %v", p, err)
	}
}

// TestLeanMatchesPlainEmulator feeds random output to a Screen and to an
// x/vt emulator that keeps both screens allocated: the rows agree at every
// step, so dropping the hidden alternate screen changes nothing visible.
//
// One difference is known and left out of the vocabulary: x/vt keeps a
// scroll region per screen, so a region set in one alternate-screen
// session is still in force when a program enters it again; a freshly
// grown alternate screen starts with the full screen instead. tmux has
// one region for both screens, so neither matches it there, and the
// quiet-time check reseeds the mirror when a row differs.
func TestLeanMatchesPlainEmulator(t *testing.T) {
	t.Parallel()
	var words []string
	for _, w := range vocabulary {
		if !strings.HasSuffix(w, "r") || !strings.HasPrefix(w, "\x1b[") {
			words = append(words, w)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	s := New(20, 8)
	defer s.Close()
	ref := vt.NewEmulator(20, 8)
	disableScrollback(ref)
	registerGuards(ref, &live{})
	go io.Copy(io.Discard, ref)
	defer ref.InputPipe().(io.Closer).Close()
	for step := range 20000 {
		var b []byte
		for range 1 + rng.IntN(6) {
			b = append(b, words[rng.IntN(len(words))]...)
		}
		if rng.IntN(300) == 0 {
			w, h := 10+rng.IntN(20), 3+rng.IntN(8)
			s.Resize(w, h)
			ref.Resize(w, h)
		}
		if err := s.Write(b); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		_, _ = ref.Write(b)
		want := make([]string, s.rows)
		for y := range want {
			want[y] = string(appendRow(nil, ref, y, s.cols))
		}
		if got := s.Rows(); !slices.Equal(got, want) {
			t.Fatalf("step %d after %q:\n lean %q\nplain %q", step, b, got, want)
		}
		if s.Snapshot().Modes.AltScreen != ref.IsAltScreen() {
			t.Fatalf("step %d: alternate screen %v, plain emulator %v", step, s.Snapshot().Modes.AltScreen, ref.IsAltScreen())
		}
		if !ref.IsAltScreen() && s.altCells() != 1 {
			t.Fatalf("step %d: main screen shown but the alternate one holds %d cells", step, s.altCells())
		}
	}
}

func TestHistoryGrowsKeepingEntries(t *testing.T) {
	t.Parallel()
	for _, max := range []int{1, 5, 16, 100, 4096} {
		h := newHistory(max)
		for rev := uint64(1); rev <= 3*uint64(max)+7; rev++ {
			e := h.add(rev, 3)
			e.textStart = rev * 10
			e.set(int(rev % 3))
			oldest := h.oldest(rev)
			if want := rev - min(rev, uint64(max)); oldest != want {
				t.Fatalf("max %d rev %d: oldest %d, want %d", max, rev, oldest, want)
			}
			for r := oldest + 1; r <= rev; r++ {
				if got := h.entry(r); got.textStart != r*10 || got.rows[0] != 1<<(r%3) {
					t.Fatalf("max %d after rev %d: entry %d = %+v", max, rev, r, got)
				}
			}
		}
		if len(h.ring) != max {
			t.Fatalf("max %d: ring of %d", max, len(h.ring))
		}
	}
	if h := newHistory(DefaultHistory); len(h.ring) > initialHistory {
		t.Fatalf("a new history holds %d entries up front", len(h.ring))
	}
}
