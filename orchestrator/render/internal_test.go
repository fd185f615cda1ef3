package render

import (
	"bytes"
	"hash/adler32"
	"math/rand/v2"
	"testing"
)

func TestAdler32Combine(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200; i++ {
		a := make([]byte, rng.IntN(100000))
		b := make([]byte, rng.IntN(100000))
		for j := range a {
			a[j] = byte(rng.IntN(256))
		}
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		whole := adler32.Checksum(append(append([]byte(nil), a...), b...))
		if got := adler32Combine(adler32.Checksum(a), adler32.Checksum(b), len(b)); got != whole {
			t.Fatalf("combine(%d, %d bytes) = %08x, want %08x", len(a), len(b), got, whole)
		}
	}
}

// A paletted surface with full coverage levels draws exactly what the
// 24-bit one draws; with fewer levels, each channel is off by at most half
// a level.
func TestPalettedMatchesTrueColour(t *testing.T) {
	t.Parallel()
	grid := func(colourful bool) Grid {
		g := NewGrid(30, 4)
		for i, r := range "Hello, world! ┌─┐ ╔═╗ ░▒▓ ⣿ gjpq ÀÉ italic bold dim" {
			st := Cell{Content: string(r), Width: 1, Attrs: []Attr{0, AttrBold, AttrItalic, AttrBold | AttrItalic}[i%4]}
			if colourful {
				st.Fg = ANSI(i % 8)
				if i%5 == 0 {
					st.Bg = Indexed(i * 3)
				}
			}
			g.Set(i%30, i/30, st)
		}
		return g
	}
	m := metricsFor(2)
	drawOn := func(g *Grid, levels int) *surface {
		r := renderer{g: g, th: &themeDark, m: &m}
		if levels < 0 {
			levels = r.levels()
		}
		r.s = newSurface(g.Columns*m.w, g.Rows*m.h, levels, themeDark.bg)
		r.draw()
		if r.s.overflow {
			t.Fatalf("levels %d: the palette overflowed", levels)
		}
		return r.s
	}
	// One colour pair: full levels, the same pixels.
	g := grid(false)
	g.Cursor = Cursor{X: 3, Y: 1, Visible: true, Shape: CursorBar}
	want := drawOn(&g, 0).rgba()
	if got := drawOn(&g, -1); got.levels != fullLevels || !bytes.Equal(got.rgba().Pix, want.Pix) {
		t.Fatalf("a paletted surface with %d levels differs from the 24-bit one", got.levels)
	}
	// Many pairs: fewer levels, within half a level.
	g = grid(true)
	want = drawOn(&g, 0).rgba()
	got := drawOn(&g, -1)
	if got.levels >= fullLevels || got.levels < minLevels {
		t.Fatalf("%d levels for %d colours", got.levels, len(got.pal))
	}
	tol := 255/got.levels/2 + 2
	for i, v := range got.rgba().Pix {
		if d := int(v) - int(want.Pix[i]); d < -tol || d > tol {
			t.Fatalf("byte %d: %d vs %d (%d levels)", i, v, want.Pix[i], got.levels)
		}
	}
}

// The palette plan counts each style run once and refuses screens with
// too many colour pairs.
func TestLevels(t *testing.T) {
	t.Parallel()
	m := metricsFor(1)
	g := NewGrid(40, 2)
	for x := 0; x < 40; x++ {
		g.Set(x, 0, Cell{Content: "a", Width: 1})
	}
	r := renderer{g: &g, th: &themeDark, m: &m}
	if n := r.levels(); n != fullLevels {
		t.Fatalf("one pair: %d levels", n)
	}
	for x := 0; x < 40; x++ {
		g.Set(x, 1, Cell{Content: "a", Width: 1, Fg: RGB(uint8(x), 0, 0)})
	}
	if n := r.levels(); n != 0 {
		t.Fatalf("41 pairs: %d levels, want 0 (24-bit)", n)
	}
}

func TestGlyphCacheBounded(t *testing.T) {
	t.Parallel()
	m := metricsFor(1)
	for r := rune(0x4e00); r < 0x4e00+maxCachedGlyphs+10; r++ {
		lookupGlyph(string(r), 0, 2, &m)
	}
	glyphCache.mu.RLock()
	n := len(glyphCache.m)
	glyphCache.mu.RUnlock()
	if n > maxCachedGlyphs {
		t.Fatalf("%d glyphs cached", n)
	}
}
