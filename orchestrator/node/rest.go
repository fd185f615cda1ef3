package node

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
func (n *Node) rest() {
	if n.Asleep.Load() || n.stale || n.Stream.Pending() {
		return // asleep already, or output still to be taken in
	}
	n.Scr.Sleep()
	n.Log.Debug("mirror resting: output quiet")
	if n.hooks().Rested != nil {
		n.hooks().Rested(n)
	}
}

// Cells returns the styled cell grid, building a resting mirror's
// emulator again from tmux first.
func (n *Node) Cells(ctx context.Context) render.Grid {
	n.wakeMirror(ctx)
	return n.Scr.Cells()
}

// wakeMirror asks the pump to build a resting mirror's emulator again
// from tmux, and waits for it (bounded by ctx and the node's life).
func (n *Node) wakeMirror(ctx context.Context) {
	if n.Scr.Asleep() && !n.Asleep.Load() {
		done := make(chan struct{})
		select {
		case n.wakeReq <- done:
			select {
			case <-done:
			case <-n.Done:
			case <-ctx.Done():
			}
		case <-n.Done:
		case <-ctx.Done():
		}
	}
}
