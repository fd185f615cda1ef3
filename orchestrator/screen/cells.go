package screen

import (
	"image/color"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"github.com/termsprawl/termsprawl/orchestrator/render"
)

// Cells returns a copy of the visible cell grid with its styles and the
// cursor (position, visibility and DECSCUSR shape), for the screenshot
// renderer. The copy is taken under the Screen's mutex: x/vt's cells are
// pointers into live buffers and are never handed out.
//
// Without a usable emulator (asleep, poisoned until the next Seed, or
// closed) it returns the published rows as unstyled cells and a block
// cursor.
func (s *Screen) Cells() render.Grid {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasEmulator() {
		return s.textCells()
	}
	g := render.Grid{Columns: s.cols, Rows: s.rows, Cells: make([]render.Cell, s.cols*s.rows)}
	for y := 0; y < s.rows; y++ {
		s.copyRow(g.Cells[y*s.cols:(y+1)*s.cols], y)
	}
	g.Cursor = s.gridCursor()
	return g
}

// hasEmulator reports whether the cells can be read from the emulator
// (not asleep, poisoned until the next Seed, or closed). Called with mu
// held.
func (s *Screen) hasEmulator() bool { return s.t != nil && !s.t.poisoned && s.t.emu != nil }

// CellsView is a caller's own copy of the visible cells, which
// UpdateCells brings up to date by copying only the rows the emulator
// touched since the view's last update: a page showing a node whose
// spinner turns copies one row a frame, not the grid. The zero value is
// ready to use; a view is not safe for concurrent use.
type CellsView struct {
	// Grid is the copy. UpdateCells overwrites its rows in place.
	Grid   render.Grid
	stamps []uint64 // per row: the Screen's stamp when copied; nil: copy every row
}

// UpdateCells brings v up to date (see CellsView). Every row is copied
// when v is new, the size changed, or the Screen has no usable emulator
// (then the rows are the published text, as Cells returns them); a new
// emulator (after a sleep or a poisoning) stamps every row at its first
// commit.
func (s *Screen) UpdateCells(v *CellsView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasEmulator() {
		v.Grid, v.stamps = s.textCells(), nil
		return
	}
	full := v.Grid.Columns != s.cols || v.Grid.Rows != s.rows || len(v.stamps) != s.rows
	if full {
		v.Grid = render.Grid{Columns: s.cols, Rows: s.rows, Cells: make([]render.Cell, s.cols*s.rows)}
		v.stamps = make([]uint64, s.rows)
	}
	cols := s.cols
	for y := 0; y < s.rows; y++ {
		if !full && v.stamps[y] == s.stamps[y] {
			continue
		}
		row := v.Grid.Cells[y*cols : (y+1)*cols]
		// A row that only moved up (scroll.go) is in this copy already,
		// further down: stamps are never shared between rows. Rows
		// above y are done, so the one read here is not yet overwritten.
		moved := false
		for k := 1; !full && k <= maxFollow && y+k < s.rows; k++ {
			if v.stamps[y+k] == s.stamps[y] {
				copy(row, v.Grid.Cells[(y+k)*cols:(y+k+1)*cols])
				moved = true
				break
			}
		}
		if !moved {
			s.copyRow(row, y)
		}
		v.stamps[y] = s.stamps[y]
	}
	v.Grid.Cursor = s.gridCursor()
}

// Frames takes a Screen's cells frame after frame for a caller that
// compares each frame with the one before (the web monitor's and the
// dashboard's encoder): its two views are updated in turn, so the last
// frame's grid stays intact while the next is taken. The zero value is
// ready; not safe for concurrent use.
type Frames struct {
	views [2]CellsView
	next  int // the view the next frame updates
}

// Next returns the current grid and each row's stamp: a number that
// names the row's cells — two rows, in this frame or an earlier one of
// the same Frames, with the same stamp have the same cells (a row that
// moved with a scroll keeps its stamp). stamps is nil when the Screen has
// no emulator (the rows are then the published text, and nothing is
// known of them). The grid and stamps stay valid until the Next call
// after the next one.
func (f *Frames) Next(s *Screen) (render.Grid, []uint64) {
	v := &f.views[f.next]
	f.next = 1 - f.next
	s.UpdateCells(v)
	return v.Grid, v.stamps
}

// maxFollow is how far down UpdateCells looks for a row that moved up.
const maxFollow = 8

// copyRow copies row y of the emulator into row. Called with mu held
// and a usable emulator.
func (s *Screen) copyRow(row []render.Cell, y int) {
	emu := s.t.emu
	for x := range row {
		c := emu.CellAt(x, y)
		if c == nil {
			row[x] = render.Cell{Width: 1}
			continue
		}
		// A wide character's continuation is a zero cell in x/vt (no
		// style): it takes the style of its wide cell.
		if c.Width == 0 && c.Content == "" && x > 0 && row[x-1].Width == 2 {
			cont := row[x-1]
			cont.Content, cont.Width = "", 0
			row[x] = cont
			continue
		}
		row[x] = cellOf(c)
	}
}

// gridCursor is the cursor as the grid has it. Called with mu held and a
// usable emulator.
func (s *Screen) gridCursor() render.Cursor {
	return render.Cursor{X: s.cursor.X, Y: s.cursor.Y, Visible: s.cursor.Visible, Shape: cursorShape(s.t.emu)}
}

// textCells is the published rows as unstyled cells. Called with mu held.
func (s *Screen) textCells() render.Grid {
	g := render.NewGrid(s.cols, s.rows)
	for y, line := range s.lines {
		if y >= s.rows {
			break
		}
		x := 0
		for len(line) > 0 && x < s.cols {
			cluster, w := ansi.FirstGraphemeCluster(line, ansi.GraphemeWidth)
			line = line[len(cluster):]
			if w <= 0 {
				// A zero-width cluster on its own (a stray mark): drop it.
				continue
			}
			if w > 1 && x+1 < s.cols {
				g.Set(x, y, render.Cell{Content: cluster, Width: 2})
				g.Set(x+1, y, render.Cell{Width: 0})
				x += 2
				continue
			}
			g.Set(x, y, render.Cell{Content: cluster, Width: 1})
			x++
		}
	}
	g.Cursor = render.Cursor{X: s.cursor.X, Y: s.cursor.Y, Visible: s.cursor.Visible, Shape: render.CursorBlock}
	return g
}

// cellOf copies one x/vt cell.
func cellOf(c *uv.Cell) render.Cell {
	if c.Style.Fg == nil && c.Style.Bg == nil && c.Style.UnderlineColor == nil && c.Style.Attrs == 0 && c.Style.Underline == uv.UnderlineNone {
		// The common cell, unstyled: no colour to convert.
		w := uint8(1)
		if c.Width >= 2 {
			w = 2
		}
		return render.Cell{Content: c.Content, Width: w}
	}
	out := render.Cell{
		Content:        c.Content,
		Fg:             colorOf(c.Style.Fg),
		Bg:             colorOf(c.Style.Bg),
		UnderlineColor: colorOf(c.Style.UnderlineColor),
		Underline:      underlineOf(c.Style.Underline),
	}
	switch {
	case c.Width >= 2:
		out.Width = 2
	case c.Width == 1:
		out.Width = 1
	default:
		// A zero cell that is no continuation (never written): blank.
		out.Width = 1
	}
	a := c.Style.Attrs
	for _, m := range [...]struct {
		uv   uint8
		attr render.Attr
	}{
		{uv.AttrBold, render.AttrBold},
		{uv.AttrFaint, render.AttrFaint},
		{uv.AttrItalic, render.AttrItalic},
		{uv.AttrBlink, render.AttrBlink},
		{uv.AttrRapidBlink, render.AttrBlink},
		{uv.AttrReverse, render.AttrInverse},
		{uv.AttrConceal, render.AttrInvisible},
		{uv.AttrStrikethrough, render.AttrStrikethrough},
	} {
		if a&m.uv != 0 {
			out.Attrs |= m.attr
		}
	}
	return out
}

// colorOf keeps the kind of colour the program asked for: x/vt stores SGR
// 30–37/90–97 as ansi.BasicColor, 38;5 as ansi.IndexedColor and 38;2 as
// color.RGBA; anything else is converted to 24-bit.
func colorOf(c color.Color) render.Color {
	switch v := c.(type) {
	case nil:
		return render.DefaultColor()
	case ansi.BasicColor:
		return render.ANSI(int(v))
	case ansi.IndexedColor:
		return render.Indexed(int(v))
	case color.RGBA:
		if v.A == 0 {
			return render.DefaultColor() // SGR 38;1 (transparent)
		}
		return render.RGB(v.R, v.G, v.B)
	}
	r, g, b, a := c.RGBA()
	if a == 0 {
		return render.DefaultColor()
	}
	// Un-premultiply.
	return render.RGB(uint8(r*0xffff/a>>8), uint8(g*0xffff/a>>8), uint8(b*0xffff/a>>8))
}

func underlineOf(u uv.Underline) render.Underline {
	switch u {
	case uv.UnderlineNone:
		return render.UnderlineNone
	case uv.UnderlineDouble:
		return render.UnderlineDouble
	case uv.UnderlineCurly:
		return render.UnderlineCurly
	case uv.UnderlineDotted:
		return render.UnderlineDotted
	case uv.UnderlineDashed:
		return render.UnderlineDashed
	default:
		return render.UnderlineSingle
	}
}

// cursorShape is the DECSCUSR shape of the emulator's cursor.
func cursorShape(emu *vt.Emulator) render.CursorShape {
	style, _ := emu.CursorStyle()
	switch style {
	case vt.CursorUnderline:
		return render.CursorUnderline
	case vt.CursorBar:
		return render.CursorBar
	default:
		return render.CursorBlock
	}
}
