package screen

import (
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/render"
)

// cellsOf writes out to a fresh 10×3 Screen and returns its cells.
func cellsOf(t *testing.T, out string) render.Grid {
	t.Helper()
	s := New(10, 3)
	defer s.Close()
	if err := s.Write([]byte(out)); err != nil {
		t.Fatal(err)
	}
	return s.Cells()
}

func TestCellsStyles(t *testing.T) {
	t.Parallel()
	plain := func(s string) render.Cell { return render.Cell{Content: s, Width: 1} }
	with := func(s string, f func(*render.Cell)) render.Cell {
		c := plain(s)
		f(&c)
		return c
	}
	cases := []struct {
		name string
		out  string
		want render.Cell // the cell at 0,0
	}{
		{"plain", "A", plain("A")},
		{"ansi fg", "\x1b[31mA", with("A", func(c *render.Cell) { c.Fg = render.ANSI(1) })},
		{"bright fg", "\x1b[96mA", with("A", func(c *render.Cell) { c.Fg = render.ANSI(14) })},
		{"ansi bg", "\x1b[44mA", with("A", func(c *render.Cell) { c.Bg = render.ANSI(4) })},
		{"bright bg", "\x1b[101mA", with("A", func(c *render.Cell) { c.Bg = render.ANSI(9) })},
		{"256 fg", "\x1b[38;5;123mA", with("A", func(c *render.Cell) { c.Fg = render.Indexed(123) })},
		{"256 low index stays indexed", "\x1b[38;5;3mA", with("A", func(c *render.Cell) { c.Fg = render.Indexed(3) })},
		{"256 bg, colon form", "\x1b[48:5:200mA", with("A", func(c *render.Cell) { c.Bg = render.Indexed(200) })},
		{"24-bit fg", "\x1b[38;2;10;20;30mA", with("A", func(c *render.Cell) { c.Fg = render.RGB(10, 20, 30) })},
		{"24-bit bg, colon form", "\x1b[48:2::1:2:3mA", with("A", func(c *render.Cell) { c.Bg = render.RGB(1, 2, 3) })},
		{"default after reset", "\x1b[31;44m\x1b[39;49mA", plain("A")},
		{"bold", "\x1b[1mA", with("A", func(c *render.Cell) { c.Attrs = render.AttrBold })},
		{"faint", "\x1b[2mA", with("A", func(c *render.Cell) { c.Attrs = render.AttrFaint })},
		{"italic", "\x1b[3mA", with("A", func(c *render.Cell) { c.Attrs = render.AttrItalic })},
		{"underline", "\x1b[4mA", with("A", func(c *render.Cell) { c.Underline = render.UnderlineSingle })},
		{"double underline", "\x1b[4:2mA", with("A", func(c *render.Cell) { c.Underline = render.UnderlineDouble })},
		{"curly underline in a colour", "\x1b[4:3;58;5;9mA", with("A", func(c *render.Cell) {
			c.Underline, c.UnderlineColor = render.UnderlineCurly, render.Indexed(9)
		})},
		{"blink", "\x1b[5mA", with("A", func(c *render.Cell) { c.Attrs = render.AttrBlink })},
		{"inverse", "\x1b[7mA", with("A", func(c *render.Cell) { c.Attrs = render.AttrInverse })},
		{"invisible", "\x1b[8mA", with("A", func(c *render.Cell) { c.Attrs = render.AttrInvisible })},
		{"strikethrough", "\x1b[9mA", with("A", func(c *render.Cell) { c.Attrs = render.AttrStrikethrough })},
		{"all off", "\x1b[1;3;4;7;9m\x1b[22;23;24;27;29mA", plain("A")},
		{"reset", "\x1b[1;31;44m\x1b[0mA", plain("A")},
		{"erase keeps the background", "\x1b[44m\x1b[K", with(" ", func(c *render.Cell) { c.Bg = render.ANSI(4) })},
		{"box drawing", "─", plain("─")},
		{"combining cluster", "e\u0301", plain("e\u0301")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := cellsOf(t, tc.out)
			if g.Columns != 10 || g.Rows != 3 || len(g.Cells) != 30 {
				t.Fatalf("grid %dx%d with %d cells", g.Columns, g.Rows, len(g.Cells))
			}
			if got := g.At(0, 0); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("cell 0,0 = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCellsWide(t *testing.T) {
	t.Parallel()
	g := cellsOf(t, "\x1b[31m日\x1b[0mx")
	red := render.ANSI(1)
	want := []render.Cell{
		{Content: "日", Width: 2, Fg: red},
		{Content: "", Width: 0, Fg: red}, // the continuation keeps the style
		{Content: "x", Width: 1},
		{Content: " ", Width: 1},
	}
	for x, w := range want {
		if got := g.At(x, 0); !reflect.DeepEqual(got, w) {
			t.Fatalf("cell %d = %+v, want %+v", x, got, w)
		}
	}
	if g.Cursor.X != 3 || g.Cursor.Y != 0 {
		t.Fatalf("cursor %+v after a wide character and one more", g.Cursor)
	}
}

func TestCellsCursor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		out  string
		want render.Cursor
	}{
		{"after text", "ab", render.Cursor{X: 2, Y: 0, Visible: true, Shape: render.CursorBlock}},
		{"moved", "\x1b[2;3H", render.Cursor{X: 2, Y: 1, Visible: true, Shape: render.CursorBlock}},
		{"hidden", "\x1b[?25l", render.Cursor{Visible: false, Shape: render.CursorBlock}},
		{"blinking block", "\x1b[1 q", render.Cursor{Visible: true, Shape: render.CursorBlock}},
		{"steady block", "\x1b[2 q", render.Cursor{Visible: true, Shape: render.CursorBlock}},
		{"blinking underline", "\x1b[3 q", render.Cursor{Visible: true, Shape: render.CursorUnderline}},
		{"steady underline", "\x1b[4 q", render.Cursor{Visible: true, Shape: render.CursorUnderline}},
		{"blinking bar", "\x1b[5 q", render.Cursor{Visible: true, Shape: render.CursorBar}},
		{"steady bar", "\x1b[6 q", render.Cursor{Visible: true, Shape: render.CursorBar}},
		{"default again", "\x1b[6 q\x1b[0 q", render.Cursor{Visible: true, Shape: render.CursorBlock}},
		{"pending wrap", "0123456789", render.Cursor{X: 10, Y: 0, Visible: true, Shape: render.CursorBlock}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := cellsOf(t, tc.out).Cursor; got != tc.want {
				t.Fatalf("cursor %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Cells is a copy: changing it, or the screen afterwards, changes neither
// the other.
func TestCellsIsACopy(t *testing.T) {
	t.Parallel()
	s := New(4, 1)
	defer s.Close()
	_ = s.Write([]byte("\x1b[31mab"))
	g := s.Cells()
	g.Cells[0].Content = "Z"
	g.Cells[1].Fg = render.RGB(1, 2, 3)
	if again := s.Cells(); again.At(0, 0).Content != "a" || again.At(1, 0).Fg != render.ANSI(1) {
		t.Fatalf("changing a copy changed the screen: %+v", again.Cells[:2])
	}
	_ = s.Write([]byte("\r\x1b[0mcd"))
	if g.At(1, 0).Content != "b" {
		t.Fatalf("writing changed an earlier copy: %+v", g.Cells[:2])
	}
}

// Without an emulator (asleep, poisoned, closed) Cells is the published
// text as unstyled cells, wide characters over two cells.
func TestCellsWithoutEmulator(t *testing.T) {
	t.Parallel()
	wantText := func(t *testing.T, g render.Grid) {
		t.Helper()
		want := []render.Cell{
			{Content: "a", Width: 1}, {Content: "日", Width: 2}, {Width: 0}, {Content: "b", Width: 1}, {Width: 1},
		}
		for x, w := range want {
			if got := g.At(x, 0); !reflect.DeepEqual(got, w) {
				t.Fatalf("cell %d = %+v, want %+v", x, got, w)
			}
		}
		if g.At(0, 1) != (render.Cell{Content: "x", Width: 1}) {
			t.Fatalf("row 1: %+v", g.At(0, 1))
		}
		if g.Cursor != (render.Cursor{X: 1, Y: 1, Visible: true, Shape: render.CursorBlock}) {
			t.Fatalf("cursor %+v", g.Cursor)
		}
	}
	setup := func() *Screen {
		s := New(5, 2)
		_ = s.Write([]byte("\x1b[1;31ma日b\r\n\x1b[44mx\x1b[6 q"))
		return s
	}

	t.Run("asleep", func(t *testing.T) {
		s := setup()
		defer s.Close()
		s.Sleep()
		wantText(t, s.Cells())
	})
	t.Run("poisoned", func(t *testing.T) {
		s := setup()
		defer s.Close()
		s.mu.Lock()
		_ = s.run("write", func() { panic("boom") })
		s.mu.Unlock()
		wantText(t, s.Cells())
	})
	t.Run("closed", func(t *testing.T) {
		s := setup()
		_ = s.Close()
		wantText(t, s.Cells())
	})
	t.Run("seeded again", func(t *testing.T) {
		s := setup()
		defer s.Close()
		s.Sleep()
		if err := s.Seed(SeedState{Columns: 5, Rows: 2, CursorVisible: true, Lines: []string{"\x1b[32mok"}}); err != nil {
			t.Fatal(err)
		}
		if c := s.Cells().At(0, 0); c != (render.Cell{Content: "o", Width: 1, Fg: render.ANSI(2)}) {
			t.Fatalf("after the seed: %+v", c)
		}
	})
}

// The published rows and the cells agree: the text of every row is the
// cells' contents.
func TestCellsMatchRows(t *testing.T) {
	t.Parallel()
	s := New(12, 4)
	defer s.Close()
	_ = s.Write([]byte("\x1b[1mhello\x1b[0m 日本\r\n\x1b[7m┌──┐\x1b[0m\r\n\x1b[38;5;9mred\x1b[0m"))
	g := s.Cells()
	for y, row := range s.Rows() {
		var text []byte
		for x := 0; x < g.Columns; x++ {
			c := g.At(x, y)
			switch {
			case c.Width == 0:
			case c.Content == "":
				text = append(text, ' ')
			default:
				text = append(text, c.Content...)
			}
		}
		for len(text) > 0 && text[len(text)-1] == ' ' {
			text = text[:len(text)-1]
		}
		if string(text) != row {
			t.Fatalf("row %d: cells %q, rows %q", y, text, row)
		}
	}
}

func TestCellsConcurrentWithWrites(t *testing.T) {
	t.Parallel()
	s := New(40, 10)
	defer s.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 300; i++ {
			_ = s.Write([]byte("\x1b[3" + string(rune('0'+i%8)) + "mtext 日本 ─│\r\n"))
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 300; i++ {
			g := s.Cells()
			if len(g.Cells) != g.Columns*g.Rows {
				t.Errorf("grid %dx%d with %d cells", g.Columns, g.Rows, len(g.Cells))
				return
			}
			if i%50 == 0 {
				s.Sleep()
			}
		}
	}()
	wg.Wait()
}

// BenchmarkCells200x50 copies a full, styled 200×50 screen (the time the
// Screen's mutex is held for a screenshot).
func BenchmarkCells200x50(b *testing.B) {
	s := New(200, 50)
	defer s.Close()
	var out []byte
	for y := 0; y < 50; y++ {
		for x := 0; x < 20; x++ {
			out = append(out, "\x1b[3"...)
			out = append(out, byte('0'+(x+y)%8))
			out = append(out, ";1mword 日本\x1b[0m"...)
		}
		if y < 49 {
			out = append(out, "\r\n"...)
		}
	}
	if err := s.Write(out); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = s.Cells()
	}
}

// A CellsView kept up to date through every kind of change equals a fresh
// Cells copy after each step, and copies again only the rows that changed.
func TestUpdateCellsMatchesCells(t *testing.T) {
	t.Parallel()
	s := New(12, 4)
	defer s.Close()
	var v CellsView
	write := func(out string) func() {
		return func() {
			if err := s.Write([]byte(out)); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		name string
		do   func()
		// copied is the rows the update must copy (nil: not checked).
		copied []int
	}{
		{"first", write("\x1b[H"), []int{0, 1, 2, 3}},
		{"plain text", write("hello"), []int{0}},
		{"nothing", func() {}, []int{}},
		{"style only, same text", write("\r\x1b[1;31mhello\x1b[0m"), []int{0}},
		{"row 2", write("\x1b[3;1H\x1b[44mblue\x1b[0m"), []int{2}},
		{"wide characters", write("\x1b[2;1H日本"), []int{1}},
		{"scroll", write("\x1b[4;1Hlast\r\nnew"), nil},
		{"erase a line", write("\x1b[1;1H\x1b[2K"), []int{0}},
		{"alternate screen", write("\x1b[?1049h\x1b[2;2Halt"), nil},
		{"back to the main screen", write("\x1b[?1049l"), nil},
		{"reset", write("\x1bc"), nil},
		{"resize", func() { s.Resize(8, 3) }, []int{0, 1, 2}},
		{"asleep", func() { s.Sleep() }, []int{0, 1, 2}},
		{"seeded", func() {
			if err := s.Seed(SeedState{Columns: 8, Rows: 3, CursorVisible: true, Lines: []string{"\x1b[32mok", "two"}}); err != nil {
				t.Fatal(err)
			}
		}, []int{0, 1, 2}},
		{"after the seed", write("\x1b[3;1Hthree"), []int{2}},
	}
	for _, st := range steps {
		st.do()
		before := slices.Clone(v.stamps)
		s.UpdateCells(&v)
		want := s.Cells()
		if !reflect.DeepEqual(v.Grid, want) {
			t.Fatalf("%s: the view\n%+v\nis not Cells\n%+v", st.name, v.Grid, want)
		}
		if v.stamps != nil && len(v.stamps) != want.Rows {
			t.Fatalf("%s: %d rows stamped, grid has %d", st.name, len(v.stamps), want.Rows)
		}
		if st.copied == nil {
			continue
		}
		// A row was copied when its stamp moved; every row when the
		// view had no stamps of this size, or has none (no emulator).
		var got []int
		for y := range want.Rows {
			if v.stamps == nil || len(before) != len(v.stamps) || before[y] != v.stamps[y] {
				got = append(got, y)
			}
		}
		if !reflect.DeepEqual(append([]int{}, got...), append([]int{}, st.copied...)) {
			t.Fatalf("%s: copied rows %v, want %v", st.name, got, st.copied)
		}
	}
}
