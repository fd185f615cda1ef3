package orchestrator

import (
	"context"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// Pages that show a node (the web monitor) read it through a Showing.

// Showing is one page's look at a node: while it is open the node counts
// as observed, like a wait in progress — it is woken if it sleeps and does
// not fall asleep; once every Showing of it is closed and IdleAfter passes
// unobserved, it sleeps again. A Showing never sends anything to the node.
type Showing struct {
	n    *node.Node
	once sync.Once

	// frames are the cells Frame hands out; only Frame's caller
	// touches them.
	frames screen.Frames
}

// Show opens a Showing of node id, waking the node if it sleeps (bounded
// by ctx). The caller must Close it.
func (o *Orchestrator) Show(ctx context.Context, id string) (*Showing, error) {
	n, err := o.lookup(id)
	if err != nil {
		return nil, err
	}
	// Counted under idleMu, the lock decideSleep decides under: the pump
	// either sees this observer and stays awake, or decided before it and
	// observe below sees the node asleep and wakes it.
	n.IdleMu.Lock()
	n.Observers.Add(1)
	n.IdleMu.Unlock()
	n.Observe(ctx)
	return &Showing{n: n}, nil
}

// Close ends the Showing (idempotent). The node may sleep IdleAfter later
// if nothing else observes it.
func (s *Showing) Close() {
	s.once.Do(func() {
		n := s.n
		n.IdleMu.Lock()
		n.LastObserved.Store(time.Now().UnixNano())
		n.Observers.Add(-1)
		n.IdleMu.Unlock()
	})
}

// ID is the node's id.
func (s *Showing) ID() string { return s.n.Meta.ID }

// Cells is the node's styled cell grid (a copy; see screen.Screen.Cells);
// a resting mirror is reseeded from tmux first (rest.go).
func (s *Showing) Cells() render.Grid { return s.n.Cells(context.Background()) }

// Frame is the node's styled cell grid, like Cells, and each row's stamp
// (screen.Frames.Next: equal stamps, equal cells; nil when unknown). The
// grid is valid until the Frame call after the next one, so a caller may
// compare it with the one before; it is overwritten in place after that.
// Frame is not safe for concurrent use.
func (s *Showing) Frame() (render.Grid, []uint64) {
	s.n.WakeMirror(context.Background())
	return s.frames.Next(s.n.Scr)
}

// Changed returns the node's current revision and a channel closed at its
// next revision, taken atomically.
func (s *Showing) Changed() (uint64, <-chan struct{}) { return s.n.Scr.WaitState() }

// Closing is closed when the node's life ends (it is being closed or its
// tmux session ended).
func (s *Showing) Closing() <-chan struct{} { return s.n.Closing }

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
		out = append(out, l.info()) // lost.go
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
