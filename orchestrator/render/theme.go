package render

// rgb is an opaque colour.
type rgb struct{ r, g, b uint8 }

// theme is a palette: default colours and the 16 ANSI colours. The rest of
// the 256-colour palette is the same for every theme (xterm's cube and
// grey ramp).
type theme struct {
	name       string
	fg, bg     rgb
	ansi       [16]rgb
	boldBright bool // bold draws the 8 basic ANSI colours bright
}

// The dark theme is VS Code's dark terminal palette (readable blue on a
// dark background), with bold brightening the 8 basic colours. The light
// theme is a palette of its own, readable both as text on the light
// background and as a background behind black or white text (the usual
// light palettes fail one or the other); bold keeps the colour there, as
// bright colours are the lighter ones.
var (
	themeDark = theme{
		name:       "dark",
		fg:         rgb{0xd4, 0xd4, 0xd4},
		bg:         rgb{0x1e, 0x1e, 0x1e},
		boldBright: true,
		ansi: [16]rgb{
			{0x00, 0x00, 0x00}, {0xcd, 0x31, 0x31}, {0x0d, 0xbc, 0x79}, {0xe5, 0xe5, 0x10},
			{0x24, 0x72, 0xc8}, {0xbc, 0x3f, 0xbc}, {0x11, 0xa8, 0xcd}, {0xe5, 0xe5, 0xe5},
			{0x66, 0x66, 0x66}, {0xf1, 0x4c, 0x4c}, {0x23, 0xd1, 0x8b}, {0xf5, 0xf5, 0x43},
			{0x3b, 0x8e, 0xea}, {0xd6, 0x70, 0xd6}, {0x29, 0xb8, 0xdb}, {0xff, 0xff, 0xff},
		},
	}
	themeLight = theme{
		name: "light",
		fg:   rgb{0x38, 0x3a, 0x42},
		bg:   rgb{0xfa, 0xfa, 0xfa},
		ansi: [16]rgb{
			{0x38, 0x3a, 0x42}, {0xd1, 0x3b, 0x2e}, {0x43, 0xa0, 0x47}, {0xb5, 0x89, 0x00},
			{0x2a, 0x6f, 0xd0}, {0xa2, 0x3b, 0xa5}, {0x12, 0x8a, 0x9c}, {0xa0, 0xa1, 0xa7},
			{0x6b, 0x6e, 0x76}, {0xe0, 0x55, 0x4a}, {0x50, 0xa1, 0x4f}, {0xc9, 0x9a, 0x06},
			{0x4a, 0x8e, 0xe8}, {0xb8, 0x54, 0xc0}, {0x1b, 0xa3, 0xb5}, {0xd7, 0xd7, 0xda},
		},
	}
)

// cubeLevels are the six levels of xterm's 6×6×6 colour cube.
var cubeLevels = [6]uint8{0, 95, 135, 175, 215, 255}

// palette256 returns entry i of the 256-colour palette (16..255; 0..15 are
// the theme's ANSI colours).
func (t *theme) palette256(i uint8) rgb {
	switch {
	case i < 16:
		return t.ansi[i]
	case i < 232:
		i -= 16
		return rgb{cubeLevels[i/36], cubeLevels[i/6%6], cubeLevels[i%6]}
	default:
		v := 8 + 10*(i-232)
		return rgb{v, v, v}
	}
}

// resolve maps c to an opaque colour; def is used for the default colour.
// bold brightens the 8 basic ANSI colours (as xterm's boldColors) in a
// theme that does so; it only applies to the foreground.
func (t *theme) resolve(c Color, def rgb, bold bool) rgb {
	switch c.Kind {
	case ColorANSI:
		i := c.Index & 15
		if bold && t.boldBright && i < 8 {
			i += 8
		}
		return t.ansi[i]
	case ColorIndexed:
		return t.palette256(c.Index)
	case ColorRGB:
		return rgb{c.R, c.G, c.B}
	default:
		return def
	}
}

// blend returns a*(1-f) + b*f for f in [0, 256].
func blend(a, b rgb, f int) rgb {
	return rgb{
		uint8((int(a.r)*(256-f) + int(b.r)*f) >> 8),
		uint8((int(a.g)*(256-f) + int(b.g)*f) >> 8),
		uint8((int(a.b)*(256-f) + int(b.b)*f) >> 8),
	}
}
