package render

import (
	"fmt"
	"image/color"
)

// Palette resolves cell colours exactly as screenshots draw them, for
// other views of the same cells (the web monitor): the theme's default
// and ANSI colours, the 256-colour palette, 24-bit colours, bold
// brightening, inverse and faint.
type Palette struct{ th *theme }

// NewPalette returns the palette of theme "dark" (also for "") or "light".
func NewPalette(name string) (Palette, error) {
	switch name {
	case "", "dark":
		return Palette{&themeDark}, nil
	case "light":
		return Palette{&themeLight}, nil
	}
	return Palette{}, fmt.Errorf("%w: theme %q is not dark or light", ErrInvalid, name)
}

// Defaults are the theme's default foreground and background.
func (p Palette) Defaults() (fg, bg color.RGBA) {
	return p.th.fg.rgba(), p.th.bg.rgba()
}

// Colours are a cell's foreground, background and underline colour as a
// screenshot draws the cell (without a cursor on it).
func (p Palette) Colours(c Cell) (fg, bg, ul color.RGBA) {
	r := renderer{th: p.th}
	f, b, u := r.colours(&c, false)
	return f.rgba(), b.rgba(), u.rgba()
}

func (c rgb) rgba() color.RGBA { return color.RGBA{c.r, c.g, c.b, 0xff} }
