// Package render draws a terminal's cell grid as a PNG that a person can
// read (CONTRACT §12), in-process and with nothing from the machine: the
// Go Mono fonts of golang.org/x/image are embedded (regular, bold, italic,
// bold italic), rasterised once per (character, face, scale) and cached.
//
// Geometry: a cell is CellWidth×CellHeight (8×17) pixels at scale 1 —
// Go Mono at 14 px, baseline 14 px below the top of the cell — and every
// dimension is multiplied by the scale (1..4), so an image is exactly
// Columns·8·scale × Rows·17·scale pixels.
//
// Box drawing and block elements (U+2500–U+259F), braille (U+2800–U+28FF),
// the Powerline separators (U+E0B0–U+E0B3) and a few symbols TUIs use
// that Go Mono lacks (✓ ✔ ✗ ✘ ❯ ▶ ◀ △ ▽ ◆ ◇ ⏺ ⎿) are drawn procedurally, so
// lines and blocks join cell to cell with no gaps. A wide character is
// drawn over its two cells. A character the font has no glyph for (CJK,
// emoji, most symbols outside Latin, Greek and Cyrillic) is drawn as a box
// and listed once in Facts.FallbackCharacters.
//
// Colours: the default colours and the 16 ANSI colours come from the
// theme ("dark" or "light"); the rest of the 256-colour palette is
// xterm's (6×6×6 cube and grey ramp); 24-bit colour is drawn as given.
// Bold uses the bold face and brightens the 8 basic ANSI colours; faint
// blends the foreground halfway to the background; italic uses the italic
// face; inverse swaps the colours; invisible draws only the background;
// underline (single, double, curly, dotted, dashed, in the underline
// colour if one is set) and strikethrough are drawn as lines. A visible
// cursor is drawn by its shape: a block inverts its cell, an underline or
// a bar is drawn in the default foreground.
//
// The package imports only the standard library and golang.org/x/image.
package render
