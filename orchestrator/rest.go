package orchestrator

import (
	"context"

	"github.com/termsprawl/termsprawl/orchestrator/render"
)

// An awake node whose output has been quiet for Config.RestAfter rests:
// its mirror drops the emulator (x/vt's cells, 525 KiB at 120x40, most of
// a node's memory) and keeps the published screen — rows, cursor, modes,
// title, revision and history — which is all that snapshots, captures,
// reads and waits use. Output keeps flowing (unlike sleep, which also
// turns tmux's output off): the next output's text is logged at once
// (text waits see it), the emulator reports that it needs a seed, and the
// pump reseeds from tmux in the same turn, so the mirror shows that
// output one round trip later. A screenshot, which needs the styled
// cells, asks the pump for that seed first (cells).

// rest releases the emulator of a quiet, awake node whose mirror is
// current. Only the pump calls it.
func (n *node) rest() {
	if n.asleep.Load() || n.stale || n.stream.Pending() {
		return // asleep already, or output still to be taken in
	}
	n.scr.Sleep()
	n.log.Debug("mirror resting: output quiet")
	if n.hooks().Rested != nil {
		n.hooks().Rested(n)
	}
}

// cells returns the styled cell grid, building a resting mirror's
// emulator again from tmux first.
func (n *node) cells(ctx context.Context) render.Grid {
	n.wakeMirror(ctx)
	return n.scr.Cells()
}

// wakeMirror asks the pump to build a resting mirror's emulator again
// from tmux, and waits for it (bounded by ctx and the node's life).
func (n *node) wakeMirror(ctx context.Context) {
	if n.scr.Asleep() && !n.asleep.Load() {
		done := make(chan struct{})
		select {
		case n.wakeReq <- done:
			select {
			case <-done:
			case <-n.done:
			case <-ctx.Done():
			}
		case <-n.done:
		case <-ctx.Done():
		}
	}
}
