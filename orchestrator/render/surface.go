package render

import (
	"image"
	"sync"
)

// surface is the image being drawn: either 24-bit (bpp 3, RGB) or
// paletted (bpp 1, at most 256 colours). A terminal screen usually has few
// colours — background, foreground and the antialiasing levels between the
// pairs in use — and a paletted PNG is a third of the data to compress.
// When a paletted surface runs out of colours it sets overflow and stops
// drawing; the caller draws again on an RGB surface.
type surface struct {
	w, h int
	bpp  int
	pix  []byte // row by row, w*bpp bytes a row

	// Paletted only.
	levels   int // coverage is quantised to levels steps
	pal      []rgb
	index    map[rgb]uint8
	luts     map[[2]rgb]*[256]int16 // (fg, bg) → palette index by coverage, -1 unknown
	overflow bool
}

// newSurface returns a surface of w × h filled with bg: paletted with
// levels coverage levels (2..255) for glyphs, or 24-bit if levels is 0.
func newSurface(w, h int, levels int, bg rgb) *surface {
	s := &surface{w: w, h: h, bpp: 3}
	if levels > 0 {
		s.bpp = 1
		s.levels = max(levels, 2)
		s.pix = getPix(w * h) // zeroed: index 0 is bg
		s.pal = append(make([]rgb, 0, 256), bg)
		s.index = map[rgb]uint8{bg: 0}
		s.luts = map[[2]rgb]*[256]int16{}
		return s
	}
	s.pix = getPix(w * h * 3)
	s.fill(image.Rect(0, 0, w, h), bg)
	return s
}

// pixPool keeps the pixel buffers of finished surfaces up to
// maxPooledPix bytes: a larger one (a big screen at scale 3 or 4, up to
// 100 MB) would stay in the process between two collections, and a
// paletted buffer handed to an RGB surface is too small anyway.
var pixPool sync.Pool

const maxPooledPix = 4 << 20

// getPix returns a zeroed buffer of n bytes.
func getPix(n int) []byte {
	if b, ok := pixPool.Get().(*[]byte); ok && cap(*b) >= n {
		p := (*b)[:n]
		clear(p)
		return p
	}
	return make([]byte, n)
}

// release returns the surface's pixels to the pool; the surface is
// unusable afterwards.
func (s *surface) release() {
	p := s.pix
	s.pix = nil
	if cap(p) <= maxPooledPix {
		pixPool.Put(&p)
	}
}

// colour returns the palette index of c, adding it; it sets overflow when
// the palette is full.
func (s *surface) colour(c rgb) uint8 {
	if i, ok := s.index[c]; ok {
		return i
	}
	if len(s.pal) == 256 {
		s.overflow = true
		return 0
	}
	i := uint8(len(s.pal))
	s.pal = append(s.pal, c)
	s.index[c] = i
	return i
}

// fill paints rect (clipped) with c.
func (s *surface) fill(rect image.Rectangle, c rgb) {
	rect = rect.Intersect(image.Rect(0, 0, s.w, s.h))
	if rect.Empty() || s.overflow {
		return
	}
	if s.bpp == 1 {
		v := s.colour(c)
		for y := rect.Min.Y; y < rect.Max.Y; y++ {
			row := s.pix[y*s.w+rect.Min.X : y*s.w+rect.Max.X]
			for i := range row {
				row[i] = v
			}
		}
		return
	}
	n := rect.Dx() * 3
	first := s.pix[(rect.Min.Y*s.w+rect.Min.X)*3:]
	first = first[:n]
	for i := 0; i < n; i += 3 {
		first[i], first[i+1], first[i+2] = c.r, c.g, c.b
	}
	for y := rect.Min.Y + 1; y < rect.Max.Y; y++ {
		o := (y*s.w + rect.Min.X) * 3
		copy(s.pix[o:o+n], first)
	}
}

// mix is fg over bg at coverage a.
func mix(fg, bg rgb, a uint8) rgb {
	ia := 255 - int(a)
	return rgb{
		uint8((int(fg.r)*int(a) + int(bg.r)*ia + 127) / 255),
		uint8((int(fg.g)*int(a) + int(bg.g)*ia + 127) / 255),
		uint8((int(fg.b)*int(a) + int(bg.b)*ia + 127) / 255),
	}
}

// mask draws a glyph at (ox, oy) in fg over bg (the cell's background,
// which is what lies under the glyph), clipped to the surface.
func (s *surface) mask(ox, oy int, gl *glyph, fg, bg rgb) {
	if s.overflow || gl.w == 0 {
		return
	}
	var lut *[256]int16
	if s.bpp == 1 {
		key := [2]rgb{fg, bg}
		if lut = s.luts[key]; lut == nil {
			lut = new([256]int16)
			for i := range lut {
				lut[i] = -1
			}
			s.luts[key] = lut
		}
	}
	x0, x1 := max(ox, 0), min(ox+gl.w, s.w)
	if x0 >= x1 {
		return
	}
	for j := 0; j < gl.h; j++ {
		y := oy + j
		if y < 0 || y >= s.h {
			continue
		}
		row := gl.a[j*gl.w+(x0-ox) : j*gl.w+(x1-ox)]
		if s.bpp == 1 {
			dst := s.pix[y*s.w+x0 : y*s.w+x1]
			for i, a := range row {
				if a == 0 {
					continue
				}
				v := lut[a]
				if v < 0 {
					q := (int(a)*s.levels + 127) / 255
					v = int16(s.colour(mix(fg, bg, uint8(q*255/s.levels))))
					if s.overflow {
						return
					}
					lut[a] = v
				}
				dst[i] = uint8(v)
			}
			continue
		}
		dst := s.pix[(y*s.w+x0)*3 : (y*s.w+x1)*3]
		for i, a := range row {
			switch a {
			case 0:
			case 255:
				dst[3*i], dst[3*i+1], dst[3*i+2] = fg.r, fg.g, fg.b
			default:
				c := mix(fg, bg, a)
				dst[3*i], dst[3*i+1], dst[3*i+2] = c.r, c.g, c.b
			}
		}
	}
}

// rgba converts the surface to an RGBA image.
func (s *surface) rgba() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, s.w, s.h))
	for i := 0; i < s.w*s.h; i++ {
		var c rgb
		if s.bpp == 1 {
			c = s.pal[s.pix[i]]
		} else {
			c = rgb{s.pix[3*i], s.pix[3*i+1], s.pix[3*i+2]}
		}
		img.Pix[4*i], img.Pix[4*i+1], img.Pix[4*i+2], img.Pix[4*i+3] = c.r, c.g, c.b, 0xff
	}
	return img
}
