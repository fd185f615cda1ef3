package monitor

import (
	"bytes"
	"encoding/json"
	"image/color"
	"slices"
	"strconv"

	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/tools"
)

// The page's wire format: every event's data is one JSON object.
//
//	frame   {"nodes":[Node…],"dialogs":[…],"watches":[…],"show":ID,"screen":Screen|null}  on connect
//	state   {"nodes":[Node…],"dialogs":[…],"watches":[…]}                                  when a row, an agent, a dialog or a watch changed
//	screen  Screen                                                                          the shown node's changed rows, per revision
//
// A Screen is {"node","rev","cols","rows","full","cursor":{x,y,visible,shape},"scroll"?,"lines":[{"y":N,"r":[Run…]}]};
// full is true when lines hold every row (connect, resize); scroll N
// (omitted when 0) moves every row up N before lines apply, so a
// scrolling screen sends its new rows only.

// Attribute bits of a Run ("a"); the underline style is a << 8.
const (
	attrBold      = tools.RunBold // the stream's bits, which the dashboard reads (tools/events.go)
	attrItalic    = tools.RunItalic
	attrFaint     = tools.RunFaint
	attrStrike    = tools.RunStrike
	attrInverse   = tools.RunInverse
	attrInvisible = tools.RunInvisible
	attrBlink     = tools.RunBlink
	underlineBits = 8
)

// run is a stretch of cells of one style. Colours are resolved with the
// screenshot's palette (render.Palette), so inverse, faint and bold
// brightening look the same as in terminal_screenshot; "" is the
// theme's default. C is the cursor's shape + 1 on the cursor's cell.
type run struct {
	T string `json:"t"`
	F string `json:"f,omitempty"`
	B string `json:"b,omitempty"`
	U string `json:"u,omitempty"` // underline colour, when not the foreground
	A int    `json:"a,omitempty"`
	C int    `json:"c,omitempty"`
	W int    `json:"w,omitempty"` // 1: one wide character, drawn two cells wide
}

type lineMsg struct {
	Y int   `json:"y"`
	R []run `json:"r"`
}

type cursorMsg struct {
	X       int  `json:"x"`
	Y       int  `json:"y"`
	Visible bool `json:"visible"`
	Shape   int  `json:"shape"` // 0 block, 1 underline, 2 bar
}

type screenMsg struct {
	Node   string    `json:"node"`
	Rev    uint64    `json:"rev"`
	Cols   int       `json:"cols"`
	Rows   int       `json:"rows"`
	Full   bool      `json:"full"`
	Cursor cursorMsg `json:"cursor"`
	// Scroll is how many rows moved up before Lines apply: row y shows
	// what row y+Scroll showed, the last Scroll rows are blank until
	// Lines fill them. Never set with Full.
	Scroll int               `json:"scroll,omitempty"`
	Lines  []json.RawMessage `json:"lines"`
}

// appendJSON appends m as JSON. It is json.Marshal's encoding of m
// (TestScreenMsgJSON), without re-reading every line to validate it: the
// lines are the encoder's own JSON.
func (m screenMsg) appendJSON(b []byte) []byte {
	node, _ := json.Marshal(m.Node)
	b = append(b, `{"node":`...)
	b = append(b, node...)
	b = append(b, `,"rev":`...)
	b = strconv.AppendUint(b, m.Rev, 10)
	b = append(b, `,"cols":`...)
	b = strconv.AppendInt(b, int64(m.Cols), 10)
	b = append(b, `,"rows":`...)
	b = strconv.AppendInt(b, int64(m.Rows), 10)
	b = append(b, `,"full":`...)
	b = strconv.AppendBool(b, m.Full)
	b = append(b, `,"cursor":{"x":`...)
	b = strconv.AppendInt(b, int64(m.Cursor.X), 10)
	b = append(b, `,"y":`...)
	b = strconv.AppendInt(b, int64(m.Cursor.Y), 10)
	b = append(b, `,"visible":`...)
	b = strconv.AppendBool(b, m.Cursor.Visible)
	b = append(b, `,"shape":`...)
	b = strconv.AppendInt(b, int64(m.Cursor.Shape), 10)
	b = append(b, '}')
	if m.Scroll != 0 {
		b = append(b, `,"scroll":`...)
		b = strconv.AppendInt(b, int64(m.Scroll), 10)
	}
	b = append(b, `,"lines":[`...)
	for i, l := range m.Lines {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l...)
	}
	return append(b, "]}"...)
}

// encoder turns cell grids into rows of runs.
type encoder struct {
	pal    render.Palette
	fg, bg color.RGBA
}

func newEncoder() encoder {
	pal, _ := render.NewPalette("dark")
	fg, bg := pal.Defaults()
	return encoder{pal: pal, fg: fg, bg: bg}
}

func hexOf(c color.RGBA) string {
	const digits = "0123456789abcdef"
	return string([]byte{'#', digits[c.R>>4], digits[c.R&15], digits[c.G>>4], digits[c.G&15], digits[c.B>>4], digits[c.B&15]})
}

// cursorX is where the cursor is drawn: a pending wrap (X = Columns) in
// the last column.
func cursorX(g render.Grid) int { return min(g.Cursor.X, g.Columns-1) }

// style is a cell's run without its text.
func (e encoder) style(c render.Cell, cursor bool, shape render.CursorShape) run {
	fg, bg, ul := e.pal.Colours(c)
	if cursor && shape == render.CursorBlock {
		fg, bg, ul = bg, fg, bg
	}
	var r run
	if fg != e.fg {
		r.F = hexOf(fg)
	}
	if bg != e.bg {
		r.B = hexOf(bg)
	}
	if c.Underline != render.UnderlineNone && ul != fg {
		r.U = hexOf(ul)
	}
	for _, m := range [...]struct {
		a   render.Attr
		bit int
	}{
		{render.AttrBold, attrBold}, {render.AttrItalic, attrItalic}, {render.AttrFaint, attrFaint},
		{render.AttrStrikethrough, attrStrike}, {render.AttrInverse, attrInverse},
		{render.AttrInvisible, attrInvisible}, {render.AttrBlink, attrBlink},
	} {
		if c.Attrs&m.a != 0 {
			r.A |= m.bit
		}
	}
	r.A |= int(c.Underline) << underlineBits
	if cursor {
		r.C = int(shape) + 1
	}
	return r
}

// runs encodes row y of g as a JSON array of runs.
func (e encoder) runs(g render.Grid, y int) []byte {
	cx := -1
	if g.Cursor.Visible && g.Cursor.Y == y {
		cx = cursorX(g)
	}
	rs := make([]run, 0, 4)
	for x := 0; x < g.Columns; x++ {
		c := g.At(x, y)
		if c.Width == 0 && x > 0 {
			continue // a wide character's continuation: drawn by its cell
		}
		text := c.Content
		if text == "" {
			text = " "
		}
		cur := x == cx || (c.Width == 2 && x+1 == cx)
		var st run
		if !cur && c.Fg == (render.Color{}) && c.Bg == (render.Color{}) && c.Attrs == 0 && c.Underline == render.UnderlineNone {
			// The common cell: default colours, no attributes.
		} else {
			st = e.style(c, cur, g.Cursor.Shape)
		}
		if c.Width == 2 {
			// Alone in its run, so the page can give it exactly two cells
			// whatever the font's glyph is.
			st.W = 1
		}
		if n := len(rs); n > 0 && !cur && rs[n-1].C == 0 && st.W == 0 && sameStyle(rs[n-1], st) {
			rs[n-1].T += text
			continue
		}
		st.T = text
		rs = append(rs, st)
	}
	data, _ := json.Marshal(rs)
	return data
}

// line is the {"y":y,"r":runs} of one row.
func line(y int, runs []byte) json.RawMessage {
	b := make([]byte, 0, len(runs)+16)
	b = append(b, `{"y":`...)
	b = strconv.AppendInt(b, int64(y), 10)
	b = append(b, `,"r":`...)
	b = append(b, runs...)
	return append(b, '}')
}

// row encodes row y of g as {"y":y,"r":[runs]}.
func (e encoder) row(g render.Grid, y int) json.RawMessage { return line(y, e.runs(g, y)) }

// lines is every row's {"y":y,"r":runs}.
func lines(runs [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(runs))
	for y, r := range runs {
		out[y] = line(y, r)
	}
	return out
}

// memo is the last frame's cells, stamps and runs per row: a row that is
// one of the last frame's (the same row, or one scrolled by a few lines)
// reuses its runs instead of being encoded again. With stamps (a live
// mirror) rows are matched by stamp; without, by their cells.
type memo struct {
	cells  [][]render.Cell
	stamps []uint64 // nil: the last frame had none
	runs   [][]byte
	cursor int // the row the cursor was drawn in, -1 if none
	reused int // rows reused so far (tests)
}

// maxScroll is how far back a scrolled row is looked for.
const maxScroll = 4

// rows encodes every row of g as its runs, reusing m's where it can, and
// updates m. stamps are the rows' stamps (orchestrator.Showing.Frame), or
// nil.
func (e encoder) rows(g render.Grid, stamps []uint64, m *memo) [][]byte {
	cur := -1
	if g.Cursor.Visible {
		cur = g.Cursor.Y
	}
	byStamp := len(stamps) == g.Rows && len(m.stamps) == len(m.runs)
	cells := make([][]render.Cell, g.Rows)
	runs := make([][]byte, g.Rows)
	for y := range g.Rows {
		lo, hi := y*g.Columns, (y+1)*g.Columns
		if hi <= len(g.Cells) {
			cells[y] = g.Cells[lo:hi]
		}
		if y != cur && cells[y] != nil {
			for k := 0; k <= maxScroll; k++ {
				old := y + k
				if old >= len(m.runs) || old == m.cursor {
					continue
				}
				if byStamp && m.stamps[old] == stamps[y] || !byStamp && old < len(m.cells) && slices.Equal(m.cells[old], cells[y]) {
					runs[y] = m.runs[old]
					m.reused++
					break
				}
			}
		}
		if runs[y] == nil {
			runs[y] = e.runs(g, y)
		}
	}
	m.cells, m.runs, m.cursor = cells, runs, cur
	m.stamps = append(m.stamps[:0], stamps...)
	if len(stamps) != g.Rows {
		m.stamps = nil
	}
	return runs
}

// scrollOf is how many rows the screen moved up from old to runs: the
// shift (1..maxScroll) under which more rows are the same than in place,
// or 0. Rows are compared by their encoded runs.
func scrollOf(old, runs [][]byte) int {
	if len(old) != len(runs) {
		return 0
	}
	count := func(k int) int {
		n := 0
		for y := 0; y+k < len(old); y++ {
			if bytes.Equal(runs[y], old[y+k]) {
				n++
			}
		}
		return n
	}
	best, bestN := 0, count(0)
	for k := 1; k <= maxScroll; k++ {
		if n := count(k); n > bestN {
			best, bestN = k, n
		}
	}
	return best
}

func cursorOf(g render.Grid) cursorMsg {
	return cursorMsg{X: cursorX(g), Y: g.Cursor.Y, Visible: g.Cursor.Visible, Shape: int(g.Cursor.Shape)}
}

func sameStyle(a, b run) bool {
	return a.F == b.F && a.B == b.B && a.U == b.U && a.A == b.A && a.C == b.C && a.W == b.W
}
