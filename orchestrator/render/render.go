package render

import (
	"errors"
	"fmt"
	"image"
	"unicode/utf8"
)

// Limits.
const (
	// MaxPNGBytes is the largest PNG returned (CONTRACT §12: a PNG over
	// 3 MB is refused).
	MaxPNGBytes = 3_000_000
	// MaxPixels bounds the image before it is drawn (4 bytes a pixel in
	// memory): a 200×50 screen at scale 4 is 21.8 M pixels.
	MaxPixels = 1 << 25
	// MaxScale is the largest Options.Scale.
	MaxScale = 4
)

var (
	// ErrTooLarge is wrapped by the error for an image that is too large:
	// its PNG is over MaxPNGBytes or it has more than MaxPixels pixels.
	// The advice is to lower the scale.
	ErrTooLarge = errors.New("render: screenshot too large")
	// ErrInvalid is wrapped by the error for a bad scale or theme, or an
	// empty grid.
	ErrInvalid = errors.New("render: invalid screenshot request")
)

// Options choose the scale and theme of a screenshot.
type Options struct {
	// Scale multiplies every dimension: 1..MaxScale; 0 means 1.
	Scale int
	// Theme is "dark" (the default, also for "") or "light".
	Theme string
}

// Facts describe a rendered screenshot; they are the contract's
// structured facts beside the image.
type Facts struct {
	Width  int `json:"width"`  // pixels
	Height int `json:"height"` // pixels
	// SelfContained is true when no font files or other outside resources
	// were used (always: the fonts are embedded).
	SelfContained bool `json:"self_contained"`
	// FallbackCharacters lists, once each and in reading order, every
	// character (grapheme cluster) the font has no glyph for; each was
	// drawn as a box. Never nil.
	FallbackCharacters []string `json:"fallback_characters"`
}

// PNG renders g as a PNG image. The error wraps ErrTooLarge when the
// image would be over MaxPixels pixels or its PNG over MaxPNGBytes, and
// ErrInvalid for bad options or an empty grid.
func PNG(g Grid, opts Options) ([]byte, Facts, error) {
	s, facts, err := draw(&g, opts)
	if err != nil {
		return nil, facts, err
	}
	out := encodePNG(s)
	s.release()
	if len(out) > MaxPNGBytes {
		return nil, facts, fmt.Errorf("%w: the PNG of a %dx%d screen at scale %d is %d bytes, over the limit of %d: lower the scale",
			ErrTooLarge, g.Columns, g.Rows, normScale(opts.Scale), len(out), MaxPNGBytes)
	}
	return out, facts, nil
}

// Image renders g into an RGBA image: the pixels PNG encodes. The error
// wraps ErrTooLarge for an image over MaxPixels pixels and ErrInvalid for
// bad options or an empty grid.
func Image(g Grid, opts Options) (*image.RGBA, Facts, error) {
	s, facts, err := draw(&g, opts)
	if err != nil {
		return nil, facts, err
	}
	img := s.rgba()
	s.release()
	return img, facts, nil
}

func normScale(s int) int {
	if s == 0 {
		return 1
	}
	return s
}

// draw checks the request and draws g: on a paletted surface if its
// colours fit, else on an RGB one.
func draw(g *Grid, opts Options) (*surface, Facts, error) {
	facts := Facts{SelfContained: true, FallbackCharacters: []string{}}
	scale := normScale(opts.Scale)
	if scale < 1 || scale > MaxScale {
		return nil, facts, fmt.Errorf("%w: scale %d is not in 1..%d", ErrInvalid, opts.Scale, MaxScale)
	}
	var th *theme
	switch opts.Theme {
	case "", "dark":
		th = &themeDark
	case "light":
		th = &themeLight
	default:
		return nil, facts, fmt.Errorf("%w: theme %q is not dark or light", ErrInvalid, opts.Theme)
	}
	if g.Columns < 1 || g.Rows < 1 {
		return nil, facts, fmt.Errorf("%w: the grid is %dx%d", ErrInvalid, g.Columns, g.Rows)
	}
	m := metricsFor(scale)
	if g.Columns > MaxPixels/m.w || g.Rows > MaxPixels/m.h || (g.Columns*m.w)*(g.Rows*m.h) > MaxPixels {
		return nil, facts, fmt.Errorf("%w: a %dx%d screen at scale %d would be over %d pixels: lower the scale",
			ErrTooLarge, g.Columns, g.Rows, scale, MaxPixels)
	}
	if err := loadFonts(); err != nil {
		return nil, facts, err
	}
	facts.Width, facts.Height = g.Columns*m.w, g.Rows*m.h
	r := renderer{g: g, th: th, m: &m}
	levels := r.levels()
	r.s = newSurface(facts.Width, facts.Height, levels, th.bg)
	r.draw()
	if r.s.overflow {
		r.s.release()
		r = renderer{g: g, th: th, m: &m, ascii: r.ascii, asciiOK: r.asciiOK}
		r.s = newSurface(facts.Width, facts.Height, 0, th.bg)
		r.draw()
	}
	facts.FallbackCharacters = append(facts.FallbackCharacters, r.fallback...)
	return r.s, facts, nil
}

// renderer draws one grid.
type renderer struct {
	s        *surface
	g        *Grid
	th       *theme
	m        *metrics
	ascii    [numFaces][128]*glyph // this render's glyphs of ASCII, by face
	asciiOK  [numFaces][128]bool
	seen     map[string]bool
	fallback []string
	blank    Cell // a missing cell
}

// span returns the cell to draw at column x of row y: a wide character
// over its two cells, and whether the cursor is on it.
func (r *renderer) span(x, y int) (c *Cell, cells int, cursorHere bool) {
	g := r.g
	i := y*g.Columns + x
	c = &r.blank
	if i < len(g.Cells) {
		c = &g.Cells[i]
	}
	cells = 1
	if c.Width == 2 && x+1 < g.Columns && i+1 < len(g.Cells) && g.Cells[i+1].Width == 0 {
		cells = 2
	}
	cur := g.Cursor
	curX := min(max(cur.X, 0), g.Columns-1)
	cursorHere = cur.Visible && cur.Y == y && curX >= x && curX < x+cells
	return c, cells, cursorHere
}

func (r *renderer) draw() {
	r.seen = map[string]bool{}
	r.blank = Cell{Width: 1}
	shape := r.g.Cursor.Shape
	for y := 0; y < r.g.Rows; y++ {
		for x := 0; x < r.g.Columns; {
			c, cells, cursorHere := r.span(x, y)
			r.cell(x, y, cells, c, cursorHere, shape)
			if r.s.overflow {
				return
			}
			x += cells
		}
	}
}

// Antialiasing levels of a paletted surface.
const (
	fullLevels = 255
	minLevels  = 10 // fewer and the image is drawn in 24-bit colour
	maxPairs   = 24 // more colour pairs with text and the image is 24-bit
)

// levels returns the number of coverage levels a paletted surface can
// give every (foreground, background) pair of the grid within 256
// colours, or 0 if it is too colourful for a palette.
func (r *renderer) levels() int {
	solid := map[rgb]bool{r.th.bg: true, r.th.fg: true}
	pairs := map[[2]rgb]bool{}
	shape := r.g.Cursor.Shape
	r.blank = Cell{Width: 1}
	var last struct {
		style Cell
		block bool
		valid bool
	}
	for y := 0; y < r.g.Rows; y++ {
		for x := 0; x < r.g.Columns; {
			c, cells, cursorHere := r.span(x, y)
			x += cells
			block := cursorHere && shape == CursorBlock
			// Runs of one style are the rule: count each run once.
			st := *c
			st.Content, st.Width = "", 0
			if st.Attrs&AttrInvisible == 0 && c.Content != "" && c.Content != " " {
				st.Width = 1 // has text
			}
			if last.valid && last.style == st && last.block == block {
				continue
			}
			last.style, last.block, last.valid = st, block, true
			fg, bg, ul := r.colours(c, block)
			solid[bg] = true
			if c.Attrs&AttrInvisible != 0 {
				continue
			}
			if c.Underline != UnderlineNone {
				solid[ul] = true
			}
			if c.Attrs&AttrStrikethrough != 0 {
				solid[fg] = true
			}
			if st.Width == 1 {
				solid[fg] = true
				pairs[[2]rgb{fg, bg}] = true
			}
			if len(pairs) > maxPairs || len(solid) >= 256-minLevels {
				return 0
			}
		}
	}
	if len(pairs) == 0 {
		return fullLevels
	}
	n := (256-len(solid))/len(pairs) + 1
	if n < minLevels {
		return 0
	}
	return min(n, fullLevels)
}

// glyphFor returns the glyph of a cell's content (nil if blank).
func (r *renderer) glyphFor(content string, face uint8, cells int) *glyph {
	if len(content) == 1 && content[0] < 128 && cells == 1 {
		b := content[0]
		if !r.asciiOK[face][b] {
			r.ascii[face][b] = lookupGlyph(content, face, 1, r.m)
			r.asciiOK[face][b] = true
		}
		return r.ascii[face][b]
	}
	return lookupGlyph(content, face, cells, r.m)
}

// colours returns the foreground, background and underline colour of a
// cell; a block cursor inverts them.
func (r *renderer) colours(c *Cell, blockCursor bool) (fg, bg, ul rgb) {
	th := r.th
	fg = th.resolve(c.Fg, th.fg, c.Attrs&AttrBold != 0)
	bg = th.resolve(c.Bg, th.bg, false)
	if c.Attrs&AttrInverse != 0 {
		fg, bg = bg, fg
	}
	if c.Attrs&AttrFaint != 0 {
		fg = blend(fg, bg, 128)
	}
	ul = fg
	if c.UnderlineColor.Kind != ColorDefault {
		ul = th.resolve(c.UnderlineColor, fg, false)
	}
	if blockCursor {
		fg, bg = bg, fg
		ul = fg
	}
	return fg, bg, ul
}

// cell draws the cell at column x, row y over cells columns.
func (r *renderer) cell(x, y, cells int, c *Cell, cursorHere bool, shape CursorShape) {
	th, m := r.th, r.m
	fg, bg, ul := r.colours(c, cursorHere && shape == CursorBlock)
	px, py := x*m.w, y*m.h
	rect := image.Rect(px, py, px+cells*m.w, py+m.h)
	if bg != th.bg {
		r.s.fill(rect, bg)
	}
	visible := c.Attrs&AttrInvisible == 0
	content := c.Content
	if visible && content != "" && content != " " && utf8.ValidString(content) {
		if gl := r.glyphFor(content, faceIndex(c.Attrs), cells); gl != nil {
			if (gl.fallback || gl.missing) && !r.seen[content] {
				r.seen[content] = true
				r.fallback = append(r.fallback, content)
			}
			r.s.mask(px+gl.x0, py+gl.y0, gl, fg, bg)
		}
	} else if visible && content != "" && !utf8.ValidString(content) {
		// Invalid UTF-8 is drawn as the replacement character.
		if gl := r.glyphFor("\ufffd", faceIndex(c.Attrs), cells); gl != nil {
			r.s.mask(px+gl.x0, py+gl.y0, gl, fg, bg)
		}
	}
	if visible {
		r.decorate(rect, c, fg, ul)
	}
	if cursorHere {
		t := 2 * m.scale
		switch shape {
		case CursorUnderline:
			r.s.fill(image.Rect(rect.Min.X, rect.Max.Y-t, rect.Max.X, rect.Max.Y), th.fg)
		case CursorBar:
			r.s.fill(image.Rect(rect.Min.X, rect.Min.Y, rect.Min.X+t, rect.Max.Y), th.fg)
		}
	}
}

// decorate draws the underline and the strikethrough of a cell.
func (r *renderer) decorate(rect image.Rectangle, c *Cell, fg, ul rgb) {
	m := r.m
	t := m.thin
	x0, x1 := rect.Min.X, rect.Max.X
	top := rect.Min.Y
	under := top + m.ascent + m.scale // first row below the baseline, plus one
	switch c.Underline {
	case UnderlineNone:
	case UnderlineDouble:
		r.s.fill(image.Rect(x0, top+m.ascent, x1, top+m.ascent+t), ul)
		r.s.fill(image.Rect(x0, top+m.ascent+2*t, x1, top+m.ascent+3*t), ul)
	case UnderlineCurly:
		// A wave of one cell's period over the descent.
		amp := m.scale
		for x := x0; x < x1; x++ {
			ph := float64((x-x0)%m.w) / float64(m.w)
			dy := int(float64(amp)*triangle(ph) + 0.5)
			r.s.fill(image.Rect(x, under-amp+dy, x+1, under-amp+dy+t), ul)
		}
	case UnderlineDotted:
		for x := x0; x < x1; x += 2 * t {
			r.s.fill(image.Rect(x, under, x+t, under+t), ul)
		}
	case UnderlineDashed:
		seg := m.w / 2
		for x := x0; x < x1; x += m.w {
			r.s.fill(image.Rect(x, under, min(x+seg+seg/2, x1), under+t), ul)
		}
	default: // single (and any unknown style)
		r.s.fill(image.Rect(x0, under, x1, under+t), ul)
	}
	if c.Attrs&AttrStrikethrough != 0 {
		sy := top + m.ascent - m.xh/2 - t/2
		r.s.fill(image.Rect(x0, sy, x1, sy+t), fg)
	}
}

// triangle is a triangle wave over [0, 1): 0 → 1 → 2 → 1 → 0, scaled to
// [0, 2].
func triangle(ph float64) float64 {
	if ph < 0.5 {
		return 4 * ph
	}
	return 4 * (1 - ph)
}
