package orchestrator

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"unicode/utf8"

	"github.com/termsprawl/termsprawl/tools"
)

// glyphs is termsprawl's own 3×5 pixel font for printable ASCII from ' '
// to '~' ('#' is a lit pixel, rows top to bottom). Lower-case letters use
// the upper-case shapes. It is small on purpose: a screenshot is for
// seeing a screen's layout at a glance; its text is in the snapshot's
// lines.
var glyphs = [95][5]string{
	{"...", "...", "...", "...", "..."},                // ' '
	{".#.", ".#.", ".#.", "...", ".#."},                // !
	{"#.#", "#.#", "...", "...", "..."},                // "
	{"#.#", "###", "#.#", "###", "#.#"},                // #
	{".##", "##.", ".#.", ".##", "##."},                // $
	{"#..", "..#", ".#.", "#..", "..#"},                // %
	{".#.", "#.#", ".#.", "#.#", ".##"},                // &
	{".#.", ".#.", "...", "...", "..."},                // '
	{"..#", ".#.", ".#.", ".#.", "..#"},                // (
	{"#..", ".#.", ".#.", ".#.", "#.."},                // )
	{"...", "#.#", ".#.", "#.#", "..."},                // *
	{"...", ".#.", "###", ".#.", "..."},                // +
	{"...", "...", "...", ".#.", "#.."},                // ,
	{"...", "...", "###", "...", "..."},                // -
	{"...", "...", "...", "...", ".#."},                // .
	{"..#", "..#", ".#.", "#..", "#.."},                // /
	{"###", "#.#", "#.#", "#.#", "###"},                // 0
	{".#.", "##.", ".#.", ".#.", "###"},                // 1
	{"###", "..#", "###", "#..", "###"},                // 2
	{"###", "..#", ".##", "..#", "###"},                // 3
	{"#.#", "#.#", "###", "..#", "..#"},                // 4
	{"###", "#..", "###", "..#", "###"},                // 5
	{"###", "#..", "###", "#.#", "###"},                // 6
	{"###", "..#", "..#", ".#.", ".#."},                // 7
	{"###", "#.#", "###", "#.#", "###"},                // 8
	{"###", "#.#", "###", "..#", "###"},                // 9
	{"...", ".#.", "...", ".#.", "..."},                // :
	{"...", ".#.", "...", ".#.", "#.."},                // ;
	{"..#", ".#.", "#..", ".#.", "..#"},                // <
	{"...", "###", "...", "###", "..."},                // =
	{"#..", ".#.", "..#", ".#.", "#.."},                // >
	{"###", "..#", ".##", "...", ".#."},                // ?
	{"###", "#.#", "#.#", "#..", "###"},                // @
	{".#.", "#.#", "###", "#.#", "#.#"},                // A
	{"##.", "#.#", "##.", "#.#", "##."},                // B
	{".##", "#..", "#..", "#..", ".##"},                // C
	{"##.", "#.#", "#.#", "#.#", "##."},                // D
	{"###", "#..", "##.", "#..", "###"},                // E
	{"###", "#..", "##.", "#..", "#.."},                // F
	{".##", "#..", "#.#", "#.#", ".##"},                // G
	{"#.#", "#.#", "###", "#.#", "#.#"},                // H
	{"###", ".#.", ".#.", ".#.", "###"},                // I
	{"..#", "..#", "..#", "#.#", ".#."},                // J
	{"#.#", "#.#", "##.", "#.#", "#.#"},                // K
	{"#..", "#..", "#..", "#..", "###"},                // L
	{"#.#", "###", "###", "#.#", "#.#"},                // M
	{"##.", "#.#", "#.#", "#.#", "#.#"},                // N
	{".#.", "#.#", "#.#", "#.#", ".#."},                // O
	{"##.", "#.#", "##.", "#..", "#.."},                // P
	{".#.", "#.#", "#.#", "###", ".##"},                // Q
	{"##.", "#.#", "##.", "#.#", "#.#"},                // R
	{".##", "#..", ".#.", "..#", "##."},                // S
	{"###", ".#.", ".#.", ".#.", ".#."},                // T
	{"#.#", "#.#", "#.#", "#.#", "###"},                // U
	{"#.#", "#.#", "#.#", "#.#", ".#."},                // V
	{"#.#", "#.#", "###", "###", "#.#"},                // W
	{"#.#", "#.#", ".#.", "#.#", "#.#"},                // X
	{"#.#", "#.#", ".#.", ".#.", ".#."},                // Y
	{"###", "..#", ".#.", "#..", "###"},                // Z
	{"##.", "#..", "#..", "#..", "##."},                // [
	{"#..", "#..", ".#.", "..#", "..#"},                // backslash
	{".##", "..#", "..#", "..#", ".##"},                // ]
	{".#.", "#.#", "...", "...", "..."},                // ^
	{"...", "...", "...", "...", "###"},                // _
	{"#..", ".#.", "...", "...", "..."},                // `
	{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, // a-m: upper case
	{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, // n-z: upper case
	{"..#", ".#.", "##.", ".#.", "..#"}, // {
	{".#.", ".#.", ".#.", ".#.", ".#."}, // |
	{"#..", ".#.", ".##", ".#.", "#.."}, // }
	{"...", ".##", "##.", "...", "..."}, // ~
}

// Screenshot geometry: each glyph pixel is shotScale×shotScale; a cell is
// cellW×cellH pixels.
const (
	shotScale = 2
	cellW     = 4 * shotScale
	cellH     = 7 * shotScale
	// MaxShotCells bounds a screenshot (columns × rows).
	MaxShotCells = 400 * 200
)

var shotPalette = color.Palette{
	color.RGBA{0x1e, 0x1e, 0x1e, 0xff}, // background
	color.RGBA{0xd4, 0xd4, 0xd4, 0xff}, // text
	color.RGBA{0x80, 0x80, 0x80, 0xff}, // non-ASCII placeholder
}

// RenderPNG draws a snapshot's lines (and its cursor, as an inverted
// cell) in the built-in font and returns the PNG.
func RenderPNG(s tools.Screen) ([]byte, error) {
	if s.Columns*s.Rows > MaxShotCells {
		return nil, fmt.Errorf("a %dx%d screen is too large for a screenshot (at most %d cells): use the snapshot's lines", s.Columns, s.Rows, MaxShotCells)
	}
	img := image.NewPaletted(image.Rect(0, 0, s.Columns*cellW, s.Rows*cellH), shotPalette)
	for y, line := range s.Lines {
		if y >= s.Rows {
			break
		}
		x := 0
		for _, r := range line {
			if x >= s.Columns {
				break
			}
			w := 1
			if r >= 0x1100 && isWide(r) {
				w = 2
			}
			drawRune(img, x, y, r, w)
			x += w
		}
	}
	if s.Cursor.Visible && s.Cursor.Y < s.Rows {
		invertCell(img, min(s.Cursor.X, s.Columns-1), s.Cursor.Y)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode screenshot: %w", err)
	}
	return buf.Bytes(), nil
}

// isWide approximates East Asian wide characters (CJK, Hangul, full-width
// forms, emoji), which the snapshot's lines give one string position and
// the screen two cells.
func isWide(r rune) bool {
	switch {
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf, r >= 0xac00 && r <= 0xd7a3,
		r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f, r >= 0xff00 && r <= 0xff60,
		r >= 0xffe0 && r <= 0xffe6, r >= 0x1f300 && r <= 0x1faff, r >= 0x20000 && r <= 0x3fffd:
		return true
	}
	return false
}

func drawRune(img *image.Paletted, cx, cy int, r rune, w int) {
	if r == ' ' {
		return
	}
	ox, oy := cx*cellW, cy*cellH
	if r > '~' || r < ' ' || r == utf8.RuneError {
		// Not in the font: a grey box over the cell(s) it takes.
		for py := oy + 3; py < oy+cellH-3; py++ {
			for px := ox + 1; px < ox+w*cellW-1; px++ {
				img.SetColorIndex(px, py, 2)
			}
		}
		return
	}
	if r >= 'a' && r <= 'z' {
		r -= 'a' - 'A'
	}
	g := glyphs[r-' ']
	for gy, row := range g {
		for gx := 0; gx < len(row); gx++ {
			if row[gx] != '#' {
				continue
			}
			for dy := 0; dy < shotScale; dy++ {
				for dx := 0; dx < shotScale; dx++ {
					img.SetColorIndex(ox+shotScale/2+gx*shotScale+dx, oy+shotScale+gy*shotScale+dy, 1)
				}
			}
		}
	}
}

func invertCell(img *image.Paletted, cx, cy int) {
	for py := cy * cellH; py < (cy+1)*cellH; py++ {
		for px := cx * cellW; px < (cx+1)*cellW; px++ {
			if img.ColorIndexAt(px, py) == 0 {
				img.SetColorIndex(px, py, 1)
			} else {
				img.SetColorIndex(px, py, 0)
			}
		}
	}
}

// glyphsComplete reports whether every non-letter glyph has 5 rows of 3
// (a check for the table above).
func glyphsComplete() error {
	for i, g := range glyphs {
		r := rune(' ' + i)
		if r >= 'a' && r <= 'z' {
			continue
		}
		for _, row := range g {
			if len(row) != 3 || strings.Trim(row, "#.") != "" {
				return fmt.Errorf("glyph %q has a bad row %q", r, row)
			}
		}
		if len(g[0]) == 0 {
			return fmt.Errorf("glyph %q is missing", r)
		}
	}
	return nil
}
