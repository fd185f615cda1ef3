package orchestrator

import (
	"context"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/tools"
)

// Pages that show a node (the web monitor) read it through a Showing.

// Showing is one page's look at a node (node.Showing).
type Showing = node.Showing

// Show opens a Showing of node id, waking the node if it sleeps (bounded
// by ctx). The caller must Close it.
func (o *Orchestrator) Show(ctx context.Context, id string) (*Showing, error) {
	n, err := o.lookup(id)
	if err != nil {
		return nil, err
	}
	return n.Show(ctx), nil
}

// Peek returns the rows of terminal_list without asking tmux anything
// (Clients is not counted: 0) and without observing any node: a page can
// list sleeping nodes without waking them.
func (o *Orchestrator) Peek() []tools.NodeInfo {
	nodes := o.sortedNodes()
	out := make([]tools.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		if n.IsClosing() {
			continue
		}
		out = append(out, n.Info(0))
	}
	for _, l := range o.lostSorted() {
		out = append(out, l.Info(node.SandboxName(l.Meta.Sandbox))) // lost.go
	}
	return out
}

// Observers is how many waits and Showings observe node id now (tests).
func (o *Orchestrator) Observers(id string) int {
	n := o.node(id)
	if n == nil {
		return 0
	}
	return int(n.Observers.Load())
}

// Asleep reports whether node id sleeps now (tests and the monitor).
func (o *Orchestrator) Asleep(id string) bool {
	n := o.node(id)
	return n != nil && n.Asleep.Load()
}
