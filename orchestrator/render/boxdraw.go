package render

import "math"

// Box drawing (U+2500–U+257F), block elements (U+2580–U+259F), braille
// (U+2800–U+28FF), the Powerline separators (U+E0B0–U+E0B3) and a few
// symbols TUIs use that Go Mono lacks are drawn here rather than taken
// from the font, so that lines and blocks join cell to cell with no gaps
// (as kitty and wezterm do). Every shape is a coverage mask of the cell;
// curves are supersampled.

// canvas is a coverage mask being drawn.
type canvas struct {
	w, h int
	a    []uint8
}

func newCanvas(w, h int) *canvas { return &canvas{w: w, h: h, a: make([]uint8, w*h)} }

// max raises the coverage at (x, y) to v.
func (c *canvas) max(x, y int, v uint8) {
	if x < 0 || y < 0 || x >= c.w || y >= c.h {
		return
	}
	if p := &c.a[y*c.w+x]; v > *p {
		*p = v
	}
}

// rect covers [x0, x1) × [y0, y1) with v (clipped).
func (c *canvas) rect(x0, y0, x1, y1 int, v uint8) {
	x0, y0 = max(x0, 0), max(y0, 0)
	x1, y1 = min(x1, c.w), min(y1, c.h)
	for y := y0; y < y1; y++ {
		row := c.a[y*c.w : y*c.w+c.w]
		for x := x0; x < x1; x++ {
			if v > row[x] {
				row[x] = v
			}
		}
	}
}

// ss is the supersampling factor per axis for curves.
const ss = 4

// shape covers the pixels inside f (in pixel coordinates, y down), with
// antialiasing by ss×ss supersampling.
func (c *canvas) shape(f func(x, y float64) bool) {
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			n := 0
			for j := 0; j < ss; j++ {
				for i := 0; i < ss; i++ {
					if f(float64(x)+(float64(i)+0.5)/ss, float64(y)+(float64(j)+0.5)/ss) {
						n++
					}
				}
			}
			if n > 0 {
				c.max(x, y, uint8(n*255/(ss*ss)))
			}
		}
	}
}

// glyph trims the canvas to its ink.
func (c *canvas) glyph() *glyph {
	x0, y0, x1, y1 := c.w, c.h, 0, 0
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			if c.a[y*c.w+x] != 0 {
				x0, y0 = min(x0, x), min(y0, y)
				x1, y1 = max(x1, x+1), max(y1, y+1)
			}
		}
	}
	if x1 <= x0 {
		return &glyph{}
	}
	g := &glyph{x0: x0, y0: y0, w: x1 - x0, h: y1 - y0, a: make([]uint8, (x1-x0)*(y1-y0))}
	for y := y0; y < y1; y++ {
		copy(g.a[(y-y0)*g.w:(y-y0+1)*g.w], c.a[y*c.w+x0:y*c.w+x1])
	}
	return g
}

// Procedural symbols outside the blocks (Go Mono has none of them).
var proceduralSymbols = map[rune]bool{
	0x23bf: true, // ⎿ (Claude Code's tool-result connector)
	0x23fa: true, // ⏺
	0x25b3: true, // △ (htop's sort order)
	0x25b6: true, // ▶
	0x25bd: true, // ▽
	0x25c0: true, // ◀
	0x25c6: true, // ◆
	0x25c7: true, // ◇
	0x2713: true, // ✓
	0x2714: true, // ✔
	0x2717: true, // ✗
	0x2718: true, // ✘
	0x276f: true, // ❯
}

// isProcedural reports whether r is drawn here rather than from the font.
func isProcedural(r rune) bool {
	return r >= 0x2500 && r <= 0x259f || r >= 0x2800 && r <= 0x28ff || r >= 0xe0b0 && r <= 0xe0b3 || proceduralSymbols[r]
}

// Line weights of the arms of a box-drawing character.
const (
	wNone   = 0
	wLight  = 1
	wHeavy  = 2
	wDouble = 3
)

// boxArms gives the arms (up, right, down, left) of U+2500–U+257F as
// digits of the weights above; "" marks the characters drawn otherwise
// (dashes, arcs, diagonals).
var boxArms = [128]string{
	// 2500
	"0101", "0202", "1010", "2020", "", "", "", "", "", "", "", "", "0110", "0210", "0120", "0220",
	// 2510
	"0011", "0012", "0021", "0022", "1100", "1200", "2100", "2200", "1001", "1002", "2001", "2002", "1110", "1210", "2110", "1120",
	// 2520
	"2120", "2210", "1220", "2220", "1011", "1012", "2011", "1021", "2021", "2012", "1022", "2022", "0111", "0112", "0211", "0212",
	// 2530
	"0121", "0122", "0221", "0222", "1101", "1102", "1201", "1202", "2101", "2102", "2201", "2202", "1111", "1112", "1211", "1212",
	// 2540
	"2111", "1121", "2121", "2112", "2211", "1122", "1221", "2212", "1222", "2122", "2221", "2222", "", "", "", "",
	// 2550
	"0303", "3030", "0310", "0130", "0330", "0013", "0031", "0033", "1300", "3100", "3300", "1003", "3001", "3003", "1310", "3130",
	// 2560
	"3330", "1013", "3031", "3033", "0313", "0131", "0333", "1303", "3101", "3303", "1313", "3131", "3333", "", "", "",
	// 2570
	"", "", "", "", "0001", "1000", "0100", "0010", "0002", "2000", "0200", "0020", "0201", "1020", "0102", "2010",
}

// band is the span [start, end) of a line of thickness t centred on c.
func band(c, t int) (int, int) { return c - t/2, c - t/2 + t }

// drawProcedural draws r; it reports false if r is not one it draws.
func drawProcedural(c *canvas, r rune, m *metrics) bool {
	switch {
	case r >= 0x2500 && r <= 0x257f:
		return drawBox(c, r, m)
	case r >= 0x2580 && r <= 0x259f:
		drawBlock(c, r)
		return true
	case r >= 0x2800 && r <= 0x28ff:
		drawBraille(c, r, m)
		return true
	case r >= 0xe0b0 && r <= 0xe0b3:
		drawPowerline(c, r, m)
		return true
	case proceduralSymbols[r]:
		return drawSymbol(c, r, m)
	}
	return false
}

// thickness returns the thickness of a line of weight w (light and heavy;
// a double line is two light lines with a light gap).
func thickness(w byte, m *metrics) int {
	if w == wHeavy {
		return 2*m.thin + 1
	}
	return m.thin
}

func drawBox(c *canvas, r rune, m *metrics) bool {
	spec := boxArms[r-0x2500]
	if spec == "" {
		return drawBoxSpecial(c, r, m)
	}
	u, rt, d, l := spec[0]-'0', spec[1]-'0', spec[2]-'0', spec[3]-'0'
	w, h := c.w, c.h
	cx, cy := w/2, h/2
	t := m.thin
	// The two lines of a double line: A is the left/top one, B the other.
	dStart := func(ctr int) (a0, a1, b0, b1 int) {
		s := ctr - (3*t)/2
		return s, s + t, s + 2*t, s + 3*t
	}
	vA0, vA1, vB0, vB1 := dStart(cx) // vertical double lines (x spans)
	hA0, hA1, hB0, hB1 := dStart(cy) // horizontal double lines (y spans)

	vDouble := u == wDouble || d == wDouble
	hDouble := l == wDouble || rt == wDouble
	vMax := 0 // thickest single/heavy vertical arm
	for _, a := range []byte{u, d} {
		if a == wLight || a == wHeavy {
			vMax = max(vMax, thickness(a, m))
		}
	}
	hMax := 0
	for _, a := range []byte{l, rt} {
		if a == wLight || a == wHeavy {
			hMax = max(hMax, thickness(a, m))
		}
	}

	// Horizontal arms.
	for _, side := range []struct {
		wt   byte
		left bool
	}{{l, true}, {rt, false}} {
		if side.wt == wNone {
			continue
		}
		if side.wt != wDouble {
			y0, y1 := band(cy, thickness(side.wt, m))
			var x0, x1 int
			switch {
			case vDouble:
				both := u == wDouble && d == wDouble
				if side.left {
					x0, x1 = 0, vB1
					if both && rt == wNone {
						x1 = vA1
					}
				} else {
					x0, x1 = vA0, w
					if both && l == wNone {
						x0 = vB0
					}
				}
			case vMax > 0:
				b0, b1 := band(cx, vMax)
				x0, x1 = b0, w
				if side.left {
					x0, x1 = 0, b1
				}
			default:
				b0, b1 := band(cx, thickness(side.wt, m))
				x0, x1 = b0, w
				if side.left {
					x0, x1 = 0, b1
				}
			}
			c.rect(x0, y0, x1, y1, 255)
			continue
		}
		// Double horizontal arm: the top line (A) and the bottom one (B).
		var topX, botX int // where each line ends (left arm) or starts (right arm)
		switch {
		case vDouble:
			if side.left {
				topX, botX = vB1, vB1
				if u == wDouble {
					topX = vA1
				}
				if d == wDouble {
					botX = vA1
				}
			} else {
				topX, botX = vA0, vA0
				if u == wDouble {
					topX = vB0
				}
				if d == wDouble {
					botX = vB0
				}
			}
		default:
			b0, b1 := band(cx, max(vMax, t))
			if side.left {
				topX, botX = b1, b1
			} else {
				topX, botX = b0, b0
			}
		}
		if side.left {
			c.rect(0, hA0, topX, hA1, 255)
			c.rect(0, hB0, botX, hB1, 255)
		} else {
			c.rect(topX, hA0, w, hA1, 255)
			c.rect(botX, hB0, w, hB1, 255)
		}
	}

	// Vertical arms.
	for _, side := range []struct {
		wt byte
		up bool
	}{{u, true}, {d, false}} {
		if side.wt == wNone {
			continue
		}
		if side.wt != wDouble {
			x0, x1 := band(cx, thickness(side.wt, m))
			var y0, y1 int
			switch {
			case hDouble:
				both := l == wDouble && rt == wDouble
				if side.up {
					y0, y1 = 0, hB1
					if both && d == wNone {
						y1 = hA1
					}
				} else {
					y0, y1 = hA0, h
					if both && u == wNone {
						y0 = hB0
					}
				}
			case hMax > 0:
				b0, b1 := band(cy, hMax)
				y0, y1 = b0, h
				if side.up {
					y0, y1 = 0, b1
				}
			default:
				b0, b1 := band(cy, thickness(side.wt, m))
				y0, y1 = b0, h
				if side.up {
					y0, y1 = 0, b1
				}
			}
			c.rect(x0, y0, x1, y1, 255)
			continue
		}
		var leftY, rightY int
		switch {
		case hDouble:
			if side.up {
				leftY, rightY = hB1, hB1
				if l == wDouble {
					leftY = hA1
				}
				if rt == wDouble {
					rightY = hA1
				}
			} else {
				leftY, rightY = hA0, hA0
				if l == wDouble {
					leftY = hB0
				}
				if rt == wDouble {
					rightY = hB0
				}
			}
		default:
			b0, b1 := band(cy, max(hMax, t))
			if side.up {
				leftY, rightY = b1, b1
			} else {
				leftY, rightY = b0, b0
			}
		}
		if side.up {
			c.rect(vA0, 0, vA1, leftY, 255)
			c.rect(vB0, 0, vB1, rightY, 255)
		} else {
			c.rect(vA0, leftY, vA1, h, 255)
			c.rect(vB0, rightY, vB1, h, 255)
		}
	}
	return true
}

// drawBoxSpecial draws the dashed lines, the arcs and the diagonals.
func drawBoxSpecial(c *canvas, r rune, m *metrics) bool {
	w, h := c.w, c.h
	cx, cy := w/2, h/2
	dash := func(n int, wt byte, vertical bool) {
		t := thickness(wt, m)
		length := w
		if vertical {
			length = h
		}
		gap := max(m.thin, length/(n*4))
		for i := range n {
			s := i*length/n + gap/2
			e := (i+1)*length/n - (gap - gap/2)
			if vertical {
				x0, x1 := band(cx, t)
				c.rect(x0, s, x1, e, 255)
			} else {
				y0, y1 := band(cy, t)
				c.rect(s, y0, e, y1, 255)
			}
		}
	}
	switch r {
	case 0x2504, 0x2505, 0x2506, 0x2507:
		dash(3, byte(1+(r-0x2504)%2), r >= 0x2506)
	case 0x2508, 0x2509, 0x250a, 0x250b:
		dash(4, byte(1+(r-0x2508)%2), r >= 0x250a)
	case 0x254c, 0x254d, 0x254e, 0x254f:
		dash(2, byte(1+(r-0x254c)%2), r >= 0x254e)
	case 0x256d, 0x256e, 0x256f, 0x2570:
		drawArc(c, r, m)
	case 0x2571, 0x2572, 0x2573:
		t := float64(m.thin) * 1.2
		fw, fh := float64(w), float64(h)
		ln := math.Hypot(fw, fh)
		c.shape(func(x, y float64) bool {
			// Distance to the diagonals (0,h)–(w,0) and (0,0)–(w,h).
			d1 := math.Abs(fh*x+fw*y-fw*fh) / ln
			d2 := math.Abs(fh*x-fw*y) / ln
			return r != 0x2572 && d1 <= t/2 || r != 0x2571 && d2 <= t/2
		})
	default:
		return false
	}
	return true
}

// drawArc draws a rounded corner: a quarter circle joining the middle of
// the two edges its arms reach, with straight ends, centred on the same
// lines as ─ and │.
func drawArc(c *canvas, r rune, m *metrics) {
	w, h := c.w, c.h
	t := m.thin
	bx0, _ := band(w/2, t)
	by0, _ := band(h/2, t)
	xc := float64(bx0) + float64(t)/2 // centre line of │
	yc := float64(by0) + float64(t)/2 // centre line of ─
	right := r == 0x256d || r == 0x2570
	down := r == 0x256d || r == 0x256e
	rx := xc
	if right {
		rx = float64(w) - xc
	}
	ry := yc
	if down {
		ry = float64(h) - yc
	}
	rad := min(rx, ry)
	// Centre of curvature.
	ox, oy := xc-rad, yc-rad
	if right {
		ox = xc + rad
	}
	if down {
		oy = yc + rad
	}
	half := float64(t) / 2
	c.shape(func(x, y float64) bool {
		// Straight parts: from the arc's end to the edge.
		if math.Abs(y-yc) <= half && (right && x >= ox || !right && x <= ox) {
			return true
		}
		if math.Abs(x-xc) <= half && (down && y >= oy || !down && y <= oy) {
			return true
		}
		// The quarter circle, in the quadrant towards the corner.
		inX := right && x <= ox || !right && x >= ox
		inY := down && y <= oy || !down && y >= oy
		return inX && inY && math.Abs(math.Hypot(x-ox, y-oy)-rad) <= half
	})
}

// drawBlock draws U+2580–U+259F.
func drawBlock(c *canvas, r rune) {
	w, h := c.w, c.h
	eighthH := func(n int) int { return (h*n + 4) / 8 }
	eighthW := func(n int) int { return (w*n + 4) / 8 }
	hw, hh := w/2, h/2
	quad := func(ul, ur, ll, lr bool) {
		if ul {
			c.rect(0, 0, hw, hh, 255)
		}
		if ur {
			c.rect(hw, 0, w, hh, 255)
		}
		if ll {
			c.rect(0, hh, hw, h, 255)
		}
		if lr {
			c.rect(hw, hh, w, h, 255)
		}
	}
	switch {
	case r == 0x2580: // ▀
		c.rect(0, 0, w, hh, 255)
	case r >= 0x2581 && r <= 0x2588: // ▁..█ lower n eighths
		n := int(r - 0x2580)
		c.rect(0, h-eighthH(n), w, h, 255)
	case r >= 0x2589 && r <= 0x258f: // ▉..▏ left n eighths
		n := int(0x2590 - r)
		c.rect(0, 0, eighthW(n), h, 255)
	case r == 0x2590: // ▐
		c.rect(hw, 0, w, h, 255)
	case r >= 0x2591 && r <= 0x2593: // ░▒▓
		c.rect(0, 0, w, h, uint8(64*(r-0x2590)))
	case r == 0x2594: // ▔
		c.rect(0, 0, w, eighthH(1), 255)
	case r == 0x2595: // ▕
		c.rect(w-eighthW(1), 0, w, h, 255)
	case r == 0x2596:
		quad(false, false, true, false)
	case r == 0x2597:
		quad(false, false, false, true)
	case r == 0x2598:
		quad(true, false, false, false)
	case r == 0x2599:
		quad(true, false, true, true)
	case r == 0x259a:
		quad(true, false, false, true)
	case r == 0x259b:
		quad(true, true, true, false)
	case r == 0x259c:
		quad(true, true, false, true)
	case r == 0x259d:
		quad(false, true, false, false)
	case r == 0x259e:
		quad(false, true, true, false)
	case r == 0x259f:
		quad(false, true, true, true)
	}
}

// brailleDots maps the bits of a braille pattern to (column, row).
var brailleDots = [8][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {0, 3}, {1, 3}}

// drawBraille draws U+2800–U+28FF as round dots on a 2×4 grid.
func drawBraille(c *canvas, r rune, m *metrics) {
	bits := int(r - 0x2800)
	fw, fh := float64(c.w), float64(c.h)
	rad := math.Max(0.8, math.Min(fw/4, fh/8)*0.7)
	var cs [][2]float64
	for i, d := range brailleDots {
		if bits&(1<<i) != 0 {
			cs = append(cs, [2]float64{fw * float64(2*d[0]+1) / 4, fh * float64(2*d[1]+1) / 8})
		}
	}
	if len(cs) == 0 {
		return
	}
	c.shape(func(x, y float64) bool {
		for _, p := range cs {
			if math.Hypot(x-p[0], y-p[1]) <= rad {
				return true
			}
		}
		return false
	})
}

// drawPowerline draws the Powerline separators: solid and thin
// triangles over the full cell height.
func drawPowerline(c *canvas, r rune, m *metrics) {
	fw, fh := float64(c.w), float64(c.h)
	t := float64(m.thin)
	c.shape(func(x, y float64) bool {
		if r == 0xe0b2 || r == 0xe0b3 {
			x = fw - x
		}
		// The right-pointing triangle (0,0)–(w,h/2)–(0,h).
		edge := fw * (1 - math.Abs(y-fh/2)/(fh/2)) // x of the slanted edge at y
		if r == 0xe0b0 || r == 0xe0b2 {
			return x <= edge
		}
		// Thin chevron: within t of the slanted edges, measured across.
		k := fh / 2 / fw
		return math.Abs(x-edge)*k/math.Sqrt(1+k*k) <= t*0.6
	})
}

// drawSymbol draws the few symbols of proceduralSymbols, in the text area
// (capital top to baseline).
func drawSymbol(c *canvas, r rune, m *metrics) bool {
	fw := float64(c.w)
	top, base := float64(m.capTop), float64(m.ascent)
	midY := (top + base) / 2
	t := float64(m.thin)
	seg := func(x, y, ax, ay, bx, by, width float64) bool {
		// Distance from (x, y) to the segment a–b.
		dx, dy := bx-ax, by-ay
		l2 := dx*dx + dy*dy
		u := 0.0
		if l2 > 0 {
			u = math.Max(0, math.Min(1, ((x-ax)*dx+(y-ay)*dy)/l2))
		}
		return math.Hypot(x-(ax+u*dx), y-(ay+u*dy)) <= width/2
	}
	switch r {
	case 0x23bf: // ⎿: a light line down the middle turning right at the baseline
		bx0, bx1 := band(c.w/2, m.thin)
		y1 := m.ascent - m.xh/2
		c.rect(bx0, 0, bx1, y1+m.thin, 255)
		c.rect(bx0, y1, c.w, y1+m.thin, 255)
	case 0x23fa: // ⏺
		rad := math.Min(fw*0.42, (base-top)*0.42)
		c.shape(func(x, y float64) bool { return math.Hypot(x-fw/2, y-midY) <= rad })
	case 0x25b6, 0x25c0: // ▶ ◀
		x0, x1 := fw*0.15, fw*0.85
		c.shape(func(x, y float64) bool {
			if r == 0x25c0 {
				x = fw - x
			}
			if x < x0 || x > x1 {
				return false
			}
			half := (base - top) / 2 * (x1 - x) / (x1 - x0)
			return math.Abs(y-midY) <= half
		})
	case 0x25b3, 0x25bd: // △ ▽: outlines
		hw := fw * 0.4
		h := base - top
		c.shape(func(x, y float64) bool {
			if r == 0x25bd {
				y = top + base - y
			}
			// Apex at (w/2, top), base from (w/2-hw, base) to (w/2+hw, base).
			if y < top || y > base {
				return false
			}
			half := hw * (y - top) / h
			dx := math.Abs(x - fw/2)
			if dx > half {
				return false
			}
			edge := (half - dx) * h / math.Hypot(h, hw) // distance to the slanted side
			return edge <= t*1.1 || base-y <= t
		})
	case 0x25c6, 0x25c7: // ◆ ◇
		rx, ry := fw*0.42, (base-top)*0.5
		c.shape(func(x, y float64) bool {
			d := math.Abs(x-fw/2)/rx + math.Abs(y-midY)/ry
			if r == 0x25c6 {
				return d <= 1
			}
			return d <= 1 && d >= 1-1.6*t/rx
		})
	case 0x2713, 0x2714: // ✓ ✔
		wd := t * 1.3
		if r == 0x2714 {
			wd = t * 2.4
		}
		c.shape(func(x, y float64) bool {
			return seg(x, y, fw*0.12, midY, fw*0.4, base-t, wd) || seg(x, y, fw*0.4, base-t, fw*0.9, top, wd)
		})
	case 0x2717, 0x2718: // ✗ ✘
		wd := t * 1.3
		if r == 0x2718 {
			wd = t * 2.4
		}
		c.shape(func(x, y float64) bool {
			return seg(x, y, fw*0.15, top+t, fw*0.85, base-t, wd) || seg(x, y, fw*0.85, top+t, fw*0.15, base-t, wd)
		})
	case 0x276f: // ❯
		wd := t * 2.2
		c.shape(func(x, y float64) bool {
			return seg(x, y, fw*0.25, top+t, fw*0.75, midY, wd) || seg(x, y, fw*0.75, midY, fw*0.25, base-t, wd)
		})
	default:
		return false
	}
	return true
}
