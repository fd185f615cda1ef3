package node

import (
	"context"
	"fmt"

	"github.com/termsprawl/termsprawl/orchestrator/fleetsearch"
	"github.com/termsprawl/termsprawl/tmuxctl"
)

// SearchCapture reads the node's history and screen for a fleet search
// (CONTRACT §30): one command line (the sizes, and capture-pane -J of the
// whole history) on the client the node already has.
func (n *Node) SearchCapture(ctx context.Context) (fleetsearch.Capture, error) {
	h := n.hooks()
	if h.SearchCommand != nil {
		h.SearchCommand()
	}
	outs, err := n.Cmd().RunMany(ctx,
		tmuxctl.Command("display-message", "-p", "-t", n.Pane, "#{history_size} #{pane_width}"),
		tmuxctl.Command("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", n.Pane))
	if err == nil && (len(outs) != 2 || len(outs[0]) != 1) {
		err = fmt.Errorf("unexpected reply %d blocks", len(outs))
	}
	if err != nil {
		return fleetsearch.Capture{}, n.TmuxErr("search", err)
	}
	if h.SearchCaptured != nil {
		h.SearchCaptured(n.Meta.ID)
	}
	c := fleetsearch.Capture{Name: n.Meta.Name, Lines: outs[1]}
	fmt.Sscanf(outs[0][0], "%d %d", &c.Hist, &c.Cols)
	return c, nil
}
