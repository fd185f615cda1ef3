package render_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/render"
)

// colourful200x50 is a busy, colourful screen as TUIs draw them: a
// box-drawn frame, a title bar and a status bar on coloured backgrounds,
// every row full of words in the 16 ANSI colours and a dozen 256-colour
// and 24-bit ones (syntax highlighting), bold, italic, underline and
// inverse runs, gauges of blocks, a block cursor.
func colourful200x50() render.Grid {
	rng := rand.New(rand.NewPCG(3, 4))
	g := render.NewGrid(200, 50)
	words := []string{"func", "return", "if", "err", "!=", "nil", "{", "}", "render.PNG(g,", "opts)", "for", "range", "cells", ":=", "x++", "// the", "comment", "\"string\"", "42", "0x1f", "go", "defer", "mu.Unlock()"}
	styles := []render.Cell{
		{}, {}, {},
		{Fg: render.ANSI(1)}, {Fg: render.ANSI(2)}, {Fg: render.ANSI(3)}, {Fg: render.ANSI(4), Attrs: render.AttrBold},
		{Fg: render.ANSI(5)}, {Fg: render.ANSI(6)}, {Fg: render.ANSI(11)}, {Fg: render.ANSI(8), Attrs: render.AttrItalic},
		{Fg: render.Indexed(214)}, {Fg: render.Indexed(114)}, {Fg: render.Indexed(75)}, {Fg: render.Indexed(244), Attrs: render.AttrItalic},
		{Fg: render.RGB(0xff, 0x79, 0xc6)}, {Fg: render.RGB(0x8b, 0xe9, 0xfd)}, {Fg: render.ANSI(7), Underline: render.UnderlineSingle},
		{Attrs: render.AttrInverse}, {Fg: render.ANSI(0), Bg: render.ANSI(6)},
	}
	put := func(x, y int, s string, st render.Cell) int {
		for _, r := range s {
			if x >= g.Columns-1 {
				break
			}
			c := st
			c.Content, c.Width = string(r), 1
			g.Set(x, y, c)
			x++
		}
		return x
	}
	bar := render.Cell{Fg: render.ANSI(0), Bg: render.ANSI(4)}
	for x := 0; x < g.Columns; x++ {
		put(x, 0, " ", bar)
		put(x, g.Rows-1, " ", render.Cell{Fg: render.ANSI(15), Bg: render.Indexed(236)})
	}
	put(1, 0, "termsprawl — node t3 — claude — ~/src/termsprawl/orchestrator/render", bar)
	put(1, g.Rows-1, " NORMAL  render.go  go  utf-8  unix  87%  412:17 ", render.Cell{Fg: render.ANSI(15), Bg: render.Indexed(236), Attrs: render.AttrBold})
	frame := render.Cell{Fg: render.ANSI(8)}
	put(0, 1, "┌"+strings.Repeat("─", g.Columns-2)+"┐", frame)
	put(0, g.Rows-2, "└"+strings.Repeat("─", g.Columns-2)+"┘", frame)
	g.Set(g.Columns-1, 1, render.Cell{Content: "┐", Width: 1, Fg: render.ANSI(8)})
	g.Set(g.Columns-1, g.Rows-2, render.Cell{Content: "┘", Width: 1, Fg: render.ANSI(8)})
	for y := 2; y < g.Rows-2; y++ {
		g.Set(0, y, render.Cell{Content: "│", Width: 1, Fg: render.ANSI(8)})
		g.Set(g.Columns-1, y, render.Cell{Content: "│", Width: 1, Fg: render.ANSI(8)})
		x := put(1, y, fmt.Sprintf("%4d ", y-1), render.Cell{Fg: render.Indexed(242)})
		if y%9 == 0 { // a gauge
			x = put(x, y, strings.Repeat("█", 40), render.Cell{Fg: render.ANSI(2)})
			x = put(x, y, strings.Repeat("▒", 20), render.Cell{Fg: render.ANSI(3)})
			x = put(x, y, strings.Repeat("░", 20), render.Cell{Fg: render.ANSI(8)})
		}
		x = put(x, y, strings.Repeat(" ", 4*rng.IntN(4)), render.Cell{})
		for x < g.Columns-2 {
			x = put(x, y, words[rng.IntN(len(words))], styles[rng.IntN(len(styles))])
			x = put(x, y, " ", render.Cell{})
		}
	}
	g.Cursor = render.Cursor{X: 30, Y: 20, Visible: true}
	return g
}

// noise200x50 is the worst case: every cell a random printable character,
// runs of random ANSI, 256 and 24-bit colours (far too many for a
// palette), bold, italic, faint, inverse, underline, box drawing and
// blocks.
func noise200x50() render.Grid {
	rng := rand.New(rand.NewPCG(1, 2))
	g := render.NewGrid(200, 50)
	const text = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+[]{}()<>/\\|;:'\",.!?@#$%^&*~`"
	box := []rune("─│┌┐└┘├┤┬┴┼═║╔╗╚╝█▀▄░▒▓")
	for y := 0; y < g.Rows; y++ {
		var st render.Cell
		for x := 0; x < g.Columns; x++ {
			if x%12 == 0 { // a new run of style every 12 cells
				st = render.Cell{}
				switch rng.IntN(4) {
				case 0:
					st.Fg = render.ANSI(rng.IntN(16))
				case 1:
					st.Fg = render.Indexed(rng.IntN(256))
				case 2:
					st.Fg = render.RGB(uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)))
				}
				if rng.IntN(3) == 0 {
					st.Bg = render.Indexed(rng.IntN(256))
				}
				st.Attrs = render.Attr(rng.IntN(32)) & (render.AttrBold | render.AttrItalic | render.AttrInverse | render.AttrFaint)
				if rng.IntN(6) == 0 {
					st.Underline = render.UnderlineSingle
				}
			}
			c := st
			c.Width = 1
			if rng.IntN(10) == 0 {
				c.Content = string(box[rng.IntN(len(box))])
			} else {
				c.Content = string(text[rng.IntN(len(text))])
			}
			g.Set(x, y, c)
		}
	}
	g.Cursor = render.Cursor{X: 10, Y: 10, Visible: true}
	return g
}

// BenchmarkPNG200x50 renders and encodes a 200×50 colourful screen at
// scale 1 (dark theme), glyph cache warm.
//
// Besides ns/op (wall time, which a loaded machine inflates) it reports
// cpu-ms/op, the CPU time of the whole process per image (drawing plus
// the PNG bands compressed on every core).
func BenchmarkPNG200x50(b *testing.B) {
	benchPNG(b, colourful200x50(), render.Options{})
}

func benchPNG(b *testing.B, g render.Grid, opts render.Options) {
	var png []byte
	if _, _, err := render.PNG(g, opts); err != nil { // warm the glyph cache
		b.Fatal(err)
	}
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		var err error
		if png, _, err = render.PNG(g, opts); err != nil {
			b.Fatal(err)
		}
	}
	if c := cpuTime() - c0; c > 0 {
		b.ReportMetric(float64(c.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	b.ReportMetric(float64(len(png)), "png-bytes")
}

// BenchmarkPNG200x50Noise is the worst case: a screen of random
// characters in random 24-bit colours, drawn and encoded in 24-bit colour.
func BenchmarkPNG200x50Noise(b *testing.B) {
	benchPNG(b, noise200x50(), render.Options{})
}

// BenchmarkImage200x50 is the drawing alone, without the PNG encoding.
func BenchmarkImage200x50(b *testing.B) {
	g := colourful200x50()
	if _, _, err := render.Image(g, render.Options{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := render.Image(g, render.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPNGScales is the colourful screen at each scale.
func BenchmarkPNGScales(b *testing.B) {
	g := colourful200x50()
	for s := 1; s <= render.MaxScale; s++ {
		b.Run(fmt.Sprint("scale", s), func(b *testing.B) { benchPNG(b, g, render.Options{Scale: s}) })
	}
}

// BenchmarkPNG200x50Samples renders the samples (ls, vim, htop, a dialog)
// painted on a 200×50 mirror: real screens, usually drawn paletted.
func BenchmarkPNG200x50Samples(b *testing.B) {
	for _, sm := range samples() {
		g := gridOf(b, 200, 50, sm.out)
		b.Run(sm.name, func(b *testing.B) { benchPNG(b, g, render.Options{}) })
	}
}
