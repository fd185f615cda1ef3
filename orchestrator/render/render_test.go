package render_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/render"
)

var update = flag.Bool("update", false, "rewrite the golden PNGs in testdata/")

// Cell size at scale 1.
const cw, ch = render.CellWidth, render.CellHeight

type px struct{ r, g, b uint8 }

// decoded is a decoded screenshot.
type decoded struct {
	img   image.Image
	scale int
}

func (d decoded) at(x, y int) px {
	r, g, b, _ := d.img.At(x, y).RGBA()
	return px{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

// cellPixels returns the pixels of cell (x, y) over n columns.
func (d decoded) cellPixels(x, y, n int) []px {
	w, h := cw*d.scale, ch*d.scale
	var out []px
	for j := y * h; j < (y+1)*h; j++ {
		for i := x * w; i < (x+n)*w; i++ {
			out = append(out, d.at(i, j))
		}
	}
	return out
}

func (d decoded) cellHas(x, y int, c px) bool {
	for _, p := range d.cellPixels(x, y, 1) {
		if p == c {
			return true
		}
	}
	return false
}

// mode is the most frequent pixel of a cell.
func (d decoded) mode(x, y int) px {
	n := map[px]int{}
	best, bestN := px{}, -1
	for _, p := range d.cellPixels(x, y, 1) {
		n[p]++
		if n[p] > bestN {
			best, bestN = p, n[p]
		}
	}
	return best
}

// shot renders g and decodes the PNG, checking the facts' size.
func shot(t testing.TB, g render.Grid, opts render.Options) (decoded, render.Facts) {
	t.Helper()
	data, facts, err := render.PNG(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the PNG does not decode: %v", err)
	}
	scale := max(opts.Scale, 1)
	if b := img.Bounds(); b.Dx() != facts.Width || b.Dy() != facts.Height ||
		facts.Width != g.Columns*cw*scale || facts.Height != g.Rows*ch*scale {
		t.Fatalf("image %v, facts %dx%d, want %dx%d", b, facts.Width, facts.Height, g.Columns*cw*scale, g.Rows*ch*scale)
	}
	if !facts.SelfContained {
		t.Fatal("not self-contained")
	}
	return decoded{img, scale}, facts
}

// text writes s from (x, y) in style st (one cell a rune; wide runes given
// as "日" take two cells when wide is set).
func text(g *render.Grid, x, y int, s string, st render.Cell) int {
	for _, r := range s {
		c := st
		c.Content, c.Width = string(r), 1
		if isWideTest(r) {
			c.Width = 2
			g.Set(x, y, c)
			cont := st
			cont.Content, cont.Width = "", 0
			g.Set(x+1, y, cont)
			x += 2
			continue
		}
		g.Set(x, y, c)
		x++
	}
	return x
}

func isWideTest(r rune) bool {
	return r >= 0x1100 && (r >= 0x2e80 && r <= 0xa4cf || r >= 0xac00 && r <= 0xd7a3 || r >= 0xff00 && r <= 0xff60 || r >= 0x1f300 && r <= 0x1faff)
}

var (
	dark = themeColours{fg: px{0xd4, 0xd4, 0xd4}, bg: px{0x1e, 0x1e, 0x1e}}
)

type themeColours struct{ fg, bg px }

// --- golden images ---

func goldenText() render.Grid {
	g := render.NewGrid(34, 8)
	text(&g, 0, 0, "Regular ", render.Cell{})
	x := text(&g, 8, 0, "Bold ", render.Cell{Attrs: render.AttrBold})
	x = text(&g, x, 0, "Italic ", render.Cell{Attrs: render.AttrItalic})
	text(&g, x, 0, "BoldItalic", render.Cell{Attrs: render.AttrBold | render.AttrItalic})
	for i := 0; i < 16; i++ {
		text(&g, i*2, 1, "Ab", render.Cell{Fg: render.ANSI(i)})
		text(&g, i*2, 2, "  ", render.Cell{Bg: render.ANSI(i)})
	}
	for i := 0; i < 34; i++ {
		text(&g, i, 3, "█", render.Cell{Fg: render.Indexed(16 + i*7)})
		text(&g, i, 4, "▀", render.Cell{Fg: render.RGB(uint8(i*7), 0x80, uint8(255-i*7)), Bg: render.Indexed(232 + i%24)})
	}
	x = text(&g, 0, 5, "under", render.Cell{Underline: render.UnderlineSingle})
	x = text(&g, x+1, 5, "double", render.Cell{Underline: render.UnderlineDouble})
	x = text(&g, x+1, 5, "curly", render.Cell{Underline: render.UnderlineCurly, UnderlineColor: render.ANSI(1)})
	x = text(&g, x+1, 5, "dots", render.Cell{Underline: render.UnderlineDotted})
	text(&g, x+1, 5, "dash", render.Cell{Underline: render.UnderlineDashed})
	x = text(&g, 0, 6, "strike", render.Cell{Attrs: render.AttrStrikethrough})
	x = text(&g, x+1, 6, "inverse", render.Cell{Attrs: render.AttrInverse, Fg: render.ANSI(2)})
	x = text(&g, x+1, 6, "faint", render.Cell{Attrs: render.AttrFaint})
	x = text(&g, x+1, 6, "hidden", render.Cell{Attrs: render.AttrInvisible})
	text(&g, x+1, 6, "ok", render.Cell{})
	text(&g, 0, 7, "gjpqy ÀÉÎõü ß € λΩ ~!@#$%^&*()", render.Cell{})
	return g
}

func goldenBox() render.Grid {
	g := render.NewGrid(30, 9)
	rows := []string{
		"┌──┬──┐ ╔══╦══╗ ┏━━┳━━┓ ╭──╮",
		"│  │  │ ║  ║  ║ ┃  ┃  ┃ │  │",
		"├──┼──┤ ╠══╬══╣ ┣━━╋━━┫ ╰──╯",
		"│  │  │ ║  ║  ║ ┃  ┃  ┃ ╒══╕",
		"└──┴──┘ ╚══╩══╝ ┗━━┻━━┛ ╘══╛",
		"┄┄┅┅ ┆┇ ╌╍ ╱╲╳ ╓──╖ ╟──╢ ╞╪╡",
		"█▉▊▋▌▍▎▏▐ ▁▂▃▄▅▆▇ ▀▔▕ ░▒▓",
		"▖▗▘▙▚▛▜▝▞▟ ⠁⠃⠇⡇⣇⣧⣷⣿ ⢸⣀⠿",
		"✓✔✗✘❯▶◀△▽◆◇⏺⎿   ",
	}
	for y, r := range rows {
		text(&g, 0, y, r, render.Cell{})
	}
	text(&g, 27, 8, "\ue0b0", render.Cell{Fg: render.ANSI(4)})
	text(&g, 28, 8, "\ue0b2", render.Cell{Fg: render.ANSI(4)})
	return g
}

func goldenWide() render.Grid {
	g := render.NewGrid(20, 3)
	x := text(&g, 0, 0, "ab日本語cd", render.Cell{})
	text(&g, x, 0, "한국", render.Cell{Fg: render.ANSI(3), Bg: render.ANSI(4)})
	text(&g, 0, 1, "😀 e", render.Cell{})
	g.Set(4, 1, render.Cell{Content: "e\u0301", Width: 1}) // e + combining acute
	text(&g, 0, 2, "ｆｕｌｌ", render.Cell{Attrs: render.AttrInverse})
	return g
}

func goldenCursor(shape render.CursorShape) render.Grid {
	g := render.NewGrid(6, 2)
	text(&g, 0, 0, "abc", render.Cell{})
	text(&g, 0, 1, "XYZ", render.Cell{Fg: render.ANSI(1)})
	g.Cursor = render.Cursor{X: 1, Y: 1, Visible: true, Shape: shape}
	return g
}

type goldenCase struct {
	name string
	g    render.Grid
	opts render.Options
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{"text", goldenText(), render.Options{}},
		{"text-light", goldenText(), render.Options{Theme: "light"}},
		{"box", goldenBox(), render.Options{}},
		{"box-x2", goldenBox(), render.Options{Scale: 2}},
		{"wide", goldenWide(), render.Options{}},
		{"cursor-block", goldenCursor(render.CursorBlock), render.Options{}},
		{"cursor-underline", goldenCursor(render.CursorUnderline), render.Options{}},
		{"cursor-bar", goldenCursor(render.CursorBar), render.Options{Scale: 2}},
	}
}

// Tolerance of the golden comparison: a pixel differs when a channel is
// off by more than goldenChannel; at most goldenPermill per mille may differ
// (rasteriser changes move antialiasing a little).
const (
	goldenChannel = 24
	goldenPermill = 1
)

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			data, _, err := render.PNG(tc.g, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.name+".png")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update)", err)
			}
			wi, err := png.Decode(bytes.NewReader(want))
			if err != nil {
				t.Fatal(err)
			}
			gi, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if wi.Bounds() != gi.Bounds() {
				t.Fatalf("size %v, golden %v", gi.Bounds(), wi.Bounds())
			}
			differ, worst := 0, 0
			b := wi.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					r1, g1, b1, _ := wi.At(x, y).RGBA()
					r2, g2, b2, _ := gi.At(x, y).RGBA()
					d := max(absDiff(r1, r2), absDiff(g1, g2), absDiff(b1, b2)) >> 8
					worst = max(worst, d)
					if d > goldenChannel {
						differ++
					}
				}
			}
			if limit := b.Dx() * b.Dy() * goldenPermill / 1000; differ > limit {
				out := filepath.Join(t.TempDir(), tc.name+".png")
				_ = os.WriteFile(out, data, 0o644)
				t.Fatalf("%d pixels differ from %s (limit %d, worst channel difference %d); got %s", differ, path, limit, worst, out)
			}
		})
	}
}

func absDiff(a, b uint32) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// --- properties ---

func TestForegroundInItsCell(t *testing.T) {
	t.Parallel()
	red := px{0xff, 0x10, 0x20}
	for _, scale := range []int{1, 3} {
		g := render.NewGrid(5, 3)
		g.Set(2, 1, render.Cell{Content: "M", Width: 1, Fg: render.RGB(red.r, red.g, red.b)})
		d, _ := shot(t, g, render.Options{Scale: scale})
		if !d.cellHas(2, 1, red) {
			t.Fatalf("scale %d: the foreground is not in its cell", scale)
		}
		for y := 0; y < 3; y++ {
			for x := 0; x < 5; x++ {
				if (x != 2 || y != 1) && d.cellHas(x, y, red) {
					t.Fatalf("scale %d: the foreground leaks into cell %d,%d", scale, x, y)
				}
			}
		}
	}
}

func TestColourKinds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		c    render.Color
		want px
	}{
		{"ansi red", render.ANSI(1), px{0xcd, 0x31, 0x31}},
		{"ansi bright blue", render.ANSI(12), px{0x3b, 0x8e, 0xea}},
		{"256 index 1 is the theme's", render.Indexed(1), px{0xcd, 0x31, 0x31}},
		{"256 cube", render.Indexed(16 + 36*5 + 6*2 + 0), px{255, 135, 0}},
		{"256 grey", render.Indexed(244), px{128, 128, 128}},
		{"24-bit", render.RGB(1, 2, 3), px{1, 2, 3}},
		{"default", render.DefaultColor(), dark.bg},
	}
	for _, tc := range cases {
		g := render.NewGrid(2, 1)
		g.Set(0, 0, render.Cell{Content: " ", Width: 1, Bg: tc.c})
		d, _ := shot(t, g, render.Options{})
		if got := d.mode(0, 0); got != tc.want {
			t.Errorf("%s: background %v, want %v", tc.name, got, tc.want)
		}
	}
	// The default foreground.
	g := render.NewGrid(1, 1)
	g.Set(0, 0, render.Cell{Content: "█", Width: 1})
	if d, _ := shot(t, g, render.Options{}); d.mode(0, 0) != dark.fg {
		t.Errorf("default foreground %v, want %v", d.mode(0, 0), dark.fg)
	}
}

func TestInverseSwaps(t *testing.T) {
	t.Parallel()
	fg, bg := px{0x10, 0xf0, 0x10}, px{0x20, 0x20, 0xc0}
	for _, scale := range []int{1, 2} {
		g := render.NewGrid(2, 1)
		base := render.Cell{Content: "W", Width: 1, Fg: render.RGB(fg.r, fg.g, fg.b), Bg: render.RGB(bg.r, bg.g, bg.b)}
		g.Set(0, 0, base)
		inv := base
		inv.Attrs = render.AttrInverse
		g.Set(1, 0, inv)
		d, _ := shot(t, g, render.Options{Scale: scale})
		if d.mode(0, 0) != bg || !d.cellHas(0, 0, fg) {
			t.Fatalf("plain cell: mode %v", d.mode(0, 0))
		}
		if d.mode(1, 0) != fg || !d.cellHas(1, 0, bg) {
			t.Fatalf("inverse cell: mode %v, want %v with %v in the glyph", d.mode(1, 0), fg, bg)
		}
	}
	// Inverse of the default colours.
	g := render.NewGrid(1, 1)
	g.Set(0, 0, render.Cell{Content: " ", Width: 1, Attrs: render.AttrInverse})
	if d, _ := shot(t, g, render.Options{}); d.mode(0, 0) != dark.fg {
		t.Fatalf("inverse blank: %v, want the default foreground", d.mode(0, 0))
	}
}

func TestUnderlineRow(t *testing.T) {
	t.Parallel()
	for _, scale := range []int{1, 2, 4} {
		g := render.NewGrid(3, 1)
		g.Set(1, 0, render.Cell{Content: " ", Width: 1, Underline: render.UnderlineSingle})
		g.Set(2, 0, render.Cell{Content: " ", Width: 1, Underline: render.UnderlineSingle, UnderlineColor: render.RGB(0, 0xff, 0)})
		d, _ := shot(t, g, render.Options{Scale: scale})
		row := (14 + 1) * scale // one pixel row below the baseline
		for x := 0; x < cw*scale; x++ {
			if p := d.at(cw*scale+x, row); p != dark.fg {
				t.Fatalf("scale %d: underline row at x %d is %v", scale, x, p)
			}
			if p := d.at(2*cw*scale+x, row); p != (px{0, 0xff, 0}) {
				t.Fatalf("scale %d: coloured underline at x %d is %v", scale, x, p)
			}
			if p := d.at(x, row); p != dark.bg {
				t.Fatalf("scale %d: no underline, yet row at x %d is %v", scale, x, p)
			}
		}
	}
}

func TestStrikethroughAndInvisible(t *testing.T) {
	t.Parallel()
	g := render.NewGrid(3, 1)
	g.Set(0, 0, render.Cell{Content: " ", Width: 1, Attrs: render.AttrStrikethrough})
	g.Set(1, 0, render.Cell{Content: "M", Width: 1, Attrs: render.AttrInvisible | render.AttrStrikethrough, Underline: render.UnderlineSingle})
	d, _ := shot(t, g, render.Options{})
	if !d.cellHas(0, 0, dark.fg) {
		t.Fatal("no strikethrough")
	}
	for _, p := range d.cellPixels(1, 0, 1) {
		if p != dark.bg {
			t.Fatalf("an invisible cell has pixel %v", p)
		}
	}
}

func TestFaintAndBold(t *testing.T) {
	t.Parallel()
	g := render.NewGrid(4, 1)
	g.Set(0, 0, render.Cell{Content: "█", Width: 1, Attrs: render.AttrFaint})
	g.Set(1, 0, render.Cell{Content: "█", Width: 1, Fg: render.ANSI(1), Attrs: render.AttrBold})
	g.Set(2, 0, render.Cell{Content: "█", Width: 1, Fg: render.Indexed(1), Attrs: render.AttrBold})
	d, _ := shot(t, g, render.Options{})
	half := px{(0xd4 + 0x1e) / 2, (0xd4 + 0x1e) / 2, (0xd4 + 0x1e) / 2}
	if got := d.mode(0, 0); absDiff(uint32(got.r), uint32(half.r)) > 2 {
		t.Errorf("faint: %v, want about %v", got, half)
	}
	if got := d.mode(1, 0); got != (px{0xf1, 0x4c, 0x4c}) {
		t.Errorf("bold ANSI red: %v, want bright red", got)
	}
	if got := d.mode(2, 0); got != (px{0xcd, 0x31, 0x31}) {
		t.Errorf("bold 256-colour 1: %v, want red (only ANSI colours brighten)", got)
	}
	// Bold is drawn with more ink than regular.
	g = render.NewGrid(2, 1)
	g.Set(0, 0, render.Cell{Content: "m", Width: 1})
	g.Set(1, 0, render.Cell{Content: "m", Width: 1, Attrs: render.AttrBold})
	d, _ = shot(t, g, render.Options{Scale: 2})
	if ink(d, 1) <= ink(d, 0) {
		t.Errorf("bold ink %d <= regular ink %d", ink(d, 1), ink(d, 0))
	}
}

// ink is the number of non-background pixels of cell (x, 0).
func ink(d decoded, x int) int {
	n := 0
	for _, p := range d.cellPixels(x, 0, 1) {
		if p != dark.bg {
			n++
		}
	}
	return n
}

// A horizontal line is set on both sides of every cell border it crosses,
// a vertical one across every row border, and corners join.
func TestBoxLinesJoin(t *testing.T) {
	t.Parallel()
	for _, scale := range []int{1, 2, 3, 4} {
		g := render.NewGrid(8, 4)
		text(&g, 0, 0, "┌─┬─┐╔═╗", render.Cell{})
		text(&g, 0, 1, "│ │ │║ ║", render.Cell{})
		text(&g, 0, 2, "├━┼─┤╟─╢", render.Cell{})
		text(&g, 0, 3, "└─┴─┘╚═╝", render.Cell{})
		d, _ := shot(t, g, render.Options{Scale: scale})
		w, h := cw*scale, ch*scale
		set := func(x, y int) bool { return d.at(x, y) == dark.fg }
		ly := h/2 - scale/2 // the first row of a light horizontal line
		lx := w/2 - scale/2 // the first column of a light vertical line
		for _, row := range []int{0, 2, 3} {
			for border := 1; border <= 4; border++ {
				x, y := border*w, row*h+ly
				if !set(x-1, y) || !set(x, y) {
					t.Fatalf("scale %d: the line of row %d has a gap at the border of cells %d and %d", scale, row, border-1, border)
				}
			}
		}
		for _, col := range []int{0, 2, 4} {
			for border := 1; border <= 3; border++ {
				x, y := col*w+lx, border*h
				if !set(x, y-1) || !set(x, y) {
					t.Fatalf("scale %d: the line of column %d has a gap at row border %d", scale, col, border)
				}
			}
		}
		// ╔═╗: both lines of ═ continue into ╔ and ╗, and nothing else
		// touches those borders.
		for _, border := range []int{6, 7} {
			n := 0
			for y := 0; y < h; y++ {
				if set(border*w, y) != set(border*w-1, y) {
					t.Fatalf("scale %d: the double line breaks at the border of cells %d and %d, y %d", scale, border-1, border, y)
				}
				if set(border*w, y) {
					n++
				}
			}
			if n != 2*scale {
				t.Fatalf("scale %d: %d pixel rows cross the border of cells %d and %d, want two lines of %d", scale, n, border-1, border, scale)
			}
		}
		// ╗ → ║ → ╢ and ╔ → ║ → ╟: both vertical lines continue across the
		// row borders.
		for _, col := range []int{5, 7} {
			for border := 1; border <= 3; border++ {
				n := 0
				for x := col * w; x < (col+1)*w; x++ {
					if set(x, border*h-1) != set(x, border*h) {
						t.Fatalf("scale %d: the double line of column %d breaks at row border %d, x %d", scale, col, border, x)
					}
					if set(x, border*h) {
						n++
					}
				}
				if n != 2*scale {
					t.Fatalf("scale %d: column %d crosses row border %d with %d pixels, want %d", scale, col, border, n, 2*scale)
				}
			}
		}
		// ╟─╢: the single line meets the double ones.
		for _, border := range []int{6, 7} {
			if y := 2*h + ly; !set(border*w-1, y) || !set(border*w, y) {
				t.Fatalf("scale %d: ╟─╢ has a gap at border %d", scale, border)
			}
		}
	}
}

func TestBlocksFillCells(t *testing.T) {
	t.Parallel()
	g := render.NewGrid(3, 2)
	text(&g, 0, 0, "███", render.Cell{})
	text(&g, 0, 1, "▀▄▌", render.Cell{})
	d, _ := shot(t, g, render.Options{})
	for _, p := range d.cellPixels(0, 0, 3) {
		if p != dark.fg {
			t.Fatalf("█ leaves pixel %v", p)
		}
	}
	if d.at(0, ch) != dark.fg || d.at(0, 2*ch-1) != dark.bg {
		t.Fatal("▀ is not the upper half")
	}
	if d.at(cw, ch) != dark.bg || d.at(cw, 2*ch-1) != dark.fg {
		t.Fatal("▄ is not the lower half")
	}
	if d.at(2*cw, ch) != dark.fg || d.at(3*cw-1, ch) != dark.bg {
		t.Fatal("▌ is not the left half")
	}
}

func TestFallbackCharacters(t *testing.T) {
	t.Parallel()
	g := render.NewGrid(16, 2)
	x := text(&g, 0, 0, "a日─⠿", render.Cell{})
	x = text(&g, x, 0, "😀", render.Cell{})
	g.Set(x, 0, render.Cell{Content: "e\u0301", Width: 1}) // a mark Go Mono lacks: the e is drawn, the cluster listed
	text(&g, 0, 1, "日✓😀ßλ★", render.Cell{})
	d, facts := shot(t, g, render.Options{})
	want := []string{"日", "😀", "e\u0301", "★"}
	if !reflect.DeepEqual(facts.FallbackCharacters, want) {
		t.Fatalf("fallback %q, want %q", facts.FallbackCharacters, want)
	}
	// The box of a wide fallback spans both cells.
	if ink(d, 1) == 0 || ink(d, 2) == 0 {
		t.Fatal("the fallback box of 日 does not cover two cells")
	}
	// No fallback at all: an empty list, not null.
	g = render.NewGrid(3, 1)
	text(&g, 0, 0, "ok─", render.Cell{})
	_, facts = shot(t, g, render.Options{})
	b, _ := json.Marshal(facts)
	if !strings.Contains(string(b), `"fallback_characters":[]`) || !strings.Contains(string(b), `"self_contained":true`) {
		t.Fatalf("facts JSON %s", b)
	}
	var back map[string]any
	_ = json.Unmarshal(b, &back)
	for _, k := range []string{"width", "height", "self_contained", "fallback_characters"} {
		if _, ok := back[k]; !ok {
			t.Fatalf("facts JSON %s lacks %s", b, k)
		}
	}
}

func TestScaleMultipliesSize(t *testing.T) {
	t.Parallel()
	g := goldenCursor(render.CursorBlock)
	var base decoded
	for s := 1; s <= render.MaxScale; s++ {
		d, facts := shot(t, g, render.Options{Scale: s})
		if facts.Width != 6*cw*s || facts.Height != 2*ch*s {
			t.Fatalf("scale %d: %dx%d", s, facts.Width, facts.Height)
		}
		if s == 1 {
			base = d
			continue
		}
		// The backgrounds and the cursor block land in the same cells.
		for y := 0; y < 2; y++ {
			for x := 0; x < 6; x++ {
				if d.mode(x, y) != base.mode(x, y) {
					t.Fatalf("scale %d: cell %d,%d is mostly %v, at scale 1 %v", s, x, y, d.mode(x, y), base.mode(x, y))
				}
			}
		}
	}
	if _, _, err := render.PNG(g, render.Options{Scale: 0}); err != nil {
		t.Fatalf("scale 0 (the default): %v", err)
	}
}

func TestCursorShapes(t *testing.T) {
	t.Parallel()
	red := px{0xcd, 0x31, 0x31}
	g := goldenCursor(render.CursorBlock)
	d, _ := shot(t, g, render.Options{})
	if d.mode(1, 1) != red || !d.cellHas(1, 1, dark.bg) {
		t.Fatalf("block cursor: the cell is mostly %v, want inverted red", d.mode(1, 1))
	}
	g.Cursor.Shape = render.CursorUnderline
	d, _ = shot(t, g, render.Options{})
	for x := cw; x < 2*cw; x++ {
		if d.at(x, 2*ch-1) != dark.fg || d.at(x, ch) != dark.bg {
			t.Fatal("underline cursor: not a line at the bottom of the cell")
		}
	}
	g.Cursor.Shape = render.CursorBar
	d, _ = shot(t, g, render.Options{})
	for y := ch; y < 2*ch; y++ {
		if d.at(cw, y) != dark.fg || d.at(cw+1, y) != dark.fg {
			t.Fatal("bar cursor: not a bar at the left of the cell")
		}
	}
	// Hidden: nothing drawn.
	g.Cursor.Visible = false
	d, _ = shot(t, g, render.Options{})
	if d.at(cw, ch) != dark.bg {
		t.Fatal("a hidden cursor is drawn")
	}
	// Pending wrap (X == Columns): drawn in the last column.
	g.Cursor = render.Cursor{X: 6, Y: 0, Visible: true}
	d, _ = shot(t, g, render.Options{})
	if d.mode(5, 0) != dark.fg {
		t.Fatal("a cursor past the last column is not drawn in the last column")
	}
	// On a wide character: over both cells.
	g = render.NewGrid(4, 1)
	text(&g, 0, 0, "日", render.Cell{})
	g.Cursor = render.Cursor{X: 1, Y: 0, Visible: true}
	d, _ = shot(t, g, render.Options{})
	if d.mode(0, 0) != dark.fg || d.mode(1, 0) != dark.fg {
		t.Fatal("a block cursor on a wide character does not cover both cells")
	}
}

func TestWideCharactersSpanTwoCells(t *testing.T) {
	t.Parallel()
	g := render.NewGrid(4, 1)
	text(&g, 1, 0, "日", render.Cell{Bg: render.ANSI(4)})
	d, facts := shot(t, g, render.Options{})
	blue := px{0x24, 0x72, 0xc8}
	if d.mode(1, 0) != blue || d.mode(2, 0) != blue || d.mode(3, 0) != dark.bg {
		t.Fatalf("wide cell background: %v %v %v", d.mode(1, 0), d.mode(2, 0), d.mode(3, 0))
	}
	if !reflect.DeepEqual(facts.FallbackCharacters, []string{"日"}) {
		t.Fatalf("fallback %q", facts.FallbackCharacters)
	}
	// A continuation without its wide cell is a blank; a wide cell at the
	// last column is drawn in one.
	g = render.NewGrid(2, 1)
	g.Set(0, 0, render.Cell{Width: 0, Bg: render.ANSI(1)})
	g.Set(1, 0, render.Cell{Content: "日", Width: 2})
	if _, _, err := render.PNG(g, render.Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestLightTheme(t *testing.T) {
	t.Parallel()
	g := render.NewGrid(3, 1)
	g.Set(0, 0, render.Cell{Content: "█", Width: 1})
	g.Set(1, 0, render.Cell{Content: "█", Width: 1, Fg: render.ANSI(1), Attrs: render.AttrBold})
	d, _ := shot(t, g, render.Options{Theme: "light"})
	if d.mode(0, 0) != (px{0x38, 0x3a, 0x42}) || d.mode(2, 0) != (px{0xfa, 0xfa, 0xfa}) {
		t.Fatalf("light theme: fg %v, bg %v", d.mode(0, 0), d.mode(2, 0))
	}
	if d.mode(1, 0) != (px{0xd1, 0x3b, 0x2e}) {
		t.Fatalf("light theme bold red %v: bold does not brighten there", d.mode(1, 0))
	}
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	g := render.NewGrid(2, 2)
	for _, o := range []render.Options{{Scale: -1}, {Scale: 5}, {Theme: "blue"}} {
		if _, _, err := render.PNG(g, o); !errors.Is(err, render.ErrInvalid) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, bad := range []render.Grid{{}, {Columns: 3}, {Columns: -1, Rows: 4}} {
		if _, _, err := render.PNG(bad, render.Options{}); !errors.Is(err, render.ErrInvalid) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	// A short Cells slice is blank, not a panic.
	if _, _, err := render.PNG(render.Grid{Columns: 4, Rows: 2, Cells: make([]render.Cell, 3)}, render.Options{}); err != nil {
		t.Error(err)
	}
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	// Too many pixels: refused before drawing.
	_, _, err := render.PNG(render.Grid{Columns: 1000, Rows: 1000}, render.Options{Scale: 4})
	if !errors.Is(err, render.ErrTooLarge) || !strings.Contains(err.Error(), "lower the scale") {
		t.Fatalf("huge grid: %v", err)
	}
	_, _, err = render.PNG(render.Grid{Columns: 1 << 40, Rows: 1 << 40}, render.Options{})
	if !errors.Is(err, render.ErrTooLarge) {
		t.Fatalf("overflowing grid: %v", err)
	}
	// A PNG over 3 MB: noise at scale 3.
	g := noise200x50()
	_, _, err = render.PNG(g, render.Options{Scale: 3})
	if !errors.Is(err, render.ErrTooLarge) || !strings.Contains(err.Error(), "lower the scale") {
		t.Fatalf("noise at scale 3: %v", err)
	}
	data, _, err := render.PNG(g, render.Options{})
	if err != nil || len(data) > render.MaxPNGBytes {
		t.Fatalf("noise at scale 1: %d bytes, %v", len(data), err)
	}
}

// Many colours (24-bit runs) are drawn in 24-bit colour; few in a
// palette. Both decode to the colours asked for.
func TestPalettedAndTrueColour(t *testing.T) {
	t.Parallel()
	for _, n := range []int{3, 400} {
		g := render.NewGrid(40, 10)
		for i := 0; i < 400; i++ {
			v := i % n
			g.Set(i%40, i/40, render.Cell{Content: "▀", Width: 1, Fg: render.RGB(uint8(v), uint8(255-v%256), 0x80), Bg: render.RGB(0, uint8(v/2), 0x10)})
		}
		d, _ := shot(t, g, render.Options{})
		for i := 0; i < 400; i += 37 {
			v := i % n
			if got, want := d.mode(i%40, i/40), (px{0, uint8(v / 2), 0x10}); got != want {
				t.Fatalf("%d colours: cell %d is %v, want %v", n, i, got, want)
			}
			if !d.cellHas(i%40, i/40, px{uint8(v), uint8(255 - v%256), 0x80}) {
				t.Fatalf("%d colours: cell %d lacks its foreground", n, i)
			}
		}
	}
}

func TestConcurrentRender(t *testing.T) {
	t.Parallel()
	grids := []render.Grid{goldenText(), goldenBox(), goldenWide(), noise200x50(), colourful200x50()}
	scales := []int{1, 2, 3, 1, 1}
	want := make([][]byte, len(grids))
	for i, g := range grids {
		var err error
		if want[i], _, err = render.PNG(g, render.Options{Scale: scales[i]}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, g := range grids {
				got, _, err := render.PNG(g, render.Options{Scale: scales[i]})
				if err != nil || !bytes.Equal(got, want[i]) {
					errs <- fmt.Errorf("grid %d: %d bytes, %v", i, len(got), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
