package render

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// MemoryBudget bounds the memory the screenshots being drawn hold
// together (live terminals and trace frames; CONTRACT §31): the largest
// one (33.5 M pixels: a 100 MB RGB surface) draws alone while dozens of
// ordinary ones (a 120x40 screen at scale 1 is 0.65 M pixels, about 2 MB)
// draw side by side. Past it a screenshot is refused at once, unavailable
// and retryable, instead of waiting (nothing else slows).
const MemoryBudget = 128 << 20

// bigSurface is the surface above which a finished screenshot hands the
// freed memory back to the system at once (debug.FreeOSMemory), at most
// once a second: the 100 MB of the largest would stay in the process.
const bigSurface = 16 << 20

// Budget draws PNGs within a shared memory budget. Its methods are safe
// for concurrent use.
type Budget struct {
	held *tools.MemoryBudget
	// onDraw, when not nil, is told the bytes held by every draw in
	// flight as each starts (the engine's test seam).
	onDraw   func(inFlight int64)
	lastFree atomic.Int64 // unix nanoseconds of the last FreeOSMemory
}

// NewBudget returns a budget of limit bytes; onDraw may be nil.
func NewBudget(limit int64, onDraw func(inFlight int64)) *Budget {
	return &Budget{held: tools.NewMemoryBudget("screenshots being drawn", limit), onDraw: onDraw}
}

// InUse is the bytes the draws in flight hold.
func (b *Budget) InUse() int64 { return b.held.InUse() }

// DrawBytes is what drawing a screenshot of px pixels from a grid of
// cells cells holds at its peak: the RGB surface a many-coloured screen
// needs (3 bytes a pixel; the paletted try, a third of that, is given
// back before it is allocated), the PNG's compressed bands (at most a
// quarter of the pixels in practice; over MaxPNGBytes the PNG is
// refused), and the grid.
func DrawBytes(px int64, cells int) int64 {
	return px*3 + px/4 + int64(cells)*64 + 64<<10
}

// PNG is PNG within the budget: a draw that does not fit now is refused
// at once with an error wrapping tools.ErrMemoryBudget.
func (b *Budget) PNG(g Grid, opts Options) ([]byte, Facts, error) {
	scale := max(opts.Scale, 1)
	px := int64(max(g.Columns, 1)) * int64(CellWidth*scale) * int64(max(g.Rows, 1)) * int64(CellHeight*scale)
	if px > MaxPixels {
		// Refused before drawing: it costs nothing.
		return PNG(g, opts)
	}
	need := DrawBytes(px, g.Columns*g.Rows)
	grant, err := b.held.Take(need, fmt.Sprintf("a screenshot of %dx%d cells at scale %d", g.Columns, g.Rows, scale))
	if err != nil {
		return nil, Facts{}, err
	}
	defer func() {
		grant.Release()
		if now := time.Now().UnixNano(); need >= bigSurface && b.held.Grants() == 0 {
			if last := b.lastFree.Load(); now-last >= int64(time.Second) && b.lastFree.CompareAndSwap(last, now) {
				go debug.FreeOSMemory()
			}
		}
	}()
	if b.onDraw != nil {
		b.onDraw(b.held.InUse())
	}
	return PNG(g, opts)
}
