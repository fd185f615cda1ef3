package orchestrator

import (
	"context"
	"errors"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/tools"
)

// Screenshot renders the node's styled cell grid to PNG (CONTRACT §12):
// the Go fonts embedded in the binary, box drawing joined across cells,
// every colour kind, attributes and the cursor by its shape. A PNG over
// render.MaxPNGBytes is refused (rejected, reason capacity). Renders share
// the pixel budget (renderPNG).
func (o *Orchestrator) Screenshot(ctx context.Context, id string, scale int, theme string) ([]byte, tools.ScreenshotFacts, error) {
	n, err := o.lookup(id)
	if err != nil {
		return nil, tools.ScreenshotFacts{}, err
	}
	n.observe(ctx)
	img, f, err := renderPNG(n.cells(ctx), render.Options{Scale: scale, Theme: theme})
	switch {
	case errors.Is(err, render.ErrTooLarge):
		return nil, tools.ScreenshotFacts{}, tools.Errorf(tools.KindRejected, "screenshot of %q: %w", id, err).
			WithDetails("reason", "capacity")
	case err != nil:
		return nil, tools.ScreenshotFacts{}, tools.Errorf(tools.KindUsage, "screenshot of %q: %w", id, err)
	}
	return img, tools.ScreenshotFacts{Width: f.Width, Height: f.Height, SelfContained: f.SelfContained, FallbackCharacters: f.FallbackCharacters}, nil
}

// renderPixelBudget bounds the pixels being drawn at once across every
// screenshot (live terminals and trace frames): render.MaxPixels, so the
// largest screenshot (a 4-byte-a-pixel surface of up to 128 MB) draws
// alone while dozens of ordinary ones (a 120x40 screen at scale 1 is
// 0.65 M pixels) draw side by side. A render waits for its share.
const renderPixelBudget = render.MaxPixels

// renders is the shared pixel budget.
var renders = newWeighted(renderPixelBudget)

// renderHook, when set (tests), is called with the pixels held by every
// render in flight, as each starts.
var renderHook func(inFlight int64)

// renderPNG is render.PNG within the pixel budget.
func renderPNG(g render.Grid, opts render.Options) ([]byte, render.Facts, error) {
	scale := max(opts.Scale, 1)
	px := int64(max(g.Columns, 1)) * int64(render.CellWidth*scale) * int64(max(g.Rows, 1)) * int64(render.CellHeight*scale)
	if px > render.MaxPixels {
		// Refused before drawing: it costs nothing.
		return render.PNG(g, opts)
	}
	held := renders.acquire(px)
	defer renders.release(held)
	if h := renderHook; h != nil {
		h(renders.inUse())
	}
	return render.PNG(g, opts)
}

// weighted is a counting semaphore of a budget: acquire waits until n
// fits (n is clamped to the budget, so anything fits alone).
type weighted struct {
	mu   sync.Mutex
	cond *sync.Cond
	max  int64
	used int64
}

func newWeighted(max int64) *weighted {
	w := &weighted{max: max}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *weighted) acquire(n int64) int64 {
	n = min(max(n, 1), w.max)
	w.mu.Lock()
	for w.used+n > w.max {
		w.cond.Wait()
	}
	w.used += n
	w.mu.Unlock()
	return n
}

func (w *weighted) release(n int64) {
	w.mu.Lock()
	w.used -= n
	w.mu.Unlock()
	w.cond.Broadcast()
}

func (w *weighted) inUse() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.used
}
