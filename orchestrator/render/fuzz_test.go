package render_test

import (
	"bytes"
	"image/png"
	"testing"
	"unicode/utf8"

	"github.com/termsprawl/termsprawl/orchestrator/render"
)

// gridFromBytes builds a small grid from fuzz input: any content (also
// invalid UTF-8 and combining clusters), widths, colours of every kind,
// attributes, underline styles and a cursor anywhere.
func gridFromBytes(data []byte) (render.Grid, render.Options) {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	cols, rows := int(next()%40), int(next()%12)
	opts := render.Options{Scale: int(next() % 3), Theme: []string{"", "dark", "light"}[next()%3]}
	g := render.Grid{Columns: cols, Rows: rows, Cells: make([]render.Cell, int(next())%(cols*rows+2))}
	colour := func() render.Color {
		switch next() % 4 {
		case 1:
			return render.ANSI(int(next()))
		case 2:
			return render.Indexed(int(next()))
		case 3:
			return render.RGB(next(), next(), next())
		}
		return render.DefaultColor()
	}
	for i := range g.Cells {
		n := int(next() % 6)
		var content []byte
		for j := 0; j < n; j++ {
			content = append(content, next())
		}
		if next()%2 == 0 && utf8.Valid(content) {
			content = []byte(string([]rune(string(content))))
		}
		g.Cells[i] = render.Cell{
			Content:        string(content),
			Width:          next() % 4,
			Fg:             colour(),
			Bg:             colour(),
			UnderlineColor: colour(),
			Underline:      render.Underline(next() % 8),
			Attrs:          render.Attr(next()) | render.Attr(next())<<8,
		}
	}
	g.Cursor = render.Cursor{X: int(int8(next())), Y: int(int8(next())), Visible: next()%2 == 0, Shape: render.CursorShape(next() % 4)}
	return g, opts
}

func FuzzPNG(f *testing.F) {
	f.Add([]byte{10, 3, 0, 0, 30, 1, 'a', 0, 1, 1, 2, 3})
	f.Add([]byte("\x05\x02\x01\x02\x09\x03\xe6\x97\xa5\x01\x02\x03\x01\x05\x07\x02\x01\x02\x03\x04"))
	f.Add([]byte("\x27\x0b\x02\x01\xff\x04\xe2\x94\x80\xe2\x95\x90\x00\x01\x02\x03\x00\x03\x10\x20\x30"))
	f.Add([]byte("\x01\x01\x00\x00\x01\x02\xff\xfe\x00\x00\x00\x00\x00\x00\x07\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, opts := gridFromBytes(data)
		out, facts, err := render.PNG(g, opts)
		if err != nil {
			if g.Columns >= 1 && g.Rows >= 1 {
				t.Fatalf("%dx%d: %v", g.Columns, g.Rows, err)
			}
			return
		}
		img, err := png.Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("the PNG does not decode: %v", err)
		}
		if b := img.Bounds(); b.Dx() != facts.Width || b.Dy() != facts.Height {
			t.Fatalf("image %v, facts %dx%d", b, facts.Width, facts.Height)
		}
		seen := map[string]bool{}
		for _, c := range facts.FallbackCharacters {
			if seen[c] || c == "" {
				t.Fatalf("fallback list %q repeats or has an empty entry", facts.FallbackCharacters)
			}
			seen[c] = true
		}
	})
}
