package render

// ColorKind says how a Color is given: the kinds are kept apart so the
// theme can map the default colours and the 16 ANSI colours.
type ColorKind uint8

// The kinds of colour.
const (
	ColorDefault ColorKind = iota // the theme's default foreground or background
	ColorANSI                     // one of the 16 ANSI colours (SGR 30–37, 90–97, 40–47, 100–107); Index 0..15
	ColorIndexed                  // the 256-colour palette (SGR 38;5;n); Index 0..255
	ColorRGB                      // 24-bit colour (SGR 38;2;r;g;b); R, G, B
)

// Color is a cell's colour as the program asked for it. The zero Color is
// the default colour.
type Color struct {
	Kind    ColorKind
	Index   uint8 // ColorANSI (0..15) and ColorIndexed (0..255)
	R, G, B uint8 // ColorRGB
}

// DefaultColor is the theme's default colour.
func DefaultColor() Color { return Color{} }

// ANSI is one of the 16 ANSI colours (0–7 normal, 8–15 bright); i is taken
// modulo 16.
func ANSI(i int) Color { return Color{Kind: ColorANSI, Index: uint8(i & 15)} }

// Indexed is a colour of the 256-colour palette; i is taken modulo 256.
func Indexed(i int) Color { return Color{Kind: ColorIndexed, Index: uint8(i)} }

// RGB is a 24-bit colour.
func RGB(r, g, b uint8) Color { return Color{Kind: ColorRGB, R: r, G: g, B: b} }

// Attr is a set of text attributes.
type Attr uint16

// The attributes. Blink is kept for completeness and not drawn.
const (
	AttrBold Attr = 1 << iota
	AttrFaint
	AttrItalic
	AttrStrikethrough
	AttrInverse
	AttrInvisible
	AttrBlink
)

// Underline is the underline style of a cell.
type Underline uint8

// The underline styles (SGR 4, 4:2 / 21, 4:3, 4:4, 4:5).
const (
	UnderlineNone Underline = iota
	UnderlineSingle
	UnderlineDouble
	UnderlineCurly
	UnderlineDotted
	UnderlineDashed
)

// Cell is one cell of the grid.
//
// A wide character (CJK, most emoji) is a cell of Width 2 followed by a
// continuation cell of Width 0 whose Content is empty; the renderer draws
// the wide cell over both and uses the wide cell's style for both.
type Cell struct {
	// Content is the grapheme cluster shown in the cell, usually one rune.
	// "" (or " ") is a blank cell.
	Content string
	// Width is 1 for a normal cell, 2 for the first cell of a wide
	// character and 0 for its continuation. Other values count as 1.
	Width uint8
	Fg    Color
	Bg    Color
	// UnderlineColor is the colour of the underline (SGR 58); the default
	// colour means the foreground.
	UnderlineColor Color
	Underline      Underline
	Attrs          Attr
}

// CursorShape is the cursor's shape (DECSCUSR).
type CursorShape uint8

// The cursor shapes.
const (
	CursorBlock CursorShape = iota
	CursorUnderline
	CursorBar
)

// Cursor is the cursor of a grid. X may be Columns (a pending wrap, as
// tmux reports it): it is drawn in the last column.
type Cursor struct {
	X, Y    int
	Visible bool
	Shape   CursorShape
}

// Grid is the visible cell grid of a terminal: Columns × Rows cells, row
// by row. Missing cells (a short Cells) are blank; extra ones are ignored.
type Grid struct {
	Columns, Rows int
	Cells         []Cell
	Cursor        Cursor
}

// NewGrid returns a blank grid of cols × rows (each at least 1) with a
// hidden cursor.
func NewGrid(cols, rows int) Grid {
	cols, rows = max(cols, 1), max(rows, 1)
	cells := make([]Cell, cols*rows)
	for i := range cells {
		cells[i].Width = 1
	}
	return Grid{Columns: cols, Rows: rows, Cells: cells}
}

// At returns the cell at column x, row y (a blank cell outside the grid).
func (g Grid) At(x, y int) Cell {
	if x < 0 || y < 0 || x >= g.Columns || y >= g.Rows {
		return Cell{Width: 1}
	}
	i := y*g.Columns + x
	if i >= len(g.Cells) {
		return Cell{Width: 1}
	}
	return g.Cells[i]
}

// Set stores c at column x, row y; outside the grid it does nothing.
func (g *Grid) Set(x, y int, c Cell) {
	if x < 0 || y < 0 || x >= g.Columns || y >= g.Rows {
		return
	}
	i := y*g.Columns + x
	if i < len(g.Cells) {
		g.Cells[i] = c
	}
}
