package render

import (
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/gofont/gomonobolditalic"
	"golang.org/x/image/font/gofont/gomonoitalic"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// Cell metrics at scale 1. The font is Go Mono at 14 px (72 DPI): its
// advance is 8.4 px, its hinted line height 17 px (ascent 14, descent 3).
// A cell is 8 × 17 px and every metric is multiplied by the scale, so an
// image is exactly Columns·8·scale × Rows·17·scale pixels.
const (
	CellWidth  = 8  // px per column at scale 1
	CellHeight = 17 // px per row at scale 1

	baseFontSize = 14 // px at scale 1
	baseAscent   = 14 // baseline, px below the top of the cell
	baseXHeight  = 8  // px
	baseCapTop   = 4  // top of capitals, px below the top of the cell
)

// metrics are the cell geometry at one scale.
type metrics struct {
	scale  int
	w, h   int // cell size
	ascent int // baseline from the top of the cell
	xh     int // x-height
	capTop int
	thin   int // light line thickness (box drawing, underline)
}

func metricsFor(scale int) metrics {
	return metrics{
		scale:  scale,
		w:      CellWidth * scale,
		h:      CellHeight * scale,
		ascent: baseAscent * scale,
		xh:     baseXHeight * scale,
		capTop: baseCapTop * scale,
		thin:   scale,
	}
}

// The faces.
const (
	faceRegular = iota
	faceBold
	faceItalic
	faceBoldItalic
	numFaces
)

func faceIndex(a Attr) uint8 {
	i := uint8(faceRegular)
	if a&AttrBold != 0 {
		i |= faceBold
	}
	if a&AttrItalic != 0 {
		i |= faceItalic
	}
	return i
}

// fonts are the four Go Mono fonts, parsed once.
var (
	fontsOnce sync.Once
	fonts     [numFaces]*opentype.Font
	fontsErr  error
)

func loadFonts() error {
	fontsOnce.Do(func() {
		for i, ttf := range [numFaces][]byte{gomono.TTF, gomonobold.TTF, gomonoitalic.TTF, gomonobolditalic.TTF} {
			f, err := opentype.Parse(ttf)
			if err != nil {
				fontsErr = fmt.Errorf("render: parse the embedded Go Mono font %d: %w", i, err)
				return
			}
			fonts[i] = f
		}
	})
	return fontsErr
}

// glyph is a rasterised cell: a coverage mask relative to the cell's top
// left corner, trimmed to its ink (x0, y0, w, h). A fallback glyph is the
// box drawn for a character the font lacks.
type glyph struct {
	x0, y0, w, h int
	a            []uint8
	fallback     bool // the character has no glyph (drawn as a box)
	missing      bool // some of the cluster has no glyph (listed as a fallback)
}

// glyphKey identifies a rasterised cell. s is set only for clusters of
// more than one rune.
type glyphKey struct {
	r     rune
	s     string
	face  uint8
	cells uint8
	scale uint8
}

// maxCachedGlyphs bounds the glyph cache; it is emptied when full (random
// input must not grow it without end).
const maxCachedGlyphs = 1 << 14

// glyphCache holds the rasterised glyphs of every scale. mu guards the
// map; rasterMu serialises rasterising (opentype faces are not safe for
// concurrent use) and the faces.
var glyphCache = struct {
	mu       sync.RWMutex
	m        map[glyphKey]*glyph
	rasterMu sync.Mutex
	faces    map[[2]int]font.Face // (face, scale) → face
}{m: map[glyphKey]*glyph{}, faces: map[[2]int]font.Face{}}

// lookupGlyph returns the glyph of content in the given face over cells
// columns (1 or 2) at m's scale; nil for a blank cell.
func lookupGlyph(content string, face uint8, cells int, m *metrics) *glyph {
	if content == "" || content == " " {
		return nil
	}
	k := glyphKey{face: face, cells: uint8(cells), scale: uint8(m.scale)}
	r, n := utf8.DecodeRuneInString(content)
	if n == len(content) {
		k.r = r
	} else {
		k.r = -1
		k.s = content
	}
	if isProcedural(r) && n == len(content) {
		k.face = 0 // box drawing looks the same in every face
	}
	glyphCache.mu.RLock()
	g, ok := glyphCache.m[k]
	glyphCache.mu.RUnlock()
	if ok {
		return g
	}
	glyphCache.rasterMu.Lock()
	defer glyphCache.rasterMu.Unlock()
	glyphCache.mu.RLock()
	g, ok = glyphCache.m[k]
	glyphCache.mu.RUnlock()
	if ok {
		return g
	}
	g = rasterise(content, k.face, cells, m)
	glyphCache.mu.Lock()
	if len(glyphCache.m) >= maxCachedGlyphs {
		clear(glyphCache.m)
	}
	glyphCache.m[k] = g
	glyphCache.mu.Unlock()
	return g
}

// faceFor returns the face of index fi at m's scale. Called with rasterMu
// held.
func faceFor(fi uint8, m *metrics) (font.Face, error) {
	key := [2]int{int(fi), m.scale}
	if f, ok := glyphCache.faces[key]; ok {
		return f, nil
	}
	if err := loadFonts(); err != nil {
		return nil, err
	}
	f, err := opentype.NewFace(fonts[fi], &opentype.FaceOptions{
		Size:    float64(baseFontSize * m.scale),
		DPI:     72,
		Hinting: font.HintingNone,
	})
	if err != nil {
		return nil, err
	}
	glyphCache.faces[key] = f
	return f, nil
}

// ignorable reports runes drawn as nothing: joiners and variation
// selectors.
func ignorable(r rune) bool {
	return r == 0x200d || r == 0x200c || r >= 0xfe00 && r <= 0xfe0f || r >= 0xe0100 && r <= 0xe01ef
}

// hasGlyph reports whether the face's font has a glyph for r. Called with
// rasterMu held.
func hasGlyph(fi uint8, r rune) bool {
	if loadFonts() != nil {
		return false
	}
	i, err := fonts[fi].GlyphIndex(&glyphBuf, r)
	return err == nil && i != 0
}

var glyphBuf sfnt.Buffer // guarded by rasterMu

// rasterise draws content into a mask of cells columns. Called with
// rasterMu held.
func rasterise(content string, fi uint8, cells int, m *metrics) *glyph {
	c := newCanvas(cells*m.w, m.h)
	r, n := utf8.DecodeRuneInString(content)
	if n == len(content) && isProcedural(r) {
		if drawProcedural(c, r, m) {
			return c.glyph()
		}
	}
	if r == utf8.RuneError && n <= 1 || unicode.IsControl(r) || !hasGlyph(fi, r) {
		drawFallbackBox(c, m)
		g := c.glyph()
		g.fallback = true
		return g
	}
	face, err := faceFor(fi, m)
	if err != nil {
		drawFallbackBox(c, m)
		g := c.glyph()
		g.fallback = true
		return g
	}
	adv, _ := face.GlyphAdvance(r)
	// Centre the advance in the cell(s), on a whole pixel so stems stay
	// sharp.
	offX := (fixed.I(cells*m.w) - adv) / 2
	dot := fixed.Point26_6{X: fixed.I(offX.Round()), Y: fixed.I(m.ascent)}
	missing := false
	drawRune(c, face, dot, r)
	for _, mr := range content[n:] {
		switch {
		case ignorable(mr):
		case !hasGlyph(fi, mr):
			missing = true
		default:
			// A mark is drawn over the base character.
			drawRune(c, face, dot, mr)
		}
	}
	g := c.glyph()
	g.missing = missing
	return g
}

// drawRune draws r's glyph at dot, clipped to the canvas.
func drawRune(c *canvas, face font.Face, dot fixed.Point26_6, r rune) {
	dr, mask, mp, _, ok := face.Glyph(dot, r)
	if !ok || mask == nil {
		return
	}
	for y := max(dr.Min.Y, 0); y < min(dr.Max.Y, c.h); y++ {
		for x := max(dr.Min.X, 0); x < min(dr.Max.X, c.w); x++ {
			_, _, _, a := mask.At(mp.X+x-dr.Min.X, mp.Y+y-dr.Min.Y).RGBA()
			c.max(x, y, uint8(a>>8))
		}
	}
}

// drawFallbackBox draws the box shown for a character the font lacks: an
// outline from the capital height to the baseline over the cell(s).
func drawFallbackBox(c *canvas, m *metrics) {
	t := m.thin
	x0, x1 := m.scale, c.w-m.scale
	y0, y1 := m.capTop-m.scale, m.ascent
	c.rect(x0, y0, x1, y0+t, 255)
	c.rect(x0, y1-t, x1, y1, 255)
	c.rect(x0, y0, x0+t, y1, 255)
	c.rect(x1-t, y0, x1, y1, 255)
}
