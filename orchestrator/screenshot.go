package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/tools"
)

// Screenshot renders the node's styled cell grid to PNG (CONTRACT §12):
// the Go fonts embedded in the binary, box drawing joined across cells,
// every colour kind, attributes and the cursor by its shape. A PNG over
// render.MaxPNGBytes is refused (rejected, reason capacity). Renders share
// a memory budget (renderPNG): past it, unavailable and retryable.
func (o *Orchestrator) Screenshot(ctx context.Context, id string, scale int, theme string) ([]byte, tools.ScreenshotFacts, error) {
	n, err := o.lookup(id)
	if err != nil {
		return nil, tools.ScreenshotFacts{}, err
	}
	n.Observe(ctx)
	img, f, err := renderPNG(n.Cells(ctx), render.Options{Scale: scale, Theme: theme})
	switch {
	case errors.Is(err, tools.ErrMemoryBudget):
		return nil, tools.ScreenshotFacts{}, err
	case errors.Is(err, render.ErrTooLarge):
		return nil, tools.ScreenshotFacts{}, tools.Errorf(tools.KindRejected, "screenshot of %q: %w", id, err).
			WithDetails("reason", "capacity")
	case err != nil:
		return nil, tools.ScreenshotFacts{}, tools.Errorf(tools.KindUsage, "screenshot of %q: %w", id, err)
	}
	return img, tools.ScreenshotFacts{Width: f.Width, Height: f.Height, SelfContained: f.SelfContained, FallbackCharacters: f.FallbackCharacters}, nil
}

// ScreenshotMemoryBudget bounds the memory the screenshots being drawn
// hold together (live terminals and trace frames; CONTRACT §31): the
// largest one (33.5 M pixels: a 100 MB RGB surface) draws alone while
// dozens of ordinary ones (a 120x40 screen at scale 1 is 0.65 M pixels,
// about 2 MB) draw side by side. Past it a screenshot is refused at once,
// unavailable and retryable, instead of waiting (nothing else slows).
const ScreenshotMemoryBudget = 128 << 20

// renders is the screenshots' memory budget (a variable: tests shrink it).
var renders = tools.NewMemoryBudget("screenshots being drawn", ScreenshotMemoryBudget)

// renderHook, when set (tests), is called with the bytes held by every
// render in flight, as each starts.
var renderHook func(inFlight int64)

// renderBytes is what drawing a screenshot of px pixels from a grid of
// cells cells holds at its peak: the RGB surface a many-coloured screen
// needs (3 bytes a pixel; the paletted try, a third of that, is given
// back before it is allocated), the PNG's compressed bands (at most a
// quarter of the pixels in practice; over render.MaxPNGBytes the PNG is
// refused), and the grid.
func renderBytes(px int64, cells int) int64 {
	return px*3 + px/4 + int64(cells)*64 + 64<<10
}

// bigRender is the surface above which a finished screenshot hands the
// freed memory back to the system at once (debug.FreeOSMemory), at most
// once a second: the 100 MB of the largest would stay in the process.
const bigRender = 16 << 20

var lastFree atomic.Int64 // unix nanoseconds of the last FreeOSMemory

// renderPNG is render.PNG within the screenshots' memory budget.
func renderPNG(g render.Grid, opts render.Options) ([]byte, render.Facts, error) {
	scale := max(opts.Scale, 1)
	px := int64(max(g.Columns, 1)) * int64(render.CellWidth*scale) * int64(max(g.Rows, 1)) * int64(render.CellHeight*scale)
	if px > render.MaxPixels {
		// Refused before drawing: it costs nothing.
		return render.PNG(g, opts)
	}
	need := renderBytes(px, g.Columns*g.Rows)
	grant, err := renders.Take(need, fmt.Sprintf("a screenshot of %dx%d cells at scale %d", g.Columns, g.Rows, scale))
	if err != nil {
		return nil, render.Facts{}, err
	}
	defer func() {
		grant.Release()
		if now := time.Now().UnixNano(); need >= bigRender && renders.Grants() == 0 {
			if last := lastFree.Load(); now-last >= int64(time.Second) && lastFree.CompareAndSwap(last, now) {
				go debug.FreeOSMemory()
			}
		}
	}()
	if h := renderHook; h != nil {
		h(renders.InUse())
	}
	return render.PNG(g, opts)
}
