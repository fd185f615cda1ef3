package orchestrator

import (
	"context"
	"errors"

	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/tools"
)

// Screenshot renders the node's styled cell grid to PNG (CONTRACT §12):
// the Go fonts embedded in the binary, box drawing joined across cells,
// every colour kind, attributes and the cursor by its shape. A PNG over
// render.MaxPNGBytes is refused (rejected, reason capacity). Renders share
// a memory budget (render.Budget): past it, unavailable and retryable.
func (o *Orchestrator) Screenshot(ctx context.Context, id string, scale int, theme string) ([]byte, tools.ScreenshotFacts, error) {
	n, err := o.lookup(id)
	if err != nil {
		return nil, tools.ScreenshotFacts{}, err
	}
	n.Observe(ctx)
	img, f, err := o.renderPNG(n.Cells(ctx), render.Options{Scale: scale, Theme: theme})
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
// hold together (render.MemoryBudget).
const ScreenshotMemoryBudget = render.MemoryBudget

// renderPNG is render.PNG within the engine's screenshot budget
// (o.renders: live terminals and trace frames share it).
func (o *Orchestrator) renderPNG(g render.Grid, opts render.Options) ([]byte, render.Facts, error) {
	return o.renders.PNG(g, opts)
}
